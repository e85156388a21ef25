"""Rendering a run's report as one self-contained static HTML file (Jinja2, autoescaping on).

Everything the page shows comes from :func:`.context.report_context`; the template is package
data (``report/templates/report.html.j2``). Submissions, explanations and prompts are data
written by the people and models being graded: the environment escapes every value (an
``<script>`` in a submission is shown as text), and the page carries a Content-Security-Policy
that allows no script at all and images only as ``data:`` URIs, so nothing is fetched either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autorubric_local.core.reports import OFF_LABEL_THRESHOLD
from autorubric_local.report.context import find_report_run, item_page, report_summary
from autorubric_local.report.pages import REPORT_FILE, default_out_dir, environment
from autorubric_local.runner.results import resolve_db_path
from autorubric_local.store import Store

__all__ = ["REPORT_FILE", "default_out_dir", "render_report", "write_report"]

TEMPLATE = "report.html.j2"
def render_report(context: dict[str, Any]) -> str:
    """The report page of ``context`` (from :func:`.context.report_context`) as HTML text."""
    return environment().get_template(TEMPLATE).render(page_file=page_file, **context)


def write_report(
    db_path: str | Path, run: str, out_dir: str | Path | None = None, *, per_page: int | None = None,
    label_source: str | None = None, off_label_threshold: float = OFF_LABEL_THRESHOLD,
) -> Path:
    """Write the report of ``run`` in the database ``db_path`` to ``out_dir/index.html``: the
    run's summary and its first :data:`~.context.ITEMS_PER_PAGE` items, the other items on
    pages ``items-2.html``, ``items-3.html``, ... linked from each page (only the items of the
    page being written are read into memory).

    Parameters
    ----------
    db_path : str or Path
        A results database file (or an experiment folder holding ``results.sqlite``).
    run : str
        Run name (its latest run) or id.
    out_dir : str or Path, optional
        Created if needed; default :func:`default_out_dir` of the run's name.
    per_page : int, optional
        Items a page (default :data:`~.context.ITEMS_PER_PAGE`).
    label_source : str, optional
        The human labels beside the verdicts: ``"dataset"`` (the dataset's ground truth) or a
        source stored by ``estimate --labels`` / ``metrics --labels`` (a labels file's path);
        default the dataset's ground truth, else the run's stored labels (the latest imported
        of several; see :func:`~.labels.choose_labels`).
    off_label_threshold : float in [0, 1], default 0.5
        The summary warns about each criterion with a judgment whose off-label mass exceeds it.

    When ``run`` names no run but a stored comparison (its name or sweep id), the page written
    is the comparison's own (:func:`~.comparisons.write_comparison_report`; ``per_page``,
    ``label_source`` and ``off_label_threshold`` do not apply). A run of the same name wins.

    Returns
    -------
    Path
        The page written.

    Raises
    ------
    InputError
        No database at ``db_path``, no such run or comparison in it (the message lists the
        runs), or no labels from ``label_source`` (the message lists the run's sources).
    """
    path = resolve_db_path(db_path)
    store = Store.open_read_only(path)  # a read-only file, folder or mount is read unchanged
    try:
        if store.find_run(run) is None:  # a comparison's name or id: its own page
            from autorubric_local.report.comparisons import find_comparison, write_comparison_report

            comparison = find_comparison(store, run)
            if comparison is not None:
                return write_comparison_report(store, comparison, out_dir)
        row = find_report_run(store, run, path)
        summary = report_summary(store, row, path, per_page=per_page, label_source=label_source,
                                 off_label_threshold=off_label_threshold)
        folder = Path(out_dir) if out_dir is not None else default_out_dir(summary["run"]["name"])
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("items-*.html"):  # pages of an earlier, longer report
            stale.unlink()
        pages = summary["page"]["count"]
        for number in range(1, pages + 1):  # one page in memory at a time
            context = {**summary, **item_page(store, row, number, summary["page"], labels=summary["labels"])}
            (folder / page_file(number)).write_text(render_report(context), encoding="utf-8")
    finally:
        store.close()
    return folder / REPORT_FILE


def page_file(number: int) -> str:
    """The file of report page ``number``: :data:`REPORT_FILE` for the first, ``items-<n>.html``
    for the others."""
    return REPORT_FILE if number == 1 else f"items-{number}.html"
