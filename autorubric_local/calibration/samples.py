"""The labelled pairs a calibration is fitted or evaluated on: the one place that reads a run.

A pair is one item's binary criterion with

- a human label MET or UNMET (the item's ground truth; CANNOT_ASSESS labels are left out),
- the run's final verdict MET or UNMET (failed criteria and CANNOT_ASSESS verdicts are left
  out: a rule separates MET from UNMET, not assessable from not; the metrics' default
  ``cannot_assess="exclude"`` leaves the same pairs out), and
- the final P(MET), ``binary_p_met`` of the criterion report's ``label_probabilities`` (the
  ensemble's weighted distribution; a one-judge run's judge).

Criteria are matched across items by key (:func:`autorubric_local.metrics.extract.criterion_key`);
multi-choice criteria are not calibrated here. Only the items whose ids are asked for are read,
so a fit never sees another item's label.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import CriterionVerdict
from autorubric_local.metrics.extract import binary_p_met, criterion_key, verdict_to_binary
from autorubric_local.metrics.types import GradedRun

__all__ = ["CriterionSample", "criterion_samples"]


@dataclass(frozen=True)
class CriterionSample:
    """One criterion's pairs, in item order.

    Attributes
    ----------
    key : str
    item_ids : tuple of str, shape (n,)
    y : ndarray of {0, 1}, shape (n,)
        Human labels (1 = MET).
    p : ndarray of float in [0, 1], shape (n,)
        The run's final P(MET).
    verdict : ndarray of {0, 1}, shape (n,)
        The run's own final verdict (1 = MET).
    """

    key: str
    item_ids: tuple[str, ...]
    y: np.ndarray
    p: np.ndarray
    verdict: np.ndarray

    def subset(self, positions: np.ndarray) -> CriterionSample:
        """The pairs at ``positions``."""
        return CriterionSample(self.key, tuple(self.item_ids[i] for i in positions), self.y[positions],
                               self.p[positions], self.verdict[positions])


def criterion_samples(result: GradedRun, item_ids: Iterable[str]) -> dict[str, CriterionSample]:
    """The pairs of ``item_ids`` in ``result``, per binary criterion key (module docstring).

    Parameters
    ----------
    result : GradedRun
        A graded run, e.g. from :func:`autorubric_local.runner.load_result`.
    item_ids : iterable of str
        Ids (``ItemResult.item_id``) of the items to read.

    Returns
    -------
    dict of str to CriterionSample
        In the order criteria are first met; a criterion without any pair is absent.

    Raises
    ------
    InputError
        An id that is not an item of the run, an id given twice, or an item whose ground truth
        and report differ in length.
    """
    wanted = list(item_ids)
    if len(set(wanted)) != len(wanted):
        raise InputError("item ids: an id is given twice")
    results = {r.item_id: r for r in result.item_results}
    unknown = [item_id for item_id in wanted if item_id not in results]
    if unknown:
        raise InputError(f"item ids not in the run: {unknown[:5]}{' ...' if len(unknown) > 5 else ''}")
    rows: dict[str, list[tuple[str, int, float, int]]] = {}
    chosen = set(wanted)
    for r in result.item_results:
        if r.item_id not in chosen:
            continue
        truth = r.item.ground_truth
        report = r.report
        if truth is None or report.score is None or not report.report:
            continue
        if len(truth) != len(report.report):
            raise InputError(f"item {r.item_id!r}: ground truth has {len(truth)} labels, the report "
                             f"{len(report.report)} criteria")
        for index, (cr, label) in enumerate(zip(report.report, truth, strict=True)):
            if cr.criterion.options is not None or cr.error is not None:
                continue
            human = verdict_to_binary(label)
            judge = verdict_to_binary(cr.final_verdict)
            p = binary_p_met(cr.label_probabilities)
            if human is None or judge is None or p is None or cr.final_verdict is CriterionVerdict.CANNOT_ASSESS:
                continue
            rows.setdefault(criterion_key(cr.criterion, index), []).append((r.item_id, human, p, judge))
    return {
        key: CriterionSample(
            key,
            tuple(row[0] for row in pairs),
            np.array([row[1] for row in pairs], dtype=int),
            np.array([row[2] for row in pairs], dtype=float),
            np.array([row[3] for row in pairs], dtype=int),
        )
        for key, pairs in rows.items()
    }
