"""Which ``LLMConfig`` fields a backend cannot honour, checked before anything loads.

An ``LLMConfig`` field that the backend cannot honour (AutoRubric's hosted-API settings such as
``api_key`` or ``timeout``, or a setting of another backend) with a non-default value is an
:class:`~autorubric_local.core.errors.InputError`; each backend lists its fields and why in its
record (:attr:`~.record.Backend.unsupported`). The check is made when the engine is loaded, not
when the config is built, so one config file stays usable with other backends; a config with
``engine=`` (an engine built by the caller) is not checked.
"""

from __future__ import annotations

from typing import Any, Literal

from autorubric_local.core.errors import InputError
from autorubric_local.judges.backends.registry import auto_candidates, backend_named
from autorubric_local.judges.config import LLMConfig

SHOWN: dict[str, Literal["keys", "hidden"]] = {"api_key": "hidden", "extra_headers": "keys", "extra_params": "keys"}
"""How a refused field's value is shown: the keys of a mapping, or not at all (a secret)."""


def unsupported_settings(config: LLMConfig, backend: str | None = None) -> list[str]:
    """One message per field of ``config`` set (to a non-default value) that its backend ignores.

    ``backend`` is the backend that will run (default ``config.backend``). For ``"auto"``
    before the model is resolved, the fields refused are those every auto candidate refuses
    (the built-in ones: transformers and llamacpp).

    A message names the field path, its value (keys of a mapping; never a secret), the backend
    and what to do instead: ``LLMConfig.api_base is not supported by the transformers backend
    (got 'http://...'); hosted and server judges need backend='hosted' ...``.

    Raises
    ------
    InputError
        ``backend`` is not registered.
    """
    backend = backend or config.backend
    if backend == "auto":
        candidates = auto_candidates()
        shown = f"auto ({' or '.join(b.name for b in candidates)})"
    else:
        candidates = [backend_named(backend)]
        shown = backend
    problems: list[str] = []
    for name, reason in candidates[0].unsupported.items() if candidates else ():
        value = getattr(config, name)
        if any(name not in b.unsupported for b in candidates) or value == _default(name):
            continue
        problems.append(f"LLMConfig.{name} is not supported by the {shown} backend "
                        f"(got {_shown(value, SHOWN.get(name, 'value'))}); {reason}")
    return problems


def _shown(value: Any, how: str) -> str:
    if how == "hidden":
        return "a value, not shown"
    if how == "keys":
        return f"keys {sorted(value)}"
    return repr(value)


def _default(name: str) -> Any:
    return LLMConfig.model_fields[name].get_default(call_default_factory=True)


def check_backend_support(config: LLMConfig, backend: str | None = None) -> None:
    """Refuse a config that sets a field its backend cannot honour.

    ``backend``: as in :func:`unsupported_settings`.

    Raises
    ------
    InputError
        One line per such field (:func:`unsupported_settings`), or an unknown backend.
    """
    problems = unsupported_settings(config, backend)
    if problems:
        raise InputError("\n".join(problems))
