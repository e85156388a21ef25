"""Datasette metadata for a results database: a title and description for every table and view,
facets on run (or comparison), criterion (or question), verdict and judge where a table has
those columns, and canned queries (disagreements between judges, judge vs human, lowest-scoring
items, off-label judgments, position-inconsistent comparison pairs, comparison judges' position
consistency).

Pure: it reads the database's table and column names, never its rows, and builds a plain
dict (Datasette's metadata format), so it is tested without Datasette.
"""

from __future__ import annotations

from typing import Any

import sqlite_utils

DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "runs": ("Runs", "One row per grading run: its name, status, judges, grader settings, rubric and data file."),
    "items": ("Items", "One row per run and item: the graded submission and its context, the score, errors, token "
                       "counts and the ground truth given with the data (ground_truth_json). Full-text search "
                       "covers the submission."),
    "judgments": ("Judgments", "One row per run, item, criterion, judge and option order: the verdict or selected "
                               "label, label probabilities, off-label mass, explanation, token counts and error. "
                               "Full-text search covers the explanation."),
    "item_criteria": ("Criterion results (table)", "One row per run, item and criterion: the final verdict after "
                                                   "aggregating the judges, score value, passed, contribution."),
    "criterion_results": ("Criterion results", "One row per item and criterion with the run's name: the final "
                                               "verdict, passed, contribution to the raw score, requirement and "
                                               "explanation, and the item's score."),
    "judge_votes": ("Judge votes", "One row per judgment with the run's name: each judge's vote in each option "
                                   "order, its label probabilities, off-label mass, explanation and error."),
    "judgment_prompts": ("Judgment prompts", "Each judgment's exact prompt as the judge read it (prompt) and as the "
                                             "engine received it, the data's spans marked (marked_prompt)."),
    "run_summaries": ("Run summaries", "One row per run: items done and failed, mean score, judgments and failed "
                                       "judgments, wall time."),
    "prompt_texts": ("Prompt texts", "Each distinct prompt part once (a judgment's prompt is its prefix + suffix)."),
    "contextual_priors": ("Contextual priors", "Content-free label priors that corrected judgments under contextual "
                                               "calibration, per run, judge and criterion."),
    "metrics": ("Metrics", "One row per metrics computation of a run (autorubric-local metrics)."),
    "threshold_calibrations": ("Threshold calibrations", "Rules fitted on a run's training split "
                                                         "(autorubric-local calibrate) and their held-out agreement."),
    "indeterminacy_analyses": ("Indeterminacy analyses", "One row per autorubric-local indeterminacy analysis."),
    "indeterminacy_values": ("Indeterminacy values", "Each figure of an indeterminacy analysis, per criterion, judge, "
                                                     "beta and tau."),
    "labels": ("Human labels", "Human labels per run, label source, item and criterion (autorubric-local label "
                               "import; source 'dataset' is the run's own ground truth)."),
    "label_selections": ("Label selections", "One row per autorubric-local label select: target, budget, seed."),
    "label_selection_items": ("Label selection items", "Each item's inclusion probability in a selection, and "
                                                       "whether it was drawn for labelling."),
    "comparison_selections": ("Comparison label selections", "One row per autorubric-local label select of a "
                                                         "comparison: judge, question, budget, seed."),
    "comparison_selection_items": ("Comparison label selection items", "Each judged comparison's inclusion "
                                                                     "probability in a selection, whether it was "
                                                                     "drawn, and the side each response is shown."),
    "comparison_judgments": ("Comparison judgments", "One row per judgment of a pairwise comparison "
                                                     "(autorubric-local compare) and slot order: the system shown "
                                                     "in each slot, the probabilities of slot 1, slot 2 and a tie "
                                                     "(or of the five labels of --scale 5), the verdict and the "
                                                     "error."),
    "comparison_pairs": ("Comparison pairs", "One row per comparison, question, judge and pair of systems judged in "
                                             "both slot orders: P(a better), P(tie), P(b better) from each order and "
                                             "their mean, each order's winner, and whether the two orders are "
                                             "position-consistent."),
    "comparison_slot_judgments": ("N-way comparison slots", "One row per judgment of an N-way comparison "
                                                           "(autorubric-local compare --n-way), rotation and slot: "
                                                           "the system shown in the slot, the judge's probability "
                                                           "that it is the best, and whether it was chosen."),
    "comparison_nway_preferences": ("N-way comparison preferences", "One row per N-way comparison, prompt, question, "
                                                                    "judge and system: its mean probability of being "
                                                                    "the best over the N rotations (the balanced "
                                                                    "preference) and how often it was chosen."),
    "sweeps": ("Position-bias sweeps", "One row per sweep: kind, status, settings, judges and rubric."),
    "sweep_judgments": ("Sweep judgments", "One row per sweep judgment and option rotation."),
    "sweep_scores": ("Sweep scores", "One row per sweep item, criterion, judge and variant: LLM, choice and Grade "
                                     "Scores."),
    "sweep_aggregates": ("Sweep aggregates", "Per sweep, judge, criterion and variant: the scores over the items."),
    "run_leases": ("Run leases", "The writer holding a run being graded (deleted when the run ends)."),
    "sweep_leases": ("Sweep leases", "The writer holding a sweep being written (deleted when it ends)."),
    "_migrations": ("Migrations", "The schema migrations applied to this file."),
}
"""Table or view -> (title, description). Every table and view of a migrated database has one
(``tests/test_browse.py``); full-text index tables are Datasette's to hide."""

FACET_COLUMNS: tuple[tuple[str, ...], ...] = (
    ("run_name", "run_id", "comparison_name", "sweep_id"),
    ("criterion_name", "question"),
    ("verdict", "vote", "label", "consistent"),
    ("judge_id",),
)
"""Facet families (run or comparison, criterion or question, verdict, judge): a table gets the
first column of each family it has."""

HIDDEN = ("_migrations", "run_leases", "sweep_leases")
"""Tables left off the database page (still reachable by URL)."""

_RUN = "(:run = '' or {column} = :run)"
"""The optional run filter of every canned query: blank means every run."""

_COMPARISON = "(:comparison = '' or {column} = :comparison)"
"""The optional comparison filter of the comparison queries: blank means every comparison."""

CANNED_QUERIES: dict[str, dict[str, str]] = {
    "judge_disagreements": {
        "title": "Disagreements between judges",
        "description": "Items and criteria where two judges gave different votes (any option order); the final "
                       "verdict is the aggregated one. Leave run blank for every run.",
        "sql": f"""
select v.run_name, v.item_id, v.criterion_name,
       group_concat(v.judge_id || ': ' || v.vote, '; ') as votes,
       c.verdict as final_verdict
from judge_votes v
left join criterion_results c using (run_id, item_id, criterion_index)
where {_RUN.format(column="v.run_name")} and v.vote is not null
  and exists (select 1 from judgments o
              where o.run_id = v.run_id and o.item_id = v.item_id and o.criterion_index = v.criterion_index
                and o.judge_id != v.judge_id and coalesce(o.verdict, o.selected_label) != v.vote)
group by v.run_id, v.item_id, v.criterion_index
order by v.run_name, v.item_index, v.criterion_index""",
    },
    "judge_vs_human": {
        "title": "Judge vs human",
        "description": "Each judge vote next to the human label of its item and criterion: labels imported with "
                       "autorubric-local label import (by source), and the ground truth given with the data "
                       "(source 'dataset') where no 'dataset' labels were imported. agrees is 1 when they match.",
        "sql": f"""
with human as (
    select run_id, item_id, criterion_index, source, label from labels
    union all
    select i.run_id, i.item_id, cast(g.key as integer), 'dataset', g.value
    from items i, json_each(i.ground_truth_json) g
    where i.ground_truth_json is not null and g.value is not null
      and not exists (select 1 from labels l where l.run_id = i.run_id and l.source = 'dataset')
)
select v.run_name, v.item_id, v.criterion_name, v.judge_id, v.permutation_index, v.vote,
       h.source, h.label as human_label, v.vote = h.label as agrees
from judge_votes v
join human h using (run_id, item_id, criterion_index)
where {_RUN.format(column="v.run_name")}
order by v.run_name, v.item_index, v.criterion_index, v.judge_id, v.permutation_index, h.source""",
    },
    "lowest_scoring_items": {
        "title": "Lowest-scoring items",
        "description": "Items by score, lowest first (failed items, which have no score, are left out).",
        "sql": f"""
select r.name as run_name, i.item_id, i.item_index, i.score, i.raw_score, i.cannot_assess_count, i.submission
from items i join runs r on r.id = i.run_id
where {_RUN.format(column="r.name")} and i.score is not null
order by i.score, r.name, i.item_index
limit 100""",
    },
    "off_label_judgments": {
        "title": "Off-label judgments",
        "description": "Judgments whose off-label mass (the first-step probability the judge put outside the "
                       "allowed labels) is at least min_mass (blank: 0.5), highest first.",
        "sql": f"""
select v.run_name, v.item_id, v.criterion_name, v.judge_id, v.permutation_index, v.vote, v.off_label_mass,
       v.label_probabilities_json, v.explanation
from judge_votes v
where {_RUN.format(column="v.run_name")}
  and v.off_label_mass >= cast(coalesce(nullif(:min_mass, ''), 0.5) as real)
order by v.off_label_mass desc, v.run_name, v.item_index, v.criterion_index""",
    },
    "position_inconsistent_pairs": {
        "title": "Position-inconsistent comparison pairs",
        "description": "Pairs whose two slot orders name different winners (or one a winner, the other a tie): "
                       "each order's verdict mapped to systems and its probabilities. Leave comparison blank for "
                       "every comparison.",
        "sql": f"""
select comparison_name, prompt_id, question, judge_id, system_a, system_b, winner_ab, winner_ba,
       verdict_ab, verdict_ba, p_a_ab, p_tie_ab, p_b_ab, p_a_ba, p_tie_ba, p_b_ba, p_a, p_tie, p_b
from comparison_pairs
where {_COMPARISON.format(column="comparison_name")} and consistent = 0
order by comparison_name, judge_id, criterion_index, item_index""",
    },
    "nway_slot_choices": {
        "title": "Slot choices of N-way comparison judges",
        "description": "Per N-way comparison, judge, question and slot, over the judgments with a choice: the share "
                       "that chose the slot. With every system in every slot once, a judge without position bias "
                       "chooses each slot 1/N of the time. Leave comparison blank for every comparison.",
        "sql": f"""
select comparison_name, judge_id, question, slot, n_systems, sum(chosen) as chosen, count(*) as judgments,
       1.0 * sum(chosen) / count(*) as share, 1.0 / n_systems as share_without_bias
from comparison_slot_judgments
where {_COMPARISON.format(column="comparison_name")} and chosen is not null
group by sweep_id, judge_id, criterion_index, slot
order by comparison_name, judge_id, criterion_index, slot""",
    },
    "comparison_position_consistency": {
        "title": "Position consistency of comparison judges",
        "description": "Per comparison, judge and question, over the pairs with both orders judged: the share whose "
                       "orders agree (consistency), the conflict rate, and among the inconsistent pairs' decided "
                       "verdicts the share for slot 1 (primacy) and slot 2 (recency), as autorubric-local "
                       "ranking's position bias counts them (no interval). Leave comparison blank for every "
                       "comparison.",
        "sql": f"""
select comparison_name, judge_id, question, count(*) as n, avg(consistent) as consistency,
       1.0 - avg(consistent) as conflict_rate,
       1.0 * sum(case when consistent then 0 else (verdict_ab = '1') + (verdict_ba = '1') end)
           / nullif(sum(case when consistent then 0 else (verdict_ab != 'tie') + (verdict_ba != 'tie') end), 0)
           as primacy,
       1.0 * sum(case when consistent then 0 else (verdict_ab = '2') + (verdict_ba = '2') end)
           / nullif(sum(case when consistent then 0 else (verdict_ab != 'tie') + (verdict_ba != 'tie') end), 0)
           as recency
from comparison_pairs
where {_COMPARISON.format(column="comparison_name")} and consistent is not null
group by sweep_id, judge_id, criterion_index
order by comparison_name, judge_id, criterion_index""",
    },
}
"""Canned query name -> Datasette query (title, description, SQL). Each takes ``run`` (a run
name; blank for every run), or for a comparison ``comparison`` (a comparison's name; blank for
every comparison), and runs on any migrated database."""


def facets(columns: list[str]) -> list[str]:
    """The facet columns of a table with ``columns``: the first present column of each family
    of :data:`FACET_COLUMNS`, in family order."""
    chosen = []
    for family in FACET_COLUMNS:
        present = [c for c in family if c in columns]
        if present:
            chosen.append(present[0])
    return chosen


def browse_metadata(db: sqlite_utils.Database, database_name: str) -> dict[str, Any]:
    """Datasette metadata for the results database ``db``, served as ``database_name``.

    Tables and views missing from :data:`DESCRIPTIONS` (a newer schema, a user's own table)
    get facets but no title.
    """
    tables: dict[str, Any] = {}
    views = set(db.view_names())
    for name in [*db.table_names(), *sorted(views)]:
        if name.endswith("_fts") or "_fts_" in name:
            continue
        columns = [c.name for c in (db.view(name) if name in views else db.table(name)).columns]
        entry: dict[str, Any] = {"facets": facets(columns)}
        if name in DESCRIPTIONS:
            entry["title"], entry["description"] = DESCRIPTIONS[name]
        if name in HIDDEN:
            entry["hidden"] = True
        tables[name] = entry
    return {
        "title": "autorubric-local results",
        "description": "Runs, items, judgments and analyses written by autorubric-local. Text from the graded "
                       "data is shown as data, never as markup.",
        "databases": {database_name: {"tables": tables, "queries": dict(CANNED_QUERIES)}},
    }
