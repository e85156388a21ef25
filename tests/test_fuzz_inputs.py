"""Property-based fuzzing of every input loader and of ``grade``'s input checks (issue 12).

Valid rubric, dataset, submissions and judge-panel documents are mutated (wrong types, NaN,
infinities, huge numbers, misspelt and unknown keys, deleted keys, deep nesting, huge lists)
and serialised (JSON, YAML, JSONL), and the bytes are mutated again (truncation, invalid
UTF-8, empty files, random bytes). Every generated file must either load or raise the
project's :class:`InputError` naming the file (and the field, when the mutation was about a
field), within 2 s. Bad ``grade`` runs must exit non-zero with the file named, without a
traceback and without loading a judge.

Hypothesis runs derandomised with no example database, so CI sees the same cases every time.
About 2,150 loader cases and 60 CLI runs; under a minute on 2 cores.
"""

from __future__ import annotations

import copy
import json
import math
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from autorubric_local.bias import sweep as bias_sweep
from autorubric_local.cli import main
from autorubric_local.core.errors import AutorubricError, InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.data.submissions import load_grading_data
from autorubric_local.graders import criterion_grader
from autorubric_local.graders.panel_file import load_judges_file
from autorubric_local.judges import engines

FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
CASE_SECONDS = 30.0
"""A hang guard, not a speed check: a file that sends a loader into a runaway (a YAML alias bomb,
a pathological regex) takes far longer; a normal case takes milliseconds, and 2 s was exceeded on
a loaded 2-core machine by a case that is not slow."""
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_WORK = Path(tempfile.mkdtemp(prefix="fuzz-inputs-"))

# ---------------------------------------------------------------------------- valid documents

CRITERIA: list[dict[str, Any]] = [
    {"name": "accuracy", "weight": 10.0, "requirement": "States the figures correctly",
     "metadata": {"source": "v2", "tags": ["core"]}},
    {"name": "errors", "weight": -5, "requirement": "Contains a factual error", "aggregation": "any"},
    {"name": "depth", "weight": 4.0, "requirement": "How deep is the answer?", "scale_type": "ordinal",
     "aggregation": "median",
     "options": [{"label": "Vague", "value": 0.0}, {"label": "Solid", "value": 0.5},
                 {"label": "Expert", "value": 1.0}, {"label": "N/A", "na": True}]},
    {"name": "length", "weight": 2, "requirement": "Is the length right?", "scale_type": "nominal",
     "options": [{"label": "Too short", "value": 0.0}, {"label": "Right", "value": 1.0, "na": False}]},
]
RUBRICS: list[Any] = [
    CRITERIA,
    [{"name": "Facts", "criteria": CRITERIA[:2]}, {"name": "Style", "criteria": CRITERIA[2:]}],
    {"sections": [{"name": "All", "criteria": CRITERIA}]},
    {"rubric": {"sections": [{"name": "Facts", "criteria": CRITERIA[:2]}, CRITERIA[2], CRITERIA[3]]}},
    {"rubric": CRITERIA},
]
DATASET: dict[str, Any] = {
    "name": "battery",
    "prompt": "Compare NMC and LFP cells.",
    "rubric": CRITERIA,
    "reference_submission": "NMC is denser; LFP lasts longer.",
    "metadata": {"version": 3},
    "items": [
        {"id": "a", "submission": "NMC reaches 250 Wh/kg.", "description": "good",
         "ground_truth": ["MET", "UNMET", "Solid", "Right"], "metadata": {"row": 1}},
        {"submission": "", "ground_truth": None, "prompt": "Own prompt"},
        {"submission": "LFP is safer.", "rubric": [{"requirement": "Mentions safety", "weight": 1}],
         "ground_truth": ["MET"], "reference_submission": "Safety matters."},
    ],
}
SUBMISSIONS: list[dict[str, Any]] = [
    {"id": "s1", "submission": "NMC is denser.", "query": "Compare the cells.", "metadata": {"src": "csv"}},
    {"id": 2, "submission": "LFP lasts longer.", "reference_submission": "Both have uses."},
    {"submission": ""},
]
PANEL: dict[str, Any] = {
    "judges": [
        {"judge_id": "a", "model": "smollm2-135m-instruct", "weight": 2.0, "temperature": 0.0,
         "metadata": {"team": "qa"}},
        {"judge_id": "b", "model": "smollm2-135m-instruct", "system_prompt": "Be strict.",
         "thinking": "low", "device": "cpu", "cache_enabled": False, "max_tokens": 64},
    ],
    "aggregation": "weighted",
    "ordinal_aggregation": "median",
    "nominal_aggregation": "mode",
    "permutations": "cyclic",
}
RUBRIC_OBJECT = Rubric.from_dict(CRITERIA)

# ---------------------------------------------------------------------------- mutations

NASTY_NUMBERS: list[Any] = [math.nan, math.inf, -math.inf, 10**400, -(10**30), 1e7, -1e300, 2.5e-320]
WRONG_TYPES: list[Any] = [True, False, None, "", "   ", "yes", "NaN", "1e400", 0, -1, [], {}, [1, "a"],
                          {"x": 1}, "\u2028", "caf\u00e9 \U0001f600"]
SIMPLE_BAD = NASTY_NUMBERS + WRONG_TYPES


def _deep(levels: int, opener: str) -> Any:
    value: Any = [] if opener == "[" else {}
    for _ in range(levels - 1):
        value = [value] if opener == "[" else {"k": value}
    return value


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (dict keys and list indexes)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield (*prefix, key)
        yield from paths(child, (*prefix, key))


def containers(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths of every dict inside ``value`` (including the root)."""
    if isinstance(value, dict):
        yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from containers(child, (*prefix, key))


def at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def misspell(key: str, draw: Callable[[Any], Any]) -> str:
    """One edit of ``key``: drop, double, swap or replace a character."""
    i = draw(st.integers(0, max(len(key) - 1, 0)))
    op = draw(st.sampled_from(["drop", "double", "swap", "replace"]))
    if op == "drop" and len(key) > 1:
        return key[:i] + key[i + 1:]
    if op == "swap" and i + 1 < len(key):
        return key[:i] + key[i + 1] + key[i] + key[i + 2:]
    if op == "replace":
        return key[:i] + draw(st.sampled_from("aeiouxz_")) + key[i + 1:]
    return key[:i] + key[i] + key[i:]


@st.composite
def mutated_doc(draw: Callable[[Any], Any], base: Any) -> tuple[Any, tuple[str, ...] | None]:
    """A mutation of ``base``, and the names an error about it must mention one of (``None``
    when the mutation is not about one field).

    A misspelt or unknown key must be named itself. A bad value must be named by its key, a
    sibling key or the key of the list or mapping holding it (rules across fields: "at least
    2 non-NA options" when ``na`` changed), or ``ground_truth`` (a rubric change that the
    dataset's ground truth no longer fits)."""
    doc = copy.deepcopy(base)
    kind = draw(st.sampled_from(["value", "value", "rename", "unknown", "delete", "deep", "huge", "none"]))
    if kind == "none":
        return doc, None
    if kind in ("rename", "unknown"):
        where = at(doc, draw(st.sampled_from(list(containers(doc)))))
        if kind == "unknown":
            key = draw(st.sampled_from(["colour", "weigth", "optoins", "submision", "modle", "notes", "Name"]))
            assume(key not in where)
            where[key] = draw(st.sampled_from(SIMPLE_BAD))
            return doc, (key,)
        assume(where)
        old = draw(st.sampled_from(sorted(where)))
        new = misspell(old, draw)
        assume(new != old and new not in where)
        where[new] = where.pop(old)
        return doc, (new,)
    path = draw(st.sampled_from(list(paths(doc))))
    parent, key = at(doc, path[:-1]), path[-1]
    if kind == "delete":
        del parent[key]
        return doc, None
    if kind == "deep":  # the serialisers themselves recurse: deeper cases come as bytes
        parent[key] = _deep(draw(st.integers(60, 250)), draw(st.sampled_from("[{")))
        return doc, None
    if kind == "huge":
        parent[key] = [draw(st.sampled_from([0, "x", {}, None]))] * draw(st.integers(1000, 20_000))
        return doc, None
    parent[key] = draw(st.sampled_from(SIMPLE_BAD))
    if not isinstance(key, str):
        return doc, None
    holder = next((part for part in reversed(path[:-1]) if isinstance(part, str)), None)
    names = {key, *parent, "ground_truth", *([holder] if holder else [])}
    return doc, tuple(sorted(names))


def serialise(doc: Any, suffix: str) -> bytes:
    if suffix in (".yaml", ".yml"):
        return yaml.dump(doc, Dumper=_DUMPER, allow_unicode=True, sort_keys=False).encode("utf-8")
    if suffix == ".jsonl" and isinstance(doc, dict) and "items" in doc:  # a dataset: header + items
        header = {k: v for k, v in doc.items() if k != "items"}
        rows = [header, *(doc["items"] if isinstance(doc["items"], list) else [doc["items"]])]
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8", "surrogatepass")
    if suffix in (".jsonl", ".txt") and isinstance(doc, list):
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in doc).encode("utf-8", "surrogatepass")
    return json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")


@st.composite
def byte_mutation(draw: Callable[[Any], Any], data: bytes) -> tuple[bytes, bool]:
    """``(bytes, kept)``: ``data`` mutated at the byte level, and whether it was left as is."""
    kind = draw(st.sampled_from(["keep"] * 8 + ["truncate", "bad-utf8", "flip", "empty", "random",
                                              "deep-prefix", "bom", "crlf", "nul"]))
    position = draw(st.integers(0, len(data)))
    if kind == "truncate":
        return data[:position], False
    if kind == "bad-utf8":
        return data[:position] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88", b"\x80"])) + data[position:], False
    if kind == "flip" and data:
        index = min(position, len(data) - 1)
        return data[:index] + bytes([data[index] ^ draw(st.integers(1, 255))]) + data[index + 1:], False
    if kind == "empty":
        return draw(st.sampled_from([b"", b"\n", b"   \n\t\n", b"null", b"[]", b"{}"])), False
    if kind == "random":
        return draw(st.binary(max_size=200)), False
    if kind == "deep-prefix":
        return b"[" * draw(st.integers(65, 200_000)) + data, False
    if kind == "bom":
        return b"\xef\xbb\xbf" + data, False
    if kind == "crlf":
        return data.replace(b"\n", b"\r\n"), False
    if kind == "nul":
        return data[:position] + b"\x00" + data[position:], False
    return data, True


def write_case(data: bytes, suffix: str) -> Path:
    path = _WORK / f"case{suffix}"
    path.write_bytes(data)
    return path


def check_load(load: Callable[[Path], Any], path: Path, fields: tuple[str, ...] | None) -> None:
    """Load ``path``: success, or an InputError naming the file (and one of ``fields``), without
    hanging (:data:`CASE_SECONDS`); any other exception fails the test with its traceback."""
    started = time.perf_counter()
    try:
        load(path)
    except AutorubricError as exc:
        assert isinstance(exc, InputError), f"{type(exc).__name__}: {exc}"
        message = str(exc)
        assert str(path) in message, message
        if fields is not None:
            assert any(field in message for field in fields), f"none of {fields} in: {message}"
    assert time.perf_counter() - started < CASE_SECONDS


Case = tuple[bytes, str, tuple[str, ...] | None]


@st.composite
def case(draw: Callable[[Any], Any], bases: list[Any], suffixes: list[str]) -> Case:
    """A mutated file: its bytes, its suffix, and the fields an error must name (if any)."""
    doc, fields = draw(mutated_doc(draw(st.sampled_from(bases))))
    suffix = draw(st.sampled_from(suffixes))
    if suffix == ".jsonl" and fields is not None and "items" in fields:
        fields = None  # JSONL has no 'items' key: the items are the lines
    data, kept = draw(byte_mutation(serialise(doc, suffix)))
    return data, suffix, fields if kept else None


# ---------------------------------------------------------------------------- loader fuzzing


@settings(FUZZ, max_examples=examples(700))
@given(case(RUBRICS, [".json", ".yaml", ".yml"]))
def test_fuzz_rubric_files(generated: Case) -> None:
    data, suffix, fields = generated
    check_load(Rubric.from_file, write_case(data, suffix), fields)


@settings(FUZZ, max_examples=examples(550))
@given(case([DATASET], [".json", ".jsonl"]))
def test_fuzz_dataset_files(generated: Case) -> None:
    data, suffix, fields = generated
    check_load(RubricDataset.from_file, write_case(data, suffix), fields)


@settings(FUZZ, max_examples=examples(300))
@given(case([SUBMISSIONS], [".jsonl", ".json", ".txt"]))
def test_fuzz_cli_submissions_files(generated: Case) -> None:
    data, suffix, fields = generated
    check_load(lambda path: load_grading_data(path, RUBRIC_OBJECT), write_case(data, suffix), fields)


@settings(FUZZ, max_examples=examples(200))
@given(case([DATASET], [".jsonl", ".json", ".txt"]), st.booleans())
def test_fuzz_cli_dataset_files(generated: Case, with_rubric: bool) -> None:
    data, suffix, fields = generated
    rubric = RUBRIC_OBJECT if with_rubric else None
    check_load(lambda path: load_grading_data(path, rubric), write_case(data, suffix), fields)


@settings(FUZZ, max_examples=examples(400))
@given(case([PANEL], [".yaml", ".json"]))
def test_fuzz_judge_panel_files(generated: Case) -> None:
    data, suffix, fields = generated
    check_load(load_judges_file, write_case(data, suffix), fields)


def test_the_fuzzed_documents_are_valid_before_mutation(tmp_path: Path) -> None:
    for i, base in enumerate(RUBRICS):
        for suffix in (".json", ".yaml"):
            path = tmp_path / f"r{i}{suffix}"
            path.write_bytes(serialise(base, suffix))
            assert len(Rubric.from_file(path)) == 4
    for suffix in (".json", ".jsonl"):
        path = tmp_path / f"d{suffix}"
        path.write_bytes(serialise(DATASET, suffix))
        assert len(RubricDataset.from_file(path)) == 3
        assert len(load_grading_data(path, None)) == 3
    for suffix in (".jsonl", ".json", ".txt"):
        path = tmp_path / f"s{suffix}"
        path.write_bytes(serialise(SUBMISSIONS, suffix))
        assert [item.id for item in load_grading_data(path, RUBRIC_OBJECT)] == ["s1", "2", "item-2"]
    path = tmp_path / "p.yaml"
    path.write_bytes(serialise(PANEL, ".yaml"))
    assert load_judges_file(path).metadata == {"a": {"team": "qa"}}


# ---------------------------------------------------------------------------- CLI fuzzing

VALID_RUBRIC = serialise(CRITERIA, ".yaml")
VALID_DATA = serialise(SUBMISSIONS, ".jsonl")


def _refused(load: Callable[[Path], Any], path: Path) -> bool:
    try:
        load(path)
    except AutorubricError:
        return True
    return False


@st.composite
def bad_cli_run(draw: Callable[[Any], Any]) -> tuple[list[str], str]:
    """Arguments of a ``grade`` run that must fail before any judge loads, and the text (a
    file name or option) its message must name."""
    folder = _WORK / "cli"
    folder.mkdir(exist_ok=True)
    rubric, data, db = folder / "rubric.yaml", folder / "subs.jsonl", folder / "results.sqlite"
    rubric.write_bytes(VALID_RUBRIC)
    data.write_bytes(VALID_DATA)
    db.unlink(missing_ok=True)
    args = [str(rubric), str(data), "--db", str(db), "--no-progress"]
    target = draw(st.sampled_from(["rubric", "data", "judges", "db", "run"]))
    if target == "rubric":
        rubric = folder / f"rubric{draw(st.sampled_from(['.yaml', '.json']))}"
        doc, _ = draw(mutated_doc(draw(st.sampled_from(RUBRICS))))
        rubric.write_bytes(draw(byte_mutation(serialise(doc, rubric.suffix)))[0])
        assume(_refused(Rubric.from_file, rubric))
        args[0] = str(rubric)
        return args, str(rubric)
    if target == "data":
        doc, _ = draw(mutated_doc(SUBMISSIONS))
        data.write_bytes(draw(byte_mutation(serialise(doc, ".jsonl")))[0])
        # grade keeps an unreadable line as that item's failure (issue 33): only what it refuses counts here
        assume(_refused(lambda path: load_grading_data(path, RUBRIC_OBJECT, keep_unreadable=True), data))
        return args, str(data)
    if target == "judges":
        judges = folder / "judges.yaml"
        doc, _ = draw(mutated_doc(PANEL))
        judges.write_bytes(draw(byte_mutation(serialise(doc, ".yaml")))[0])
        assume(_refused(load_judges_file, judges))
        return [*args, "--judges", str(judges)], str(judges)
    if target == "db":
        content = draw(st.sampled_from([b"not a database", b"SQLite format 3\x00" + b"\xff" * 512,
                                        b"SQLite format 2\x00", b"\x00" * 100, VALID_DATA]))
        db.write_bytes(content)
        return args, str(db)
    name = draw(st.sampled_from(["", " ", "two words", "tab\t", "x" * 129, "-dash", "\x1b[31mred", "a/b"]))
    return [*args, "--run", name], "--run"


@settings(FUZZ, max_examples=examples(60))
@given(bad_cli_run())
def test_fuzz_grade_refuses_bad_inputs_before_loading_a_judge(generated: tuple[list[str], str]) -> None:
    args, named = generated
    loaded: list[Any] = []
    with pytest.MonkeyPatch.context() as patch:
        for module in (engines, criterion_grader, bias_sweep):
            patch.setattr(module, "load_engine", loaded.append)
        started = time.perf_counter()
        result = CliRunner().invoke(main, ["grade", *args])
    assert time.perf_counter() - started < CASE_SECONDS
    assert loaded == []
    assert result.exit_code in (1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert named in result.output
