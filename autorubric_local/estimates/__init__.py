"""Judge-corrected estimates with confidence intervals from a judge's predictions on every item
and human labels on a few: classical, judge-only, prediction-powered (PPI++), active inference
and Rogan-Gladen (:mod:`.methods`), over the targets of a stored run (:mod:`.targets`).

Example
-------
>>> from autorubric_local.estimates import estimate_run          # doctest: +SKIP
>>> for row in estimate_run("results.sqlite", "ricechem-q1", labels_file="labels.jsonl"):
...     print(row.target, row.method, row.estimate, row.ci_low, row.ci_high)
"""

from autorubric_local.estimates.api import METHODS, Estimate, estimate_run, estimate_targets
from autorubric_local.estimates.design import Selection, compare_runs, label_power, select_items
from autorubric_local.estimates.methods import Interval

__all__ = ["METHODS", "Estimate", "Interval", "Selection", "compare_runs", "estimate_run", "estimate_targets",
           "label_power", "select_items"]
