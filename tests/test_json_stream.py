"""A ``.json`` dataset or submissions file is read a value at a time (issue 33, "no size cliff"):
no whole-file limit, 64 MiB an item, items of an array kept as their places in the file, and the
same items and the same messages as parsing the whole text."""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from autorubric_local.core import json_stream
from autorubric_local.core.checks import decode_utf8, parse_json
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.data.jsonl_items import JsonlItems
from autorubric_local.data.submissions import load_grading_data

RUBRIC = Rubric.from_dict([{"name": "a", "weight": 1, "requirement": "x"}])
RUBRIC_JSON = [{"name": "a", "weight": 1, "requirement": "x"}]


def rows(n: int, size: int) -> list[dict[str, object]]:
    return [{"id": f"s{i}", "submission": f"{i} " + "x" * size, "metadata": {"n": i}} for i in range(n)]


def error_of(load, *args) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as caught:
        load(*args)
    return str(caught.value)


def test_a_json_file_over_64_mib_loads_like_the_same_jsonl(tmp_path: Path) -> None:
    items = rows(70, 2**20)  # 70 items of 1 MiB: over the old 64 MiB whole-file limit
    as_json = tmp_path / "big.json"
    as_json.write_text(json.dumps(items), encoding="utf-8")
    assert as_json.stat().st_size > 64 * 2**20
    as_jsonl = tmp_path / "big.jsonl"
    as_jsonl.write_text("".join(json.dumps(row) + "\n" for row in items), encoding="utf-8")
    streamed, lined = load_grading_data(as_json, RUBRIC), load_grading_data(as_jsonl, RUBRIC)
    assert isinstance(streamed.items, JsonlItems) and len(streamed) == 70
    assert streamed.items == lined.items
    assert streamed[69].id == "s69" and streamed[69].metadata == {"n": 69}
    dataset = tmp_path / "d.json"
    dataset.write_text(json.dumps({"items": items[:66], "rubric": RUBRIC_JSON}), encoding="utf-8")
    assert dataset.stat().st_size > 64 * 2**20
    loaded = RubricDataset.from_file(dataset)  # the rubric after the items: checked at the end
    assert [item.submission for item in loaded] == [row["submission"] for row in items[:66]]


def test_loading_a_json_array_holds_far_less_than_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(rows(400, 50_000)), encoding="utf-8")  # 20 MB
    tracemalloc.start()
    try:
        dataset = load_grading_data(path, RUBRIC)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(dataset) == 400 and dataset.items[399].id == "s399"
    assert held < 2_000_000, held  # each item's place is ~40 bytes
    assert peak < 8_000_000, peak  # text and tree of the whole file would be over 20 MB


def test_an_item_over_the_item_limit_is_refused_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_stream, "MAX_VALUE_BYTES", 2000)
    items = [{"submission": "ok"}, {"submission": "x" * 3000}, {"submission": "ok"}]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    assert error_of(load_grading_data, path, RUBRIC) == (
        f"{path}: item 1: item too large (0.0 MiB; the limit is 0.00190735 MiB an item)"
    )
    dataset = tmp_path / "d.json"
    dataset.write_text(json.dumps({"rubric": RUBRIC_JSON, "items": items}), encoding="utf-8")
    assert error_of(RubricDataset.from_file, dataset) == (
        f"{dataset}: item 1: item too large (0.0 MiB; the limit is 0.00190735 MiB an item)"
    )
    monkeypatch.setattr(json_stream, "_CHUNK", 500)  # the window grows past the limit before the item ends
    assert error_of(load_grading_data, path, RUBRIC) == (
        f"{path}: item 1: item too large (more than 0.00190735 MiB; the limit is 0.00190735 MiB an item)"
    )


TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
ITEM = st.fixed_dictionaries(
    {"submission": TEXT},
    optional={"id": st.sampled_from(["a", "b", 3, ""]), "query": TEXT, "metadata": st.dictionaries(TEXT, JSON_VALUE)},
)
DATASET_ITEM = st.fixed_dictionaries(
    {"submission": TEXT}, optional={"ground_truth": st.sampled_from([["MET"], ["Maybe"], None]), "id": TEXT}
)


def outcome(load, *args) -> tuple[str, object]:  # type: ignore[no-untyped-def]
    try:
        dataset = load(*args)
    except InputError as e:
        return "error", re.sub(r"\S+\.(json|txt):", "<file>:", str(e))
    return "ok", (dataset.rubric, dataset.name, [(item.id, item.submission, item.prompt, item.metadata,
                                                   item.ground_truth) for item in dataset])


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ITEM, max_size=5), st.sampled_from([None, 2]), st.integers(0, 2), st.sampled_from([1, 7, 2**20]))
def test_streaming_gives_what_parsing_the_whole_text_gives(
    tmp_path: Path, items: list[dict[str, object]], indent: int | None, cut: int, chunk: int
) -> None:
    """Against the whole-text readers (a ``.txt`` file; ``from_json``), with windows of 1 and 7
    bytes as well as the usual 1 MiB, on valid files and on files cut short by ``cut`` bytes."""
    json_stream._CHUNK, usual = chunk, json_stream._CHUNK
    try:
        data = json.dumps(items, indent=indent, ensure_ascii=False).encode()
        data = data[: len(data) - cut]
        streamed, whole = tmp_path / "s.json", tmp_path / "s.txt"
        streamed.write_bytes(data)
        whole.write_bytes(data)
        try:  # what the whole-text reader refuses the file for (a .txt file that is not JSON is read as JSONL)
            parse_json(decode_utf8(data, "<file>"))
            old = outcome(load_grading_data, whole, RUBRIC)
        except InputError as e:
            old = "error", str(e) if str(e).startswith("<file>") else f"<file>: invalid JSON: {e}"
        assert outcome(load_grading_data, streamed, RUBRIC) == old
        dataset = {"name": "d", "items": items, "rubric": RUBRIC_JSON}
        text = json.dumps(dataset, indent=indent, ensure_ascii=False)
        text = text[: len(text) - cut]
        streamed.write_text(text, encoding="utf-8")
        assert outcome(RubricDataset.from_file, streamed) == outcome(
            lambda: RubricDataset.from_json(text, source=str(streamed)))
    finally:
        json_stream._CHUNK = usual


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(DATASET_ITEM, max_size=4), st.permutations(["name", "rubric", "items"]))
def test_a_dataset_object_in_any_key_order_loads_as_parsed_whole(
    tmp_path: Path, items: list[dict[str, object]], order: list[str]
) -> None:
    values = {"name": "d", "rubric": RUBRIC_JSON, "items": items}
    text = json.dumps({key: values[key] for key in order})
    path = tmp_path / "d.json"
    path.write_text(text, encoding="utf-8")
    assert outcome(RubricDataset.from_file, path) == outcome(lambda: RubricDataset.from_json(text, source=str(path)))
    assert outcome(load_grading_data, path, None) == outcome(load_grading_data, _as_txt(path, text), None)


def _as_txt(path: Path, text: str) -> Path:
    whole = path.with_suffix(".txt")  # another suffix: read and parsed whole
    whole.write_text(text, encoding="utf-8")
    return whole
