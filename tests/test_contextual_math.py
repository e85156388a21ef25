"""Contextual calibration's math (Zhao et al. 2021, W = diag(p_cf)^-1, b = 0) against
hand-computed tables, and numpy's own matrix product as a reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autorubric_local.core.errors import InputError
from autorubric_local.graders.contextual import (
    CONTENT_FREE_INPUTS,
    content_free_log_prior,
    contextual_correction,
    log_normalise,
)


def logs(*ps: float) -> list[float]:
    return [math.log(p) for p in ps]


def test_the_default_content_free_inputs_follow_the_paper() -> None:
    assert CONTENT_FREE_INPUTS == ("", "N/A", "[SUBMISSION]")


def test_correction_by_hand() -> None:
    # p / p_cf = (0.6/0.75, 0.3/0.2, 0.1/0.05) = (0.8, 1.5, 2.0), sum 4.3
    q = contextual_correction(logs(0.6, 0.3, 0.1), logs(0.75, 0.2, 0.05))
    assert q == pytest.approx([8 / 43, 15 / 43, 20 / 43], abs=1e-15)


def test_correction_flips_a_verdict_that_only_reflects_the_prior() -> None:
    # A judge that says MET 0.9 for everything says MET 0.8 here: below its prior, so UNMET wins.
    q = contextual_correction(logs(0.8, 0.2), logs(0.9, 0.1))
    # (0.8/0.9, 0.2/0.1) = (8/9, 2) -> (8/26, 18/26)
    assert q == pytest.approx([4 / 13, 9 / 13], abs=1e-15)


def test_raw_logprobs_need_no_renormalisation() -> None:
    """Raw label probabilities (summing to 0.5 here) give the same q as their renormalisation."""
    raw = contextual_correction(logs(0.3, 0.15, 0.05), logs(0.75, 0.2, 0.05))
    assert raw == pytest.approx([8 / 43, 15 / 43, 20 / 43], abs=1e-15)


def test_a_content_free_input_maps_to_uniform() -> None:
    prior = logs(0.7, 0.2, 0.1)
    assert contextual_correction(prior, prior) == pytest.approx([1 / 3] * 3, abs=1e-15)


def test_uniform_prior_changes_nothing() -> None:
    assert contextual_correction(logs(0.5, 0.3, 0.2), logs(1 / 3, 1 / 3, 1 / 3)) == pytest.approx([0.5, 0.3, 0.2])


def test_prior_is_the_mean_of_the_renormalised_distributions_by_hand() -> None:
    # Rows: (0.8, 0.2) raw as (0.4, 0.1) [sum 0.5], (0.6, 0.4), (0.7, 0.3) -> mean (0.7, 0.3)
    rows = [logs(0.4, 0.1), logs(0.6, 0.4), logs(0.7, 0.3)]
    assert [math.exp(v) for v in content_free_log_prior(rows)] == pytest.approx([0.7, 0.3], abs=1e-15)


def test_against_the_matrix_form_in_numpy() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(2, 6))
        p = rng.dirichlet(np.ones(n))
        cf_rows = rng.dirichlet(np.ones(n), size=3)
        p_cf = cf_rows.mean(axis=0)
        expected = np.diag(1.0 / p_cf) @ p
        expected /= expected.sum()
        log_prior = content_free_log_prior(np.log(cf_rows).tolist())
        assert np.exp(log_prior) == pytest.approx(p_cf, rel=1e-12)
        assert contextual_correction(np.log(p).tolist(), log_prior) == pytest.approx(expected, rel=1e-12)


def test_tiny_prior_probabilities_do_not_underflow() -> None:
    # p_cf_2 = e^-800 / (1 + ...) underflows to 0 as a float; in log space it stays exact.
    q = contextual_correction([0.0, -800.0], [0.0, -800.0])
    assert q == pytest.approx([0.5, 0.5])


def test_log_normalise() -> None:
    assert [math.exp(v) for v in log_normalise(logs(0.2, 0.2))] == pytest.approx([0.5, 0.5])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: contextual_correction(logs(0.5, 0.5), logs(0.2, 0.3, 0.5)), "2 labels but a prior over 3"),
        (lambda: contextual_correction([0.1, -1.0], logs(0.5, 0.5)), "finite and <= 0"),
        (lambda: contextual_correction([math.nan, -1.0], logs(0.5, 0.5)), "finite and <= 0"),
        (lambda: contextual_correction([-1.0], [-1.0]), "at least 2 labels"),
        (lambda: content_free_log_prior([]), "no content-free judgments"),
        (lambda: content_free_log_prior([logs(0.5, 0.5), logs(0.2, 0.3, 0.5)]), "differ in length"),
        (lambda: content_free_log_prior([[-math.inf, -1.0]]), "content-free judgment 0"),
    ],
)
def test_bad_input_is_refused(call: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        call()  # type: ignore[operator]
