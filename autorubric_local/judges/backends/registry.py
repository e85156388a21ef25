"""The judge backends, registered in one place.

``load_engine``, ``choose_backend``, the backend-support check, ``LLMConfig``'s validation of
``backend``, the CLI's ``--backend`` choices and the memory planner all read this registry, so a
new backend is one module with one :class:`~.record.Backend` record, registered once:

- **Built-in** backends (``transformers``, ``vllm``, ``llamacpp``, ``hosted``) are named in
  :data:`BUILTIN` as ``"module:attribute"`` references, loaded when the registry is first read.
- **Third-party** backends register through the entry point group ``autorubric_local.backends``
  (the plugin hook simonw/llm uses for its models), in the plugin's ``pyproject.toml``::

      [project.entry-points."autorubric_local.backends"]
      mybackend = "my_package.backend:BACKEND"

  The entry point names a :class:`~.record.Backend`, or a callable returning one or a list of
  them. A plugin that fails to load is skipped with a warning naming it, never silently.
- In-process (tests, notebooks): :func:`register`.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any

from autorubric_local.core.errors import InputError
from autorubric_local.judges.backends.record import Backend

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "autorubric_local.backends"

BUILTIN: dict[str, str] = {
    "transformers": "autorubric_local.judges.backends.transformers:BACKEND",
    "vllm": "autorubric_local.judges.backends.vllm:BACKEND",
    "llamacpp": "autorubric_local.judges.backends.llamacpp:BACKEND",
    "hosted": "autorubric_local.judges.backends.hosted:BACKEND",
    "server": "autorubric_local.judges.backends.server:BACKEND",
}
"""The built-in backends, in the order they are listed (``--help``, messages, the support matrix)."""

_REGISTRY: dict[str, Backend] = {}
_ORIGINS: dict[str, str] = {}
_LOADED = False
_LOADING = False
_LOCK = threading.RLock()


def register(backend: Backend, *, replace: bool = False) -> Backend:
    """Add ``backend`` to the registry and return it.

    Raises
    ------
    ValueError
        A backend of that name is registered already (unless ``replace``).
    """
    _load_all()
    if backend.name in _REGISTRY and not replace:
        raise ValueError(f"a backend named {backend.name!r} is registered already")
    _REGISTRY[backend.name] = backend
    _ORIGINS[backend.name] = "register()"
    return backend


def origin(name: str) -> str:
    """Where the backend ``name`` came from: ``"built-in"``, ``"plugin <entry point> (<module:attr>)"``
    or ``"register()"``."""
    _load_all()
    return _ORIGINS.get(name, "unknown")


def unregister(name: str) -> None:
    """Remove the backend ``name`` (tests; a built-in one comes back with :func:`reset`)."""
    _load_all()
    _REGISTRY.pop(name, None)


def reset() -> None:
    """Forget every registration; the next read loads the built-in and plugin backends again."""
    global _LOADED
    with _LOCK:
        _REGISTRY.clear()
        _ORIGINS.clear()
        _LOADED = False


def registered() -> dict[str, Backend]:
    """Every backend by name: built-in ones first (:data:`BUILTIN` order), then plugins, then
    :func:`register`'s, in the order they came."""
    _load_all()
    return dict(_REGISTRY)


def backend_names() -> list[str]:
    """The names ``LLMConfig.backend`` accepts besides ``"auto"``."""
    return list(registered())


def backend_named(name: str) -> Backend:
    """The backend called ``name``.

    Raises
    ------
    InputError
        No such backend; the message lists the registered ones.
    """
    found = registered().get(name)
    if found is None:
        raise InputError(f"unknown backend {name!r}; known: auto, {', '.join(backend_names())}")
    return found


def auto_candidates() -> list[Backend]:
    """The backends ``backend="auto"`` may pick, in listing order."""
    return [b for b in registered().values() if b.auto_rank is not None]


def _load_all() -> None:
    """Load the built-in and plugin backends once. Another thread reading the registry meanwhile
    waits for all of them; a plugin that calls :func:`register` while it is imported (the same
    thread, inside the load) gets the registry as loaded so far."""
    global _LOADED, _LOADING
    if _LOADED:
        return
    with _LOCK:
        if _LOADED or _LOADING:
            return
        _LOADING = True
        try:
            _load_builtin_and_plugins()
        finally:
            _LOADING = False
        _LOADED = True


def _load_builtin_and_plugins() -> None:
    for name, reference in BUILTIN.items():
        _REGISTRY.setdefault(name, _resolve(reference))
        _ORIGINS.setdefault(name, "built-in")
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = point.load()
            for backend in _records(loaded() if callable(loaded) and not isinstance(loaded, Backend) else loaded):
                if backend.name in _REGISTRY:
                    logger.warning("backend plugin %s (%s): a backend named %r is registered already; skipped",
                                   point.name, point.value, backend.name)
                    continue
                _REGISTRY[backend.name] = backend
                _ORIGINS[backend.name] = f"plugin {point.name} ({point.value})"
        except Exception as exc:  # a broken plugin must not stop the built-in backends; it is named
            logger.warning("backend plugin %s (%s) could not be loaded: %s: %s",
                           point.name, point.value, type(exc).__name__, exc)


def _resolve(reference: str) -> Backend:
    module, _, attribute = reference.partition(":")
    record = getattr(importlib.import_module(module), attribute)
    if not isinstance(record, Backend):
        raise TypeError(f"{reference} is a {type(record).__name__}, not a Backend")
    return record


def _records(value: Any) -> Iterable[Backend]:
    records = [value] if isinstance(value, Backend) else list(value)
    for record in records:
        if not isinstance(record, Backend):
            raise TypeError(f"expected Backend records, got {type(record).__name__}")
    return records


def first_claiming(resolved: Any) -> Backend | None:
    """The auto candidate of lowest ``auto_rank`` whose ``auto_claims(resolved)`` is true (a
    candidate without ``auto_claims`` claims every model), else None."""
    for backend in sorted(auto_candidates(), key=lambda b: b.auto_rank or 0):
        if backend.auto_claims is None or backend.auto_claims(resolved):
            return backend
    return None
