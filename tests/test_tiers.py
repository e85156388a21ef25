"""Test tiers: the skip-or-fail rule of tests/setup_state.py, the markers tests/conftest.py derives,
and the Hypothesis profiles of tests/hypothesis_profiles.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import conftest
import hypothesis_profiles
import pytest
import setup_state
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script", sorted(setup_state.STAMPS))
def test_skips_only_before_the_set_up_ran(script: str, tmp_path: Path) -> None:
    venv, root = tmp_path / "venv", tmp_path / "root"
    stamp_dir = setup_state.stamp_dir(script, root, venv)
    stamp_dir.mkdir(parents=True)
    with pytest.raises(pytest.skip.Exception, match=f"run scripts/{script}"):
        setup_state.missing("x is missing", script, root=root, venv=venv, environ={})
    (stamp_dir / setup_state.STAMPS[script][1].replace("*", "0123456789abcdef")).touch()
    with pytest.raises(pytest.fail.Exception, match=f"x is missing: run scripts/{re.escape(script)} .*it ran before"):
        setup_state.missing("x is missing", script, root=root, venv=venv, environ={})


def test_ci_fails_without_a_stamp(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"run scripts/setup_ray\.sh \(CI is set\)"):
        setup_state.missing("Ray is missing", "setup_ray.sh", root=tmp_path, venv=tmp_path, environ={"CI": "1"})


def test_an_unknown_script_is_refused() -> None:
    with pytest.raises(KeyError, match="setup_nothing.sh"):
        setup_state.missing("x", "setup_nothing.sh", environ={})


def test_every_stamp_is_the_one_its_script_writes() -> None:
    for script, (folder, pattern) in setup_state.STAMPS.items():
        text = (ROOT / "scripts" / script).read_text(encoding="utf-8")
        prefix = pattern.rstrip("*")
        assert prefix in text, f"scripts/{script} no longer writes {pattern}"
        if folder == "venv":
            assert re.search(r'\.venv/' + re.escape(prefix), text), script
        else:
            assert f"venv={folder}" in text, script


def test_the_venvs_stamps_are_read_from_the_running_environment() -> None:
    assert setup_state.stamp_dir("setup.sh") == Path(sys.prefix)
    assert setup_state.stamp_dir("setup_vllm.sh") == ROOT / ".venv-vllm"


# ------------------------------------------------------------------------------- derived markers
class FakeItem:
    """What :func:`conftest.tier_markers` reads of a collected test."""

    def __init__(self, function: object, fixturenames: tuple[str, ...] = ()) -> None:
        self.function = function
        self.fixturenames = fixturenames
        self._fixtureinfo = None


def starts_a_child() -> None:
    import subprocess

    subprocess.run([sys.executable, "-c", "pass"], check=True)


def needs_vllm() -> None:
    from test_vllm_backend import require_vllm_venv

    require_vllm_venv()


def calls_a_helper_that_needs_vllm() -> None:
    needs_vllm()


def plain() -> None:
    assert 1 + 1 == 2


@given(st.integers())
def a_property(value: int) -> None:
    assert value == value


def test_markers_follow_what_a_test_uses() -> None:
    assert conftest.tier_markers(FakeItem(plain)) == set()
    assert conftest.tier_markers(FakeItem(plain, ("smollm2_engine",))) == {"slow"}
    assert conftest.tier_markers(FakeItem(plain, ("tiny_engine", "gemma_engine"))) == {"slow"}
    assert conftest.tier_markers(FakeItem(starts_a_child)) == {"subprocess"}
    assert conftest.tier_markers(FakeItem(calls_a_helper_that_needs_vllm)) == {"vllm"}
    assert conftest.tier_markers(FakeItem(a_property)) == {"fuzz"}


def test_every_derived_marker_is_registered(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    derived = set(conftest.FIXTURE_MARKERS.values()) | set(conftest.SOURCE_MARKERS) | {"fuzz", "ray", "wheel"}
    assert derived <= registered


# ------------------------------------------------------------------------------------- fast tier
def fast_tier() -> str:
    """The fast tier's -m expression, as scripts/time_test_tiers.sh (and docs/contributing.md) runs it."""
    text = (ROOT / "scripts" / "time_test_tiers.sh").read_text(encoding="utf-8")
    return re.search(r'^fast="(.+)"$', text, re.MULTILINE).group(1)


def test_the_fast_tier_keeps_a_real_weights_check_per_family_and_drops_the_rest() -> None:
    from _pytest.mark.expression import Expression
    import test_real_judges

    expression = fast_tier()
    assert f'-m "{expression}"' in (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    tier = Expression.compile(expression)

    def selected(function: object, fixtures: tuple[str, ...], module_marks: set[str]) -> bool:
        marks = module_marks | {m.name for m in getattr(function, "pytestmark", [])}
        marks |= conftest.tier_markers(FakeItem(function, fixtures))
        return tier.evaluate(lambda name, **kwargs: name in marks)

    check = test_real_judges.test_short_prompt_scoring_equals_plain_forward
    other = test_real_judges.test_plain_path_equals_the_reference
    for family in ("smollm2_engine", "gemma_engine"):  # the module's `judge` fixture takes both
        assert selected(check, (family,), {"slow"})
        assert not selected(other, (family,), {"slow"})
    assert conftest.FIXTURE_MARKERS.keys() == {"smollm2_engine", "gemma_engine"}  # no third family unchecked
    assert selected(plain, (), set()) and selected(starts_a_child, (), set()) and selected(a_property, (), set())
    assert not selected(calls_a_helper_that_needs_vllm, (), set())
    assert not any(selected(plain, (), {marker}) for marker in ("ray", "browser", "wheel", "llamacpp"))


# ---------------------------------------------------------------------------- Hypothesis profiles
def test_ci_keeps_each_tests_count_and_dev_takes_a_tenth() -> None:
    assert [hypothesis_profiles.examples(n, "ci") for n in (5, 60, 700)] == [5, 60, 700]
    assert [hypothesis_profiles.examples(n, "dev") for n in (5, 60, 700)] == [5, 10, 70]


def test_the_profile_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HYPOTHESIS_PROFILE", raising=False)
    assert hypothesis_profiles.profile_name() == "ci"
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "dev")
    assert hypothesis_profiles.examples(700) == 70
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "fast")
    with pytest.raises(ValueError, match="HYPOTHESIS_PROFILE must be one of .* not 'fast'"):
        hypothesis_profiles.profile_name()
