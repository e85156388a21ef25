"""Tests for autorubric_local.data.dataset: DataItem, RubricDataset, JSON/JSONL formats, validation."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import (
    CannotAssessStrategy,
    Criterion,
    CriterionOption,
    CriterionVerdict,
)
from autorubric_local.data.dataset import DataItem, RubricDataset, parse_ground_truth

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "autorubric-examples"
MET, UNMET, CA = CriterionVerdict.MET, CriterionVerdict.UNMET, CriterionVerdict.CANNOT_ASSESS


def shared_file(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"shared AutoRubric example {name} not found at {path}")
    return path


def make_rubric() -> Rubric:
    return Rubric(
        [
            Criterion(name="accuracy", weight=10.0, requirement="Factually correct"),
            Criterion(
                name="clarity",
                weight=5.0,
                requirement="How clear is it?",
                scale_type="ordinal",
                options=[
                    CriterionOption(label="Clear", value=1.0),
                    CriterionOption(label="Unclear", value=0.0),
                ],
            ),
            Criterion(name="errors", weight=-5.0, requirement="Contains factual errors"),
        ]
    )


def rubric_json() -> list[dict[str, Any]]:
    return [
        {"name": "accuracy", "weight": 10.0, "requirement": "Factually correct"},
        {
            "name": "clarity",
            "weight": 5.0,
            "requirement": "How clear is it?",
            "scale_type": "ordinal",
            "options": [
                {"label": "Clear", "value": 1.0, "na": False},
                {"label": "Unclear", "value": 0.0, "na": False},
            ],
        },
        {"name": "errors", "weight": -5.0, "requirement": "Contains factual errors"},
    ]


def good_item(**overrides: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "submission": "Water boils at 100 C at sea level.",
        "description": "good",
        "ground_truth": ["MET", "Clear", "UNMET"],
    }
    item.update(overrides)
    return item


def dataset_json(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "demo",
        "prompt": "At what temperature does water boil?",
        "rubric": rubric_json(),
        "items": [good_item()],
    }
    data.update(overrides)
    return data


def full_dataset() -> RubricDataset:
    own = Rubric([Criterion(name="relevance", weight=2.0, requirement="On topic")])
    dataset = RubricDataset(
        prompt="Global prompt",
        rubric=make_rubric(),
        name="demo",
        reference_submission="Global reference",
    )
    dataset.add_item("first", description="d1", ground_truth=[MET, "Clear", UNMET], id="a")
    dataset.add_item("second", ground_truth=["CANNOT_ASSESS", "unclear", "MET"])
    dataset.add_item(
        "third",
        rubric=own,
        ground_truth=["UNMET"],
        reference_submission="Item reference",
        prompt="Item prompt",
        id="c",
    )
    dataset.add_item("fourth ünïcode")
    return dataset


# ---------------------------------------------------------------------------- building


def test_add_item_len_iter_getitem() -> None:
    dataset = full_dataset()
    assert len(dataset) == 4
    assert [item.submission for item in dataset] == [
        "first",
        "second",
        "third",
        "fourth ünïcode",
    ]
    assert dataset[0].id == "a"
    assert dataset[1].id is None
    assert dataset[3].ground_truth is None
    assert dataset[3].description == ""


def test_binary_strings_become_verdicts_and_labels_are_kept() -> None:
    dataset = full_dataset()
    assert dataset[1].ground_truth == [CA, "unclear", MET]
    assert isinstance(dataset[1].ground_truth[0], CriterionVerdict)
    assert isinstance(dataset[1].ground_truth[2], CriterionVerdict)


def test_constructor_normalises_items() -> None:
    item = DataItem("x", ground_truth=["MET", "Clear", "UNMET"])
    dataset = RubricDataset("p", make_rubric(), items=[item])
    assert dataset[0].ground_truth == [MET, "Clear", UNMET]
    assert isinstance(dataset[0].ground_truth[0], CriterionVerdict)


def test_data_item_is_immutable() -> None:
    item = DataItem("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.submission = "y"  # type: ignore[misc]
    assert dataclasses.replace(item, id="z").id == "z"


def test_data_item_with_own_rubric_checks_ground_truth() -> None:
    message = r"field 'ground_truth': has 1 value\(s\) but the rubric has 3"
    with pytest.raises(InputError, match=message):
        DataItem("x", ground_truth=["MET"], rubric=make_rubric())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"submission": 3}, "field 'submission': expected a string, got number"),
        ({"submission": "x", "description": None}, "field 'description': expected a string"),
        ({"submission": "x", "id": 7}, "field 'id': expected a string or null, got number"),
        (
            {"submission": "x", "prompt": ["q"]},
            "field 'prompt': expected a string or null, got array",
        ),
        ({"submission": "x", "rubric": [1]}, "field 'rubric': expected a Rubric or None, got list"),
        (
            {"submission": "x", "ground_truth": "MET"},
            "field 'ground_truth': expected a list or null",
        ),
    ],
)
def test_data_item_field_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        DataItem(**kwargs)


# ---------------------------------------------------------------------------- precedence


def test_item_level_values_take_precedence() -> None:
    dataset = full_dataset()
    assert dataset.get_item_rubric(0) is dataset.rubric
    assert dataset.get_item_rubric(2) is dataset[2].rubric
    assert dataset.get_item_reference_submission(0) == "Global reference"
    assert dataset.get_item_reference_submission(2) == "Item reference"
    assert dataset.get_item_prompt(0) == "Global prompt"
    assert dataset.get_item_query(0) == "Global prompt"
    assert dataset.get_item_query(2) == "Item prompt"


def test_no_global_values_fall_back_to_none() -> None:
    dataset = RubricDataset(None, make_rubric(), items=[DataItem("x")])
    assert dataset.get_item_query(0) is None
    assert dataset.get_item_reference_submission(0) is None


def test_per_item_rubrics_without_global_rubric() -> None:
    one = Rubric([Criterion(name="a", weight=1.0, requirement="A")])
    two = Rubric([Criterion(name="b", weight=1.0, requirement="B")])
    dataset = RubricDataset("p", None, items=[DataItem("x", rubric=one), DataItem("y", rubric=two)])
    assert dataset.get_item_rubric(1) is two
    loaded = RubricDataset.from_json(dataset.to_json())
    assert loaded.rubric is None
    assert loaded.get_item_rubric(0) == one


def test_missing_rubric_is_an_error_everywhere(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="item 0: field 'rubric': the item has no rubric"):
        RubricDataset("p", None, items=[DataItem("x")])
    dataset = RubricDataset("p", None)
    with pytest.raises(InputError, match="item 0: field 'rubric': the item has no rubric"):
        dataset.add_item("x")
    assert len(dataset) == 0
    path = tmp_path / "norubric.json"
    path.write_text(json.dumps({"prompt": "p", "rubric": None, "items": [{"submission": "x"}]}))
    with pytest.raises(InputError) as info:
        RubricDataset.from_file(path)
    assert str(info.value) == (
        f"{path}: item 0: field 'rubric': the item has no rubric and the dataset has no "
        "global rubric"
    )


def test_get_item_rubric_after_direct_mutation() -> None:
    dataset = RubricDataset("p", None, items=[DataItem("x", rubric=make_rubric())])
    dataset.items.append(DataItem("y"))
    with pytest.raises(InputError, match="item 1: field 'rubric'"):
        dataset.get_item_rubric(1)


# ---------------------------------------------------------------------------- scoring


def test_compute_weighted_score_delegates_to_rubric() -> None:
    dataset = full_dataset()
    rubric = make_rubric()
    verdicts: list[CriterionVerdict | str] = [MET, "Unclear", CA]
    for strategy in CannotAssessStrategy:
        for normalize in (True, False):
            assert dataset.compute_weighted_score(
                verdicts, normalize, cannot_assess_strategy=strategy, partial_credit=0.3
            ) == rubric.compute_score(
                verdicts, normalize=normalize, cannot_assess_strategy=strategy, partial_credit=0.3
            )
    assert dataset.compute_weighted_score([MET, "Clear", UNMET]) == pytest.approx(1.0)
    assert dataset.compute_weighted_score([UNMET], rubric=dataset.get_item_rubric(2)) == 0.0


def test_compute_weighted_score_without_rubric() -> None:
    dataset = RubricDataset("p", None)
    with pytest.raises(InputError, match="no rubric given"):
        dataset.compute_weighted_score([MET])


# ---------------------------------------------------------------------------- serialisation


def test_json_round_trip() -> None:
    dataset = full_dataset()
    loaded = RubricDataset.from_json(dataset.to_json())
    assert loaded == dataset
    assert loaded.to_json() == dataset.to_json()
    assert RubricDataset.from_json(dataset.to_json(indent=None)) == dataset


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_file_round_trip(tmp_path: Path, suffix: str) -> None:
    dataset = full_dataset()
    path = tmp_path / f"data{suffix}"
    dataset.to_file(path)
    assert RubricDataset.from_file(path) == dataset
    assert RubricDataset.from_file(str(path)) == dataset


def test_jsonl_layout(tmp_path: Path) -> None:
    text = full_dataset().to_jsonl()
    lines = text.splitlines()
    assert len(lines) == 5
    header = json.loads(lines[0])
    assert set(header) == {"name", "prompt", "rubric", "reference_submission"}
    assert json.loads(lines[1])["id"] == "a"
    assert text.endswith("\n")
    assert RubricDataset.from_jsonl("\n" + text + "\n\n") == full_dataset()


def test_to_dict_uses_autorubric_format() -> None:
    data = full_dataset().to_dict()
    assert list(data) == ["name", "prompt", "rubric", "reference_submission", "items"]
    assert list(data["rubric"][0]) == ["name", "weight", "requirement"]
    assert list(data["rubric"][1]) == ["name", "weight", "requirement", "scale_type", "options"]
    assert data["rubric"][1]["options"][0] == {"label": "Clear", "value": 1.0, "na": False}
    first, second, third, fourth = data["items"]
    assert first == {
        "id": "a",
        "submission": "first",
        "description": "d1",
        "ground_truth": ["MET", "Clear", "UNMET"],
    }
    assert "id" not in second
    assert second["ground_truth"] == ["CANNOT_ASSESS", "unclear", "MET"]
    assert third["rubric"] == [{"name": "relevance", "weight": 2.0, "requirement": "On topic"}]
    assert third["prompt"] == "Item prompt"
    assert third["reference_submission"] == "Item reference"
    assert fourth["ground_truth"] is None


def test_description_is_optional_on_load() -> None:
    data = dataset_json(items=[{"submission": "a"}, {"submission": "b", "description": None}])
    dataset = RubricDataset.from_dict(data)
    assert [item.description for item in dataset] == ["", ""]


def test_from_dict_rubric_override_keeps_per_item_rubrics() -> None:
    own = [{"name": "relevance", "weight": 2.0, "requirement": "On topic"}]
    override = Rubric([Criterion(name="only", weight=1.0, requirement="Only criterion")])
    data = dataset_json(
        items=[{"submission": "a", "ground_truth": ["MET"]}, {"submission": "b", "rubric": own}]
    )
    dataset = RubricDataset.from_dict(data, rubric=override)
    assert dataset.rubric == override
    assert dataset.get_item_rubric(0) == override
    assert dataset.get_item_rubric(1) == Rubric.from_dict(own)


# ---------------------------------------------------------------------------- shared examples


def test_essay_example_loads_unchanged() -> None:
    path = shared_file("essay_grading_dataset.json")
    dataset = RubricDataset.from_file(path)
    assert dataset.name == "industrial-revolution-essay-grading"
    assert len(dataset) == 11
    assert dataset.rubric is not None
    assert [c.weight for c in dataset.rubric.rubric] == [30.0, 30.0, 12.0, 8.0, -15.0]
    assert all(isinstance(v, CriterionVerdict) for item in dataset for v in item.ground_truth or [])
    assert sum(v is CA for item in dataset for v in item.ground_truth or []) == 4
    assert json.loads(dataset.to_json()) == json.loads(path.read_text(encoding="utf-8"))


def test_ricechem_example_loads_and_writes_back_byte_for_byte(tmp_path: Path) -> None:
    path = shared_file("q1.json")
    dataset = RubricDataset.from_file(path)
    assert len(dataset) == 327
    assert len(dataset.rubric) == 8  # type: ignore[arg-type]
    scores = [
        dataset.compute_weighted_score(item.ground_truth or [], normalize=False) for item in dataset
    ]
    assert sum(scores) / len(scores) == pytest.approx(5.09, abs=0.005)  # ricechem-README, Q1
    out = tmp_path / "q1.json"
    dataset.to_file(out)
    assert out.read_bytes() == path.read_bytes()


# ---------------------------------------------------------------------------- validation errors


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "expected a JSON object with 'rubric' and 'items', got array"),
        ({"prompt": "p", "items": []}, "field 'rubric': missing (use null when every item"),
        (dataset_json(rubrik=[]), "unknown field 'rubrik' (did you mean 'rubric'?)"),
        (
            dataset_json(version=2),
            "unknown field 'version' (allowed: name, prompt, rubric, reference_submission, "
            "items, metadata)",
        ),
        (
            dataset_json(rubric="accuracy"),
            "field 'rubric': expected an array of criteria or an object, got string",
        ),
        (dataset_json(rubric=[{"weight": 1.0}]), "field 'rubric': Invalid criterion at index 0"),
        (dataset_json(rubric=[]), "field 'rubric': No criteria found"),
        (dataset_json(name=5), "field 'name': expected a string or null, got number"),
        (dataset_json(prompt=True), "field 'prompt': expected a string or null, got boolean"),
        (
            dataset_json(reference_submission={}),
            "field 'reference_submission': expected a string or null",
        ),
        (dataset_json(items={"submission": "x"}), "field 'items': expected an array, got object"),
        (dataset_json(items=[good_item(), "text"]), "item 1: expected a JSON object, got string"),
        (
            dataset_json(items=[good_item(groundtruth=[])]),
            "item 0: unknown field 'groundtruth' (did you mean 'ground_truth'?)",
        ),
        (dataset_json(items=[{"description": "no text"}]), "item 0: field 'submission': missing"),
        (
            dataset_json(items=[good_item(submission=42)]),
            "item 0: field 'submission': expected a string, got number",
        ),
        (
            dataset_json(items=[good_item(description=1)]),
            "item 0: field 'description': expected a string, got number",
        ),
        (
            dataset_json(items=[good_item(id=3)]),
            "item 0: field 'id': expected a string or null, got number",
        ),
        (
            dataset_json(items=[good_item(prompt=3)]),
            "item 0: field 'prompt': expected a string or null",
        ),
        (
            dataset_json(items=[good_item(reference_submission=[])]),
            "item 0: field 'reference_submission': expected a string or null, got array",
        ),
        (
            dataset_json(items=[good_item(ground_truth="MET")]),
            "item 0: field 'ground_truth': expected a list or null, got string",
        ),
        (
            dataset_json(items=[good_item(ground_truth=["MET", "Clear"])]),
            "item 0: field 'ground_truth': has 2 value(s) but the rubric has 3 criteria",
        ),
        (
            dataset_json(items=[good_item(ground_truth=["YES", "Clear", "MET"])]),
            "item 0: field 'ground_truth'[0]: verdict 'YES' not valid for binary criterion "
            "'accuracy' (expected 'MET', 'UNMET' or 'CANNOT_ASSESS')",
        ),
        (
            dataset_json(items=[good_item(ground_truth=["met", "Clear", "MET"])]),
            "item 0: field 'ground_truth'[0]: verdict 'met' not valid",
        ),
        (
            dataset_json(items=[good_item(ground_truth=[1, "Clear", "MET"])]),
            "item 0: field 'ground_truth'[0]: expected one of 'MET', 'UNMET' or 'CANNOT_ASSESS' "
            "for criterion 'accuracy', got number",
        ),
        (
            dataset_json(items=[good_item(), good_item(ground_truth=["MET", "Maybe", "MET"])]),
            "item 1: field 'ground_truth'[1]: label 'Maybe' not an option of criterion 'clarity' "
            "(options: 'Clear', 'Unclear')",
        ),
        (
            dataset_json(items=[good_item(ground_truth=["MET", 2, "MET"])]),
            "item 0: field 'ground_truth'[1]: expected an option label for criterion 'clarity', "
            "got number",
        ),
        (
            dataset_json(items=[good_item(rubric=[{"requirement": "x", "weight": "heavy"}])]),
            "item 0: field 'rubric': Invalid criterion at index 0",
        ),
        (
            dataset_json(
                items=[good_item(rubric=[{"name": "r", "weight": 1, "requirement": "x"}])]
            ),
            "item 0: field 'ground_truth': has 3 value(s) but the rubric has 1 criteria",
        ),
        (
            dataset_json(items=[good_item(id="a"), good_item(id="b"), good_item(id="a")]),
            "item 2: field 'id': duplicate id 'a' (first used by item 0)",
        ),
        (
            dataset_json(rubric=None, items=[good_item()]),
            "item 0: field 'rubric': the item has no rubric and the dataset has no global rubric",
        ),
    ],
)
def test_validation_errors_name_file_item_and_field(
    tmp_path: Path, data: Any, message: str
) -> None:
    path = tmp_path / "q1.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError) as info:
        RubricDataset.from_file(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ")
    assert message in text
    # the same data without a file: same message, no file name
    with pytest.raises(InputError) as info:
        RubricDataset.from_dict(data)
    assert message in str(info.value)
    assert str(path) not in str(info.value)


def test_invalid_json_names_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"rubric": [', encoding="utf-8")
    with pytest.raises(InputError, match=r"broken\.json: invalid JSON: "):
        RubricDataset.from_file(path)
    with pytest.raises(InputError, match="^invalid JSON: "):
        RubricDataset.from_json("{")


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.json: file not found"):
        RubricDataset.from_file(tmp_path / "missing.json")
    binary = tmp_path / "latin1.json"
    binary.write_bytes(b'{"name": "\xe9"}')
    with pytest.raises(InputError, match=r"latin1\.json: not UTF-8 text"):
        RubricDataset.from_file(binary)


def test_all_problems_reported_together(tmp_path: Path) -> None:
    data = dataset_json(
        items=[
            good_item(),
            {"submission": 1},
            good_item(ground_truth=["MET"]),
            good_item(ground_truth=["MET", "Maybe", "UNMET"]),
        ]
    )
    path = tmp_path / "q1.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError) as info:
        RubricDataset.from_file(path)
    lines = str(info.value).splitlines()
    assert len(lines) == 3
    assert all(line.startswith(f"{path}: item ") for line in lines)
    assert [line.split(": ")[1] for line in lines] == ["item 1", "item 2", "item 3"]


def test_many_problems_are_truncated() -> None:
    data = dataset_json(items=[{"submission": i} for i in range(25)])
    with pytest.raises(InputError) as info:
        RubricDataset.from_dict(data, source="big.json")
    lines = str(info.value).splitlines()
    assert len(lines) == 21
    assert lines[-1] == "big.json: ... and 5 more problem(s)"


def test_jsonl_errors_name_line_and_item(tmp_path: Path) -> None:
    header = json.dumps({"prompt": "p", "rubric": rubric_json()})
    path = tmp_path / "data.jsonl"
    path.write_text(
        header
        + "\n\n"
        + json.dumps(good_item())
        + "\n"
        + json.dumps(good_item(ground_truth=["X", "Clear", "MET"])),
        encoding="utf-8",
    )
    with pytest.raises(InputError) as info:
        RubricDataset.from_file(path)
    assert str(info.value) == (
        f"{path}: line 4 (item 1): field 'ground_truth'[0]: verdict 'X' not valid for binary "
        "criterion 'accuracy' (expected 'MET', 'UNMET' or 'CANNOT_ASSESS')"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "d.jsonl: empty file: expected a header line with 'rubric'"),
        ("[1]\n", "d.jsonl: line 1: expected a header object, got array"),
        ('{"prompt": "p"}\n', "d.jsonl: line 1: field 'rubric': missing"),
        (
            '{"rubric": null, "items": []}\n',
            "d.jsonl: line 1: unknown field 'items' (allowed: name, prompt, rubric, "
            "reference_submission, metadata)",
        ),
        ('{"rubric": null}\n{"submission": \n', "d.jsonl: line 2: invalid JSON: "),
    ],
)
def test_jsonl_header_errors(text: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        RubricDataset.from_jsonl(text, source="d.jsonl")
    assert str(info.value).startswith(message)


def test_add_item_errors_leave_dataset_unchanged() -> None:
    dataset = RubricDataset("p", make_rubric())
    dataset.add_item("x", id="a")
    with pytest.raises(InputError, match=r"item 1: field 'ground_truth'\[1\]: label 'Maybe'"):
        dataset.add_item("y", ground_truth=["MET", "Maybe", "MET"])
    message = r"item 1: field 'id': duplicate id 'a' \(first used by item 0\)"
    with pytest.raises(InputError, match=message):
        dataset.add_item("y", id="a")
    assert len(dataset) == 1


def test_constructor_reports_duplicate_ids() -> None:
    with pytest.raises(InputError, match="item 1: field 'id': duplicate id 'x'"):
        RubricDataset("p", make_rubric(), items=[DataItem("a", id="x"), DataItem("b", id="x")])


def test_constructor_field_types() -> None:
    with pytest.raises(InputError, match="field 'prompt': expected a string or null, got number"):
        RubricDataset(3, make_rubric())  # type: ignore[arg-type]
    with pytest.raises(InputError, match="field 'rubric': expected a Rubric or None, got list"):
        RubricDataset("p", [])  # type: ignore[arg-type]
    with pytest.raises(InputError, match="item 0: expected a DataItem, got str"):
        RubricDataset("p", make_rubric(), items=["x"])  # type: ignore[list-item]


def test_parse_ground_truth_is_usable_on_its_own() -> None:
    assert parse_ground_truth(("MET", " clear ", CA), make_rubric()) == [MET, " clear ", CA]
    with pytest.raises(InputError, match="label 'CA' not an option of criterion 'clarity'"):
        parse_ground_truth(["MET", "CA", "MET"], make_rubric())


def test_unnamed_criteria_are_numbered_in_messages() -> None:
    rubric = Rubric(
        [Criterion(weight=1.0, requirement="a"), Criterion(weight=1.0, requirement="b")]
    )
    with pytest.raises(InputError, match="binary criterion 'C2'"):
        parse_ground_truth(["MET", "maybe"], rubric)


# ---- split_train_test ----------------------------------------------------------------------------


def split_dataset() -> RubricDataset:
    """12 MET/Clear/UNMET, 6 UNMET/Unclear/UNMET, 3 without ground truth (21 items)."""
    dataset = RubricDataset(prompt="Q", rubric=make_rubric(), name="split")
    for i in range(12):
        dataset.add_item(f"good {i}", ground_truth=["MET", "Clear", "UNMET"])
    for i in range(6):
        dataset.add_item(f"bad {i}", ground_truth=["UNMET", "Unclear", "UNMET"])
    for i in range(3):
        dataset.add_item(f"unlabelled {i}")
    return dataset


def strata_counts(dataset: RubricDataset) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in dataset:
        key = item.submission.split()[0]
        counts[key] = counts.get(key, 0) + 1
    return counts


def test_stratified_split_keeps_proportions() -> None:
    dataset = split_dataset()
    train, test = dataset.split_train_test(n_train=7, stratify=True, seed=1)
    assert len(train) == 7 and len(test) == 14
    assert strata_counts(train) == {"good": 4, "bad": 2, "unlabelled": 1}
    assert strata_counts(test) == {"good": 8, "bad": 4, "unlabelled": 2}
    assert {i.submission for i in train}.isdisjoint({i.submission for i in test})
    assert len(dataset) == 21  # unchanged


def test_split_largest_remainder_and_order() -> None:
    dataset = split_dataset()
    train, _ = dataset.split_train_test(n_train=10, seed=3)
    counts = strata_counts(train)
    # exact shares 5.71 / 2.86 / 1.43 -> floors 5 / 2 / 1; the two left over go to the largest
    # remainders: "bad" (0.86) and "good" (0.71)
    assert counts == {"good": 6, "bad": 3, "unlabelled": 1}
    positions = [dataset.items.index(item) for item in train]
    assert positions == sorted(positions)  # original order kept
    assert train.rubric == dataset.rubric and train.prompt == "Q" and train.name == "split"


def test_split_is_reproducible_with_a_seed() -> None:
    dataset = split_dataset()
    first = dataset.split_train_test(8, seed=42)
    second = dataset.split_train_test(8, seed=42)
    assert [i.submission for i in first[0]] == [i.submission for i in second[0]]
    others = {tuple(i.submission for i in dataset.split_train_test(8, seed=s)[0]) for s in range(10)}
    assert len(others) > 1


def test_unstratified_split_sizes() -> None:
    train, test = split_dataset().split_train_test(n_train=20, stratify=False, seed=0)
    assert len(train) == 20 and len(test) == 1


def test_split_per_item_rubrics_are_kept() -> None:
    own = Rubric([Criterion(name="own", weight=1.0, requirement="r")])
    dataset = RubricDataset(prompt=None, rubric=None)
    for i in range(4):
        dataset.add_item(f"s{i}", rubric=own, ground_truth=["MET" if i % 2 else "UNMET"], prompt=f"p{i}")
    train, test = dataset.split_train_test(2, seed=0)
    assert sorted(i.ground_truth[0].value for i in train) == ["MET", "UNMET"]
    assert all(i.rubric == own and i.prompt for i in [*train, *test])


@pytest.mark.parametrize("n_train", [0, 21, 22, -1, 2.5, True, "3"])
def test_split_n_train_out_of_range(n_train: Any) -> None:
    with pytest.raises(InputError, match=r"n_train must be an integer with 0 < n_train < 21 \(the dataset has 21 items\)"):
        split_dataset().split_train_test(n_train)
