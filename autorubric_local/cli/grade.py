"""``autorubric-local grade``: grade a dataset against a rubric with local judges.

The work goes through :class:`~autorubric_local.runner.EvalRunner`: chunked engine workloads,
each committed to the SQLite file, so an interrupted run resumes with ``--run NAME``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from autorubric_local.cli.common import (
    database_option,
    distributed_config,
    fail,
    interrupted,
    load_rubric,
    plain_console,
    ray_options,
    run_name_option,
    stops_on_termination,
    write_failed,
)
from autorubric_local.cli.grade_output import (
    DEFAULT_OFF_LABEL_THRESHOLD,
    stream_json_lines,
    print_graded,
    summary_line,
)
from autorubric_local.core.errors import AutorubricError, DatabaseWriteError, InputError
from autorubric_local.engine.vllm.args import check_engine_args
from autorubric_local.graders.criterion_grader import CriterionGrader
from autorubric_local.graders.panel_file import load_judges_file
from autorubric_local.judges.backends import backend_names
from autorubric_local.judges.config import DEFAULT_MODEL, LLMConfig
from autorubric_local.judges.engines import check_backend_support
from autorubric_local.runner.chunking import DEFAULT_CHUNK_SECONDS
from autorubric_local.runner.config import DEFAULT_CHUNK_JUDGMENTS

EXIT_FAILURES = 3
"""Exit status of ``grade`` when some items or judgments failed (without --allow-failures)."""


@click.command()
@click.argument("paths", metavar="[RUBRIC] DATA", nargs=-1, required=True,
                type=click.Path(dir_okay=False, path_type=Path))
@click.option("--model", "-m", default=None,
              help=f"Preset name, Hugging Face model folder, .gguf file, or Hugging Face id in the local HF cache "
                   f"[default: {DEFAULT_MODEL}].")
@click.option("--backend", type=click.Choice(["auto", *backend_names()]), default=None,
              help="Engine that runs --model (LLMConfig.backend; a registered backend). [default: auto]")
@click.option("--engine-arg", "engine_arg", multiple=True, metavar="KEY=VALUE",
              help="A vLLM engine argument (LLMConfig.engine_args; repeatable; with --backend vllm), e.g. "
                   "max_num_seqs=64 or quantization=awq; VALUE is read as JSON when it parses, else as a string.")
@click.option("--tensor-parallel-size", type=click.IntRange(min=1), default=None,
              help="GPUs each layer is split across (vLLM's tensor_parallel_size; with --backend vllm).")
@click.option("--dtype", type=click.Choice(["auto", "float32", "bfloat16", "float16"]), default=None,
              help="Weight and activation precision (LLMConfig.dtype; transformers and vLLM). auto: bfloat16 on a "
                   "GPU, float32 on CPU. On a CPU with AMX (amx_bf16 in /proc/cpuinfo) bfloat16 scores about "
                   "2.5x faster than float32 but moves near-tie verdicts (README, the peer table under \"GGUF "
                   "judges on llama.cpp\"). [default: auto]")
@click.option("--judges", "judges_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Judge-panel file (YAML/JSON): an ensemble and its aggregation; see examples/judges.yaml.")
@click.option("--permutations", type=click.Choice(["single", "cyclic"]), default=None,
              help="cyclic: judge multi-choice criteria in every rotation of their options and vote on the "
                   "averaged distribution (position-debiased). [default: single, or the judges file's]")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), callback=database_option,
              default=Path("results.sqlite"), show_default=True,
              help="SQLite file for results (new, empty, or an autorubric-local database).")
@click.option("--mode", type=click.Choice(["score", "explain"]), default="score", show_default=True,
              help="score: verdicts from label probabilities; explain: also write explanations.")
@click.option("--llm-calls", type=click.Choice(["per_criterion", "per_item"]), default="per_criterion",
              show_default=True,
              help="per_item: one prompt per item and judge with the whole rubric, its verdicts read in turn "
                   "(AutoRubric's single-call grading; score mode, local judges).")
@click.option("--explanation-first/--verdict-first", default=True, show_default=True,
              help="In explain mode, reason before the verdict (the verdict is read after the explanation), or give "
                   "the verdict first (score mode's verdict) and explain it after.")
@click.option("--seed", type=int, default=None,
              help="Seed of the option shuffles, recorded with the run and printed at the end [default: a random "
                   "seed; give one (the README's Python example uses 42) for the same shuffles every time].")
@click.option("--no-shuffle", is_flag=True, help="Show multi-choice options in their original order.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Grade only the first N items.")
@click.option("--submission-column", default="submission", show_default=True, metavar="NAME",
              help="A CSV, Parquet or hf: DATA table's column holding the text to grade.")
@click.option("--id-column", default="id", show_default=True, metavar="NAME",
              help="A CSV, Parquet or hf: DATA table's column of item ids (none: item-<i>).")
@click.option("--query-column", default="query", show_default=True, metavar="NAME",
              help="A CSV, Parquet or hf: DATA table's column of queries (the question each item answers).")
@click.option("--reference-column", default="reference_submission", show_default=True, metavar="NAME",
              help="A CSV, Parquet or hf: DATA table's column of reference answers.")
@click.option("--run", "run_name", default=None, callback=run_name_option,
              help="Name of this run in the database (letters, digits, '.', '_', '-'; at most 128); "
                   "grading again with the same name resumes it.")
@click.option("--resume/--no-resume", default=True, show_default=True,
              help="Continue the run named by --run (only missing items are graded), or start a new one.")
@click.option("--chunk-judgments", type=click.IntRange(min=1), default=DEFAULT_CHUNK_JUDGMENTS,
              show_default=True, help="Most judgments per engine chunk; each chunk is committed at once.")
@click.option("--chunk-seconds", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_CHUNK_SECONDS,
              show_default=True, help="Time budget of a chunk: after a first one-item chunk, each is sized from the "
              "pace so far to commit about this often (this process; Ray chunks go by size).")
@ray_options
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON instead of a table.")
@click.option("--jsonl", "as_jsonl", is_flag=True,
              help="Stream results as JSON Lines, one item per line as each chunk is committed (items "
                   "resumed from the database follow at the end).")
@click.option("--allow-failures", is_flag=True,
              help=f"Exit 0 even when items or judgments failed (default: exit {EXIT_FAILURES}).")
@click.option("--off-label-threshold", type=click.FloatRange(0.0, 1.0), default=DEFAULT_OFF_LABEL_THRESHOLD,
              show_default=True,
              help="Flag judgments that put more than this share of the first-step probability outside the "
                   "allowed labels (a judge not following the answer format; when its backend reports it).")
@click.option("--contextual-calibration", is_flag=True,
              help="Correct each judge's label prior (Zhao et al. 2021): judge content-free submissions ('', "
                   "'N/A', '[SUBMISSION]') in every prompt and read verdicts from the corrected distribution; "
                   "the judge's own distribution is kept. Not with --mode explain --verdict-first.")
@stops_on_termination
def grade(
    paths: tuple[Path, ...],
    model: str | None,
    backend: str | None,
    engine_arg: tuple[str, ...],
    tensor_parallel_size: int | None,
    dtype: str | None,
    judges_path: Path | None,
    permutations: str | None,
    db_path: Path,
    mode: str,
    llm_calls: str,
    explanation_first: bool,
    seed: int | None,
    no_shuffle: bool,
    limit: int | None,
    submission_column: str,
    id_column: str,
    query_column: str,
    reference_column: str,
    run_name: str | None,
    resume: bool,
    chunk_judgments: int,
    chunk_seconds: float,
    ray_address: str | None,
    workers: int | None,
    worker_cpus: float | None,
    worker_gpus: float | None,
    no_progress: bool,
    as_json: bool,
    as_jsonl: bool,
    allow_failures: bool,
    off_label_threshold: float,
    contextual_calibration: bool,
) -> None:
    """Grade every submission in DATA against RUBRIC (YAML or JSON).

    DATA is JSONL or JSON of submissions ({"submission", "id", "query",
    "reference_submission", "metadata", "ground_truth"}), a CSV or Parquet table with a row per
    submission (columns named by --submission-column etc.; the other columns are kept as
    metadata), hf:OWNER/NAME[:SPLIT], a Hugging Face dataset in the local cache read as such a
    table (the [hf] extra; nothing is downloaded), or an AutoRubric dataset JSON; a dataset
    that carries its own rubric can be graded without RUBRIC. Results go to the
    SQLite file --db; after a crash or Ctrl-C, run the same command with the same
    --run NAME to grade only what is missing.

    Example:

        autorubric-local grade examples/battery_rubric.yaml examples/battery_submissions.jsonl --run battery-v1

    A Parquet (or CSV) file of model outputs whose text is in the column "output":

        autorubric-local grade examples/battery_rubric.yaml outputs.parquet --submission-column output

    The test split of a Hugging Face dataset downloaded once (huggingface-cli download
    acme/answers --repo-type dataset), its text in the column "answer":

        autorubric-local grade examples/battery_rubric.yaml hf:acme/answers:test --submission-column answer

    A labelled AutoRubric dataset with its own rubric (then: autorubric-local metrics --db results.sqlite):

        autorubric-local grade q1.json --limit 100 --run ricechem-q1

    An ensemble of judges, every option rotation:

        autorubric-local grade examples/battery_rubric.yaml examples/battery_submissions.jsonl --judges examples/judges.yaml --permutations cyclic

    A judge on a GPU box, vLLM splitting it across two GPUs:

        autorubric-local grade q1.json --model qwen2.5-7b-instruct --backend vllm --tensor-parallel-size 2 --engine-arg max_num_seqs=128

    On a Ray cluster (`ray start --head` on one box, `ray start --address=HEAD:6379` on the
    others; every node holds the model files), 4 actors, this process committing:

        autorubric-local grade examples/battery_rubric.yaml examples/battery_submissions.jsonl --ray auto --workers 4 --run battery-ray

    A judge that answers MET for nearly everything, its label prior corrected:

        autorubric-local grade q1.json --run q1-cc --contextual-calibration

    A JSONL file is read line by line (no size limit; 64 MiB a line), a .json file a value
    at a time (no size limit; 64 MiB an item). A JSONL line that is not
    valid JSON, UTF-8 or Unicode is that item's failure, recorded with its line number; the
    other items are graded (exit status 3). Every other input problem (files, --run, --db)
    is refused before a judge is loaded. Judgments whose
    judge put more than --off-label-threshold of its first-step probability outside the
    allowed labels are marked "!" in the table and counted on stderr (backends that report it).

    \b
    Exit status:
      0    every item and judgment was graded
      1    bad input: a rubric, data or judges file, or a run that cannot start
      2    usage error: a bad option or argument (e.g. --run, --db, a directory as a file)
      3    some items or judgments failed (results kept; --allow-failures exits 0)
      4    the results database could not be written (disk full, read-only); committed chunks are kept
      130  interrupted (Ctrl-C); committed chunks are kept
      143  stopped by SIGTERM (129: SIGHUP), handled as Ctrl-C; committed chunks are kept
    """
    from autorubric_local.data.submissions import load_grading_data
    from autorubric_local.data.tables import Columns, is_table
    from autorubric_local.runner import EvalConfig, EvalRunner
    from autorubric_local.runner.distributed import RayExecutor
    from autorubric_local.runner.executors import LocalExecutor, RunExecutor

    console = plain_console(stderr=True)  # piped or redirected: no line wrapped mid-phrase
    if len(paths) > 2:
        raise click.UsageError(f"expected [RUBRIC] DATA, got {len(paths)} paths")
    if as_json and as_jsonl:
        raise click.UsageError("give --json or --jsonl, not both")
    distributed = distributed_config(ray_address, workers, worker_cpus, worker_gpus)
    rubric_path, data_path = (None, paths[0]) if len(paths) == 1 else paths
    rubric = None if rubric_path is None else load_rubric(rubric_path)
    try:
        columns = Columns(submission=submission_column, id=id_column, query=query_column, reference=reference_column)
        dataset = load_grading_data(data_path, rubric, limit=limit, keep_unreadable=True,
                                    columns=columns if is_table(data_path) else None)
        engine = _engine_options(backend, engine_arg, tensor_parallel_size, dtype)
        grader = _make_grader(model, judges_path, permutations, mode, explanation_first, seed, not no_shuffle,
                              contextual_calibration, engine, llm_calls)
        config = EvalConfig(db_path=db_path, experiment_name=run_name, resume=resume,
                            chunk_judgments=chunk_judgments, chunk_seconds=chunk_seconds, show_progress=not no_progress,
                            distributed=distributed)
        streamed: set[str] = set()
        on_chunk = (lambda chunk: stream_json_lines(chunk.graded, streamed)) if as_jsonl else None
        if distributed is None:  # the judges load, the heap freezes and they are released in the library
            executor: RunExecutor = LocalExecutor(
                loading=lambda names: console.status(f"loading judge {escape(', '.join(names))} ..."))
        else:
            executor = RayExecutor(distributed)  # imports ray only when it starts
        runner = EvalRunner(dataset, grader, config, data_path=str(data_path), on_chunk=on_chunk, executor=executor)
        load_seconds = 0.0
        stored = runner.finished_run()
        graded_now = stored is None  # else read back: the grader's own seed was never used
        if stored is not None:
            console.print(f"run {stored.name} is finished in {db_path}: results read from the database "
                          "(no judge loaded; --no-resume grades again as a new run)", markup=False)
        else:
            if distributed is not None:  # the actors load the judges when the run starts
                names = ", ".join(sorted({j.llm_config.model for j in grader.judges}))
                console.print(f"grading on {distributed.workers} Ray workers ({distributed.address}), each "
                              f"loading judge {names} from its own files; committing to {db_path}", markup=False)
            stored = runner.run_to_store()
            load_seconds = executor.startup_seconds
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP (stops_on_termination)
        raise interrupted(exc, db_path) from None
    except DatabaseWriteError as exc:
        raise write_failed(exc, db_path) from None
    except AutorubricError as exc:
        raise fail(exc) from exc
    try:
        tally = print_graded(stored, as_json=as_json, as_jsonl=as_jsonl, streamed=streamed,
                             threshold=off_label_threshold)
    except KeyboardInterrupt:  # while the results are read back: the run itself is stored
        console.print(f"interrupted while printing; the run is stored in {db_path}", markup=False)
        raise SystemExit(130) from None
    console.print(summary_line(stored, tally, load_seconds, db_path), markup=False)
    if graded_now and not grader.seed_given:
        console.print(f"seed {grader.seed} (random; --seed {grader.seed} shuffles the options the same way again)",
                      markup=False)
    if contextual_calibration:
        inputs = ", ".join(repr(text) for text in grader.content_free_inputs)
        console.print(f"contextual calibration: verdicts read from each judge's distribution divided by its label prior "
                      f"from the content-free inputs {inputs}; the judges' own distributions are kept", markup=False)
    off_label = tally.off_label_line()
    if off_label is not None:
        console.print(off_label, markup=False)
    if tally.failed_items or tally.failed_judgments:
        outcome = "exit status 0 (--allow-failures)" if allow_failures else f"exit status {EXIT_FAILURES}"
        console.print(f"{tally.failed_items} of {tally.items} items failed, "
                      f"{tally.failed_judgments} judgments failed; {outcome}")
        if not allow_failures:
            raise SystemExit(EXIT_FAILURES)


def _engine_options(
    backend: str | None, pairs: Sequence[str], tensor_parallel_size: int | None, dtype: str | None = None
) -> dict[str, Any]:
    """``LLMConfig`` fields of --backend, --engine-arg KEY=VALUE, --tensor-parallel-size and --dtype.

    VALUE is parsed as JSON when it parses (``8``, ``true``, ``0.5``), else kept as a string
    (``awq``); the arguments are checked against vLLM's allow-list
    (:func:`~autorubric_local.engine.vllm.args.check_engine_args`).

    Raises
    ------
    InputError
        If a pair has no ``=`` or an empty key, a key is given twice, --tensor-parallel-size
        and --engine-arg tensor_parallel_size are both given, or an argument is unknown or has
        a value of the wrong type (the message names it; for an unknown one, lists the allowed).
    """
    args: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--engine-arg {pair!r}: expected KEY=VALUE, e.g. max_num_seqs=64")
        if key.strip() in args:
            raise InputError(f"--engine-arg {key.strip()!r} given twice")
        try:
            args[key.strip()] = json.loads(text)
        except json.JSONDecodeError:
            args[key.strip()] = text
    if tensor_parallel_size is not None:
        if "tensor_parallel_size" in args:
            raise InputError("give --tensor-parallel-size or --engine-arg tensor_parallel_size=N, not both")
        args["tensor_parallel_size"] = tensor_parallel_size
    options: dict[str, Any] = {"engine_args": check_engine_args(args, "--engine-arg")} if args else {}
    if backend is not None:
        options["backend"] = backend
    if dtype is not None:
        options["dtype"] = dtype
    return options


def _make_grader(
    model: str | None,
    judges_path: Path | None,
    permutations: str | None,
    mode: str,
    explanation_first: bool,
    seed: int | None,
    shuffle: bool,
    contextual_calibration: bool = False,
    engine: dict[str, Any] | None = None,
    llm_calls: str = "per_criterion",
) -> CriterionGrader:
    """The grader of this command's options (the one place a grader is built).

    ``engine``: ``LLMConfig`` fields of the engine options (:func:`_engine_options`), checked
    against the backend here, before any judge is loaded.

    Raises
    ------
    InputError
        If both --model and --judges are given, --judges comes with engine options, the
        judges file is invalid, or the engine options are (an unknown or mistyped
        --engine-arg, or one the backend does not take).
    """
    if judges_path is not None:
        if model is not None:
            raise InputError("give --model or --judges, not both (a judges file names each judge's model)")
        if engine:
            raise InputError("--backend, --engine-arg, --tensor-parallel-size and --dtype go with --model; in a "
                             "judges file set each judge's backend, engine_args and dtype")
        kwargs = load_judges_file(judges_path).grader_kwargs()
    else:
        config = LLMConfig(model=model or DEFAULT_MODEL, **(engine or {}))
        check_backend_support(config)
        kwargs = {"llm_config": config}
    if permutations is not None:
        kwargs["permutations"] = permutations
    return CriterionGrader(
        mode=mode,  # type: ignore[arg-type]
        explanation_first=explanation_first,
        seed=seed,
        shuffle_options=shuffle,
        contextual_calibration=contextual_calibration,
        llm_calls=llm_calls,  # type: ignore[arg-type]
        **kwargs,
    )


