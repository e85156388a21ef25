"""Inspect's extension entry point (``[project.entry-points.inspect_ai]`` in pyproject.toml):
importing this module registers the scorer as ``autorubric_local/rubric_scorer``."""

from autorubric_local.inspect.scorer import rubric_scorer

__all__ = ["rubric_scorer"]
