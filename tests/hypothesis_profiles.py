"""Hypothesis profiles, chosen by ``HYPOTHESIS_PROFILE`` (``ci``, the default, or ``dev``).

``ci`` is Hypothesis' defaults and every test's own example count: what README command 2 and
``.ci/run`` have always run. ``dev`` is for quick local runs (docs/contributing.md): 10 examples
by default, and a tenth of a test's own count (at least 10) where the test asks for more, through
:func:`examples`. tests/conftest.py registers and loads the profile before any test module imports.
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILES = ("ci", "dev")
DEV_FLOOR = 10
DEV_SHARE = 10


def profile_name() -> str:
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    if name not in PROFILES:
        raise ValueError(f"HYPOTHESIS_PROFILE must be one of {PROFILES}, not {name!r}")
    return name


def examples(ci: int, profile: str | None = None) -> int:
    """A test's example count: ``ci`` under the ci profile, ``max(10, ci // 10)`` under dev."""
    if (profile or profile_name()) == "ci":
        return ci
    return min(ci, max(DEV_FLOOR, ci // DEV_SHARE))


def load() -> str:
    """Register both profiles and load the one ``HYPOTHESIS_PROFILE`` names; returns its name."""
    settings.register_profile("ci", settings.get_profile("default"))
    settings.register_profile("dev", max_examples=DEV_FLOOR)
    name = profile_name()
    settings.load_profile(name)
    return name
