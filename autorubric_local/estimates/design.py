"""Which items to label, how many labels a target width needs, and the difference of two runs.

- :func:`select_items`: active selection (Zrnic & Candès, "Active Statistical Inference", ICML
  2024, arXiv 2403.03208): each item is drawn for labelling with probability ``pi_i`` that
  grows with the judge's uncertainty about it, mixed with the uniform rule
  (:func:`.sampling.inclusion_probabilities`); ``pi_i`` and the draw of every item are stored
  before any label exists, and :func:`.api.estimate_run` weights by them.
- :func:`label_power`: labels needed for an interval width (:mod:`.power`), from the labels the
  run has as a pilot, else from the judge's own uncertainty.
- :func:`compare_runs`: ``estimate(A) - estimate(B)`` per target: paired per item when the runs
  graded the same items (PPI++ on the per-item differences), else the independent estimates'
  variances add.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from autorubric_local.core.errors import InputError
from autorubric_local.estimates import methods, power, sampling
from autorubric_local.estimates.api import (
    DATASET_SOURCE,
    METHODS,
    Estimate,
    LoadedRun,
    estimate_row,
    load_run,
    save_labels,
    targets_of,
    uniform_intervals,
)
from autorubric_local.estimates.targets import DIFFERENCE, SCORE, TargetData, build_targets, item_key
from autorubric_local.metrics.extract import criterion_key
from autorubric_local.metrics.types import CannotAssessMode
from autorubric_local.store import Store

COMPARED = ("classical", "judge", "ppi")
"""The methods of a comparison of two runs."""


@dataclass(frozen=True)
class Selection:
    """A stored selection: its id, and per item ``(item_id, inclusion_probability, drawn)``."""

    selection_id: int
    target: str
    budget: float
    seed: int | None
    items: list[tuple[str, float, bool]]
    mix: float = 0.2

    @property
    def drawn_ids(self) -> list[str]:
        """The items chosen for labelling, in the run's order."""
        return [item_id for item_id, _, drawn in self.items if drawn]


def _target(targets: Sequence[TargetData], name: str) -> TargetData:
    for t in targets:
        if t.name == name:
            return t
    raise InputError(f"unknown target {name!r}; this run's targets are {[t.name for t in targets]}")


def item_uncertainties(loaded: LoadedRun, targets: Sequence[TargetData], name: str) -> tuple[list[str], np.ndarray]:
    """Item ids of the run and each one's judge uncertainty about ``name``: ``sqrt(f(1-f))`` for
    a criterion target, the score's standard deviation under independent verdicts
    (:func:`.sampling.item_uncertainty`) for ``score``. Items without a prediction count as
    maximally uncertain."""
    ids = list(loaded.criteria)
    if name != SCORE:
        target = _target(targets, name)
        by_id = dict(zip(target.item_ids, target.f, strict=True))
        return ids, sampling.item_uncertainty(np.array([by_id.get(i, np.nan) for i in ids]))
    first = next(iter(loaded.criteria.values()))
    keys = [criterion_key(c, k) for k, c in enumerate(first)]
    columns = []
    for key in keys:
        target = _target(targets, key)
        by_id = dict(zip(target.item_ids, target.f, strict=True))
        columns.append([by_id.get(i, np.nan) for i in ids])
    weights = [c.weight for c in first]
    if not any(w > 0 for w in weights):  # a penalty-only rubric: the same spread, on |weights|
        weights = [abs(w) for w in weights]
    return ids, sampling.item_uncertainty(np.array(columns).T, weights)


def select_items(db: str | Path, run: str | None = None, *, budget: float, seed: int | None = None,
                 target: str = SCORE, mix: float = 0.2) -> Selection:
    """Draw the items of ``run`` to be labelled, by the judge's uncertainty, and store the design
    (:func:`draw_selection` then :func:`save_selection`).

    Parameters
    ----------
    budget : float in (0, N]
        Expected number of items to label (``sum(pi)``); the number drawn varies around it.
    seed : int or None
        Seed of the draws (stored; the same seed and run give the same selection).
    target : str
        The target whose uncertainty sets the probabilities (default ``score``).
    mix : float in [0, 1]
        Weight of the uniform rule in the mixture (:func:`.sampling.inclusion_probabilities`).

    Raises
    ------
    InputError
        No such run or target, or a budget outside (0, N].
    """
    loaded = load_run(db, run, selection=None, require_labels=False)
    return save_selection(db, loaded, draw_selection(loaded, budget=budget, seed=seed, target=target, mix=mix))


def draw_selection(loaded: LoadedRun, *, budget: float, seed: int | None = None, target: str = SCORE,
                   mix: float = 0.2, cannot_assess: CannotAssessMode | str = CannotAssessMode.EXCLUDE) -> Selection:
    """Draw a selection of ``loaded``'s items (not stored; see :func:`select_items`)."""
    targets = build_targets(loaded.result, loaded.dataset, loaded.labels, cannot_assess)
    ids, u = item_uncertainties(loaded, targets, target)
    if not 0 < budget <= len(ids):
        raise InputError(f"budget must be in (0, {len(ids)}] (the run's items), got {budget}")
    pi = sampling.inclusion_probabilities(u, budget, mix)
    drawn = sampling.draw(pi, seed)
    items = [(item_id, float(p), bool(d)) for item_id, p, d in zip(ids, pi, drawn, strict=True)]
    return Selection(0, target, float(budget), seed, items, mix)


def save_selection(db: str | Path, loaded: LoadedRun, selection: Selection) -> Selection:
    """Store ``selection`` (from :func:`draw_selection`) for ``loaded``'s run; return it with its id."""
    store = Store.open(loaded.result.db_path or db)
    try:
        selection_id = store.save_selection(loaded.run_id, target=selection.target, budget=selection.budget,
                                            seed=selection.seed, mix=selection.mix,
                                            settings={"rule": "sqrt-variance mixed with uniform"},
                                            items=selection.items)
    finally:
        store.close()
    return replace(selection, selection_id=selection_id)


def selection_rows(loaded: LoadedRun, selection: Selection) -> list[dict[str, Any]]:
    """One labels-file template row per drawn item: ``id``, ``submission``, ``query``, the
    ``inclusion_probability``, ``ground_truth`` of nulls to fill in (rubric order) and
    ``criteria``: for each place of ``ground_truth``, the criterion's name and the labels it
    allows (``MET``/``UNMET``/``CANNOT_ASSESS``, or the option labels). The labels reader reads
    ``id`` and ``ground_truth`` only."""
    by_id = {item_key(r): r for r in loaded.result.item_results}
    pi = {item_id: p for item_id, p, _ in selection.items}
    rows = []
    for item_id in selection.drawn_ids:
        r = by_id[item_id]
        query = r.item.prompt if r.item.prompt is not None else getattr(loaded.dataset, "prompt", None)
        rows.append({"id": item_id, "submission": r.item.submission, "query": query,
                     "inclusion_probability": pi[item_id], "ground_truth": [None] * len(loaded.criteria[item_id]),
                     "criteria": [{"name": criterion_key(c, k),
                                   "allowed": [o.label for o in c.options] if c.options is not None
                                   else ["MET", "UNMET", "CANNOT_ASSESS"]}
                                  for k, c in enumerate(loaded.criteria[item_id])]})
    return rows


def label_power(db: str | Path, run: str | None = None, *, width: float, confidence: float = 0.9,
                targets: Sequence[str] | None = None, labels_file: str | Path | None = None,
                cannot_assess: CannotAssessMode | str = CannotAssessMode.EXCLUDE) -> list[dict[str, Any]]:
    """About how many labels each target needs for an interval ``width`` wide (uniform sampling).

    With at least 2 labels for a target they are the pilot (:func:`.power.ppi_labels_for_width`);
    without, the judge is assumed calibrated (:func:`.power.judge_only_labels_for_width`, an
    optimistic figure). Returns one dict per target: ``target``, ``pilot_labels``, ``classical``
    and ``ppi`` (labels needed, at most the target's number of items), ``basis`` (``pilot`` or
    ``judge``) and ``note`` (None, or why a count was capped: the width cannot be reached by
    labelling this run's items, and how many labels the formula asked for).
    """
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence}")
    _, built = targets_of(db, run, labels_file=labels_file, cannot_assess=cannot_assess)
    _check_targets(targets, [t.name for t in built])
    alpha = 1 - confidence
    rows = []
    for target in built:
        if targets is not None and target.name not in targets:
            continue
        lab = target.labelled
        if lab.sum() >= 2:
            need = power.ppi_labels_for_width(width, alpha, target.y[lab], target.f[lab], target.f)
            basis = "pilot"
        else:
            try:
                need = power.judge_only_labels_for_width(width, alpha, target.f)
                basis = "judge"
            except InputError as e:  # e.g. a raw score: no calibrated-judge shortcut
                need, basis = {"classical": None, "ppi": None}, f"none: {e}"
        size, capped = len(target.f), []
        for method in ("classical", "ppi"):
            wanted = need[method]
            if isinstance(wanted, int) and wanted > size:
                capped.append(f"{method} would need {wanted}")
                need[method] = size
        note = (f"width {width:g} cannot be reached with this run's {size} items ({', '.join(capped)}): "
                f"capped at {size}" if capped else None)
        rows.append({"target": target.name, "pilot_labels": int(lab.sum()), "classical": need["classical"],
                     "ppi": need["ppi"], "basis": basis, "note": note})
    return rows


def _check_targets(wanted: Sequence[str] | None, names: Sequence[str]) -> None:
    unknown = [t for t in wanted or [] if t not in names]
    if unknown:
        raise InputError(f"unknown target(s) {unknown}; the targets are {list(names)}")


def _refuse_selected(db: str | Path, loaded: LoadedRun) -> None:
    """A run whose labels may have been drawn by a selection cannot be compared as if they were
    a uniform sample."""
    if loaded.source == DATASET_SOURCE:
        return
    store = Store.open_read_only(loaded.result.db_path or db)
    try:
        selection = store.selection(loaded.run_id)
    finally:
        store.close()
    if selection is not None:
        raise InputError(f"run {loaded.name!r} has a label selection ({selection['id']}): its labels are no uniform "
                         "sample, and --compare does not weight by a selection; estimate each run alone")


def _paired(a: TargetData, b: TargetData) -> TargetData:
    f_b = dict(zip(b.item_ids, b.f, strict=True))
    y_b = dict(zip(b.item_ids, b.y, strict=True))
    ids = [i for i in a.item_ids if i in f_b]
    f_a = dict(zip(a.item_ids, a.f, strict=True))
    y_a = dict(zip(a.item_ids, a.y, strict=True))
    return TargetData(a.name, DIFFERENCE, tuple(ids), np.array([f_a[i] - f_b[i] for i in ids]),
                      np.array([y_a[i] - y_b[i] for i in ids]), None, a.n_left_out + b.n_left_out,
                      bounds=_difference_bounds(a, b))


def _difference_bounds(a: TargetData, b: TargetData) -> tuple[float, float] | None:
    """The range of ``A - B`` for values of ``a`` and ``b`` within their bounds (None if either has none)."""
    if a.bounds is None or b.bounds is None:
        return None
    return a.bounds[0] - b.bounds[1], a.bounds[1] - b.bounds[0]


def compare_runs(db: str | Path, run_a: str | None, run_b: str, *, db_b: str | Path | None = None,
                 labels_a: str | Path | None = None, labels_b: str | Path | None = None,
                 confidence: float = 0.9, targets: Sequence[str] | None = None,
                 cannot_assess: CannotAssessMode | str = CannotAssessMode.EXCLUDE) -> list[Estimate]:
    """``A - B`` per target shared by both runs, by ``classical``, ``judge`` and ``ppi``.

    Paired (``sampling`` ``paired``) when both runs graded the same item ids: the per-item
    differences ``Y_A - Y_B`` (items labelled in both) and ``f_A - f_B`` go through the same
    estimators. Otherwise (``unpaired``) each run is estimated alone and the difference's
    variance is the sum (:func:`.methods.unpaired_difference`); ``judge`` has no interval either
    way. Label selections are not used here: labels count as uniform samples.

    Raises
    ------
    InputError
        As :func:`.api.estimate_run`, or the runs share no target.
    """
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence}")
    alpha = 1 - confidence
    loaded_a = load_run(db, run_a, labels_file=labels_a, selection=None)
    loaded_b = load_run(db_b or db, run_b, labels_file=labels_b, selection=None)
    _refuse_selected(db, loaded_a)
    _refuse_selected(db_b or db, loaded_b)
    targets_a = build_targets(loaded_a.result, loaded_a.dataset, loaded_a.labels, cannot_assess)
    targets_b = {t.name: t for t in build_targets(loaded_b.result, loaded_b.dataset, loaded_b.labels, cannot_assess)}
    shared = [t for t in targets_a if t.name in targets_b]
    _check_targets(targets, [t.name for t in shared])
    if targets:
        shared = [t for t in shared if t.name in targets]
    if not shared:
        raise InputError(f"runs {loaded_a.name!r} and {loaded_b.name!r} share no criterion or score")
    paired = set(loaded_a.criteria) == set(loaded_b.criteria)
    rows: list[Estimate] = []
    for a in shared:
        b = targets_b[a.name]
        if paired:
            d = _paired(a, b)
            n = int(d.labelled.sum())
            for method, iv in uniform_intervals(d, alpha, COMPARED).items():
                rows.append(estimate_row(d, method, iv, n, len(d.f), confidence, "paired", n))
            continue
        alone_a, alone_b = uniform_intervals(a, alpha, COMPARED), uniform_intervals(b, alpha, COMPARED)
        n = int(a.labelled.sum() + b.labelled.sum())
        for method in COMPARED:
            ia, ib = alone_a[method], alone_b[method]
            iv = (methods.unpaired_difference(ia, ib, alpha) if method != "judge" else
                  methods.Interval(ia.estimate - ib.estimate, None, None, None,
                                   note="judge only: biased whenever a judge is; no valid interval"))
            bounds = _difference_bounds(a, b)
            if bounds is not None:  # a degenerate interval widens as for the smaller of the two samples
                iv = methods.within_range(iv, *bounds, min(a.labelled.sum(), b.labelled.sum()), alpha)
            rows.append(Estimate(a.name, method, iv.estimate, iv.ci_low, iv.ci_high, iv.std_error, n,
                                 len(a.f) + len(b.f) - n, confidence, "unpaired", None, None, iv.note))
    save_labels(db, loaded_a)
    save_labels(db_b or db, loaded_b)
    return rows


__all__ = ["METHODS", "Selection", "compare_runs", "draw_selection", "label_power", "save_selection", "select_items",
           "selection_rows"]
