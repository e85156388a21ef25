"""Settings of an evaluation run: :class:`EvalConfig` (AutoRubric's README, "EvalConfig Options").

Extensions over AutoRubric: ``db_path`` (one SQLite file instead of ``experiments_dir/<name>``),
``chunk_judgments`` (the memory budget of one engine workload), ``chunk_seconds`` (its time
budget), the run lease's timing
(``lease_timeout_seconds``, ``lease_heartbeat_seconds``) and ``distributed``
(:class:`DistributedConfig`: grade on Ray actors). ``max_concurrent_items``
keeps its meaning of "items in flight": here, the most items sent to the engine in one chunk.
"""

from __future__ import annotations

import math
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from autorubric_local.core.errors import InputError
from autorubric_local.runner.chunking import DEFAULT_CHUNK_SECONDS
from autorubric_local.store.leases import DEFAULT_LEASE_TIMEOUT_SECONDS

ProgressStyle = Literal["simple", "detailed"]
PROGRESS_STYLES: tuple[str, ...] = ("simple", "detailed")
DEFAULT_CHUNK_JUDGMENTS = 512
DEFAULT_LEASE_HEARTBEAT_SECONDS = 10.0
MEMORY_DB = ":memory:"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

RAY_LOCAL = "local"
RAY_AUTO = "auto"


@dataclass(frozen=True)
class DistributedConfig:
    """Grade a run's chunks on Ray actors (:mod:`autorubric_local.runner.distributed`; needs the
    ``[ray]`` extra). The driver still plans, chunks and commits every chunk to SQLite.

    Parameters
    ----------
    address : str, default "local"
        ``"local"``: start a Ray head in this process (``ray.init`` with ``workers * num_cpus``
        CPUs), shut down after the run; ``"auto"``: join the cluster started on this machine
        with ``ray start --head``; anything else: a cluster address (``HOST:PORT`` or
        ``ray://HOST:PORT``). A process already connected to Ray (``ray.is_initialized()``)
        uses that connection whatever the address.
    workers : int >= 1, default 2
        Ray actors, each holding every judge's engine (loaded on its node from the judge
        config; weights are never shipped).
    num_cpus : float >= 0, default 1
        CPUs Ray reserves per actor (Ray also sets the actor's ``OMP_NUM_THREADS`` from it).
    num_gpus : float >= 0, default 0
        GPUs Ray reserves per actor (e.g. ``tensor_parallel_size`` of a vLLM judge).
    chunks_per_worker : int >= 1, default 2
        Chunks in flight per actor (one graded while the next one waits), bounding the
        driver's queue to ``workers * chunks_per_worker`` chunks.
    max_restarts : int >= -1, default 3
        Ray restarts an actor whose process died this many times (-1: without limit); its
        chunks in flight are then graded again (``max_task_retries``).
    max_task_retries : int >= -1, default 3
        Times Ray re-sends a chunk whose actor died while grading it (-1: without limit).

    Raises
    ------
    InputError
        A value out of range; the message names the field, the allowed values and the value.
    """

    address: str = RAY_LOCAL
    workers: int = 2
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    chunks_per_worker: int = 2
    max_restarts: int = 3
    max_task_retries: int = 3

    def __post_init__(self) -> None:
        def bad(field: str, expected: str, value: object) -> None:
            raise InputError(f"DistributedConfig.{field}: expected {expected}, got {value!r}")

        if not isinstance(self.address, str) or not self.address.strip():
            bad("address", "'local', 'auto' or a Ray address (HOST:PORT, ray://HOST:PORT)", self.address)
        for name in ("workers", "chunks_per_worker"):
            if not _positive_int(getattr(self, name)):
                bad(name, "an integer >= 1", getattr(self, name))
        for name in ("num_cpus", "num_gpus"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                    and value >= 0):
                bad(name, "a number >= 0", value)
        for name in ("max_restarts", "max_task_retries"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < -1:
                bad(name, "an integer >= -1 (-1: without limit)", value)


@dataclass(frozen=True)
class EvalConfig:
    """How :class:`~autorubric_local.runner.EvalRunner` runs a dataset.

    Parameters
    ----------
    fail_fast : bool, default False
        Stop at the first item that fails at run time (after committing its chunk) and raise.
    show_progress : bool, default True
        Show a rich progress bar of judgments and items (on stderr).
    progress_style : {"simple", "detailed"}, default "simple"
        ``detailed`` adds rates and the time remaining.
    max_concurrent_items : int >= 1 or None, default None
        Most items per engine chunk (None: limited by ``chunk_judgments`` only).
    experiment_name : str or None, default None
        Name of the run (letters, digits, ``.``, ``_``, ``-``); auto-generated when None.
        Running again with the same name resumes that run.
    experiments_dir : str or Path, default "experiments"
        The database is ``experiments_dir/<experiment_name>/results.sqlite``.
    db_path : str or Path or None, default None
        Use this SQLite file instead (runs are told apart by name); ``":memory:"`` keeps
        nothing.
    resume : bool, default True
        Continue the latest run of this name if the database has one; False starts a new run.
    chunk_judgments : int >= 1, default 512
        Most judgments per engine chunk (an item is never split; a larger item runs alone).
        Each finished chunk is committed in one transaction.
    chunk_seconds : float > 0 or None, default 30
        Time budget of one chunk when grading in this process: after the first chunk (one
        item) each chunk is sized from the pace measured so far to take about this long
        (grading and commit), within ``chunk_judgments``, so a kill loses little on any
        machine and in any mode (:class:`~autorubric_local.runner.chunking.TimedChunks`).
        None: chunks by size only. Ray runs (``distributed``) and other executors than the
        default one queue chunks by size.
    lease_timeout_seconds : float > 0, default 60
        A run being graded is leased to one process; another process may take the lease over
        when its heartbeat is older than this (or, on the same host, when its process ended).
    lease_heartbeat_seconds : float > 0, default 10
        How often a background thread renews this run's lease (each committed chunk renews it
        too); must be less than ``lease_timeout_seconds``.
    distributed : DistributedConfig or None, default None
        Grade chunks on Ray actors instead of in this process; the stored run is the same.

    Raises
    ------
    InputError
        A value out of range; the message names the field, the allowed values and the value.
    """

    fail_fast: bool = False
    show_progress: bool = True
    progress_style: ProgressStyle = "simple"
    max_concurrent_items: int | None = None
    experiment_name: str | None = None
    experiments_dir: str | Path = "experiments"
    db_path: str | Path | None = None
    resume: bool = True
    chunk_judgments: int = DEFAULT_CHUNK_JUDGMENTS
    chunk_seconds: float | None = DEFAULT_CHUNK_SECONDS
    lease_timeout_seconds: float = DEFAULT_LEASE_TIMEOUT_SECONDS
    lease_heartbeat_seconds: float = DEFAULT_LEASE_HEARTBEAT_SECONDS
    distributed: DistributedConfig | None = None

    def __post_init__(self) -> None:
        for name in ("fail_fast", "show_progress", "resume"):
            if not isinstance(getattr(self, name), bool):
                _bad(name, "a boolean", getattr(self, name))
        if self.progress_style not in PROGRESS_STYLES:
            _bad("progress_style", "'simple' or 'detailed'", self.progress_style)
        if self.max_concurrent_items is not None and not _positive_int(self.max_concurrent_items):
            _bad("max_concurrent_items", "an integer >= 1 or None", self.max_concurrent_items)
        if not _positive_int(self.chunk_judgments):
            _bad("chunk_judgments", "an integer >= 1", self.chunk_judgments)
        if self.chunk_seconds is not None and not _positive_number(self.chunk_seconds):
            _bad("chunk_seconds", "a number of seconds > 0 or None", self.chunk_seconds)
        for name in ("lease_timeout_seconds", "lease_heartbeat_seconds"):
            if not _positive_number(getattr(self, name)):
                _bad(name, "a number of seconds > 0", getattr(self, name))
        if self.lease_heartbeat_seconds >= self.lease_timeout_seconds:
            _bad("lease_heartbeat_seconds", f"less than lease_timeout_seconds ({self.lease_timeout_seconds:g})",
                 self.lease_heartbeat_seconds)
        if self.experiment_name is not None and (
            not isinstance(self.experiment_name, str) or not _NAME.match(self.experiment_name)
        ):
            _bad("experiment_name", "letters, digits, '.', '_' or '-' (not starting with '.', '_' or '-')",
                 self.experiment_name)
        if not isinstance(self.experiments_dir, (str, Path)) or not str(self.experiments_dir):
            _bad("experiments_dir", "a non-empty path", self.experiments_dir)
        if self.db_path is not None and (not isinstance(self.db_path, (str, Path)) or not str(self.db_path)):
            _bad("db_path", "a non-empty path or None", self.db_path)
        if self.distributed is not None and not isinstance(self.distributed, DistributedConfig):
            _bad("distributed", "a DistributedConfig or None", self.distributed)

    def database_path(self, name: str) -> str | Path:
        """Where run ``name`` is stored: ``db_path``, else ``experiments_dir/<name>/results.sqlite``."""
        if self.db_path is not None:
            return self.db_path if str(self.db_path) == MEMORY_DB else Path(self.db_path)
        return Path(self.experiments_dir) / name / "results.sqlite"


def auto_name(prefix: str | None = None) -> str:
    """A readable unique run name: ``<prefix>-<utc date>-<time>-<4 hex>`` (prefix ``eval``)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", prefix or "").strip("-._") or "eval"
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{slug[:40]}-{stamp}-{secrets.token_hex(2)}"


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _positive_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _bad(field: str, expected: str, value: object) -> None:
    raise InputError(f"EvalConfig.{field}: expected {expected}, got {value!r}")
