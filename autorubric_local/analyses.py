"""Every analysis of a stored run, called one way: open the run, then ask for an analysis.

``open_run(db, run)`` (a results database and a run's name or id, default its latest run) gives
a :class:`RunAnalyses`, which chooses the human labels once (the dataset's ground truth, or a
labels file, or a label source stored earlier) and runs each analysis on them::

    run = open_run("results.sqlite", "essays-v1", labels_file="labelled.jsonl")
    metrics = run.metrics(bootstrap=True)
    fitted = run.calibrate(method="platt")
    estimates = run.estimates(confidence=0.9)
    page = run.report("report/")
    indeterminacy = run.indeterminacy()

Each method is the library call the command of the same name makes (``metrics``, ``calibrate``,
``estimate``, ``report``, ``indeterminacy``): the same numbers, the same by-products stored in
the database (unless ``save=False``; on a database this process cannot write, a
:class:`~autorubric_local.core.errors.NotStoredWarning` says what was not stored), and labels
skipped said by a :class:`~autorubric_local.estimates.labels.LabelsSkippedWarning`, partly labelled
items left out by a :class:`~autorubric_local.estimates.labels.PartlyLabelledWarning`. The in-memory forms that
AutoRubric's API has (``compute_metrics(result, dataset)``, ``calibrate_run(result, dataset)``)
stay as they are.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorubric_local.calibration import CalibrationRun, calibrate_run, save_calibration
from autorubric_local.core.errors import InputError
from autorubric_local.estimates.api import Estimate, estimate_run, labelled_run, load_run, save_labels
from autorubric_local.estimates.labels import PartlyLabelledWarning
from autorubric_local.indeterminacy import IndeterminacyReport, IndeterminacySettings, analyse_runs, save_report
from autorubric_local.metrics import MetricsResult, compute_metrics, save_metrics, write_plots
from autorubric_local.report.html import write_report
from autorubric_local.runner import load_result, open_graded_run
from autorubric_local.runner.results import resolve_db_path
from autorubric_local.store import Store
from autorubric_local.store.schema import writable_or_warn

__all__ = ["RunAnalyses", "open_run"]


@dataclass(frozen=True)
class RunAnalyses:
    """One stored run and the human labels its analyses compare with (:func:`open_run`).

    Attributes
    ----------
    db_path : Path
        The results database.
    run_id, name : str
        The run's id and name (resolved when opened: a later run of the same name is not
        picked up).
    labels_file : Path or None
        Human labels from this file (a labels JSONL or a Label Studio export), stored in the
        database under its path by the first analysis that reads them.
    label_source : str or None
        Human labels stored earlier under this source (a labels file's path).

    Without ``labels_file`` or ``label_source`` the labels are the dataset's own ground truth.
    """

    db_path: Path
    run_id: str
    name: str
    labels_file: Path | None = None
    label_source: str | None = None

    @property
    def _labelled(self) -> bool:
        return self.labels_file is not None or self.label_source is not None

    @contextmanager
    def _run_and_dataset(self, whole: bool, *, again: bool = False) -> Iterator[tuple[Any, Any]]:
        """The run and its dataset with the chosen labels as ground truth: read a page at a time
        (dataset labels, ``whole=False``) or whole. Labels from a file are stored under its
        source, and partly labelled items left out are said by a
        :class:`~autorubric_local.estimates.labels.PartlyLabelledWarning`, unless ``again`` (a
        second read of the same labels, e.g. for plots)."""
        if self._labelled:
            loaded = load_run(self.db_path, self.run_id, labels_file=self.labels_file,
                              label_source=self.label_source, selection=None)
            result, dataset, partial = labelled_run(loaded)
            if not again:
                save_labels(self.db_path, loaded)
                if partial:
                    warnings.warn(PartlyLabelledWarning(f"{partial} partly labelled item(s) left out (an item "
                                                        "counts when every criterion of it is labelled)"),
                                  stacklevel=3)
            yield result, dataset
        elif whole:
            yield load_result(self.db_path, self.run_id)
        else:
            with open_graded_run(self.db_path, self.run_id) as opened:
                yield opened

    def metrics(self, *, save: bool = True, **options: Any) -> MetricsResult:
        """The run's metrics against the labels (:func:`~autorubric_local.metrics.compute_metrics`;
        ``options`` are its keywords: ``bootstrap``, ``n_bootstrap``, ``confidence_level``,
        ``per_judge``, ``cannot_assess``, ``na_mode``, ``seed``, ...), stored in the run's
        ``metrics`` table when ``save``.

        Raises
        ------
        InputError
            No labels at all, bad labels or options (as ``compute_metrics`` and
            :func:`~autorubric_local.estimates.api.run_with_labels`).
        """
        with self._run_and_dataset(whole=False) as (result, dataset):
            computed = compute_metrics(result, dataset, **options)
        if save and writable_or_warn(self.db_path, "the metrics"):
            store = Store.open(self.db_path)
            try:
                save_metrics(store.db, self.run_id, computed)
            finally:
                store.close()
        return computed

    def plots(self, metrics: MetricsResult, out_dir: str | Path) -> list[Path]:
        """PNG plots of ``metrics`` (this run's, from :meth:`metrics`) into ``out_dir``
        (:func:`~autorubric_local.metrics.write_plots`); the files written."""
        with self._run_and_dataset(whole=False, again=True) as (result, dataset):  # labels stored by metrics()
            return write_plots(metrics, out_dir, result, dataset)

    def calibrate(self, method: str = "threshold", *, save: bool = True, **options: Any) -> tuple[CalibrationRun, int | None]:
        """Decision rules fitted on a training split and their held-out report
        (:func:`~autorubric_local.calibration.calibrate_run`; ``options``: ``test_size``,
        ``seed``, ``n_folds``, ``stratify``), stored when ``save``.

        Returns
        -------
        (CalibrationRun, int or None)
            The fit, and its id in the run's ``threshold_calibrations`` table (None when not
            stored).

        Raises
        ------
        InputError
            As ``calibrate_run`` (e.g. too few labelled items for the split).
        """
        with self._run_and_dataset(whole=True) as (result, dataset):
            fitted = calibrate_run(result, dataset, method, **options)
        if not (save and writable_or_warn(self.db_path, "the calibration")):
            return fitted, None
        store = Store.open(self.db_path)
        try:
            return fitted, save_calibration(store, self.run_id, fitted)
        finally:
            store.close()

    def estimates(self, **options: Any) -> list[Estimate]:
        """Judge-corrected estimates of every target (:func:`~autorubric_local.estimates.api.estimate_run`;
        ``options``: ``confidence``, ``cannot_assess``, ``selection``, ``methods_wanted``,
        ``targets``). Labels from a file are stored as ``estimate --labels`` stores them."""
        return estimate_run(self.db_path, self.run_id, labels_file=self.labels_file, label_source=self.label_source,
                            **options)

    def report(self, out_dir: str | Path | None = None, **options: Any) -> Path:
        """The run's static HTML report (:func:`~autorubric_local.report.html.write_report`;
        ``options``: ``per_page``, ``off_label_threshold``), its labels column from this handle's
        ``label_source`` (a labels file is stored first, so the report can show it).

        Returns
        -------
        Path
            The page written (``out_dir/index.html``).
        """
        source = self.label_source
        if self.labels_file is not None:  # stored under its source, which the report then reads
            loaded = load_run(self.db_path, self.run_id, labels_file=self.labels_file, selection=None)
            save_labels(self.db_path, loaded)
            source = loaded.source
        return write_report(self.db_path, self.run_id, out_dir, label_source=source, **options)

    def indeterminacy(self, settings: IndeterminacySettings | None = None, *,
                      save: bool = True) -> tuple[IndeterminacyReport, int | None]:
        """The run's judges under rating indeterminacy
        (:func:`~autorubric_local.indeterminacy.analyse_runs`), stored when ``save``.

        Returns
        -------
        (IndeterminacyReport, int or None)
            The report, and its analysis id in the database (None when not stored).
        """
        report, run_ids = analyse_runs([self.db_path], [self.run_id], settings, labels_file=self.labels_file,
                                       label_source=self.label_source)
        if not (save and writable_or_warn(self.db_path, "the analysis")):
            return report, None
        store = Store.open(self.db_path)
        try:
            return report, save_report(store, report, run_ids)
        finally:
            store.close()


def open_run(db: str | Path, run: str | None = None, *, labels_file: str | Path | None = None,
             label_source: str | None = None) -> RunAnalyses:
    """Open a stored run for its analyses (module docstring).

    Parameters
    ----------
    db : str or Path
        A results database (or an experiment folder holding ``results.sqlite``).
    run : str, optional
        A run's name (its latest run of that name) or id; default the database's latest run.
    labels_file : str or Path, optional
        Human labels from this file instead of the dataset's ground truth.
    label_source : str, optional
        Human labels stored earlier under this source.

    Raises
    ------
    InputError
        No database at ``db``, no such run in it (the message lists its runs), or both
        ``labels_file`` and ``label_source``.
    """
    if labels_file is not None and label_source is not None:
        raise InputError("give labels_file or label_source, not both")
    path = resolve_db_path(db)
    store = Store.open_read_only(path)
    try:
        row = store.find_run(run)
        if row is None:
            names = ", ".join(repr(n) for n in store.run_names()) or "none"
            what = f"no run named {run!r}" if run is not None else "no runs"
            raise InputError(f"{path}: {what} (runs: {names})")
    finally:
        store.close()
    return RunAnalyses(Path(path), row["id"], row["name"], None if labels_file is None else Path(labels_file),
                       label_source)

