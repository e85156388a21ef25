"""``grade`` keeps its loaded judges out of full garbage collections while it grades
(``autorubric_local/cli/heap.py``) and gives them back to the collector when it ends."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

from autorubric_local.cli.heap import loaded_heap_frozen

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class Node:
    """A reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_a_cycle_alive_at_the_freeze_is_collected_only_after_the_block() -> None:
    assert gc.get_freeze_count() == 0
    node = Node()
    ref = weakref.ref(node)
    del node
    with loaded_heap_frozen():
        assert gc.get_freeze_count() > 0
        gc.collect()
        assert ref() is not None  # frozen: full collections skip it
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert ref() is None


def test_the_heap_is_unfrozen_when_the_block_raises_and_once_for_nested_blocks() -> None:
    with pytest.raises(RuntimeError), loaded_heap_frozen():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0
    with loaded_heap_frozen():
        with loaded_heap_frozen():
            pass
        assert gc.get_freeze_count() > 0  # the inner block leaves the outer one's freeze
    assert gc.get_freeze_count() == 0


def _grade(tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch, run_to_store: Any) -> tuple[Any, dict]:
    import torch
    from click.testing import CliRunner

    from autorubric_local.cli import main
    from autorubric_local.graders.criterion_grader import CriterionGrader
    from autorubric_local.runner import EvalRunner

    seen: dict[str, Any] = {}
    release = CriterionGrader.release_engines

    def watched_release(self: CriterionGrader, *args: Any, **kwargs: Any) -> Any:
        seen["frozen_at_release"] = gc.get_freeze_count()
        seen["model"] = weakref.ref(self.engine_for(self.judges[0]).model)
        return release(self, *args, **kwargs)

    def watched_run(self: EvalRunner) -> Any:
        seen["frozen_while_grading"] = gc.get_freeze_count()
        return run_to_store(self)

    monkeypatch.setattr(CriterionGrader, "release_engines", watched_release)
    monkeypatch.setattr(EvalRunner, "run_to_store", watched_run)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)  # keep the suite single-threaded
    result = CliRunner().invoke(main, ["grade", str(EXAMPLES / "battery_rubric.yaml"),
                                       str(EXAMPLES / "battery_submissions.jsonl"), "--model", str(model),
                                       "--db", str(tmp_path / "r.sqlite"), "--limit", "1", "--json"],
                                catch_exceptions=False)
    return result, seen


def test_grade_grades_and_releases_with_the_judge_frozen_then_unfreezes(
        tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from autorubric_local.runner import EvalRunner

    result, seen = _grade(tmp_path, tiny_model_dir, monkeypatch, EvalRunner.run_to_store)
    assert result.exit_code == 0, result.output
    assert seen["frozen_while_grading"] > 0 and seen["frozen_at_release"] > 0
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert seen["model"]() is None  # released, and collectable once the command has unfrozen the heap


def test_grade_unfreezes_when_the_run_fails(tmp_path: Path, tiny_model_dir: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(self: Any) -> Any:
        raise RuntimeError("a bug in the run")

    with pytest.raises(RuntimeError, match="a bug in the run"):
        _grade(tmp_path, tiny_model_dir, monkeypatch, failing)
    assert gc.get_freeze_count() == 0
