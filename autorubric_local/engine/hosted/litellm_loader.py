"""LiteLLM, imported on first use only: the base install never imports it.

``pip install 'autorubric-local[hosted]'`` installs it. Before the import,
``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set (unless the caller set it), so LiteLLM reads its
bundled price list instead of fetching one over the network (which retries slowly when there
is no network). The nearest ``.env`` file at or above the working directory is loaded once
(python-dotenv, a LiteLLM dependency); variables already in the environment win.
"""

from __future__ import annotations

import os
from types import ModuleType

from autorubric_local.core.errors import EngineError

__all__ = ["HOSTED_INSTALL", "is_transient", "load_litellm"]

HOSTED_INSTALL = "pip install 'autorubric-local[hosted]'"
_ENV_LOADED = False


def load_litellm() -> ModuleType:
    """The ``litellm`` module, with the ``.env`` file loaded.

    Raises
    ------
    EngineError
        When LiteLLM is not installed; the message names :data:`HOSTED_INSTALL`.
    """
    global _ENV_LOADED
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:
        raise EngineError(f"hosted and server judges need LiteLLM, which is not installed: {HOSTED_INSTALL}") from exc
    if not _ENV_LOADED:
        from dotenv import find_dotenv, load_dotenv

        load_dotenv(find_dotenv(usecwd=True), override=False)
        _ENV_LOADED = True
    return litellm


def is_transient(exc: BaseException) -> bool:
    """True for failures worth retrying: rate limits (429), server errors (5xx), timeouts and
    connection errors. Client errors (400 validation, 401, 403, 404, 422) are not retried."""
    litellm = load_litellm()
    transient = (litellm.RateLimitError, litellm.InternalServerError, litellm.ServiceUnavailableError,
                 litellm.BadGatewayError, litellm.Timeout, litellm.APIConnectionError)
    if isinstance(exc, transient):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)
