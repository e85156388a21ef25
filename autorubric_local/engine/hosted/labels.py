"""Label log-probabilities from a hosted model's structured answer: pure, no network.

The hosted model answers with a whole JSON judgment (``{"criterion_status": "MET", ...}`` or
``{"selected_option": 2, ...}``). The verdict is read from the parsed answer. Its label
distribution is read at the verdict's first token, where the server returned ``top_logprobs``:
each alternative token there that starts exactly one allowed label adds its probability to
that label (so ``"UN"`` counts for ``UNMET``); a label none of the alternatives starts gets
:data:`~.base.ONE_HOT_FLOOR`. These are first-token log-probabilities (the rest of a label is
fixed by the schema), from the server's distribution, which may be computed before any
grammar constraint.

Without usable log-probabilities (none returned, the verdict's position not found, an
alternative that starts two labels, or the chosen label missing) the result is one-hot on the
parsed verdict, flagged ``one_hot=True`` (:class:`~.base.LabelScores`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from autorubric_local.engine.base import ONE_HOT_FLOOR

__all__ = ["one_hot", "read_label_logprobs"]

_VALUE_START = {
    "criterion_status": re.compile(r'"criterion_status"\s*:\s*"'),
    "selected_option": re.compile(r'"selected_option"\s*:\s*'),
}


def one_hot(n_labels: int, chosen: int) -> tuple[float, ...]:
    """Log-probabilities 0 at ``chosen`` and :data:`ONE_HOT_FLOOR` elsewhere, shape (n_labels,)."""
    return tuple(0.0 if i == chosen else ONE_HOT_FLOOR for i in range(n_labels))


def read_label_logprobs(
    content: str, key: str, values: Sequence[str], chosen: int, tokens: list[dict[str, Any]] | None
) -> tuple[float, ...] | None:
    """First-token label log-probabilities at the verdict in ``content``, or None (use one-hot).

    Parameters
    ----------
    content : str
        The response text (the JSON judgment).
    key : {"criterion_status", "selected_option"}
    values : sequence of str, length n_labels
        Bare label values: ``("MET", "UNMET", ...)`` or ``("1", "2", ...)``.
    chosen : int
        Index of the parsed verdict in ``values``.
    tokens : list of dict or None
        ``GenerateResult.logprobs``: per output token ``{"token", "logprob", "top"}``.

    Returns
    -------
    tuple of float, shape (n_labels,), each <= 0, or None
        None when the position or the alternatives cannot be read unambiguously, or when the
        chosen label gets no probability.
    """
    if not tokens:
        return None
    found = _VALUE_START[key].search(content)
    if found is None:
        return None
    position = found.end()
    start = 0
    for entry in tokens:
        text = entry["token"] or ""
        end = start + len(text)
        if start <= position < end:
            return _from_alternatives(content[start:position], entry, values, chosen)
        start = end
    return None


def _from_alternatives(lead: str, entry: dict[str, Any], values: Sequence[str], chosen: int) -> tuple[float, ...] | None:
    alternatives = {token: logprob for token, logprob in entry["top"] if token is not None}
    alternatives.setdefault(entry["token"], entry["logprob"])
    mass: list[list[float]] = [[] for _ in values]
    for token, logprob in alternatives.items():
        if not token.startswith(lead) or len(token) == len(lead):
            continue
        rest = token[len(lead):]
        # a token may run past the value ('MET"' or '2,'): compare on the value's length
        starts = [i for i, value in enumerate(values) if value.startswith(rest) or rest.startswith(value)]
        if len(starts) > 1:  # e.g. '1' starts both option 1 and option 10
            return None
        if starts:
            mass[starts[0]].append(logprob)
    if not mass[chosen]:
        return None
    return tuple(_logsumexp(m) if m else ONE_HOT_FLOOR for m in mass)


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    return min(0.0, top + math.log(math.fsum(math.exp(v - top) for v in values)))
