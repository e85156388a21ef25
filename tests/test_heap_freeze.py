"""A job keeps its loaded judges out of full garbage collections while it runs and gives them
back to the collector when it ends (``autorubric_local/runner/in_process.py``): the library
does it, so ``grade``, the Python API and sweeps all do."""

from __future__ import annotations

import gc
import shutil
import weakref
from pathlib import Path
from typing import Any

import pytest

from autorubric_local.runner.in_process import frozen_heap

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
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        gc.collect()
        assert ref() is not None  # frozen: full collections skip it
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert ref() is None


def test_the_heap_is_unfrozen_when_the_block_raises_and_once_for_nested_blocks() -> None:
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        with frozen_heap():
            pass
        assert gc.get_freeze_count() > 0  # the inner block leaves the outer one's freeze
    assert gc.get_freeze_count() == 0


class Bug(Exception):
    """A bug in our own code while a chunk is graded (not a judge failure: it propagates)."""


def test_job_engines_release_while_frozen_then_unfreeze_also_when_the_release_raises() -> None:
    from autorubric_local.runner.in_process import JobEngines

    seen: list[int] = []
    job = JobEngines()
    job.start()
    job.loaded()
    assert gc.get_freeze_count() > 0
    job.release({}, lambda names: seen.append(gc.get_freeze_count()))
    assert seen and seen[0] > 0 and gc.get_freeze_count() == 0  # released while frozen, then unfrozen

    def failing(names: list[str]) -> None:
        raise Bug("release failed")

    job = JobEngines()
    job.start()
    job.loaded()
    with pytest.raises(Bug):
        job.release({}, failing)
    assert gc.get_freeze_count() == 0


def _grade(tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch, fail: bool, seen: dict[str, Any]) -> Any:
    import torch
    from click.testing import CliRunner

    from autorubric_local.cli import main
    from autorubric_local.graders.criterion_grader import CriterionGrader
    from autorubric_local.runner import executors

    release = CriterionGrader.release_engines
    grade_chunk = executors.grade_chunk

    def watched_release(self: CriterionGrader, *args: Any, **kwargs: Any) -> Any:
        seen["frozen_at_release"] = gc.get_freeze_count()
        seen["model"] = weakref.ref(self.engine_for(self.judges[0]).model)
        return release(self, *args, **kwargs)

    def watched_chunk(*args: Any, **kwargs: Any) -> Any:
        seen["frozen_while_grading"] = gc.get_freeze_count()
        if fail:
            raise Bug("a bug while grading")
        return grade_chunk(*args, **kwargs)

    monkeypatch.setattr(CriterionGrader, "release_engines", watched_release)
    monkeypatch.setattr(executors, "grade_chunk", watched_chunk)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)  # keep the suite single-threaded
    # a copy: a judge no earlier test of this process can have left in load_engine's cache (a job
    # keeps, and does not release, an engine that was loaded before it started)
    model = Path(shutil.copytree(model, tmp_path / "judge"))
    result = CliRunner().invoke(main, ["grade", str(EXAMPLES / "battery_rubric.yaml"),
                                       str(EXAMPLES / "battery_submissions.jsonl"), "--model", str(model),
                                       "--db", str(tmp_path / "r.sqlite"), "--limit", "1", "--json"],
                                catch_exceptions=False)
    return result


def test_grade_grades_and_releases_with_the_judge_frozen_then_unfreezes(
        tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    result = _grade(tmp_path, tiny_model_dir, monkeypatch, False, seen)
    assert result.exit_code == 0, result.output
    assert seen["frozen_while_grading"] > 0 and seen["frozen_at_release"] > 0
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert seen["model"]() is None  # released, and collectable once the job has unfrozen the heap


def test_grade_releases_and_unfreezes_when_grading_raises(tmp_path: Path, tiny_model_dir: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    with pytest.raises(Bug, match="a bug while grading"):
        _grade(tmp_path, tiny_model_dir, monkeypatch, True, seen)
    assert seen["frozen_while_grading"] > 0 and seen["frozen_at_release"] > 0
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert seen["model"]() is None  # the bug propagated, and the judge was still released and unfrozen
