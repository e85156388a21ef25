"""Rubric loaders (every format and every error message), serialisation and grade()."""

from __future__ import annotations

import asyncio
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import EvaluationReport
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionOption

FLAT = [
    {"name": "margin", "weight": 10.0, "requirement": "States the margin"},
    {"requirement": "Explains clearly"},  # weight defaults to 10.0
    {"weight": -15.0, "requirement": "Uses the wrong total"},
]
EXPECTED = [
    Criterion(name="margin", weight=10.0, requirement="States the margin"),
    Criterion(weight=10.0, requirement="Explains clearly"),
    Criterion(weight=-15.0, requirement="Uses the wrong total"),
]
SECTIONS = [
    {"name": "Accuracy", "criteria": FLAT[:2]},
    {"name": "Errors", "criteria": FLAT[2:]},
]
MULTI_CHOICE_YAML = """
- name: satisfaction
  requirement: "How satisfied would you be?"
  weight: 10.0
  scale_type: ordinal
  options:
    - label: "1"
      value: 0.0
    - label: "2"
      value: 1.0
    - label: "NA - No references provided"
      na: true
"""


# ---------------------------------------------------------------- accepted formats


@pytest.mark.parametrize(
    "data",
    [
        FLAT,
        SECTIONS,
        [SECTIONS[0], FLAT[2]],  # sections mixed with plain criteria
        {"sections": SECTIONS},
        {"rubric": {"sections": SECTIONS}},
        {"rubric": FLAT},
    ],
    ids=["flat", "sections", "mixed", "sections-key", "rubric-sections", "rubric-list"],
)
def test_from_dict_formats(data: Any) -> None:
    rubric = Rubric.from_dict(data)
    assert rubric.rubric == EXPECTED
    assert len(rubric) == 3 and list(rubric) == EXPECTED


def test_from_json_and_yaml_strings() -> None:
    assert Rubric.from_json(json.dumps(FLAT)).rubric == EXPECTED
    assert Rubric.from_json(json.dumps({"rubric": {"sections": SECTIONS}})).rubric == EXPECTED
    yaml_text = """
rubric:
  sections:
    - name: Accuracy
      criteria:
        - name: margin
          weight: 10.0
          requirement: States the margin
        - requirement: Explains clearly
    - name: Errors
      criteria:
        - weight: -15.0
          requirement: Uses the wrong total
"""
    assert Rubric.from_yaml(yaml_text).rubric == EXPECTED


def test_multi_choice_yaml_with_valueless_na_option() -> None:
    (criterion,) = Rubric.from_yaml(MULTI_CHOICE_YAML).rubric
    assert criterion.options == [
        CriterionOption(label="1", value=0.0),
        CriterionOption(label="2", value=1.0),
        CriterionOption(label="NA - No references provided", value=0.0, na=True),
    ]
    assert criterion.na_option_index == 2


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json", ".YAML"])
def test_from_file_paths(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"rubric{suffix}"
    text = json.dumps(FLAT) if suffix == ".json" else yaml.safe_dump(FLAT)
    path.write_text(text, encoding="utf-8")
    assert Rubric.from_file(str(path)).rubric == EXPECTED
    assert Rubric.from_file(path).rubric == EXPECTED  # pathlib.Path


@pytest.mark.parametrize("mode", ["r", "rb"])
def test_from_file_objects(tmp_path: Path, mode: str) -> None:
    json_path = tmp_path / "r.json"
    json_path.write_text(json.dumps({"sections": SECTIONS}), encoding="utf-8")
    yaml_path = tmp_path / "r.yml"
    yaml_path.write_text(MULTI_CHOICE_YAML, encoding="utf-8")
    with json_path.open(mode) as handle:
        assert Rubric.from_file(handle).rubric == EXPECTED
    with yaml_path.open(mode) as handle:
        assert len(Rubric.from_file(handle)) == 1


def test_from_file_object_in_memory_with_name() -> None:
    handle = io.StringIO(json.dumps(FLAT))
    handle.name = "in-memory.json"
    assert Rubric.from_file(handle).rubric == EXPECTED


# ---------------------------------------------------------------- format errors


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"criteria": FLAT}, "Invalid rubric format. Dict must contain either 'sections' or "
                             "'rubric' key"),
        ({"rubric": {"name": "x"}}, "Invalid rubric format. Dict must contain either "
                                    "'sections' or 'rubric' key"),
        ({"sections": {"a": 1}}, "Invalid rubric format. Expected 'sections' to be a list, "
                                 "got dict"),
        ({"rubric": {"sections": "x"}}, "Invalid rubric format. Expected 'sections' to be a "
                                        "list, got str"),
        ({"rubric": "x"}, "Invalid rubric format. Expected a list, got str"),
        ("just text", "Invalid rubric format. Expected a list, got str"),
        (None, "Invalid rubric format. Expected a list, got NoneType"),
        ([], "No criteria found"),
        ({"sections": []}, "No criteria found"),
        ([{"name": "Empty", "criteria": []}], "No criteria found"),
        ([FLAT[0], "oops"], "Invalid item at index 1: expected a dictionary, got str"),
        ([{"name": "S", "criteria": {"requirement": "x"}}],
         "Invalid section at index 0: 'criteria' must be a list, got dict"),
        ([{"name": "S", "criteria": [FLAT[0], 7]}],
         "Invalid criterion at index 1: expected a dictionary, got int"),
    ],
)
def test_format_errors(data: Any, message: str) -> None:
    with pytest.raises(InputError) as info:
        Rubric.from_dict(data)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


def test_invalid_criterion_lists_field_paths() -> None:
    data = [FLAT[0], {"weight": "heavy"}]
    with pytest.raises(ValueError) as info:
        Rubric.from_dict(data)
    lines = str(info.value).split("\n")
    assert lines[0] == "Invalid criterion at index 1:"
    assert "  weight: Input should be a valid number, unable to parse string as a number" in lines
    assert "  requirement: Field required" in lines


def test_invalid_nested_option_path_and_model_rule_messages() -> None:
    bad_value = [{"requirement": "r", "options": [{"label": "a", "value": 2.0},
                                                  {"label": "b", "value": 1.0}]}]
    with pytest.raises(ValueError) as info:
        Rubric.from_dict(bad_value)
    assert str(info.value) == (
        "Invalid criterion at index 0:\n"
        "  options.0: Value error, Option value must be in [0, 1], got 2.0"
    )
    missing_value = [{"requirement": "r", "options": [{"label": "a"}, {"label": "b", "value": 1}]}]
    with pytest.raises(ValueError, match=r"  options\.0\.value: Field required"):
        Rubric.from_dict(missing_value)
    one_option = [{"requirement": "r", "options": [{"label": "a", "value": 0}]}]
    with pytest.raises(ValueError) as info:
        Rubric.from_dict(one_option)
    assert str(info.value) == (
        "Invalid criterion at index 0:\n"
        "  : Value error, Multi-choice criterion must have at least 2 options"
    )
    duplicate = [{"requirement": "r", "options": [{"label": "Yes", "value": 1},
                                                  {"label": "yes ", "value": 0}]}]
    with pytest.raises(ValueError, match=r"Duplicate option label 'yes ' at index 1"):
        Rubric.from_dict(duplicate)


def test_bad_json_and_yaml_strings() -> None:
    with pytest.raises(InputError, match=r"^Failed to parse JSON string: Expecting value"):
        Rubric.from_json("[1, ]")
    with pytest.raises(InputError, match=r"^Failed to parse YAML string: "):
        Rubric.from_yaml("- a: [1, 2\n- b")


# ---------------------------------------------------------------- file errors


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(FileNotFoundError) as info:
        Rubric.from_file(str(missing))
    assert str(info.value) == f"File not found: {missing}"
    with pytest.raises(FileNotFoundError, match="File not found: "):
        Rubric.from_file(missing)


def test_unsupported_extension(tmp_path: Path) -> None:
    path = tmp_path / "rubric.txt"
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(InputError) as info:
        Rubric.from_file(str(path))
    assert str(info.value) == (
        f"Unsupported file format '.txt' for file: {path}\nSupported formats: .yaml, .yml, .json"
    )
    no_suffix = tmp_path / "rubric"
    no_suffix.write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match="Unsupported file format '' for file: "):
        Rubric.from_file(no_suffix)


def test_bad_file_contents(tmp_path: Path) -> None:
    # The spec's messages, after the file's name (this package names the file in every error).
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match=rf"^{re.escape(str(bad_json))}: Failed to parse JSON file: "):
        Rubric.from_file(bad_json)
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("key: [unclosed", encoding="utf-8")
    with pytest.raises(InputError, match=rf"^{re.escape(str(bad_yaml))}: Failed to parse YAML file: "):
        Rubric.from_file(str(bad_yaml))
    empty_yaml = tmp_path / "empty.yaml"
    empty_yaml.write_text("", encoding="utf-8")
    with pytest.raises(
        InputError,
        match=rf"^{re.escape(str(empty_yaml))}: Invalid rubric format. Expected a list, got NoneType$",
    ):
        Rubric.from_file(empty_yaml)


def test_file_object_errors() -> None:
    nameless = io.StringIO("[]")
    with pytest.raises(InputError) as info:
        Rubric.from_file(nameless)
    assert str(info.value) == (
        "Cannot determine file format from file object. "
        "File object must have a 'name' attribute with a file extension."
    )
    wrong = io.StringIO("[]")
    wrong.name = "notes.txt"
    with pytest.raises(InputError) as info:
        Rubric.from_file(wrong)
    assert str(info.value) == (
        "Unsupported file format '.txt' for file object: notes.txt\n"
        "Supported formats: .yaml, .yml, .json"
    )
    bad_json = io.StringIO("{")
    bad_json.name = "x.json"
    with pytest.raises(InputError, match=r"^x\.json: Failed to parse JSON from file object: "):
        Rubric.from_file(bad_json)
    bad_yaml = io.StringIO("a: [b")
    bad_yaml.name = "x.yaml"
    with pytest.raises(InputError, match=r"^x\.yaml: Failed to parse YAML from file object: "):
        Rubric.from_file(bad_yaml)
    closed = io.StringIO("[]")
    closed.name = "x.json"
    closed.close()
    with pytest.raises(InputError, match=r"^x\.json: Failed to read from file object: "):
        Rubric.from_file(closed)


def test_invalid_source_type() -> None:
    with pytest.raises(InputError) as info:
        Rubric.from_file(42)  # type: ignore[arg-type]
    assert str(info.value) == (
        "Invalid source type: expected str (file path) or file-like object, got int"
    )


# ---------------------------------------------------------------- serialisation


def test_to_list_and_to_dict_round_trip() -> None:
    rubric = Rubric.from_yaml(MULTI_CHOICE_YAML)
    rubric = Rubric(rubric.rubric + EXPECTED + [
        Criterion(requirement="n", scale_type="nominal", aggregation="mode",
                  options=[CriterionOption(label="a", value=0.0),
                           CriterionOption(label="b", value=0.0)])
    ])
    items = rubric.to_list()
    assert items[1] == {"name": "margin", "weight": 10.0, "requirement": "States the margin"}
    assert items[0]["options"][2] == {"label": "NA - No references provided", "value": 0.0,
                                      "na": True}
    assert items[4]["scale_type"] == "nominal" and items[4]["aggregation"] == "mode"
    assert Rubric.from_dict(items) == rubric
    assert rubric.to_dict() == {"rubric": items}
    assert Rubric.from_dict(rubric.to_dict()) == rubric
    assert Rubric.from_json(json.dumps(rubric.to_dict())) == rubric


def test_constructor_rejects_plain_data() -> None:
    with pytest.raises(TypeError, match="got dict at index 1; use Rubric.from_dict"):
        Rubric([EXPECTED[0], FLAT[1]])  # type: ignore[list-item]


def test_equality() -> None:
    assert Rubric(EXPECTED) == Rubric(list(EXPECTED))
    assert Rubric(EXPECTED) != Rubric(EXPECTED[:2])
    assert Rubric(EXPECTED) != EXPECTED


# ---------------------------------------------------------------- grade


class RecordingGrader:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def grade(self, **kwargs: Any) -> EvaluationReport:
        self.calls.append(kwargs)
        return EvaluationReport(score=0.25)


def test_grade_delegates_to_grader() -> None:
    grader = RecordingGrader()
    rubric = Rubric(EXPECTED)
    result = asyncio.run(rubric.grade("answer", grader, query="q", reference_submission="ref"))
    assert result == EvaluationReport(score=0.25)
    assert grader.calls == [
        {"to_grade": "answer", "rubric": rubric.rubric, "query": "q",
         "reference_submission": "ref"}
    ]
    asyncio.run(rubric.grade(to_grade={"output": "o"}, grader=grader))
    assert grader.calls[1]["query"] is None and grader.calls[1]["to_grade"] == {"output": "o"}


def test_grade_requires_grader() -> None:
    with pytest.raises(TypeError, match="requires a grader"):
        asyncio.run(Rubric(EXPECTED).grade("x", None))  # type: ignore[arg-type]
