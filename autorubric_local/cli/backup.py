"""``autorubric-local backup``: a self-contained copy of a results database, safe to move."""

from __future__ import annotations

from pathlib import Path

import click

from autorubric_local.cli.common import EXIT_WRITE_FAILED, check_database_path, fail, plain_console
from autorubric_local.core.errors import AutorubricError, DatabaseWriteError, InputError


@click.command()
@click.argument("dest", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("results.sqlite"),
              show_default=True, help="The results database to copy.")
def backup(dest: Path, db_path: Path) -> None:
    """Copy the results database to DEST, one self-contained file to move, share or archive.

    The copy holds every commit, including those still in the database's -wal file, and can be
    made while a run is writing (it is of one moment) or from a read-only file or mount. DEST
    must not exist. A plain copy of the .sqlite file alone can miss the last chunks or read as
    malformed (docs/results.md, "Moving, sharing and archiving a database").

    Example:

        autorubric-local backup archive/results-2026-12-02.sqlite --db results.sqlite
    """
    from autorubric_local.store.schema import copy_db

    try:
        if not db_path.is_file():
            raise InputError(f"{db_path}: no such results database")
        check_database_path(db_path, write=False)
        if dest.exists():
            raise InputError(f"{dest}: exists; give the copy a new file name")
        check_database_path(dest)  # its folder writable, room on its disk
        copy_db(db_path, dest)
    except DatabaseWriteError as exc:  # exit 4, as for a run whose database cannot be written
        plain_console(stderr=True).print(f"error: {exc}", markup=False)
        raise SystemExit(EXIT_WRITE_FAILED) from None
    except AutorubricError as exc:
        raise fail(exc) from exc
    plain_console(stderr=True).print(f"copied {db_path} to {dest}", markup=False)
