"""AutoRubric's ``autorubric.meta``: rubric evaluation with meta-rubrics, on local judges.

Rubric evaluation (:mod:`.evaluate`) is here; rubric improvement (``improve_rubric``,
``ImprovementRunner`` and their types) is not built yet: ``tests/data/autorubric_api_gaps.txt``
lists those names as missing.
"""

from autorubric_local.meta.evaluate import (
    DisplayMode,
    evaluate_rubric_in_context,
    evaluate_rubric_standalone,
    get_in_context_meta_rubric,
    get_standalone_meta_rubric,
)

__all__ = ["DisplayMode", "evaluate_rubric_in_context", "evaluate_rubric_standalone", "get_in_context_meta_rubric",
           "get_standalone_meta_rubric"]
