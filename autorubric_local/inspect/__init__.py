"""Inspect (UK AISI's ``inspect_ai``) integration: :func:`rubric_scorer`, a scorer backed by
this package's judges, registered as ``autorubric_local/rubric_scorer`` through Inspect's
extension entry point. Needs the ``[inspect]`` extra (``pip install 'autorubric-local[inspect]'``)."""

try:
    import inspect_ai  # noqa: F401  (only to say what is missing)
except ImportError as exc:  # the base install has no Inspect
    raise ImportError(
        "autorubric_local.inspect needs inspect-ai: pip install 'autorubric-local[inspect]'"
    ) from exc

from autorubric_local.inspect.scorer import RubricSource, load_criteria, rubric_scorer, score_of

__all__ = ["RubricSource", "load_criteria", "rubric_scorer", "score_of"]
