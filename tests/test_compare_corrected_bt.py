"""Judge-corrected (PPI++) Bradley-Terry coefficients (autorubric_local.comparisons.corrected_bt):
against ppi_py and a reference fit, ties, errors, coverage by simulation, and the CLI table.

Coverage: ``scripts/sim_ppi_bradley_terry.py`` (its docstring has the set-up: 3 systems, 300
comparisons, 80 uniformly labelled, 10% ties, a judge that under-separates and favours slot a).
The committed 1000-dataset run, ``scripts/results/sim_ppi_bradley_terry_2026-12-02.txt``, gives
90% coverage 0.915 / 0.922 (classical) and 0.906 / 0.909 (PPI++) for the two coefficients, and
PPI++ mean widths 0.91 / 0.90 of classical. Here 60 seeded datasets of the same simulation
(each fit takes ~0.2 s, and ppi_py's first call compiles with numba for ~15 s): the pooled
coverage over 2 coefficients x 60 datasets is asserted in [0.82, 0.98] (Monte-Carlo sd about
0.027 for 120 nearly independent intervals) and PPI++ no wider than 1.05 x classical.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from autorubric_local.cli import main
from autorubric_local.comparisons.bradley_terry import fit_bradley_terry, pair_counts
from autorubric_local.comparisons.corrected import PreferenceLabel
from autorubric_local.comparisons.corrected_bt import corrected_bradley_terry, ppi_logistic_coefficients
from autorubric_local.core.errors import InputError
from autorubric_local.estimates.api import SMALL_N_NOTE

from stored_comparisons import judged, stored

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import sim_ppi_bradley_terry as sim  # noqa: E402


def design(rng: np.random.Generator, n: int, systems: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = rng.integers(0, systems, n)
    b = (a + rng.integers(1, systems, n)) % systems
    x = np.zeros((n, systems))
    x[np.arange(n), a] = 1.0
    x[np.arange(n), b] = -1.0
    return x[:, 1:], a, b


# The reference calls below go to ppi_py directly, which builds LogisticRegression(penalty=None)
# (deprecated in scikit-learn 1.8); our own calls silence it in corrected_bt._quiet_sklearn.
@pytest.mark.filterwarnings("ignore:'penalty' was deprecated:FutureWarning")
def test_without_ties_the_intervals_are_ppi_pys_own() -> None:
    import ppi_py

    rng = np.random.default_rng(1)
    x, _, _ = design(rng, 200)
    truth = np.array([0.5, -0.3])
    y = (rng.random(200) < 1 / (1 + np.exp(-x @ truth))).astype(float)
    f = np.clip(0.6 * y + 0.2 + rng.normal(0, 0.1, 200), 0.01, 0.99)
    found = ppi_logistic_coefficients(x[:60], y[:60], f[:60], x[60:], f[60:], 0.1)
    low, high = ppi_py.classical_logistic_ci(x[:60], y[:60], alpha=0.1)
    assert [c.ci_low for c in found[:2]] == pytest.approx(low, abs=1e-6)
    assert [c.ci_high for c in found[:2]] == pytest.approx(high, abs=1e-6)
    low, high = ppi_py.ppi_logistic_ci(x[:60], y[:60], f[:60], x[60:], f[60:], alpha=0.1)  # lam tuned inside
    assert [c.ci_low for c in found[2:]] == pytest.approx(low, abs=1e-6)
    assert [c.ci_high for c in found[2:]] == pytest.approx(high, abs=1e-6)
    assert 0 < found[2].lam <= 1 and found[2].lam == found[3].lam
    point = ppi_py.ppi_logistic_pointestimate(x[:60], y[:60], f[:60], x[60:], f[60:], lam=found[2].lam)
    assert [c.estimate for c in found[2:]] == pytest.approx(point, abs=1e-6)


def test_a_tie_is_half_a_win_and_widens_the_interval_a_little() -> None:
    """The classical estimate with ties equals the Bradley-Terry fit with ties as half a win
    (itself checked against scikit-learn in tests/test_comparisons.py); its split-row variance
    is at least the exact sandwich one with ``Y = 0.5`` (module docstring)."""
    rng = np.random.default_rng(2)
    x, a, b = design(rng, 120)
    y = rng.choice([0.0, 0.5, 1.0], size=120, p=[0.4, 0.2, 0.4])
    f = np.full(120, 0.5)
    found = ppi_logistic_coefficients(x[:80], y[:80], f[:80], x[80:], f[80:], 0.1)
    data = pair_counts([f"p{k}" for k in range(80)], [f"s{v}" for v in a[:80]], [f"s{v}" for v in b[:80]],
                       (y[:80] == 1).astype(float), (y[:80] == 0.5).astype(float), (y[:80] == 0).astype(float),
                       systems=["s0", "s1", "s2"])
    beta = fit_bradley_terry(data).beta
    assert [c.estimate for c in found[:2]] == pytest.approx(beta[1:] - beta[0], abs=1e-5)
    # the exact sandwich of the fractional-Y logistic M-estimator at the estimate
    xl, yl = x[:80], y[:80]
    mu = 1 / (1 + np.exp(-xl @ np.array([c.estimate for c in found[:2]])))
    hessian = (xl * (mu * (1 - mu))[:, None]).T @ xl / 80
    grads = xl * (mu - yl)[:, None]
    inv = np.linalg.inv(hessian)
    exact_se = np.sqrt(np.diag(inv @ np.cov(grads.T) @ inv) / 80)
    split_se = np.array([c.std_error for c in found[:2]])
    assert np.all(split_se >= exact_se) and np.all(split_se <= 1.15 * exact_se), (split_se, exact_se)


def test_intervals_cover_known_strengths_and_ppi_is_not_wider_than_classical() -> None:
    got = sim.coverage(60)
    print("\n" + sim.format_coverage(got))
    pooled = {"classical": np.mean(got.classical), "ppi": np.mean(got.ppi)}
    assert 0.82 <= pooled["classical"] <= 0.98 and 0.82 <= pooled["ppi"] <= 0.98, pooled
    assert all(p <= 1.05 * c for p, c in zip(got.width_ppi, got.width_classical, strict=True)), got


def test_the_reference_labels_below_50_notes_and_errors() -> None:
    systems = ["s1", "s2", "s3"]
    judgments = [judged(f"p{i}", a, b, 0.6 if a < b else 0.4)
                 for i in range(10) for k, a in enumerate(systems) for b in systems[k + 1:]]
    comparison = stored(judgments, systems)
    winners = ["a", "b", "tie", "a"]
    labels = [PreferenceLabel(f"p{i}", a, b, winners[i]) for i in range(4)
              for k, a in enumerate(systems) for b in systems[k + 1:]]
    fitted = corrected_bradley_terry(comparison, labels, judge_id="j", reference="s2")
    assert fitted.reference == "s2" and [c.system for c in fitted.coefficients] == ["s2", "s1", "s3"]
    ref = fitted.coefficients[0]
    assert ref.ppi.estimate == 0.0 and ref.classical.note == "reference"
    assert (ref.n_comparisons, ref.n_labelled, fitted.n_labelled, fitted.n_comparisons) == (20, 8, 12, 30)
    assert all(SMALL_N_NOTE in c.ppi.note and SMALL_N_NOTE in c.classical.note for c in fitted.coefficients[1:])
    # the judge alone: 0.6 for the earlier-named system of every pair. By symmetry s1 - s2 = s2 - s3
    # = delta, and the likelihood equation is 2 (0.6 - sigma(delta)) + 2 (0.6 - sigma(2 delta)) = 0
    delta = fitted.coefficients[1].judge
    assert fitted.coefficients[2].judge == pytest.approx(-delta, abs=1e-6)
    assert 1 / (1 + np.exp(-delta)) + 1 / (1 + np.exp(-2 * delta)) == pytest.approx(1.2, abs=1e-6)
    # every comparison labelled: PPI++ is the classical fit, said so
    everything = [PreferenceLabel(j.prompt_id, j.system_a, j.system_b, winners[i % 4])
                  for i, j in enumerate(judgments)]
    full = corrected_bradley_terry(comparison, everything, judge_id="j")
    for c in full.coefficients[1:]:
        assert c.ppi.estimate == c.classical.estimate and "every comparison is labelled" in c.ppi.note
    with pytest.raises(InputError, match="do not link every system both ways"):
        corrected_bradley_terry(comparison, [PreferenceLabel("p0", "s1", "s2", "a"),
                                             PreferenceLabel("p0", "s1", "s3", "a")], judge_id="j")
    with pytest.raises(InputError, match="reference 'nope'"):
        corrected_bradley_terry(comparison, labels, judge_id="j", reference="nope")
    with pytest.raises(InputError, match="label of prompt 'p99'"):
        corrected_bradley_terry(comparison, [PreferenceLabel("p99", "s1", "s2", "a")], judge_id="j")
    with pytest.raises(InputError, match="need 2 or more"):
        corrected_bradley_terry(comparison, labels[:1], judge_id="j")


def test_ranking_with_labels_prints_the_corrected_coefficients(tmp_path: Path) -> None:
    from test_compare import EXAMPLE, config, judge, quality_policy

    from autorubric_local.comparisons.data import load_comparisons
    from autorubric_local.comparisons.judging import run_comparison
    from autorubric_local.engine import ScriptedEngine

    prompts = load_comparisons(EXAMPLE)
    db = tmp_path / "r.sqlite"
    run_comparison(prompts, [judge(ScriptedEngine("s", policy=quality_policy()))], config=config(db))
    pairs = [("careful", "terse"), ("careful", "wrong"), ("terse", "wrong")]
    rows = [{"id": p.prompt_id, "a": a, "b": b, "winner": w}
            for p, w in zip(prompts[:4], ["a", "a", "tie", "b"], strict=True) for a, b in pairs]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    runner = CliRunner()
    done = runner.invoke(main, ["ranking", "cmp", "--db", str(db), "--labels", str(labels), "--bootstrap", "20"])
    assert done.exit_code == 0, done.output
    assert "Human Bradley-Terry coefficients, judge s" in done.stdout and "0 (reference)" in done.stdout
    assert "fewer than 50 labels" in done.stdout
    as_json = runner.invoke(main, ["ranking", "cmp", "--db", str(db), "--labels", str(labels), "--json",
                                   "--bootstrap", "20"])
    assert as_json.exit_code == 0, as_json.output
    text = as_json.stdout.strip()
    _, end = json.JSONDecoder().raw_decode(text)
    fitted = json.loads(text[end:].strip())["corrected_bradley_terry"]["s"]
    assert fitted["reference"] == "careful" and fitted["labelled"] == 12 and fitted["comparisons"] == 24
    assert [c["system"] for c in fitted["coefficients"]] == ["careful", "terse", "wrong"]
    assert all(c["ppi"]["ci_low"] <= c["ppi"]["estimate"] <= c["ppi"]["ci_high"] for c in fitted["coefficients"])
    # labels that give a win rate but cannot identify the coefficients: the reason, not a failure
    one_pair = tmp_path / "one_pair.jsonl"
    one_pair.write_text("".join(json.dumps({"id": p.prompt_id, "a": "careful", "b": "wrong", "winner": "a"}) + "\n"
                                for p in prompts[:3]), encoding="utf-8")
    done = runner.invoke(main, ["ranking", "cmp", "--db", str(db), "--labels", str(one_pair), "--bootstrap", "20"])
    assert done.exit_code == 0, done.output
    assert "no Bradley-Terry coefficients for judge s from these labels" in done.stdout
    assert "do not link every system both ways" in done.stdout
