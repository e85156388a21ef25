"""Ray for the Ray test modules: ``ray`` (None when missing), and the module-scoped autouse
fixture ``ray_installed`` that fails each test once scripts/setup_ray.sh ran. Before that script
ever ran, a module importing this one is skipped whole (tests/setup_state.py)."""

from __future__ import annotations

import pytest

from setup_state import missing, must_fail

RAY_MISSING = "Ray is not installed (pip install 'autorubric-local[ray]')"
try:
    import ray
except ImportError:
    ray = None
    if must_fail("setup_ray.sh") is None:
        missing(RAY_MISSING, "setup_ray.sh", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def ray_installed() -> None:
    """After scripts/setup_ray.sh ran, a missing Ray fails each test here, not the whole collection."""
    if ray is None:
        missing(RAY_MISSING, "setup_ray.sh")
