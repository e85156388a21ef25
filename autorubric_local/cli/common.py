"""Helpers shared by the CLI commands: error mapping, the rubric loader, option checks that
run before any judge is loaded (``--run``/``--name``, ``--db``), the human-label options
(``--labels``, ``--label-source``) and the Ray options (``--ray``, ``--workers``,
``--worker-cpus``, ``--worker-gpus``)."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import sqlite3
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from autorubric_local.core.errors import AutorubricError, InputError
from autorubric_local.runner.config import DistributedConfig
from autorubric_local.store.schema import refuse_newer_schema

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.core.rubric import Rubric
    from autorubric_local.graders.criterion_grader import JudgeSpec
    from autorubric_local.store import Store

MAX_NAME_LENGTH = 128
"""Longest ``--run`` / ``--name`` accepted."""
SQLITE_HEADER = b"SQLite format 3\x00"
MEMORY_DB = ":memory:"
MIN_FREE_BYTES = 2**20
"""Free space a writing command needs on the database's filesystem before any judge loads: a
new results database takes about 0.2 MB (its tables) and its write-ahead log as much again."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP received by a command under :func:`stops_on_termination`.

    A ``KeyboardInterrupt``, so a run stops on it exactly as on Ctrl-C: the chunk in flight is
    dropped, the run is marked ``interrupted`` and its lease released."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def stops_on_termination(command: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``command`` with SIGTERM and SIGHUP raising :class:`Terminated` in the main thread (what
    ``kill``, systemd, Slurm and Kubernetes send, and a closed terminal), the previous handlers
    restored after it. Off the main thread (where Python delivers no signal) it changes nothing."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            return command(*args, **kwargs)

        def handler(signum: int, frame: Any) -> None:
            raise Terminated(signum)

        previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
        try:
            return command(*args, **kwargs)
        finally:
            for s, h in previous.items():
                signal.signal(s, h)

    return wrapper


def interrupted(exc: KeyboardInterrupt, db_path: Path) -> SystemExit:
    """Say that a run stopped (Ctrl-C, or a :class:`Terminated` signal) and what is kept, and the
    exit to raise: 130 for SIGINT, 128 + the signal's number otherwise (143 for SIGTERM)."""
    signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
    how = "" if signum == signal.SIGINT else f" by {signal.Signals(signum).name}"
    plain_console(stderr=True).print(f"interrupted{how}: committed chunks are kept in {db_path}; run again with the "
                                     "same --run to resume", markup=False)
    return SystemExit(128 + int(signum))


EXIT_WRITE_FAILED = 4
"""Exit status when the results database could not be written (a full disk, a read-only file)."""


def write_failed(exc: BaseException, db_path: Path) -> SystemExit:
    """Say that the results database could not be written, what is kept and how to resume, and
    the exit to raise (:data:`EXIT_WRITE_FAILED`)."""
    plain_console(stderr=True).print(f"error: {exc}\n(results database: {db_path}; move it only with its -wal and "
                                     "-shm files, or make a copy with VACUUM INTO)", markup=False)
    return SystemExit(EXIT_WRITE_FAILED)


def fail(exc: BaseException) -> click.ClickException:
    """A library error as a clean CLI error (message only, exit status 1)."""
    return click.ClickException(str(exc))


def load_rubric(path: Path) -> Rubric:
    """The rubric file at ``path``; a clean CLI error naming the file when it cannot be read.

    Raises
    ------
    click.ClickException
        Any problem with the file (exit status 1); the message starts with the path.
    """
    from autorubric_local.core.rubric import Rubric

    try:
        return Rubric.from_file(str(path))
    except AutorubricError as exc:
        raise fail(exc) from exc
    except OSError as exc:
        raise click.ClickException(f"{path}: {exc}") from exc


def check_name(value: str) -> None:
    """Refuse a run or sweep name that is empty, too long or not printable.

    Raises
    ------
    InputError
        Naming the problem and the name.
    """
    if not value.strip():
        raise InputError("must not be empty")
    if len(value) > MAX_NAME_LENGTH:
        raise InputError(f"too long ({len(value)} characters; at most {MAX_NAME_LENGTH})")
    if not value.isprintable():
        raise InputError(f"must be printable (no control characters), got {value!r}")


def name_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback for ``--name``: :func:`check_name` as a usage error (exit status 2)."""
    if value is not None:
        try:
            check_name(value)
        except InputError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
    return value


def run_name_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback for ``--run``: :func:`check_name` plus the runner's rule for run names
    (letters, digits, ``.``, ``_``, ``-``), as a usage error (exit status 2)."""
    from autorubric_local.runner.config import EvalConfig

    if value is not None:
        try:
            check_name(value)
            EvalConfig(experiment_name=value, db_path=MEMORY_DB, show_progress=False)
        except InputError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
    return value


def system_files_option(ctx: click.Context, param: click.Parameter,
                        value: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Click callback for a repeatable ``--system NAME=FILE`` (``compare``, ``label select``):
    ``(name, file)`` per value, in order; anything else is a usage error (exit status 2)."""
    pairs = []
    for text in value:
        name, sep, file = text.partition("=")
        if not sep or not name or not file:
            raise click.BadParameter(f"expected NAME=FILE, got {text!r}", ctx, param)
        pairs.append((name, file))
    return tuple(pairs)


def check_database_path(path: Path, *, write: bool = True) -> None:
    """Refuse a results database path that cannot work, before any judge is loaded.

    An existing path must be a writable file that is empty or an SQLite database (its header
    is read and it is opened read-only; nothing is created or migrated); with ``write=False``
    (the commands that only read) it need not be writable. A new path needs its nearest existing
    folder to be a writable folder. A command that writes needs :data:`MIN_FREE_BYTES` free on
    the file's filesystem. ``":memory:"`` is always accepted.

    Raises
    ------
    InputError
        Naming the path and the problem.
    """
    if str(path) == MEMORY_DB:
        return
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected an SQLite file")
    if not path.exists():
        folder = path.absolute().parent
        while not folder.exists():
            folder = folder.parent
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(f"{path}: cannot be created ({folder} is not a writable folder)")
        if write:
            _refuse_full_disk(path, folder)
        return
    if not path.is_file():
        raise InputError(f"{path}: not a regular file")
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not header:  # SQLite makes an empty file a new database
        if write:
            _refuse_full_disk(path, path.absolute().parent)
        return
    if header != SQLITE_HEADER:
        raise InputError(f"{path}: not an SQLite database (it does not start with 'SQLite format 3')")
    try:
        immutable = "" if os.access(path.absolute().parent, os.W_OK | os.X_OK) else "&immutable=1"  # no -shm there
        with closing(sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro{immutable}", uri=True)) as db:
            has_migrations = db.execute("SELECT count(*) FROM sqlite_master WHERE name = '_migrations'").fetchone()[0]
            newest = db.execute("SELECT max(number) FROM _migrations").fetchone()[0] if has_migrations else None
    except sqlite3.Error as exc:
        raise InputError(f"{path}: cannot be read as an SQLite database: {exc}") from None
    refuse_newer_schema(path, newest or 0)
    if write and not os.access(path, os.W_OK):
        raise InputError(f"{path}: not writable")
    if write:
        _refuse_full_disk(path, path.absolute().parent)


def _refuse_full_disk(path: Path, folder: Path) -> None:
    """Refuse to write ``path`` when its filesystem (that of ``folder``) has less than
    :data:`MIN_FREE_BYTES` free: said before a judge loads, not as SQLite's ``database or disk
    is full`` once it has."""
    free = shutil.disk_usage(folder).free
    if free < MIN_FREE_BYTES:
        raise InputError(f"{path}: its disk is full ({free // 1024} KiB free in {folder}; a run needs at least "
                         f"{MIN_FREE_BYTES // 2**20} MiB): free some space, or give --db a file on another disk")


def database_option(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    """Click callback for ``--db``: :func:`check_database_path` as a usage error (exit 2)."""
    try:
        check_database_path(value)
    except InputError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    return value


def open_store(db_path: Path) -> Store:
    """The existing results database at ``db_path``, opened for reading
    (:meth:`~autorubric_local.store.Store.open_read_only`: migrated where it is writable; a
    read-only file, folder or mount is read without writing to it).

    Raises
    ------
    click.ClickException
        The file is missing or not a results database; the message names the file.
    """
    from autorubric_local.store import Store

    if not db_path.is_file():
        raise click.ClickException(f"{db_path}: no such results database (grade writes one; see --db)")
    try:
        check_database_path(db_path, write=False)
        return Store.open_read_only(db_path)
    except (InputError, sqlite3.Error) as exc:
        message = str(exc)  # the path once, not twice
        raise click.ClickException(message if message.startswith(f"{db_path}:") else f"{db_path}: {message}") from None


def open_run(db_path: Path, run: str) -> tuple[Store, dict[str, Any]]:
    """The store at ``db_path`` (see :func:`open_store`) and its run ``run`` (a name, meaning
    the latest run of that name, or a run id), for the commands that read a run.

    Raises
    ------
    click.ClickException
        As :func:`open_store`, or the database has no such run; the message names the file
        and lists the runs it has.
    """
    store = open_store(db_path)
    row = store.find_run(run)
    if row is None:
        names = store.run_names()
        store.close()
        known = ", ".join(repr(n) for n in dict.fromkeys(names)) if names else "none"
        raise click.ClickException(f"{db_path}: no run named or with id {run!r} (runs: {known})")
    return store, row


def judge_specs(model: str, judges_path: Path | None) -> list[JudgeSpec]:
    """The judges of ``--model`` (one judge, its id the model's name) or of ``--judges FILE``
    (:func:`~autorubric_local.graders.panel_file.load_judges_file`), for sweeps and comparisons.

    Raises
    ------
    InputError
        As ``load_judges_file``: the file cannot be read or names a bad judge.
    """
    from autorubric_local.graders.criterion_grader import JudgeSpec
    from autorubric_local.judges.config import LLMConfig

    if judges_path is None:
        return [JudgeSpec(LLMConfig(model=model), model)]
    from autorubric_local.graders.panel_file import load_judges_file

    return list(load_judges_file(judges_path).judges)


def plain_console(stderr: bool = False) -> Console:
    """A console that is as wide as the terminal on a terminal, and unlimited (no wrapping,
    no folding) when stdout is piped or redirected, so that names and text stay whole."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=100_000, soft_wrap=True)


LABELS_HELP = ("Human labels to use instead of the dataset's ground truth: JSONL of {\"id\", \"ground_truth\": "
               "[...]} or a Label Studio export (JSON or JSON-MIN). Stored in DB with the file's path as "
               "source; items not in the run are skipped (one warning).")
LABEL_SOURCE_HELP = "Labels stored earlier from this source (a labels file's path, e.g. by estimate --labels)."


def interval_cell(interval: Any, notes: list[str], *, signed: bool = False) -> str:
    """``estimate [low, high]`` of an :class:`~autorubric_local.estimates.methods.Interval` to 3
    decimals (with a sign when ``signed``), ``-`` when it has none; each of its notes (joined by
    ``"; "``) not yet in ``notes`` is appended there, for the ``note k:`` lines under a table."""
    for note in (interval.note or "").split("; "):
        if note and note not in notes:
            notes.append(note)
    if interval.ci_low is None:
        return "-"
    f = "+.3f" if signed else ".3f"
    return f"{interval.estimate:{f}} [{interval.ci_low:{f}}, {interval.ci_high:{f}}]"


def label_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--labels FILE`` (``labels_file``, a Path) and ``--label-source SRC`` (``label_source``):
    the one way every analysis of a stored run takes human labels (read them with
    :func:`autorubric_local.estimates.api.run_with_labels`, inside :func:`label_warnings`)."""
    command = click.option("--label-source", "label_source", default=None, metavar="SRC",
                           help=LABEL_SOURCE_HELP)(command)
    return click.option("--labels", "labels_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        metavar="FILE", help=LABELS_HELP)(command)


@contextmanager
def label_warnings() -> Iterator[None]:
    """Print each :class:`~autorubric_local.estimates.labels.LabelsSkippedWarning` raised in the
    block as one ``warning:`` line on stderr, and each
    :class:`~autorubric_local.core.errors.NotStoredWarning` (a read-only database) and
    :class:`~autorubric_local.estimates.labels.PartlyLabelledWarning` as one ``note:`` line
    (after the block, also when it fails)."""
    from autorubric_local.core.errors import NotStoredWarning
    from autorubric_local.estimates.labels import LabelsSkippedWarning, PartlyLabelledWarning

    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LabelsSkippedWarning)
            warnings.simplefilter("always", NotStoredWarning)
            warnings.simplefilter("always", PartlyLabelledWarning)
            yield
    finally:
        for warning in caught:
            if issubclass(warning.category, LabelsSkippedWarning):
                click.echo(f"warning: {warning.message}", err=True)
            elif issubclass(warning.category, (NotStoredWarning, PartlyLabelledWarning)):
                click.echo(f"note: {warning.message}", err=True)
            else:  # not ours: handed back to the filters outside the block
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)


def ray_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--ray``, ``--workers``, ``--worker-cpus``, ``--worker-gpus`` (read them with
    :func:`distributed_config`)."""
    options = [
        click.option("--ray", "ray_address", default=None, metavar="local|auto|ADDRESS",
                     help="Grade chunks on Ray actors (the [ray] extra): 'local' starts a Ray head in this process, "
                          "'auto' joins the cluster started on this machine by `ray start --head`, ADDRESS "
                          "(HOST:PORT) another one. Each actor loads the judges from its own node's files; this "
                          "process plans and commits every chunk to --db, so resume and results are those of a "
                          "local run."),
        click.option("--workers", type=click.IntRange(min=1), default=None,
                     help="Ray actors with --ray, each holding every judge. [default: 2]"),
        click.option("--worker-cpus", type=click.FloatRange(min=0), default=None,
                     help="CPUs Ray reserves per actor with --ray (its torch threads). [default: 1]"),
        click.option("--worker-gpus", type=click.FloatRange(min=0), default=None,
                     help="GPUs Ray reserves per actor with --ray (e.g. the judge's tensor parallel size). "
                          "[default: 0]"),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def distributed_config(
    ray_address: str | None, workers: int | None, worker_cpus: float | None, worker_gpus: float | None
) -> DistributedConfig | None:
    """The ``DistributedConfig`` of :func:`ray_options` (None without --ray).

    Raises
    ------
    click.UsageError
        A worker option without --ray, or a value ``DistributedConfig`` refuses.
    """
    if ray_address is None:
        given = [name for name, value in (("--workers", workers), ("--worker-cpus", worker_cpus),
                                          ("--worker-gpus", worker_gpus)) if value is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)} only apply with --ray local|auto|ADDRESS")
        return None
    settings = {"workers": workers, "num_cpus": worker_cpus, "num_gpus": worker_gpus}
    try:
        return DistributedConfig(address=ray_address, **{k: v for k, v in settings.items() if v is not None})
    except InputError as exc:
        raise click.UsageError(str(exc)) from exc


DEFAULT_DB = Path("results.sqlite")
"""The results database of a command given no ``--db``."""


def runs_and_databases(command: str, args: tuple[str, ...], db_paths: tuple[Path, ...],
                       run_options: tuple[str, ...]) -> tuple[list[str], list[Path]]:
    """The runs and results databases of an analysis command (``metrics``, ``calibrate``,
    ``indeterminacy``) called as ``COMMAND RUN... --db DB``, or in its deprecated form
    ``COMMAND DB... --run RUN`` (kept for one release).

    The deprecated form is read when no ``--db`` is given and every positional argument is an
    existing file (so a run named like an existing file needs ``--db``); a ``note:`` line on
    stderr says so. ``--run`` is accepted in either form (in the new one with a note).

    Parameters
    ----------
    command : str
        The command's name, for the notes.
    args : tuple of str
        The positional arguments, as given.
    db_paths : tuple of Path
        The ``--db`` values (empty when none was given).
    run_options : tuple of str
        The ``--run`` values.

    Returns
    -------
    (runs, databases)
        The run names or ids (empty: the command's default) and the databases (at least one:
        :data:`DEFAULT_DB` when none was named), each checked to exist.

    Raises
    ------
    click.UsageError
        Without ``--db``, some positional arguments are existing files and some are not.
    click.ClickException
        A database is missing or is not a file; the message names it.
    """
    if not db_paths and args and all(Path(a).is_file() for a in args):
        click.echo(f"note: '{command} DB --run RUN' is deprecated; use '{command} RUN --db DB'", err=True)
        runs, databases = list(run_options), [Path(a) for a in args]
    else:
        files = [a for a in args if Path(a).is_file()] if not db_paths else []
        if files:
            raise click.UsageError(f"{files[0]!r} is an existing file but other arguments are not: give the runs "
                                   f"first and each database with --db ('{command} RUN... --db DB')")
        if run_options:
            click.echo(f"note: '--run' is deprecated; use '{command} RUN --db DB'", err=True)
        runs, databases = [*args, *run_options], list(db_paths) or [DEFAULT_DB]
    for path in databases:
        if path.is_dir():
            raise click.ClickException(f"{path}: is a directory, expected a results database (see --db)")
        if not path.is_file():
            raise click.ClickException(f"{path}: no such results database (grade writes one; give its path with "
                                       "--db)")
    return runs, databases


def run_and_database(command: str, run: str | None, db_path: Path | None,
                     run_option: str | None) -> tuple[str | None, Path]:
    """:func:`runs_and_databases` for a command that reads one run (``[RUN] [--db DB]``): the
    run (None: the command's default, the latest run) and the database.

    Raises
    ------
    click.UsageError
        The run is given twice (as RUN and as ``--run``).
    click.ClickException
        As :func:`runs_and_databases`.
    """
    runs, (database,) = runs_and_databases(command, (run,) if run is not None else (),
                                           (db_path,) if db_path is not None else (),
                                           (run_option,) if run_option is not None else ())
    if len(runs) > 1:
        raise click.UsageError(f"give the run once, as RUN (got {runs[0]!r} and --run {runs[1]!r})")
    return (runs[0] if runs else None), database
