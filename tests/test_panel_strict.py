"""Strict judge-panel files (issue 12): unknown keys with the closest known name, finite
numbers, real booleans and strings, per-judge metadata, and the shared file limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from autorubric_local.core import checks
from autorubric_local.core.errors import InputError
from autorubric_local.graders.panel_file import load_judges_file


def error_of(path: Path) -> str:
    with pytest.raises(InputError) as info:
        load_judges_file(path)
    return str(info.value)


def panel(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "judges.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_judge_metadata_is_kept(tmp_path: Path) -> None:
    path = panel(tmp_path, "judges:\n  - {judge_id: a, model: m, metadata: {team: qa, runs: [1, 2]}}\n  - model: m\n")
    loaded = load_judges_file(path)
    assert loaded.metadata == {"a": {"team": "qa", "runs": [1, 2]}}
    assert [j.judge_id for j in loaded.judges] == ["a", "m"]


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("{model: m, wieght: 2}", "judges[0]: unknown field 'wieght' (did you mean 'weight'?)"),
        ("{modle: m}", "judges[0]: unknown field 'modle' (did you mean 'model'?)"),
        ("{model: m, weight: .nan}", "judges[0]: field 'weight': expected a finite number, got nan"),
        ("{model: m, weight: 1.0e+400}", "judges[0]: field 'weight': expected a finite number, got inf"),
        ("{model: m, weight: true}", "judges[0]: field 'weight': expected a finite number in"),
        ("{model: m, weight: '2'}", "judges[0]: field 'weight': expected a finite number in"),
        ("{model: m, weight: 2000000}", "judges[0]: field 'weight': expected a finite number in"),
        ("{model: m, temperature: .inf}", "judges[0]: field 'temperature': expected a finite number"),
        ("{model: m, cache_enabled: 'yes'}", "judges[0]: field 'cache_enabled': Input should be a valid boolean"),
        ("{model: m, max_tokens: '12'}", "judges[0]: field 'max_tokens': Input should be a valid integer"),
        ("{model: 12}", "judges[0]: field 'model': Input should be a valid string"),
        ("{model: m, judge_id: 7}", "judges[0]: field 'judge_id': expected a string"),
        ("{model: m, judge_id: ' '}", "judges[0]: field 'judge_id': must not be empty"),
        ("{model: m, system_prompt: [a]}", "judges[0]: field 'system_prompt': expected a string"),
        ("{model: m, metadata: [a]}", "judges[0]: field 'metadata': expected a mapping"),
        ("{model: m, engine: x}", "judges[0]: unknown field 'engine'"),
    ],
)
def test_judge_entries_are_strict(tmp_path: Path, entry: str, expected: str) -> None:
    path = panel(tmp_path, f"judges:\n  - {entry}\n")
    assert error_of(path).startswith(f"{path}: {expected}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("judges: [{model: m}]\naggregaton: any\n", "unknown field 'aggregaton' (did you mean 'aggregation'?)"),
        ("judges: [{model: m}]\naggregation: [any]\n", "field 'aggregation' must be one of"),
        ("judges: [{model: m}]\npermutations: true\n", "field 'permutations' must be one of"),
        ("judges: [{model: m}\n", "not valid YAML/JSON: "),
        ("", "expected a mapping with a non-empty list 'judges'"),
        ("judges: &j [{model: m, metadata: {a: *j}}]\n", "not valid YAML/JSON: refers to itself"),
    ],
)
def test_panel_file_errors_name_the_file(tmp_path: Path, text: str, expected: str) -> None:
    path = panel(tmp_path, text)
    assert error_of(path).startswith(f"{path}: {expected}")


def test_a_valid_panel_still_loads(tmp_path: Path) -> None:
    path = panel(
        tmp_path,
        "judges:\n  - {judge_id: a, model: m, weight: 2, temperature: 0, thinking: low, device: cpu}\n"
        "  - {judge_id: b, model: m, weight: 0.5, cache_enabled: false}\n"
        "aggregation: weighted\nnominal_aggregation: unanimous\n",
    )
    loaded = load_judges_file(path)
    assert [(j.judge_id, j.weight) for j in loaded.judges] == [("a", 2.0), ("b", 0.5)]
    assert loaded.judges[0].llm_config.thinking == "low"
    assert loaded.settings == {"aggregation": "weighted", "nominal_aggregation": "unanimous"}


def test_unreadable_panel_files_name_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "judges.yaml"
    folder.mkdir()
    assert error_of(folder) == f"{folder}: is a directory, expected a file"
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"judges: [{model: caf\xe9}]")
    assert error_of(latin) == f"{latin}: not UTF-8 text (invalid continuation byte at byte 20)"
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(checks.MAX_FILE_BYTES + 1)
    assert error_of(big).startswith(f"{big}: file too large")
    deep = tmp_path / "deep.yaml"
    deep.write_text("judges: " + "[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert error_of(deep) == f"{deep}: not valid YAML/JSON: nested deeper than 64 levels"


def test_a_field_the_backend_cannot_honour_fails_when_the_panel_loads(tmp_path: Path) -> None:
    from autorubric_local.core.errors import InputError
    from autorubric_local.graders.panel_file import load_judges_file

    path = tmp_path / "judges.yaml"
    path.write_text("judges:\n  - judge_id: a\n    model: smollm2-135m-instruct\n    api_base: http://localhost:1\n")
    with pytest.raises(InputError) as refused:
        load_judges_file(path)
    assert str(path) in str(refused.value)
    assert "LLMConfig.api_base is not supported by the auto (transformers or llamacpp) backend" in str(refused.value)
