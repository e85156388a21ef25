"""Provenance stamps shared by the stores: the current UTC time and this package's version."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (``2026-11-21T19:40:02+00:00``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def package_version() -> str:
    """The installed version of autorubric-local, or ``"unknown"`` when it is not installed."""
    try:
        return version("autorubric-local")
    except PackageNotFoundError:
        return "unknown"


def timestamped_id(kind: str) -> str:
    """A readable unique id: ``<kind>-<UTC time>-<6 hex digits>`` (``run-20261121T194002Z-6f15d5``)."""
    return f"{kind}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"
