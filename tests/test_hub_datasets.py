"""A Hugging Face dataset in the local cache, named ``hf:OWNER/NAME[:SPLIT]`` (issue 54): graded by
`grade` and compared by `compare` as the same rows in a Parquet file are, read from the hub
cache with no request leaving the machine; a dataset not in the cache, a missing split or an
unnamed one of several, and bad rows are refused with the dataset, row and column named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_tables import RUBRIC, ROWS, graded, scripted  # noqa: F401  (scripted is a fixture)

from autorubric_local.comparisons.data import load_comparisons
from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.hub import HubDataset
from autorubric_local.data.submissions import load_grading_data
from autorubric_local.data.tables import Columns
from autorubric_local.engine import ScriptedEngine

pytest.importorskip("datasets")

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cached_dataset(home: Path, repo_id: str, splits: dict[str, list[dict[str, Any]]]) -> None:
    """Lay ``splits`` out as the hub cache holds a downloaded dataset repository: refs/main naming a
    snapshot whose data/ holds one Parquet file per split."""
    repo = home / "hub" / ("datasets--" + repo_id.replace("/", "--"))
    data = repo / "snapshots" / COMMIT / "data"
    data.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT, encoding="utf-8")
    for split, rows in splits.items():
        pq.write_table(pa.Table.from_pylist(rows), data / f"{split}-00000-of-00001.parquet")


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache of this test's own, offline (a request would fail the test)."""
    from huggingface_hub import constants

    home = tmp_path / "hf"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(home / "datasets"))
    return home


def test_a_cached_dataset_grades_as_its_parquet_file_does(tmp_path: Path, hub: Path,
                                                          scripted: list[ScriptedEngine]) -> None:  # noqa: F811
    rows = [{**r, "model": "m-1"} for r in ROWS]
    cached_dataset(hub, "acme/answers", {"train": rows[:2], "test": rows[2:]})
    parquet = tmp_path / "s.parquet"
    pq.write_table(pa.Table.from_pylist(rows[:2]), parquet)
    expected = graded(parquet, tmp_path / "a.sqlite")
    from_hub = graded(Path("hf:acme/answers:train"), tmp_path / "b.sqlite")
    assert [(r["item_id"], r["score"]) for r in from_hub] == [(r["item_id"], r["score"]) for r in expected]
    assert [r.prefix + r.suffix for r in scripted[1].history] == [r.prefix + r.suffix for r in scripted[0].history]
    rubric = Rubric.from_file(str(RUBRIC))
    test = load_grading_data("hf:acme/answers:test", rubric)
    assert [(i.id, i.submission, i.metadata) for i in test] == [("s2", ROWS[2]["submission"], {"model": "m-1"})]
    renamed = [{"key": r["id"], "output": r["submission"]} for r in ROWS]
    cached_dataset(hub, "acme/renamed", {"train": renamed})
    items = load_grading_data("hf:acme/renamed", rubric, columns=Columns(submission="output", id="key"), limit=2)
    assert [i.id for i in items] == ["s0", "s1"]  # the only split, read no further than the limit


def test_a_cached_long_form_dataset_loads_the_comparison_its_parquet_file_does(tmp_path: Path, hub: Path) -> None:
    from test_compare_tabular import EXPECTED, LONG, write_parquet

    cached_dataset(hub, "acme/pairs", {"train": LONG})
    assert load_comparisons("hf:acme/pairs") == load_comparisons(write_parquet(tmp_path / "p.parquet", LONG)) == EXPECTED


@pytest.mark.parametrize(("source", "message"), [
    ("hf:acme/absent", "hf:acme/absent: not in the local Hugging Face cache"),
    ("hf:acme/answers", "hf:acme/answers: 2 splits (train, test); name one, e.g. hf:acme/answers:train"),
    ("hf:acme/answers:dev", "hf:acme/answers:dev: no split 'dev' (the splits: train, test)"),
    ("hf:acme/bad", "hf:acme/bad: row 2: column 'submission': empty (the text to grade)"),
    ("hf:a/b/c", "hf:a/b/c: expected hf:OWNER/NAME or hf:OWNER/NAME:SPLIT"),
])
def test_bad_datasets_are_refused_naming_the_dataset_and_row(hub: Path, source: str, message: str) -> None:
    cached_dataset(hub, "acme/answers", {"train": ROWS[:1], "test": ROWS[1:]})
    cached_dataset(hub, "acme/bad", {"train": [ROWS[0], {**ROWS[1], "submission": None}]})
    with pytest.raises(InputError) as caught:
        load_grading_data(source, Rubric.from_file(str(RUBRIC)))
    assert str(caught.value).startswith(message), str(caught.value)


def test_the_spec_parses_and_prints_back() -> None:
    assert HubDataset.parse("hf:acme/answers:test") == HubDataset("acme/answers", "test")
    assert HubDataset.parse("hf:squad") == HubDataset("squad", None)
    assert str(HubDataset("acme/answers", "test")) == "hf:acme/answers:test"
    for bad in ("hf:", "hf:/x", "hf:a b", "hf:acme/x:te st", "hf:.hidden/x"):
        with pytest.raises(InputError):
            HubDataset.parse(bad)
