"""Contextual calibration of a judge's label distribution (the math; no model, no planning).

Zhao, Wallace, Feng, Klein & Singh, 2021, "Calibrate Before Use: Improving Few-Shot
Performance of Language Models" (ICML), section 5. A judge's label prior for one prompt
(system prompt, question, criterion, options in the order shown) is estimated by judging
*content-free* submissions in that prompt and averaging their label distributions:

    p_cf = mean_i p(label | prompt, content-free input i)          (each p renormalised)

and each real judgment's distribution ``p`` is corrected with ``W = diag(p_cf)^-1``, ``b = 0``:

    q = normalise(W p),  i.e.  q_k = (p_k / p_cf_k) / sum_j (p_j / p_cf_j)

so that a content-free input maps to the uniform distribution. The paper writes
``q = softmax(W p + b)`` and its reference code takes ``argmax(W p + b)``; normalising ``W p``
instead keeps the same argmax (the verdict) and gives the distribution proportional to
``p / p_cf``, the posterior under a uniform label prior. Everything is computed in log space
(``log q = log p - log p_cf``, then renormalised), so a tiny prior probability never becomes a
division by an underflowed zero; inputs are the engine's raw label log-probabilities.

Pure Python (``math`` only): the grader imports this module, and importing the package must not
load numpy or scipy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from autorubric_local.core.errors import InputError

__all__ = [
    "CONTENT_FREE_INPUTS",
    "content_free_log_prior",
    "contextual_correction",
    "log_normalise",
]

CONTENT_FREE_INPUTS: tuple[str, ...] = ("", "N/A", "[SUBMISSION]")
"""Default content-free submissions: the paper's ``""`` and ``"N/A"``, and a placeholder that
names the slot (the paper's third input, ``"[MASK]"``, is a masked-LM token)."""


def _check_row(row: Sequence[float], what: str) -> list[float]:
    values = [float(v) for v in row]
    if len(values) < 2:
        raise InputError(f"{what}: needs at least 2 labels, got {len(values)}")
    bad = [v for v in values if not (math.isfinite(v) and v <= 0.0)]
    if bad:
        raise InputError(f"{what}: log-probabilities must be finite and <= 0, got {values}")
    return values


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    return top + math.log(math.fsum(math.exp(v - top) for v in values))


def log_normalise(logprobs: Sequence[float]) -> list[float]:
    """Log of the distribution ``softmax(logprobs)``: ``l_k - logsumexp(l)``.

    Parameters
    ----------
    logprobs : sequence of float, shape (n_labels,)
        Log-probabilities (any common offset; finite).

    Returns
    -------
    list of float, shape (n_labels,)
        Log-probabilities whose exponentials sum to 1.
    """
    values = [float(v) for v in logprobs]
    if not values or not all(math.isfinite(v) for v in values):
        raise InputError(f"log_normalise: expected finite log-probabilities, got {values}")
    total = _logsumexp(values)
    return [v - total for v in values]


def content_free_log_prior(rows: Sequence[Sequence[float]]) -> list[float]:
    """``log p_cf``: the log of the mean label distribution of the content-free judgments.

    Parameters
    ----------
    rows : sequence of shape (n_inputs, n_labels)
        Each content-free judgment's raw label log-probabilities (as an engine returns them,
        not renormalised), labels in the order shown to the judge. Each row is renormalised
        before averaging (Zhao et al. 2021 average the per-input distributions).

    Returns
    -------
    list of float, shape (n_labels,)
        ``log(mean_i softmax(rows_i))``; its exponentials sum to 1.

    Raises
    ------
    InputError
        No rows, rows of different lengths, fewer than 2 labels, or a value that is not
        finite and <= 0.
    """
    if not rows:
        raise InputError("content_free_log_prior: no content-free judgments")
    checked = [log_normalise(_check_row(row, f"content-free judgment {i}")) for i, row in enumerate(rows)]
    width = len(checked[0])
    if any(len(row) != width for row in checked):
        raise InputError(f"content_free_log_prior: rows differ in length: {[len(r) for r in checked]}")
    n = len(checked)
    return [_logsumexp([row[k] for row in checked]) - math.log(n) for k in range(width)]


def contextual_correction(logprobs: Sequence[float], log_prior: Sequence[float]) -> list[float]:
    """The corrected distribution ``q = normalise(diag(p_cf)^-1 p)`` (module docstring).

    Parameters
    ----------
    logprobs : sequence of float, shape (n_labels,)
        The judgment's raw label log-probabilities (renormalising them first changes nothing).
    log_prior : sequence of float, shape (n_labels,)
        ``log p_cf`` from :func:`content_free_log_prior`, same label order.

    Returns
    -------
    list of float, shape (n_labels,)
        ``q``, a distribution (sums to 1); ``q_k`` proportional to ``p_k / p_cf_k``.

    Raises
    ------
    InputError
        Lengths differ, or a value is not finite and <= 0.

    Examples
    --------
    ``p = (0.6, 0.3, 0.1)`` and ``p_cf = (0.75, 0.2, 0.05)`` give ``p / p_cf = (0.8, 1.5, 2)``
    and ``q = (8/43, 15/43, 20/43)``.
    """
    values = _check_row(logprobs, "judgment")
    prior = _check_row(log_prior, "prior")
    if len(values) != len(prior):
        raise InputError(f"contextual_correction: {len(values)} labels but a prior over {len(prior)}")
    return [math.exp(v) for v in log_normalise([v - c for v, c in zip(values, prior, strict=True)])]
