"""`report CMP` on a stored comparison (issue 50): its own page, results first (the ranking of
each judge and question with the win-rate heat map and position consistency), then the pairs,
then the settings; text from the comparison file shown escaped. Judged by the scripted fake
judge, as tests/test_compare.py makes a cheap comparison."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from autorubric_local.cli import main
from autorubric_local.comparisons.judging import load_comparison
from autorubric_local.comparisons.ranking import position_bias, rank_systems
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.judges.config import LLMConfig

EVIL = "<script>alert(1)</script>"
QUALITY = {"good": 2.0, EVIL: 1.0, "bad": 0.0}
PRIMACY = 1.5  # beats a quality gap of 1, not of 2: the pairs one apart conflict, towards slot 1


def _log_softmax(values: list[float]) -> list[float]:
    top = max(values)
    total = top + math.log(sum(math.exp(v - top) for v in values))
    return [v - total for v in values]


def _policy(request: ScoreRequest) -> list[float]:
    found = re.search(r"<response 1>\n(.*?)\n</response 1>.*<response 2>\n(.*?)\n</response 2>", request.suffix, re.S)
    assert found is not None
    quality = {f"answer by {system}": q for system, q in QUALITY.items()}
    d = quality[found.group(1)] - quality[found.group(2)] + PRIMACY
    return _log_softmax([d, -d, -abs(d) - 0.5])


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One comparison for the module's tests (they only read it)."""
    import autorubric_local.cli.compare as compare_cli

    tmp_path = tmp_path_factory.mktemp("compared")
    engine = ScriptedEngine("s", policy=_policy)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(compare_cli, "judge_specs",
                            lambda model, path: [JudgeSpec(LLMConfig(model="scripted", engine=engine), engine.model_id)])
        return _compare(tmp_path)


def _compare(tmp_path: Path) -> Path:
    data = tmp_path / "cmp.jsonl"
    rows: list[dict[str, Any]] = [
        {"id": f"p{k}" if k else "<b>p0</b>", "query": f"question {k}",
         "responses": {system: f"answer by {system}" for system in QUALITY}}
        for k in range(4)
    ]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    db = tmp_path / "r.sqlite"
    done = CliRunner().invoke(main, ["compare", str(data), "--db", str(db), "--run", "cmp", "--bootstrap", "10"])
    assert done.exit_code == 0, done.output
    return db


def _page(db: Path, key: str, out: Path) -> str:
    done = CliRunner().invoke(main, ["report", key, "--db", str(db), "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == str(out / "index.html")
    return (out / "index.html").read_text(encoding="utf-8")


def test_a_comparison_gets_its_own_page_results_first(compared: Path, tmp_path: Path) -> None:
    html = _page(compared, "cmp", tmp_path / "page")
    comparison = load_comparison(compared, "cmp")
    ranked = rank_systems(comparison, judge_id="s", question="overall", n_bootstrap=200)
    assert [r.system for r in ranked.systems] == ["good", EVIL, "bad"]  # hand order of QUALITY
    # The ranking table lists the systems best first, with the scores and interval rank_systems gives.
    table = html[html.index('<table class="ranking">'):]
    table = table[:table.index("</table>")]
    escaped = EVIL.replace("<", "&lt;").replace(">", "&gt;")
    assert [m for m in re.findall(r'<td class="name">(.*?)</td>', table)] == ["good", escaped, "bad"]
    best = ranked.systems[0]
    assert f"{best.score:.0f}" in table and f"[{best.score_low:.0f}, {best.score_high:.0f}]" in table
    # The heat map is an inline PNG.
    assert re.search(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]{100,}" alt="win-rate heat map', html)
    # Position consistency: the pairs one quality step apart (good-EVIL, EVIL-bad) follow slot 1 in
    # both orders, so 2 of 3 pairs conflict on every prompt, every conflict towards slot 1.
    bias = position_bias(comparison, judge_id="s", question="overall", n_bootstrap=1000)
    assert bias.measures.consistency == pytest.approx(1 / 3) and bias.measures.primacy == 1.0
    consistency = html[html.index('<table class="consistency">'):]
    consistency = consistency[:consistency.index("</table>")]
    assert f"[{bias.consistency_low:.3f}, {bias.consistency_high:.3f}]" in consistency
    assert "0.333" in consistency and "1.000 | 0.000" in consistency
    # Results, then pairs, then settings.
    assert html.index('id="results"') < html.index('id="pairs"') < html.index('id="settings"')
    assert html.index('<table class="ranking">') < html.index('id="settings"')
    settings = html[html.index('id="settings"'):]
    assert comparison.sweep_id in settings and "sha256:" in settings and "3-point" in settings
    # The table of pairs: 4 prompts x 3 pairs, the conflicting ones marked.
    pairs = html[html.index('<table class="pairs">'):]
    pairs = pairs[:pairs.index("</table>")]
    assert pairs.count("<tr>") == 1 + 12 and pairs.count(" inconsistent") == 2 * 8


def test_text_from_the_comparison_file_is_escaped(compared: Path, tmp_path: Path) -> None:
    html = _page(compared, "cmp", tmp_path / "page")
    assert "<script" not in html and "<b>p0" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;p0&lt;/b&gt;" in html


def test_the_sweep_id_works_too_and_a_missing_name_is_a_clean_error(compared: Path, tmp_path: Path) -> None:
    sweep_id = load_comparison(compared, "cmp").sweep_id
    html = _page(compared, sweep_id, tmp_path / "by-id")
    assert '<span id="comparison-name">cmp</span>' in html
    missing = CliRunner().invoke(main, ["report", "nope", "--db", str(compared), "--out", str(tmp_path / "x")])
    assert missing.exit_code == 1 and "no run named 'nope' (runs: none)" in missing.output
    assert not (tmp_path / "x").exists()
