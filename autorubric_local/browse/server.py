"""Serve one results database with Datasette (the ``[browse]`` extra, imported lazily) until
interrupted (Ctrl-C), on a socket this module binds, so a bind error is a clean message and
``port=0`` reports the port the system chose."""

from __future__ import annotations

import asyncio
import importlib.util
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autorubric_local.core.errors import AutorubricError

BROWSE_MISSING = "autorubric-local browse needs Datasette: pip install 'autorubric-local[browse]'"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8001
SETTINGS: dict[str, Any] = {"sql_time_limit_ms": 5000, "facet_time_limit_ms": 1000}
"""Datasette settings: the canned queries and facets read every row of a run, so they get more
time than Datasette's defaults (1 s and 200 ms); a facet that takes longer shows as timed out."""


def require_datasette() -> None:
    """Check that Datasette is installed, before anything is written.

    Raises
    ------
    AutorubricError
        It is not (the message names the extra).
    """
    if importlib.util.find_spec("datasette") is None:
        raise AutorubricError(BROWSE_MISSING)


def database_name(path: Path) -> str:
    """The name Datasette serves the file under (its stem: ``results`` for results.sqlite)."""
    return path.stem


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (``port`` 0: a free port the system picks).

    Raises
    ------
    AutorubricError
        The address cannot be bound (in use, not this machine's, no permission).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise AutorubricError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def url_of(sock: socket.socket, path: str = "/") -> str:
    """``http://HOST:PORT<path>`` of a bound socket (an IPv6 host in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{path}"


def serve(path: Path, metadata: dict[str, Any], sock: socket.socket, *, on_ready: Callable[[str], None],
          immutable: bool = False) -> None:
    """Serve ``path`` with ``metadata`` on the listening ``sock`` until interrupted (then
    return normally); call
    ``on_ready`` with the database page's URL once the app is built. Datasette opens the file
    for reading (not immutable: a run still grading stays readable, new rows appear); with
    ``immutable`` (a file this process cannot write, perhaps in a read-only folder where no
    ``-shm`` file can be made) as immutable, so nothing is ever written beside it.

    Raises
    ------
    AutorubricError
        Datasette is not installed (the message names the extra).
    """
    try:
        import uvicorn
        from datasette.app import Datasette
    except ImportError:
        raise AutorubricError(BROWSE_MISSING) from None
    files = {"immutables": [str(path)]} if immutable else {"files": [str(path)]}
    datasette = Datasette(**files, metadata=metadata, settings=SETTINGS)
    asyncio.run(datasette.invoke_startup())
    config = uvicorn.Config(datasette.app(), log_level="warning", lifespan="on")
    on_ready(url_of(sock, datasette.urls.database(database_name(path))))
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn shut down gracefully, then re-raised the signal: Ctrl-C is how browse stops
