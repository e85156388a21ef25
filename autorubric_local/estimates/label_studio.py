"""Label Studio tasks and labelling config for the items chosen to be labelled.

Import format (Label Studio docs, "Import pre-annotated data"): a JSON list of tasks
``{"data": {...}}``; the config (XML) names one ``Choices`` control per criterion,
``from_name`` ``c<i>`` (criterion ``i`` in rubric order), ``to_name`` ``submission``. An export
(JSON or JSON-MIN) of these tasks reads back with :func:`autorubric_local.estimates.labels.read_labels`.

No judge verdict is put in the tasks unless asked (``with_predictions``): pre-filled choices
anchor labellers on the judge, and the estimates need human labels made independently of it.

Pairwise comparisons (:func:`pairwise_tasks`, :func:`pairwise_labelling_config`): one task per
comparison chosen for labelling, the two responses shown as "Response 1" (left) and "Response 2"
(right) in an order drawn at random per comparison (recorded in the task's ``left_system`` and
in the database), one ``Choices`` control ``winner`` (``Left`` / ``Right`` / ``Tie``); an export
reads back with :func:`read_pairwise_export` into preference labels (``id``, ``a``, ``b``,
``winner``), the left/right swap undone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion
from autorubric_local.data.validation import ProblemCollector, json_type_name, read_text_file
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


# ---------------------------------------------------------------------------- pairwise tasks

PAIRWISE_FROM_NAME = "winner"
"""``from_name`` of the pairwise labelling config's one control (:func:`pairwise_labelling_config`)."""

PAIRWISE_CHOICES = ("Left", "Right", "Tie")
"""The choices of :func:`pairwise_labelling_config`, read back by :func:`read_pairwise_export`."""

PAIRWISE_TASK_FIELDS = ("comparison_id", "prompt_id", "system_a", "system_b", "left_system")
"""Task ``data`` fields :func:`read_pairwise_export` reads (the texts shown are not read back)."""


def pairwise_labelling_config(question: str, with_reference: bool = False) -> str:
    """The Label Studio labelling config (XML) of a pairwise comparison: the query (and the
    reference answer), the two responses side by side, and one required single choice
    ``Left`` / ``Right`` / ``Tie`` headed by ``question`` (text escaped).

    Label Studio's ``<Pairwise>`` tag selects one of two objects but has no tie, and our
    preference labels have one, so the control is ``<Choices>`` (Label Studio docs, "Pairwise"
    tag and "Pairwise Classification" template; ``Choices``). The task's system names are in its
    data but shown nowhere: the labeller sees "Response 1" (left) and "Response 2" (right) only.
    """
    lines = ["<View>", '  <Header value="Query"/>', '  <Text name="query" value="$query"/>']
    if with_reference:
        lines += ['  <Header value="Reference answer"/>', '  <Text name="reference" value="$reference"/>']
    lines += [
        '  <View style="display: flex; gap: 1em;">',
        '    <View style="flex: 1;">', '      <Header value="Response 1 (left)"/>',
        '      <Text name="left" value="$left"/>', "    </View>",
        '    <View style="flex: 1;">', '      <Header value="Response 2 (right)"/>',
        '      <Text name="right" value="$right"/>', "    </View>",
        "  </View>",
        f"  <Header value={quoteattr(question)}/>",
        f'  <Choices name="{PAIRWISE_FROM_NAME}" toName="left" choice="single" required="true" showInline="true">',
        *(f"    <Choice value={quoteattr(choice)}/>" for choice in PAIRWISE_CHOICES),
        "  </Choices>",
        "</View>",
    ]
    return "\n".join(lines) + "\n"


def pairwise_tasks(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Label Studio tasks, one per comparison to label.

    Parameters
    ----------
    rows : sequence of mappings
        Each with ``comparison_id``, ``prompt_id``, ``system_a``, ``system_b``, ``left_system``
        (``system_a`` or ``system_b``: whose response is shown on the left), ``query``,
        ``reference`` (or None), ``response_a`` and ``response_b``.

    Returns
    -------
    list of dict
        ``{"data": {...}}`` per row: the fields of :data:`PAIRWISE_TASK_FIELDS` plus ``query``,
        ``reference`` (empty when none), ``left`` and ``right`` (the responses in shown order).

    Raises
    ------
    InputError
        A row's ``left_system`` is neither of its systems.
    """
    out: list[dict[str, Any]] = []
    for row in rows:
        a, b, left = row["system_a"], row["system_b"], row["left_system"]
        if left not in (a, b):
            raise InputError(f"comparison {row['comparison_id']!r}: left_system {left!r} is neither {a!r} nor {b!r}")
        shown = (row["response_a"], row["response_b"]) if left == a else (row["response_b"], row["response_a"])
        out.append({"data": {**{name: str(row[name]) for name in PAIRWISE_TASK_FIELDS},
                             "query": str(row["query"]), "reference": str(row.get("reference") or ""),
                             "left": str(shown[0]), "right": str(shown[1])}})
    return out


def _pairwise_choice(task: Mapping[str, Any], where: str) -> str | None:
    """``left``, ``right``, ``tie`` or None (no annotation that was not cancelled, or no answer)."""
    if "annotations" not in task:  # JSON-MIN: the control's value sits beside the data fields
        value = task.get(PAIRWISE_FROM_NAME)
        return None if value is None else _pairwise_value(value, where, f"field {PAIRWISE_FROM_NAME!r}")
    given = task.get("annotations")
    if not isinstance(given, list) or not all(isinstance(a, dict) for a in given):
        raise InputError(f"{where}: field 'annotations': expected a list of objects")
    kept = [a for a in given if not a.get("was_cancelled")]
    if not kept:
        return None
    latest = max(enumerate(kept), key=lambda ka: (str(ka[1].get("updated_at") or ka[1].get("created_at") or ""),
                                                  ka[0]))[1]
    results = latest.get("result")
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise InputError(f"{where}: field 'annotations.result': expected a list of objects")
    for result in results:
        if result.get("type") == "pairwise":  # a <Pairwise> control: {"selected": "left" | "right"}
            value = result.get("value")
            selected = value.get("selected") if isinstance(value, dict) else None
            return _pairwise_value(selected, where, "field 'result.value.selected'")
        if result.get("type") == "choices" and result.get("from_name") == PAIRWISE_FROM_NAME:
            value = result.get("value")
            return _pairwise_value(value.get("choices") if isinstance(value, dict) else value, where,
                                   "field 'result.value.choices'")
    return None


def _pairwise_value(value: object, where: str, field: str) -> str:
    if isinstance(value, list):
        if len(value) != 1:
            raise InputError(f"{where}: {field}: expected one choice, got {len(value)}")
        value = value[0]
    if not isinstance(value, str) or value.strip().lower() not in ("left", "right", "tie"):
        raise InputError(f"{where}: {field}: expected one of {list(PAIRWISE_CHOICES)}, got {value!r}")
    return value.strip().lower()


def read_pairwise_export(path: str | Path) -> tuple[list[dict[str, str]], list[str]]:
    """Read a Label Studio export (JSON or JSON-MIN) of :func:`pairwise_tasks` as preference labels.

    The left/right swap is undone: a task whose ``left_system`` is ``system_b`` and whose answer is
    ``Left`` gives ``winner`` ``"b"``. The latest annotation that was not cancelled counts (full
    JSON); a ``<Pairwise>`` result (``value.selected`` ``left`` / ``right``) is read as well as the
    config's ``Choices``.

    Parameters
    ----------
    path : str or Path
        The export: a JSON list of tasks.

    Returns
    -------
    labels : list of dict
        ``{"id": prompt_id, "a": system_a, "b": system_b, "winner": "a" | "b" | "tie"}`` per
        answered task, in the export's order (the preference-label format of
        :func:`autorubric_local.comparisons.corrected.load_preference_labels`).
    unanswered : list of str
        ``comparison_id`` of every task without an answer.

    Raises
    ------
    InputError
        An unreadable file or invalid JSON; a task that is not an object, lacks a field of
        :data:`PAIRWISE_TASK_FIELDS` (or has one that is not a non-empty string), has a
        ``left_system`` that is neither system, an answer that is not one choice of
        :data:`PAIRWISE_CHOICES`, or repeats a comparison. Every problem names the file, the task
        (1-based, with its ``comparison_id`` when known) and the field; nothing is returned when
        any task is wrong.
    """
    source = str(path)
    problems = ProblemCollector(source)
    tasks = _json_list(Path(path))
    labels: list[dict[str, str]] = []
    unanswered: list[str] = []
    seen: dict[str, int] = {}
    for number, task in enumerate(tasks, start=1):
        where = f"task {number}"
        try:
            if not isinstance(task, dict):
                raise InputError(f"expected an object, got {json_type_name(task)}")
            data = task.get("data") if "annotations" in task or "data" in task else task
            if not isinstance(data, dict):
                raise InputError(f"field 'data': expected an object, got {json_type_name(data)}")
            values: dict[str, str] = {}
            for name in PAIRWISE_TASK_FIELDS:
                value = data.get(name)
                if not isinstance(value, str) or not value.strip():
                    raise InputError(f"field 'data.{name}': " + ("missing" if value is None else
                                                                 f"expected a non-empty string, got {value!r}"))
                values[name] = value
            where = f"task {number} ({values['comparison_id']!r})"
            a, b, left = values["system_a"], values["system_b"], values["left_system"]
            if left not in (a, b) or a == b:
                raise InputError(f"field 'data.left_system': {left!r} is not one of the two systems {a!r} and {b!r}")
            earlier = seen.get(values["comparison_id"])
            if earlier is not None:
                raise InputError(f"field 'data.comparison_id': comparison already in task {earlier}")
            seen[values["comparison_id"]] = number
            choice = _pairwise_choice(task, "")
        except InputError as exc:
            problems.add(where, str(exc).removeprefix(": "))
            continue
        if choice is None:
            unanswered.append(values["comparison_id"])
            continue
        winner = "tie" if choice == "tie" else ("a" if (left == a) == (choice == "left") else "b")
        labels.append({"id": values["prompt_id"], "a": a, "b": b, "winner": winner})
    problems.raise_if_any()
    return labels, unanswered


def _json_list(path: Path) -> list[Any]:
    text = read_text_file(path)
    try:
        tasks = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: invalid JSON at line {e.lineno}: {e.msg}") from None
    if not isinstance(tasks, list):
        raise InputError(f"{path}: a Label Studio export is a JSON list of tasks, got {json_type_name(tasks)}")
    return tasks
