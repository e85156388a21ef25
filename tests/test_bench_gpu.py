"""``scripts/bench_gpu.py``: the committed real-judge shapes build the real models' sizes, and
the CPU smoke run (``--tiny``) prints a full table labelled as CPU, never as GPU figures."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import bench_gpu  # noqa: E402


@pytest.mark.parametrize(("name", "billions"), [("qwen2.5-7b-instruct", 7.62), ("llama-3.1-8b-instruct", 8.03)])
def test_the_committed_shapes_are_the_real_judges(name: str, billions: float) -> None:
    """Built on the meta device (no memory): the parameter count of the real model."""
    import torch

    model = bench_gpu.build_model(bench_gpu.load_config(name, tiny=False), "meta", torch.bfloat16)
    assert sum(p.numel() for p in model.parameters()) / 1e9 == pytest.approx(billions, abs=0.01)


def test_the_cpu_smoke_run_writes_a_cpu_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from autorubric_local.core.errors import ModelNotFoundError

    try:
        bench_gpu.judge_tokenizer()
    except ModelNotFoundError:
        from setup_state import missing

        missing("the SmolLM2 judge is not installed (its tokenizer is the benchmark's)", "setup.sh")
    out = tmp_path / "bench_smoke.txt"
    assert bench_gpu.main(["--tiny", "--config", "llama-3.1-8b-instruct", "--items", "1", "--explanation-tokens", "2",
                           "--no-vllm", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("bench_gpu (CPU smoke run, NOT GPU figures) on cpu: ")
    report = json.loads(printed.strip().splitlines()[-1])
    assert report["gpu"] is False
    rows = {(row["shape"], row["backend"], row["mode"]): row for row in report["rows"]}
    assert set(rows) == {("llama-3.1-8b-instruct (tiny)", "transformers", mode) for mode in ("score", "explain")}
    score, explain = (rows[("llama-3.1-8b-instruct (tiny)", "transformers", m)] for m in ("score", "explain"))
    assert score["judgments"] == explain["judgments"] == 14
    for value in (score["judgments_per_s"], score["prefill_tokens_per_s"], score["bound_tokens_per_s"], score["ratio"],
                  explain["judgments_per_s"], explain["decode_tokens_per_s"]):
        assert value > 0
    assert score["ratio"] == pytest.approx(score["prefill_tokens_per_s"] / score["bound_tokens_per_s"])
    written = out.read_text(encoding="utf-8")
    assert "NOT GPU figures" in written and "| llama-3.1-8b-instruct (tiny) | transformers | score | 14 |" in written


def test_cpu_results_are_never_written_as_gpu_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench_gpu_h100.txt"
    with pytest.raises(SystemExit) as exited:
        bench_gpu.parse_args(["--tiny", "--out", str(out)])
    assert exited.value.code == 2  # argparse's usage error, not any other exit
    assert f"--out {out}: refusing to write CPU results to a file named as GPU figures" in capsys.readouterr().err
    assert not out.exists()


def test_failed_judgments_are_reported_not_counted_as_throughput(monkeypatch: pytest.MonkeyPatch) -> None:
    """A judgment that failed (e.g. out of memory) is no throughput: the row says how many failed,
    in the table and the JSON, instead of a stderr warning only."""
    import argparse
    from types import SimpleNamespace

    ok = SimpleNamespace(error=None, usage=SimpleNamespace(completion_tokens=3))
    failed = SimpleNamespace(error="infrastructure: CUDA out of memory", usage=SimpleNamespace(completion_tokens=0))
    monkeypatch.setattr(bench_gpu, "plan", lambda engine, items, seed: [SimpleNamespace(item_index=0)] * 4)
    monkeypatch.setattr(bench_gpu, "warm_up", lambda engine, tasks: None)

    def time_engine(engine: object, tasks: object, mode: object, budget: int) -> tuple[float, list[object]]:
        if mode.value == "explain":  # type: ignore[attr-defined]
            engine.generate([])  # type: ignore[attr-defined]
        return (1.0 if mode.value == "score" else 2.0, [ok, failed, failed, ok])  # type: ignore[attr-defined]

    monkeypatch.setattr(bench_gpu, "time_engine", time_engine)
    args = argparse.Namespace(items=1, seed=0, explanation_tokens=3)
    class Engine:
        def generate(self, requests: object) -> list[object]:
            return []

    engine = Engine()
    rows = bench_gpu.measure(engine, "shape", "transformers", args, bound=100.0, computed=50)
    assert [row.failed for row in rows] == [2, 2]
    assert rows[1].decode_tokens_per_s is not None and rows[1].decode_tokens_per_s > 0  # timed around generate
    assert engine.generate([]) == []  # the class's generate is given back
    assert "| failed |" in bench_gpu.format_table(rows).splitlines()[0]
    assert bench_gpu.format_table(rows).splitlines()[2].endswith("| 2 |")
