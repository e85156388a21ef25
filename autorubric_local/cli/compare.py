"""``autorubric-local compare`` (judge pairs of systems in both orders, then rank them) and
``autorubric-local ranking`` (rank a stored comparison again, with other settings, no judge).

The judging goes through :func:`~autorubric_local.comparisons.judging.run_comparison`: chunks of
whole pairs committed to the SQLite file one by one, so an interrupted comparison resumes with
the same ``--run NAME``; the tables come from
:mod:`~autorubric_local.comparisons.ranking`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from autorubric_local.cli.common import (
    database_option,
    distributed_config,
    fail,
    interrupted,
    judge_specs,
    load_rubric,
    open_store,
    interval_cell,
    plain_console,
    ray_options,
    run_name_option,
    stops_on_termination,
    system_files_option,
    write_failed,
)
from autorubric_local.core.errors import AutorubricError, DatabaseWriteError, InputError
from autorubric_local.judges.config import DEFAULT_MODEL
from autorubric_local.runner.config import DEFAULT_CHUNK_JUDGMENTS

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.comparisons.data import ComparisonColumns
    from autorubric_local.comparisons.judging import StoredComparison
    from autorubric_local.data.tables import Columns


def _ranking_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """How a comparison is ranked: shared by ``compare`` and ``ranking``."""
    options = [
        click.option("--question", default=None,
                     help="Rank on this question: 'overall', a rubric criterion's name, or 'rubric' (the "
                          "weighted-rubric preference). [default: overall when asked, else rubric]"),
        click.option("--method", type=click.Choice(["soft", "swap"]), default="soft", show_default=True,
                     help="soft: the judge's probabilities averaged over both orders (balanced position "
                          "calibration); swap: MT-Bench's rule (a win only when both orders agree, else a tie)."),
        click.option("--tie-model", type=click.Choice(["half", "davidson", "rao_kupper"]), default="half",
                     show_default=True, help="Bradley-Terry's ties: half a win each, or a Davidson / Rao-Kupper model."),
        click.option("--bootstrap", "n_bootstrap", type=click.IntRange(min=10), default=200, show_default=True,
                     help="Cluster-bootstrap resamples over prompts for the intervals."),
        click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.9, show_default=True,
                     help="Confidence level of the intervals."),
        click.option("--seed", type=int, default=0, show_default=True, help="Seeds the bootstrap."),
        click.option("--style-control", "style_control", is_flag=True,
                     help="Also rank with the responses' style as covariates (length, markdown headers, list items, "
                          "bold; Chatbot Arena / Arena-Hard style control) and print the style coefficients."),
        click.option("--paired", is_flag=True,
                     help="Also test each pair of systems for a preference: the mean preference difference over "
                          "the prompts both were compared on, with a sign-flip permutation p-value (Holm-adjusted "
                          "over pairs)."),
        click.option("--json", "as_json", is_flag=True, help="Print the rankings as JSON instead of tables."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.command()
@click.argument("data_path", metavar="[DATA]", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--system", "system_files", multiple=True, metavar="NAME=FILE", callback=system_files_option,
              help="Instead of DATA: one system's responses in any file grade reads (submissions JSONL, a CSV or "
                   "Parquet table, an AutoRubric dataset), joined with the other --system files by item id "
                   "(repeat, two or more).")
@click.option("--id-column", default=None, metavar="NAME",
              help="A CSV or Parquet file's column of prompt (item) ids. [default: id]")
@click.option("--system-column", default=None, metavar="NAME",
              help="A CSV or Parquet DATA file's column of system names. [default: system]")
@click.option("--response-column", default=None, metavar="NAME",
              help="A CSV or Parquet file's column of responses. [default: response; in a --system file: "
                   "submission, as grade reads it]")
@click.option("--query-column", default=None, metavar="NAME",
              help="A CSV or Parquet file's column of queries. [default: query]")
@click.option("--reference-column", default=None, metavar="NAME",
              help="A CSV or Parquet file's column of reference answers (optional unless named). [default: "
                   "reference; in a --system file: reference_submission]")
@click.option("--rubric", "rubric_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also ask, for each criterion of this rubric file, which response better satisfies it.")
@click.option("--overall/--no-overall", default=True, show_default=True,
              help="Ask the overall question (which response is better).")
@click.option("--n-way", "n_way", is_flag=True,
              help="Show every system of a prompt in one judgment, in each of the N rotations of the slots, "
                   "instead of pairs in both orders (the judge picks the best; rankings by Luce's choice axiom).")
@click.option("--baseline", default=None, help="Compare each system with this one only (Arena-Hard style).")
@click.option("--pair", "pairs", multiple=True, metavar="A:B",
              help="Compare only these pairs of systems (repeatable); default: all pairs.")
@click.option("--model", "-m", default=DEFAULT_MODEL, show_default=True,
              help="Judge: preset name, Hugging Face model folder, .gguf file, or Hugging Face id in the local HF cache.")
@click.option("--judges", "judges_path", type=click.Path(dir_okay=False, path_type=Path),
              help="YAML/JSON file of several judges (replaces --model).")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), callback=database_option,
              default=Path("results.sqlite"), show_default=True,
              help="SQLite file for results (new, empty, or an autorubric-local database).")
@click.option("--run", "run_name", default=None, callback=run_name_option,
              help="Name of this comparison in the database; comparing again with the same name resumes it.")
@click.option("--resume/--no-resume", default=True, show_default=True,
              help="Continue the comparison named by --run (only missing pairs are judged), or start a new one.")
@click.option("--chunk-judgments", type=click.IntRange(min=1), default=DEFAULT_CHUNK_JUDGMENTS, show_default=True,
              help="Most judgments per engine chunk (whole pairs); each chunk is committed at once.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N prompts.")
@click.option("--scale", type=click.Choice(["3", "5"]), default="3", show_default=True,
              help="Verdict scale: 3 (1 / 2 / tie) or 5 (Arena-Hard's 1>>2 1>2 1=2 2>1 2>>1; a strong verdict "
                   "counts as 3 games in Bradley-Terry).")
@_ranking_options
@ray_options
def compare(data_path: Path | None, system_files: tuple[tuple[str, str], ...], id_column: str | None,
            system_column: str | None, response_column: str | None, query_column: str | None, reference_column: str | None,
            rubric_path: Path | None, overall: bool, n_way: bool, baseline: str | None,
            pairs: tuple[str, ...], model: str, judges_path: Path | None, db_path: Path, run_name: str | None,
            resume: bool, chunk_judgments: int, limit: int | None, scale: str, ray_address: str | None,
            workers: int | None, worker_cpus: float | None, worker_gpus: float | None, **ranking: Any) -> None:
    """Judge which of two systems' responses is better, for every pair, in both slot orders.

    DATA is JSONL, one prompt a line: {"id": "p1", "query": "...", "responses": {"sys-a": "...",
    "sys-b": "..."}} ("reference" optional), or one line per response: {"id": "p1", "system":
    "sys-a", "response": "...", "query": "..."}, or a CSV or Parquet table with a row per
    response (columns id, system, response, query, reference; renamed by --id-column etc.,
    other columns ignored), or hf:OWNER/NAME[:SPLIT], a Hugging Face dataset in the local cache
    read as such a table (the [hf] extra; nothing is downloaded). Each pair is shown with either system as
    "Response 1"; the judge's probabilities of 1 / 2 / tie in both orders give the preference
    (their mean, mapped to systems), the MT-Bench swap verdict, and position consistency.
    Systems are ranked by Bradley-Terry with cluster-bootstrap intervals over prompts. Instead
    of DATA, give each system's file as grade reads it, joined by item id: --system a=a.jsonl
    --system b=b.jsonl.

    Example:

        autorubric-local compare examples/compare_responses.jsonl --run cmp

    A Parquet table of outputs whose columns are prompt_id, model and output:

        autorubric-local compare outputs.parquet --id-column prompt_id --system-column model --response-column output

    Results go to --db after every chunk; after a crash or Ctrl-C, run the same command with the
    same --run NAME to judge only what is missing. `autorubric-local ranking NAME` ranks it again.
    """
    from autorubric_local.comparisons.data import ComparisonColumns
    from autorubric_local.data.tables import Columns

    if system_column is not None and system_files:
        raise click.UsageError("--system-column names a DATA table's column; a --system file's system is its NAME")
    shared = {"id": id_column, "query": query_column, "reference": reference_column}
    table = ComparisonColumns(**_given({**shared, "system": system_column, "response": response_column}))
    system_table = Columns(**_given({**shared, "submission": response_column}))  # --system files: grade's names
    _judge(data_path, system_files, rubric_path, overall, n_way, baseline, pairs, model, judges_path, db_path, run_name, resume,
           chunk_judgments, limit, ray_address, workers, worker_cpus, worker_gpus, ranking, int(scale),
           (table, system_table))


@stops_on_termination
def _judge(data_path: Path | None, system_files: tuple[tuple[str, str], ...], rubric_path: Path | None, overall: bool,
           n_way: bool, baseline: str | None, pairs: tuple[str, ...],
           model: str, judges_path: Path | None, db_path: Path, run_name: str | None, resume: bool,
           chunk_judgments: int, limit: int | None, ray_address: str | None, workers: int | None,
           worker_cpus: float | None, worker_gpus: float | None, ranking: dict[str, Any], scale: int = 3,
           columns: tuple[ComparisonColumns | None, Columns | None] = (None, None)) -> None:
    from autorubric_local.bias.stored import SweepChunkReport
    from autorubric_local.comparisons.data import SystemFiles, load_comparisons
    from autorubric_local.comparisons.judging import run_comparison
    from autorubric_local.comparisons.prompts import overall_question, rubric_questions
    from autorubric_local.runner.config import EvalConfig

    console = plain_console(stderr=True)
    distributed = distributed_config(ray_address, workers, worker_cpus, worker_gpus)
    chosen = [_pair(text) for text in pairs] or None
    questions = [overall_question()] if overall else []
    rubric = load_rubric(rubric_path) if rubric_path is not None else None
    if rubric is not None:
        try:
            questions += rubric_questions(rubric.rubric)
        except AutorubricError as exc:
            raise fail(InputError(f"{rubric_path}: {exc}")) from exc
    if (data_path is None) == (not system_files):
        raise click.UsageError("give DATA (a comparison file) or two or more --system NAME=FILE, not both")
    if not questions:
        raise click.UsageError("nothing to ask: --no-overall needs --rubric")

    def report(chunk: SweepChunkReport) -> None:
        failed = f", {chunk.failed_rotations} failed" if chunk.failed_rotations else ""
        console.print(f"judge {chunk.judge_id}: chunk {chunk.chunk_index + 1}: {chunk.rotations} judgments committed"
                      f"{failed} ({chunk.completed_items}/{chunk.total_items} pairs)", markup=False)

    systems = SystemFiles(system_files, columns[1], rubric) if system_files else None
    try:
        prompts = (load_comparisons(data_path, columns[0]) if systems is None else systems.load())[:limit]
        judges = judge_specs(model, judges_path)
        config = EvalConfig(db_path=db_path, experiment_name=run_name, resume=resume, chunk_judgments=chunk_judgments,
                            show_progress=False, distributed=distributed)
        stored = run_comparison(prompts, judges, questions, config, baseline=baseline, pairs=chosen, n_way=n_way,
                                scale=scale,
                                data_path=str(data_path) if data_path is not None else
                                " ".join(f"{name}={file}" for name, file in system_files),
                                system_files=systems.resolved() if systems is not None else None, on_chunk=report)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP (stops_on_termination)
        raise interrupted(exc, db_path) from None
    except DatabaseWriteError as exc:
        raise write_failed(exc, db_path) from None
    except AutorubricError as exc:
        raise fail(exc) from exc
    judged = stored.nway or stored.judgments
    failed = sum(1 for j in judged if not j.complete)
    what = "N-way prompts" if stored.nway else "pairs"
    resumed = f"; {stored.resumed_rotations} judgments from the checkpoint" if stored.resumed_rotations else ""
    failures = f"; {failed} {what} judgments failed (left out of the rankings)" if failed else ""
    console.print(f"comparison {stored.name} ({stored.sweep_id}): {len(stored.description['pairs'])} {what} of "
                  f"{len(stored.systems)} systems, {len(judged)} judgments of them{resumed}{failures}; "
                  f"results in {db_path}", markup=False)
    paired = ranking.pop("paired")
    _print(stored, **ranking)
    if paired:
        _print_paired(stored, ranking["question"], ranking["method"], ranking["seed"], ranking["as_json"])


@click.command()
@click.argument("run", metavar="RUN")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("results.sqlite"),
              show_default=True, help="The results database.")
@click.option("--labels", "labels_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Human preference labels (JSONL {\"id\", \"a\", \"b\", \"winner\": \"a\"|\"b\"|\"tie\"}) of a "
                   "random sample of the comparisons: also print each pair's win rate from the labels alone "
                   "and corrected by prediction-powered inference (PPI++); of the comparisons `label select` "
                   "drew: weighted by their stored probabilities (active inference).")
@click.option("--selection", default="latest", show_default=True,
              help="With --labels: the comparison's label selection whose stored probabilities weight the labels: "
                   "latest (if it has one), an id, or none (the labels taken as a uniform random sample).")
@_ranking_options
def ranking(run: str, db_path: Path, labels_path: Path | None, selection: str, **options: Any) -> None:
    """Rank the systems of a stored comparison RUN (its name or id) again, with no judge loaded.

    Example:

        autorubric-local ranking cmp --method swap --tie-model davidson
    """
    from autorubric_local.comparisons.corrected import load_preference_labels
    from autorubric_local.comparisons.judging import load_comparison

    paired = options.pop("paired")
    chosen = selection.strip().lower()
    if chosen not in ("latest", "none") and not chosen.isdigit():
        raise click.UsageError(f"--selection {selection!r}: give latest, none or a selection id")
    if chosen != "latest" and labels_path is None:
        raise click.UsageError("--selection weights --labels; give --labels FILE")
    open_store(db_path).close()  # a clean error for a missing or foreign file
    try:
        stored = load_comparison(db_path, run)
        labels = None if labels_path is None else load_preference_labels(labels_path)
    except AutorubricError as exc:
        raise fail(exc) from exc
    _print(stored, **options)
    if labels is not None:
        from autorubric_local.cli.label import print_active_win_rates  # labels drawn by `label select`: weighted

        assert labels_path is not None
        if chosen == "none" or not print_active_win_rates(
                db_path, stored, labels, labels_path, options["question"], options["confidence"], options["as_json"],
                selection_id=int(chosen) if chosen.isdigit() else None):
            _print_corrected(stored, labels, options["question"], options["confidence"], options["as_json"])
    if paired:
        _print_paired(stored, options["question"], options["method"], options["seed"], options["as_json"])


def _print_corrected(stored: StoredComparison, labels: Any, question: str | None, confidence: float,
                     as_json: bool) -> None:
    from autorubric_local.comparisons.corrected import corrected_win_rates
    from autorubric_local.comparisons.ranking import RUBRIC

    question = question or "overall"
    if question == RUBRIC:
        raise click.UsageError("--labels: preference labels answer one question; give --question NAME")
    level = f"{confidence:.0%}"
    out: dict[str, Any] = {}
    console = plain_console()
    for judge_id in stored.judge_ids:
        try:
            rates = corrected_win_rates(stored, labels, judge_id=judge_id, question=question, confidence=confidence)
        except AutorubricError as exc:
            raise fail(exc) from exc
        if as_json:
            out[judge_id] = [{"system": r.system, "against": r.other, "comparisons": r.n_comparisons,
                              "labelled": r.n_labelled, "judge": r.judge, "classical": vars(r.classical),
                              "ppi": vars(r.ppi)} for r in rates]
            continue
        table = Table(title=f"Human win rates, judge {judge_id}, question {question}: labels alone (classical) and "
                            f"judge-corrected (PPI++), {level} intervals")
        for column in ("system", "against", "comparisons", "labelled", "judge alone", "classical", "PPI++", "lam"):
            table.add_column(column)
        notes: list[str] = []
        for r in rates:
            cells = [interval_cell(interval, notes) for interval in (r.classical, r.ppi)]
            lam = "-" if r.ppi.lam is None else f"{r.ppi.lam:.2f}"
            table.add_row(r.system, r.other, str(r.n_comparisons), str(r.n_labelled), f"{r.judge:.3f}", *cells, lam)
        console.print(table)
        for k, note in enumerate(notes, 1):
            console.print(f"note {k}: {note}", markup=False)
    coefficients = _print_corrected_bt(stored, labels, question, confidence, as_json)
    if as_json:
        click.echo(json.dumps({"corrected_win_rates": out, "corrected_bradley_terry": coefficients}, indent=2))


def _print_corrected_bt(stored: StoredComparison, labels: Any, question: str, confidence: float,
                        as_json: bool) -> dict[str, Any]:
    """The classical and PPI++ Bradley-Terry coefficients of each judge (a table each, or their JSON)."""
    from autorubric_local.comparisons.corrected_bt import corrected_bradley_terry

    out: dict[str, Any] = {}
    console = plain_console()
    for judge_id in stored.judge_ids:
        try:
            fitted = corrected_bradley_terry(stored, labels, judge_id=judge_id, question=question, confidence=confidence)
        except InputError as exc:  # labels that give win rates may not identify coefficients: say why, go on
            out[judge_id] = {"error": str(exc)}
            if not as_json:
                console.print(f"no Bradley-Terry coefficients for judge {judge_id} from these labels: {exc}",
                              markup=False)
            continue
        if as_json:
            out[judge_id] = {"reference": fitted.reference, "comparisons": fitted.n_comparisons,
                             "labelled": fitted.n_labelled, "coefficients": [
                                 {"system": c.system, "comparisons": c.n_comparisons, "labelled": c.n_labelled,
                                  "judge": None if math.isnan(c.judge) else c.judge, "classical": vars(c.classical),
                                  "ppi": vars(c.ppi)} for c in fitted.coefficients]}
            continue
        table = Table(title=f"Human Bradley-Terry coefficients, judge {judge_id}, question {question}: log-odds of "
                            f"beating {fitted.reference} (ties half a win); labels alone (classical) and "
                            f"judge-corrected (PPI++), {confidence:.0%} intervals")
        for column in ("system", "comparisons", "labelled", "judge alone", "classical", "PPI++", "lam"):
            table.add_column(column)
        notes: list[str] = []
        for c in fitted.coefficients:
            if c.system == fitted.reference:
                table.add_row(c.system, str(c.n_comparisons), str(c.n_labelled), "0 (reference)", "0", "0", "-")
                continue
            cells = [interval_cell(interval, notes, signed=True) for interval in (c.classical, c.ppi)]
            judge = "-" if math.isnan(c.judge) else f"{c.judge:+.3f}"
            lam = "-" if c.ppi.lam is None else f"{c.ppi.lam:.2f}"
            table.add_row(c.system, str(c.n_comparisons), str(c.n_labelled), judge, *cells, lam)
        console.print(table)
        for k, note in enumerate(notes, 1):
            console.print(f"note {k}: {note}", markup=False)
    return out


def _print_paired(stored: StoredComparison, question: str | None, method: str, seed: int, as_json: bool) -> None:
    """Each judge's paired sign-flip tests between every compared pair of systems."""
    from autorubric_local.comparisons.paired import paired_tests
    from autorubric_local.comparisons.ranking import default_question

    question = question or default_question(stored)
    out: dict[str, Any] = {}
    console = plain_console()
    for judge_id in stored.judge_ids:
        try:
            tests = paired_tests(stored, judge_id=judge_id, question=question, method=method, seed=seed)
        except AutorubricError as exc:
            raise fail(exc) from exc
        if as_json:
            out[judge_id] = [{"system": t.system, "against": t.other, "prompts": t.n_prompts,
                              "difference": t.difference, "win_rate": t.win_rate, "p_value": t.p_value,
                              "p_holm": t.p_holm, "exact": t.exact} for t in tests]
            continue
        table = Table(title=f"Paired tests, judge {judge_id}, question {question} ({method}): mean preference "
                            "difference over prompts, sign-flip permutation p-value, Holm-adjusted over "
                            f"{len(tests)} pair{'s' if len(tests) != 1 else ''}")
        for column in ("system", "against", "prompts", "difference", "win rate", "p", "p (Holm)"):
            table.add_column(column)
        for t in tests:
            table.add_row(t.system, t.other, str(t.n_prompts), f"{t.difference:+.3f}", f"{t.win_rate:.3f}",
                          f"{t.p_value:.4f}" + ("" if t.exact else "*"), f"{t.p_holm:.4f}")
        console.print(table)
        if not all(t.exact for t in tests):
            console.print("* from random sign patterns (more than 13 prompts): p = (1 + hits) / (1 + 9999)",
                          markup=False)
    if as_json:
        click.echo(json.dumps({"paired_tests": out}, indent=2))


def _given(columns: dict[str, str | None]) -> dict[str, str]:
    """The column flags given (one left out takes its layout's default)."""
    return {field: column for field, column in columns.items() if column is not None}


def _pair(text: str) -> tuple[str, str]:
    a, sep, b = text.partition(":")
    if not sep or not a or not b:
        raise click.BadParameter(f"expected A:B (two system names), got {text!r}", param_hint="--pair")
    return a, b


def _print(stored: StoredComparison, *, question: str | None, method: str, tie_model: str, n_bootstrap: int,
           confidence: float, seed: int, as_json: bool, style_control: bool = False) -> None:
    from autorubric_local.comparisons.ranking import RUBRIC, default_question, position_bias, rank_systems

    question = question or default_question(stored)
    names = [q["name"] for q in stored.questions]
    out: dict[str, Any] = {"comparison": stored.name, "id": stored.sweep_id, "status": stored.status,
                           "question": question, "method": method, "judges": {}}
    console = plain_console()
    for judge_id in stored.judge_ids:
        try:
            ranked = rank_systems(stored, judge_id=judge_id, question=question, method=method, tie_model=tie_model,
                                  n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
        except AutorubricError as exc:
            raise fail(exc) from exc
        biases = [position_bias(stored, judge_id=judge_id, question=name, n_bootstrap=n_bootstrap * 5,
                                confidence=confidence, seed=seed)
                  for name in names if name == question or question == RUBRIC]
        if as_json:
            out["judges"][judge_id] = {
                "ranking": [vars(s) for s in ranked.systems],
                "win_rates": [{"system": i, "against": j, "win_rate": v} for (i, j), v in ranked.win_matrix.items()],
                "n_prompts": ranked.n_prompts, "n_comparisons": ranked.n_comparisons,
                "confidence": ranked.confidence, "n_bootstrap": ranked.n_bootstrap,
                "position_bias": [{"question": b.question, **vars(b.measures), "n_prompts": b.n_prompts,
                                   "consistency_low": b.consistency_low, "consistency_high": b.consistency_high}
                                  for b in biases],
            }
            if style_control:
                out["judges"][judge_id]["style_control"] = _style(stored, judge_id, question, method, n_bootstrap,
                                                                  confidence, seed, tie_model, False)
            continue
        level = f"{confidence:.0%}"
        table = Table(title=f"Ranking, judge {judge_id}, question {question} ({method}; Bradley-Terry, ties "
                            f"{tie_model}; {level} intervals over {ranked.n_prompts} prompts)")
        for column in ("rank", "system", "score", f"{level} interval", "win rate", "comparisons"):
            table.add_column(column)
        for place, s in enumerate(ranked.systems, 1):
            table.add_row(str(place), s.system, f"{s.score:.0f}", f"[{s.score_low:.0f}, {s.score_high:.0f}]",
                          f"{s.win_rate:.3f}", str(s.n_comparisons))
        console.print(table)
        if any(s.score_low == s.score_high for s in ranked.systems):
            console.print("note: an interval of zero width: every bootstrap resample gave the same strengths (e.g. every "
                          "comparison a tie, as the swap rule makes of a judge that always picks one slot); it shows "
                          "no evidence of a difference, not a precise one", markup=False)
        matrix = Table(title="Win rate of the row's system against the column's (wins + ties / 2)")
        systems = [s.system for s in ranked.systems]
        matrix.add_column("")
        for system in systems:
            matrix.add_column(system)
        for row in systems:
            matrix.add_row(row, *("-" if (row, col) not in ranked.win_matrix else f"{ranked.win_matrix[(row, col)]:.2f}"
                                  for col in systems))
        console.print(matrix)
        bias_table = Table(title=f"Position bias, judge {judge_id} (both orders of every pair)")
        for column in ("question", "pairs", "consistency", f"{level} interval", "conflict rate", "slot 1 | slot 2 "
                       "(of conflicts)"):
            bias_table.add_column(column)
        for b in biases:
            m = b.measures
            interval = "-" if b.consistency_low is None else f"[{b.consistency_low:.2f}, {b.consistency_high:.2f}]"
            slots = "-" if m.primacy is None else f"{m.primacy:.2f} | {m.recency:.2f}"
            bias_table.add_row(b.question, str(m.n), f"{m.consistency:.3f}", interval, f"{m.conflict_rate:.3f}", slots)
        console.print(bias_table)
        if style_control:
            _style(stored, judge_id, question, method, n_bootstrap, confidence, seed, tie_model, True)
    if as_json:
        click.echo(json.dumps(out, indent=2))


def _style(stored: StoredComparison, judge_id: str, question: str, method: str, n_bootstrap: int, confidence: float,
           seed: int, tie_model: str, show: bool) -> dict[str, Any]:
    """The style-controlled ranking of one judge: printed as two tables (``show``), returned as JSON."""
    from autorubric_local.comparisons.ranking import rank_style_controlled

    if tie_model != "half":
        raise click.UsageError("--style-control fits ties as half a win: use --tie-model half")
    try:
        ranked = rank_style_controlled(stored, judge_id=judge_id, question=question, method=method,
                                       n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
    except AutorubricError as exc:
        raise fail(exc) from exc
    if show:
        level = f"{confidence:.0%}"
        console = plain_console()
        table = Table(title=f"Style-controlled ranking, judge {judge_id}, question {question} ({method}; Bradley-Terry "
                            f"with style covariates; {level} intervals over {ranked.n_prompts} prompts)")
        for column in ("rank", "system", "score", f"{level} interval"):
            table.add_column(column)
        for place, s in enumerate(ranked.systems, 1):
            table.add_row(str(place), s.system, f"{s.score:.0f}", f"[{s.score_low:.0f}, {s.score_high:.0f}]")
        console.print(table)
        coefficients = Table(title="Style coefficients: log-odds of winning per standard deviation of the normalised "
                                   "difference (first response minus second)")
        for column in ("feature", "coefficient", f"{level} interval", "sd of the difference"):
            coefficients.add_column(column)
        for c in ranked.coefficients:
            coefficients.add_row(c.feature, f"{c.estimate:+.3f}", f"[{c.low:+.3f}, {c.high:+.3f}]", f"{c.sd:.3f}")
        console.print(coefficients)
        if ranked.left_out:
            console.print(f"left out (the same in every comparison): {', '.join(ranked.left_out)}", markup=False)
    return ranked.as_dict()
