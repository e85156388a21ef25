"""Hugging Face datasets in the local cache, read as tables (issue 54): ``hf:OWNER/NAME[:SPLIT]``.

A dataset someone downloaded once (``huggingface-cli download OWNER/NAME --repo-type dataset``,
or ``datasets.load_dataset("OWNER/NAME")`` on a machine with network) sits in the Hugging Face
hub cache (``$HF_HUB_CACHE``, by default ``~/.cache/huggingface/hub``). Naming it as
``hf:OWNER/NAME`` (a split with ``:SPLIT``) reads it from there and nowhere else: the snapshot
is found with :func:`huggingface_hub.snapshot_download` and ``local_files_only=True`` (no request
leaves the machine, not even a revision check), then its data files (Parquet, CSV, JSON Lines:
whatever the ``datasets`` library's packaged builders read) are streamed with
``datasets.load_dataset(snapshot, split=..., streaming=True)``, a row at a time, so no Arrow
copy is written and ``limit`` stops reading early. Rows become submissions (or comparison rows)
exactly as a CSV or Parquet file's do (:mod:`~autorubric_local.data.tables`), with the same
column mapping and the same errors, naming ``hf:OWNER/NAME:SPLIT``, the row and the column.

The ``datasets`` library is an optional extra (``pip install 'autorubric-local[hf]'``). A dataset
with several configurations is read with its default one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorubric_local.core.errors import InputError

__all__ = ["HUB_PREFIX", "HubDataset", "hub_rows", "is_hub_source"]

HUB_PREFIX = "hf:"
"""What starts a data argument that names a cached Hugging Face dataset."""


def is_hub_source(source: str | Path) -> bool:
    """Whether ``source`` names a cached Hugging Face dataset (``hf:...``) rather than a file: it
    starts with :data:`HUB_PREFIX` and no file of that name exists."""
    text = str(source)
    return text.startswith(HUB_PREFIX) and not Path(text).exists()


@dataclass(frozen=True)
class HubDataset:
    """A parsed ``hf:OWNER/NAME[:SPLIT]``.

    Attributes
    ----------
    repo_id : str
        The dataset's id on the Hub, ``OWNER/NAME`` (or ``NAME``).
    split : str or None
        The split to read; None: the dataset's only split (several: refused, naming them).
    """

    repo_id: str
    split: str | None = None

    @classmethod
    def parse(cls, source: str | Path) -> HubDataset:
        """Parse ``hf:OWNER/NAME[:SPLIT]``.

        Raises
        ------
        InputError
            No name, or a name or split with characters a Hub id cannot have.
        """
        text = str(source)
        body = text[len(HUB_PREFIX):] if text.startswith(HUB_PREFIX) else text
        repo_id, _, split = body.partition(":")
        parts = repo_id.split("/")
        if not repo_id or len(parts) > 2 or not all(parts) or any(not _id_chars(p) for p in parts):
            raise InputError(f"{text}: expected hf:OWNER/NAME or hf:OWNER/NAME:SPLIT (a Hugging Face dataset id)")
        if ":" in split or (split and not _id_chars(split)):
            raise InputError(f"{text}: {split!r} is not a split name")
        return cls(repo_id, split or None)

    def __str__(self) -> str:
        return f"{HUB_PREFIX}{self.repo_id}" + (f":{self.split}" if self.split else "")


def _id_chars(text: str) -> bool:
    return all(c.isalnum() or c in "-_." for c in text) and not text.startswith(".")


def hub_rows(source: str | Path) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """``(header, rows)`` of the cached dataset ``source`` names: the column names and the rows
    (column -> cell, as ``datasets`` gives them in Python; None when null), streamed.

    Raises
    ------
    InputError
        ``datasets`` is not installed; the dataset is not in the local cache; it has no data
        files ``datasets`` can read; the split does not exist, or none was given and there are
        several (the message names them); a file unreadable further on.
    """
    wanted = HubDataset.parse(source)
    try:
        import datasets
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError:
        raise InputError(f"{wanted}: reading a Hugging Face dataset needs the datasets library "
                         "(pip install 'autorubric-local[hf]')") from None
    try:
        snapshot = snapshot_download(wanted.repo_id, repo_type="dataset", local_files_only=True)
    except LocalEntryNotFoundError:
        raise InputError(f"{wanted}: not in the local Hugging Face cache ({_hub_cache()}); download it first on a "
                         f"machine with network: huggingface-cli download {wanted.repo_id} --repo-type dataset") from None
    try:
        splits = datasets.load_dataset(snapshot, streaming=True)
    except (ValueError, FileNotFoundError, datasets.exceptions.DatasetGenerationError) as exc:
        raise InputError(f"{wanted}: no data files the datasets library can read in {snapshot}: {exc}") from None
    names = list(splits)
    split = wanted.split
    if split is None:
        if len(names) != 1:
            raise InputError(f"{wanted}: {len(names)} splits ({', '.join(names)}); name one, e.g. {wanted}:{names[0]}")
        split = names[0]
    elif split not in names:
        raise InputError(f"{wanted}: no split {split!r} (the splits: {', '.join(names)})")
    name = str(HubDataset(wanted.repo_id, split))
    stream = splits[split]
    header = list(stream.features) if stream.features is not None else []

    def rows() -> Iterator[dict[str, Any]]:
        try:
            yield from stream
        except (ValueError, OSError, datasets.exceptions.DatasetGenerationError) as exc:
            raise InputError(f"{name}: cannot be read further: {exc}") from None

    return header, rows()


def _hub_cache() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)
