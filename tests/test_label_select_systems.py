"""``label select`` for a comparison judged from ``--system`` files (issue 50): ``compare``
remembers the systems' files (by absolute path, with the columns and rubric it read them with),
so ``label select --out`` needs no flag while they exist; ``--system`` gives them again, read as
``compare`` reads them; a file whose content changed is refused, naming the file and the
comparison; ``--data`` with ``--system`` is a usage error."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from autorubric_local.cli import main
from autorubric_local.comparisons.data import SystemFiles
from autorubric_local.comparisons.judging import load_comparison
from autorubric_local.comparisons.labelling import load_comparison_selection
from autorubric_local.data.tables import Columns
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.judges.config import LLMConfig

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "compare_responses.jsonl"
ROWS = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
SYSTEMS = ("careful", "terse")


def length_judge() -> JudgeSpec:
    """A scripted judge preferring the longer response, a little unsure (every comparison selectable)."""
    def policy(request: ScoreRequest) -> list[float]:
        found = re.search(r"<response 1>\n(.*?)\n</response 1>.*<response 2>\n(.*?)\n</response 2>",
                          request.suffix, re.S)
        assert found is not None
        d = 1.0 if len(found.group(1)) > len(found.group(2)) else -1.0
        values = [d, -d, -1.5]
        total = math.log(sum(math.exp(v) for v in values))
        return [v - total for v in values]

    engine = ScriptedEngine("s", policy=policy)
    return JudgeSpec(LLMConfig(model="scripted", engine=engine), engine.model_id)


def submissions(path: Path, system: str) -> Path:
    lines = [{"id": r["id"], "query": r["query"], "submission": r["responses"][system]} for r in ROWS]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Path:
    """``compare --run cmp`` with ``args`` (the --system files) run in ``tmp_path / "data"``."""
    import autorubric_local.cli.compare as compare_cli

    monkeypatch.setattr(compare_cli, "judge_specs", lambda model, path: [length_judge()])
    db = tmp_path / "r.sqlite"
    monkeypatch.chdir(tmp_path / "data")
    done = CliRunner().invoke(main, ["compare", *args, "--db", str(db), "--run", "cmp", "--bootstrap", "10"])
    assert done.exit_code == 0, done.output
    monkeypatch.chdir(tmp_path)  # label select runs elsewhere: the stored paths are absolute
    return db


def two_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data").mkdir()
    for system in SYSTEMS:
        submissions(tmp_path / "data" / f"{system}.jsonl", system)
    return judged(tmp_path, monkeypatch, "--system", "careful=careful.jsonl", "--system", "terse=terse.jsonl")


def select(db: Path, tmp_path: Path, *extra: str) -> Result:
    return CliRunner().invoke(main, ["label", "select", "cmp", "--db", str(db), "--budget", "8", "--seed", "0",
                                     "--out", str(tmp_path / "rows.jsonl"), *extra])


def rows_of(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]


def expected_rows() -> dict[str, tuple[str, str, str]]:
    """Prompt id -> (query, careful's response, terse's response), from the example file."""
    return {r["id"]: (r["query"], r["responses"]["careful"], r["responses"]["terse"]) for r in ROWS}


def test_the_stored_system_files_give_the_responses_with_no_flag(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    db = two_files(tmp_path, monkeypatch)
    stored = load_comparison(db, "cmp").description["system_files"]
    assert stored["files"] == [{"system": s, "path": str(tmp_path / "data" / f"{s}.jsonl")} for s in SYSTEMS]
    assert stored["columns"] == vars(Columns()) and stored["rubric"] is None
    done = select(db, tmp_path)
    assert done.exit_code == 0, done.output
    rows = rows_of(tmp_path)
    # 8 prompts, one pair each, budget 8: every comparison is drawn (pi = 1), each row from the files
    assert sorted(r["id"] for r in rows) == sorted(expected_rows())
    for r in rows:
        query, careful, terse = expected_rows()[r["id"]]
        assert (r["a"], r["b"]) == SYSTEMS and r["comparison_id"] == f"{r['id']} careful vs terse"
        assert (r["query"], r["response_a"], r["response_b"], r["reference"]) == (query, careful, terse, None)
    selection = load_comparison_selection(db, load_comparison(db, "cmp"))
    assert selection is not None and len(selection.drawn) == 8


def test_system_files_given_again_and_a_moved_file_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = two_files(tmp_path, monkeypatch)
    moved = tmp_path / "moved.jsonl"
    (tmp_path / "data" / "terse.jsonl").rename(moved)
    missing = select(db, tmp_path)
    assert missing.exit_code == 1
    assert f"{tmp_path / 'data' / 'terse.jsonl'}: no such file (system 'terse' of comparison 'cmp')" in missing.output
    assert load_comparison_selection(db, load_comparison(db, "cmp")) is None  # nothing stored on failure
    done = select(db, tmp_path, "--system", f"careful={tmp_path / 'data' / 'careful.jsonl'}",
                  "--system", f"terse={moved}")
    assert done.exit_code == 0, done.output
    assert {r["id"]: (r["query"], r["response_a"], r["response_b"]) for r in rows_of(tmp_path)} == expected_rows()


def test_a_changed_file_is_refused_naming_it_and_the_comparison(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    db = two_files(tmp_path, monkeypatch)
    terse = tmp_path / "data" / "terse.jsonl"
    lines = [json.loads(line) for line in terse.read_text().splitlines()]
    lines[2]["submission"] = "Nine."  # planets: one response changed
    terse.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    for extra in ((), ("--system", f"careful={tmp_path / 'data' / 'careful.jsonl'}", "--system", f"terse={terse}")):
        done = select(db, tmp_path, *extra)
        assert done.exit_code == 1, done.output
        assert (f"{tmp_path / 'data' / 'careful.jsonl'}, {terse}: comparison 'planets careful vs terse' differs from "
                "the one comparison 'cmp' judged") in " ".join(done.output.split())
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "boil", "query": ROWS[0]["query"], "submission": "x"}) + "\n", encoding="utf-8")
    short = select(db, tmp_path, "--system", f"careful={tmp_path / 'data' / 'careful.jsonl'}",
                   "--system", f"terse={other}")  # terse answered one prompt only
    assert short.exit_code == 1
    assert "no responses of 'careful' and 'terse' to prompt" in short.output and "comparison 'cmp'" in short.output
    assert load_comparison_selection(db, load_comparison(db, "cmp")) is None


def test_data_with_system_and_a_bad_system_value_are_usage_errors(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    db = two_files(tmp_path, monkeypatch)
    both = select(db, tmp_path, "--data", str(EXAMPLE), "--system", "careful=careful.jsonl")
    assert both.exit_code == 2 and "(--data) or the systems' files (--system), not both" in both.output
    bad = select(db, tmp_path, "--system", "careful")
    assert bad.exit_code == 2 and "expected NAME=FILE, got 'careful'" in bad.output
    assert not (tmp_path / "rows.jsonl").exists()


def test_table_files_are_read_again_with_the_columns_compare_used(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    for system in SYSTEMS:
        with (tmp_path / "data" / f"{system}.csv").open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, ["key", "q", "text"])
            writer.writeheader()
            writer.writerows({"key": r["id"], "q": r["query"], "text": r["responses"][system]} for r in ROWS)
    db = judged(tmp_path, monkeypatch, "--system", "careful=careful.csv", "--system", "terse=terse.csv",
                "--id-column", "key", "--query-column", "q", "--response-column", "text")
    stored = SystemFiles.from_dict(load_comparison(db, "cmp").description["system_files"])
    assert stored.columns == Columns(submission="text", id="key", query="q")
    done = select(db, tmp_path)
    assert done.exit_code == 0, done.output
    assert {r["id"]: (r["query"], r["response_a"], r["response_b"]) for r in rows_of(tmp_path)} == expected_rows()


def test_a_five_point_comparison_file_is_checked_on_its_own_scale(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import autorubric_local.cli.compare as compare_cli

    def five(request: ScoreRequest) -> list[float]:
        return [math.log(p) for p in (0.1, 0.4, 0.2, 0.2, 0.1)]

    engine = ScriptedEngine("s", policy=five)
    monkeypatch.setattr(compare_cli, "judge_specs",
                        lambda model, path: [JudgeSpec(LLMConfig(model="scripted", engine=engine), engine.model_id)])
    db = tmp_path / "r.sqlite"
    done = CliRunner().invoke(main, ["compare", str(EXAMPLE), "--db", str(db), "--run", "cmp", "--scale", "5",
                                     "--pair", "careful:terse", "--bootstrap", "10"])
    assert done.exit_code == 0, done.output
    chosen = select(db, tmp_path)  # the stored data_path, hashed with the 5-point questions it was judged on
    assert chosen.exit_code == 0, chosen.output
    assert {r["id"]: (r["query"], r["response_a"], r["response_b"]) for r in rows_of(tmp_path)} == expected_rows()


def test_submissions_with_labels_are_read_again_with_the_rubric_compare_used(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from autorubric_local.core.errors import InputError

    (tmp_path / "data").mkdir()
    rubric = tmp_path / "data" / "rubric.yaml"
    rubric.write_text("- name: correct\n  weight: 2.0\n  requirement: States the right answer\n"
                      "- name: brief\n  weight: 1.0\n  requirement: Answers in one sentence\n", encoding="utf-8")
    for system in SYSTEMS:  # two labels a line: one per criterion of rubric.yaml, not of the stand-in
        lines = [{"id": r["id"], "query": r["query"], "submission": r["responses"][system],
                  "ground_truth": ["MET", "UNMET"]} for r in ROWS]
        (tmp_path / "data" / f"{system}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines),
                                                          encoding="utf-8")
    files = tuple((s, str(tmp_path / "data" / f"{s}.jsonl")) for s in SYSTEMS)
    with pytest.raises(InputError, match="ground_truth"):
        SystemFiles(files).load()  # the stand-in rubric has one criterion
    db = judged(tmp_path, monkeypatch, "--system", "careful=careful.jsonl", "--system", "terse=terse.jsonl",
                "--rubric", "rubric.yaml")
    stored = SystemFiles.from_dict(load_comparison(db, "cmp").description["system_files"])
    assert stored.rubric is not None and [c.name for c in stored.rubric] == ["correct", "brief"]
    done = select(db, tmp_path, "--target", "correct")
    assert done.exit_code == 0, done.output
    assert {r["id"]: (r["query"], r["response_a"], r["response_b"]) for r in rows_of(tmp_path)} == expected_rows()
