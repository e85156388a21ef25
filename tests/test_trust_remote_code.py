"""No code shipped with a model is ever run: a model folder whose config names custom classes
(``auto_map``) is refused before transformers or vLLM sees it, and every loader call passes
``trust_remote_code=False``. The loaders are replaced by recorders (no model is loaded); vLLM is
a stand-in module, so these tests run without it."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from autorubric_local.core.errors import InputError
from autorubric_local.engine.vllm.backend import load_vllm
from autorubric_local.judges import engines
from autorubric_local.judges.config import LLMConfig


class Recorded(Exception):
    """Raised by a recorder to stop the load once the call is recorded."""


class Recorder:
    """Stands in for a loader: records each call's positional and keyword arguments."""

    def __init__(self, result: Any = None) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.result = result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        if self.result is None:
            raise Recorded
        return self.result


@pytest.fixture
def loaders(monkeypatch: pytest.MonkeyPatch) -> dict[str, Recorder]:
    """Recorders in place of AutoTokenizer / AutoModelForCausalLM.from_pretrained and vllm.LLM."""
    import transformers

    recorders = {"tokenizer": Recorder(result=object()), "model": Recorder(), "vllm": Recorder()}
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", recorders["tokenizer"])
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", recorders["model"])
    vllm = types.ModuleType("vllm")
    vllm.LLM = recorders["vllm"]  # type: ignore[attr-defined]
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(is_cpu=lambda: True, device_type="cpu")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    return recorders


def custom_code_folder(tmp_path: Path, config_file: str = "config.json") -> tuple[Path, Path]:
    """A model folder whose ``config_file`` maps classes to ``modeling_evil.py``, which would
    write ``marker`` if it were ever imported. Returns (folder, marker)."""
    folder, marker = tmp_path / "evil-model", tmp_path / "MARKER"
    folder.mkdir()
    (folder / "modeling_evil.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('custom code ran')\n", encoding="utf-8"
    )
    auto_map = {"AutoConfig": "modeling_evil.EvilConfig", "AutoModelForCausalLM": "modeling_evil.EvilModel",
                "AutoTokenizer": ["modeling_evil.EvilTokenizer", None]}
    config = {"model_type": "evil", "architectures": ["EvilModel"]}  # an architecture transformers lacks
    if config_file == "config.json":
        config["auto_map"] = auto_map
    else:
        (folder / config_file).write_text(json.dumps({"auto_map": auto_map}), encoding="utf-8")
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder, marker


@pytest.mark.parametrize("backend", ["transformers", "vllm"])
@pytest.mark.parametrize("config_file", ["config.json", "tokenizer_config.json"])
def test_a_folder_with_custom_code_is_refused_before_any_loader(
    tmp_path: Path, loaders: dict[str, Recorder], backend: str, config_file: str
) -> None:
    folder, marker = custom_code_folder(tmp_path, config_file)
    with pytest.raises(InputError) as refused:
        engines.load_engine(LLMConfig(model=str(folder), backend=backend, device="cpu"))
    message = str(refused.value)
    assert message.startswith(f"{folder}: {config_file} has an auto_map (AutoConfig, AutoModelForCausalLM, AutoTokenizer)")
    assert "never runs custom model code" in message
    assert all(not recorder.calls for recorder in loaders.values())  # nobody was asked to load it
    assert not marker.exists()


def test_transformers_itself_refuses_the_folder_with_the_pinned_flag(tmp_path: Path) -> None:
    """Defence in depth: were the folder check bypassed, the pinned flag still runs no code."""
    from transformers import AutoModelForCausalLM

    folder, marker = custom_code_folder(tmp_path)
    with pytest.raises(ValueError, match="trust_remote_code"):
        AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=False)
    assert not marker.exists()


@pytest.mark.parametrize(("text", "fragment"), [("{not json", "not valid JSON"), ("[1, 2]", "expected a JSON object")])
def test_an_unreadable_config_is_an_input_error(tmp_path: Path, text: str, fragment: str) -> None:
    (tmp_path / "config.json").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=fragment):
        engines.refuse_custom_code(tmp_path)


def test_transformers_loads_pass_trust_remote_code_false(tmp_path: Path, loaders: dict[str, Recorder]) -> None:
    folder = tmp_path / "plain-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}), encoding="utf-8")
    with pytest.raises(Recorded):
        engines.load_engine(LLMConfig(model=str(folder), device="cpu"))
    (tokenizer_args, tokenizer_kwargs), = loaders["tokenizer"].calls
    (model_args, model_kwargs), = loaders["model"].calls
    assert tokenizer_args == (folder,) and model_args == (folder,)
    assert tokenizer_kwargs["trust_remote_code"] is False
    assert model_kwargs["trust_remote_code"] is False


def test_gguf_conversion_passes_trust_remote_code_false(
    tmp_path: Path, loaders: dict[str, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTORUBRIC_LOCAL_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "judge.gguf"
    gguf.write_bytes(b"GGUF stand-in")
    with pytest.raises(Recorded):
        engines.ensure_converted(gguf)
    (_, tokenizer_kwargs), = loaders["tokenizer"].calls
    (_, model_kwargs), = loaders["model"].calls
    assert tokenizer_kwargs == {"gguf_file": "judge.gguf", "trust_remote_code": False}
    assert model_kwargs["gguf_file"] == "judge.gguf" and model_kwargs["trust_remote_code"] is False


def test_vllm_load_passes_trust_remote_code_false(tmp_path: Path, loaders: dict[str, Recorder]) -> None:
    folder = tmp_path / "plain-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}), encoding="utf-8")
    with pytest.raises(Recorded):
        engines.load_engine(LLMConfig(model=str(folder), backend="vllm", device="cpu"))
    (_, kwargs), = loaders["vllm"].calls
    assert kwargs["model"] == str(folder)
    assert kwargs["trust_remote_code"] is False


def test_load_vllm_refuses_a_request_for_remote_code(tmp_path: Path, loaders: dict[str, Recorder]) -> None:
    with pytest.raises(InputError, match="trust_remote_code=True is refused"):
        load_vllm(tmp_path, model_id="x", trust_remote_code=True)
    assert loaders["vllm"].calls == []
    with pytest.raises(Recorded):
        load_vllm(tmp_path, model_id="x", trust_remote_code=False, enforce_eager=False)
    (_, kwargs), = loaders["vllm"].calls
    assert kwargs["trust_remote_code"] is False and kwargs["enforce_eager"] is False
