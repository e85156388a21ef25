"""Comparisons of systems (issue 50): comparison files, pairwise prompts in both orders sharing one
prefix, judging on the stored sweep pipeline (resume, refusal of changed content), preferences
and rankings by hand, position consistency with an interval whose coverage is simulated, the
`compare` / `ranking` commands, and (slow) batched == plain one-prompt scoring of every
comparison prompt on both real judge families."""

from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from autorubric_local.cli import main
from autorubric_local.comparisons.data import ComparisonPrompt, load_comparisons, plan_pairs
from autorubric_local.comparisons.judging import (
    PairJudgment,
    StoredComparison,
    comparison_items,
    load_comparison,
    run_comparison,
)
from autorubric_local.comparisons.prompts import ORDERS, Question, overall_question, rubric_questions
from autorubric_local.comparisons.ranking import consistency_interval, outcomes, position_bias, rank_systems
from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.execution import verdict_request
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner import EvalInterruptedError
from autorubric_local.runner.config import EvalConfig

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "compare_responses.jsonl"
QUALITY = {"careful": 2.0, "terse": 1.0, "wrong": 0.0}


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------- data


def test_wide_and_long_forms_give_the_same_prompts(tmp_path: Path) -> None:
    wide = write(tmp_path / "wide.jsonl", [
        {"id": "p1", "query": "q1", "responses": {"a": "A1", "b": "B1"}},
        {"id": 2, "query": "q2", "reference": "r2", "responses": {"b": "B2", "a": "A2", "c": "C2"}},
    ])
    long = write(tmp_path / "long.jsonl", [
        {"id": "p1", "system": "a", "response": "A1", "query": "q1"},
        {"id": "p1", "system": "b", "response": "B1"},
        {"id": 2, "system": "b", "response": "B2", "query": "q2", "reference": "r2"},
        {"id": 2, "system": "a", "response": "A2", "query": "q2"},
        {"id": 2, "system": "c", "response": "C2"},
    ])
    expected = [ComparisonPrompt("p1", "q1", {"a": "A1", "b": "B1"}),
                ComparisonPrompt("2", "q2", {"b": "B2", "a": "A2", "c": "C2"}, "r2")]
    assert load_comparisons(wide) == expected
    assert load_comparisons(long) == expected


def test_every_bad_line_is_named_with_its_file_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.jsonl", [
        {"id": "p1", "query": "q", "responses": {"a": "x"}},
        {"id": "p2", "query": "", "responses": {"a": "x", "b": "y"}},
        {"id": "p3", "query": "q", "responses": {"a": "x", "b": 3}},
        {"id": "p4", "query": "q", "responses": {"a": "x", "b": "y"}, "submission": "z"},
        "{not json",
        {"id": "p4", "query": "q", "responses": {"a": "x", "b": "y"}},
        {"id": "p6", "system": "a", "response": "x", "query": "q"},
    ])
    with pytest.raises(InputError) as caught:
        load_comparisons(path)
    lines = str(caught.value).splitlines()
    assert all(line.startswith(f"{path}: line ") for line in lines)
    text = str(caught.value)
    assert "line 1: field 'responses': need at least 2 systems, got 1" in text
    assert "line 2: field 'query': empty" in text
    assert "line 3: field 'responses': system 'b': expected a string, got number" in text
    assert "line 4:" in text and "submission" in text
    assert "line 5: invalid JSON" in text or "line 5:" in text
    assert "line 7: a long-form line in a wide-form file" in text


def test_long_form_lines_of_one_prompt_must_agree(tmp_path: Path) -> None:
    path = write(tmp_path / "long.jsonl", [
        {"id": "p1", "system": "a", "response": "A", "query": "q1"},
        {"id": "p1", "system": "b", "response": "B", "query": "another"},
        {"id": "p1", "system": "a", "response": "again"},
        {"id": "p2", "system": "a", "response": "A", "query": "q2"},
    ])
    with pytest.raises(InputError) as caught:
        load_comparisons(path)
    text = str(caught.value)
    assert "line 2: field 'query': differs from prompt 'p1''s query on line 1" in text
    assert "line 3: field 'system': prompt 'p1' already has a response of 'a'" in text
    assert "line 4: field 'system': prompt 'p2' has only one system ('a')" in text


def test_pairs_all_baseline_and_a_given_list() -> None:
    prompts = [ComparisonPrompt("p1", "q", {"a": "1", "b": "2", "c": "3"}), ComparisonPrompt("p2", "q", {"a": "1", "c": "3"})]
    pairs = lambda **kw: [(p.prompt_id, a, b) for p, a, b in plan_pairs(prompts, **kw)]  # noqa: E731
    assert pairs() == [("p1", "a", "b"), ("p1", "a", "c"), ("p1", "b", "c"), ("p2", "a", "c")]
    assert pairs(baseline="c") == [("p1", "a", "c"), ("p1", "b", "c"), ("p2", "a", "c")]
    assert pairs(pairs=[("c", "b")]) == [("p1", "c", "b")]
    for bad, message in (({"baseline": "z"}, "system 'z' is not in the data"),
                         ({"pairs": [("a", "a")]}, "compares a system with itself"),
                         ({"baseline": "a", "pairs": [("a", "b")]}, "not both")):
        with pytest.raises(InputError, match=message):
            plan_pairs(prompts, **bad)


# ---------------------------------------------------------------------------- prompts


def test_both_orders_share_one_prefix_and_swap_the_slots() -> None:
    prompt = ComparisonPrompt("p1", "What is 2+2?", {"a": "four", "b": "five"}, "4")
    questions = [overall_question(), *rubric_questions([Criterion(name="exact", requirement="Gives 4", weight=2.0),
                                                        Criterion(name="err", requirement="Says 5", weight=-1.0)])]
    (item,) = comparison_items(plan_pairs([prompt]), questions)
    engine = ScriptedEngine()
    tasks = item.rotation_tasks(0, "j", engine.format_chat, None)
    assert [(t.criterion_index, t.permutation_index, t.option_order) for t in tasks] == [
        (c, r, ORDERS[r]) for c in range(3) for r in range(2)]
    assert len({t.prefix for t in tasks}) == 1  # one shared prefix: system prompt, question, reference
    assert "What is 2+2?" in tasks[0].prefix and "four" not in tasks[0].prefix
    first, swapped = tasks[0].criterion_block, tasks[1].criterion_block
    assert first.index("four") < first.index("five") and swapped.index("five") < swapped.index("four")
    assert "better avoids this mistake: Says 5" in tasks[5].criterion_block
    # Responses and rubric text are untrusted spans (rendered marked, never control tokens).
    untrusted = {s.text for s in tasks[2].block if s.untrusted}
    assert {"four", "five", "Which response better satisfies this criterion: Gives 4"} <= untrusted
    assert [q.weight for q in questions] == [0.0, 2.0, 1.0]


# ---------------------------------------------------------------------------- judging on the pipeline


def log_softmax(values: list[float]) -> list[float]:
    top = max(values)
    total = top + math.log(sum(math.exp(v - top) for v in values))
    return [v - total for v in values]


def quality_policy(primacy: float = 0.0, text_quality: dict[str, float] | None = None) -> Any:
    """A judge that prefers the better response (by the quality of the text in each slot) and
    adds ``primacy`` to slot 1."""
    def policy(request: ScoreRequest) -> list[float]:
        found = re.search(r"<response 1>\n(.*?)\n</response 1>.*<response 2>\n(.*?)\n</response 2>", request.suffix, re.S)
        assert found is not None
        q1, q2 = (text_quality or TEXT_QUALITY)[found.group(1)], (text_quality or TEXT_QUALITY)[found.group(2)]
        d = q1 - q2 + primacy
        return log_softmax([d, -d, -abs(d) - 0.5])
    return policy


TEXT_QUALITY = {text: QUALITY[system] for row in map(json.loads, EXAMPLE.read_text().splitlines())
                for system, text in row["responses"].items()}


def judge(engine: ScriptedEngine) -> JudgeSpec:
    return JudgeSpec(LLMConfig(model="scripted", engine=engine), engine.model_id)


def config(db: Path, name: str = "cmp", chunk: int = 4) -> EvalConfig:
    return EvalConfig(db_path=db, experiment_name=name, chunk_judgments=chunk, show_progress=False)


def test_a_comparison_is_stored_per_order_and_read_back_in_system_space(tmp_path: Path) -> None:
    prompts = load_comparisons(EXAMPLE)
    engine = ScriptedEngine("s", policy=quality_policy(primacy=0.25))
    stored = run_comparison(prompts, [judge(engine)], config=config(tmp_path / "r.sqlite"))
    assert stored.status == "finished" and stored.systems == ("careful", "terse", "wrong")
    assert len(stored.judgments) == 8 * 3 and len(engine.history) == 8 * 3 * 2
    first = stored.judgments[0]  # p "boil", careful (slot 1 in order ab) vs terse
    assert (first.system_a, first.system_b) == ("careful", "terse")
    d_ab, d_ba = 1.0 + 0.25, -1.0 + 0.25
    expected_ab = dict(zip(("1", "2", "tie"), map(math.exp, log_softmax([d_ab, -d_ab, -abs(d_ab) - 0.5]))))
    expected_ba = dict(zip(("1", "2", "tie"), map(math.exp, log_softmax([d_ba, -d_ba, -abs(d_ba) - 0.5]))))
    assert first.ab == pytest.approx(expected_ab, abs=1e-12) and first.ba == pytest.approx(expected_ba, abs=1e-12)
    assert first.preference == pytest.approx({"a": (expected_ab["1"] + expected_ba["2"]) / 2,
                                              "b": (expected_ab["2"] + expected_ba["1"]) / 2,
                                              "tie": (expected_ab["tie"] + expected_ba["tie"]) / 2})
    assert first.swap_verdict == "a"
    assert load_comparison(tmp_path / "r.sqlite", "cmp").judgments == stored.judgments
    ranked = rank_systems(stored, judge_id="s", question="overall", n_bootstrap=20)
    assert [s.system for s in ranked.systems] == ["careful", "terse", "wrong"]


def test_a_stopped_comparison_resumes_judging_only_what_is_missing_and_refuses_changed_content(tmp_path: Path) -> None:
    prompts = load_comparisons(EXAMPLE)[:4]  # 12 pairs, 2 judgments each, 2 pairs a chunk
    db = tmp_path / "r.sqlite"
    stop = threading.Event()
    engine = ScriptedEngine("s", policy=quality_policy())
    with pytest.raises(EvalInterruptedError):
        run_comparison(prompts, [judge(engine)], config=config(db), on_chunk=lambda chunk: stop.set(), stop=stop)
    assert len(engine.history) == 4
    again = ScriptedEngine("s", policy=quality_policy())
    resumed = run_comparison(prompts, [judge(again)], config=config(db))
    assert resumed.status == "finished" and resumed.resumed_rotations == 4 and len(again.history) == 24 - 4
    whole = run_comparison(prompts, [judge(ScriptedEngine("s", policy=quality_policy()))],
                           config=config(tmp_path / "whole.sqlite"))
    assert resumed.judgments == whole.judgments
    changed = [ComparisonPrompt(p.prompt_id, p.query, {**p.responses, "terse": "Changed."}) for p in prompts]
    with pytest.raises(InputError, match="cannot be resumed"):
        run_comparison(changed, [judge(ScriptedEngine("s", policy=quality_policy()))], config=config(db))


def test_a_failed_judgment_is_recorded_and_left_out_never_made_up(tmp_path: Path) -> None:
    prompts = load_comparisons(EXAMPLE)[:1]
    engine = ScriptedEngine("s", policy=quality_policy())
    engine.enqueue_scores("infrastructure: the engine fell over")
    stored = run_comparison(prompts, [judge(engine)], config=config(tmp_path / "r.sqlite", chunk=100))
    broken = [j for j in stored.judgments if not j.complete]
    assert len(broken) == 1 and broken[0].ab is None and broken[0].errors == ("infrastructure: the engine fell over",)
    assert len(outcomes(stored, judge_id="s", question="overall")) == 2


# ---------------------------------------------------------------------------- preferences and rankings by hand


def comparison(judgments: list[PairJudgment], questions: list[Question]) -> StoredComparison:
    systems = list(dict.fromkeys(s for j in judgments for s in (j.system_a, j.system_b)))
    description = {"systems": systems, "questions": [{"name": q.name, "text": q.text, "weight": q.weight}
                                                      for q in questions], "pairs": []}
    return StoredComparison("id", "c", description, ("j",), tuple(judgments), "finished")


def pj(prompt: str, a: str, b: str, question: str, ab: tuple[float, float, float], ba: tuple[float, float, float]) -> PairJudgment:
    labels = ("1", "2", "tie")
    return PairJudgment(f"{prompt} {a} vs {b}", prompt, a, b, "j", question, dict(zip(labels, ab)), dict(zip(labels, ba)))


def test_soft_swap_and_weighted_rubric_outcomes_by_hand() -> None:
    questions = [Question("x", "X?", 2.0), Question("y", "Y?", 1.0)]
    stored = comparison([
        pj("p1", "a", "b", "x", (0.6, 0.3, 0.1), (0.2, 0.7, 0.1)),   # a in both orders
        pj("p1", "a", "b", "y", (0.5, 0.2, 0.3), (0.6, 0.1, 0.3)),   # slot 1 in both: a conflict
    ], questions)
    (x,) = outcomes(stored, judge_id="j", question="x")
    assert (x.wins, x.ties, x.losses) == pytest.approx(((0.6 + 0.7) / 2, 0.1, (0.3 + 0.2) / 2))
    (y_swap,) = outcomes(stored, judge_id="j", question="y", method="swap")
    assert (y_swap.wins, y_swap.ties, y_swap.losses) == (0.0, 1.0, 0.0)
    (rubric,) = outcomes(stored, judge_id="j", question="rubric")
    y = ((0.5 + 0.1) / 2, 0.3, (0.2 + 0.6) / 2)
    assert (rubric.wins, rubric.ties, rubric.losses) == pytest.approx(
        tuple((2 * xv + yv) / 3 for xv, yv in zip((x.wins, x.ties, x.losses), y)))
    bias = position_bias(stored, judge_id="j", question="y", n_bootstrap=0)
    assert (bias.measures.consistency, bias.measures.primacy) == (0.0, 1.0)
    with pytest.raises(InputError, match="not among"):
        outcomes(stored, judge_id="j", question="overall")


def test_rank_systems_matches_a_direct_bradley_terry_fit_and_win_rates_by_hand() -> None:
    from autorubric_local.comparisons.bradley_terry import fit_bradley_terry, pair_counts

    rng = np.random.default_rng(3)
    judgments = []
    for p in range(12):
        for a, b in (("s1", "s2"), ("s1", "s3"), ("s2", "s3")):
            ab, ba = rng.dirichlet([2, 2, 1]), rng.dirichlet([2, 2, 1])
            judgments.append(pj(f"p{p}", a, b, "overall", tuple(ab), tuple(ba)))
    stored = comparison(judgments, [overall_question()])
    ranked = rank_systems(stored, judge_id="j", question="overall", n_bootstrap=30)
    found = outcomes(stored, judge_id="j", question="overall")
    direct = fit_bradley_terry(pair_counts([o.prompt_id for o in found], [o.a for o in found], [o.b for o in found],
                                           [o.wins for o in found], [o.ties for o in found], [o.losses for o in found],
                                           systems=["s1", "s2", "s3"]))
    by_name = {s.system: s for s in ranked.systems}
    for k, name in enumerate(direct.systems):
        assert by_name[name].beta == pytest.approx(direct.beta[k], abs=1e-9)
        assert by_name[name].score_low <= by_name[name].score <= by_name[name].score_high
    s1_vs_s2 = [o.wins + o.ties / 2 for o in found if (o.a, o.b) == ("s1", "s2")]
    assert ranked.win_matrix[("s1", "s2")] == pytest.approx(np.mean(s1_vs_s2))
    assert ranked.win_matrix[("s2", "s1")] == pytest.approx(1 - np.mean(s1_vs_s2))


def test_position_consistency_intervals_cover_the_truth_at_the_nominal_rate() -> None:
    """Prompts with their own consistency rate (Beta(7, 3): mean 0.7) and three pairs each; the
    90% cluster-bootstrap interval's coverage of 0.7 over 400 seeded datasets."""
    rng = np.random.default_rng(50)
    covered = 0
    trials = 400
    for t in range(trials):
        rates = rng.beta(7, 3, size=60)
        consistent = rng.random((60, 3)) < rates[:, None]
        prompts = [f"p{i}" for i in range(60) for _ in range(3)]
        low, high = consistency_interval(prompts, consistent.ravel().tolist(), n_bootstrap=400, confidence=0.9, seed=t)
        covered += low <= 0.7 <= high
    assert 0.87 <= covered / trials <= 0.93


def test_an_all_consistent_judge_gets_a_wilson_interval_not_a_zero_width_one() -> None:
    low, high = consistency_interval(["p1", "p2", "p3"], [True, True, True], n_bootstrap=100, confidence=0.9, seed=0)
    z2 = 1.6448536269514722 ** 2
    assert high == 1.0 and low == pytest.approx(3 / (3 + z2), abs=1e-9)


# ---------------------------------------------------------------------------- CLI


def test_compare_then_ranking_print_the_ranking_and_position_bias(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import autorubric_local.cli.compare as compare_cli

    monkeypatch.setattr(compare_cli, "judge_specs",
                        lambda model, path: [judge(ScriptedEngine("s", policy=quality_policy(primacy=3.0)))])
    db = tmp_path / "r.sqlite"
    runner = CliRunner()
    done = runner.invoke(main, ["compare", str(EXAMPLE), "--db", str(db), "--run", "cmp", "--json",
                                "--bootstrap", "20"])
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    result = out["judges"]["s"]
    assert [s["system"] for s in result["ranking"]] == ["careful", "terse", "wrong"]
    (bias,) = result["position_bias"]
    # Primacy 3 beats a quality gap of 1 or 2: every pair of quality gap < 3 follows slot 1.
    assert bias["consistency"] == 0.0 and bias["primacy"] == 1.0
    again = runner.invoke(main, ["ranking", "cmp", "--db", str(db), "--method", "swap"])
    assert again.exit_code == 0, again.output
    assert "Position bias" in again.stdout and "careful" in again.stdout
    missing = runner.invoke(main, ["ranking", "nope", "--db", str(db)])
    assert missing.exit_code == 1 and "no comparison named 'nope'" in missing.output


# ---------------------------------------------------------------------------- batched == plain (slow, real judges)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["smollm2_engine", "gemma_engine"])
def test_every_comparison_prompt_scored_alone_matches_the_batched_pass(family: str, request: pytest.FixtureRequest) -> None:
    from autorubric_local.engine import from_transformers

    engine = request.getfixturevalue(family)
    # One prompt, two pairs against a baseline, both orders: 4 prompts sharing one prefix (each
    # scored alone costs ~2 s on one CPU core).
    prompts = load_comparisons(EXAMPLE)[:1]
    questions = [rubric_questions([Criterion(name="facts", requirement="States only true facts")])[0]]
    tasks = [task for index, item in enumerate(comparison_items(plan_pairs(prompts, baseline="terse"), questions))
             for task in item.rotation_tasks(index, "j", engine.format_chat, None)]
    requests = [verdict_request(task) for task in tasks]
    batched = engine.score(requests)
    plain = from_transformers(engine.model, engine.tokenizer, model_id="plain", attention="plain",
                              prompt_format=engine.prompt_format)
    for request_, result in zip(requests, batched, strict=True):
        (alone,) = plain.score([request_])
        assert result.error is None and alone.error is None
        assert max(abs(x - y) for x, y in zip(result.logprobs, alone.logprobs, strict=True)) <= 1e-4
    assert len(tasks) == 4 and {t.permutation_index for t in tasks} == {0, 1}


# ---------------------------------------------------------------------------- judge-corrected win rates (PPI++)


def soft(prompt: str, f: float) -> PairJudgment:
    """A judgment of s1 vs s2 whose balanced preference for s1 is ``f`` (no tie)."""
    return pj(prompt, "s1", "s2", "overall", (f, 1 - f, 0.0), (1 - f, f, 0.0))


def test_preference_labels_are_read_strictly_and_must_name_judged_comparisons(tmp_path: Path) -> None:
    from autorubric_local.comparisons.corrected import corrected_win_rates, load_preference_labels

    bad = write(tmp_path / "bad.jsonl", [{"id": "p1", "a": "s1", "b": "s2", "winner": "s1"},
                                         {"id": "p2", "a": "s1", "b": "s1", "winner": "a"},
                                         {"id": "p3", "a": "s1", "winner": "a"},
                                         {"id": "p4", "a": "s1", "b": "s2", "winner": "a", "note": "x"}])
    with pytest.raises(InputError) as caught:
        load_preference_labels(bad)
    text = str(caught.value)
    assert "line 1: field 'winner': expected 'a', 'b' or 'tie', got 's1'" in text
    assert "line 2: field 'b': the same system as 'a'" in text and "line 3: field 'b': missing" in text
    assert "line 4:" in text
    good = write(tmp_path / "good.jsonl", [{"id": "p0", "a": "s2", "b": "s1", "winner": "a"},
                                           {"id": "p1", "a": "s1", "b": "s2", "winner": "tie"},
                                           {"id": "p2", "a": "s1", "b": "s2", "winner": "a"}])
    stored = comparison([soft(f"p{i}", f) for i, f in enumerate([0.2, 0.6, 0.9, 0.7, 0.4])], [overall_question()])
    (rate,) = corrected_win_rates(stored, load_preference_labels(good), judge_id="j")
    y, fl, fu = np.array([0.0, 0.5, 1.0]), np.array([0.2, 0.6, 0.9]), np.array([0.7, 0.4])
    from autorubric_local.estimates.methods import ppi_mean

    expected = ppi_mean(y, fl, fu, 0.1)
    assert (rate.system, rate.other, rate.n_labelled, rate.n_comparisons) == ("s1", "s2", 3, 5)
    assert rate.ppi.estimate == pytest.approx(min(1.0, max(0.0, expected.estimate)))
    assert rate.classical.estimate == pytest.approx(0.5) and rate.judge == pytest.approx(0.56)
    stray = write(tmp_path / "stray.jsonl", [{"id": "p9", "a": "s1", "b": "s2", "winner": "a"}])
    with pytest.raises(InputError, match="label of prompt 'p9'.*no complete judgment"):
        corrected_win_rates(stored, load_preference_labels(stray), judge_id="j")


def test_ppi_win_rate_intervals_cover_the_human_win_rate_and_are_not_wider_than_classical() -> None:
    """300 comparisons of s1 and s2; a human prefers s1 with a prompt's own probability q ~
    Beta(3, 2), or calls a tie (10%), so the true win rate is 0.1 * 0.5 + 0.9 * 0.6 = 0.59; the
    judge's preference is q plus noise (sd 0.15). 60 random comparisons labelled; 90% intervals
    over 300 seeded datasets."""
    from autorubric_local.comparisons.corrected import PreferenceLabel, corrected_win_rates

    rng = np.random.default_rng(7)
    truth, trials = 0.59, 300
    covered = {"ppi": 0, "classical": 0}
    widths = {"ppi": [], "classical": []}
    for _ in range(trials):
        q = rng.beta(3, 2, size=300)
        tie = rng.random(300) < 0.1
        y = np.where(tie, 0.5, (rng.random(300) < q).astype(float))
        f = np.clip(q + rng.normal(0, 0.15, 300), 0.01, 0.99)
        stored = comparison([soft(f"p{i}", float(v)) for i, v in enumerate(f)], [overall_question()])
        chosen = rng.choice(300, size=60, replace=False)
        labels = [PreferenceLabel(f"p{i}", "s1", "s2", "tie" if y[i] == 0.5 else ("a" if y[i] == 1 else "b"))
                  for i in chosen]
        (rate,) = corrected_win_rates(stored, labels, judge_id="j")
        for name, interval in (("ppi", rate.ppi), ("classical", rate.classical)):
            covered[name] += interval.ci_low <= truth <= interval.ci_high
            widths[name].append(interval.ci_high - interval.ci_low)
    assert 0.87 <= covered["ppi"] / trials <= 0.93
    assert 0.87 <= covered["classical"] / trials <= 0.93
    assert np.mean(widths["ppi"]) <= 1.05 * np.mean(widths["classical"])


def test_ranking_with_labels_prints_classical_and_ppi_win_rates(tmp_path: Path) -> None:
    prompts = load_comparisons(EXAMPLE)
    db = tmp_path / "r.sqlite"
    run_comparison(prompts, [judge(ScriptedEngine("s", policy=quality_policy()))], config=config(db))
    labels = write(tmp_path / "labels.jsonl", [{"id": p.prompt_id, "a": "careful", "b": "wrong", "winner": "a"}
                                               for p in prompts[:5]])
    done = CliRunner().invoke(main, ["ranking", "cmp", "--db", str(db), "--labels", str(labels), "--bootstrap", "20"])
    assert done.exit_code == 0, done.output
    assert "judge-corrected (PPI++)" in done.stdout
    row = next(line for line in done.stdout.splitlines() if "careful" in line and "wrong" in line and "│ 8" in line)
    assert "│ 5 " in row  # five labelled of eight comparisons
    assert "every label has the same value" in done.stdout  # all five say careful: a Wilson interval, noted


def test_systems_files_are_joined_by_item_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import autorubric_local.cli.compare as compare_cli

    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    files = {}
    for system in ("careful", "terse", "wrong"):
        kept = rows if system != "wrong" else rows[:5]  # wrong answered five prompts only
        files[system] = write(tmp_path / f"{system}.jsonl", [{"id": r["id"], "query": r["query"],
                                                              "submission": r["responses"][system]} for r in kept])
    monkeypatch.setattr(compare_cli, "judge_specs",
                        lambda model, path: [judge(ScriptedEngine("s", policy=quality_policy()))])
    db = tmp_path / "r.sqlite"
    done = CliRunner().invoke(main, ["compare", *(f"--system={s}={p}" for s, p in files.items()), "--db", str(db),
                                     "--run", "joined", "--json", "--bootstrap", "20"])
    assert done.exit_code == 0, done.output
    stored = load_comparison(db, "joined")
    assert len(stored.description["pairs"]) == 8 + 5 + 5  # careful-terse on 8 prompts, each with wrong on 5
    assert [s["system"] for s in json.loads(done.stdout)["judges"]["s"]["ranking"]] == ["careful", "terse", "wrong"]
    clash = write(tmp_path / "clash.jsonl", [{"id": rows[0]["id"], "query": "another question", "submission": "x"}])
    refused = CliRunner().invoke(main, ["compare", f"--system=careful={files['careful']}", f"--system=odd={clash}",
                                        "--db", str(db)])
    assert refused.exit_code == 1 and f"item {rows[0]['id']!r}: its query differs from the one in" in refused.output


# ---------------------------------------------------------------------------- N-way


def test_an_nway_comparison_shows_each_system_in_each_slot_once_and_ranks_by_luce(tmp_path: Path) -> None:
    from autorubric_local.comparisons.judging import nway_items

    prompts = load_comparisons(EXAMPLE)
    (item,) = nway_items(prompts[:1], [overall_question()])
    tasks = item.rotation_tasks(0, "j", ScriptedEngine().format_chat, None)
    assert [t.option_order for t in tasks] == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    assert len({t.prefix for t in tasks}) == 1
    for task in tasks:  # slot k shows the response of system option_order[k]
        block = task.criterion_block
        positions = [block.index(item.responses[k]) for k in task.option_order]
        assert positions == sorted(positions)

    def best_of_n(request: ScoreRequest) -> list[float]:  # prefers quality, plus a pull to slot 1
        texts = re.findall(r"<response \d+>\n(.*?)\n</response \d+>", request.suffix, re.S)
        return log_softmax([TEXT_QUALITY[t] + (0.5 if k == 0 else 0.0) for k, t in enumerate(texts)])

    engine = ScriptedEngine("s", policy=best_of_n)
    stored = run_comparison(prompts, [judge(engine)], config=config(tmp_path / "r.sqlite"), n_way=True)
    assert len(engine.history) == 8 * 3 and len(stored.nway) == 8 and not stored.judgments
    first = stored.nway[0]
    shown = [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    for rotation, order in zip(first.rotations, shown, strict=True):  # by hand: softmax of quality + slot pull
        logits = [QUALITY[first.systems[k]] + (0.5 if slot == 0 else 0.0) for slot, k in enumerate(order)]
        expected = dict(zip((first.systems[k] for k in order), map(math.exp, log_softmax(logits))))
        assert rotation == pytest.approx(expected)
    p = first.preference
    (careful_terse,) = [o for o in outcomes(stored, judge_id="s", question="overall")
                        if o.prompt_id == first.prompt_id and (o.a, o.b) == ("careful", "terse")]
    assert careful_terse.wins == pytest.approx(p["careful"] / (p["careful"] + p["terse"]))
    ranked = rank_systems(stored, judge_id="s", question="overall", n_bootstrap=20)
    assert [s.system for s in ranked.systems] == ["careful", "terse", "wrong"]
    bias = position_bias(stored, judge_id="s", question="overall", n_bootstrap=0)
    assert bias.measures.consistency == 1.0  # a 0.5 pull never beats a quality gap of 1


def test_explain_mode_reasons_first_then_scores_the_verdict_after_the_reasoning(tmp_path: Path) -> None:
    """A judge with ``thinking`` writes its reasoning before each verdict (explain mode): one
    generation and one verdict request per order, the verdict scored after the reasoning."""
    engine = ScriptedEngine("s", policy=quality_policy(), explanation="Response 1 names the fact.")
    thinker = JudgeSpec(LLMConfig(model="scripted", engine=engine, thinking=16), "s")
    stored = run_comparison(load_comparisons(EXAMPLE)[:1], [thinker], config=config(tmp_path / "r.sqlite"))
    generated = [r for r in engine.history if not isinstance(r, ScoreRequest)]
    scored = [r for r in engine.history if isinstance(r, ScoreRequest)]
    assert len(generated) == len(scored) == 3 * 2
    assert all("Response 1 names the fact." in r.suffix for r in scored)  # the verdict follows the reasoning
    assert all(j.complete for j in stored.judgments) and len(stored.judgments) == 3
