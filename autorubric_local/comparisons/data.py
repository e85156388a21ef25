"""Comparison files: several systems' responses to the same prompts, and which pairs to judge.

JSONL, one record a line (blank lines skipped), in either of two forms (they may not be mixed):

- wide: ``{"id": "p1", "query": "...", "reference": "...", "responses": {"sys-a": "...", "sys-b": "..."}}``
  (``reference`` optional; at least two systems a line);
- long: ``{"id": "p1", "system": "sys-a", "response": "...", "query": "...", "reference": "..."}``,
  one line per (prompt, system); the lines of one id must give the same query and reference.

``id`` is a non-empty string or an integer, unique per prompt (wide) or per (prompt, system)
(long). System names are non-empty strings. Every problem names the file, the 1-based line and
the field, and the file is refused whole (``ProblemCollector``), before any judge loads.

Or a CSV or Parquet table in the long form, a row per (prompt, system), its columns named by
:class:`ComparisonColumns` (default: the long form's field names; other columns are ignored),
read by :func:`~autorubric_local.data.tables.read_table` as ``grade`` reads tables. The rows are
checked as the long form's lines, each problem naming the file, the 1-based row (the header not
counted) and the column (``outputs.csv: row 3: column 'model': empty``), and the file is refused
whole.

Or several systems' files in any form ``grade`` reads (submissions JSONL, AutoRubric datasets,
CSV or Parquet tables), joined by item id (:class:`SystemFiles`, :func:`prompts_from_datasets`).

Which pairs (:func:`plan_pairs`): ``all`` pairs of the systems a prompt has (the default; the
number of judgments grows as S(S-1)/2), ``baseline`` (each system against one baseline, as
Arena-Hard-Auto does), or a given list of pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from autorubric_local.core.checks import check_keys, jsonl_lines, parse_json
from autorubric_local.core.errors import InputError
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion
from autorubric_local.data.hub import is_hub_source
from autorubric_local.data.tables import Columns, check_columns, is_empty, is_table, read_table
from autorubric_local.data.validation import ProblemCollector, json_type_name, read_text_file
from autorubric_local.engine.user_text import marker_problem

__all__ = ["LONG_FIELDS", "WIDE_FIELDS", "ComparisonColumns", "ComparisonPrompt", "SystemFiles", "load_comparisons",
           "plan_pairs", "prompts_from_datasets", "systems_of"]

WIDE_FIELDS: tuple[str, ...] = ("id", "query", "reference", "responses")
LONG_FIELDS: tuple[str, ...] = ("id", "system", "response", "query", "reference")


@dataclass(frozen=True)
class ComparisonPrompt:
    """One prompt and every system's response to it.

    Attributes
    ----------
    prompt_id : str
    query : str
    responses : mapping of str to str
        System name -> response, in the file's order.
    reference : str or None
    """

    prompt_id: str
    query: str
    responses: Mapping[str, str] = field(default_factory=dict)
    reference: str | None = None


@dataclass(frozen=True)
class ComparisonColumns:
    """Which column of a long-form table holds each field of a response.

    Attributes
    ----------
    id, system, response, query : str
        Required columns: the prompt's id, the system's name, its response, and the query (a
        prompt's first row must give it; later rows may leave it empty).
    reference : str, default "reference"
        The reference answer; an optional column when left at its default.
    """

    id: str = "id"
    system: str = "system"
    response: str = "response"
    query: str = "query"
    reference: str = "reference"

    def fields(self) -> dict[str, str]:
        """Long-form field -> column name."""
        return {"id": self.id, "system": self.system, "response": self.response, "query": self.query,
                "reference": self.reference}


def _field(name: str) -> str:
    return f"field {name!r}"


def _text(row: Mapping[str, object], name: str, *, required: bool, say: Callable[[str], str] = _field) -> str | None:
    if name not in row or row[name] is None:
        if required:
            raise InputError(f"{say(name)}: missing")
        return None
    value = row[name]
    if not isinstance(value, str):
        raise InputError(f"{say(name)}: expected a string, got {json_type_name(value)}")
    if required and not value.strip():
        raise InputError(f"{say(name)}: empty")
    if (reserved := marker_problem(value)) is not None:
        raise InputError(f"{say(name)}: {reserved}")
    return value


def _identifier(row: Mapping[str, object], say: Callable[[str], str] = _field) -> str:
    raw = row.get("id")
    if isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw)
    if isinstance(raw, str) and raw.strip():
        return raw
    raise InputError(f"{say('id')}: missing" if raw is None else
                     f"{say('id')}: expected a non-empty string or an integer, got {raw!r}"[:300])


def _wide(row: dict[str, object]) -> ComparisonPrompt:
    check_keys(row, WIDE_FIELDS)
    prompt_id = _identifier(row)
    query = _text(row, "query", required=True)
    reference = _text(row, "reference", required=False)
    responses = row.get("responses")
    if not isinstance(responses, dict):
        raise InputError(f"field 'responses': expected an object of system name -> response, got "
                         f"{json_type_name(responses)}")
    if len(responses) < 2:
        raise InputError(f"field 'responses': need at least 2 systems, got {len(responses)}")
    texts: dict[str, str] = {}
    for system, text in responses.items():
        if not system.strip():
            raise InputError("field 'responses': a system name is empty")
        if not isinstance(text, str) or not text.strip():
            got = "empty" if isinstance(text, str) else f"expected a string, got {json_type_name(text)}"
            raise InputError(f"field 'responses': system {system!r}: {got}")
        if (reserved := marker_problem(text)) is not None:
            raise InputError(f"field 'responses': system {system!r}: {reserved}")
        texts[system] = text
    assert query is not None
    return ComparisonPrompt(prompt_id, query, texts, reference)


def load_comparisons(path: str | Path, columns: ComparisonColumns | None = None) -> list[ComparisonPrompt]:
    """Read a comparison file (module docstring for the forms).

    Parameters
    ----------
    path : str or Path
        JSONL in the wide or long form, or a ``.csv`` / ``.parquet`` table in the long form.
    columns : ComparisonColumns, optional
        A table's column names (default: ``ComparisonColumns()``); ignored for JSONL.

    Returns
    -------
    list of ComparisonPrompt
        In order of each prompt's first line (row).

    Raises
    ------
    InputError
        Unreadable file, invalid JSON, a bad, missing or unknown field, a repeated id (wide) or
        (id, system) (long), lines of one id with different queries, both forms in one file, or
        no prompt; every line of the message names the file, the line and the field
        (``pairs.jsonl: line 3: field 'responses': need at least 2 systems, got 1``). A table
        lacking a column, or with bad rows: the file, and the row and column
        (``pairs.csv: row 3: column 'system': prompt 'p1' already has a response of 'a'``).
    """
    source = str(path)
    if is_table(path):
        return _load_table(path, columns or ComparisonColumns())
    text = read_text_file(Path(path))
    problems = ProblemCollector(source)
    prompts: dict[str, ComparisonPrompt] = {}
    first_line: dict[str, int] = {}
    form: str | None = None
    for number, line in jsonl_lines(text):
        try:
            row = parse_json(line)
            if not isinstance(row, dict):
                raise InputError(f"expected a JSON object, got {json_type_name(row)}")
            this_form = "long" if "system" in row or "response" in row else "wide"
            if form is not None and this_form != form:
                raise InputError(f"a {this_form}-form line in a {form}-form file (the first line's form); "
                                 "use one form per file")
            form = this_form
            if this_form == "wide":
                prompt = _wide(row)
                if prompt.prompt_id in prompts:
                    raise InputError(f"field 'id': duplicate id {prompt.prompt_id!r} "
                                     f"(first on line {first_line[prompt.prompt_id]})")
                prompts[prompt.prompt_id] = prompt
                first_line[prompt.prompt_id] = number
            else:
                _add_long(row, prompts, first_line, number)
        except InputError as exc:
            problems.add(f"line {number}", str(exc))
    if form == "long":
        _one_system_problems(prompts, first_line, problems, "line", _field)
    problems.raise_if_any()
    if not prompts:
        raise InputError(f"{source}: no comparison prompts found")
    return list(prompts.values())


def _load_table(path: Path | str, columns: ComparisonColumns) -> list[ComparisonPrompt]:
    """The long form from a table (CSV, Parquet, a cached Hugging Face dataset): each row checked as a long-form line, its
    problems named by row and column (an empty cell is an absent field)."""
    source = str(path)
    header, rows = read_table(path)
    mapped = columns.fields()
    check_columns(source, header, {field: column for field, column in mapped.items()
                                   if field != "reference" or column != ComparisonColumns.reference})
    present = {field: column for field, column in mapped.items() if column in header}

    def say(name: str) -> str:
        return f"column {mapped[name]!r}"

    problems = ProblemCollector(source)
    prompts: dict[str, ComparisonPrompt] = {}
    first_row: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        fields = {field: row[column] for field, column in present.items() if not is_empty(row[column])}
        try:
            for field in ("id", "system", "response"):
                if field not in fields:
                    raise InputError(f"{say(field)}: empty")
            _add_long(fields, prompts, first_row, number, unit="row", say=say)
        except InputError as exc:
            problems.add(f"row {number}", str(exc))
    _one_system_problems(prompts, first_row, problems, "row", say)
    problems.raise_if_any()
    if not prompts:
        raise InputError(f"{source}: no comparison prompts found (no rows)")
    return list(prompts.values())


def _one_system_problems(prompts: Mapping[str, ComparisonPrompt], first: Mapping[str, int],
                         problems: ProblemCollector, unit: str, say: Callable[[str], str]) -> None:
    """The long form's prompts of a single system, each named at its first line (row)."""
    for prompt_id, prompt in prompts.items():
        if len(prompt.responses) < 2:
            only = next(iter(prompt.responses))
            problems.add(f"{unit} {first[prompt_id]}", f"{say('system')}: prompt {prompt_id!r} has only one system ({only!r})")


def _add_long(row: dict[str, object], prompts: dict[str, ComparisonPrompt], first_line: dict[str, int],
              number: int, *, unit: str = "line", say: Callable[[str], str] | None = None) -> None:
    if say is None:  # a JSONL line: its keys are the fields
        check_keys(row, LONG_FIELDS)
        say = _field
    prompt_id = _identifier(row, say)
    system = _text(row, "system", required=True, say=say)
    response = _text(row, "response", required=True, say=say)
    query = _text(row, "query", required=prompt_id not in prompts, say=say)
    reference = _text(row, "reference", required=False, say=say)
    assert system is not None and response is not None
    existing = prompts.get(prompt_id)
    if existing is None:
        assert query is not None
        prompts[prompt_id] = ComparisonPrompt(prompt_id, query, {system: response}, reference)
        first_line[prompt_id] = number
        return
    first = f"{unit} {first_line[prompt_id]}"
    if query is not None and query != existing.query:
        raise InputError(f"{say('query')}: differs from prompt {prompt_id!r}'s query on {first}")
    if reference is not None and reference != existing.reference:
        raise InputError(f"{say('reference')}: differs from prompt {prompt_id!r}'s reference on {first}")
    if system in existing.responses:
        raise InputError(f"{say('system')}: prompt {prompt_id!r} already has a response of {system!r}")
    prompts[prompt_id] = ComparisonPrompt(prompt_id, existing.query, {**existing.responses, system: response},
                                          existing.reference)


def prompts_from_datasets(named: Sequence[tuple[str, str, RubricDataset]]) -> list[ComparisonPrompt]:
    """Join several systems' graded-data files by item id: each file's submission is that
    system's response, its query (the dataset's prompt, or the item's own) the prompt's query.

    Parameters
    ----------
    named : sequence of (system, file name, RubricDataset)
        From :func:`~autorubric_local.data.submissions.load_grading_data`, one per system.

    Returns
    -------
    list of ComparisonPrompt
        One per item id of at least two systems, in order of first appearance.

    Raises
    ------
    InputError
        Fewer than two systems, a system named twice, an item with no query, the same id with
        different queries or references in two files (both named), or no id in two files.
    """
    if len(named) < 2:
        raise InputError(f"compare needs at least two systems' files, got {len(named)}")
    systems = [system for system, _, _ in named]
    if len(set(systems)) != len(systems):
        raise InputError(f"system names must be unique, got {systems}")
    problems: list[str] = []
    found: dict[str, ComparisonPrompt] = {}
    where: dict[str, str] = {}
    for system, source, dataset in named:
        for index, item in enumerate(dataset.items):
            item_id = item.id or f"item-{index}"
            query = dataset.get_item_query(index)
            reference = dataset.get_item_reference_submission(index)
            if not query:
                problems.append(f"{source}: item {item_id!r}: no query (a dataset's prompt, or the item's 'query')")
                continue
            known = found.get(item_id)
            if known is None:
                found[item_id] = ComparisonPrompt(item_id, query, {system: item.submission}, reference)
                where[item_id] = source
                continue
            if known.query != query or known.reference != reference:
                what = "query" if known.query != query else "reference"
                problems.append(f"{source}: item {item_id!r}: its {what} differs from the one in {where[item_id]}")
                continue
            found[item_id] = ComparisonPrompt(item_id, known.query, {**known.responses, system: item.submission},
                                              known.reference)
    if problems:
        raise InputError("\n".join(problems[:20]))
    prompts = [p for p in found.values() if len(p.responses) >= 2]
    if not prompts:
        raise InputError("no item id is in two of the systems' files: nothing to compare")
    return prompts


@dataclass(frozen=True)
class SystemFiles:
    """Several systems' files, one per system, in any form ``grade`` reads, and how to read them
    (``compare --system NAME=FILE``); :meth:`load` joins them by item id.

    Attributes
    ----------
    files : tuple of (str, str)
        ``(system name, file path)`` per system, in the order given.
    columns : Columns, optional
        The columns of a ``.csv`` / ``.parquet`` file (default: ``grade``'s names,
        :class:`~autorubric_local.data.tables.Columns`); not applied to other files.
    rubric : Rubric, optional
        The rubric a submissions file is read with (its ``ground_truth`` is checked against it);
        default a one-criterion stand-in for the overall question.
    """

    files: tuple[tuple[str, str], ...]
    columns: Columns | None = None
    rubric: Rubric | None = None

    def load(self) -> list[ComparisonPrompt]:
        """The prompts of the files joined by item id (:func:`prompts_from_datasets`).

        Raises
        ------
        InputError
            A file that ``grade`` would refuse (naming the file, line or row and field), or a
            problem of the join (:func:`prompts_from_datasets`).
        """
        from autorubric_local.data.submissions import load_grading_data

        reading = self.rubric or Rubric([Criterion(name="overall", requirement="Which response is better overall")])
        named = [(system, path, load_grading_data(path, reading, columns=self.columns if is_table(path) else None))
                 for system, path in self.files]
        return prompts_from_datasets(named)

    def resolved(self) -> SystemFiles:
        """The same files by absolute path (what a stored comparison remembers)."""
        return SystemFiles(tuple((system, path if is_hub_source(path) else str(Path(path).resolve()))
                                 for system, path in self.files), self.columns,
                           self.rubric)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``files`` (``[{"system", "path"}, ...]``), ``columns`` (a dict, or None)
        and ``rubric`` (``Rubric.to_dict()``, or None); :meth:`from_dict` reads it back."""
        return {"files": [{"system": system, "path": path} for system, path in self.files],
                "columns": None if self.columns is None else asdict(self.columns),
                "rubric": None if self.rubric is None else self.rubric.to_dict()}

    @classmethod
    def from_dict(cls, data: Any, where: str = "system files") -> SystemFiles:
        """Read back :meth:`to_dict`'s JSON.

        Raises
        ------
        InputError
            Naming ``where`` and the field, for anything :meth:`to_dict` would not write.
        """
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, list) or not files or not all(
                isinstance(f, dict) and isinstance(f.get("system"), str) and isinstance(f.get("path"), str)
                for f in files):
            raise InputError(f"{where}: field 'files': expected a list of {{\"system\", \"path\"}} strings, got "
                             f"{json_type_name(files)}")
        columns = data.get("columns")
        try:
            return cls(tuple((f["system"], f["path"]) for f in files),
                       None if columns is None else Columns(**columns),
                       None if data.get("rubric") is None else Rubric.from_dict(data["rubric"]))
        except (TypeError, InputError) as exc:
            raise InputError(f"{where}: field 'columns' or 'rubric': {exc}") from None


def systems_of(prompts: Iterable[ComparisonPrompt]) -> list[str]:
    """Every system named, in order of first appearance."""
    return list(dict.fromkeys(system for prompt in prompts for system in prompt.responses))


def plan_pairs(prompts: Sequence[ComparisonPrompt], *, baseline: str | None = None,
               pairs: Sequence[tuple[str, str]] | None = None) -> list[tuple[ComparisonPrompt, str, str]]:
    """The comparisons to judge: ``(prompt, system a, system b)``, prompt-major.

    Parameters
    ----------
    prompts : sequence of ComparisonPrompt
    baseline : str, optional
        Compare every other system with this one only (``a`` the other system, ``b`` the
        baseline); a prompt without the baseline gives no comparison.
    pairs : sequence of (str, str), optional
        Only these pairs (either order in the file's data; judged as given). Exclusive with
        ``baseline``. Default: all pairs of the systems each prompt has, in the file's order.

    Raises
    ------
    InputError
        Both ``baseline`` and ``pairs``; a baseline or a paired system no prompt has; a pair of a
        system with itself; or no comparison at all.
    """
    if baseline is not None and pairs is not None:
        raise InputError("give a baseline or a list of pairs, not both")
    known = systems_of(prompts)
    for name in ([baseline] if baseline is not None else []) + [s for pair in pairs or [] for s in pair]:
        if name not in known:
            raise InputError(f"system {name!r} is not in the data; its systems are {known}")
    for a, b in pairs or []:
        if a == b:
            raise InputError(f"pair ({a!r}, {b!r}) compares a system with itself")
    out: list[tuple[ComparisonPrompt, str, str]] = []
    for prompt in prompts:
        present = [s for s in known if s in prompt.responses]
        if pairs is not None:
            chosen = [(a, b) for a, b in pairs if a in prompt.responses and b in prompt.responses]
        elif baseline is not None:
            chosen = [(s, baseline) for s in present if s != baseline] if baseline in prompt.responses else []
        else:
            chosen = list(combinations(present, 2))
        out.extend((prompt, a, b) for a, b in chosen)
    if not out:
        raise InputError("no comparison to judge: no prompt has both systems of any chosen pair")
    return out
