"""Static HTML reports of a stored grading run (``autorubric-local report``).

- :mod:`.context`: what a report shows, read from the store into a plain dict (summary,
  warnings such as off-label mass, score distribution, verdict rates, agreement with human
  labels, sweeps, settings, items with the human label beside each verdict);
- :mod:`.labels`: which human labels a report compares with (the dataset's ground truth or
  labels imported by ``estimate``/``metrics --labels``) and reading them a page at a time;
- :mod:`.figures`: the package's plots as PNG data URIs (matplotlib, Agg backend);
- :mod:`.sweeps`: the database's position-bias sweeps and their plots;
- :mod:`.comparisons`: a stored comparison's own page (``report CMP``: rankings, win-rate heat
  maps, position consistency, pairs, settings);
- :mod:`.html`: rendering with Jinja2 (autoescaping on, no script, nothing fetched) and
  :func:`write_report`, which writes ``<out>/index.html``.

Example
-------
>>> write_report("results.sqlite", "essays-v1", "report-essays-v1")  # doctest: +SKIP
PosixPath('report-essays-v1/index.html')
"""

from autorubric_local.report.context import criterion_rates, report_context
from autorubric_local.report.html import (
    REPORT_FILE,
    default_out_dir,
    render_report,
    write_report,
)

__all__ = ["REPORT_FILE", "criterion_rates", "default_out_dir", "render_report", "report_context", "write_report"]
