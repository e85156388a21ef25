"""On-disk response cache: one SQLite file under ``LLMConfig.cache_dir``.

It serves hosted calls (:mod:`~.hosted.client`) and local engines' label scores and
generations (:mod:`~.cached`), under keys that cannot collide (each names what it caches).

A hosted response is stored under a SHA-256 key of everything that decides it: the model string, the
API base, the full messages list, the response-format JSON schema (and how it is sent), and the
sampling parameters (temperature, max_tokens, top_p, seed, thinking, logprobs, extra params).
A different value of any of them is a different entry. Entries older than ``ttl`` seconds are
not served (and are deleted when read); ``ttl=None`` keeps them until :meth:`clear`.

The file is ``<cache_dir>/responses.sqlite3`` (table ``responses``: ``key``, ``body_json``,
``created_utc`` in Unix seconds), opened in WAL mode with one short connection per operation,
so threads and processes may share it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["CACHE_FILE", "ResponseCache", "cache_key"]

CACHE_FILE = "responses.sqlite3"
KEY_SCHEME = "sha256-v1"


def cache_key(**parts: Any) -> str:
    """Key of a request: ``sha256-v1:`` + SHA-256 hex of the parts as canonical JSON.

    Parameters
    ----------
    **parts
        JSON-serialisable values (model, messages, schema, parameters ...); key order does not
        matter, values do.

    Raises
    ------
    TypeError
        If a part is not JSON-serialisable.
    """
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{KEY_SCHEME}:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


class ResponseCache:
    """A TTL-bounded store of response bodies (JSON objects) by :func:`cache_key`.

    Parameters
    ----------
    directory : str or Path
        Created if missing.
    ttl : int or None
        Seconds an entry is served; None: no expiry.
    """

    def __init__(self, directory: str | Path, ttl: int | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / CACHE_FILE
        self.ttl = ttl
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS responses "
                       "(key TEXT PRIMARY KEY, body_json TEXT NOT NULL, created_utc REAL NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30.0)

    def get(self, key: str) -> dict[str, Any] | None:
        """The body stored under ``key``, or None when absent or older than ``ttl``."""
        with self._connect() as db:
            row = db.execute("SELECT body_json, created_utc FROM responses WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            if self.ttl is not None and time.time() - row[1] > self.ttl:
                db.execute("DELETE FROM responses WHERE key = ?", (key,))
                return None
        return json.loads(row[0])

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The bodies of those ``keys`` that are stored and fresh (:meth:`get` for many keys, one
        connection); absent and expired keys are left out (expired ones deleted)."""
        found: dict[str, dict[str, Any]] = {}
        now = time.time()
        with self._connect() as db:
            for key in dict.fromkeys(keys):
                row = db.execute("SELECT body_json, created_utc FROM responses WHERE key = ?", (key,)).fetchone()
                if row is None:
                    continue
                if self.ttl is not None and now - row[1] > self.ttl:
                    db.execute("DELETE FROM responses WHERE key = ?", (key,))
                    continue
                found[key] = json.loads(row[0])
        return found

    def put_many(self, entries: Mapping[str, dict[str, Any]]) -> None:
        """Store several bodies by key in one transaction (:meth:`put` for many)."""
        if not entries:
            return
        now = time.time()
        with self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO responses (key, body_json, created_utc) VALUES (?, ?, ?)",
                           [(key, json.dumps(body, ensure_ascii=False), now) for key, body in entries.items()])

    def put(self, key: str, body: dict[str, Any]) -> None:
        """Store ``body`` under ``key`` (replacing an older entry), stamped now."""
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO responses (key, body_json, created_utc) VALUES (?, ?, ?)",
                       (key, json.dumps(body, ensure_ascii=False), time.time()))

    def clear(self) -> int:
        """Delete every entry; returns how many there were."""
        with self._connect() as db:
            return db.execute("DELETE FROM responses").rowcount

    def stats(self) -> dict[str, Any]:
        """``{'size': bytes on disk (database and its WAL), 'count': entries, 'directory': str}``."""
        with self._connect() as db:
            count = db.execute("SELECT count(*) FROM responses").fetchone()[0]
        size = sum(p.stat().st_size for p in self.directory.glob(CACHE_FILE + "*") if p.is_file())
        return {"size": size, "count": count, "directory": str(self.directory)}
