"""Model files on disk for the local backends: GGUF conversion once, cached tokenizers, no custom code.

GGUF files are de-quantised by transformers into float32 and written once as a safetensors
folder under the cache directory (``$AUTORUBRIC_LOCAL_CACHE`` or ``~/.cache/autorubric-local``),
keyed by the GGUF's content hash, so later loads take about a second instead of ~26 s.

No model code is ever run: every ``from_pretrained`` call and ``vllm.LLM`` pass
``trust_remote_code=False``, and a model folder whose ``config.json`` or
``tokenizer_config.json`` has an ``auto_map`` (classes shipped as Python files with the model)
is refused before transformers or vLLM is asked to load it (:func:`refuse_custom_code`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autorubric_local.core.errors import InputError
from autorubric_local.judges.presets import ResolvedModel
from autorubric_local.judges.weights import cache_dir, file_sha256

logger = logging.getLogger(__name__)


def converted_folder(gguf: Path) -> Path:
    """Folder holding the safetensors conversion of ``gguf`` (exists once converted)."""
    return cache_dir() / "converted" / f"{gguf.stem}-sha256-{file_sha256(gguf)[:16]}"


def ensure_converted(gguf: Path) -> Path:
    """Convert ``gguf`` to a float32 safetensors folder once; return the folder.

    The folder is written under a temporary name and renamed into place, so an interrupted
    conversion never leaves a half-written model behind.
    """
    target = converted_folder(gguf)
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("converting %s to %s (once)", gguf, target)
    with no_progress_bars():
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, trust_remote_code=False)
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32, trust_remote_code=False
        )
    # The de-quantised weights are plain float32; drop the GGUF quantizer so they can be saved.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    write_folder_once(target, "config.json", lambda staging: (model.save_pretrained(staging),
                                                               tokenizer.save_pretrained(staging)))
    return target


@contextlib.contextmanager
def no_progress_bars() -> Iterator[None]:
    """Switch transformers' and huggingface_hub's tqdm bars off inside the block (they would
    print "Loading weights" bars to stderr under our own progress display), then restore them."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def write_folder_once(target: Path, marker: str, write: Any) -> None:
    """Write a cache folder by ``write(staging)`` under a temporary name, then rename it to ``target``.

    An interrupted write never leaves a half-written folder; if another process finished
    first (``target/marker`` exists), its folder is kept.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        write(staging)
        if (target / marker).is_file():
            return
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def refuse_custom_code(folder: Path) -> None:
    """Refuse a model folder that needs its own Python code, before any loader reads it.

    A Hugging Face folder names such code in an ``auto_map`` of its ``config.json`` (model) or
    ``tokenizer_config.json`` (tokenizer); transformers would import the ``.py`` files it
    lists. autorubric-local never runs code shipped with a model.

    Raises
    ------
    InputError
        Names the folder, the file and the classes of the ``auto_map``, or a file that is
        not a JSON object.
    """
    for name in ("config.json", "tokenizer_config.json"):
        path = folder / name
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise InputError(f"{path}: expected a JSON object, got {type(data).__name__}")
        auto_map = data.get("auto_map")
        if auto_map:
            classes = ", ".join(sorted(auto_map)) if isinstance(auto_map, dict) else repr(auto_map)
            raise InputError(
                f"{folder}: {name} has an auto_map ({classes}): this model needs Python code shipped in its "
                "folder, and autorubric-local never runs custom model code (trust_remote_code is always False). "
                "Use a model whose architecture transformers supports natively."
            )


def gguf_tokenizer(gguf: Path) -> Any:
    """The Hugging Face tokenizer stored in ``gguf``, read once and cached as a tokenizer folder.

    The first read parses the GGUF's metadata with transformers (a few seconds); the
    tokenizer is then saved under the cache directory, keyed by the file's content hash, like
    :func:`converted_folder`, so later loads take well under a second.
    """
    from transformers import AutoTokenizer

    converted = converted_folder(gguf)
    if (converted / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(converted, trust_remote_code=False)
    target = cache_dir() / "tokenizers" / converted.name
    if (target / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(target, trust_remote_code=False)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, trust_remote_code=False)
    write_folder_once(target, "tokenizer_config.json", tokenizer.save_pretrained)
    return tokenizer


def prompt_format(config: Any, resolved: ResolvedModel) -> str:
    """The prompt format to build the engine with: the config's, else the preset's, else ``"auto"``."""
    if config.prompt_format != "auto":
        return config.prompt_format
    if resolved.preset is not None and resolved.preset.prompt_format:
        return resolved.preset.prompt_format
    return "auto"
