"""Which kind of failure a failed criterion judgment was: AutoRubric's ``ErrorCategory`` and
``classify_grading_error`` (AutoRubric 1.6.1, ``autorubric.llm``, exported by ``autorubric``).

A judgment whose engine call failed is stored with its error, prefixed by its category
(``"infrastructure: ..."``, ``"parse: ..."``, ``"unknown: ..."``), never turned into a verdict.
"""

from __future__ import annotations

import sys
from typing import Literal

from autorubric_local.core.errors import EngineError

__all__ = ["ErrorCategory", "classify_grading_error"]


ErrorCategory = Literal["infrastructure", "parse", "unknown"]
"""What went wrong in a failed criterion judgment (AutoRubric 1.6.1,
``autorubric.ErrorCategory``); the prefix of every stored judgment error (``"parse: ..."``).

- ``"infrastructure"``: the judge gave no usable answer: an engine or runtime failure (out of
  memory, a backend refusing the batch, a prompt longer than the context), or an API or network
  failure of a hosted judge. Not the submission's fault.
- ``"parse"``: the judge answered, but the answer did not validate against what was asked.
  Not the submission's fault either.
- ``"unknown"``: anything else.
"""

_INFRASTRUCTURE: tuple[type[BaseException], ...] = (EngineError, RuntimeError, MemoryError, OSError)


def classify_grading_error(exc: BaseException) -> ErrorCategory:
    """The :data:`ErrorCategory` of an exception raised while judging a criterion (AutoRubric's
    1.6.1, ``autorubric.classify_grading_error``).

    Rules, in order:

    1. An OpenAI-style API error (``openai.APIError``, which LiteLLM's errors subclass: timeouts,
       connection, rate limit, server errors) is ``"infrastructure"``.
    2. An error of the optional TypeSafe SDK that decision models use: a response that did not
       validate, a 400 or a 422 is ``"parse"``; any other is ``"infrastructure"``.
    3. ``pydantic.ValidationError`` and ``ValueError`` (a JSON decode error, an answer outside
       the allowed labels, ``ResponseParseError``) are ``"parse"``.
    4. :class:`EngineError`, ``RuntimeError``, ``MemoryError`` and ``OSError`` (the engine
       failures a grader records instead of raising) are ``"infrastructure"``.
    5. Anything else is ``"unknown"``.

    The SDKs of rules 1 and 2 are looked up among the loaded modules, never imported: an error
    of theirs can exist only once they are loaded.

    Parameters
    ----------
    exc : BaseException

    Returns
    -------
    {"infrastructure", "parse", "unknown"}
    """
    openai = sys.modules.get("openai")
    if openai is not None and isinstance(exc, openai.APIError):
        return "infrastructure"
    typesafe = sys.modules.get("typesafe_sdk")
    if typesafe is not None and isinstance(exc, typesafe.TypeSafeError):
        answered = (typesafe.TypeSafeAPIResponseValidationError, typesafe.TypeSafeBadRequestError,
                    typesafe.TypeSafeUnprocessableEntityError)
        return "parse" if isinstance(exc, answered) else "infrastructure"
    if isinstance(exc, ValueError):  # pydantic.ValidationError is a ValueError
        return "parse"
    if isinstance(exc, _INFRASTRUCTURE):
        return "infrastructure"
    return "unknown"
