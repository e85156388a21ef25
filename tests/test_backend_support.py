"""LLMConfig fields that a local backend cannot honour: a non-default value is an InputError
naming the field path, the backend and what to do, raised when the engine is loaded (never
when the config is built), before the model is even looked up. Fields the backends do honour
keep working, and a config with its own ``engine`` is exempt. No model is loaded: the model
names do not exist, so getting past the check shows up as ModelNotFoundError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from autorubric_local.cli import main
from autorubric_local.core.errors import InputError, ModelNotFoundError
from autorubric_local.engine import ScriptedEngine
from autorubric_local.graders import CriterionGrader
from autorubric_local.judges import engines
from autorubric_local.judges.backends import registered
from autorubric_local.judges.config import LLMConfig

MISSING = "no-such-model"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

HOSTED_VALUES: dict[str, Any] = {
    "timeout": 30.0,
    "max_retries": 3,
    "prompt_caching": False,
    "api_key": "sk-secret-123",
    "api_base": "http://localhost:8000/v1",
    "extra_headers": {"X-Trace": "secret-header-value"},
    "extra_params": {"reasoning_effort": "high"},
}
"""AutoRubric's hosted-API settings, none of which a local backend implements."""

REQUEST_SETTINGS: dict[str, Any] = {"max_parallel_requests": 4, "cache_enabled": True, "cache_dir": "/tmp/judge-cache",
                                    "cache_ttl": 3600}
"""AutoRubric's request settings that local backends honour too (engine/cached.py)."""

HONOURED: dict[str, dict[str, Any]] = {
    "transformers": {"temperature": 0.7, "max_tokens": 200, "seed": 5, "thinking": "low", "device": "cpu",
                     "dtype": "float32", "context_length": 1024, "max_packed_tokens": 512,
                     "explanation_max_tokens": 40, "explanation_style": "free", "on_overflow": "truncate",
                     "prompt_format": "completion"},
    "vllm": {"temperature": 0.7, "max_tokens": 200, "top_p": 0.9, "seed": 5, "thinking": 32, "device": "cpu",
             "dtype": "bfloat16", "context_length": 1024, "gpu_memory_utilization": 0.4,
             "engine_args": {"tensor_parallel_size": 2, "max_num_seqs": 64}, "explanation_max_tokens": 40, "explanation_style": "free", "on_overflow": "truncate",
             "prompt_format": "chat"},
    "llamacpp": {"temperature": 0.7, "max_tokens": 200, "seed": 5, "thinking": "low", "device": "cpu",
                 "context_length": 1024, "explanation_max_tokens": 40, "explanation_style": "free",
                 "on_overflow": "truncate", "prompt_format": "completion"},
}
for _fields in HONOURED.values():
    _fields.update(REQUEST_SETTINGS)
"""Fields each backend reads (judges/engines.py, the engines and graders), with non-default values."""


@pytest.mark.parametrize("backend", ["transformers", "vllm", "llamacpp", "auto"])
@pytest.mark.parametrize(("field", "value"), list(HOSTED_VALUES.items()))
def test_hosted_settings_are_refused_at_load(backend: str, field: str, value: Any) -> None:
    config = LLMConfig(model=MISSING, backend=backend, **{field: value})  # building it is fine
    assert getattr(config, field) == value
    with pytest.raises(InputError) as refused:
        engines.load_engine(config)
    message = str(refused.value)
    shown = "auto (transformers or llamacpp)" if backend == "auto" else backend
    assert message.startswith(f"LLMConfig.{field} is not supported by the {shown} backend (got ")
    assert "\n" not in message


def test_message_of_a_hosted_endpoint() -> None:
    with pytest.raises(InputError) as refused:
        engines.load_engine(LLMConfig(model=MISSING, api_base="http://localhost:8000/v1"))
    assert str(refused.value) == (
        "LLMConfig.api_base is not supported by the auto (transformers or llamacpp) backend "
        "(got 'http://localhost:8000/v1'); "
        "hosted and server judges need backend='hosted' (LiteLLM; docs/backends.md, \"Hosted and server judges\")"
    )


def test_secrets_are_never_shown() -> None:
    config = LLMConfig(model=MISSING, api_key="sk-secret-123", extra_headers={"X-Trace": "secret-header-value"},
                       extra_params={"reasoning_effort": "high"})
    with pytest.raises(InputError) as refused:
        engines.load_engine(config)
    message = str(refused.value)
    assert "secret" not in message
    assert "LLMConfig.api_key is not supported by the auto (transformers or llamacpp) backend (got a value, not shown)" in message
    assert "LLMConfig.extra_headers is not supported by the auto (transformers or llamacpp) backend (got keys ['X-Trace'])" in message
    assert "LLMConfig.extra_params is not supported by the auto (transformers or llamacpp) backend (got keys ['reasoning_effort'])" in message
    assert len(message.splitlines()) == 3  # one line per field


@pytest.mark.parametrize(
    ("backend", "field", "value", "hint"),
    [
        ("transformers", "top_p", 0.9, "use backend='vllm' or leave top_p unset"),
        ("transformers", "gpu_memory_utilization", 0.5, "only the vllm backend reserves GPU memory"),
        ("llamacpp", "engine_args", {"max_num_seqs": 8}, "engine_args are vLLM engine arguments"),
        ("vllm", "max_packed_tokens", 512, "it schedules its own batches"),
        ("llamacpp", "max_batch_tokens", 4096, "it schedules its own batches"),
        ("llamacpp", "dtype", "float32", "computes in the GGUF's own (quantised) types"),
        ("hosted", "dtype", "float32", "the server computes in its own types"),
    ],
)
def test_settings_of_the_other_backend_are_refused(backend: str, field: str, value: Any, hint: str) -> None:
    with pytest.raises(InputError, match=f"^LLMConfig.{field} is not supported by the {backend} backend") as refused:
        engines.load_engine(LLMConfig(model=MISSING, backend=backend, **{field: value}))
    assert hint in str(refused.value)


@pytest.mark.parametrize("backend", ["transformers", "vllm", "llamacpp"])
def test_honoured_settings_pass_the_check(backend: str) -> None:
    config = LLMConfig(model=MISSING, backend=backend, **HONOURED[backend])
    assert engines.unsupported_settings(config) == []
    with pytest.raises(ModelNotFoundError, match=MISSING):  # got as far as looking for the model
        engines.load_engine(config)


def test_defaults_given_explicitly_pass_the_check() -> None:
    defaults = {name: LLMConfig.model_fields[name].get_default(call_default_factory=True) for name in HOSTED_VALUES}
    assert engines.unsupported_settings(LLMConfig(model=MISSING, **defaults)) == []


def test_every_field_is_either_honoured_or_refused() -> None:
    """A new LLMConfig field must be implemented by the backends or listed as unsupported."""
    records = registered()
    classified = set().union(*(set(records[b].unsupported) for b in HONOURED), *map(set, HONOURED.values()))
    assert set(LLMConfig.model_fields) - {"model", "backend", "engine"} == classified
    for backend, honoured in HONOURED.items():
        assert set(records[backend].unsupported).isdisjoint(honoured), backend


def test_a_config_with_its_own_engine_is_exempt() -> None:
    engine = ScriptedEngine()
    config = LLMConfig(model="custom", engine=engine, api_key="sk-x", timeout=5.0, top_p=0.5, prompt_caching=False)
    assert engines.load_engine(config) is engine


def test_a_grader_refuses_when_it_loads_its_judge() -> None:
    grader = CriterionGrader(LLMConfig(model=MISSING, max_retries=2))  # building the grader loads nothing
    with pytest.raises(InputError, match="LLMConfig.max_retries is not supported by the auto \\(transformers or llamacpp\\) backend"):
        grader.engine_for(grader.judges[0])


def test_cli_judges_file_with_a_hosted_setting_fails_cleanly(tmp_path: Path) -> None:
    judges = tmp_path / "judges.yaml"
    judges.write_text(f"judges:\n  - model: {MISSING}\n    api_base: http://localhost:8000/v1\n", encoding="utf-8")
    db_path = tmp_path / "results.sqlite"
    result = CliRunner().invoke(main, ["grade", str(EXAMPLES / "battery_rubric.yaml"),
                                       str(EXAMPLES / "battery_submissions.jsonl"), "--judges", str(judges),
                                       "--db", str(db_path)])
    assert result.exit_code == 1
    assert "LLMConfig.api_base is not supported by the auto (transformers or llamacpp) backend" in result.output
    assert "Traceback" not in result.output
    assert not db_path.exists()  # refused before a database was created
