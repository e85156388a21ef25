"""Agreement among the judges of an ensemble (no ground truth needed).

- Krippendorff's alpha: the ``krippendorff`` package (Castro, 2017), level ``nominal`` for
  binary and nominal criteria, ``ordinal`` (over scale positions) for ordinal ones; it
  handles missing ratings (failed calls, excluded CANNOT_ASSESS/NA).
- Fleiss' kappa: no installed library computes it (statsmodels is not a dependency), so
  :func:`fleiss_kappa` implements Fleiss (1971), "Measuring nominal scale agreement among
  many raters", Psychological Bulletin 76(5), eqs. 2-9, over the items every judge rated.
"""

from __future__ import annotations

from collections.abc import Sequence

import krippendorff
import numpy as np

from autorubric_local.core.errors import InputError
from autorubric_local.metrics._checks import finite_or_none
from autorubric_local.metrics.extract import (
    CANNOT_ASSESS,
    UNMET,
    _new_pairs,
    criterion_key,
    judge_code,
)
from autorubric_local.metrics.types import (
    CannotAssessMode,
    GradedRun,
    InterJudgeCriterion,
    InterJudgeResult,
    NAMode,
)

__all__ = ["fleiss_kappa", "inter_judge_agreement", "judge_ids"]


def fleiss_kappa(counts: Sequence[Sequence[float]] | np.ndarray) -> float | None:
    """Fleiss' kappa of a subjects x categories count table.

    Parameters
    ----------
    counts : array-like of shape (n_items, n_categories)
        ``counts[i, j]`` = number of raters who put item ``i`` in category ``j``; every row
        must sum to the same number of raters ``n >= 2``.

    Returns
    -------
    float or None
        ``(P_bar - P_e) / (1 - P_e)`` with ``P_i = (sum_j n_ij^2 - n) / (n (n - 1))``,
        ``P_bar = mean_i P_i``, ``p_j = sum_i n_ij / (N n)``, ``P_e = sum_j p_j^2``
        (Fleiss, 1971). At most 1; ``None`` when ``P_e == 1`` (every rating in one
        category) or there are no items.

    Raises
    ------
    InputError
        Rows with different totals, fewer than 2 raters, or negative counts.
    """
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2:
        raise InputError(f"counts must be 2-d (items x categories), got shape {table.shape}")
    if table.shape[0] == 0:
        return None
    if (table < 0).any():
        raise InputError("counts must be non-negative")
    raters = table.sum(axis=1)
    n = raters[0]
    if not np.allclose(raters, n):
        raise InputError("every item must be rated by the same number of raters")
    if n < 2:
        raise InputError(f"Fleiss' kappa needs at least 2 raters per item, got {n:g}")
    n_items = table.shape[0]
    p_j = table.sum(axis=0) / (n_items * n)
    p_i = (np.square(table).sum(axis=1) - n) / (n * (n - 1))
    p_bar = p_i.mean()
    p_e = float(np.square(p_j).sum())
    if p_e >= 1 - 1e-12:
        return None
    return float((p_bar - p_e) / (1 - p_e))


def judge_ids(eval_result: GradedRun) -> list[str]:
    """Every judge id that voted in the run, in first-seen order."""
    seen: dict[str, None] = {}
    for r in eval_result.item_results:
        for cr in r.report.report or []:
            for v in (*cr.votes, *cr.multi_choice_votes):
                seen.setdefault(v.judge_id, None)
    return list(seen)


def inter_judge_agreement(
    eval_result: GradedRun,
    cannot_assess: CannotAssessMode = CannotAssessMode.EXCLUDE,
    na_mode: NAMode = NAMode.EXCLUDE,
    warn: list[str] | None = None,
) -> InterJudgeResult | None:
    """Krippendorff's alpha and Fleiss' kappa per criterion among the ensemble's judges.

    Ratings are the judges' own votes (failed calls are missing). CANNOT_ASSESS / NA follow
    the modes as in the human comparison: EXCLUDE -> missing, AS_CATEGORY -> a category
    (nominal levels only; for ordinal alpha NA stays missing), AS_UNMET -> UNMET / the
    worst scored option. Criteria are keyed as in :mod:`autorubric_local.metrics.extract`.

    Returns
    -------
    InterJudgeResult or None
        ``None`` when fewer than two judges voted.
    """
    judges = judge_ids(eval_result)
    if len(judges) < 2:
        return None
    warn = warn if warn is not None else []
    # key -> (pairs template, {item: [code per judge]})
    ratings: dict[str, tuple[object, dict[int, list[float]]]] = {}
    order: list[str] = []
    for r in eval_result.item_results:
        for index, cr in enumerate(r.report.report or []):
            key = criterion_key(cr.criterion, index)
            if key not in ratings:
                ratings[key] = (_new_pairs(key, index, cr.criterion), {})
                order.append(key)
            template, rows = ratings[key]
            row = [_rating(template, cr, jid, cannot_assess, na_mode) for jid in judges]
            rows[r.item_idx] = row
    per: list[InterJudgeCriterion] = []
    for key in order:
        template, rows = ratings[key]
        per.append(_one(key, template, rows, len(judges), warn))
    alphas = [c.alpha for c in per if c.alpha is not None]
    fleiss = [c.fleiss_kappa for c in per if c.fleiss_kappa is not None]
    return InterJudgeResult(
        judges=judges, per_criterion=per,
        mean_alpha=float(np.mean(alphas)) if alphas else None,
        mean_fleiss_kappa=float(np.mean(fleiss)) if fleiss else None,
    )


def _rating(pairs, cr, jid, ca: CannotAssessMode, na: NAMode) -> float:  # type: ignore[no-untyped-def]
    got = judge_code(cr, pairs.criterion, jid)
    if got is None:
        return np.nan
    code = got[0]
    if pairs.scale == "binary":
        if code == CANNOT_ASSESS:
            if ca is CannotAssessMode.EXCLUDE:
                return np.nan
            if ca is CannotAssessMode.AS_UNMET:
                return float(UNMET)
        return float(code)
    crit = pairs.criterion
    if code == crit.na_option_index:
        if na is NAMode.EXCLUDE:
            return np.nan
        if na is NAMode.AS_UNMET:
            code = crit.worst_scored_option()[0]
    if pairs.scale == "ordinal":
        pos = pairs.position[code]
        return float(pos) if pos >= 0 else np.nan
    return float(code)


def _one(key: str, pairs, rows: dict[int, list[float]], n_judges: int,  # type: ignore[no-untyped-def]
         warn: list[str]) -> InterJudgeCriterion:
    scale = pairs.scale
    level = "ordinal" if scale == "ordinal" else "nominal"
    data = np.array(list(rows.values()), dtype=float).T if rows else np.empty((n_judges, 0))
    alpha: float | None = None
    observed = data[np.isfinite(data)]
    if np.unique(observed).size >= 2:
        try:
            alpha = finite_or_none(krippendorff.alpha(reliability_data=data,
                                                      level_of_measurement=level))
        except ValueError as e:  # the package refuses data it cannot pair
            warn.append(f"inter-judge {key!r}: Krippendorff's alpha undefined ({e})")
    else:
        warn.append(f"inter-judge {key!r}: Krippendorff's alpha undefined (one category observed)")
    complete = data[:, np.all(np.isfinite(data), axis=0)] if data.size else data
    fleiss = None
    if complete.shape[1] > 0:
        cats = np.unique(complete)
        counts = np.stack([(complete == c).sum(axis=0) for c in cats], axis=1)
        fleiss = fleiss_kappa(counts)
    if fleiss is None:
        warn.append(f"inter-judge {key!r}: Fleiss' kappa undefined")
    return InterJudgeCriterion(name=key, scale=scale, level_of_measurement=level, alpha=alpha,
                               fleiss_kappa=fleiss, n_items=int(complete.shape[1]),
                               n_judges=n_judges)
