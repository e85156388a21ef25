"""``scripts/bench_ray.py``: its capturing executor hands the run's end on to the local executor,
so the judges a captured run loaded are released like a local run's."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import bench_ray  # noqa: E402

from autorubric_local.core.types import Criterion  # noqa: E402
from autorubric_local.graders.criterion_grader import CriterionGrader  # noqa: E402
from autorubric_local.judges import engines  # noqa: E402
from autorubric_local.judges.config import LLMConfig  # noqa: E402


def test_a_captured_run_releases_the_engines_it_loaded(tmp_path: Path, tiny_model_dir: Path) -> None:
    from autorubric_local.core.rubric import Rubric
    from autorubric_local.data.dataset import RubricDataset
    from autorubric_local.runner import EvalConfig, EvalRunner

    # A run keeps an engine that was cached before it started, so this needs none cached: a test that
    # loads one through load_engine must release it (as tests/test_ray_optional.py's shipped-grader test does).
    assert engines.loaded_engines() == [], "an earlier test left an engine in load_engine's cache"
    dataset = RubricDataset(prompt="Which cathode?", rubric=Rubric([Criterion(requirement="Names the cathode")]))
    dataset.add_item("The cathode is NMC.")
    grader = CriterionGrader(LLMConfig(model=str(tiny_model_dir), device="cpu"), seed=1)
    capture = bench_ray.Capturing()
    EvalRunner(dataset, grader, EvalConfig(db_path=tmp_path / "r.sqlite", show_progress=False),
               executor=capture).run_sync()  # type: ignore[arg-type]
    assert len(capture.chunks) == 1
    assert grader.loaded_judges() == frozenset()  # released when the run ended
    assert engines.loaded_engines() == []
