"""The analysis end to end: ratings -> report, runs in databases -> report, report -> SQLite.

:func:`analyse_ratings` works on ratings built in Python (synthetic, or another tool's);
:func:`analyse_runs` reads graded runs from their databases (:mod:`.runs`);
:func:`save_report` stores a report in a database (:mod:`autorubric_local.store.indeterminacy`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from autorubric_local.core.errors import InputError
from autorubric_local.indeterminacy.analysis import CriterionRatings, analyse_criterion
from autorubric_local.indeterminacy.report import (
    IndeterminacyReport,
    IndeterminacySettings,
)
from autorubric_local.indeterminacy.runs import RunSource, collect_ratings
from autorubric_local.runner.results import load_result, resolve_db_path
from autorubric_local.store import Store

__all__ = ["analyse_ratings", "analyse_runs", "load_report", "load_sources", "save_report"]


def analyse_ratings(ratings: Sequence[CriterionRatings], settings: IndeterminacySettings | None = None, *,
                    sources: Sequence[str] = (), warnings: Sequence[str] = ()) -> IndeterminacyReport:
    """Analyse every criterion of ``ratings`` (:func:`.analysis.analyse_criterion`).

    Raises
    ------
    InputError
        No ratings, or inconsistent ones.
    """
    if not ratings:
        raise InputError("nothing to analyse: no criterion has both human labels and judge ratings")
    settings = settings or IndeterminacySettings()
    return IndeterminacyReport(
        sources=list(sources), settings=settings,
        criteria=[analyse_criterion(r, settings.analysis) for r in ratings], warnings=list(warnings),
    )


def load_sources(db_paths: Sequence[str | Path], runs: Sequence[str] = (), *,
                 labels_file: str | Path | None = None,
                 label_source: str | None = None) -> list[tuple[RunSource, str, str]]:
    """The runs to analyse: in each database, the runs named in ``runs`` that it holds (every run
    of it when ``runs`` is empty). Returns ``(source, db_path, run_id)`` triples.

    Human labels are each run's dataset ground truth, or those of ``labels_file`` (a labels
    JSONL or Label Studio export, stored in each run's database under its path) or of the
    stored ``label_source``, read as :func:`autorubric_local.estimates.api.run_with_labels`
    reads them: items of the file not in a run are skipped (a warning), an item counts when
    every criterion of it is labelled.

    Raises
    ------
    InputError
        A path that is not a results database, a named run found in none of them, or no run;
        with labels, as :func:`~autorubric_local.estimates.api.run_with_labels` for any run
        (a file that labels none of its items, a source it has no labels from).
    """
    return [(source, path, run_id) for source, path, run_id, _ in
            _load_sources(db_paths, runs, labels_file=labels_file, label_source=label_source)]


def _load_sources(db_paths: Sequence[str | Path], runs: Sequence[str], *, labels_file: str | Path | None,
                  label_source: str | None) -> list[tuple[RunSource, str, str, int]]:
    """:func:`load_sources` with each run's number of partly labelled items left out."""
    from autorubric_local.estimates.api import run_with_labels

    found: list[tuple[RunSource, str, str, int]] = []
    matched: set[str] = set()
    for path in db_paths:
        store = Store.open_read_only(resolve_db_path(path))
        try:
            rows = [r for r in store.db["runs"].rows_where(order_by="started_utc")]
        finally:
            store.close()
        for row in rows:
            if runs and row["name"] not in runs and row["id"] not in runs:
                continue
            matched.update({row["name"], row["id"]})
            partial = 0
            if labels_file is not None or label_source is not None:
                result, _, partial = run_with_labels(path, row["id"], labels_file=labels_file,
                                                     label_source=label_source)
            else:
                result, _ = load_result(path, row["id"])
            found.append((RunSource(row["name"], result, f"{path}, run {row['name']}"), str(path), row["id"],
                          partial))
    missing = [r for r in runs if r not in matched]
    if missing:
        raise InputError(f"run(s) {missing} not found in {[str(p) for p in db_paths]}")
    if not found:
        raise InputError(f"no runs in {[str(p) for p in db_paths]}")
    return found


def analyse_runs(db_paths: Sequence[str | Path], runs: Sequence[str] = (),
                 settings: IndeterminacySettings | None = None, *, labels_file: str | Path | None = None,
                 label_source: str | None = None) -> tuple[IndeterminacyReport, list[str]]:
    """Analyse graded runs (:func:`load_sources`, :func:`.runs.collect_ratings`).

    Parameters
    ----------
    db_paths : sequence of path
        Results databases (the first holds the analysis when saved).
    runs : sequence of str, optional
        Run names or ids (default every run of every database).
    settings : IndeterminacySettings, optional
    labels_file : path, optional
        Human labels in place of each run's dataset ground truth (:func:`load_sources`).
    label_source : str, optional
        A label source stored earlier in each run's database (a labels file's path).

    Returns
    -------
    (report, run_ids)
        The report and the ids of the runs in it; the report's warnings count the partly
        labelled items left out.

    Raises
    ------
    InputError
        As :func:`load_sources` and :func:`.runs.collect_ratings`.
    """
    settings = settings or IndeterminacySettings()
    loaded = _load_sources(db_paths, runs, labels_file=labels_file, label_source=label_source)
    ratings, warnings = collect_ratings([s for s, _, _, _ in loaded], positive=settings.positive,
                                        elicitation=settings.elicitation, criteria=settings.criteria)
    partly = [f"{s.where}: {n} partly labelled item(s) left out (an item counts when every criterion of it "
              "is labelled)" for s, _, _, n in loaded if n]
    report = analyse_ratings(ratings, settings, sources=[s.where for s, _, _, _ in loaded],
                             warnings=[*partly, *warnings])
    return report, [run_id for _, _, run_id, _ in loaded]


def save_report(store: Store, report: IndeterminacyReport, run_ids: Sequence[str]) -> int:
    """Store ``report`` (and one row per figure) in ``store``; return the analysis id."""
    return store.save_indeterminacy(run_ids=run_ids, sources=report.sources,
                                    settings=report.settings.model_dump(mode="json"),
                                    report_json=report.model_dump_json(), values=report.rows())


def load_report(store: Store, analysis_id: int | None = None) -> IndeterminacyReport:
    """A stored report (the latest when ``analysis_id`` is None).

    Raises
    ------
    InputError
        None stored, or no such id.
    """
    rows = store.indeterminacy_analyses()
    if analysis_id is not None:
        rows = [r for r in rows if r["id"] == analysis_id]
    if not rows:
        raise InputError("no indeterminacy analysis stored" + ("" if analysis_id is None else f" with id {analysis_id}"))
    return IndeterminacyReport.model_validate_json(rows[0]["report_json"])
