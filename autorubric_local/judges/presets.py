"""Judge model presets and resolution of ``LLMConfig.model`` to files on disk.

``LLMConfig.model`` may be a preset name, a local Hugging Face model folder, a ``.gguf`` file,
or a Hugging Face id (``Qwen/Qwen2.5-7B-Instruct``) already in the local Hugging Face cache.
Nothing is ever downloaded and no network call is made: a model that cannot be found raises
:class:`~autorubric_local.core.errors.ModelNotFoundError` listing every place that was searched
and how to put the weights there.

Preset files (``*.yaml``) are searched in order: each folder of ``$AUTORUBRIC_LOCAL_MODELS``
(``os.pathsep``-separated), then the presets shipped inside this package
(``autorubric_local/judges/models/``, read with :mod:`importlib.resources`, so they work from
an installed wheel as from a clone). The first definition of a name wins.

The Hugging Face cache is ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``~/.cache/huggingface/hub`` (the layout ``huggingface_hub`` writes:
``models--<org>--<name>/snapshots/<commit>/``).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import re
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from autorubric_local.core.checks import field_error, parse_yaml
from autorubric_local.core.errors import InputError, ModelNotFoundError
from autorubric_local.engine.vllm.args import check_engine_args
from autorubric_local.judges.weights import (
    assemble_chunks,
    assembled_path,
    cache_dir,
    package_file,
    verify_sha256,
)

BUILTIN_PRESETS: Traversable = importlib.resources.files("autorubric_local.judges") / "models"
"""The presets shipped with the package (package data)."""

HF_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
"""A Hugging Face model id, ``<org>/<name>``."""


@dataclass(frozen=True)
class ModelPreset:
    """A known judge model: where its weights are expected and how to run it.

    ``weights`` holds one or more of: ``python_package`` + ``file`` (weights inside an
    installed package, located without importing it), ``chunks`` + ``file`` (a file split into
    chunks shipped in installed packages, assembled once into the cache:
    :mod:`~autorubric_local.judges.weights`), ``env`` (a variable naming a path), ``paths``
    (candidate paths, ``~`` expanded) and ``hf_id`` (a Hugging Face id looked up in the local
    Hugging Face cache); and optionally ``sha256``, the file's digest, checked before use.
    ``prompt_format`` (``"chat"`` or ``"completion"``) is how the judge is prompted when the
    config says ``"auto"``; None lets the tokenizer decide. ``backend``
    (``"transformers"`` or ``"llamacpp"``) is the backend ``LLMConfig(backend="auto")`` runs it
    on; None: the general rule (:func:`~autorubric_local.judges.engines.choose_backend`).
    ``engine_args`` are vLLM engine arguments used when the judge runs on the vllm backend
    (:data:`autorubric_local.engine.vllm.args.ENGINE_ARGS`; ``LLMConfig.engine_args`` override
    them key by key); other backends ignore them.
    """

    name: str
    description: str
    weights: dict[str, Any]
    context_length: int | None = None
    chat_template: str = ""
    license: str = ""
    source_file: Traversable | None = None
    prompt_format: str | None = None
    backend: str | None = None
    engine_args: dict[str, Any] = field(default_factory=dict)

    def chunk_files(self) -> list[Path] | None:
        """The installed chunk files of ``weights.chunks`` in order, or None if any is missing."""
        found = [package_file(entry) for entry in self.weights.get("chunks", [])]
        if not found or any(path is None or not path.is_file() for path in found):
            return None
        return [path for path in found if path is not None]

    def candidate_paths(self) -> list[Path]:
        """Every path where this preset's weights may be, in search order."""
        candidates: list[Path] = []
        env = self.weights.get("env")
        if env and os.environ.get(env):
            candidates.append(Path(os.environ[env]).expanduser())
        package = self.weights.get("python_package")
        if package:
            try:
                spec = importlib.util.find_spec(package)
            except (ImportError, ValueError):  # a dotted name whose parent is not installed
                spec = None
            if spec is not None and spec.submodule_search_locations:
                base = Path(list(spec.submodule_search_locations)[0])
                candidates.append(base / self.weights.get("file", ""))
        if self.weights.get("chunks"):
            candidates.append(assembled_path(cache_dir(), self.weights["file"]))
        candidates.extend(Path(p).expanduser() for p in self.weights.get("paths", []))
        hf_id = self.weights.get("hf_id")
        if hf_id:
            candidates.append(hf_cache_snapshot(hf_id))
        return candidates


@dataclass(frozen=True)
class ResolvedModel:
    """A model located on disk: a Hugging Face folder or a GGUF file."""

    kind: Literal["hf_folder", "gguf"]
    path: Path
    model_id: str
    preset: ModelPreset | None = None
    searched: tuple[str, ...] = field(default_factory=tuple)


def preset_dirs() -> list[Traversable]:
    """Folders searched for preset files, in order: ``$AUTORUBRIC_LOCAL_MODELS``, then the built-in ones."""
    extra = [Path(p).expanduser() for p in os.environ.get("AUTORUBRIC_LOCAL_MODELS", "").split(os.pathsep) if p]
    return [*extra, BUILTIN_PRESETS]


def list_presets() -> list[ModelPreset]:
    """All presets found, the first definition of each name winning."""
    seen: dict[str, ModelPreset] = {}
    for folder in preset_dirs():
        if not folder.is_dir():
            continue
        for file in sorted((f for f in folder.iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name):
            preset = _load_preset(file)
            seen.setdefault(preset.name, preset)
    return list(seen.values())


def hf_hub_cache() -> Path:
    """The local Hugging Face hub cache folder (read from the environment at each call)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME")
    return (Path(home).expanduser() if home else Path("~/.cache/huggingface").expanduser()) / "hub"


def hf_cache_snapshot(repo_id: str) -> Path:
    """The cached snapshot folder of ``repo_id`` (its ``main`` revision), or where it would be.

    Reads only the local cache (``huggingface_hub.try_to_load_from_cache``): no network call.
    When the model is not cached, the returned path is the repository's cache folder
    (``models--<org>--<name>``), which does not exist.
    """
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    cache = hf_hub_cache()
    try:
        found = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache)
    except HFValidationError:  # not a valid Hugging Face id (e.g. 'org/a..b'): so not cached
        found = None
    if isinstance(found, str):
        return Path(found).parent
    return cache / f"models--{repo_id.replace('/', '--')}"


def get_preset(name: str) -> ModelPreset | None:
    """The preset called ``name``, or None."""
    for preset in list_presets():
        if preset.name == name:
            return preset
    return None


class _PresetWeights(BaseModel):
    """The ``weights`` mapping of a preset file (:class:`ModelPreset` says what each key means)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    env: str | None = None
    python_package: str | None = None
    file: str | None = None
    hf_id: str | None = None
    paths: list[str] = Field(default_factory=list)
    chunks: list[str] = Field(default_factory=list)
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F]{64}$")] | None = None

    @model_validator(mode="after")
    def _chunks_have_a_file_and_digest(self) -> _PresetWeights:
        if self.chunks and (self.file is None or self.sha256 is None):
            raise ValueError("'chunks' needs 'file' (the assembled name) and 'sha256'")
        return self


class _PresetFile(BaseModel):
    """A preset file's fields, validated (unknown keys refused, so a misspelt key is named)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str
    weights: _PresetWeights
    description: str = ""
    context_length: Annotated[int, Field(gt=0)] | None = None
    chat_template: str = ""
    license: str = ""
    prompt_format: Literal["chat", "completion"] | None = None
    backend: Literal["transformers", "llamacpp"] | None = None
    engine_args: dict[str, Any] = Field(default_factory=dict)


def _load_preset(file: Traversable) -> ModelPreset:
    """Read and validate one preset file (:class:`_PresetFile`).

    Raises
    ------
    InputError
        Invalid YAML, not a mapping, or a field that does not validate; the message names the
        file and the field (``field 'weights.sha256': ...``).
    """
    try:  # the same YAML limits as every other input file
        data = parse_yaml(file.read_text(encoding="utf-8"))
    except InputError as exc:
        raise InputError(f"{file}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{file}: a model preset must be a mapping")
    try:
        parsed = _PresetFile.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"{file}: {field_error(exc, _PresetFile)}") from None
    engine_args = check_engine_args(parsed.engine_args, f"{file}: field 'engine_args'")
    return ModelPreset(
        name=parsed.name,
        description=parsed.description,
        weights=parsed.weights.model_dump(exclude_defaults=True),
        context_length=parsed.context_length,
        chat_template=parsed.chat_template,
        license=parsed.license,
        source_file=file,
        prompt_format=parsed.prompt_format,
        backend=parsed.backend,
        engine_args=engine_args,
    )


def _assemble_if_chunked(preset: ModelPreset, candidate: Path) -> None:
    """Assemble ``preset``'s chunks into ``candidate`` when that is where they go and they are installed."""
    if not preset.weights.get("chunks") or candidate.exists():
        return
    if candidate != assembled_path(cache_dir(), preset.weights["file"]):
        return
    chunks = preset.chunk_files()
    if chunks is not None:
        assemble_chunks(chunks, candidate, preset.weights["sha256"], f"preset '{preset.name}' ({preset.source_file})")


def _classify(path: Path) -> Literal["hf_folder", "gguf"] | None:
    if path.is_file() and path.suffix.lower() == ".gguf":
        return "gguf"
    if path.is_dir() and (path / "config.json").is_file():
        return "hf_folder"
    return None


def resolve_model(spec: str) -> ResolvedModel:
    """Locate the model named by ``spec`` (preset name, HF folder or ``.gguf`` path).

    Raises
    ------
    ModelNotFoundError
        If nothing usable exists; the message lists every path searched and the presets known.
    ModelIntegrityError
        If the preset declares ``weights.sha256`` and the file found differs.
    """
    searched: list[str] = []
    preset = get_preset(spec)
    if preset is not None:
        for candidate in preset.candidate_paths():
            searched.append(str(candidate))
            _assemble_if_chunked(preset, candidate)
            kind = _classify(candidate)
            if kind:
                if kind == "gguf" and preset.weights.get("sha256"):
                    verify_sha256(candidate, preset.weights["sha256"], f"preset '{preset.name}' ({preset.source_file})")
                return ResolvedModel(kind, candidate, preset.name, preset, tuple(searched))
        hint = ""
        if preset.weights.get("chunks"):
            hint = ("\nThe weights ship as chunks in the Python packages "
                    + ", ".join(sorted({c.split('/')[0] for c in preset.weights['chunks']}))
                    + "; install them (see the preset file for the exact command).")
        elif preset.weights.get("python_package"):
            hint = (
                f"\nThe weights ship in the Python package '{preset.weights['python_package']}'; "
                "install it (see the preset file for the exact command)."
            )
        raise ModelNotFoundError(
            f"model preset '{spec}' ({preset.source_file}): weights not found. Looked in:\n  "
            + "\n  ".join(searched or ["(no candidate paths)"])
            + hint
        )
    path = Path(spec).expanduser()
    searched.append(str(path))
    kind = _classify(path)
    if kind:
        return ResolvedModel(kind, path, str(path), None, tuple(searched))
    hint = ""
    if HF_REPO_ID.match(spec) and not path.exists():
        snapshot = hf_cache_snapshot(spec)
        searched.append(f"{snapshot} (Hugging Face cache)")
        if _classify(snapshot) == "hf_folder":
            return ResolvedModel("hf_folder", snapshot, spec, None, tuple(searched))
        hint = (
            f" {spec!r} is not in the local Hugging Face cache ({hf_hub_cache()}; set HF_HUB_CACHE or"
            f" HF_HOME to use another). Nothing is downloaded: on a machine with network run"
            f" `huggingface-cli download {spec}` and copy its cache folder here, or pass the model's"
            " folder as the model."
        )
    known = ", ".join(p.name for p in list_presets()) or "none"
    raise ModelNotFoundError(
        f"model '{spec}' not found: it is not a preset (known presets: {known}; preset folders: "
        + ", ".join(str(d) for d in preset_dirs())
        + f"), and {path} is neither a Hugging Face model folder (with config.json) nor a .gguf file."
        + hint
        + " Looked in:\n  "
        + "\n  ".join(searched)
    )
