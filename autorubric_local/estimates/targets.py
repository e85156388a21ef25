"""What is estimated: per target, the judge's prediction for every graded item and the human
value where the item is labelled.

Targets of a run (each one mean over the run's items):

- a binary criterion ``KEY``: the share of items that meet it. Human value 1 for MET, 0 for
  UNMET; the judge's prediction is its probability of MET (not its argmax verdict), as
  prediction-powered inference wants (Angelopoulos et al., Science 2023, arXiv 2301.09633).
  CANNOT_ASSESS follows the metrics' modes (:class:`~autorubric_local.metrics.types.CannotAssessMode`):
  ``exclude`` (default) drops a human CANNOT_ASSESS from the labelled sample and reads the
  judge's P(MET) renormalised over MET and UNMET; ``as_unmet`` counts a human CANNOT_ASSESS as
  0 and reads P(MET) over all three labels. ``as_category`` has no share and is refused.
- a multi-choice criterion ``KEY``: the mean option value (NA options left out on both sides,
  the judge's expected value renormalised over the scored options), and ``KEY=LABEL`` for each
  option: the share of items whose label is that option (the judge's probability of it).
- ``score``: the rubric's item score (AutoRubric's formula, :mod:`autorubric_local.core.scoring`)
  of the human labels, where every criterion of the item is labelled; the judge's prediction is
  the same formula with each verdict replaced by its probability (binary: P(MET | MET or UNMET);
  multi-choice: the expected option value), i.e. the score implied by the judge's probabilities.

An item whose judgment of a criterion failed (no verdict) has no prediction for that target and
is left out of it, counted in :attr:`TargetData.n_left_out`, as the metrics leave out failed
pairs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import EnsembleCriterionReport
from autorubric_local.core.types import Criterion, CriterionVerdict
from autorubric_local.metrics.extract import criterion_key, human_scoring
from autorubric_local.metrics.types import CannotAssessMode

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.data.dataset import RubricDataset
    from autorubric_local.runner.results import EvalResult, ItemResult

Labels = Mapping[str, Sequence[CriterionVerdict | str | None]]
"""Human labels by item id: one entry per criterion of the item's rubric (rubric order), ``None``
where that criterion is unlabelled."""

SCORE = "score"
DIFFERENCE = "difference"
"""Kind of a paired target of two runs (per-item differences, :mod:`.design`)."""


def item_key(result: ItemResult) -> str:
    """The id of a graded item as the estimates (and the labels files) name it: its own id, else
    ``item-<index>``, as the metrics name items."""
    return result.item_id or f"item-{result.item_idx}"


@dataclass(frozen=True)
class TargetData:
    """One target's arrays over the run's items that have a judge prediction for it.

    Attributes
    ----------
    name : str
        ``KEY`` (criterion), ``KEY=LABEL`` (a multi-choice option's share) or ``"score"``.
    kind : str
        ``share_met``, ``mean_value``, ``option_share``, ``score``, or ``difference`` (the
        per-item differences of two runs).
    item_ids : tuple of str, length N
    f : ndarray of shape (N,)
        The judge's prediction per item (a probability, an expected value or a soft score).
    y : ndarray of shape (N,)
        The human value per item, ``nan`` where unlabelled (or excluded by the mode).
    verdict : ndarray of shape (N,) or None
        Binary targets: 1 where the judge's final verdict is MET, 0 otherwise (UNMET or
        CANNOT_ASSESS: the judge did not say MET); Rogan-Gladen reads it. ``None`` for other kinds.
    n_left_out : int
        Graded items left out for want of a prediction (a failed judgment or item).
    excluded : ndarray of shape (N,) of bool or None
        Items whose label the mode excluded (a human CANNOT_ASSESS under ``exclude``, an NA
        option for a mean value): labelled, but without a value, so the items with a value are
        no longer a sample of the items the judge predicts for (:mod:`.api` refuses PPI then).
    n_partial : int
        ``score`` only: items with some criteria labelled and some not (no human score).
    bounds : (float, float) or None
        The range ``(low, high)`` every value (human and judge) lies in, so the target's mean does
        too: [0, 1] for shares, option values and the normalised score, the range the weights
        allow for a raw score, ``None`` where unknown. Intervals are kept within it
        (:func:`.methods.within_range`).
    """

    name: str
    kind: str
    item_ids: tuple[str, ...]
    f: np.ndarray
    y: np.ndarray
    verdict: np.ndarray | None
    n_left_out: int
    excluded: np.ndarray | None = None
    n_partial: int = 0
    bounds: tuple[float, float] | None = None

    @property
    def n_excluded(self) -> int:
        """How many items have an excluded label (see ``excluded``)."""
        return 0 if self.excluded is None else int(self.excluded.sum())

    @property
    def labelled(self) -> np.ndarray:
        """Boolean mask (N,): items with a human value."""
        return ~np.isnan(self.y)


def _mode(mode: CannotAssessMode | str) -> CannotAssessMode:
    try:
        parsed = CannotAssessMode(mode)
    except ValueError:
        raise InputError(f"cannot_assess must be 'exclude' or 'as_unmet', got {mode!r}") from None
    if parsed is CannotAssessMode.AS_CATEGORY:
        raise InputError("cannot_assess 'as_category' has no share of MET to estimate; use 'exclude' or 'as_unmet'")
    return parsed


def _binary_prediction(cr: EnsembleCriterionReport, mode: CannotAssessMode) -> tuple[float, float] | None:
    """``(P(MET) under ``mode``, verdict code)`` of a binary criterion report, or None when failed."""
    if cr.error is not None or cr.final_verdict is None:
        return None
    verdict = 1.0 if cr.final_verdict is CriterionVerdict.MET else 0.0
    probs = cr.label_probabilities or {cr.final_verdict.value: 1.0}
    met, unmet, ca = probs.get("MET", 0.0), probs.get("UNMET", 0.0), probs.get("CANNOT_ASSESS", 0.0)
    denominator = met + unmet + (ca if mode is CannotAssessMode.AS_UNMET else 0.0)
    # With no MET/UNMET mass (a one-hot CANNOT_ASSESS under exclude) the prediction is 0.5: any
    # fixed value keeps the estimates valid (f only predicts), and the item keeps its labels.
    return (met / denominator if denominator > 0 else 0.5), verdict


def _option_probabilities(cr: EnsembleCriterionReport, criterion: Criterion) -> np.ndarray | None:
    """The judge's probability of each option (original order), or None when failed."""
    options = criterion.options or []
    if cr.error is not None or cr.final_multi_choice_verdict is None:
        return None
    probs = cr.label_probabilities
    if probs:
        p = np.array([probs.get(o.label, 0.0) for o in options], dtype=float)
        if p.sum() > 0:
            return p / p.sum()
    p = np.zeros(len(options))
    mc = cr.final_multi_choice_verdict
    index = mc.selected_index if mc.selected_index is not None and not mc.na else criterion.na_option_index
    if index is None:
        return None
    p[index] = 1.0
    return p


def _expected_value(p: np.ndarray, criterion: Criterion) -> float:
    options = criterion.options or []
    scored = np.array([not o.na for o in options])
    values = np.array([o.value for o in options], dtype=float)
    mass = p[scored].sum()
    return float((p[scored] * values[scored]).sum() / mass) if mass > 0 else np.nan


def _human_value(criterion: Criterion, label: CriterionVerdict | str | None, mode: CannotAssessMode) -> float:
    """The human value of one label for the criterion's main target (nan: unlabelled or excluded)."""
    if label is None:
        return np.nan
    if criterion.options is None:
        verdict = CriterionVerdict(label)
        if verdict is CriterionVerdict.CANNOT_ASSESS:
            return 0.0 if mode is CannotAssessMode.AS_UNMET else np.nan
        return 1.0 if verdict is CriterionVerdict.MET else 0.0
    option = criterion.options[criterion.find_option_by_label(str(label))]
    return np.nan if option.na else float(option.value)


def soft_score(weights: Sequence[float], values: Sequence[float], normalize: bool = True) -> float:
    """The rubric score with each criterion's verdict replaced by a value in [0, 1].

    AutoRubric's formula (``autorubric_local.core.scoring``; AutoRubric API reference, "Score
    Calculation"): ``raw = sum_i w_i v_i``; normalised ``clamp(raw / P, 0, 1)`` with ``P`` the sum
    of positive weights, ``clamp(1 + raw / N, 0, 1)`` for a penalty-only rubric (``N`` the sum of
    ``|w_i|`` of negative weights), ``0`` when no weight is non-zero. A criterion whose value is
    ``nan`` is skipped (left out of numerator and denominator), as a CANNOT_ASSESS under SKIP.

    Parameters
    ----------
    weights, values : sequences of float, length n_criteria
    normalize : bool
        False: the raw weighted sum.
    """
    raw = positive = negative = 0.0
    for weight, value in zip(weights, values, strict=True):
        if np.isnan(value):
            continue
        raw += weight * value
        if weight > 0:
            positive += weight
        else:
            negative -= weight
    if not normalize:
        return raw
    if positive > 0:
        return min(1.0, max(0.0, raw / positive))
    if negative > 0:
        return min(1.0, max(0.0, 1.0 + raw / negative))
    return 0.0


@dataclass
class _Builder:
    name: str
    kind: str
    ids: list[str]
    f: list[float]
    y: list[float]
    verdict: list[float] | None
    left_out: int = 0
    partial: int = 0
    excluded: list[bool] | None = None
    bounds: tuple[float, float] | None = (0.0, 1.0)

    def add(self, item_id: str, f: float, y: float, verdict: float | None = None, excluded: bool = False) -> None:
        self.ids.append(item_id)
        self.f.append(f)
        self.y.append(y)
        if self.excluded is None:
            self.excluded = []
        self.excluded.append(excluded)
        if self.verdict is not None:
            self.verdict.append(np.nan if verdict is None else verdict)

    def build(self) -> TargetData:
        return TargetData(self.name, self.kind, tuple(self.ids), np.asarray(self.f, dtype=float),
                          np.asarray(self.y, dtype=float),
                          None if self.verdict is None else np.asarray(self.verdict, dtype=float), self.left_out,
                          np.asarray(self.excluded or [], dtype=bool), self.partial, self.bounds)


def build_targets(result: EvalResult, dataset: RubricDataset, labels: Labels,
                  cannot_assess: CannotAssessMode | str = CannotAssessMode.EXCLUDE) -> list[TargetData]:
    """Every target of a graded run, in rubric order, then ``score``.

    Parameters
    ----------
    result : EvalResult
        The stored run (:func:`autorubric_local.runner.load_result`).
    dataset : RubricDataset
        The run's dataset (rubrics per item).
    labels : mapping of item id to list of label or None
        The human labels to use (see :data:`Labels`); items not in it are unlabelled.
    cannot_assess : CannotAssessMode or str
        ``exclude`` or ``as_unmet`` (module docstring).

    Raises
    ------
    InputError
        An unknown mode, criteria of one key that differ between items, or a labels entry whose
        length is not its item's number of criteria.
    """
    mode = _mode(cannot_assess)
    scoring = human_scoring(result)
    builders: dict[str, _Builder] = {}
    kinds: dict[str, tuple[object, ...]] = {}
    score = _Builder(SCORE, SCORE, [], [], [], None, bounds=(0.0, 1.0) if scoring["normalize"] else None)

    def builder(name: str, kind: str, binary: bool) -> _Builder:
        if name not in builders:
            builders[name] = _Builder(name, kind, [], [], [], [] if binary else None)
        return builders[name]

    for r in sorted(result.item_results, key=lambda r: r.item_idx):
        item_id = item_key(r)
        rubric = dataset.get_item_rubric(r.item_idx)
        criteria = list(rubric.rubric)
        item_labels = labels.get(item_id)
        if item_labels is not None and len(item_labels) != len(criteria):
            raise InputError(f"item {item_id!r}: {len(item_labels)} label(s) but its rubric has "
                             f"{len(criteria)} criteria")
        reports = r.report.report if r.report.score is not None and r.report.report is not None else None
        score_values: list[float] = []
        failed = reports is None
        for index, criterion in enumerate(criteria):
            key = criterion_key(criterion, index)
            signature = (None,) if criterion.options is None else tuple((o.label, o.value, o.na) for o in criterion.options)
            if kinds.setdefault(key, signature) != signature:
                raise InputError(f"item {item_id!r}: criterion {key!r} differs from an earlier item's "
                                 "criterion of the same key; name per-item criteria distinctly")
            label = None if item_labels is None else item_labels[index]
            cr = reports[index] if reports is not None else None
            if criterion.options is None:
                target = builder(key, "share_met", binary=True)
                got = None if cr is None else _binary_prediction(cr, mode)
                if got is None or np.isnan(got[0]):
                    target.left_out += 1
                    failed = True
                    score_values.append(np.nan)
                    continue
                human = _human_value(criterion, label, mode)
                target.add(item_id, got[0], human, got[1], excluded=label is not None and np.isnan(human))
                soft = _binary_prediction(cr, CannotAssessMode.EXCLUDE) if cr is not None else None
                score_values.append(np.nan if soft is None else soft[0])
                continue
            p = None if cr is None else _option_probabilities(cr, criterion)
            value_target = builder(key, "mean_value", binary=False)
            option_targets = [builder(f"{key}={o.label}", "option_share", binary=False) for o in criterion.options]
            if p is None:
                for t in (value_target, *option_targets):
                    t.left_out += 1
                failed = True
                score_values.append(np.nan)
                continue
            expected = _expected_value(p, criterion)
            score_values.append(expected)  # nan (all mass on NA): skipped in the soft score
            human = _human_value(criterion, label, mode)
            # all the judge's mass on NA: the mean scored value stands in (f only predicts)
            prediction = expected if not np.isnan(expected) else float(np.mean(
                [o.value for o in criterion.options if not o.na] or [0.0]))
            value_target.add(item_id, prediction, human, excluded=label is not None and np.isnan(human))
            chosen = None if label is None else criterion.find_option_by_label(str(label))
            for k, target in enumerate(option_targets):
                target.add(item_id, float(p[k]), np.nan if chosen is None else float(chosen == k))
        if failed:
            score.left_out += 1
            continue
        weights = [c.weight for c in criteria]
        if not scoring["normalize"]:  # a raw score lies between its penalties' and its credits' sums
            low, high = score.bounds or (0.0, 0.0)
            score.bounds = (min(low, sum(w for w in weights if w < 0)), max(high, sum(w for w in weights if w > 0)))
        human = np.nan
        if item_labels is not None and all(v is not None for v in item_labels):
            human = float(dataset.compute_weighted_score(list(item_labels), rubric=rubric, **scoring))
        elif item_labels is not None and any(v is not None for v in item_labels):
            score.partial += 1
        score.add(item_id, soft_score(weights, score_values, normalize=scoring["normalize"]), human)
    if not scoring["normalize"] and score.bounds is not None:  # a length penalty may reach past the weights
        seen = [v for v in (*score.y, *score.f) if not np.isnan(v)]
        score.bounds = (min([score.bounds[0], *seen]), max([score.bounds[1], *seen]))
        if score.bounds[0] >= score.bounds[1]:
            score.bounds = None
    return [b.build() for b in builders.values()] + [score.build()]
