"""Label Studio tasks and labelling config for the items chosen to be labelled.

Import format (Label Studio docs, "Import pre-annotated data"): a JSON list of tasks
``{"data": {...}}``; the config (XML) names one ``Choices`` control per criterion,
``from_name`` ``c<i>`` (criterion ``i`` in rubric order), ``to_name`` ``submission``. An export
(JSON or JSON-MIN) of these tasks reads back with :func:`autorubric_local.estimates.labels.read_labels`.

No judge verdict is put in the tasks unless asked (``with_predictions``): pre-filled choices
anchor labellers on the judge, and the estimates need human labels made independently of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import quoteattr

from autorubric_local.core.types import Criterion
from autorubric_local.estimates.labels import FROM_NAME_PREFIX

BINARY_CHOICES = ("MET", "UNMET", "CANNOT_ASSESS")


def _choices(criterion: Criterion) -> list[str]:
    return [o.label for o in criterion.options] if criterion.options is not None else list(BINARY_CHOICES)


def labelling_config(criteria: Sequence[Criterion], with_query: bool = True) -> str:
    """The Label Studio labelling config (XML) for a rubric: the submission, then one required
    single-choice control per criterion headed by its requirement (text escaped)."""
    lines = ["<View>"]
    if with_query:
        lines.append('  <Text name="query" value="$query"/>')
    lines.append('  <Text name="submission" value="$submission"/>')
    for index, criterion in enumerate(criteria):
        weight = "" if criterion.weight >= 0 else " (penalty)"
        header = f"{criterion.name + ': ' if criterion.name else ''}{criterion.requirement}{weight}"
        lines.append(f"  <Header value={quoteattr(header)}/>")
        lines.append(f'  <Choices name="{FROM_NAME_PREFIX}{index}" toName="submission" choice="single" required="true">')
        lines.extend(f"    <Choice value={quoteattr(choice)}/>" for choice in _choices(criterion))
        lines.append("  </Choices>")
    lines.append("</View>")
    return "\n".join(lines) + "\n"


def tasks(items: Sequence[Mapping[str, Any]],
          predictions: Mapping[str, Sequence[str | None]] | None = None,
          model_version: str = "judge") -> list[dict[str, Any]]:
    """Label Studio tasks, one per item.

    Parameters
    ----------
    items : sequence of mappings with ``id``, ``submission`` and optionally ``query``
    predictions : mapping of item id to the judge's label per criterion, optional
        When given, each task carries them as a ``predictions`` entry (pre-filled choices).
    """
    out: list[dict[str, Any]] = []
    for item in items:
        # Label Studio's Text tag shows its value as plain text, never as markup.
        task: dict[str, Any] = {"data": {"item_id": item["id"], "submission": str(item["submission"]),
                                         "query": str(item.get("query") or "")}}
        if predictions is not None and item["id"] in predictions:
            result = [
                {"from_name": f"{FROM_NAME_PREFIX}{index}", "to_name": "submission", "type": "choices",
                 "value": {"choices": [label]}}
                for index, label in enumerate(predictions[item["id"]]) if label is not None
            ]
            task["predictions"] = [{"model_version": model_version, "result": result}]
        out.append(task)
    return out
