"""What a stored sweep is, as a content hash, and whether a stored sweep may be resumed.

A sweep's plan is ``{"description": {...}, "items": [[item key, item hash], ...]}``:

- ``description``: ``kind``, ``settings`` (:meth:`SweepSettings.to_dict`: seed, shuffle, unrelated
  option, system prompt, bootstrap), ``judges`` (per judge its id, system prompt, ``LLMConfig``
  fields and engine class, as the grading runner describes them) and ``rubric`` (the
  ``sha256:v1:<hex>`` of every item's rubric in item order; None for selection sweeps, whose
  candidates are item content);
- an item's hash (``sha256:v1:<hex>``) covers its key, submission, query, reference
  submission and human preference, for selection sweeps its candidates, and for comparison
  sweeps what the item's ``content()`` names (its systems, responses and questions:
  :class:`~.cells.OwnRotations`).

The content hash is :func:`~autorubric_local.runner.checkpoint.canonical_hash` of the plan
(the grading runner's scheme). How the work is cut into chunks is not part of it: chunk size
changes how rotations are batched, not what is judged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from autorubric_local.bias.cells import OwnRotations, SweepKind, SweepSettings
from autorubric_local.core.errors import InputError
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.planning import GradeItem
from autorubric_local.runner.checkpoint import canonical_hash

__all__ = ["check_sweep_resumable", "sweep_content_hash", "sweep_plan"]

_DESCRIPTION_NAMES = {"kind": "sweep kind", "settings": "settings", "judges": "judges", "rubric": "rubric"}


def _rubric_json(item: GradeItem) -> list[Any]:
    return [criterion.model_dump(mode="json") for criterion in item.rubric]


def sweep_plan(
    items: Sequence[GradeItem],
    judges: Sequence[JudgeSpec],
    settings: SweepSettings,
    preferred: Sequence[int | None] | None = None,
) -> dict[str, Any]:
    """The sweep's plan (module docstring): JSON-ready, stored as ``sweeps.plan_json``."""
    selection = settings.kind is SweepKind.SELECTION
    description = {
        "kind": settings.kind.value,
        "settings": settings.to_dict(),
        "judges": [
            {
                "judge_id": j.judge_id,
                "system_prompt": j.system_prompt,
                "llm_config": j.llm_config.describe(),
                "engine": None if j.llm_config.engine is None else type(j.llm_config.engine).__name__,
            }
            for j in judges
        ],
        "rubric": None if selection else canonical_hash([_rubric_json(item) for item in items]),
    }
    entries = []
    for i, item in enumerate(items):
        key = item.item_id or f"item-{i}"
        content = {
            "key": key, "submission": item.submission, "query": item.query,
            "reference_submission": item.reference_submission,
            "preferred": None if preferred is None else preferred[i],
            **({"rubric": _rubric_json(item)} if selection else {}),
            **(item.content() if isinstance(item, OwnRotations) else {}),
        }
        entries.append([key, canonical_hash(content)])
    return {"description": description, "items": entries}


def sweep_content_hash(plan: Mapping[str, Any]) -> str:
    """``sha256:v1:<hex>`` of a :func:`sweep_plan`."""
    return canonical_hash({"scheme": "autorubric-local/sweep", **plan})


def check_sweep_resumable(sweep: Mapping[str, Any], plan: Mapping[str, Any], where: str) -> None:
    """Refuse to resume the stored ``sweep`` row when its content hash differs from ``plan``'s;
    say what changed.

    Raises
    ------
    InputError
        Naming the sweep and what changed (the rubric, settings with their old and new values,
        judges, the number of items or the first changed item), and how to start a new sweep.
    """
    if sweep.get("content_hash") == sweep_content_hash(plan):
        return
    reasons: list[str] = []
    if sweep.get("content_hash") is None or not sweep.get("plan_json"):
        reasons.append("it was not written by a resumable sweep (no content hash)")
    else:
        stored = json.loads(sweep["plan_json"])
        reasons += _description_changes(stored.get("description", {}), plan["description"])
        reasons += _item_changes(stored.get("items", []), plan["items"])
    if not reasons:
        reasons.append("its content hash differs")
    raise InputError(
        f"{where}: sweep {sweep['name']!r} ({sweep['id']}) cannot be resumed: " + "; ".join(reasons)
        + ". Give a new sweep name (--run) or start a new sweep (--no-resume / resume=False)."
    )


def _description_changes(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    reasons = []
    for key, label in _DESCRIPTION_NAMES.items():
        old, new = stored.get(key), current.get(key)
        if old == new:
            continue
        if key == "rubric":
            reasons.append(f"the rubric changed ({_short(old)} -> {_short(new)})")
        elif isinstance(old, dict) and isinstance(new, dict):
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            details = ", ".join(f"{k} ({_short(old.get(k))} -> {_short(new.get(k))})" for k in changed[:5])
            reasons.append(f"{label} changed: {details}")
        else:
            reasons.append(f"{label} changed ({_short(old)} -> {_short(new)})")
    return reasons


def _item_changes(stored: Sequence[Sequence[str]], current: Sequence[Sequence[str]]) -> list[str]:
    reasons = []
    if len(stored) != len(current):
        reasons.append(f"the data has {len(current)} items, the sweep has {len(stored)}")
    for index, (old, new) in enumerate(zip(stored, current, strict=False)):
        if list(old) != list(new):
            reasons.append(f"item {index} ({new[0]!r}) changed (id, submission, query, reference or preference)")
            break
    return reasons


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."
