"""Items read when used: a ``.jsonl`` file's items (:class:`JsonlItems`) and a run's planned items
(:class:`PlannedItems`) are built again from the file when read, so a large run holds only the
chunk in flight; what is read is what was checked, and a file changed meanwhile is refused."""

from __future__ import annotations

import gc
import json
import pickle
import sys
import tracemalloc
from dataclasses import replace
from pathlib import Path

import pytest

from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.dataset import DataItem, RubricDataset
from autorubric_local.data.item import UnreadableItem
from autorubric_local.data.jsonl_items import JsonlItems
from autorubric_local.data.submissions import load_grading_data
from autorubric_local.engine import ScriptedEngine
from autorubric_local.graders import CriterionGrader
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner import EvalConfig, EvalRunner
from autorubric_local.runner.checkpoint import PlannedItem, _plan_item, plan_dataset
from autorubric_local.runner.chunking import TimedChunks

sys.path.insert(0, str(Path(__file__).parent))
import crash_worker

RUBRIC = Rubric.from_dict([{"name": "a", "weight": 1, "requirement": "x"},
                           {"name": "b", "weight": 2, "requirement": "y"}])
HEADER = {"name": "d", "prompt": "Q?", "rubric": [{"name": "a", "weight": 1, "requirement": "x"}]}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def submissions(n: int, size: int = 10) -> list[str]:
    return [json.dumps({"id": f"s{i}", "submission": f"{i} " + "x" * size, "metadata": {"n": i}}) for i in range(n)]


@pytest.mark.parametrize("form", ["submissions", "dataset"])
def test_items_read_from_the_file_equal_the_items_read_from_its_text(tmp_path: Path, form: str) -> None:
    if form == "submissions":
        lines = submissions(4) + ['{"submission": "\\ud800"}', json.dumps({"submission": "no id"})]
    else:
        lines = [json.dumps(HEADER), json.dumps({"submission": "a", "ground_truth": ["MET"]}),
                 '{"bad', json.dumps({"submission": "b", "id": "b", "prompt": "own"}),
                 json.dumps({"submission": "c", "rubric": [{"name": "z", "weight": 1, "requirement": "z"}],
                             "ground_truth": ["UNMET"]})]
    jsonl = write_lines(tmp_path / "d.jsonl", lines)
    text = write_lines(tmp_path / "d.txt", lines)  # another suffix: read whole, items in a list
    rubric = RUBRIC if form == "submissions" else None
    lazy = load_grading_data(jsonl, rubric, keep_unreadable=True)
    eager = load_grading_data(text, rubric, keep_unreadable=True)
    assert isinstance(lazy.items, JsonlItems) and isinstance(eager.items, list)
    assert len(lazy) == len(eager) == len(lines) - (form == "dataset")
    expected = [replace(item, error=item.error.replace("d.txt", "d.jsonl")) if isinstance(item, UnreadableItem)
                else item for item in eager.items]  # the message names the file read
    assert list(lazy.items) == expected and lazy.items == expected
    assert lazy.items[1:3] == expected[1:3] and lazy.items[-1] == expected[-1]
    assert [item.id for item in lazy.items] == [item.id for item in eager.items]
    assert sum(isinstance(item, UnreadableItem) for item in lazy.items) == 1
    assert (lazy.prompt, lazy.rubric, lazy.name) == (eager.prompt, eager.rubric, eager.name)
    with pytest.raises(IndexError):
        lazy.items[len(lazy)]


def test_a_line_changed_after_loading_is_refused_naming_file_and_line(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", submissions(3))
    dataset = load_grading_data(path, RUBRIC)
    assert dataset.items[1].submission.startswith("1 ")
    changed = submissions(3)
    changed[1] = changed[1].replace('"1 x', '"9 x')  # same length, other bytes
    write_lines(path, changed)
    dataset.items.close()  # a new descriptor sees the new file
    assert dataset.items[0].submission.startswith("0 ")
    with pytest.raises(InputError, match=r"s\.jsonl: line 2: the file changed after it was read"):
        dataset.items[1]
    path.unlink()
    dataset.items.close()
    with pytest.raises(InputError, match=r"s\.jsonl: line 1: cannot read the file again"):
        dataset.items[0]


def test_items_survive_pickling_and_a_blank_line_and_bom_keep_their_places(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n\n".join(submissions(3)).encode() + b"\n\n")
    dataset = load_grading_data(path, RUBRIC)
    copy = pickle.loads(pickle.dumps(dataset.items))
    assert list(copy) == list(dataset.items) and [item.id for item in copy] == ["s0", "s1", "s2"]
    assert [dataset.items.line_number(i) for i in range(3)] == [1, 3, 5]


def test_loading_holds_no_submission_text(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "big.jsonl", submissions(400, size=50_000))  # 20 MB of submissions
    tracemalloc.start()
    try:
        dataset = load_grading_data(path, RUBRIC)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(dataset) == 400 and dataset.items[399].id == "s399"
    assert held < 2_000_000, held  # text held would be 20 MB; each item's place is ~40 bytes


def test_planned_items_are_built_again_as_planned(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", submissions(5))
    dataset = load_grading_data(path, RUBRIC)
    grader = CriterionGrader(LLMConfig(model="scripted", engine=ScriptedEngine()))
    planned = plan_dataset(dataset, grader.judgment_count)
    assert planned.keys == [f"s{i}" for i in range(5)] and planned.judgments == [2] * 5
    for position, entry in enumerate(planned):
        fresh = _plan_item(dataset, position, dataset.items[position])  # hashed afresh
        assert entry == fresh and planned.item_hashes[position] == fresh.item_hash
    tail = planned[3:]
    assert tail.keys == ["s3", "s4"] and [e.key for e in tail] == ["s3", "s4"] and tail[-1].index == 4
    assert planned.subset([4, 0]).keys == ["s4", "s0"] and planned.subset([4, 0])[1] == planned[0]


def test_an_item_replaced_in_memory_after_planning_does_not_change_the_plan() -> None:
    dataset = crash_worker.build_dataset(3)
    planned = plan_dataset(dataset)
    before = planned[1]
    dataset.items[1] = DataItem(submission="other", id="other")
    assert planned[1] is before and planned[1].key == "item-1" and planned.subset([1])[0] is before


def test_timed_chunks_forget_what_was_committed() -> None:
    planned = plan_dataset(crash_worker.build_dataset(6))
    chunks = TimedChunks(planned, dict.fromkeys(planned.keys, 3), 6, None, None)
    cut = []
    for index, chunk in enumerate(chunks):
        cut.append([entry.key for entry in chunk])
        assert list(chunks.chunks) == [index]
        chunks.forget(index)
    assert cut == [["item-0", "item-1"], ["item-2", "item-3"], ["item-4", "item-5"]]
    assert chunks.judged == [6, 6, 6] and chunks.chunks == {}


def test_a_run_holds_only_the_chunk_in_flight(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", submissions(24))  # 6 chunks (a full gc scan each)
    dataset = load_grading_data(path, RUBRIC)
    grader = CriterionGrader(LLMConfig(model="scripted", engine=ScriptedEngine()))
    live: list[tuple[int, int]] = []

    def count(chunk: object) -> None:
        gc.collect()
        objects = gc.get_objects()
        live.append((sum(type(o) is PlannedItem for o in objects), sum(type(o) is DataItem for o in objects)))

    config = EvalConfig(db_path=tmp_path / "r.sqlite", experiment_name="t", show_progress=False,
                        chunk_judgments=8, chunk_seconds=None)
    stored = EvalRunner(dataset, grader, config, on_chunk=count).run_to_store()
    assert stored.total_judgments == 48 and len(live) == 6  # 4 items (8 judgments) a chunk
    assert max(planned for planned, _ in live) <= 4, live  # the chunk just committed; none kept from before
    assert max(items for _, items in live) <= 4, live


def test_items_are_read_again_after_a_chdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_lines(tmp_path / "s.jsonl", submissions(2))
    monkeypatch.chdir(tmp_path)
    dataset = load_grading_data("s.jsonl", RUBRIC)
    monkeypatch.chdir(tmp_path.parent)
    assert [item.id for item in dataset.items] == ["s0", "s1"]


def test_items_joined_to_another_rubric_are_checked_against_it(tmp_path: Path) -> None:
    lines = [json.dumps(HEADER), json.dumps({"submission": "a", "ground_truth": ["MET"]})]
    dataset = load_grading_data(write_lines(tmp_path / "d.jsonl", lines))
    assert isinstance(dataset.items, JsonlItems) and dataset.items.checked_against is dataset.rubric
    with pytest.raises(InputError, match=r"item 0: field 'ground_truth'"):  # one value, two criteria
        RubricDataset(prompt=None, rubric=RUBRIC, items=dataset.items)


def test_chunks_cut_up_front_are_lazy_slices(tmp_path: Path) -> None:
    from autorubric_local.runner.chunking import make_chunks

    dataset = load_grading_data(write_lines(tmp_path / "s.jsonl", submissions(5)), RUBRIC)
    planned = plan_dataset(dataset)
    chunks = make_chunks(planned, dict.fromkeys(planned.keys, 2), 4, None)
    assert [type(chunk).__name__ for chunk in chunks] == ["PlannedItems"] * 3
    assert [[entry.key for entry in chunk] for chunk in chunks] == [["s0", "s1"], ["s2", "s3"], ["s4"]]
    in_memory = plan_dataset(crash_worker.build_dataset(3))
    first = make_chunks(in_memory, dict.fromkeys(in_memory.keys, 1), 2, None)[0]
    assert in_memory.entries is not None and first[0] is in_memory.entries[0]  # kept as planned


def test_an_empty_trie_row_has_an_empty_mask() -> None:
    from autorubric_local.engine.transformers.batched import trie_allowed
    from autorubric_local.engine.transformers.packing import PackedRow

    row = PackedRow(prefix_len=3, token_ids=[], positions=[], parents=[], depths=[], targets=[], ends=[],
                    suffix_nodes=[], tree_nodes=[])
    assert trie_allowed(row).shape == (0, 0)


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_free_heap_pages_stranded_by_fragmentation_are_returned() -> None:
    import ctypes
    import ctypes.util

    from autorubric_local.runner.heap import _malloc_trim, release_free_heap

    if _malloc_trim() is None:
        pytest.skip("the C library has no malloc_trim (not glibc)")
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    blocks = [libc.malloc(4000) for _ in range(20_000)]  # ~80 MB below the mmap threshold: in the heap
    for block in blocks:
        libc.memset(block, 1, 4000)  # touched: resident
    for block in blocks[:-1]:  # the last block pins the heap's top: a plain trim of the top returns nothing
        libc.free(block)
    before = rss_kib()
    assert release_free_heap() is True
    after = rss_kib()
    libc.free(blocks[-1])
    assert before - after > 40_000, (before, after)  # most of the ~80 MB freed is returned
