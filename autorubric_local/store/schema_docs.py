"""What every table, view and column of the results database means: the one place it is written.

``docs/database.md`` is generated from this module and a database migrated in memory
(:func:`database_reference`, run by cog: ``cog -r docs/cli.md docs/database.md``). The generator
fails when a table, view or column of the migrated schema has no description here, or when a
description names one that no longer exists, so a new migration cannot land undocumented
(``tests/test_docs_reference.py``). Types are read from the database itself (``PRAGMA
table_info``), never written here. The migration history is in :mod:`.schema`.
"""

from __future__ import annotations

import sqlite_utils

from autorubric_local.store.schema import open_db

_LEASE_COLUMNS: dict[str, str] = {
    "owner": "The writer: `<host>:<pid>:<random hex>`, one per writing process.",
    "pid": "Process id of the writer.",
    "host": "Host name of the writer.",
    "acquired_utc": "When the writer took the lease (ISO 8601, UTC).",
    "heartbeat_utc": "Last renewal: with every committed chunk and every few seconds. A lease whose heartbeat "
    "is older than the lease timeout, or whose process on this host is gone, is stale and may be taken over.",
}

TABLES: dict[str, str] = {
    "_migrations": "The schema migrations applied to this file, one row each (`store/schema.py`, `MIGRATIONS`).",
    "runs": "One row per grading run (`autorubric-local grade`, `EvalRunner`).",
    "items": "One row per run and item: the graded text and the item's score.",
    "judgments": "One row per run, item, criterion, judge and option permutation: one judge's answer. "
    "A failed judgment has `error` set and no verdict.",
    "sweeps": "One row per position-bias sweep (`autorubric-local sweep`, `sweep-select`).",
    "sweep_judgments": "One row per sweep, item, criterion, judge, variant and rotation (option order).",
    "sweep_scores": "One row per sweep, item, criterion, judge and variant: the Grade Score of its rotations "
    "(Iourovitski 2024, section 4).",
    "sweep_aggregates": "One row per sweep, judge, criterion and variant: means over the items.",
    "metrics": "One row per `compute_metrics` computation of a run (`autorubric-local metrics`).",
    "run_leases": "The lease of a run being written: at most one per run, deleted when the writer ends the run.",
    "contextual_priors": "One row per run and content-free prior of contextual calibration "
    "(`CriterionGrader(contextual_calibration=True)`).",
    "threshold_calibrations": "One row per decision rule fitted on a run's training split "
    "(`autorubric-local calibrate`). Nothing in `judgments` or `items` changes.",
    "indeterminacy_analyses": "One row per rating-indeterminacy analysis (`autorubric-local indeterminacy`).",
    "indeterminacy_values": "One row per figure of an indeterminacy analysis.",
    "prompt_texts": "Each distinct prompt part once, content-addressed and shared by every run.",
    "item_criteria": "One row per run, item and criterion: the final (ensemble) result of the criterion.",
    "sweep_leases": "The lease of a sweep being written, with the rules of `run_leases`.",
    "labels": "Human labels: one row per run, label source, item and labelled criterion. Importing a source "
    "again replaces its rows.",
    "label_selections": "One row per `autorubric-local label select`: a draw of items for people to label.",
    "label_selection_items": "One row per selection and item of the run, written before any label is seen, "
    "so the estimates' inverse-probability weights are the design's own.",
    "comparison_selections": "One row per `autorubric-local label select` of a comparison: a draw of "
    "comparisons for people to label.",
    "comparison_selection_items": "One row per selection and judged comparison (prompt and pair of systems), "
    "written before any label is seen.",
    "criterion_results": "One row per item and criterion, `item_criteria` with the run name, item index "
    "and item score.",
    "judge_votes": "One row per judgment, each judge's vote in each option order.",
    "judgment_prompts": "Each judgment's exact prompt. Rows only for judgments written from migration 11.",
    "run_summaries": "One row per run, with counts of items and judgments.",
    "comparison_judgments": "One row per judgment of a pairwise comparison (`autorubric-local compare`) and slot "
    "order: the system shown in each slot and the judge's probabilities. N-way comparisons have no rows.",
    "comparison_pairs": "One row per comparison, question, judge and pair of systems judged in both slot orders: "
    "each order's preference mapped to systems, their mean and position consistency "
    "(`comparisons/preferences.py`).",
    "comparison_slot_judgments": "One row per judgment of an N-way comparison (`compare --n-way`), rotation and "
    "slot: the system shown in the slot and the judge's probability that its response is the best. Pairwise "
    "comparisons have no rows.",
    "comparison_nway_preferences": "One row per N-way comparison, prompt, question, judge and system: the mean "
    "over the N rotations of its probability of being the best (`NWayJudgment.preference`) and how often it was "
    "chosen.",
}
"""Table and view name -> what one row is."""

_RUN_ID = "The run (`runs.id`)."
_ITEM_ID = "The item's id from the data, or `item-<run-wide index>`."
_CRITERION_INDEX = "0-based index of the criterion in rubric order."
_CRITERION_NAME = "The criterion's name, or `criterion <1-based index>`."
_JUDGE_ID = "The judge's id in the panel."
_SWEEP_ID = "The sweep (`sweeps.id`)."
_VARIANT = "`base` (the criterion's own options) or `unrelated` (plus one unrelated option, the last)."
_LABEL_PROBS = ("Label probabilities, JSON object keyed by verdict (`MET`, `UNMET`, `CANNOT_ASSESS`) or by "
                "original option label in original option order, renormalised over the labels.")
_LOGPROBS = ("Raw natural-log label probabilities, keyed like `label_probabilities_json`; not renormalised "
             "(values <= 0). NULL on error and on rows before migration 7.")
_OFF_LABEL = ("Probability in [0, 1] the first decision step put on tokens that start none of the labels; "
              "NULL when the backend does not report it, on error, and on rows before migration 7.")
_PROMPT_TOKENS = "Prompt tokens."
_COMPLETION_TOKENS = "Generated tokens."
_CACHED_TOKENS = "Prompt tokens served from the prefix cache."
_DURATION = "Wall time of the call, milliseconds."
_PACKAGE_VERSION = "autorubric-local version that wrote it."

_COMPARISON_COLUMNS: dict[str, str] = {
    "comparison_name": "The comparison's name (`sweeps.name`, `compare --run`).",
    "sweep_id": "The comparison's sweep (`sweeps.id`).",
    "scale": "The verdict scale: 3 (`1`, `2`, `tie`) or 5 (`1>>2`, `1>2`, `1=2`, `2>1`, `2>>1`, `--scale 5`).",
    "item_index": "0-based position of the pair in the comparison.",
    "item_id": "The pair's item id in the sweep (`<prompt id> <a> vs <b>`).",
    "prompt_id": "The prompt's id.",
    "system_a": "The pair's first system (in slot 1 in order `ab`).",
    "system_b": "The pair's second system (in slot 1 in order `ba`).",
    "criterion_index": "0-based index of the question in the comparison's questions.",
    "question": "The question's name: `overall`, or a rubric criterion's.",
    "judge_id": _JUDGE_ID,
}

_NWAY_COLUMNS: dict[str, str] = {
    **{k: v for k, v in _COMPARISON_COLUMNS.items() if k not in ("scale", "system_a", "system_b")},
    "item_index": "0-based position of the prompt's N-way item in the comparison.",
    "item_id": "The prompt's N-way item id in the sweep.",
    "n_systems": "N: the systems shown at once (and the rotations of the slots).",
}

COLUMNS: dict[str, dict[str, str]] = {
    "_migrations": {
        "number": "Migration number (1, 2, 3, ...).",
        "name": "What the migration adds.",
        "applied_utc": "When it was applied to this file (ISO 8601, UTC).",
    },
    "runs": {
        "id": "Run id, `run-<UTC time>-<6 hex digits>`.",
        "name": "The run's name (`--name`; the id when not given).",
        "started_utc": "When the run (its first session) started (ISO 8601, UTC).",
        "finished_utc": "When it ended; NULL while running.",
        "status": "`running`, `finished`, `failed` or `interrupted`.",
        "judges_json": "The judges as JSON, with the engine path each ran (`attention_path`, `prompt_format`).",
        "grader_json": "The grader's settings as JSON (ensemble, permutations, few-shot, contextual calibration "
        "when on).",
        "rubric_json": "The rubric as JSON.",
        "data_path": "The data file graded.",
        "package_version": _PACKAGE_VERSION,
        "content_hash": "`sha256:v1:<hex>` of the items' hashes and the grader's description (every setting "
        "that changes verdicts or scores); a resume must match it (migration 2).",
        "dataset_json": "The dataset header as JSON (migration 2).",
        "total_items": "Items in the run (migration 2).",
        "wall_seconds": "Wall time, seconds, summed over the sessions of a resumed run (migration 2).",
    },
    "items": {
        "run_id": _RUN_ID,
        "item_id": _ITEM_ID,
        "item_index": "0-based position of the item in the data.",
        "submission": "The graded text.",
        "query": "The item's query (the task it answers), if any.",
        "reference_submission": "The item's reference answer, if any.",
        "score": "Final score of the item (normalised; with the length penalty when one is set).",
        "raw_score": "Weighted sum of the criteria's contributions before normalisation.",
        "cannot_assess_count": "Criteria the judges could not assess (`CANNOT_ASSESS`).",
        "error": "Why the item failed; NULL when it was graded.",
        "prompt_tokens": _PROMPT_TOKENS + " Summed over the item's judgments.",
        "completion_tokens": _COMPLETION_TOKENS + " Summed over the item's judgments.",
        "cached_tokens": _CACHED_TOKENS + " Summed over the item's judgments.",
        "item_json": "The whole data item as JSON (migration 2).",
        "ground_truth_json": "The item's ground truth (human labels from the data) as JSON (migration 2).",
        "item_hash": "`sha256:v1:<hex>` of what the judge sees and the row's key: key, submission, query, "
        "reference and rubric; ground truth is left out (migration 2).",
        "report_json": "The item's full report as JSON; NULL while the item is pending (migration 2).",
        "engine_seconds": "Engine time spent on the item, seconds (migration 2).",
        "judgment_count": "Judgments written for the item (migration 2).",
        "graded_utc": "When the item was graded (ISO 8601, UTC; migration 2).",
    },
    "judgments": {
        "run_id": _RUN_ID,
        "item_id": _ITEM_ID,
        "criterion_index": _CRITERION_INDEX,
        "criterion_name": _CRITERION_NAME,
        "judge_id": _JUDGE_ID,
        "model_id": "The model as the judge's engine names it (`engine.model_id`).",
        "permutation_index": "Which option order of the criterion this judgment saw (0 unless permutations are "
        "cyclic).",
        "shuffle_order_json": "JSON list: shown position -> original option index; NULL for binary criteria.",
        "verdict": "Binary criteria: `MET`, `UNMET` or `CANNOT_ASSESS`; NULL on error.",
        "selected_index": "Multi-choice criteria: the original index of the chosen option.",
        "selected_label": "Multi-choice criteria: the chosen option's label.",
        "label_probabilities_json": _LABEL_PROBS + " On a contextually calibrated judgment, the corrected "
        "distribution the verdict was read from.",
        "explanation": "The judge's explanation (explain mode), else NULL.",
        "explanation_truncated": "1 when the explanation hit the token limit.",
        "prompt_tokens": _PROMPT_TOKENS,
        "completion_tokens": _COMPLETION_TOKENS,
        "cached_tokens": _CACHED_TOKENS,
        "duration_ms": _DURATION,
        "error": "Why the judgment failed; a failed judgment has no verdict.",
        "explanation_error": "Explain mode: why the explanation could not be generated; the verdict stands and "
        "`error` stays NULL (migration 6).",
        "label_logprobs_json": _LOGPROBS,
        "off_label_mass": _OFF_LABEL,
        "uncalibrated_label_probabilities_json": "The judge's own renormalised distribution when contextual "
        "calibration corrected it (keyed like `label_probabilities_json`); NULL when not corrected (migration 8).",
        "contextual_prior_id": "The prior that corrected the judgment (`contextual_priors.prior_id`); also set on "
        "an error row whose prior could not be estimated (migration 8).",
        "prompt_prefix_id": "The prompt's prefix (`prompt_texts.id`); the exact prompt is prefix + suffix, with "
        "the data's spans still marked. NULL before migration 11.",
        "prompt_suffix_id": "The prompt's suffix (`prompt_texts.id`). NULL before migration 11.",
        "one_hot": "1 when `label_probabilities_json` is one-hot on the judge's answer because the backend "
        "returned no label log-probabilities (a hosted judge without `top_logprobs`); 0 when read from the "
        "judge's distribution; NULL on error and before migration 13.",
    },
    "sweeps": {
        "id": "Sweep id, `sweep-<UTC time>-<6 hex digits>`.",
        "name": "The sweep's name (the id when not given).",
        "kind": "`rubric` (a rubric's multi-choice criteria) or `selection` (best of N candidate responses).",
        "started_utc": "When the sweep started (ISO 8601, UTC).",
        "finished_utc": "When it ended; NULL while running.",
        "status": "`running`, `finished`, `failed` or `interrupted`.",
        "config_json": "The sweep's settings as JSON.",
        "judges_json": "The judges as JSON.",
        "rubric_json": "The rubric as JSON.",
        "data_path": "The data file swept.",
        "package_version": _PACKAGE_VERSION,
        "content_hash": "`sha256:v1:<hex>` of the sweep's settings, judges, rubric and items (migration 12; NULL "
        "before: such a sweep cannot be resumed).",
        "plan_json": "What the hash covers, `{\"description\": {...}, \"items\": [[item id, item hash], ...]}`, so "
        "a refused resume can say what changed (migration 12).",
        "total_items": "Items in the sweep (migration 12).",
        "wall_seconds": "Wall time, seconds, summed over the sessions of a resumed sweep (migration 12).",
    },
    "sweep_judgments": {
        "sweep_id": _SWEEP_ID,
        "item_id": _ITEM_ID,
        "item_index": "0-based position of the item in the data.",
        "criterion_index": _CRITERION_INDEX,
        "criterion_name": _CRITERION_NAME,
        "judge_id": _JUDGE_ID,
        "variant": _VARIANT,
        "rotation": "Which cyclic rotation of the options (0..N-1).",
        "option_order_json": "JSON list: shown position -> original option index.",
        "chosen_position": "The shown position the judge chose; NULL on error.",
        "chosen_option": "The original option index the judge chose; NULL on error.",
        "probabilities_json": "The label distribution as a JSON list in shown-position order (kept for "
        "databases written before migration 7).",
        "prompt_tokens": _PROMPT_TOKENS,
        "cached_tokens": _CACHED_TOKENS,
        "duration_ms": _DURATION,
        "error": "Why the rotation failed (category-prefixed, e.g. `infrastructure: ...`); no choice then.",
        "label_probabilities_json": "The same distribution keyed by original option label in original option "
        "order, as `judgments.label_probabilities_json` (migration 7).",
        "label_logprobs_json": _LOGPROBS,
        "off_label_mass": _OFF_LABEL,
    },
    "sweep_scores": {
        "sweep_id": _SWEEP_ID,
        "item_id": _ITEM_ID,
        "item_index": "0-based position of the item in the data.",
        "criterion_index": _CRITERION_INDEX,
        "criterion_name": _CRITERION_NAME,
        "judge_id": _JUDGE_ID,
        "variant": _VARIANT,
        "n_options": "N, the number of options (and of rotations).",
        "n_rotations": "M, rotations with a choice (used in the scores).",
        "n_dropped": "Rotations whose judgment failed.",
        "llm_score": "LLM Score in [0, 1]: entropy of the chosen shown positions over log2 N (0 = always the "
        "same position); NULL when undefined (N = 1 or M = 0).",
        "choice_score": "Choice Score in [0, 1]: share of rotations choosing the most chosen original option; "
        "NULL when undefined.",
        "grade_score": "Grade Score in [0, 1]: harmonic mean of LLM and Choice Scores; NULL when undefined.",
        "expected_llm_score": "LLM Score from the label distributions (entropy of the mean position profile).",
        "expected_choice_score": "Choice Score from the label distributions (largest mean option probability).",
        "expected_grade_score": "Harmonic mean of the expected LLM and Choice Scores.",
        "mode_option": "The most chosen original option (ties: lowest index); NULL when M = 0.",
        "position_counts_json": "JSON list, shape (N,): how often each shown position was chosen.",
        "option_counts_json": "JSON list, shape (N,): how often each original option was chosen.",
        "position_profile_json": "JSON list, shape (N,): mean probability per shown position (empty when M = 0).",
        "option_profile_json": "JSON list, shape (N,): mean probability per original option (empty when M = 0).",
        "unrelated_index": "Original index of the unrelated option (`unrelated` variant), else NULL.",
        "unrelated_label": "The unrelated option's label, else NULL.",
        "unrelated_chosen": "Rotations in which the judge chose the unrelated option, else NULL.",
        "preferred": "The human-preferred original option (selection tasks), else NULL.",
        "agreement": "Share of valid rotations choosing the preferred option; NULL without a preference.",
        "expected_agreement": "Mean probability given to the preferred option; NULL without a preference.",
    },
    "sweep_aggregates": {
        "sweep_id": _SWEEP_ID,
        "judge_id": _JUDGE_ID,
        "criterion_index": _CRITERION_INDEX,
        "criterion_name": _CRITERION_NAME,
        "variant": _VARIANT,
        "n_items": "Items aggregated.",
        "n_dropped": "Failed rotations, summed over the items.",
        "llm_score": "Mean LLM Score over the items.",
        "choice_score": "Mean Choice Score over the items.",
        "grade_score": "Mean Grade Score over the items.",
        "expected_grade_score": "Mean expected Grade Score over the items.",
        "summary_json": "The whole aggregate as JSON: each score's estimate with its interval, profiles, "
        "agreement with the preferred option.",
    },
    "metrics": {
        "id": "Row id (autoincrement).",
        "run_id": _RUN_ID,
        "computed_utc": "When the metrics were computed (ISO 8601, UTC).",
        "options_json": "The options of the computation as JSON.",
        "metrics_json": "The `MetricsResult` as JSON.",
    },
    "run_leases": {"run_id": "The run being written (primary key).", **_LEASE_COLUMNS},
    "contextual_priors": {
        "run_id": _RUN_ID,
        "prior_id": "`sha256:v1:<hex>` over the judge and the exact content-free prompts scored.",
        "judge_id": _JUDGE_ID,
        "criterion_name": _CRITERION_NAME,
        "criterion_json": "The criterion as JSON.",
        "option_order_json": "JSON list: shown position -> original option index; NULL for binary criteria.",
        "content_free_inputs_json": "JSON list of the content-free submissions scored.",
        "content_free_label_probabilities_json": "JSON list, one object per input keyed like "
        "`judgments.label_probabilities_json`; null for a failed input.",
        "prior_json": "The prior `p_cf` (the same keys); NULL when it could not be estimated.",
        "error": "Why the prior could not be estimated, else NULL.",
    },
    "threshold_calibrations": {
        "id": "Row id (autoincrement).",
        "run_id": _RUN_ID,
        "fitted_utc": "When the rule was fitted (ISO 8601, UTC).",
        "method": "`threshold`, `platt` or `isotonic`.",
        "settings_json": "Test size, seed, folds, stratification, as JSON.",
        "train_item_ids_json": "JSON list of the training items' ids.",
        "test_item_ids_json": "JSON list of the held-out items' ids.",
        "calibration_json": "The rules and their cross-validation, as JSON.",
        "held_out_json": "Agreement with the human labels on the test items, before and after, as JSON.",
    },
    "indeterminacy_analyses": {
        "id": "Row id (autoincrement).",
        "analysed_utc": "When the analysis ran (ISO 8601, UTC).",
        "run_ids_json": "JSON list of the runs analysed, from every database given, not only this one.",
        "sources_json": "The files and runs read, as JSON.",
        "settings_json": "Grids, threshold, temperature, samples, positive option, as JSON.",
        "report_json": "The whole `IndeterminacyReport` as JSON.",
    },
    "indeterminacy_values": {
        "analysis_id": "The analysis (`indeterminacy_analyses.id`).",
        "criterion": "The criterion's name.",
        "judge": "The judge; for a regret, the judge the metric chose.",
        "beta": "beta of the figure; NULL where it does not depend on it.",
        "tau": "Threshold tau of the figure; NULL where it does not depend on it.",
        "name": "`hit_rate`, `kappa`, `kl`, `jsd`, `beta_hat`, `positive_rate`, `set_size`, `mse`, `consistency`, "
        "`bias`, `regret_consistency[<metric>]` or `regret_bias[<metric>]`.",
        "value": "The figure; NULL when undefined.",
    },
    "prompt_texts": {
        "id": "`sha256:<hex>` of the text.",
        "text": "A prompt part (an item's prefix or a criterion's suffix), the data's spans between U+FDD0 and "
        "U+FDD1 markers.",
    },
    "item_criteria": {
        "run_id": _RUN_ID,
        "item_id": _ITEM_ID,
        "criterion_index": _CRITERION_INDEX,
        "criterion_name": _CRITERION_NAME,
        "requirement": "The criterion's requirement text.",
        "weight": "The criterion's weight (negative for a penalty).",
        "scale_type": "`binary` for criteria without options, else the criterion's `scale_type` (`ordinal` or "
        "`nominal`).",
        "verdict": "Final binary verdict: `MET`, `UNMET` or `CANNOT_ASSESS`.",
        "selected_index": "Final multi-choice answer: original index of the option.",
        "selected_label": "Final multi-choice answer: the option's label.",
        "score_value": "The answer's value in [0, 1].",
        "is_na": "1 when the answer is not applicable (`CANNOT_ASSESS` or an NA option).",
        "passed": "1 when the criterion earned its best possible contribution (MET on a positive weight, UNMET "
        "on a negative one, the best option); 0 when not; NULL when N/A or failed.",
        "contribution": "Contribution to the item's raw score; NULL when skipped by the CANNOT_ASSESS strategy.",
        "agreement": "Share of the judges' votes agreeing with the final answer.",
        "final_reason": "The judges' reasons: one judge's own, or `<judge>: <reason>` joined with ` | `.",
        "label_probabilities_json": "The final (aggregated) label probabilities, keyed like "
        "`judgments.label_probabilities_json`.",
        "error": "Why the criterion failed, else NULL.",
    },
    "sweep_leases": {"sweep_id": "The sweep being written (primary key).", **_LEASE_COLUMNS},
    "labels": {
        "run_id": _RUN_ID,
        "source": "`dataset` for the run's own ground truth, else the labels file's resolved path.",
        "item_id": _ITEM_ID,
        "criterion_index": _CRITERION_INDEX,
        "criterion_name": _CRITERION_NAME,
        "label": "`MET`, `UNMET`, `CANNOT_ASSESS` or the option label.",
        "imported_utc": "When the label was imported (ISO 8601, UTC).",
    },
    "label_selections": {
        "id": "Row id (autoincrement).",
        "run_id": _RUN_ID,
        "selected_utc": "When the items were drawn (ISO 8601, UTC).",
        "target": "The estimate the draw is for (a criterion or the score).",
        "budget": "Expected number (or share) of items to label.",
        "seed": "Random seed of the draw.",
        "mix": "Share of the uniform design mixed into the uncertainty-driven one.",
        "settings_json": "All settings of the selection, as JSON.",
    },
    "label_selection_items": {
        "selection_id": "The selection (`label_selections.id`).",
        "item_id": _ITEM_ID,
        "inclusion_probability": "pi_i in (0, 1]: the item's probability of being drawn.",
        "drawn": "1 when the item was chosen for labelling.",
    },
    "comparison_selections": {
        "id": "Row id (autoincrement).",
        "sweep_id": "The comparison (`sweeps.id`).",
        "selected_utc": "When the comparisons were drawn (ISO 8601, UTC).",
        "judge_id": "The judge whose preferences set the probabilities.",
        "question": "The question the labels answer (`overall` or a rubric criterion's name).",
        "budget": "Expected number of comparisons to label.",
        "seed": "Random seed of the draws and of the sides shown.",
        "mix": "Share of the uniform design mixed into the uncertainty-driven one.",
        "settings_json": "All settings of the selection, as JSON.",
    },
    "comparison_selection_items": {
        "selection_id": "The selection (`comparison_selections.id`).",
        "item_id": "The comparison's item id in the sweep (`<prompt id> <a> vs <b>`).",
        "prompt_id": "The prompt's id.",
        "system_a": "The comparison's first system.",
        "system_b": "The comparison's second system.",
        "inclusion_probability": "pi_i in (0, 1]: the comparison's probability of being drawn.",
        "drawn": "1 when the comparison was chosen for labelling.",
        "shown_left": "The system whose response its labelling task shows on the left.",
    },
    "criterion_results": {
        "run_name": "The run's name.",
        "run_id": _RUN_ID,
        "item_index": "0-based position of the item in the data.",
        "item_id": _ITEM_ID,
        "criterion_index": _CRITERION_INDEX,
        "criterion_name": _CRITERION_NAME,
        "requirement": "The criterion's requirement text.",
        "weight": "The criterion's weight.",
        "scale_type": "`binary`, `ordinal` or `nominal`.",
        "verdict": "The final verdict, or the selected option's label for multi-choice criteria.",
        "selected_index": "Multi-choice: original index of the selected option.",
        "score_value": "The answer's value in [0, 1].",
        "is_na": "1 when not applicable.",
        "passed": "1 when the criterion earned its best possible contribution, 0 when not, NULL when N/A or failed.",
        "contribution": "Contribution to the item's raw score.",
        "agreement": "Share of the judges' votes agreeing with the final answer.",
        "label_probabilities_json": "The final label probabilities.",
        "explanation": "The explanation kept for the final answer (`item_criteria.final_reason`).",
        "error": "Why the criterion failed, else NULL.",
        "item_score": "The item's final score (`items.score`).",
    },
    "judge_votes": {
        "run_name": "The run's name.",
        "run_id": _RUN_ID,
        "item_index": "0-based position of the item in the data.",
        "item_id": _ITEM_ID,
        "criterion_index": _CRITERION_INDEX,
        "criterion_name": _CRITERION_NAME,
        "requirement": "The criterion's requirement text (NULL for runs before migration 11).",
        "judge_id": _JUDGE_ID,
        "model_id": "The judge's model.",
        "permutation_index": "Which option order the judge saw.",
        "vote": "The judge's verdict, or the selected option's label.",
        "label_probabilities_json": _LABEL_PROBS,
        "one_hot": "1 when the probabilities are one-hot (no log-probabilities from the backend).",
        "off_label_mass": "Probability outside the allowed labels, NULL when unknown.",
        "explanation": "The judge's explanation, if any.",
        "error": "Why the judgment failed, else NULL.",
        "duration_ms": _DURATION,
    },
    "judgment_prompts": {
        "run_id": _RUN_ID,
        "item_id": _ITEM_ID,
        "criterion_index": _CRITERION_INDEX,
        "judge_id": _JUDGE_ID,
        "permutation_index": "Which option order the judge saw.",
        "prompt": "The exact prompt as the model read it.",
        "marked_prompt": "The prompt as the engine received it, the data's spans between U+FDD0 and U+FDD1 "
        "(`autorubric_local.engine.user_text`), for replay.",
    },
    "run_summaries": {
        "run_id": _RUN_ID,
        "run_name": "The run's name.",
        "status": "`running`, `finished`, `failed` or `interrupted`.",
        "started_utc": "When the run started.",
        "finished_utc": "When it ended; NULL while running.",
        "total_items": "Items in the run.",
        "items_done": "Items graded (with a report).",
        "items_failed": "Items with an error.",
        "mean_score": "Mean score of the graded items.",
        "judgments": "Judgments written.",
        "judgment_errors": "Failed judgments.",
        "wall_seconds": "Wall time, seconds, over all sessions.",
        "judges_json": "The judges as JSON.",
    },
    "comparison_judgments": {
        **_COMPARISON_COLUMNS,
        "rotation": "0 for order `ab` (`system_a` in slot 1), 1 for order `ba`.",
        "slot_order": "`ab` or `ba`.",
        "slot_1_system": "The system whose response is shown first (Response 1).",
        "slot_2_system": "The system whose response is shown second (Response 2).",
        "p_slot_1": "3-point scale: probability that slot 1 is better, the stored probabilities renormalised to "
        "sum to 1 as `comparisons/preferences.py` reads them; NULL on the 5-point scale or a failed judgment.",
        "p_slot_2": "3-point scale: probability that slot 2 is better (renormalised, as `p_slot_1`).",
        "p_tie": "3-point scale: probability of a tie (renormalised, as `p_slot_1`).",
        "p_1_much_better": "5-point scale: probability of `1>>2` (renormalised over the five labels); NULL on "
        "the 3-point scale or a failed judgment.",
        "p_1_better": "5-point scale: probability of `1>2`.",
        "p_same": "5-point scale: probability of `1=2`.",
        "p_2_better": "5-point scale: probability of `2>1`.",
        "p_2_much_better": "5-point scale: probability of `2>>1`.",
        "verdict": "The hard verdict in slot labels, `1`, `2` or `tie` (`hard_verdict`; on the 5-point scale the "
        "direction of `label`, `collapsed_verdict`); NULL on a failed judgment.",
        "label": "5-point scale: the most probable label, ties going to the one nearest `1=2` (`hard_label`).",
        "error": "Why the judgment failed, else NULL.",
    },
    "comparison_slot_judgments": {
        **_NWAY_COLUMNS,
        "rotation": "0 to N - 1: which rotation of the slots (rotation 0 shows the systems in the order of "
        "`sweeps.rubric_json`'s entry).",
        "slot": "1-based slot (Response 1 ... Response N).",
        "system": "The system whose response is shown in the slot (`sweep_judgments.option_order_json`).",
        "probability": "The judge's stored probability that the slot's response is the best, as "
        "`NWayJudgment.rotations` reads it (not renormalised); NULL on a failed judgment.",
        "chosen": "1 when this slot was the most probable (`sweep_judgments.chosen_position`), 0 otherwise; NULL "
        "on a failed judgment.",
        "error": "Why the judgment failed, else NULL.",
    },
    "comparison_nway_preferences": {
        **_NWAY_COLUMNS,
        "system": "One of the prompt's systems.",
        "rotations_judged": "Rotations with probabilities (N when none failed).",
        "preference": "Balanced preference: the mean over the N rotations of the system's probability, each system "
        "in each slot once (`NWayJudgment.preference`); NULL until all N rotations have probabilities.",
        "times_chosen": "Rotations in which the system was the most probable.",
        "chosen_in_slots": "The slots (1-based, comma-separated) in which it was chosen; NULL when never.",
    },
    "comparison_pairs": {
        **_COMPARISON_COLUMNS,
        "p_a_ab": "Order `ab`: probability that `system_a` is better (`system_probabilities`; on the 5-point "
        "scale `graded_preference` of the order's grades, a slight win counted half a win and half a tie).",
        "p_tie_ab": "Order `ab`: probability of a tie (as `p_a_ab`).",
        "p_b_ab": "Order `ab`: probability that `system_b` is better (as `p_a_ab`).",
        "p_a_ba": "Order `ba`: probability that `system_a` is better, mapped back from the slots (as `p_a_ab`).",
        "p_tie_ba": "Order `ba`: probability of a tie.",
        "p_b_ba": "Order `ba`: probability that `system_b` is better.",
        "p_a": "Balanced position calibration: the mean over both orders, P(`system_a` better) "
        "(`PairJudgment.preference`); NULL unless both orders have probabilities.",
        "p_tie": "The mean over both orders, P(tie).",
        "p_b": "The mean over both orders, P(`system_b` better).",
        "verdict_ab": "Order `ab`'s hard verdict in slot labels (`comparison_judgments.verdict`).",
        "verdict_ba": "Order `ba`'s hard verdict in slot labels.",
        "label_ab": "5-point scale: order `ab`'s most probable label.",
        "label_ba": "5-point scale: order `ba`'s most probable label.",
        "winner_ab": "Order `ab`'s verdict mapped to systems: a system's name, or `tie`.",
        "winner_ba": "Order `ba`'s verdict mapped to systems: a system's name, or `tie`.",
        "consistent": "1 when both orders' verdicts name the same system or are both a tie (`consistent`), 0 when "
        "not; NULL unless both orders have probabilities.",
        "swap_winner": "The MT-Bench swap rule (`swap_rule`): the system both orders name, else `tie`.",
        "error_ab": "Why order `ab`'s judgment failed, else NULL.",
        "error_ba": "Why order `ba`'s judgment failed, else NULL.",
    },
}
"""Table or view name -> column name -> meaning. Every column of a migrated database has one."""


class UndocumentedSchemaError(ValueError):
    """The migrated schema and :data:`TABLES` / :data:`COLUMNS` disagree."""


def schema_columns(db: sqlite_utils.Database) -> dict[str, list[tuple[str, str]]]:
    """Table and view name -> ``(column, declared type)`` in order, tables first, in creation order."""
    names = [*db.table_names(), *db.view_names()]
    return {name: [(c.name, c.type) for c in db[name].columns] for name in names}


def check_documented(schema: dict[str, list[tuple[str, str]]]) -> None:
    """Raise :class:`UndocumentedSchemaError` naming every table, view or column without a description,
    and every description of one the schema does not have."""
    problems = [f"table or view {name!r} has no description in TABLES" for name in schema if name not in TABLES]
    problems += [f"TABLES describes {name!r}, which the migrated database does not have"
                 for name in TABLES if name not in schema]
    for name, columns in schema.items():
        documented = COLUMNS.get(name, {})
        present = {column for column, _ in columns}
        problems += [f"column {name}.{column} has no description in COLUMNS" for column in present - documented.keys()]
        problems += [f"COLUMNS describes {name}.{column}, which the migrated database does not have"
                     for column in documented.keys() - present]
    if problems:
        raise UndocumentedSchemaError("autorubric_local/store/schema_docs.py: " + "; ".join(sorted(problems)))


def database_reference(db: sqlite_utils.Database | None = None) -> str:
    """Markdown for ``docs/database.md``: every table and view of ``db`` (default: a database
    migrated in memory), each column with its type and meaning.

    Raises
    ------
    UndocumentedSchemaError
        If a table, view or column has no description, or a description names one that is gone.
    """
    db = db if db is not None else open_db(":memory:")
    schema = schema_columns(db)
    check_documented(schema)
    views = set(db.view_names())
    lines = ["| table | kind | one row is |", "| --- | --- | --- |"]
    lines += [f"| [`{name}`](#{name}) | {'view' if name in views else 'table'} | "
              f"{TABLES[name]} |" for name in schema]
    for name, columns in schema.items():
        kind = "view" if name in views else "table"
        lines += ["", f"## {name}", "", f"{kind.capitalize()}. {TABLES[name]}", ""]
        if kind == "table":
            pks = db[name].pks
            if pks != ["rowid"]:
                lines += [f"Primary key: {', '.join(f'`{pk}`' for pk in pks)}.", ""]
        lines += ["| column | type | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{column}` | {declared or 'expression'} | {COLUMNS[name][column]} |"
                  for column, declared in columns]
    return "\n".join(lines) + "\n"
