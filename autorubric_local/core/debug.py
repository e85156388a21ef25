"""AutoRubric's ``debug`` flag (AutoRubric 1.6.1, ``autorubric.debug``): set
``autorubric_local.debug = True`` and every prompt is printed to standard error just before it
goes to a judge: each judgment request of a grader (its whole text, as the model reads it) and
each ``LLMClient.generate`` call (system and user prompt). Read at call time, so it can be
switched on and off between calls.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

__all__ = ["enabled", "show_prompts"]


def enabled() -> bool:
    """Whether ``autorubric_local.debug`` is set (``False`` before the package is imported)."""
    return bool(getattr(sys.modules.get("autorubric_local"), "debug", False))


def show_prompts(prompts: Iterable[str], what: str) -> None:
    """Print each prompt under a header naming ``what`` it is for, when :func:`enabled`;
    ``prompts`` is not read otherwise (pass a generator to build no text when off)."""
    if not enabled():
        return
    for k, text in enumerate(prompts, 1):
        print(f"----- autorubric_local.debug: {what} #{k} -----", file=sys.stderr)
        print(text, file=sys.stderr, flush=True)
