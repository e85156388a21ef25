"""Comparisons of systems: the judge sees two (or more) systems' responses to one prompt and
says which is better.

This room holds the analysis of comparative judgments, pure functions of arrays and labels
(no engine, no store): mapping a judgment made in one slot order back to systems, balanced
position calibration and the MT-Bench swap rule (:mod:`.preferences`), position consistency
(:mod:`.preferences`), and Bradley-Terry rankings with tie models and cluster-bootstrap intervals
(:mod:`.bradley_terry`), style control (:mod:`.style`), paired tests (:mod:`.paired`), and
rankings corrected by human preference labels (:mod:`.corrected`, :mod:`.corrected_bt`,
:mod:`.labelling`, :mod:`.active`). Formulas and their papers are in each module's docstring.
"""

from autorubric_local.comparisons.bradley_terry import (
    BradleyTerryFit,
    BradleyTerryIntervals,
    PairCounts,
    bootstrap_bradley_terry,
    fit_bradley_terry,
    pair_counts,
)
from autorubric_local.comparisons.preferences import (
    LABELS,
    PositionConsistency,
    balanced_preference,
    hard_verdict,
    position_consistency,
    swap_rule,
    system_probabilities,
)

__all__ = [
    "LABELS",
    "BradleyTerryFit",
    "BradleyTerryIntervals",
    "PairCounts",
    "PositionConsistency",
    "balanced_preference",
    "bootstrap_bradley_terry",
    "fit_bradley_terry",
    "hard_verdict",
    "pair_counts",
    "position_consistency",
    "swap_rule",
    "system_probabilities",
]
