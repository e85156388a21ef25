"""Strict rubric loading (issue 12): finite weights, known strategies, real booleans, unknown
fields with the closest known name, metadata, and the limits on size, depth and criteria."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from autorubric_local.core import checks
from autorubric_local.core.errors import AutorubricError, InputError, MissingFileError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import STRATEGIES_BY_SCALE, Criterion, CriterionOption

OPTIONS = [{"label": "Low", "value": 0.0}, {"label": "High", "value": 1.0}]


def criterion(**fields: Any) -> dict[str, Any]:
    return {"name": "clarity", "requirement": "Explains clearly", **fields}


def error_of(data: Any) -> str:
    with pytest.raises(InputError) as info:
        Rubric.from_dict(data)
    return str(info.value)


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    text = json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    "weight", [math.nan, math.inf, -math.inf, 1e6 + 1, -2e6, 10**400, True, False, "nan", "1e400", None]
)
def test_bad_weights_are_refused_naming_criterion_and_field(weight: Any) -> None:
    message = error_of([criterion(), criterion(name="depth", weight=weight)])
    assert message.startswith("Invalid criterion at index 1 ('depth'):\n  weight: ")


@pytest.mark.parametrize("weight", [1e6, -1e6, 0, -15, 2.5])
def test_weights_in_range_load(weight: Any) -> None:
    assert Rubric.from_dict([criterion(weight=weight)]).rubric[0].weight == float(weight)


@pytest.mark.parametrize("weight", ["3", " 10 ", "1_000", "-2.5"])
def test_numbers_written_as_strings_are_refused(weight: str) -> None:
    message = error_of([criterion(), criterion(name="depth", weight=weight)])
    assert message == (f"Invalid criterion at index 1 ('depth'):\n  weight: expected a number, got the string "
                       f"{weight!r}; write the number without quotes")


def test_an_option_value_written_as_a_string_is_refused() -> None:
    options = [{"label": "low", "value": 0.0}, {"label": "high", "value": "1"}]
    message = error_of([criterion(name="depth", options=options)])
    assert message.endswith("options.1.value: expected a number, got the string '1'; write the number without quotes")


def test_duplicate_criterion_names_are_refused_with_both_indices() -> None:
    message = error_of([criterion(name="cost"), criterion(name="speed"), criterion(name="cost")])
    assert message.startswith("Invalid criterion at index 2 ('cost'): the criterion at index 0 has the same name")
    # unnamed criteria (AutoRubric's default) are not names
    assert len(Rubric.from_dict([{"requirement": "a"}, {"requirement": "b"}]).rubric) == 2


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_nan_and_inf_in_files_are_refused(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"r{suffix}"
    text = '[{"requirement": "x", "weight": NaN}]' if suffix == ".json" else "- requirement: x\n  weight: .inf\n"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        Rubric.from_file(path)
    assert str(info.value).startswith(f"{path}: Invalid criterion at index 0:\n  weight: ")
    assert "finite number" in str(info.value)


@pytest.mark.parametrize("value", [math.nan, math.inf, True, "nan", 1e7])
def test_bad_option_values_are_refused(value: Any) -> None:
    options = [{"label": "Low", "value": value}, OPTIONS[1]]
    assert "options.0.value: " in error_of([criterion(options=options)])


def test_na_option_value_must_be_finite_too() -> None:
    options = [*OPTIONS, {"label": "N/A", "na": True, "value": math.inf}]
    assert "options.2.value: " in error_of([criterion(options=options)])
    options[2]["value"] = 5.0  # unbounded in [0, 1] for NA, as before
    assert Rubric.from_dict([criterion(options=options)]).rubric[0].options[2].value == 5.0


def test_criterion_api_refuses_the_same_values() -> None:
    with pytest.raises(ValidationError, match="finite number"):
        Criterion(requirement="x", weight=math.nan)
    with pytest.raises(ValidationError, match="finite number"):
        CriterionOption(label="a", value=True)
    with pytest.raises(ValidationError, match="weigth"):
        Criterion(requirement="x", weigth=1)  # type: ignore[call-arg]


# ---------------------------------------------------------------------------- strategies


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"aggregation": "bogus"}, "binary"),
        ({"aggregation": "median"}, "binary"),
        ({"aggregation": "majority", "options": OPTIONS}, "ordinal"),
        ({"aggregation": "weighted_mode", "options": OPTIONS}, "ordinal"),
        ({"aggregation": "mean", "options": OPTIONS, "scale_type": "nominal"}, "nominal"),
        ({"aggregation": "MODE", "options": OPTIONS, "scale_type": "nominal"}, "nominal"),
        ({"aggregation": 3}, None),
    ],
)
def test_unknown_or_wrong_family_strategy_fails_at_load(fields: dict[str, Any], kind: str | None) -> None:
    message = error_of([criterion(), criterion(name="depth", **fields)])
    assert message.startswith("Invalid criterion at index 1 ('depth'):\n  aggregation: ")
    if kind is not None:
        assert f"for a {kind} criterion (allowed: {', '.join(STRATEGIES_BY_SCALE[kind])})" in message


@pytest.mark.parametrize(
    ("kind", "strategy"), [(kind, s) for kind, strategies in STRATEGIES_BY_SCALE.items() for s in strategies]
)
def test_every_strategy_of_the_right_family_loads(kind: str, strategy: str) -> None:
    fields: dict[str, Any] = {"aggregation": strategy}
    if kind != "binary":
        fields.update(options=OPTIONS, scale_type=kind)
    assert Rubric.from_dict([criterion(**fields)]).rubric[0].aggregation == strategy


# ---------------------------------------------------------------------------- text, booleans


@pytest.mark.parametrize("requirement", ["", "   ", "\n\t"])
def test_blank_requirement_is_refused(requirement: str) -> None:
    assert "requirement: " in error_of([criterion(requirement=requirement)])


@pytest.mark.parametrize("label", ["", "  "])
def test_blank_option_label_is_refused(label: str) -> None:
    options = [{"label": label, "value": 0.0}, OPTIONS[1]]
    assert "options.0.label: " in error_of([criterion(options=options)])


@pytest.mark.parametrize("na", ["yes", "true", 1, 0, None])
def test_na_must_be_a_real_boolean(na: Any) -> None:
    options = [*OPTIONS, {"label": "N/A", "value": 0.0, "na": na}]
    assert "options.2.na: Input should be a valid boolean" in error_of([criterion(options=options)])


def test_yaml_booleans_still_load(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(
        "- requirement: x\n  options:\n    - {label: a, value: 0}\n    - {label: b, value: 1}\n"
        "    - {label: c, na: true}\n",
        encoding="utf-8",
    )
    assert Rubric.from_file(path).rubric[0].na_option_index == 2


# ---------------------------------------------------------------------------- unknown fields


def test_misspelt_weight_no_longer_becomes_the_default(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("- name: wrong_total\n  weigth: -15\n  requirement: Uses the wrong total\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        Rubric.from_file(path)
    assert str(info.value) == (
        f"{path}: Invalid criterion at index 0 ('wrong_total'):\n"
        "  unknown field 'weigth' (did you mean 'weight'?)"
    )


def test_misspelt_options_no_longer_make_a_binary_criterion() -> None:
    message = error_of([criterion(optoins=OPTIONS)])
    assert "unknown field 'optoins' (did you mean 'options'?)" in message


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([criterion(options=[{"lable": "a", "value": 0}, OPTIONS[1]])],
         "  options.0: unknown field 'lable' (did you mean 'label'?)"),
        ([criterion(colour="red")], "  unknown field 'colour' (allowed: weight, requirement, name"),
        ([{"name": "S", "critera": [criterion()]}], "unknown field 'critera' (did you mean 'criteria'?)"),
        ([{"nmae": "S", "criteria": [criterion()]}],
         "Invalid section at index 0: unknown field 'nmae' (did you mean 'name'?)"),
        ({"sectoins": []}, "'rubric' key; unknown field 'sectoins' (did you mean 'sections'?)"),
        ({"rubric": {"sections": [], "titel": "x"}}, "Invalid rubric format. unknown field 'titel'"),
        ({"rubric": [criterion()], "version": 2}, "Invalid rubric format. unknown field 'version'"),
        ({"rubric": [criterion()], "sections": []}, "Give either 'rubric' or 'sections', not both"),
    ],
)
def test_unknown_keys_name_the_closest_field(data: Any, expected: str) -> None:
    assert expected in error_of(data)


# ---------------------------------------------------------------------------- metadata


def test_metadata_is_kept_and_round_trips(tmp_path: Path) -> None:
    meta = {"author": "kim", "tags": ["energy", 3, None, True], "source": {"page": 12.5}}
    rubric = Rubric.from_dict([criterion(metadata=meta), criterion(name="plain")])
    assert rubric.rubric[0].metadata == meta and rubric.rubric[1].metadata is None
    assert rubric.to_list()[0]["metadata"] == meta and "metadata" not in rubric.to_list()[1]
    assert Rubric.from_dict(rubric.to_dict()) == rubric
    for name in ("r.json", "r.yaml"):
        assert Rubric.from_file(write(tmp_path, name, rubric.to_dict())) == rubric


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        (["a"], "expected a mapping (JSON object), got list"),
        ({"a": {1, 2}}, "value at ['a'] is not JSON-able (set)"),
        ({"a": [math.nan]}, "value at ['a'][0] is not a finite number"),
        ({"a": {1: "x"}}, "key 1 at ['a'] is not a string"),
        ({1: "x"}, "key 1 is not a string"),
    ],
)
def test_metadata_must_be_json_able(metadata: Any, expected: str) -> None:
    message = error_of([criterion(metadata=metadata)])
    assert "metadata" in message and expected in message


def test_yaml_dates_in_metadata_are_refused_with_the_path(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("- requirement: x\n  metadata: {added: 2024-05-01}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"metadata: .*value at \['added'\] is not JSON-able \(date\)"):
        Rubric.from_file(path)


def test_metadata_depth_limit() -> None:
    def nested(levels: int) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for _ in range(levels - 1):
            value = {"a": value}
        return value

    assert Rubric.from_dict([criterion(metadata=nested(checks.MAX_DEPTH))]).rubric[0].metadata
    assert "nested deeper than 64 levels" in error_of([criterion(metadata=nested(checks.MAX_DEPTH + 1))])
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    assert "refers to itself" in error_of([criterion(metadata=cyclic)])


# ---------------------------------------------------------------------------- files and limits


def test_missing_file_is_both_spec_and_project_error(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError) as info:
        Rubric.from_file(tmp_path / "nope.yaml")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, AutorubricError)


def test_directory_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "rubric.yaml"
    folder.mkdir()
    with pytest.raises(InputError, match=rf"^{folder}: is a directory, expected a file$"):
        Rubric.from_file(folder)


def test_non_utf8_names_file_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_bytes(b"- requirement: caf\xe9\n")
    with pytest.raises(InputError, match=rf"^{path}: not UTF-8 text \(invalid continuation byte at byte 18\)$"):
        Rubric.from_file(path)
    with pytest.raises(InputError, match=r"^x\.yaml: not UTF-8 text"):
        import io

        handle = io.BytesIO(b"- requirement: caf\xe9\n")
        handle.name = "x.yaml"
        Rubric.from_file(handle)


def test_file_objects_are_read_with_the_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    class Minimal:  # read() without a size argument still works
        name = "minimal.json"

        def read(self) -> str:
            return json.dumps([criterion()])

    assert len(Rubric.from_file(Minimal())) == 1  # type: ignore[arg-type]
    monkeypatch.setattr(checks, "MAX_FILE_BYTES", 10)
    monkeypatch.setattr("autorubric_local.core.rubric.MAX_FILE_BYTES", 10)
    handle = io.StringIO(json.dumps([criterion()]))
    handle.name = "big.json"
    with pytest.raises(InputError, match=r"^big\.json: file too large"):
        Rubric.from_file(handle)


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([criterion()]).encode())
    assert len(Rubric.from_file(path)) == 1


def test_file_over_the_size_limit_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as handle:
        handle.truncate(checks.MAX_FILE_BYTES + 1)  # sparse: no disk used, nothing read
    started = time.perf_counter()
    with pytest.raises(InputError, match=rf"^{path}: file too large \(64\.0 MiB; the limit is 64 MiB\)$"):
        Rubric.from_file(path)
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_deep_nesting_is_refused_without_recursion(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(InputError) as info:
        Rubric.from_file(path)
    assert str(info.value) == (
        f"{path}: Failed to parse {'JSON' if suffix == '.json' else 'YAML'} file: nested deeper than 64 levels"
    )
    with pytest.raises(InputError, match="nested deeper than 64 levels"):
        (Rubric.from_json if suffix == ".json" else Rubric.from_yaml)("[" * 65 + "]" * 65)


@pytest.mark.parametrize("loader", ["SafeLoader", "CSafeLoader"])
def test_yaml_nesting_gets_one_message_whichever_parser_refuses_first(
    monkeypatch: pytest.MonkeyPatch, loader: str
) -> None:
    # Our event scan stops at 65 levels; libyaml (CSafeLoader, PyYAML >= 6.0.4) has its own
    # limit of 1000 levels, which its read-ahead can reach first in a deep flow collection.
    if not hasattr(yaml, loader):
        pytest.skip(f"this PyYAML has no {loader} (built without libyaml)")
    monkeypatch.setattr(checks, "_LOADER", getattr(yaml, loader))
    for depth in (65, 1_001, 100_000):
        with pytest.raises(InputError, match="^nested deeper than 64 levels$"):
            checks.parse_yaml("judges: " + "[" * depth + "]" * depth)


def test_yaml_alias_cycles_and_bombs_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("- requirement: x\n  metadata: &m {self: *m}\n", encoding="utf-8")
    with pytest.raises(InputError, match="refers to itself"):
        Rubric.from_file(path)
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(InputError, match="more than 2000000 values"):
        Rubric.from_file(path)
    assert time.perf_counter() - started < 1.0


def test_criteria_limit_is_checked_before_building(monkeypatch: pytest.MonkeyPatch) -> None:
    over = [{"requirement": f"r{i}"} for i in range(checks.MAX_CRITERIA + 1)]
    built: list[Any] = []
    original = Criterion.model_validate
    monkeypatch.setattr(Criterion, "model_validate", lambda data: built.append(data) or original(data))
    assert error_of(over) == "too many criteria: 10001 (the limit is 10000)"
    sections = [{"name": "a", "criteria": over[:6000]}, {"name": "b", "criteria": over[6000:]}]
    assert error_of(sections) == "too many criteria: more than 10000 (the limit is 10000)"
    assert built == []
    assert len(Rubric.from_dict(over[:-1])) == checks.MAX_CRITERIA


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_100k_criteria_are_refused_in_well_under_2_seconds(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"huge{suffix}"
    if suffix == ".yaml":
        path.write_text("".join(f"- name: c{i}\n  weight: 1\n  requirement: r{i}\n" for i in range(100_000)))
    else:
        path.write_text(json.dumps([{"name": f"c{i}", "weight": 1, "requirement": f"r{i}"} for i in range(100_000)]))
    started = time.perf_counter()
    with pytest.raises(InputError, match=rf"^{path}: too many criteria: "):
        Rubric.from_file(path)
    assert time.perf_counter() - started < 1.5  # measured 0.2 s (YAML), 0.3 s (JSON) on 2 cores


# ---------------------------------------------------------------------------- checks helpers


def test_unknown_field_message() -> None:
    assert checks.unknown_field("weigth", ["weight", "name"]) == "unknown field 'weigth' (did you mean 'weight'?)"
    assert checks.unknown_field("zzz", ["a", "b"]) == "unknown field 'zzz' (allowed: a, b)"
    assert checks.unknown_field(7, ["a"]) == "unknown field 7 (allowed: a)"


def test_jsonl_lines_split_on_newline_only() -> None:
    text = '{"a": "x\u2028y\x85z\u2029"}\r\n\n  \t\n{"b": 1}'
    assert list(checks.jsonl_lines(text)) == [(1, '{"a": "x\u2028y\x85z\u2029"}\r'), (4, '{"b": 1}')]


def test_shared_aliases_are_measured_once() -> None:
    leaf: list[Any] = list(range(10))
    level: Any = leaf
    for _ in range(6):
        level = [level] * 10  # 10**7 values when expanded, 70 distinct containers
    started = time.perf_counter()
    checks.check_nesting(level)  # no value limit: depth 7 is fine
    with pytest.raises(InputError, match="more than 100 values"):
        checks.check_nesting(level, max_values=100)
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("depth", [65, 100_000])
def test_judge_config_and_preset_files_get_the_same_yaml_limits(tmp_path: Path, depth: int) -> None:
    """LLMConfig.from_yaml and preset files used plain yaml.safe_load (issue 33's leftovers):
    no nesting limit of ours, and a parser's own error or RecursionError at great depth."""
    from autorubric_local.judges import presets
    from autorubric_local.judges.config import LLMConfig

    path = tmp_path / "judge.yaml"
    path.write_text("model: [" + "[" * depth + "]" * depth + "]", encoding="utf-8")
    with pytest.raises(InputError) as info:
        LLMConfig.from_yaml(path)
    assert str(info.value) == f"{path}: invalid YAML: nested deeper than 64 levels"
    preset = tmp_path / "deep.yaml"
    preset.write_text("name: deep\nweights: [" + "[" * depth + "]" * depth + "]", encoding="utf-8")
    with pytest.raises(InputError) as info:
        presets._load_preset(preset)
    assert str(info.value) == f"{preset}: invalid YAML: nested deeper than 64 levels"
