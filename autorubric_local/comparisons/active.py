"""Judge-corrected win rates from comparisons chosen for labelling with recorded probabilities.

When the labelled comparisons were drawn by :func:`.labelling.draw_comparison_selection`, each
with its own inclusion probability ``pi_i`` stored before any label, they are no uniform sample
and PPI++ (:mod:`.corrected`) does not apply. For a pair of systems ``(s, t)`` the target is the
human win rate of ``s`` over ``t`` on the comparisons of that pair with a complete judgment:
the mean of ``Y = 1`` (a human prefers ``s``), ``0.5`` (a tie) or ``0``. With the judge's
prediction ``f_i = P(s wins) + P(tie) / 2`` (balanced over both slot orders) on every comparison
and ``xi_i`` the recorded draws, the active estimate (Zrnic & Candès 2024, with power tuning,
:func:`~autorubric_local.estimates.methods.active_mean`) is

    theta = mean_i( lam f_i + (Y_i - lam f_i) xi_i / pi_i ),

unbiased for every fixed ``lam`` whatever the judge's quality, because ``pi`` was fixed before
the labels. ``lam = 0`` is the Horvitz-Thompson mean of the labels alone (reported as
``classical``); the tuned ``lam`` (``active``) is never worse to first order. Intervals are kept
in [0, 1] and never of zero width (:func:`~autorubric_local.estimates.methods.within_range`, with
Kish's effective number of labels), and noted below 50 drawn comparisons. Any judge of the
comparison may supply ``f``: the estimates stay unbiased, only their width changes.

Every drawn comparison of a pair must have a label (a missing one would bias the weighted
mean); a label of a comparison that was not drawn is left out (the design never chose it) and
counted. Coverage against a known truth, with non-uniform ``pi``, is simulated in
``tests/test_compare_labelling.py``.

References: T. Zrnic and E. J. Candès, "Active Statistical Inference", ICML 2024, arXiv
2403.03208; A. N. Angelopoulos, J. C. Duchi, T. Zrnic, "PPI++: Efficient prediction-powered
inference", arXiv 2311.01453 (power tuning); L. Kish, "Survey Sampling", 1965 (effective size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from autorubric_local.comparisons.corrected import PreferenceLabel, labelled_preferences
from autorubric_local.comparisons.judging import StoredComparison
from autorubric_local.comparisons.labelling import ComparisonSelection
from autorubric_local.core.errors import InputError
from autorubric_local.estimates.api import SMALL_N_NOTE
from autorubric_local.estimates.methods import (
    MIN_LABELS_FOR_COVERAGE,
    Interval,
    active_mean,
    kish_effective_size,
    with_notes,
    within_range,
)

__all__ = ["ActiveWinRate", "active_win_rates"]


@dataclass(frozen=True)
class ActiveWinRate:
    """One pair's human win rate of ``system`` over ``other`` under an active selection.

    Attributes
    ----------
    system, other : str
    n_comparisons : int
        Comparisons of the pair with a complete judgment (the target's population).
    n_drawn : int
        Of them, drawn for labelling (each has a label).
    n_ignored : int
        Labels of the pair's comparisons that were not drawn (left out).
    judge : float
        The judge's mean prediction ``mean(f)`` (no interval: biased whenever the judge is).
    classical : Interval
        The Horvitz-Thompson mean of the labels (``lam = 0``).
    active : Interval
        The power-tuned active estimate.
    n_effective : float
        Kish's effective number of the drawn labels' weights ``1 / pi``.
    """

    system: str
    other: str
    n_comparisons: int
    n_drawn: int
    n_ignored: int
    judge: float
    classical: Interval
    active: Interval
    n_effective: float


def active_win_rates(comparison: StoredComparison, selection: ComparisonSelection,
                     labels: Sequence[PreferenceLabel], *, judge_id: str, question: str | None = None,
                     confidence: float = 0.9, source: str = "the labels") -> list[ActiveWinRate]:
    """Classical (Horvitz-Thompson) and active win rates for every pair of systems (module docstring).

    Parameters
    ----------
    comparison : StoredComparison
    selection : ComparisonSelection
        The comparison's stored selection (:func:`.labelling.load_comparison_selection`).
    labels : sequence of PreferenceLabel
        Labels of (at least) every drawn comparison (:func:`.corrected.load_preference_labels`).
    judge_id : str
        The judge whose predictions ``f`` are used (any judge of the comparison).
    question : str, optional
        The question the labels answer; default the selection's.
    confidence : float in (0, 1)
    source : str
        Names the labels in errors (e.g. the file).

    Returns
    -------
    list of ActiveWinRate
        One per pair of systems with a complete judgment, ``system`` first in the comparison's
        order, estimates in [0, 1]; NaN with a note below 2 drawn comparisons.

    Raises
    ------
    InputError
        ``confidence`` outside (0, 1); a selection of another comparison; a label of a comparison
        that was not judged; a comparison judged by the selection's judge but missing from the
        selection (the comparison grew after it); or drawn comparisons without a label (the count
        and the first are named). Another judge's estimates cover the selection's comparisons that
        it judged completely.

    References
    ----------
    T. Zrnic and E. J. Candès, "Active Statistical Inference", ICML 2024, arXiv 2403.03208.
    """
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence}")
    if selection.sweep_id != comparison.sweep_id:
        raise InputError(f"selection {selection.selection_id} is of sweep {selection.sweep_id!r}, not of comparison "
                         f"{comparison.name!r} ({comparison.sweep_id})")
    question = question or selection.question
    alpha = 1.0 - confidence
    design = {(c.prompt_id, frozenset((c.system_a, c.system_b))): c for c in selection.items}
    rows = labelled_preferences(comparison, labels, judge_id=judge_id, question=question)
    judged = {(r.prompt_id, frozenset((r.a, r.b))): (r.a, r.b, r.judge) for r in rows}
    human = {(r.prompt_id, frozenset((r.a, r.b))): r.label for r in rows if r.label is not None}
    outside = [key for key in judged if key not in design]
    if outside and (judge_id, question) != (selection.judge_id, selection.question):  # the selection's comparisons
        judged = {key: value for key, value in judged.items() if key in design}
    elif outside:
        prompt, pair = outside[0][0], sorted(outside[0][1])
        raise InputError(f"{len(outside)} judged comparison(s) are not in selection {selection.selection_id} (first: "
                         f"prompt {prompt!r}, systems {pair[0]!r} and {pair[1]!r}): the comparison changed after it; "
                         "select again")
    unlabelled = [key for key in judged if design[key].drawn and key not in human]
    if unlabelled:
        c = design[unlabelled[0]]
        raise InputError(f"{len(unlabelled)} comparison(s) drawn by selection {selection.selection_id} have no label "
                         f"in {source} (first: prompt {c.prompt_id!r}, systems {c.system_a!r} and {c.system_b!r}): "
                         "label every drawn comparison (a missing one would bias the weighted estimate)")
    order = {s: k for k, s in enumerate(comparison.systems)}
    by_pair: dict[tuple[str, str], list[tuple[float, float, bool, float, bool]]] = {}
    for key, (a, b, f) in judged.items():
        first, second = sorted((a, b), key=order.__getitem__)
        c = design[key]
        label = human.get(key)
        y = float("nan") if label is None or not c.drawn else label.outcome_for(first)
        by_pair.setdefault((first, second), []).append(
            (f if first == a else 1.0 - f, y, c.drawn, c.inclusion_probability, label is not None and not c.drawn))
    out = []
    for (first, second), rows in by_pair.items():
        f = np.array([r[0] for r in rows])
        y = np.array([r[1] for r in rows])
        drawn = np.array([r[2] for r in rows], dtype=bool)
        pi = np.array([r[3] for r in rows])
        n_drawn = int(drawn.sum())
        n_kish = kish_effective_size(1.0 / pi[drawn]) if n_drawn else 0.0
        if n_drawn < 2:
            classical = active = _nan(f"fewer than 2 drawn comparisons ({n_drawn})")
        else:
            classical = _bounded(active_mean(f, y, drawn, pi, alpha, lam=0.0), n_drawn, n_kish, alpha)
            active = _bounded(active_mean(f, y, drawn, pi, alpha), n_drawn, n_kish, alpha)
        ignored = int(sum(r[4] for r in rows))
        out.append(ActiveWinRate(first, second, len(rows), n_drawn, ignored, float(f.mean()), classical, active,
                                 float(n_kish)))
    return out


def _bounded(interval: Interval, n: int, n_kish: float, alpha: float) -> Interval:
    bounded = within_range(interval, 0.0, 1.0, n_kish, alpha)
    return with_notes(bounded, SMALL_N_NOTE) if n < MIN_LABELS_FOR_COVERAGE else bounded


def _nan(note: str) -> Interval:
    return Interval(float("nan"), None, None, None, note=note)
