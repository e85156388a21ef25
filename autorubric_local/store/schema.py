"""The results database's schema: every table, created by one numbered sequence of migrations.

:func:`open_db` is the one way in: it opens the file (WAL mode, a busy timeout so that
connections wait for each other's locks) and applies the migrations of :data:`MIGRATIONS` in
order, each in its own ``BEGIN IMMEDIATE`` transaction, recording them in ``_migrations``.
Several processes may open one new file at once: each migration is applied exactly once.

Tables (units in column names):

- ``runs``: ``id``, ``name``, ``started_utc``, ``finished_utc``, ``status``, ``judges_json``,
  ``grader_json``, ``rubric_json``, ``data_path``, ``package_version``; from migration 2
  ``content_hash`` (``sha256:v1:<hex>``), ``dataset_json`` (the dataset header),
  ``total_items`` and ``wall_seconds`` (summed over the sessions of a resumed run).
- ``items``: per run and item: the graded text and context, ``score``, ``raw_score``,
  ``cannot_assess_count``, ``error``, token counts; from migration 2 ``item_json``,
  ``ground_truth_json``, ``item_hash``, ``report_json`` (the item's report; NULL while the item
  is pending), ``engine_seconds``, ``judgment_count`` and ``graded_utc``.
- ``judgments``: per run, item, criterion, judge and ``permutation_index``: ``verdict``
  (binary) or ``selected_index``/``selected_label`` (multi-choice),
  ``label_probabilities_json``, ``shuffle_order_json``, ``explanation``, token counts,
  ``duration_ms`` and ``error``. A failed judgment has ``error`` set and no verdict.
- ``sweeps``, ``sweep_judgments`` (one row per rotation), ``sweep_scores`` (one row per item,
  criterion, judge and variant) and ``sweep_aggregates`` (per judge, criterion and variant):
  position-bias sweeps (migration 3).
- ``metrics``: one row per ``compute_metrics`` computation of a run (migration 4).
- ``judgments.explanation_error`` (migration 6): in explain mode, why a judgment's explanation
  could not be generated; its verdict (read before) stands and ``error`` stays NULL.
- Migration 7, raw label log-probabilities and off-label mass:
  ``judgments.label_logprobs_json`` (JSON object label -> raw natural-log probability, keyed
  like ``label_probabilities_json``; not renormalised, values <= 0; NULL on error) and
  ``judgments.off_label_mass`` (REAL in [0, 1]: first-step probability outside the allowed
  labels; NULL when the backend does not report it or on error). ``sweep_judgments`` gains the
  same two columns and ``label_probabilities_json`` (JSON object keyed by original option
  label, in original option order, as in ``judgments``); its older ``probabilities_json`` (a
  JSON list in *shown-position* order) is still written. Rows written before migration 7 keep
  their values and have NULL in the new columns.
- Migration 8, contextual calibration (``CriterionGrader(contextual_calibration=True)``):
  ``judgments.uncalibrated_label_probabilities_json`` (the judge's own renormalised
  distribution, keyed like ``label_probabilities_json``, which then holds the *corrected*
  distribution the verdict was read from; NULL on a judgment that was not corrected, where the
  two would be equal) and ``judgments.contextual_prior_id`` (the prior that corrected it; also
  set, with the judge's own distribution, on an error row whose prior could not be estimated).
  Table ``contextual_priors``, one row per run and prior (``prior_id``, ``sha256:v1:<hex>`` of
  the content-free prompts scored): ``judge_id``, ``criterion_name``, ``criterion_json``,
  ``option_order_json`` (shown position -> original index; NULL for binary criteria),
  ``content_free_inputs_json`` (JSON list of the content-free submissions),
  ``content_free_label_probabilities_json`` (JSON list, one object per input, keyed like
  ``label_probabilities_json``; null for a failed input), ``prior_json`` (``p_cf``, the same
  keys; NULL when the prior could not be estimated) and ``error``.
- ``threshold_calibrations`` (migration 9): one row per rule fitted on a run's training split
  (``autorubric-local calibrate``, :mod:`autorubric_local.calibration`): ``id``
  (autoincrement), ``run_id``, ``fitted_utc``, ``method`` (``threshold``, ``platt`` or
  ``isotonic``), ``settings_json`` (test size, seed, folds, stratification),
  ``train_item_ids_json`` and ``test_item_ids_json``, ``calibration_json`` (the rules and their
  cross-validation) and ``held_out_json`` (agreement on the test items, before and after).
  Nothing in ``judgments`` or ``items`` changes: a calibration is applied only when asked.
- ``indeterminacy_analyses`` and ``indeterminacy_values`` (migration 10): one analysis row per
  ``autorubric-local indeterminacy`` (:mod:`autorubric_local.indeterminacy`): ``id``
  (autoincrement), ``analysed_utc``, ``run_ids_json`` (the runs analysed, a JSON list of their ids
  from every database given, not only this one), ``sources_json`` (the files and runs read),
  ``settings_json`` and ``report_json`` (the whole report); and one value row per figure:
  ``analysis_id``, ``criterion``, ``judge`` (for a regret, the judge the metric chose),
  ``beta`` and ``tau`` (NULL where the figure does not depend on them), ``name`` (``hit_rate``,
  ``kappa``, ``kl``, ``jsd``, ``beta_hat``, ``positive_rate``, ``set_size``, ``mse``,
  ``consistency``, ``bias``, ``regret_consistency[<metric>]``, ``regret_bias[<metric>]``) and
  ``value`` (NULL when undefined).
- Migration 11, runs you can audit in SQL: ``prompt_texts`` (``id``, ``sha256:<hex>`` of the
  text, and ``text``: each distinct prompt part once, shared by every run) and
  ``judgments.prompt_prefix_id`` / ``prompt_suffix_id`` (a judgment's exact prompt is prefix +
  suffix, with the data's untrusted spans still marked so that a replay encodes them as the run
  did; NULL on rows written before migration 11); ``item_criteria``, one row per run, item
  and criterion: ``criterion_name``, ``requirement``, ``weight``, ``scale_type`` (``binary``
  for criteria without options), the final ``verdict`` or ``selected_index``/``selected_label``,
  ``score_value`` in [0, 1], ``is_na``, ``passed`` (1 when the criterion earned its best
  possible contribution, 0 when not, NULL when N/A or failed), ``contribution`` to the raw
  score (NULL when skipped), ``agreement``, ``final_reason``, ``label_probabilities_json`` and
  ``error``; and the views of :data:`VIEWS`.
- Migration 12, resumable sweeps: ``sweeps`` gains ``content_hash`` (``sha256:v1:<hex>`` of
  the sweep's settings, judges, rubric and items), ``plan_json`` (what the hash covers:
  ``{"description": {...}, "items": [[item id, item hash], ...]}``, so a refused resume can say
  what changed), ``total_items`` and ``wall_seconds`` (summed over the sessions of a resumed
  sweep); ``sweep_leases`` holds the lease of a sweep being written, with the columns and rules
  of ``run_leases`` (``sweep_id`` instead of ``run_id``). Sweeps written before it have NULL in
  the new columns and cannot be resumed.
- Migration 13, one-hot label probabilities: ``judgments.one_hot`` (INTEGER, 1 when the row's
  ``label_probabilities_json`` is one-hot on the judge's answer because the backend returned no
  label log-probabilities, a hosted judge without ``top_logprobs``; 0 when they were read from
  the judge's distribution; NULL on an error row and on every row written before migration 13)
  and the ``judge_votes`` view gains that column.
- Migration 14, human labels and label selections (:mod:`autorubric_local.estimates`):
  ``labels``, one row per run, label source, item and criterion: ``source`` (``dataset`` for
  the run's own ground truth, else the labels file's resolved path), ``item_id``,
  ``criterion_index`` (0-based, rubric order), ``criterion_name``, ``label`` (``MET``,
  ``UNMET``, ``CANNOT_ASSESS`` or the option label; a criterion left unlabelled has no row)
  and ``imported_utc``; importing a source again replaces its rows. ``label_selections``, one
  row per ``autorubric-local label select`` (``id`` autoincrement, ``run_id``,
  ``selected_utc``, ``target``, ``budget``, ``seed``, ``mix``, ``settings_json``) and
  ``label_selection_items``, one row per item of the run: ``selection_id``, ``item_id``,
  ``inclusion_probability`` (pi_i in (0, 1]) and ``drawn`` (1 when the item was chosen for
  labelling), written before any label is seen, so the estimates' inverse-probability weights
  are the design's own.
- Migration 15, selections of comparisons to label (:mod:`autorubric_local.comparisons.labelling`):
  ``comparison_selections``, one row per ``autorubric-local label select`` of a comparison
  (``id`` autoincrement, ``sweep_id``, ``selected_utc``, ``judge_id`` and ``question`` whose
  preferences set the probabilities, ``budget``, ``seed``, ``mix``, ``settings_json``), and
  ``comparison_selection_items``, one row per judged comparison (prompt and pair of systems):
  ``selection_id``, ``item_id`` (the comparison's item id in the sweep), ``prompt_id``,
  ``system_a``, ``system_b``, ``inclusion_probability`` (pi_i in (0, 1]), ``drawn`` (1 when
  chosen for labelling) and ``shown_left`` (the system shown on the left in its labelling task,
  drawn at random per comparison), written before any label is seen. Tables of their own rather
  than rows of ``label_selections``: a comparison is a sweep, not a run.
- Migration 16, comparisons you can browse: the views of :data:`COMPARISON_VIEWS` over a pairwise
  comparison's ``sweep_judgments`` and the description in its ``sweeps.rubric_json``:
  ``comparison_judgments`` (one row per judgment and slot order) and ``comparison_pairs`` (one
  row per comparison, question, judge and pair judged in both orders). Views only: no data
  changes.
- Migration 17, N-way comparisons you can browse: the views of :data:`NWAY_VIEWS` over an N-way
  comparison's ``sweep_judgments`` (``compare --n-way``): ``comparison_slot_judgments`` (one row
  per judgment, rotation and slot) and ``comparison_nway_preferences`` (one row per comparison,
  prompt, question, judge and system). Views only: no data changes.
- ``run_leases`` (migration 5): the lease of a run being written, at most one per run:
  ``run_id`` (primary key), ``owner`` (``<host>:<pid>:<random hex>``, one per writer), ``pid``
  and ``host`` of the writing process, ``acquired_utc`` and ``heartbeat_utc`` (renewed with
  every committed chunk and every few seconds by the writer). The row is deleted when the
  writer ends the run; a row left by a killed writer is stale once its heartbeat is older than
  the lease timeout or its process is gone (:mod:`.leases`). A table of its own rather than
  columns of ``runs``: the lease is the writer's state, not the run's, and is dropped whole.
"""

from __future__ import annotations

import os
import sqlite3
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import sqlite_utils

from autorubric_local.core.errors import DatabaseWriteError, InputError, NotStoredWarning, SchemaVersionError
from autorubric_local.store.provenance import utc_now
from autorubric_local.store.transaction import (
    DEFAULT_BUSY_TIMEOUT_SECONDS,
    is_write_failure,
    set_busy_timeout,
    write_transaction,
)

SWEEP_KEY: tuple[str, ...] = ("sweep_id", "item_id", "criterion_index", "judge_id", "variant")
"""Primary key of ``sweep_scores`` (``sweep_judgments`` adds ``rotation``)."""


def _migration_1(db: sqlite_utils.Database) -> None:
    db["runs"].create(
        {
            "id": str, "name": str, "started_utc": str, "finished_utc": str, "status": str,
            "judges_json": str, "grader_json": str, "rubric_json": str, "data_path": str,
            "package_version": str,
        },
        pk="id",
        not_null={"id", "started_utc", "status"},
    )
    db["items"].create(
        {
            "run_id": str, "item_id": str, "item_index": int, "submission": str, "query": str,
            "reference_submission": str, "score": float, "raw_score": float,
            "cannot_assess_count": int, "error": str, "prompt_tokens": int,
            "completion_tokens": int, "cached_tokens": int,
        },
        pk=("run_id", "item_id"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["judgments"].create(
        {
            "run_id": str, "item_id": str, "criterion_index": int, "criterion_name": str,
            "judge_id": str, "model_id": str, "permutation_index": int, "shuffle_order_json": str,
            "verdict": str, "selected_index": int, "selected_label": str,
            "label_probabilities_json": str, "explanation": str, "explanation_truncated": int,
            "prompt_tokens": int, "completion_tokens": int, "cached_tokens": int,
            "duration_ms": float, "error": str,
        },
        pk=("run_id", "item_id", "criterion_index", "judge_id", "permutation_index"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["judgments"].create_index(["run_id", "item_id"])


def _migration_2(db: sqlite_utils.Database) -> None:
    runs = db.table("runs")
    for column, kind in (("content_hash", str), ("dataset_json", str), ("total_items", int),
                         ("wall_seconds", float)):
        runs.add_column(column, kind)
    items = db.table("items")
    for column, kind in (("item_json", str), ("ground_truth_json", str), ("item_hash", str),
                         ("report_json", str), ("engine_seconds", float), ("judgment_count", int),
                         ("graded_utc", str)):
        items.add_column(column, kind)
    runs.create_index(["name"])
    items.create_index(["run_id", "item_index"])


def _migration_3(db: sqlite_utils.Database) -> None:
    db["sweeps"].create(
        {
            "id": str, "name": str, "kind": str, "started_utc": str, "finished_utc": str,
            "status": str, "config_json": str, "judges_json": str, "rubric_json": str,
            "data_path": str, "package_version": str,
        },
        pk="id",
        not_null={"id", "kind", "started_utc", "status"},
    )
    db["sweep_judgments"].create(
        {
            "sweep_id": str, "item_id": str, "item_index": int, "criterion_index": int,
            "criterion_name": str, "judge_id": str, "variant": str, "rotation": int,
            "option_order_json": str, "chosen_position": int, "chosen_option": int,
            "probabilities_json": str, "prompt_tokens": int, "cached_tokens": int,
            "duration_ms": float, "error": str,
        },
        pk=(*SWEEP_KEY, "rotation"),
        foreign_keys=[("sweep_id", "sweeps", "id")],
    )
    db["sweep_scores"].create(
        {
            "sweep_id": str, "item_id": str, "item_index": int, "criterion_index": int,
            "criterion_name": str, "judge_id": str, "variant": str, "n_options": int,
            "n_rotations": int, "n_dropped": int, "llm_score": float, "choice_score": float,
            "grade_score": float, "expected_llm_score": float, "expected_choice_score": float,
            "expected_grade_score": float, "mode_option": int, "position_counts_json": str,
            "option_counts_json": str, "position_profile_json": str, "option_profile_json": str,
            "unrelated_index": int, "unrelated_label": str, "unrelated_chosen": int,
            "preferred": int, "agreement": float, "expected_agreement": float,
        },
        pk=SWEEP_KEY,
        foreign_keys=[("sweep_id", "sweeps", "id")],
    )
    db["sweep_aggregates"].create(
        {
            "sweep_id": str, "judge_id": str, "criterion_index": int, "criterion_name": str,
            "variant": str, "n_items": int, "n_dropped": int, "llm_score": float,
            "choice_score": float, "grade_score": float, "expected_grade_score": float,
            "summary_json": str,
        },
        pk=("sweep_id", "judge_id", "criterion_index", "variant"),
        foreign_keys=[("sweep_id", "sweeps", "id")],
    )


def _migration_4(db: sqlite_utils.Database) -> None:
    db["metrics"].create(
        {"id": int, "run_id": str, "computed_utc": str, "options_json": str, "metrics_json": str},
        pk="id",
        not_null={"run_id", "computed_utc", "metrics_json"},
    )
    db["metrics"].create_index(["run_id"])


def _migration_5(db: sqlite_utils.Database) -> None:
    db["run_leases"].create(
        {"run_id": str, "owner": str, "pid": int, "host": str, "acquired_utc": str, "heartbeat_utc": str},
        pk="run_id",
        not_null={"owner", "pid", "host", "acquired_utc", "heartbeat_utc"},
        foreign_keys=[("run_id", "runs", "id")],
    )


def _migration_6(db: sqlite_utils.Database) -> None:
    db.table("judgments").add_column("explanation_error", str)


def _migration_7(db: sqlite_utils.Database) -> None:
    judgments = db.table("judgments")
    judgments.add_column("label_logprobs_json", str)
    judgments.add_column("off_label_mass", float)
    sweep_judgments = db.table("sweep_judgments")
    for column, kind in (("label_probabilities_json", str), ("label_logprobs_json", str), ("off_label_mass", float)):
        sweep_judgments.add_column(column, kind)


def _migration_8(db: sqlite_utils.Database) -> None:
    judgments = db.table("judgments")
    judgments.add_column("uncalibrated_label_probabilities_json", str)
    judgments.add_column("contextual_prior_id", str)
    db["contextual_priors"].create(
        {
            "run_id": str, "prior_id": str, "judge_id": str, "criterion_name": str, "criterion_json": str,
            "option_order_json": str, "content_free_inputs_json": str,
            "content_free_label_probabilities_json": str, "prior_json": str, "error": str,
        },
        pk=("run_id", "prior_id"),
        not_null={"judge_id", "content_free_inputs_json"},
        foreign_keys=[("run_id", "runs", "id")],
    )


def _migration_9(db: sqlite_utils.Database) -> None:
    db["threshold_calibrations"].create(
        {
            "id": int, "run_id": str, "fitted_utc": str, "method": str, "settings_json": str,
            "train_item_ids_json": str, "test_item_ids_json": str, "calibration_json": str, "held_out_json": str,
        },
        pk="id",
        not_null={"run_id", "fitted_utc", "method", "calibration_json"},
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["threshold_calibrations"].create_index(["run_id"])


def _migration_10(db: sqlite_utils.Database) -> None:
    db["indeterminacy_analyses"].create(
        {"id": int, "analysed_utc": str, "run_ids_json": str, "sources_json": str, "settings_json": str,
         "report_json": str},
        pk="id",
        not_null={"analysed_utc", "run_ids_json", "settings_json", "report_json"},
    )
    db["indeterminacy_values"].create(
        {"analysis_id": int, "criterion": str, "judge": str, "beta": float, "tau": float, "name": str,
         "value": float},
        not_null={"analysis_id", "criterion", "judge", "name"},
        foreign_keys=[("analysis_id", "indeterminacy_analyses", "id")],
    )
    db["indeterminacy_values"].create_index(["analysis_id", "name"])


def _migration_11(db: sqlite_utils.Database) -> None:
    db["prompt_texts"].create({"id": str, "text": str}, pk="id", not_null={"text"})
    judgments = db.table("judgments")
    judgments.add_column("prompt_prefix_id", str)
    judgments.add_column("prompt_suffix_id", str)
    db["item_criteria"].create(
        {
            "run_id": str, "item_id": str, "criterion_index": int, "criterion_name": str, "requirement": str,
            "weight": float, "scale_type": str, "verdict": str, "selected_index": int, "selected_label": str,
            "score_value": float, "is_na": int, "passed": int, "contribution": float, "agreement": float,
            "final_reason": str, "label_probabilities_json": str, "error": str,
        },
        pk=("run_id", "item_id", "criterion_index"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    for name, sql in {**VIEWS, "judge_votes": _JUDGE_VOTES_11}.items():
        db.create_view(name, sql)


_JUDGE_VOTES_11 = """
        select r.name as run_name, j.run_id, i.item_index, j.item_id, j.criterion_index, j.criterion_name,
               c.requirement, j.judge_id, j.model_id, j.permutation_index,
               coalesce(j.verdict, j.selected_label) as vote, j.label_probabilities_json, j.off_label_mass,
               j.explanation, j.error, j.duration_ms
        from judgments j
        join runs r on r.id = j.run_id
        left join items i on i.run_id = j.run_id and i.item_id = j.item_id
        left join item_criteria c
            on c.run_id = j.run_id and c.item_id = j.item_id and c.criterion_index = j.criterion_index"""
"""``judge_votes`` as migration 11 made it (migration 13 replaces it with :data:`VIEWS`'s)."""

VIEWS: dict[str, str] = {
    "criterion_results": """
        select r.name as run_name, c.run_id, i.item_index, c.item_id, c.criterion_index, c.criterion_name,
               c.requirement, c.weight, c.scale_type, coalesce(c.verdict, c.selected_label) as verdict,
               c.selected_index, c.score_value, c.is_na, c.passed, c.contribution, c.agreement,
               c.label_probabilities_json, c.final_reason as explanation, c.error, i.score as item_score
        from item_criteria c
        join runs r on r.id = c.run_id
        join items i on i.run_id = c.run_id and i.item_id = c.item_id""",
    "judge_votes": """
        select r.name as run_name, j.run_id, i.item_index, j.item_id, j.criterion_index, j.criterion_name,
               c.requirement, j.judge_id, j.model_id, j.permutation_index,
               coalesce(j.verdict, j.selected_label) as vote, j.label_probabilities_json, j.one_hot,
               j.off_label_mass, j.explanation, j.error, j.duration_ms
        from judgments j
        join runs r on r.id = j.run_id
        left join items i on i.run_id = j.run_id and i.item_id = j.item_id
        left join item_criteria c
            on c.run_id = j.run_id and c.item_id = j.item_id and c.criterion_index = j.criterion_index""",
    "judgment_prompts": """
        select j.run_id, j.item_id, j.criterion_index, j.judge_id, j.permutation_index,
               replace(replace(p.text || s.text, char(64976), ''), char(64977), '') as prompt,
               p.text || s.text as marked_prompt
        from judgments j
        join prompt_texts p on p.id = j.prompt_prefix_id
        join prompt_texts s on s.id = j.prompt_suffix_id""",
    "run_summaries": """
        select r.id as run_id, r.name as run_name, r.status, r.started_utc, r.finished_utc, r.total_items,
               (select count(*) from items i where i.run_id = r.id and i.report_json is not null) as items_done,
               (select count(*) from items i where i.run_id = r.id and i.error is not null) as items_failed,
               (select avg(i.score) from items i where i.run_id = r.id and i.score is not null) as mean_score,
               (select count(*) from judgments j where j.run_id = r.id) as judgments,
               (select count(*) from judgments j where j.run_id = r.id and j.error is not null) as judgment_errors,
               r.wall_seconds, r.judges_json
        from runs r""",
}
"""The SQL views (name -> select; of migration 11, ``judge_votes`` as migration 13 remade it),
for users querying the file directly: ``criterion_results`` (one row per item and criterion:
final verdict or selected label, ``passed``, ``contribution`` to the raw score, requirement
text), ``judge_votes`` (one row per judgment: each judge's vote in each option order, with
``one_hot``), ``judgment_prompts`` (each judgment's
exact prompt as the model read it, ``prompt``, and as the engine received it, ``marked_prompt``,
with the data's spans between U+FDD0 and U+FDD1: :mod:`autorubric_local.engine.user_text`) and ``run_summaries`` (one row per run: items done and failed, mean score,
judgments and failed judgments)."""



def _migration_12(db: sqlite_utils.Database) -> None:
    sweeps = db.table("sweeps")
    for column, kind in (("content_hash", str), ("plan_json", str), ("total_items", int), ("wall_seconds", float)):
        sweeps.add_column(column, kind)
    sweeps.create_index(["name"])
    db["sweep_leases"].create(
        {"sweep_id": str, "owner": str, "pid": int, "host": str, "acquired_utc": str, "heartbeat_utc": str},
        pk="sweep_id",
        not_null={"owner", "pid", "host", "acquired_utc", "heartbeat_utc"},
        foreign_keys=[("sweep_id", "sweeps", "id")],
    )


def _migration_13(db: sqlite_utils.Database) -> None:
    db.table("judgments").add_column("one_hot", int)
    db.execute("drop view if exists judge_votes")
    db.create_view("judge_votes", VIEWS["judge_votes"])


def _migration_14(db: sqlite_utils.Database) -> None:
    db["labels"].create(
        {"run_id": str, "source": str, "item_id": str, "criterion_index": int, "criterion_name": str,
         "label": str, "imported_utc": str},
        pk=("run_id", "source", "item_id", "criterion_index"),
        not_null={"label", "imported_utc"},
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["label_selections"].create(
        {"id": int, "run_id": str, "selected_utc": str, "target": str, "budget": float, "seed": int,
         "mix": float, "settings_json": str},
        pk="id",
        not_null={"run_id", "selected_utc", "target", "budget", "mix"},
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["label_selection_items"].create(
        {"selection_id": int, "item_id": str, "inclusion_probability": float, "drawn": int},
        pk=("selection_id", "item_id"),
        not_null={"inclusion_probability", "drawn"},
        foreign_keys=[("selection_id", "label_selections", "id")],
    )



def _migration_15(db: sqlite_utils.Database) -> None:
    db["comparison_selections"].create(
        {"id": int, "sweep_id": str, "selected_utc": str, "judge_id": str, "question": str, "budget": float,
         "seed": int, "mix": float, "settings_json": str},
        pk="id",
        not_null={"sweep_id", "selected_utc", "judge_id", "question", "budget", "mix"},
        foreign_keys=[("sweep_id", "sweeps", "id")],
    )
    db["comparison_selection_items"].create(
        {"selection_id": int, "item_id": str, "prompt_id": str, "system_a": str, "system_b": str,
         "inclusion_probability": float, "drawn": int, "shown_left": str},
        pk=("selection_id", "item_id"),
        not_null={"prompt_id", "system_a", "system_b", "inclusion_probability", "drawn", "shown_left"},
        foreign_keys=[("selection_id", "comparison_selections", "id")],
    )


_COMPARISON_FORMAT = "autorubric-local/comparison-v1"
"""``comparisons.judging.COMPARISON_FORMAT`` (the store is below the comparisons package)."""

_COMPARISON_PAIRS_ONLY = "coalesce(json_extract(s.rubric_json, '$.mode'), 'pairs') = 'pairs'"

COMPARISON_VIEWS: dict[str, str] = {
    "comparison_judgments": f"""
        with shown as (
            select s.name as comparison_name, j.sweep_id, coalesce(scale.value, 3) as scale,
                   j.item_index, j.item_id, json_extract(p.value, '$.prompt_id') as prompt_id,
                   json_extract(p.value, '$.a') as system_a, json_extract(p.value, '$.b') as system_b,
                   j.criterion_index, json_extract(q.value, '$.name') as question,
                   j.judge_id, j.rotation, j.error,
                   case when j.error is null and coalesce(j.probabilities_json, '') != ''
                        then j.probabilities_json end as probabilities_json
            from sweeps s
            left join json_each(s.rubric_json, '$.scale') scale
            cross join json_each(s.rubric_json, '$.questions') q
            cross join json_each(s.rubric_json, '$.pairs') p
            cross join sweep_judgments j
            where s.kind = 'comparison' and json_extract(s.rubric_json, '$.format') = '{_COMPARISON_FORMAT}'
              and {_COMPARISON_PAIRS_ONLY}
              and j.sweep_id = s.id and j.item_id = json_extract(p.value, '$.item_id') and j.criterion_index = q.key
              and j.variant = 'base' and j.rotation in (0, 1)
        ),
        raw as (
            select shown.*,
                   json_extract(probabilities_json, '$[0]') as v0, json_extract(probabilities_json, '$[1]') as v1,
                   json_extract(probabilities_json, '$[2]') as v2, json_extract(probabilities_json, '$[3]') as v3,
                   json_extract(probabilities_json, '$[4]') as v4
            from shown
        ),
        normalised as (
            select raw.*,
                   case when scale = 5 and min(v0, v1, v2, v3, v4) >= 0 and max(v0, v1, v2, v3, v4) <= 1
                        then v0 + v1 + v2 + v3 + v4
                        when scale != 5 and min(v0, v1, v2) >= 0 and max(v0, v1, v2) <= 1 then v0 + v1 + v2
                   end as total
            from raw
        ),
        p as (
            select normalised.*, v0 * 1.0 / total as n0, v1 * 1.0 / total as n1, v2 * 1.0 / total as n2,
                   case when scale = 5 then v3 * 1.0 / total end as n3,
                   case when scale = 5 then v4 * 1.0 / total end as n4
            from normalised
        ),
        labelled as (
            select p.*,
                   case when scale != 5 or n0 is null then null
                        when n2 = max(n0, n1, n2, n3, n4) then '1=2'
                        when n1 = max(n0, n1, n2, n3, n4) then '1>2'
                        when n3 = max(n0, n1, n2, n3, n4) then '2>1'
                        when n0 = max(n0, n1, n2, n3, n4) then '1>>2'
                        else '2>>1' end as label
            from p
        )
        select comparison_name, sweep_id, scale, item_index, item_id, prompt_id, system_a, system_b,
               criterion_index, question, judge_id, rotation,
               case rotation when 0 then 'ab' else 'ba' end as slot_order,
               case rotation when 0 then system_a else system_b end as slot_1_system,
               case rotation when 0 then system_b else system_a end as slot_2_system,
               case when scale != 5 then n0 end as p_slot_1, case when scale != 5 then n1 end as p_slot_2,
               case when scale != 5 then n2 end as p_tie,
               case when scale = 5 then n0 end as p_1_much_better, case when scale = 5 then n1 end as p_1_better,
               case when scale = 5 then n2 end as p_same, n3 as p_2_better, n4 as p_2_much_better,
               case when n0 is null then null
                    when scale = 5 then case when label in ('1>>2', '1>2') then '1' when label = '1=2' then 'tie'
                                             else '2' end
                    when n2 >= max(n0, n1) or n0 = n1 then 'tie'
                    when n0 > n1 then '1' else '2' end as verdict,
               label, error
        from labelled""",
    "comparison_pairs": """
        with sides as (
            select comparison_name, sweep_id, scale, item_index, item_id, prompt_id, criterion_index, question,
                   judge_id, system_a, system_b,
                   max(case when rotation = 0 then p_slot_1 end) as ab_p_slot_1,
                   max(case when rotation = 1 then p_slot_1 end) as ba_p_slot_1,
                   max(case when rotation = 0 then p_slot_2 end) as ab_p_slot_2,
                   max(case when rotation = 1 then p_slot_2 end) as ba_p_slot_2,
                   max(case when rotation = 0 then p_tie end) as ab_p_tie,
                   max(case when rotation = 1 then p_tie end) as ba_p_tie,
                   max(case when rotation = 0 then p_1_much_better end) as ab_p_1_much_better,
                   max(case when rotation = 1 then p_1_much_better end) as ba_p_1_much_better,
                   max(case when rotation = 0 then p_1_better end) as ab_p_1_better,
                   max(case when rotation = 1 then p_1_better end) as ba_p_1_better,
                   max(case when rotation = 0 then p_same end) as ab_p_same,
                   max(case when rotation = 1 then p_same end) as ba_p_same,
                   max(case when rotation = 0 then p_2_better end) as ab_p_2_better,
                   max(case when rotation = 1 then p_2_better end) as ba_p_2_better,
                   max(case when rotation = 0 then p_2_much_better end) as ab_p_2_much_better,
                   max(case when rotation = 1 then p_2_much_better end) as ba_p_2_much_better,
                   max(case when rotation = 0 then verdict end) as ab_verdict,
                   max(case when rotation = 1 then verdict end) as ba_verdict,
                   max(case when rotation = 0 then label end) as ab_label,
                   max(case when rotation = 1 then label end) as ba_label,
                   max(case when rotation = 0 then error end) as ab_error,
                   max(case when rotation = 1 then error end) as ba_error
            from comparison_judgments
            group by sweep_id, item_id, criterion_index, judge_id
            having sum(rotation = 0) = 1 and sum(rotation = 1) = 1
        ),
        orders as (
            select comparison_name, sweep_id, scale, item_index, item_id, prompt_id, criterion_index, question,
                   judge_id, system_a, system_b,
                   case when scale = 5 then ab_p_1_much_better + ab_p_1_better / 2.0 else ab_p_slot_1 end as p_a_ab,
                   case when scale = 5 then ab_p_same + (ab_p_1_better + ab_p_2_better) / 2.0 else ab_p_tie end
                       as p_tie_ab,
                   case when scale = 5 then ab_p_2_much_better + ab_p_2_better / 2.0 else ab_p_slot_2 end as p_b_ab,
                   case when scale = 5 then ba_p_2_much_better + ba_p_2_better / 2.0 else ba_p_slot_2 end as p_a_ba,
                   case when scale = 5 then ba_p_same + (ba_p_2_better + ba_p_1_better) / 2.0 else ba_p_tie end
                       as p_tie_ba,
                   case when scale = 5 then ba_p_1_much_better + ba_p_1_better / 2.0 else ba_p_slot_1 end as p_b_ba,
                   case when scale = 5
                        then (ab_p_1_much_better + ba_p_2_much_better) / 2.0
                             + ((ab_p_1_better + ba_p_2_better) / 2.0) / 2.0
                        else (ab_p_slot_1 + ba_p_slot_2) / 2.0 end as p_a,
                   case when scale = 5
                        then (ab_p_same + ba_p_same) / 2.0
                             + ((ab_p_1_better + ba_p_2_better) / 2.0 + (ab_p_2_better + ba_p_1_better) / 2.0) / 2.0
                        else (ab_p_tie + ba_p_tie) / 2.0 end as p_tie,
                   case when scale = 5
                        then (ab_p_2_much_better + ba_p_1_much_better) / 2.0
                             + ((ab_p_2_better + ba_p_1_better) / 2.0) / 2.0
                        else (ab_p_slot_2 + ba_p_slot_1) / 2.0 end as p_b,
                   ab_verdict as verdict_ab, ba_verdict as verdict_ba, ab_label as label_ab, ba_label as label_ba,
                   case ab_verdict when '1' then 'a' when '2' then 'b' when 'tie' then 'tie' end as side_ab,
                   case ba_verdict when '1' then 'b' when '2' then 'a' when 'tie' then 'tie' end as side_ba,
                   ab_error as error_ab, ba_error as error_ba
            from sides
        )
        select comparison_name, sweep_id, scale, item_index, item_id, prompt_id, criterion_index, question, judge_id,
               system_a, system_b, p_a_ab, p_tie_ab, p_b_ab, p_a_ba, p_tie_ba, p_b_ba, p_a, p_tie, p_b,
               verdict_ab, verdict_ba, label_ab, label_ba,
               case side_ab when 'a' then system_a when 'b' then system_b else side_ab end as winner_ab,
               case side_ba when 'a' then system_a when 'b' then system_b else side_ba end as winner_ba,
               case when side_ab is null or side_ba is null then null else side_ab = side_ba end as consistent,
               case when side_ab is null or side_ba is null then null
                    when side_ab = side_ba and side_ab = 'a' then system_a
                    when side_ab = side_ba and side_ab = 'b' then system_b
                    else 'tie' end as swap_winner,
               error_ab, error_ba
        from orders""",
}
"""The comparison views of migration 16 (name -> select), for browsing a pairwise comparison
(``sweeps.kind = 'comparison'``; an N-way comparison has no rows): ``comparison_judgments``
(one row per judgment and slot order: the system in each slot, the slot probabilities
renormalised to sum to 1 as :mod:`autorubric_local.comparisons.preferences` reads them, NULL
where it refuses them (a value outside [0, 1], all zero), the
hard verdict and, on the 5-point scale, the most probable label) and ``comparison_pairs`` (one
row per comparison, question, judge and pair judged in both orders: each order's preference
mapped to systems, their mean, the balanced preference of
:attr:`~autorubric_local.comparisons.judging.PairJudgment.preference`, each order's winner,
position consistency and the swap rule's winner, as :mod:`~autorubric_local.comparisons.preferences`
defines them)."""


def _migration_16(db: sqlite_utils.Database) -> None:
    for name, sql in COMPARISON_VIEWS.items():
        db.create_view(name, sql, replace=True)


_COMPARISON_NWAY_ONLY = "json_extract(s.rubric_json, '$.mode') = 'nway'"

NWAY_VIEWS: dict[str, str] = {
    "comparison_slot_judgments": f"""
        select s.name as comparison_name, j.sweep_id, j.item_index, j.item_id,
               json_extract(p.value, '$.prompt_id') as prompt_id, json_array_length(p.value, '$.systems') as n_systems,
               j.criterion_index, json_extract(q.value, '$.name') as question, j.judge_id, j.rotation,
               k.key + 1 as slot,
               json_extract(p.value, '$.systems[' || json_extract(j.option_order_json, '$[' || k.key || ']') || ']')
                   as system,
               case when j.error is null and coalesce(j.probabilities_json, '') != ''
                    then json_extract(j.probabilities_json, '$[' || k.key || ']') end as probability,
               case when j.error is not null or j.chosen_position is null then null
                    else j.chosen_position = k.key end as chosen,
               j.error
        from sweeps s
        cross join json_each(s.rubric_json, '$.questions') q
        cross join json_each(s.rubric_json, '$.pairs') p
        cross join sweep_judgments j
        cross join json_each(p.value, '$.systems') k
        where s.kind = 'comparison' and json_extract(s.rubric_json, '$.format') = '{_COMPARISON_FORMAT}'
          and {_COMPARISON_NWAY_ONLY}
          and j.sweep_id = s.id and j.item_id = json_extract(p.value, '$.item_id') and j.criterion_index = q.key
          and j.variant = 'base' and j.rotation < json_array_length(p.value, '$.systems')""",
    "comparison_nway_preferences": """
        select comparison_name, sweep_id, item_index, item_id, prompt_id, n_systems, criterion_index, question,
               judge_id, system,
               count(probability) as rotations_judged,
               case when count(probability) = n_systems and count(distinct rotation) = n_systems
                    then avg(probability) end as preference,
               sum(chosen) as times_chosen,
               group_concat(case when chosen then slot end) as chosen_in_slots
        from comparison_slot_judgments
        group by sweep_id, item_id, criterion_index, judge_id, system""",
}
"""The views of migration 17 (name -> select), for browsing an N-way comparison (``compare --n-way``:
each prompt's N systems shown at once, in each of the N rotations of the slots; a pairwise
comparison has no rows): ``comparison_slot_judgments`` (one row per judgment, rotation and slot:
the system shown in the slot, the judge's stored probability that the slot's answer is the best,
NULL for a failed judgment, and whether it was the chosen, most probable, slot) and
``comparison_nway_preferences`` (one row per comparison, prompt, question, judge and system: the
rotations judged, the balanced preference, the mean of its probabilities over the N rotations as
:attr:`~autorubric_local.comparisons.judging.NWayJudgment.preference` gives it, NULL until all N
rotations have probabilities, and how often and in which slots it was chosen)."""


def _migration_17(db: sqlite_utils.Database) -> None:
    for name, sql in NWAY_VIEWS.items():
        db.create_view(name, sql, replace=True)


MIGRATIONS: tuple[tuple[int, str, Callable[[sqlite_utils.Database], None]], ...] = (
    (1, "runs, items, judgments", _migration_1),
    (2, "runner checkpoints (item reports, content hash)", _migration_2),
    (3, "position-bias sweeps", _migration_3),
    (4, "metrics", _migration_4),
    (5, "run leases (one writer per run)", _migration_5),
    (6, "judgments.explanation_error (a verdict kept when its explanation failed)", _migration_6),
    (7, "raw label logprobs and off-label mass; sweep probabilities keyed by option label", _migration_7),
    (8, "contextual calibration: label priors and each judgment's uncalibrated distribution", _migration_8),
    (9, "threshold calibrations fitted on a run's training split", _migration_9),
    (10, "rating-indeterminacy analyses and their figures", _migration_10),
    (11, "stored prompts, final per-criterion results, SQL views", _migration_11),
    (12, "resumable sweeps: content hash, plan and the sweep's lease", _migration_12),
    (13, "judgments.one_hot: label probabilities that are one-hot (no logprobs from the backend)", _migration_13),
    (14, "human labels by source, and label selections with their inclusion probabilities", _migration_14),
    (15, "selections of comparisons to label, with inclusion probabilities and the side each response is shown",
     _migration_15),
    (16, "comparison views: each judgment's slots and each pair's preference in both orders", _migration_16),
    (17, "N-way comparison views: each judgment's slots and each system's preference over the rotations",
     _migration_17),
)
"""Every migration, in order: ``(number, name, function)``; numbers are 1, 2, 3, ... ."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""Number of the newest migration."""


WAL_SIZE_LIMIT = 64 * 2**20
"""Bytes the write-ahead log is cut back to after a checkpoint (``PRAGMA journal_size_limit``).
Without it the ``-wal`` file keeps the size of the largest transaction ever written (a run's
plan: every item row, submissions included) until the last connection closes."""


def open_db(path: str | Path, *, busy_timeout_seconds: float = DEFAULT_BUSY_TIMEOUT_SECONDS) -> sqlite_utils.Database:
    """Open (creating if needed) a results database and bring its schema up to date.

    Safe when several processes open one file at once: the connection waits up to
    ``busy_timeout_seconds`` for another's lock, WAL mode is switched on by whichever opener
    gets there first (the log cut back to :data:`WAL_SIZE_LIMIT` after checkpoints), and each
    migration runs in a ``BEGIN IMMEDIATE`` transaction that reads ``_migrations`` again once it
    holds the write lock, so a second opener waits, sees the migration applied and skips it.
    Every migration is applied exactly once.

    Parameters
    ----------
    path : str or Path
        The SQLite file, or ``":memory:"``.
    busy_timeout_seconds : float, default 30
        How long to wait for another connection's lock before failing.

    Raises
    ------
    InputError
        If the file is not an SQLite database (or is a malformed one); the message names it.
    sqlite3.OperationalError
        ``database is locked`` if another process holds the write lock for longer than
        ``busy_timeout_seconds``.
    SchemaVersionError
        The database records a migration numbered above :data:`SCHEMA_VERSION` (a newer
        version wrote it); nothing is written to it.
    """
    db = sqlite_utils.Database(path)
    set_busy_timeout(db, busy_timeout_seconds)
    try:
        _refuse_newer(db, path)  # before WAL mode or any migration writes to it; the first read
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError):  # locked, unreadable: not about what the file is
            raise
        db.close()
        raise InputError(f"{path}: not an SQLite results database ({exc}); a database copied without its "
                         "-wal file can read as malformed: copy both, or export a copy") from None
    if str(path) != ":memory:":
        _enable_wal(db, busy_timeout_seconds)
        db.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
    if _applied(db) >= {number for number, _, _ in MIGRATIONS}:
        return db  # the common case: nothing to do, no write lock taken
    with write_transaction(db):
        db["_migrations"].create({"number": int, "name": str, "applied_utc": str}, pk="number", if_not_exists=True)
    for number, name, migrate in MIGRATIONS:
        with write_transaction(db):
            if number in _applied(db):  # read under the write lock: another opener may have applied it
                continue
            migrate(db)
            db["_migrations"].insert({"number": number, "name": name, "applied_utc": utc_now()})
    return db


def writable_here(path: str | Path) -> bool:
    """Whether this process may write the existing database file at ``path`` and make its
    ``-wal``/``-shm`` files beside it (the file and its folder are writable)."""
    absolute = Path(path).absolute()
    return os.access(absolute, os.W_OK) and os.access(absolute.parent, os.W_OK | os.X_OK)


def writable_or_warn(path: str | Path, what: str) -> bool:
    """Whether the database at ``path`` can be written here (:func:`writable_here`); when not,
    a :class:`~autorubric_local.core.errors.NotStoredWarning` says that ``what`` (e.g. "the
    metrics") was not stored in it. For the analyses that store their result as a by-product."""
    if str(path) == ":memory:" or writable_here(path):
        return True
    warnings.warn(NotStoredWarning(f"{path} is read-only here; not stored: {what}"), stacklevel=2)
    return False


def open_db_read_only(path: str | Path, *,
                      busy_timeout_seconds: float = DEFAULT_BUSY_TIMEOUT_SECONDS) -> sqlite_utils.Database:
    """Open an existing results database for the commands that only read it.

    A file this process may write is opened as :func:`open_db` opens it (an older schema is
    migrated in place). Otherwise (a read-only file, folder or mount: an archive, a shared
    folder) it is opened with SQLite's ``mode=ro``, and ``immutable=1`` when its folder is not
    writable either (no ``-shm`` file can be made there; SQLite then assumes no one changes
    the file while it is open), and nothing is written: not WAL mode, not a migration.

    Raises
    ------
    InputError
        The file is not an SQLite database; or it is read-only here and written by an older
        version (its migration needs write access: the message says to copy it with its
        ``-wal``/``-shm`` files to a writable folder).
    SchemaVersionError
        A newer version wrote it.
    sqlite3.OperationalError
        SQLite cannot open the file at all.
    """
    if writable_here(path):
        return open_db(path, busy_timeout_seconds=busy_timeout_seconds)
    absolute = Path(path).absolute()
    immutable = not os.access(absolute.parent, os.W_OK | os.X_OK)
    uri = f"{absolute.as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")
    db = sqlite_utils.Database(sqlite3.connect(uri, uri=True))
    set_busy_timeout(db, busy_timeout_seconds)
    try:
        _refuse_newer(db, path)
        applied = _applied(db)
    except sqlite3.DatabaseError as exc:
        db.close()
        if isinstance(exc, sqlite3.OperationalError):
            raise
        raise InputError(f"{path}: not an SQLite results database ({exc})") from None
    if not applied >= {number for number, _, _ in MIGRATIONS}:
        db.close()
        raise InputError(f"{path}: written by an older autorubric-local (schema {max(applied, default=0)}, this version "
                         f"reads {SCHEMA_VERSION}) and read-only here: bringing it up to date needs write access. "
                         "Copy it, with its -wal and -shm files if any, to a writable folder and open the copy")
    return db


def copy_db(source: str | Path, dest: str | Path) -> None:
    """Write a self-contained copy of the results database ``source`` to the new file ``dest``.

    SQLite's online backup API (``sqlite3.Connection.backup``) copies a consistent snapshot:
    commits still in ``source``'s ``-wal`` file are in it, and a run may go on writing meanwhile
    (the copy is of one moment). ``source`` is opened as :func:`open_db_read_only` opens it, so
    a read-only file, folder or mount can be copied. The copy is in rollback-journal mode: one
    file, with no ``-wal``/``-shm`` to carry along (the next writer switches it to WAL again).
    Missing folders of ``dest`` are made.

    Raises
    ------
    InputError
        ``dest`` exists (nothing is overwritten); or as :func:`open_db_read_only` for ``source``.
    DatabaseWriteError
        SQLite could not write ``dest`` (a full disk, a read-only folder); the partial copy is removed.
    """
    target_path = Path(dest)
    if target_path.exists():
        raise InputError(f"{dest}: exists; give the copy a new file name")
    db = open_db_read_only(source)
    try:
        target_path.parent.mkdir(parents=True, exist_ok=True)
        target = sqlite3.connect(target_path)
        try:
            db.conn.backup(target)
            target.execute("PRAGMA journal_mode = DELETE")
        finally:
            target.close()
    except sqlite3.OperationalError as exc:
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{target_path}{suffix}").unlink(missing_ok=True)
        if not is_write_failure(exc):
            raise
        raise DatabaseWriteError(f"{dest}: the copy could not be written ({exc}); the partial copy was removed, "
                                 f"{source} is as it was") from None
    finally:
        db.close()


def _refuse_newer(db: sqlite_utils.Database, path: str | Path) -> None:
    try:
        refuse_newer_schema(path, max(_applied(db), default=0))
    except SchemaVersionError:
        db.close()
        raise


def refuse_newer_schema(path: str | Path, newest: int) -> None:
    """Raise :class:`SchemaVersionError` when ``newest``, the highest migration a database at
    ``path`` records, is above :data:`SCHEMA_VERSION`."""
    if newest > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path}: written by a newer autorubric-local (its schema is at migration {newest}; this version "
            f"knows migrations up to {SCHEMA_VERSION}): it is not written to; open it with the newer version, or "
            "upgrade this one")


def _applied(db: sqlite_utils.Database) -> set[int]:
    """Numbers of the migrations recorded in ``_migrations`` (none when it does not exist)."""
    if not db["_migrations"].exists():
        return set()
    return {row[0] for row in db.execute("select number from _migrations").fetchall()}


def _enable_wal(db: sqlite_utils.Database, timeout_seconds: float) -> None:
    """Switch the file to WAL mode, tolerating openers that do the same at the same time.

    Changing the journal mode needs the file to itself. While another connection holds it,
    SQLite waits out the busy timeout and may then answer ``database is locked``, or keep the
    old mode without an error; either way this waits a little and tries again until the mode is
    WAL (usually another opener switched it meanwhile) or ``timeout_seconds`` have passed.

    Raises
    ------
    sqlite3.OperationalError
        If the file is still not in WAL mode after ``timeout_seconds``.
    """
    deadline = time.monotonic() + timeout_seconds
    delay = 0.005
    while True:
        try:
            db.enable_wal()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
        if db.journal_mode == "wal":
            return
        if time.monotonic() > deadline:
            raise sqlite3.OperationalError("could not switch the database to WAL mode: database is locked")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)
