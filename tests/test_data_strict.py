"""Strict dataset and submissions loading (issue 12): metadata, unknown fields with the closest
known name (the same message in both data loaders), blank submissions, JSONL line splitting, and
the file limits."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from autorubric_local.core import checks
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion
from autorubric_local.data.dataset import DataItem, RubricDataset
from autorubric_local.data.submissions import load_grading_data
from autorubric_local.engine import ScriptedEngine
from autorubric_local.runner import EvalConfig, EvalRunner
from fake_judge import fake_grader

RUBRIC_JSON = [
    {"name": "accuracy", "weight": 10.0, "requirement": "Factually correct", "metadata": {"source": "v2"}},
    {"name": "errors", "weight": -5.0, "requirement": "Contains errors"},
]
META = {"annotator": "ann-3", "extra_column": [1, 2.5, None], "nested": {"ok": True}}


def rubric() -> Rubric:
    return Rubric.from_dict(RUBRIC_JSON)


def dataset_json(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "demo",
        "prompt": "Why?",
        "rubric": RUBRIC_JSON,
        "items": [{"submission": "a", "ground_truth": ["MET", "UNMET"]}],
    }
    data.update(overrides)
    return data


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def error_of(load: Any, *args: Any) -> str:
    with pytest.raises(InputError) as info:
        load(*args)
    return str(info.value)


# ---------------------------------------------------------------------------- metadata


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_dataset_metadata_round_trips_on_header_items_and_criteria(tmp_path: Path, suffix: str) -> None:
    data = dataset_json(metadata={"version": 3}, items=[{"submission": "a", "metadata": META}, {"submission": "b"}])
    dataset = RubricDataset.from_dict(data)
    assert dataset.metadata == {"version": 3}
    assert dataset[0].metadata == META and dataset[1].metadata is None
    assert dataset.rubric is not None and dataset.rubric.rubric[0].metadata == {"source": "v2"}
    path = tmp_path / f"d{suffix}"
    dataset.to_file(path)
    again = RubricDataset.from_file(path)
    assert again == dataset
    assert again.to_dict()["items"][0]["metadata"] == META
    assert again.to_dict()["rubric"][0]["metadata"] == {"source": "v2"}
    assert "metadata" not in again.to_dict()["items"][1]
    train, test = again.split_train_test(1, stratify=False, seed=0)
    assert train.metadata == test.metadata == {"version": 3}


def test_metadata_through_the_api() -> None:
    dataset = RubricDataset("p", rubric(), metadata={"k": "v"})
    item = dataset.add_item("text", metadata={"row": 7})
    assert item.metadata == {"row": 7} and dataset.with_items([item]).metadata == {"k": "v"}
    with pytest.raises(InputError, match=r"field 'metadata': value at \['x'\] is not a finite number"):
        DataItem("x", metadata={"x": math.inf})
    with pytest.raises(InputError, match="field 'metadata': expected a mapping"):
        RubricDataset("p", rubric(), metadata=[1])  # type: ignore[arg-type]


def test_submissions_metadata_is_kept(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [{"id": "a", "submission": "x", "metadata": META}])
    assert load_grading_data(path, rubric())[0].metadata == META


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [("text", "expected a mapping (JSON object), got str"), ({"a": [[[]]] * 2, "b": math.nan}, "finite")],
)
def test_bad_metadata_is_refused_by_every_data_loader(tmp_path: Path, metadata: Any, expected: str) -> None:
    subs = write_jsonl(tmp_path / "s.jsonl", [{"submission": "x", "metadata": metadata}])
    assert error_of(load_grading_data, subs, rubric()).startswith(f"{subs}: line 1: field 'metadata': ")
    data = write(tmp_path / "d.json", dataset_json(items=[{"submission": "x", "metadata": metadata}]))
    message = error_of(RubricDataset.from_file, data)
    assert message.startswith(f"{data}: item 0: field 'metadata': ") and expected in message
    header = write(tmp_path / "h.json", dataset_json(metadata=metadata))
    assert error_of(RubricDataset.from_file, header).startswith(f"{header}: field 'metadata': ")


# ---------------------------------------------------------------------------- unknown fields


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("submision_id", "unknown field 'submision_id' (did you mean 'submission'?)"),
        ("refrence_submission", "unknown field 'refrence_submission' (did you mean 'reference_submission'?)"),
        ("metdata", "unknown field 'metdata' (did you mean 'metadata'?)"),
        ("zzz", "unknown field 'zzz' (allowed: "),
    ],
)
def test_both_data_loaders_name_the_closest_field(tmp_path: Path, key: str, expected: str) -> None:
    subs = write_jsonl(tmp_path / "s.jsonl", [{"submission": "x", key: "y"}])
    assert error_of(load_grading_data, subs, rubric()).startswith(f"{subs}: line 1: {expected}")
    data = write(tmp_path / "d.json", dataset_json(items=[{"submission": "x", key: "y"}]))
    assert error_of(RubricDataset.from_file, data).startswith(f"{data}: item 0: {expected}")
    via_cli_loader = error_of(load_grading_data, data, None)
    assert via_cli_loader.startswith(f"{data}: item 0: {expected}")


def test_missing_submission_is_reported_as_missing(tmp_path: Path) -> None:
    subs = write_jsonl(tmp_path / "s.jsonl", [{"text": "x"}])
    assert error_of(load_grading_data, subs, rubric()) == f"{subs}: line 1: field 'submission': missing"
    data = write(tmp_path / "d.json", dataset_json(items=[{"text": "x"}]))
    assert error_of(RubricDataset.from_file, data) == f"{data}: item 0: field 'submission': missing"


def test_rubric_errors_inside_a_dataset_name_file_and_field(tmp_path: Path) -> None:
    bad = [{"name": "depth", "requirement": "x", "weigth": 2}]
    path = write(tmp_path / "d.json", dataset_json(rubric=bad, items=[]))
    assert error_of(RubricDataset.from_file, path) == (
        f"{path}: field 'rubric': Invalid criterion at index 0 ('depth'):\n"
        "  unknown field 'weigth' (did you mean 'weight'?)"
    )
    path = write(tmp_path / "d.json", dataset_json(items=[{"submission": "x", "rubric": [{"requirement": "x", "weight": "inf"}]}]))
    message = error_of(load_grading_data, path, None)
    assert message.startswith(f"{path}: item 0: field 'rubric': Invalid criterion at index 0:\n  weight: ")


# ---------------------------------------------------------------------------- blank submissions


def test_blank_submissions_load_everywhere(tmp_path: Path) -> None:
    subs = write_jsonl(tmp_path / "s.jsonl", [{"id": "e", "submission": ""}, {"submission": "  \n"}])
    assert [item.submission for item in load_grading_data(subs, rubric())] == ["", "  \n"]
    listed = write(tmp_path / "s.json", [{"submission": ""}])
    assert load_grading_data(listed, rubric())[0].submission == ""
    data = write(tmp_path / "d.json", dataset_json(items=[{"submission": "", "ground_truth": ["UNMET", "UNMET"]}]))
    assert RubricDataset.from_file(data)[0].submission == ""
    assert load_grading_data(data, None)[0].submission == ""


def test_blank_submission_is_graded_like_any_text(tmp_path: Path) -> None:
    engine = ScriptedEngine(policy=lambda request: [math.log(0.7), math.log(0.2), math.log(0.1)])
    grader = fake_grader(engine, seed=0)
    dataset = load_grading_data(write_jsonl(tmp_path / "s.jsonl", [{"submission": ""}, {"submission": "x"}]), rubric())
    config = EvalConfig(db_path=tmp_path / "r.sqlite", experiment_name="blank", show_progress=False)
    result = EvalRunner(dataset, grader, config).run_sync()
    assert result.failed_items == 0
    blank, other = (r.report for r in result.item_results)
    assert blank.score is not None and blank.score == other.score
    assert len(engine.history) == 4


# ---------------------------------------------------------------------------- JSONL lines


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c"])
def test_jsonl_strings_may_hold_unicode_line_separators(tmp_path: Path, separator: str) -> None:
    text = f"first{separator}second"
    subs = write_jsonl(tmp_path / "s.jsonl", [{"submission": text}, {"submission": "b"}, {"id": 3}])
    message = error_of(load_grading_data, subs, rubric())
    assert message == f"{subs}: line 3: field 'submission': missing"  # line numbers stay right
    subs = write_jsonl(tmp_path / "s.jsonl", [{"submission": text}, {"submission": "b"}])
    assert [item.submission for item in load_grading_data(subs, rubric())] == [text, "b"]
    dataset = RubricDataset("p", rubric())
    dataset.add_item(text, metadata={"note": text})
    path = tmp_path / "d.jsonl"
    path.write_text(
        json.dumps(dataset._header_dict()) + "\n" + json.dumps({"submission": text, "metadata": {"note": text}},
                                                                ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    assert RubricDataset.from_file(path) == dataset
    assert load_grading_data(path, None)[0].submission == text


def test_crlf_jsonl_loads(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"submission": "a"}\r\n\r\n{"submission": "b"}\r\n')
    assert [item.submission for item in load_grading_data(path, rubric())] == ["a", "b"]


# ---------------------------------------------------------------------------- files and limits


LOADERS = {
    "dataset": RubricDataset.from_file,
    "submissions": lambda path: load_grading_data(path, rubric()),
}


@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_unreadable_files_name_the_file(tmp_path: Path, loader: str) -> None:
    load = LOADERS[loader]
    folder = tmp_path / "folder.json"
    folder.mkdir()
    assert error_of(load, folder) == f"{folder}: is a directory, expected a file"
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": "caf\xe9"}')
    assert error_of(load, latin) == f"{latin}: not UTF-8 text (invalid continuation byte at byte 10)"
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(checks.MAX_FILE_BYTES + 1)
    # a .json file has no size limit (issue 33): read a value at a time, these NUL bytes are bad JSON
    assert error_of(load, big) == f"{big}: invalid JSON: Expecting value: line 1 column 1 (char 0)"
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    message = error_of(load, deep)
    assert message.startswith(f"{deep}: ") and message.endswith("nested deeper than 64 levels")


@pytest.mark.parametrize("suffix", [".jsonl", ".txt"])
def test_deep_jsonl_line_names_the_line(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"s{suffix}"
    path.write_text('{"submission": "a"}\n{"submission": "b", "metadata": ' + "[" * 70 + "]" * 70 + "}\n")
    assert error_of(load_grading_data, path, rubric()) == (
        f"{path}: line 2: invalid JSON: nested deeper than 64 levels"
    )
    dataset = tmp_path / "d.jsonl"
    dataset.write_text('{"rubric": null}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    assert error_of(RubricDataset.from_file, dataset) == (
        f"{dataset}: line 2: invalid JSON: nested deeper than 64 levels"
    )


def test_criteria_of_a_dataset_keep_binary_aggregation_overrides(tmp_path: Path) -> None:
    own = Rubric([Criterion(name="lenient", requirement="x", aggregation="any")])
    dataset = RubricDataset("p", own)
    path = tmp_path / "d.json"
    dataset.to_file(path)
    assert RubricDataset.from_file(path).rubric == own
