"""``autorubric-local browse``: the results database in Datasette (the ``[browse]`` extra)."""

from __future__ import annotations

from pathlib import Path

import click

from autorubric_local.browse.server import DEFAULT_HOST, DEFAULT_PORT
from autorubric_local.cli.common import fail, open_store


@click.command()
@click.argument("db_path", metavar="[DB]", type=click.Path(dir_okay=False, path_type=Path),
                default=Path("results.sqlite"))
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help="Address to listen on (0.0.0.0: every interface, reachable from other machines).")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port to listen on (0: a free port, printed).")
def browse(db_path: Path, host: str, port: int) -> None:
    """Serve the results database DB [default: results.sqlite] with Datasette until Ctrl-C.

    Tables and views are titled and described, with facets on run, criterion, verdict and
    judge, and canned queries: disagreements between judges, judge vs human, lowest-scoring
    items, off-label judgments. Full-text search covers submissions (items) and explanations
    (judgments): its indexes are created or rebuilt each time browse starts (the only write it
    makes; grading pays nothing for them), so rows graded after that are found by search after
    a restart. A database this process cannot write (a read-only file, folder or mount) is
    served as it is, unchanged, searched with the indexes it already holds. Needs the [browse] extra: pip install 'autorubric-local[browse]'.

    Example:

        autorubric-local browse results.sqlite --port 8001
    """
    import sqlite3

    from autorubric_local.browse import browse_metadata, index_text, listen, require_datasette, serve
    from autorubric_local.browse.search import SEARCHED_COLUMNS
    from autorubric_local.browse.server import database_name
    from autorubric_local.store.schema import writable_here
    from autorubric_local.core.errors import AutorubricError

    try:
        require_datasette()
        writable = db_path.is_file() and writable_here(db_path)
        store = open_store(db_path)
        try:
            indexed = index_text(store.db) if writable else None
            metadata = browse_metadata(store.db, database_name(db_path))
            searchable = [table for table in SEARCHED_COLUMNS if store.db[f"{table}_fts"].exists()]
        except sqlite3.Error as exc:  # a writer held the lock past the busy timeout
            raise click.ClickException(f"{db_path}: cannot build the search indexes: {exc}") from None
        finally:
            store.close()
        sock = listen(host, port)
        if indexed is not None:
            click.echo(f"full-text search over {', '.join(f'{n} {t}' for t, n in indexed.items())} (indexed now)",
                       err=True)
        elif searchable:
            click.echo(f"{db_path} is read-only here: full-text search over {', '.join(searchable)} uses the indexes "
                       "it holds (rows graded after the last browse with write access are not found)", err=True)
        else:
            click.echo(f"{db_path} is read-only here and holds no search indexes: no full-text search (run browse "
                       "once where the file is writable to build them)", err=True)
        serve(db_path, metadata, sock, immutable=not writable,
              on_ready=lambda url: click.echo(f"Serving {db_path} at {url} (Ctrl-C to stop)"))
    except AutorubricError as e:
        raise fail(e) from None
