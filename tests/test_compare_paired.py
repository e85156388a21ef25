"""Paired sign-flip tests between systems (autorubric_local.comparisons.paired): a hand-computed
case, Holm against statsmodels and by hand, type-I error at alpha 0.05 and 0.10 by simulation,
power under an alternative, and the ``ranking --paired`` table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.special import expit

from autorubric_local.cli import main
from autorubric_local.comparisons.paired import holm, paired_tests, sign_flip_test
from autorubric_local.core.errors import InputError

from stored_comparisons import judged, stored


def test_a_hand_computed_sign_flip_test() -> None:
    """d = (0.3, 0.2, 0.1, -0.1), sum 0.5: of the 16 sign patterns, |sum| >= 0.5 for
    (+ + + +) 0.7, (+ + + -) 0.5, (+ + - +) 0.5 and their three negatives: p = 6/16."""
    result = sign_flip_test([0.3, 0.2, 0.1, -0.1])
    assert result.exact and result.mean == pytest.approx(0.125) and result.p_value == pytest.approx(6 / 16)
    # all one sign: only the observed pattern and its negative reach it
    assert sign_flip_test([0.2, 0.1, 0.4]).p_value == pytest.approx(2 / 8)
    assert sign_flip_test([0.0, 0.0]).p_value == 1.0
    # the same four prompts through a stored comparison: pa = (1 + d) / 2, the pair stored as (s2, s1)
    # on one prompt, so its difference is turned to s1's
    pas = [0.65, 0.6, 0.55]
    comparison = stored([judged(f"p{i}", "s1", "s2", pa) for i, pa in enumerate(pas)]
                        + [judged("p3", "s2", "s1", 0.55)], ["s1", "s2"])
    (test,) = paired_tests(comparison, judge_id="j", question="overall")
    assert (test.system, test.other, test.n_prompts) == ("s1", "s2", 4)
    assert test.difference == pytest.approx(0.125) and test.win_rate == pytest.approx(0.5625)
    assert test.p_value == pytest.approx(6 / 16) and test.p_holm == test.p_value


def test_holm_by_hand_and_against_statsmodels() -> None:
    from statsmodels.stats.multitest import multipletests

    # sorted 0.01, 0.03, 0.04: 3 * 0.01, max(0.03, 2 * 0.03), max(0.06, 1 * 0.04)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    p = np.random.default_rng(3).random(7) ** 2
    assert holm(p) == pytest.approx(multipletests(p, method="holm")[1], abs=1e-12)
    with pytest.raises(InputError, match=r"in \[0, 1\]"):
        holm([0.2, 1.5])


def test_three_systems_get_holm_adjusted_p_values_in_the_systems_order() -> None:
    judgments = []
    for i in range(8):  # s1 always preferred to s3 (exact p 2 / 2^8); s1 vs s2, s2 vs s3 mixed
        judgments += [judged(f"p{i}", "s1", "s3", 0.8), judged(f"p{i}", "s2", "s1", 0.5 + 0.1 * (-1) ** i),
                      judged(f"p{i}", "s2", "s3", 0.6 if i < 6 else 0.4)]
    tests = paired_tests(stored(judgments, ["s1", "s2", "s3"]), judge_id="j", question="overall")
    assert [(t.system, t.other) for t in tests] == [("s1", "s2"), ("s1", "s3"), ("s2", "s3")]
    raw = [sign_flip_test([-0.2 * (-1) ** i for i in range(8)]).p_value, 2 / 256,
           sign_flip_test([0.2] * 6 + [-0.2] * 2).p_value]
    assert [t.p_value for t in tests] == pytest.approx(raw)
    assert [t.p_holm for t in tests] == pytest.approx(list(holm(raw)))
    assert tests[1].difference == pytest.approx(0.6) and tests[0].difference == pytest.approx(0.0)


def test_type_one_error_is_nominal_under_no_preference_and_power_exceeds_alpha() -> None:
    """1500 seeded datasets of 30 prompts. Null: the judge's preference for s is sigma(z), z ~ N(0,
    1) (symmetric about 0.5); with the swap rule's discrete d in {-1, 0, 1} (0.3, 0.4, 0.3). The
    Monte-Carlo tests (999 patterns) must reject at alpha +- 3 binomial sd (sd 0.0056 at 0.05,
    0.0077 at 0.10); the discrete ones at most that (an exact test of discrete data is conservative). Alternative: z ~ N(0.5, 1) must be rejected far more often than alpha."""
    rng = np.random.default_rng(11)
    reps, n = 1500, 30
    null = np.array([sign_flip_test(2 * expit(rng.normal(0, 1, n)) - 1, n_resamples=999, seed=k).p_value
                     for k in range(reps)])
    discrete = np.array([sign_flip_test(rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.3, 0.4, 0.3]), n_resamples=999,
                                        seed=k).p_value for k in range(reps)])
    alternative = np.array([sign_flip_test(2 * expit(rng.normal(0.5, 1, n)) - 1, n_resamples=999, seed=k).p_value
                            for k in range(reps // 5)])
    for alpha in (0.05, 0.10):
        sd = (alpha * (1 - alpha) / reps) ** 0.5
        assert abs((null <= alpha).mean() - alpha) <= 3 * sd, (alpha, (null <= alpha).mean())
        assert (discrete <= alpha).mean() <= alpha + 3 * sd, (alpha, (discrete <= alpha).mean())
        assert (alternative <= alpha).mean() >= 0.5  # about 0.75 at 0.05 with this shift


def test_holm_controls_the_family_wise_error_of_four_equal_systems() -> None:
    """200 datasets of 4 systems with no preference between any (6 pairs, 20 prompts): the share
    of datasets with any Holm-adjusted p <= 0.10 must be at most 0.10 + 3 sd (sd 0.021); without
    the adjustment it is well above (about 1 - 0.9^6 = 0.47 for independent pairs)."""
    rng = np.random.default_rng(5)
    systems = ["s1", "s2", "s3", "s4"]
    reps, any_holm, any_raw = 200, 0, 0
    for rep in range(reps):
        judgments = [judged(f"p{i}", a, b, float(expit(rng.normal())))
                     for i in range(20) for k, a in enumerate(systems) for b in systems[k + 1:]]
        tests = paired_tests(stored(judgments, systems), judge_id="j", question="overall", n_resamples=199, seed=rep)
        any_holm += min(t.p_holm for t in tests) <= 0.10
        any_raw += min(t.p_value for t in tests) <= 0.10
    assert any_holm / reps <= 0.10 + 3 * (0.09 / reps) ** 0.5, any_holm / reps
    assert any_raw / reps >= 0.3


def test_bad_input_is_refused() -> None:
    with pytest.raises(InputError, match="non-empty"):
        sign_flip_test([])
    with pytest.raises(InputError, match="finite"):
        sign_flip_test([0.1, float("nan")])


def test_ranking_paired_prints_the_table_and_json(tmp_path: Path) -> None:
    from autorubric_local.comparisons.judging import run_comparison
    from autorubric_local.comparisons.data import load_comparisons
    from test_compare import EXAMPLE, config, judge, quality_policy

    from autorubric_local.engine import ScriptedEngine

    db = tmp_path / "r.sqlite"
    run_comparison(load_comparisons(EXAMPLE), [judge(ScriptedEngine("s", policy=quality_policy()))], config=config(db))
    runner = CliRunner()
    done = runner.invoke(main, ["ranking", "cmp", "--db", str(db), "--paired", "--bootstrap", "20"])
    assert done.exit_code == 0, done.output
    assert "Paired tests, judge s" in done.stdout and "Holm" in done.stdout
    as_json = runner.invoke(main, ["ranking", "cmp", "--db", str(db), "--paired", "--json", "--bootstrap", "20"])
    assert as_json.exit_code == 0, as_json.output
    decoder = json.JSONDecoder()
    text = as_json.stdout.strip()
    _, end = decoder.raw_decode(text)
    paired = json.loads(text[end:].strip())["paired_tests"]["s"]
    assert {(t["system"], t["against"]) for t in paired} == {("careful", "terse"), ("careful", "wrong"),
                                                             ("terse", "wrong")}
    assert all(0 < t["p_value"] <= t["p_holm"] <= 1 for t in paired)


def test_compare_paired_prints_the_tests_ranking_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`compare --paired` tests the comparison it just judged as `ranking --paired` tests it stored."""
    import autorubric_local.cli.compare as compare_cli
    from test_compare import EXAMPLE, judge, quality_policy

    from autorubric_local.engine import ScriptedEngine

    monkeypatch.setattr(compare_cli, "judge_specs", lambda model, path: [judge(ScriptedEngine("s", policy=quality_policy()))])
    db, runner = tmp_path / "r.sqlite", CliRunner()
    flags = ["--db", str(db), "--paired", "--json", "--bootstrap", "20"]

    def paired(output: str) -> dict:
        text = output.strip()
        _, end = json.JSONDecoder().raw_decode(text)  # the rankings, then the paired tests
        return json.loads(text[end:].strip())["paired_tests"]

    judged = runner.invoke(main, ["compare", str(EXAMPLE), "--run", "cmp", *flags])
    assert judged.exit_code == 0, judged.output
    ranked = runner.invoke(main, ["ranking", "cmp", *flags])
    assert ranked.exit_code == 0, ranked.output
    ours = paired(judged.stdout)  # compare's summary line goes to stderr
    assert ours == paired(ranked.stdout)
    assert len(ours["s"]) == 3 and all(0 < t["p_value"] <= t["p_holm"] <= 1 for t in ours["s"])
