"""Choosing which comparisons people label (issue 50): inclusion probabilities from the judge's
preference by hand, draws stored before any label and reproduced by seed, the Label Studio round
trip of pairwise tasks (the left/right order undone), strict errors on a malformed export, and
active win rates whose intervals cover a known truth under non-uniform probabilities."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from autorubric_local.cli import main
from autorubric_local.comparisons.active import active_win_rates
from autorubric_local.comparisons.corrected import PreferenceLabel, load_preference_labels
from autorubric_local.comparisons.judging import PairJudgment, StoredComparison, load_comparison
from autorubric_local.comparisons.labelling import (
    draw_comparison_selection,
    load_comparison_selection,
    preference_uncertainty,
    read_preference_export,
)
from autorubric_local.core.errors import InputError
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.estimates import sampling
from autorubric_local.estimates.label_studio import pairwise_labelling_config
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.store import Store
from fake_judge import fake_judge

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "compare_responses.jsonl"
LABELS = ("1", "2", "tie")


def judgment(prompt: str, pa: float, pt: float, a: str = "s1", b: str = "s2", judge: str = "j") -> PairJudgment:
    """A judgment whose balanced preference is ``(a: pa, tie: pt, b: 1 - pa - pt)`` (both orders agree)."""
    pb = max(0.0, 1.0 - pa - pt)
    return PairJudgment(f"{prompt} {a} vs {b}", prompt, a, b, judge, "overall", dict(zip(LABELS, (pa, pb, pt))),
                        dict(zip(LABELS, (pb, pa, pt))))


def stored(judgments: list[PairJudgment], judges: tuple[str, ...] = ("j",)) -> StoredComparison:
    systems = list(dict.fromkeys(s for j in judgments for s in (j.system_a, j.system_b)))
    description = {"systems": systems, "questions": [{"name": "overall", "text": "Which is better?", "weight": 0.0}],
                   "pairs": [{"item_id": j.item_id, "prompt_id": j.prompt_id, "a": j.system_a, "b": j.system_b}
                             for j in judgments if j.judge_id == judges[0]]}
    return StoredComparison("sweep-x", "cmp", description, judges, tuple(judgments), "finished")


# ---------------------------------------------------------------------------- probabilities by hand


def test_uncertainty_is_the_sd_of_the_human_verdict_under_the_judge_and_sqrt_f_1_minus_f_without_ties() -> None:
    assert preference_uncertainty({"a": 1.0, "tie": 0.0, "b": 0.0}) == 0.0
    assert preference_uncertainty({"a": 0.0, "tie": 1.0, "b": 0.0}) == 0.0  # a sure tie: Y = 0.5 surely
    assert preference_uncertainty({"a": 0.5, "tie": 0.0, "b": 0.5}) == pytest.approx(0.5)
    assert preference_uncertainty({"a": 0.7, "tie": 0.0, "b": 0.3}) == pytest.approx(math.sqrt(0.7 * 0.3))
    # Y = 1, 0.5, 0 w.p. 0.25, 0.5, 0.25: E Y = 0.5, E Y^2 = 0.25 + 0.125, Var = 0.125
    assert preference_uncertainty({"a": 0.25, "tie": 0.5, "b": 0.25}) == pytest.approx(math.sqrt(0.125))
    with pytest.raises(InputError, match="summing to 1"):
        preference_uncertainty({"a": 0.5, "tie": 0.5, "b": 0.5})


def test_inclusion_probabilities_of_a_tiny_comparison_by_hand() -> None:
    comparison = stored([judgment("p1", 1.0, 0.0), judgment("p2", 0.5, 0.0), judgment("p3", 0.0, 1.0),
                         judgment("p4", 0.25, 0.5)])
    selection = draw_comparison_selection(comparison, budget=2, seed=0, mix=0.2)
    # u = (0, 0.5, 0, sqrt(0.125)); share = 0.8 u / mean(u) + 0.2; pi = 2 share / sum(share) puts
    # p2 above 1: capped, and the remaining budget 1 goes to the others in proportion to share.
    u = np.array([0.0, 0.5, 0.0, math.sqrt(0.125)])
    share = 0.8 * u / u.mean() + 0.2
    assert 2 * share[1] / share.sum() > 1
    rest = share[[0, 2, 3]] / share[[0, 2, 3]].sum()
    expected = [rest[0], 1.0, rest[1], rest[2]]
    assert [c.inclusion_probability for c in selection.items] == pytest.approx(expected, abs=1e-12)
    assert expected == pytest.approx([0.2 / 1.925483, 1.0, 0.2 / 1.925483, 1.525483 / 1.925483], abs=1e-6)
    assert sum(c.inclusion_probability for c in selection.items) == pytest.approx(2.0)
    assert [c.drawn for c in selection.items] == list(sampling.draw(expected, 0))
    assert selection.items[1].drawn  # pi = 1: always drawn
    assert {c.shown_left for c in selection.items} <= {"s1", "s2"}
    for bad, message in (({"budget": 5}, r"budget must be in \(0, 4\]"), ({"budget": 2, "judge_id": "k"}, "no judge 'k'"),
                         ({"budget": 2, "question": "facts"}, "no question 'facts'"),
                         ({"budget": 2, "seed": -1}, "non-negative")):
        with pytest.raises(InputError, match=message):
            draw_comparison_selection(comparison, **bad)


def test_an_incomplete_judgment_is_left_out_and_several_judges_need_one_named() -> None:
    broken = PairJudgment("p5 s1 vs s2", "p5", "s1", "s2", "j", "overall", None, {"1": 0.5, "2": 0.5, "tie": 0.0},
                          ("infrastructure: down",))
    selection = draw_comparison_selection(stored([judgment("p1", 0.6, 0.1), judgment("p2", 0.3, 0.1), broken]),
                                          budget=1, seed=1)
    assert [c.prompt_id for c in selection.items] == ["p1", "p2"] and selection.n_left_out == 1
    two = stored([judgment("p1", 0.6, 0.1), judgment("p1", 0.5, 0.1, judge="k")], judges=("j", "k"))
    with pytest.raises(InputError, match="has 2 judges"):
        draw_comparison_selection(two, budget=1)
    assert draw_comparison_selection(two, budget=1, judge_id="k").judge_id == "k"
    from autorubric_local.comparisons.judging import NWayJudgment

    nway = StoredComparison("sweep-n", "n", two.description, ("j",), (), "finished",
                            nway=(NWayJudgment("p1", "p1", ("s1", "s2"), "j", "overall", ({"s1": 1.0, "s2": 0.0},), (0,)),))
    with pytest.raises(InputError, match="is N-way"):
        draw_comparison_selection(nway, budget=1)


# ---------------------------------------------------------------------------- a stored comparison, the CLI


QUALITY = {"careful": 2.0, "terse": 1.0, "wrong": 0.0}
TEXT_QUALITY = {text: QUALITY[system] for row in map(json.loads, EXAMPLE.read_text().splitlines())
                for system, text in row["responses"].items()}


def quality_judge() -> JudgeSpec:
    """A scripted judge that prefers the better response (by QUALITY) and adds 0.25 to slot 1
    (as ``tests/test_compare.py``'s)."""
    def policy(request: ScoreRequest) -> list[float]:
        found = re.search(r"<response 1>\n(.*?)\n</response 1>.*<response 2>\n(.*?)\n</response 2>", request.suffix, re.S)
        assert found is not None
        d = TEXT_QUALITY[found.group(1)] - TEXT_QUALITY[found.group(2)] + 0.25
        values = [d, -d, -abs(d) - 0.5]
        top = max(values)
        total = top + math.log(sum(math.exp(v - top) for v in values))
        return [v - total for v in values]

    engine = ScriptedEngine("s", policy=policy)
    return fake_judge(engine=engine).spec


def compared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import autorubric_local.cli.compare as compare_cli

    monkeypatch.setattr(compare_cli, "judge_specs", lambda model, path: [quality_judge()])
    db = tmp_path / "r.sqlite"
    done = CliRunner().invoke(main, ["compare", str(EXAMPLE), "--db", str(db), "--run", "cmp", "--bootstrap", "10"])
    assert done.exit_code == 0, done.output
    return db


def select(db: Path, tmp_path: Path, *extra: str, seed: str = "3") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    out, tasks = tmp_path / "to_label.jsonl", tmp_path / "tasks.json"
    done = CliRunner().invoke(main, ["label", "select", "cmp", "--db", str(db), "--budget", "8", "--seed", seed,
                                     "--out", str(out), "--label-studio", str(tasks), *extra])
    assert done.exit_code == 0, done.output
    assert "comparison selection" in done.stderr
    return [json.loads(line) for line in out.read_text().splitlines()], json.loads(tasks.read_text())


def test_draws_are_stored_with_every_probability_before_any_label_and_reproduced_by_seed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = compared(tmp_path, monkeypatch)
    rows, tasks = select(db, tmp_path)
    comparison = load_comparison(db, "cmp")
    first = load_comparison_selection(db, comparison)
    assert first is not None and first.selection_id == 1 and len(first.items) == 24  # 8 prompts x 3 pairs
    assert first.question == "overall" and first.judge_id == "s" and first.seed == 3
    # The stored design is the rule's own: pi from the judge's preferences, draws from the seed.
    u = [preference_uncertainty(j.preference) for j in comparison.judgments]
    pi = sampling.inclusion_probabilities(np.array(u), 8, 0.2)
    assert [c.inclusion_probability for c in first.items] == pytest.approx(list(pi), abs=1e-12)
    assert [c.drawn for c in first.items] == list(sampling.draw(pi, 3))
    assert max(pi) / min(pi) > 1.5  # not a uniform design
    assert [r["comparison_id"] for r in rows] == [c.item_id for c in first.drawn]
    assert [t["data"]["comparison_id"] for t in tasks] == [c.item_id for c in first.drawn]
    # Nothing about labels exists yet: the draws were recorded on their own.
    store = Store.open(db)
    assert store.db["comparison_selection_items"].count == 24 and store.db["labels"].count == 0
    store.close()
    again, _ = select(db, tmp_path)
    second = load_comparison_selection(db, comparison)
    assert second is not None and second.selection_id == 2
    assert second.items == first.items and again == rows  # same seed: same draws, same sides
    other = draw_comparison_selection(comparison, budget=8, seed=4)
    assert [c.drawn for c in other.items] != [c.drawn for c in first.items] or \
        [c.shown_left for c in other.items] != [c.shown_left for c in first.items]


def test_the_data_must_be_the_judged_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = compared(tmp_path, monkeypatch)
    lines = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    for line in lines:
        line["responses"]["terse"] = "Changed."
    changed = tmp_path / "changed.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    done = CliRunner().invoke(main, ["label", "select", "cmp", "--db", str(db), "--budget", "20", "--seed", "0",
                                     "--out", str(tmp_path / "x.jsonl"), "--data", str(changed)])
    assert done.exit_code == 1 and "differs from the one comparison 'cmp' judged" in done.output
    assert load_comparison_selection(db, load_comparison(db, "cmp")) is None  # nothing stored on failure
    anchored = CliRunner().invoke(main, ["label", "select", "cmp", "--db", str(db), "--budget", "2",
                                         "--with-predictions", "--label-studio", str(tmp_path / "t.json")])
    assert anchored.exit_code == 2 and "not for a comparison" in anchored.output


def truth_winner(row: dict[str, Any]) -> str:
    """The synthetic human: the better system by QUALITY wins; careful vs terse on 'boil' is a tie."""
    if row["id"] == "boil" and {row["a"], row["b"]} == {"careful", "terse"}:
        return "tie"
    return "a" if QUALITY[row["a"]] > QUALITY[row["b"]] else "b"


def export_of(tasks: list[dict[str, Any]], truth: dict[str, str], minimal: bool = False) -> list[dict[str, Any]]:
    """What Label Studio exports after a human answered each task by ``truth`` (comparison id -> a/b/tie)."""
    out = []
    for number, task in enumerate(tasks, start=1):
        data = task["data"]
        winner = truth[data["comparison_id"]]
        left_is_a = data["left_system"] == data["system_a"]
        choice = "Tie" if winner == "tie" else ("Left" if (winner == "a") == left_is_a else "Right")
        if minimal:
            out.append({**data, "id": number, "winner": choice, "annotator": 1, "annotation_id": number})
            continue
        out.append({"id": number, "data": data, "annotations": [
            {"id": 10 * number, "was_cancelled": True, "result": [], "updated_at": "2026-12-01T10:00:00Z"},
            {"id": 10 * number + 1, "was_cancelled": False, "updated_at": "2026-12-01T11:00:00Z",
             "result": [{"from_name": "winner", "to_name": "left", "type": "choices", "value": {"choices": [choice]}}]},
        ]})
    return out


def test_label_studio_round_trip_undoes_the_left_right_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = compared(tmp_path, monkeypatch)
    rows, tasks = select(db, tmp_path)
    config = (tmp_path / "tasks.xml").read_text()
    assert '<Choices name="winner" toName="left"' in config and "$left" in config and "$right" in config
    assert "careful" not in config and config == pairwise_labelling_config(
        next(q["text"] for q in load_comparison(db, "cmp").questions), with_reference=False)
    prompts = {json.loads(line)["id"]: json.loads(line) for line in EXAMPLE.read_text().splitlines()}
    sides = set()
    for row, task in zip(rows, tasks, strict=True):
        data = task["data"]
        right = data["system_b"] if data["left_system"] == data["system_a"] else data["system_a"]
        assert data["left"] == prompts[row["id"]]["responses"][data["left_system"]]
        assert data["right"] == prompts[row["id"]]["responses"][right]
        sides.add(data["left_system"] == data["system_a"])
    assert sides == {True, False}  # both orders shown
    truth = {r["comparison_id"]: truth_winner(r) for r in rows}
    for minimal in (False, True):
        export = tmp_path / f"export-{minimal}.json"
        export.write_text(json.dumps(export_of(tasks, truth, minimal)), encoding="utf-8")
        labels_file = tmp_path / f"labels-{minimal}.jsonl"
        done = CliRunner().invoke(main, ["label", "import-preferences", str(export), "--out", str(labels_file)])
        assert done.exit_code == 0, done.output
        labels = load_preference_labels(labels_file)
        assert [(x.prompt_id, x.a, x.b, x.winner) for x in labels] == [
            (r["id"], r["a"], r["b"], truth[r["comparison_id"]]) for r in rows]
    # The filled-in JSONL reads back the same way.
    filled = tmp_path / "filled.jsonl"
    filled.write_text("".join(json.dumps({**r, "winner": truth[r["comparison_id"]]}) + "\n" for r in rows))
    assert read_preference_export(filled)[0] == [{"id": r["id"], "a": r["a"], "b": r["b"],
                                                   "winner": truth[r["comparison_id"]]} for r in rows]
    # ranking --labels finds the selection and weights by it.
    done = CliRunner().invoke(main, ["ranking", "cmp", "--db", str(db), "--labels", str(tmp_path / "labels-True.jsonl"),
                                     "--bootstrap", "10", "--json"])
    assert done.exit_code == 0, done.output
    decoder = json.JSONDecoder()
    _, end = decoder.raw_decode(done.stdout)
    active = json.loads(done.stdout[end:])
    assert active["selection"] == 1 and set(active["active_win_rates"]) == {"s"}
    assert sum(r["drawn"] for r in active["active_win_rates"]["s"]) == len(rows)


def test_a_malformed_export_names_the_file_task_and_field(tmp_path: Path) -> None:
    good = {"comparison_id": "p1 x vs y", "prompt_id": "p1", "system_a": "x", "system_b": "y", "left_system": "y",
            "query": "q", "left": "Y", "right": "X"}
    answered = lambda choice: [{"from_name": "winner", "to_name": "left", "type": "choices",  # noqa: E731
                                "value": {"choices": choice}}]
    tasks = [
        {"data": good, "annotations": [{"result": answered(["Left"])}]},
        {"data": {k: v for k, v in good.items() if k != "left_system"} | {"comparison_id": "p2 x vs y"},
         "annotations": []},
        {"data": good | {"comparison_id": "p3 x vs y", "prompt_id": "p3"}, "annotations": [{"result": answered(["Maybe"])}]},
        {"data": good | {"comparison_id": "p4 x vs y", "left_system": "z"}, "annotations": []},
        {"data": good, "annotations": []},
        {"data": good | {"comparison_id": "p6 x vs y"}, "annotations": [{"result": answered(["Left", "Right"])}]},
        "not a task",
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_preference_export(path)
    lines = str(caught.value).splitlines()
    assert all(line.startswith(f"{path}: task ") for line in lines)
    text = str(caught.value)
    assert "task 2: field 'data.left_system': missing" in text
    assert "task 3 ('p3 x vs y'): field 'result.value.choices': expected one of ['Left', 'Right', 'Tie'], got 'Maybe'" in text
    assert "task 4 ('p4 x vs y'): field 'data.left_system': 'z' is not one of the two systems" in text
    assert "task 5 ('p1 x vs y'): field 'data.comparison_id': comparison already in task 1" in text
    assert "task 6 ('p6 x vs y'): field 'result.value.choices': expected one choice, got 2" in text
    assert "task 7: expected an object" in text
    path.write_text(json.dumps(tasks[:1] + [{"data": good | {"comparison_id": "p2 x vs y", "prompt_id": "p2"},
                                             "annotations": [{"was_cancelled": True, "result": answered(["Tie"])}]}]))
    labels, unanswered = read_preference_export(path)
    assert labels == [{"id": "p1", "a": "x", "b": "y", "winner": "b"}] and unanswered == ["p2 x vs y"]
    done = CliRunner().invoke(main, ["label", "import-preferences", str(tmp_path / "missing.json"), "--out",
                                     str(tmp_path / "o.jsonl")])
    assert done.exit_code == 1 and "missing.json" in done.output


# ---------------------------------------------------------------------------- the active estimator


def test_active_win_rates_need_every_drawn_label_and_leave_undrawn_labels_out() -> None:
    comparison = stored([judgment(f"p{i}", pa, 0.1) for i, pa in enumerate([0.8, 0.2, 0.5, 0.45, 0.7, 0.1])])
    selection = draw_comparison_selection(comparison, budget=3, seed=2)
    drawn = [c for c in selection.items if c.drawn]
    assert len(drawn) >= 2
    # s1 wins the first drawn comparison (named in the other order), the rest are ties
    labels = [PreferenceLabel(c.prompt_id, "s2", "s1", "b" if k == 0 else "tie") for k, c in enumerate(drawn)]
    (rate,) = active_win_rates(comparison, selection, labels, judge_id="j")
    f = np.array([0.85, 0.25, 0.55, 0.5, 0.75, 0.15])
    pi = np.array([c.inclusion_probability for c in selection.items])
    xi = np.array([c.drawn for c in selection.items])
    y = np.zeros(6)
    y[[k for k, c in enumerate(selection.items) if c.drawn]] = [1.0] + [0.5] * (len(drawn) - 1)
    ht = float(np.mean(xi * y / pi))
    assert (rate.system, rate.other, rate.n_comparisons, rate.n_drawn) == ("s1", "s2", 6, len(drawn))
    assert rate.classical.estimate == pytest.approx(ht) and rate.judge == pytest.approx(f.mean())
    from autorubric_local.estimates.methods import active_mean

    tuned = active_mean(f, np.where(xi, y, np.nan), xi, pi, 0.1)
    assert rate.active.estimate == pytest.approx(min(1.0, max(0.0, tuned.estimate)))
    assert rate.active.lam == pytest.approx(tuned.lam)
    undrawn = next(c for c in selection.items if not c.drawn)
    (again,) = active_win_rates(comparison, selection, [*labels, PreferenceLabel(undrawn.prompt_id, "s1", "s2", "a")],
                                judge_id="j")
    assert again.n_ignored == 1 and again.active == rate.active
    with pytest.raises(InputError, match=r"1 comparison\(s\) drawn by selection 0 have no label in the labels"):
        active_win_rates(comparison, selection, labels[1:], judge_id="j")
    # Another judge supplies f on the selection's comparisons it judged; one it judged beyond them is
    # no part of the design's population and is left out, not refused.
    other = [judgment(f"p{i}", pa, 0.1, judge="k") for i, pa in enumerate([0.7, 0.3, 0.5, 0.5, 0.6, 0.2, 0.9])]
    both = stored([*comparison.judgments, *other], judges=("j", "k"))
    both = StoredComparison(selection.sweep_id, "cmp", both.description, ("j", "k"), both.judgments, "finished")
    (by_k,) = active_win_rates(both, selection, labels, judge_id="k")
    assert by_k.n_comparisons == 6 and by_k.n_drawn == rate.n_drawn
    assert by_k.classical.estimate == pytest.approx(rate.classical.estimate)  # HT does not use f
    assert by_k.judge == pytest.approx(np.mean([0.75, 0.35, 0.55, 0.55, 0.65, 0.25]))
    grown = StoredComparison(selection.sweep_id, "cmp", both.description, ("j",),
                             (*comparison.judgments, judgment("p6", 0.5, 0.1)), "finished")
    with pytest.raises(InputError, match=r"1 judged comparison\(s\) are not in selection 0 \(first: prompt 'p6'"):
        active_win_rates(grown, selection, labels, judge_id="j")


def test_active_win_rate_intervals_cover_the_truth_with_non_uniform_probabilities() -> None:
    """300 comparisons of s1 and s2; a human calls a tie (10%) or prefers s1 with the prompt's own
    probability q ~ Beta(3, 2), so the true win rate is 0.1 * 0.5 + 0.9 * 0.6 = 0.59. The judge's
    preference is q plus noise (sd 0.15), with 10% on a tie; labels are drawn by its uncertainty
    (budget 60, mix 0.2). 90% intervals over 300 seeded datasets."""
    rng = np.random.default_rng(11)
    truth, trials, n = 0.59, 300, 300
    covered = {"active": 0, "classical": 0}
    ratios, widths = [], {"active": [], "classical": []}
    for rep in range(trials):
        q = rng.beta(3, 2, size=n)
        y = np.where(rng.random(n) < 0.1, 0.5, (rng.random(n) < q).astype(float))
        g = np.clip(q + rng.normal(0, 0.15, n), 0.0, 1.0)
        comparison = stored([judgment(f"p{i}", 0.9 * float(v), 0.1) for i, v in enumerate(g)])
        selection = draw_comparison_selection(comparison, budget=60, seed=rep)
        pi = np.array([c.inclusion_probability for c in selection.items])
        ratios.append(pi.max() / pi.min())
        labels = [PreferenceLabel(f"p{i}", "s1", "s2", "tie" if y[i] == 0.5 else ("a" if y[i] == 1 else "b"))
                  for i, c in enumerate(selection.items) if c.drawn]
        (rate,) = active_win_rates(comparison, selection, labels, judge_id="j")
        for name, interval in (("active", rate.active), ("classical", rate.classical)):
            covered[name] += interval.ci_low <= truth <= interval.ci_high
            widths[name].append(interval.ci_high - interval.ci_low)
    assert min(ratios) > 2  # the design is far from uniform
    assert 0.87 <= covered["active"] / trials <= 0.93
    assert 0.87 <= covered["classical"] / trials <= 0.93
    assert np.mean(widths["active"]) < np.mean(widths["classical"])  # the judge helps


def test_ranking_weights_labels_by_the_selection_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--selection ID picks an older selection; none takes the labels as a uniform sample."""
    db = compared(tmp_path, monkeypatch)
    rows, _ = select(db, tmp_path, seed="3")  # selection 1
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": r["id"], "a": r["a"], "b": r["b"], "winner": truth_winner(r)}) + "\n"
                              for r in rows), encoding="utf-8")
    select(db, tmp_path, seed="4")  # selection 2, the latest, drew other comparisons
    comparison = load_comparison(db, "cmp")
    latest = load_comparison_selection(db, comparison)
    assert latest is not None and latest.selection_id == 2
    assert {c.item_id for c in latest.drawn} != {r["comparison_id"] for r in rows}

    def ranking(*extra: str) -> Any:
        return CliRunner().invoke(main, ["ranking", "cmp", "--db", str(db), "--bootstrap", "10", "--json", *extra])

    def after_rankings(output: str) -> dict[str, Any]:
        _, end = json.JSONDecoder().raw_decode(output)
        return json.loads(output[end:])

    older = ranking("--labels", str(labels), "--selection", "1")
    assert older.exit_code == 0, older.output
    active = after_rankings(older.stdout)
    assert active["selection"] == 1 and sum(r["drawn"] for r in active["active_win_rates"]["s"]) == len(rows)
    uniform = ranking("--labels", str(labels), "--selection", "none")
    assert uniform.exit_code == 0, uniform.output
    assert set(after_rankings(uniform.stdout)) == {"corrected_win_rates", "corrected_bradley_terry"}
    missing = ranking("--labels", str(labels), "--selection", "9")
    assert missing.exit_code == 1 and "comparison 'cmp' has no label selection 9" in missing.output
    assert ranking("--labels", str(labels), "--selection", "old").exit_code == 2
    unlabelled = ranking("--selection", "1")
    assert unlabelled.exit_code == 2 and "--selection weights --labels" in unlabelled.output
