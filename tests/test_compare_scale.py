"""The 5-point verdict scale of comparisons (issue 50): Arena-Hard's ``1>>2 1>2 1=2 2>1 2>>1``
mapped back to systems (order ``ba`` flips it), the soft preference as the expected grade,
Arena-Hard's weighting of strong verdicts (3 games) in Bradley-Terry, the swap rule and position
consistency on the collapsed direction, all by hand; and `compare --scale 5` end to end with the
scripted judge, stored so that `ranking RUN` reads the scale back."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from autorubric_local.cli import main
from autorubric_local.comparisons.bradley_terry import fit_bradley_terry, pair_counts
from autorubric_local.comparisons.data import ComparisonPrompt, load_comparisons, plan_pairs
from autorubric_local.comparisons.judging import (
    PairJudgment,
    StoredComparison,
    comparison_items,
    load_comparison,
    run_comparison,
)
from autorubric_local.comparisons.preferences import (
    LABELS5,
    arena_hard_counts,
    balanced_graded,
    collapsed_verdict,
    expected_grade,
    graded_preference,
    graded_probabilities,
    hard_label,
    position_consistency,
    weighted_swap_counts,
)
from autorubric_local.comparisons.prompts import ORDERS, ORDERS5, overall_question
from autorubric_local.comparisons.ranking import outcomes, position_bias, rank_systems
from autorubric_local.core.errors import InputError
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner.config import EvalConfig

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "compare_responses.jsonl"
QUALITY = {"careful": 2.0, "terse": 1.0, "wrong": 0.0}
TEXT_QUALITY = {text: QUALITY[system] for row in map(json.loads, EXAMPLE.read_text().splitlines())
                for system, text in row["responses"].items()}


def p5(*values: float) -> dict[str, float]:
    return dict(zip(LABELS5, values, strict=True))


# ---------------------------------------------------------------------------- mapping and weights by hand


def test_each_order_maps_back_to_systems_and_order_ba_flips_the_scale() -> None:
    shown = p5(0.4, 0.3, 0.1, 0.15, 0.05)
    assert graded_probabilities(shown, swapped=False) == pytest.approx(
        {"a>>b": 0.4, "a>b": 0.3, "tie": 0.1, "b>a": 0.15, "b>>a": 0.05})
    # Order ba: slot 1 holds b, so "1>>2" (0.4) is b>>a and "2>>1" (0.05) is a>>b.
    assert graded_probabilities(shown, swapped=True) == pytest.approx(
        {"a>>b": 0.05, "a>b": 0.15, "tie": 0.1, "b>a": 0.3, "b>>a": 0.4})
    assert ORDERS5 == ((0, 1, 2, 3, 4), (4, 3, 2, 1, 0))
    with pytest.raises(InputError, match="must be among"):
        graded_probabilities({"1": 1.0}, swapped=False)


def test_soft_preference_is_the_expected_grade_and_bradley_terry_weights_strong_verdicts_three() -> None:
    ab = p5(0.5, 0.2, 0.1, 0.1, 0.1)  # a in slot 1
    ba = p5(0.1, 0.1, 0.2, 0.3, 0.3)  # b in slot 1: 2>1 and 2>>1 favour a
    graded = balanced_graded(ab, ba)
    # a>>b = (0.5 + 0.3) / 2, a>b = (0.2 + 0.3) / 2, tie = (0.1 + 0.2) / 2, b>a = (0.1 + 0.1) / 2, b>>a = (0.1 + 0.1) / 2
    assert graded == pytest.approx({"a>>b": 0.4, "a>b": 0.25, "tie": 0.15, "b>a": 0.1, "b>>a": 0.1})
    assert expected_grade(graded) == pytest.approx(0.4 + 0.75 * 0.25 + 0.5 * 0.15 + 0.25 * 0.1)  # 0.6875
    pref = graded_preference(graded)
    assert pref == pytest.approx({"a": 0.4 + 0.125, "tie": 0.15 + 0.125 + 0.05, "b": 0.1 + 0.05})
    assert pref["a"] + pref["tie"] / 2 == pytest.approx(0.6875) and sum(pref.values()) == pytest.approx(1.0)
    # Arena-Hard: A>>B is 3 games won, A>B one, a tie one tie.
    assert arena_hard_counts(graded) == pytest.approx((3 * 0.4 + 0.25, 0.15, 0.1 + 3 * 0.1))


def test_hard_labels_swap_rule_and_consistency_use_the_collapsed_direction() -> None:
    assert hard_label(p5(0.1, 0.4, 0.2, 0.2, 0.1)) == "1>2"
    assert hard_label(p5(0.3, 0.3, 0.1, 0.2, 0.1)) == "1>2"  # equal maxima: the weaker claim
    assert hard_label(p5(0.35, 0.0, 0.3, 0.0, 0.35)) == "1>>2"  # equally far from 1=2: the first
    assert collapsed_verdict(p5(0.1, 0.1, 0.5, 0.2, 0.1)) == "tie"
    strong_a, slight_a_in_ba = p5(0.6, 0.1, 0.1, 0.1, 0.1), p5(0.1, 0.1, 0.1, 0.6, 0.1)  # ba: 2>1 is a slightly
    assert weighted_swap_counts(strong_a, slight_a_in_ba) == (2.0, 0.0, 0.0)  # (3 + 1) / 2 games
    assert weighted_swap_counts(strong_a, p5(0.1, 0.1, 0.1, 0.1, 0.6)) == (3.0, 0.0, 0.0)  # a>>b in both
    assert weighted_swap_counts(strong_a, strong_a) == (0.0, 1.0, 0.0)  # slot 1 both times: a tie
    verdicts = [(collapsed_verdict(strong_a), collapsed_verdict(slight_a_in_ba)),
                (collapsed_verdict(strong_a), collapsed_verdict(strong_a))]
    assert verdicts == [("1", "2"), ("1", "1")]
    measures = position_consistency(verdicts)
    assert (measures.consistency, measures.primacy) == (0.5, 1.0)


def comparison5(judgments: list[PairJudgment]) -> StoredComparison:
    systems = list(dict.fromkeys(s for j in judgments for s in (j.system_a, j.system_b)))
    description = {"systems": systems, "scale": 5, "pairs": [],
                   "questions": [{"name": "overall", "text": "?", "weight": 0.0}]}
    return StoredComparison("id", "c", description, ("j",), tuple(judgments), "finished")


def pj5(prompt: str, a: str, b: str, ab: dict[str, float], ba: dict[str, float]) -> PairJudgment:
    return PairJudgment(f"{prompt} {a} vs {b}", prompt, a, b, "j", "overall", ab, ba, (), 5)


def test_rank_systems_fits_arena_hard_weighted_counts_and_reports_expected_grades() -> None:
    rng = np.random.default_rng(5)
    judgments = [pj5(f"p{p}", a, b, p5(*rng.dirichlet([2, 2, 1, 1, 1])), p5(*rng.dirichlet([1, 1, 1, 2, 2])))
                 for p in range(10) for a, b in (("s1", "s2"), ("s1", "s3"), ("s2", "s3"))]
    stored = comparison5(judgments)
    counts = [arena_hard_counts(balanced_graded(j.ab, j.ba)) for j in judgments]
    direct = fit_bradley_terry(pair_counts([j.prompt_id for j in judgments], [j.system_a for j in judgments],
                                           [j.system_b for j in judgments], *zip(*counts), systems=["s1", "s2", "s3"]))
    ranked = rank_systems(stored, judge_id="j", question="overall", n_bootstrap=20)
    by_name = {s.system: s for s in ranked.systems}
    for k, name in enumerate(direct.systems):
        assert by_name[name].beta == pytest.approx(direct.beta[k], abs=1e-9)
    grades = [expected_grade(balanced_graded(j.ab, j.ba)) for j in judgments if (j.system_a, j.system_b) == ("s1", "s2")]
    assert ranked.win_matrix[("s1", "s2")] == pytest.approx(np.mean(grades))
    unit = outcomes(stored, judge_id="j", question="overall")
    assert all(o.wins + o.ties + o.losses == pytest.approx(1.0) for o in unit)
    (swap,) = outcomes(comparison5(judgments[:1]), judge_id="j", question="overall", method="swap", weighted=True)
    assert (swap.wins, swap.ties, swap.losses) == weighted_swap_counts(judgments[0].ab, judgments[0].ba)


def test_three_point_items_are_unchanged_and_five_point_items_ask_five_answers() -> None:
    prompt = ComparisonPrompt("p1", "What is 2+2?", {"a": "four", "b": "five"})
    (three,) = comparison_items(plan_pairs([prompt]), [overall_question()])
    (five,) = comparison_items(plan_pairs([prompt]), [overall_question()], scale=5)
    assert set(three.content()) == {"prompt_id", "systems", "responses", "questions"}  # the hash as before
    assert five.content()["scale"] == 5 and overall_question().criterion() == overall_question().criterion(3)
    engine = ScriptedEngine()
    tasks3, tasks5 = (item.rotation_tasks(0, "j", engine.format_chat, None) for item in (three, five))
    assert [t.option_order for t in tasks3] == list(ORDERS) and [t.option_order for t in tasks5] == list(ORDERS5)
    assert "5. Response 2 is much better" in tasks5[0].criterion_block and "4." not in tasks3[0].criterion_block
    assert "much better" in tasks5[0].prefix and "much better" not in tasks3[0].prefix
    with pytest.raises(InputError, match="scale must be one of"):
        comparison_items(plan_pairs([prompt]), [overall_question()], scale=4)


# ---------------------------------------------------------------------------- end to end


def log_softmax(values: list[float]) -> list[float]:
    top = max(values)
    total = top + math.log(sum(math.exp(v - top) for v in values))
    return [v - total for v in values]


def graded_policy(request: ScoreRequest) -> list[float]:
    """A 5-point judge that prefers the better response, strongly when the gap is 2."""
    found = re.search(r"<response 1>\n(.*?)\n</response 1>.*<response 2>\n(.*?)\n</response 2>", request.suffix, re.S)
    assert found is not None
    d = TEXT_QUALITY[found.group(1)] - TEXT_QUALITY[found.group(2)]
    return log_softmax([2 * (d - 1.5), 2 * (1 - abs(d - 1)), 1 - abs(d) * 2, 2 * (1 - abs(d + 1)), 2 * (-d - 1.5)])


def test_compare_scale_5_end_to_end_is_stored_and_read_back_by_ranking(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import autorubric_local.cli.compare as compare_cli

    engine = ScriptedEngine("s", policy=graded_policy)
    monkeypatch.setattr(compare_cli, "judge_specs",
                        lambda model, path: [JudgeSpec(LLMConfig(model="scripted", engine=engine), "s")])
    db = tmp_path / "r.sqlite"
    runner = CliRunner()
    done = runner.invoke(main, ["compare", str(EXAMPLE), "--db", str(db), "--run", "cmp", "--scale", "5", "--json",
                                "--bootstrap", "20"])
    assert done.exit_code == 0, done.output
    assert all(len(r.labels) == 5 for r in engine.history)
    result = json.loads(done.stdout)["judges"]["s"]
    assert [s["system"] for s in result["ranking"]] == ["careful", "terse", "wrong"]
    assert result["position_bias"][0]["consistency"] == 1.0
    stored = load_comparison(db, "cmp")
    assert stored.scale == 5
    first = stored.judgments[0]  # careful (2) vs terse (1): d = 1 in order ab, -1 in order ba
    expected = dict(zip(LABELS5, map(math.exp, log_softmax([-1.0, 2.0, -1.0, -2.0, -5.0]))))
    assert first.ab == pytest.approx(expected, abs=1e-9) and first.labels == ("1>2", "2>1")
    assert first.swap_verdict == "a" and first.bradley_terry_counts("swap") == (1.0, 0.0, 0.0)
    wrong = next(j for j in stored.judgments if (j.system_a, j.system_b) == ("careful", "wrong"))
    assert wrong.labels == ("1>>2", "2>>1") and wrong.bradley_terry_counts("swap") == (3.0, 0.0, 0.0)
    again = runner.invoke(main, ["ranking", "cmp", "--db", str(db), "--json", "--bootstrap", "20"])
    assert again.exit_code == 0, again.output
    assert [s["system"] for s in json.loads(again.stdout)["judges"]["s"]["ranking"]] == ["careful", "terse", "wrong"]
    bias = position_bias(stored, judge_id="s", question="overall", n_bootstrap=0)
    assert bias.measures.consistency == 1.0
    with pytest.raises(InputError, match="5-point scale"):
        run_comparison(load_comparisons(EXAMPLE)[:1], [JudgeSpec(LLMConfig(model="scripted", engine=engine), "s")],
                       config=EvalConfig(db_path=tmp_path / "n.sqlite", experiment_name="n", show_progress=False),
                       n_way=True, scale=5)
