"""Judge-corrected estimates over a stored run: what share of items meets each criterion, the
mean option value and the mean rubric score, with confidence intervals, from the judge's
predictions on every item plus human labels on a few.

Methods per target (:mod:`.methods` holds the formulas and their papers):

- ``classical``: human labels only (CLT interval; Horvitz-Thompson weights under an active
  selection).
- ``judge``: the judge's mean prediction over every item. Biased whenever the judge is, so it
  has no interval (``ci_low``/``ci_high`` are None).
- ``ppi``: prediction-powered inference with a tuned weight (PPI++, Angelopoulos, Duchi and
  Zrnic, arXiv 2311.01453; PPI, Angelopoulos et al., Science 2023); under an active selection
  the inverse-probability-weighted estimator of Zrnic and Candès (ICML 2024, arXiv 2403.03208).
- ``rogan_gladen`` (binary criteria, uniform sampling): the judge's MET rate corrected by its
  sensitivity and specificity on the labelled items (Rogan and Gladen 1978; Lee et al., arXiv
  2511.21140).

Sampling: labelled items are taken as a uniform random sample of the run's items unless the run
has a selection from :func:`select_items` (``autorubric-local label select``), whose recorded
inclusion probabilities and draws then weight the estimates. Variance is over items (one value
per item and target), so an item's correlated criteria never count as independent evidence.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion
from autorubric_local.estimates import methods
from autorubric_local.estimates.labels import LabelList, LabelsSkippedWarning, read_labels, skipped_message
from autorubric_local.estimates.targets import DIFFERENCE, SCORE, TargetData, build_targets, item_key
from autorubric_local.metrics.types import CannotAssessMode
from autorubric_local.runner.results import EvalResult, load_result
from autorubric_local.store import Store
from autorubric_local.store.schema import writable_or_warn

METHODS = ("classical", "judge", "ppi", "rogan_gladen")
DATASET_SOURCE = "dataset"


@dataclass(frozen=True)
class Estimate:
    """One target's estimate by one method.

    ``estimate`` is a share, mean option value or mean score (``nan`` where undefined, with
    ``note`` saying why); ``ci_low``/``ci_high`` bound the two-sided interval at ``confidence``
    (None where the method has none); ``n_labelled``/``n_unlabelled`` count the target's items
    with and without a human value; ``sampling`` is ``uniform`` or ``active (selection ID)``.
    """

    target: str
    method: str
    estimate: float
    ci_low: float | None
    ci_high: float | None
    std_error: float | None
    n_labelled: int
    n_unlabelled: int
    confidence: float
    sampling: str
    lam: float | None = None
    n_effective: float | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as JSON-ready values (``nan`` becomes ``None``)."""
        row = asdict(self)
        return {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()}


@dataclass(frozen=True)
class LoadedRun:
    """A stored run with its items' criteria and the human labels to use.

    ``skipped`` holds the ids a labels file labels that are no item of the run (left out, with
    a :class:`~autorubric_local.estimates.labels.LabelsSkippedWarning`).
    """

    result: EvalResult
    dataset: Any
    run_id: str
    name: str
    criteria: dict[str, list[Criterion]]
    labels: dict[str, LabelList]
    source: str
    selection: dict[str, Any] | None
    skipped: tuple[str, ...] = ()


def _criteria_by_item(result: EvalResult, dataset: Any) -> dict[str, list[Criterion]]:
    return {item_key(r): list(dataset.get_item_rubric(r.item_idx).rubric)
            for r in result.item_results}


def load_run(db: str | Path, run: str | None = None, *, labels_file: str | Path | None = None,
             label_source: str | None = None, selection: int | str | None = "latest",
             require_labels: bool = True) -> LoadedRun:
    """Load a run, its labels and its selection (nothing is written: :func:`save_labels`).

    Labels come from ``labels_file`` (replacing the dataset's own), else the stored source
    ``label_source``, else
    the dataset's ground truth. ``selection``: ``"latest"`` (the run's latest selection, if
    any), a selection id, or ``None``/``"none"`` (treat labelled items as a uniform sample).

    Items of ``labels_file`` that are not in the run are skipped with a
    :class:`~autorubric_local.estimates.labels.LabelsSkippedWarning` (so a full labels file
    serves a ``grade --limit`` run); a file that labels none of the run's items is refused.

    Raises
    ------
    InputError
        No such run, a wrong label (file, line or task, field), a labels file that labels
        none of the run's items, a missing selection, or no labels at all.
    """
    result, dataset = load_result(db, run)
    criteria = _criteria_by_item(result, dataset)
    run_id = result.run_id or ""
    name = result.experiment_name or run_id
    skipped: tuple[str, ...] = ()
    store = Store.open_read_only(result.db_path or db)
    try:
        if labels_file is not None:
            read = read_labels(labels_file, criteria)
            labels, skipped = read.labels, read.skipped
            source = str(Path(labels_file).resolve())
        elif label_source is not None:
            rows = store.label_rows(run_id, label_source)
            if not rows:
                known = ", ".join(store.label_sources(run_id)) or "none"
                raise InputError(f"run {result.experiment_name!r} has no labels from {label_source!r} (sources: {known})")
            labels = {}
            for item_id, index, _, label in rows:
                labels.setdefault(item_id, [None] * len(criteria[item_id]))[index] = label
            source = label_source
        else:
            labels = {item_key(r): list(dataset[r.item_idx].ground_truth)
                      for r in result.item_results if dataset[r.item_idx].ground_truth is not None}
            source = DATASET_SOURCE
        chosen = None
        if selection not in (None, "none") and not (selection == "latest" and source == DATASET_SOURCE):
            if selection != "latest" and not str(selection).isdigit():
                raise InputError(f"selection must be 'latest', 'none' or a selection id, got {selection!r}")
            chosen = store.selection(run_id, None if selection == "latest" else int(selection))
            if chosen is None and selection != "latest":
                raise InputError(f"run {result.experiment_name!r} has no label selection {selection}")
        if chosen is not None:
            unlabelled = [i for i, (_, drawn) in chosen["items"].items()
                          if drawn and not any(v is not None for v in labels.get(i, []))]
            if unlabelled:
                raise InputError(
                    f"{len(unlabelled)} item(s) drawn by label selection {chosen['id']} have no label in "
                    f"{source} (first: {unlabelled[0]!r}): label every drawn item, or pass selection "
                    "'none' to treat the labels as a uniform sample")
    finally:
        store.close()
    if require_labels and not any(v is not None for values in labels.values() for v in values):
        raise InputError(f"run {result.experiment_name!r} has no labels ({source}): give a labels file "
                         "(--labels) or grade a dataset with ground truth")
    message = skipped_message(labels_file, skipped, name) if labels_file is not None else None
    if message is not None:
        warnings.warn(message, LabelsSkippedWarning, stacklevel=2)
    return LoadedRun(result, dataset, run_id, name, criteria, labels, source, chosen, skipped)


def labelled_run(loaded: LoadedRun) -> tuple[EvalResult, Any, int]:
    """The run and its dataset with each item's ground truth replaced by ``loaded.labels`` (a
    labels file or a stored source), for the analyses that read ground truth from the items
    (``metrics``, ``calibrate`` and ``indeterminacy`` with ``--labels`` or ``--label-source``).

    An item with every criterion labelled gets those labels, in the dataset and in the run's
    item results alike; an item with none, or only some (the analyses compare whole items),
    gets no ground truth.

    Returns
    -------
    (EvalResult, RubricDataset, int)
        The run, the dataset, and the number of partly labelled items left without ground truth.
    """
    from autorubric_local.data.dataset import RubricDataset

    dataset = loaded.dataset
    keys = {r.item_idx: item_key(r) for r in loaded.result.item_results}
    items, partial = [], 0
    for index, item in enumerate(dataset.items):
        values = loaded.labels.get(keys.get(index, item.id or f"item-{index}"))
        complete = values is not None and all(v is not None for v in values)
        partial += values is not None and not complete and any(v is not None for v in values)
        items.append(replace(item, ground_truth=list(values) if complete else None))
    relabelled = RubricDataset(prompt=dataset.prompt, rubric=dataset.rubric, items=items, name=dataset.name,
                               reference_submission=dataset.reference_submission, metadata=dataset.metadata)
    item_results = [replace(r, item=replace(r.item, ground_truth=items[r.item_idx].ground_truth))
                    for r in loaded.result.item_results]
    return replace(loaded.result, item_results=item_results), relabelled, partial


def labelled_dataset(loaded: LoadedRun) -> tuple[Any, int]:
    """The dataset of :func:`labelled_run` and its number of partly labelled items."""
    _, dataset, partial = labelled_run(loaded)
    return dataset, partial


def run_with_labels(db: str | Path, run: str | None = None, *, labels_file: str | Path | None = None,
                    label_source: str | None = None) -> tuple[EvalResult, Any, int]:
    """A stored run and its dataset with human labels as their ground truth: from
    ``labels_file`` (a labels JSONL or a Label Studio export, :mod:`.labels`; stored in the
    database's ``labels`` table under the file's path, so ``label_source`` finds them later)
    or from the stored ``label_source``. The one way every analysis of a stored run takes
    human labels (``metrics``, ``calibrate``, ``indeterminacy``; ``estimate`` reads the same
    through :func:`load_run`).

    Items of the file not in the run are skipped with a
    :class:`~autorubric_local.estimates.labels.LabelsSkippedWarning`; items only partly
    labelled get no ground truth (:func:`labelled_run`).

    Returns
    -------
    (EvalResult, RubricDataset, int)
        As :func:`labelled_run`.

    Raises
    ------
    InputError
        As :func:`load_run` (nothing is stored then).
    """
    loaded = load_run(db, run, labels_file=labels_file, label_source=label_source, selection=None)
    out = labelled_run(loaded)
    save_labels(db, loaded)
    return out


def save_labels(db: str | Path, loaded: LoadedRun) -> int:
    """Store the labels of a run loaded from a labels file under their source (replacing that
    source's earlier rows; the dataset's own labels stay in ``items``); return how many (0, with
    a :class:`~autorubric_local.core.errors.NotStoredWarning`, for a database read-only here)."""
    if loaded.source == DATASET_SOURCE:
        return 0
    path = loaded.result.db_path or db
    if not writable_or_warn(path, "the labels (--label-source cannot find them: give --labels again)"):
        return 0
    store = Store.open(path)
    try:
        return store.replace_labels(loaded.run_id, loaded.source, [
            (item_id, index, loaded.criteria[item_id][index].name, str(getattr(v, "value", v)))
            for item_id, values in loaded.labels.items() for index, v in enumerate(values) if v is not None])
    finally:
        store.close()


def estimate_row(target: TargetData, method: str, interval: methods.Interval, n_labelled: int, n: int,
                 confidence: float, sampling: str, n_for_range: float) -> Estimate:
    """One method's interval on ``target`` as a table row: kept within the target's ``bounds``
    (:func:`.methods.within_range`, a degenerate interval widened as for ``n_for_range`` labels)
    and noted when from fewer than :data:`.methods.MIN_LABELS_FOR_COVERAGE` labels.

    ``n_labelled`` of the target's ``n`` items have a human value.
    """
    if target.bounds is not None:
        interval = methods.within_range(interval, *target.bounds, n_for_range, 1 - confidence)
    if method != "judge" and 0 < n_labelled < methods.MIN_LABELS_FOR_COVERAGE and interval.ci_low is not None:
        interval = methods.with_notes(interval, SMALL_N_NOTE)
    return Estimate(target.name, method, interval.estimate, interval.ci_low, interval.ci_high,
                    interval.std_error, n_labelled, n - n_labelled, confidence, sampling,
                    interval.lam, interval.n_effective, interval.note)


SMALL_N_NOTE = (f"fewer than {methods.MIN_LABELS_FOR_COVERAGE} labels: coverage not shown by simulation "
                "(docs/validity.md), so read the interval as rough")
"""The note every interval from fewer than :data:`.methods.MIN_LABELS_FOR_COVERAGE` labels carries."""


def _too_few(note: str) -> methods.Interval:
    return methods.Interval(float("nan"), None, None, None, note=note)


def uniform_intervals(target: TargetData, alpha: float, wanted: Sequence[str]) -> dict[str, methods.Interval]:
    """Each wanted method's interval with the labelled items taken as a uniform sample (a method
    that cannot give a valid one here gets an undefined interval whose ``note`` says why)."""
    lab = target.labelled
    y, f = target.y[lab], target.f[lab]
    n, n_unlabelled = int(lab.sum()), int((~lab).sum())
    excluded = target.n_excluded
    why_not = None
    if excluded:
        why_not = (f"{excluded} labelled item(s) have no value (CANNOT_ASSESS under exclude, or an NA option): "
                   "the rest are no sample of the items the judge predicts for (use --cannot-assess as_unmet)")
    out: dict[str, methods.Interval] = {}
    for method in wanted:
        if method == "judge":
            out[method] = methods.judge_mean(target.f)
        elif method == "rogan_gladen" and target.verdict is None:
            continue
        elif n < 2:
            out[method] = _too_few(f"too few labels for an interval ({n})")
        elif method == "classical":  # differences of 0/1 labels are no 0/1 labels
            out[method] = methods.classical_mean(y, alpha, binary=False if target.kind == DIFFERENCE else None)
            if excluded:
                out[method] = replace(out[method], note=f"{excluded} labelled item(s) without a value left out: "
                                                        "the mean over the items that have one")
        elif why_not is not None:
            out[method] = _too_few(why_not)
        elif n_unlabelled == 0:
            out[method] = (replace(methods.classical_mean(y, alpha), lam=0.0,
                                   note="every item is labelled: the labels alone (classical)")
                           if method == "ppi" else _too_few("every item is labelled: nothing to correct"))
        elif method == "ppi":
            out[method] = methods.ppi_mean(y, f, target.f[~lab], alpha)
        elif method == "rogan_gladen":
            assert target.verdict is not None
            out[method] = methods.rogan_gladen(y, target.verdict[lab], target.verdict[~lab], alpha)
    return out


def _active(target: TargetData, alpha: float, wanted: Sequence[str],
            design: dict[str, tuple[float, bool]]) -> tuple[dict[str, methods.Interval], int, float]:
    """Each wanted method's interval under the selection ``design`` (inverse-probability
    weighted; a drawn item without a value for this target makes the weighted estimates
    undefined rather than biased), the number of drawn items with a value, and their Kish
    effective number (weights ``1 / pi``)."""
    ids = target.item_ids
    missing = [item for item in ids if item not in design]
    if missing:
        raise InputError(f"target {target.name!r}: item {missing[0]!r} is not in the selection "
                         "(the run changed after it); select again")
    pi = np.array([design[item][0] for item in ids])
    drawn = np.array([design[item][1] for item in ids], dtype=bool)
    unusable = int((drawn & np.isnan(target.y)).sum())
    n = int(drawn.sum()) - unusable
    usable = drawn & ~np.isnan(target.y)
    n_kish = methods.kish_effective_size(1.0 / pi[usable]) if usable.any() else 0.0
    out: dict[str, methods.Interval] = {}
    for method in wanted:
        if method == "judge":
            out[method] = methods.judge_mean(target.f)
        elif method == "rogan_gladen":
            if target.verdict is not None:
                out[method] = _too_few("not defined under an active selection")
        elif unusable:
            out[method] = _too_few(
                f"{unusable} drawn item(s) have no value for this target (unlabelled, or CANNOT_ASSESS/NA "
                "under exclude): the weighted estimate would be biased (label them, or use --cannot-assess as_unmet)")
        elif n < 2:
            out[method] = _too_few(f"too few drawn labels for an interval ({n})")
        else:
            out[method] = methods.active_mean(target.f, target.y, drawn, pi, alpha,
                                              lam=0.0 if method == "classical" else None)
    return out, n, n_kish


def estimate_targets(targets: Sequence[TargetData], *, confidence: float = 0.9,
                     methods_wanted: Sequence[str] = METHODS,
                     design: dict[str, tuple[float, bool]] | None = None,
                     sampling: str = "uniform") -> list[Estimate]:
    """Every wanted method on every target. A method that cannot give a valid estimate for a
    target (too few labels, excluded labels, every item labelled) gets a row whose ``note`` says
    why, rather than failing the other targets. Every interval lies within its target's
    ``bounds`` and none has zero width (:func:`.methods.within_range`); one from fewer than
    :data:`.methods.MIN_LABELS_FOR_COVERAGE` labels carries :data:`SMALL_N_NOTE`.

    Raises
    ------
    InputError
        ``confidence`` outside (0, 1), an unknown method, or a target whose items are not in
        ``design``.
    """
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence}")
    unknown = sorted(set(methods_wanted) - set(METHODS))
    if unknown:
        raise InputError(f"unknown method(s) {unknown}; choose from {list(METHODS)}")
    alpha = 1 - confidence
    rows: list[Estimate] = []
    for target in targets:
        if len(target.f) == 0:
            continue
        if design is None:
            intervals, n_labelled = uniform_intervals(target, alpha, methods_wanted), int(target.labelled.sum())
            n_for_range = float(n_labelled)
        else:
            intervals, n_labelled, n_for_range = _active(target, alpha, methods_wanted, design)
        notes = []
        if target.n_partial:
            notes.append(f"{target.n_partial} partly labelled item(s) have no human score and count as unlabelled")
        judge_notes = notes + (["judge: the score implied by its probabilities (CANNOT_ASSESS skipped), not "
                                "the run's stored mean score"] if target.kind == SCORE else [])
        for method in methods_wanted:
            if method not in intervals:
                continue
            interval = intervals[method]
            extra = judge_notes if method == "judge" else notes
            if extra:
                interval = methods.with_notes(interval, *extra)
            rows.append(estimate_row(target, method, interval, n_labelled, len(target.f), confidence, sampling,
                                      n_for_range))
    return rows


def estimate_run(db: str | Path, run: str | None = None, *, labels_file: str | Path | None = None,
                 label_source: str | None = None, confidence: float = 0.9,
                 cannot_assess: CannotAssessMode | str = CannotAssessMode.EXCLUDE,
                 selection: int | str | None = "latest", methods_wanted: Sequence[str] = METHODS,
                 targets: Sequence[str] | None = None) -> list[Estimate]:
    """Judge-corrected estimates, with confidence intervals, of every target of a stored run:
    each criterion's MET share (or mean option value) and the mean rubric score ``score``.

    Each target is estimated from the judge's predictions on every item plus human labels on
    some (the module docstring lists the methods; :mod:`.methods` holds their formulas and
    papers: PPI++, Angelopoulos, Duchi and Zrnic, arXiv 2311.01453; Zrnic and Candès, arXiv
    2403.03208 under an active selection; Rogan and Gladen 1978).

    Parameters
    ----------
    db : str or Path
        The results database (SQLite file) holding the run.
    run : str or None, default None
        Run name or id; None: the database's latest run.
    labels_file : str or Path or None, default None
        JSONL labels or a Label Studio export (:mod:`.labels`); replaces the dataset's own
        labels and is stored in the database with its resolved path as the label source.
        Items not in the run are skipped with a ``LabelsSkippedWarning``.
    label_source : str or None, default None
        A label source stored earlier (a labels file's resolved path); used when
        ``labels_file`` is None. Both None: the dataset's own ground truth.
    confidence : float in (0, 1), default 0.9
        Two-sided coverage of each interval (0.9: nominal 90%).
    cannot_assess : {"exclude", "as_unmet"} or CannotAssessMode, default "exclude"
        How a CANNOT_ASSESS verdict or label counts (:mod:`.targets`): left out, or as UNMET.
    selection : "latest", "none", int or None, default "latest"
        ``"latest"`` applies the run's latest label selection (if any) to labels from a file or
        a stored source, never to the dataset's own ground truth (not drawn by it); a selection
        id applies that selection to whatever labels are used; None or ``"none"``: labelled
        items are taken as a uniform random sample.
    methods_wanted : sequence of str, default METHODS
        Subset of :data:`METHODS` (``"classical"``, ``"judge"``, ``"ppi"``,
        ``"rogan_gladen"``), in the order wanted.
    targets : sequence of str or None, default None
        Target names to keep (criterion names and ``"score"``); None: all.

    Returns
    -------
    list of Estimate
        One per target and method: targets in rubric order then ``score``; methods in
        ``methods_wanted`` order. ``judge`` rows have no interval (None bounds).

    Raises
    ------
    InputError
        No such run; a wrong label (file, line or task, field) or a labels file labelling none
        of the run's items; an unknown ``label_source``, ``selection``, target or method;
        ``confidence`` outside (0, 1); ``cannot_assess`` other than ``exclude`` or ``as_unmet``
        (``as_category`` included); a drawn item of the selection without a label; or no
        labels at all. Nothing is stored then.

    Notes
    -----
    After the estimates are computed, labels from a file or a stored source are written back
    under that source, replacing its earlier rows (:func:`save_labels`; a database read-only
    here is left as is, with a ``NotStoredWarning``); nothing else is written.
    """
    loaded = load_run(db, run, labels_file=labels_file, label_source=label_source, selection=selection)
    built = build_targets(loaded.result, loaded.dataset, loaded.labels, cannot_assess)
    if targets is not None:
        names = {t.name for t in built}
        unknown = [t for t in targets if t not in names]
        if unknown:
            raise InputError(f"unknown target(s) {unknown}; this run's targets are {sorted(names)}")
        built = [t for t in built if t.name in set(targets)]
    design = None if loaded.selection is None else loaded.selection["items"]
    sampling = "uniform" if loaded.selection is None else f"active (selection {loaded.selection['id']})"
    rows = estimate_targets(built, confidence=confidence, methods_wanted=methods_wanted, design=design,
                            sampling=sampling)
    save_labels(db, loaded)
    return rows


def targets_of(db: str | Path, run: str | None = None, *, labels_file: str | Path | None = None,
               label_source: str | None = None,
               cannot_assess: CannotAssessMode | str = CannotAssessMode.EXCLUDE) -> tuple[LoadedRun, list[TargetData]]:
    """The run and its targets with the labels chosen as in :func:`estimate_run` (labels from a
    file are checked but not stored)."""
    loaded = load_run(db, run, labels_file=labels_file, label_source=label_source, selection=None,
                      require_labels=False)
    return loaded, build_targets(loaded.result, loaded.dataset, loaded.labels, cannot_assess)


__all__ = ["DATASET_SOURCE", "METHODS", "SCORE", "SMALL_N_NOTE", "Estimate", "LoadedRun", "estimate_row", "estimate_run",
           "estimate_targets", "labelled_dataset", "labelled_run", "load_run", "run_with_labels", "save_labels",
           "targets_of", "uniform_intervals"]
