"""The public API mirrors AutoRubric's export list (spec 001, "Public Exports")."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

import autorubric_local

SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "001_732b54dc4a0c7747.txt"
# Every name of AutoRubric's export list is provided (the hosted client since backend='hosted').
NOT_PROVIDED: set[str] = set()


def spec_exports() -> list[str]:
    text = SPEC.read_text(encoding="utf-8")
    block = text[text.index("from autorubric import (\n    # Dataset classes") :]
    return re.findall(r"^\s+([A-Za-z_]+),", block[: block.index(")")], re.M)


@pytest.mark.skipif(not SPEC.exists(), reason="shared/spec is not beside this checkout")
def test_every_spec_export_is_provided() -> None:
    names = spec_exports()
    assert len(names) == 66
    missing = [n for n in names if n not in NOT_PROVIDED and not hasattr(autorubric_local, n)]
    assert missing == []
    assert set(names) - NOT_PROVIDED <= set(autorubric_local.__all__)


def test_every_name_in_all_resolves() -> None:
    for name in autorubric_local.__all__:
        assert getattr(autorubric_local, name) is not None, name
    with pytest.raises(AttributeError):
        autorubric_local.no_such_name  # noqa: B018


def test_graders_module_exports() -> None:
    graders = importlib.import_module("autorubric_local.graders")
    for name in ("CriterionGrader", "Grader", "JudgeSpec"):
        assert hasattr(graders, name)


def test_importing_the_package_does_not_load_the_analysis_stack() -> None:
    code = "import sys, autorubric_local; print(sorted(m for m in ('scipy', 'sklearn', 'matplotlib') if m in sys.modules))"
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_hosted_client_names_load_without_litellm() -> None:
    # The base install never imports LiteLLM: only a hosted call does.
    import subprocess

    code = ("import sys, autorubric_local as a; a.LLMClient, a.generate, a.GenerateResult, a.ThinkingConfig; "
            "print('litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_utils_has_autorubrics_utils_names() -> None:
    # ``from autorubric.utils import fill_ground_truth`` (spec 001) with the package name changed.
    from autorubric_local import utils
    from autorubric_local.runner.ground_truth import fill_ground_truth

    assert utils.fill_ground_truth is fill_ground_truth
    assert set(utils.__all__) == {
        "aggregate_completion_cost", "aggregate_evaluation_usage", "aggregate_token_usage", "compute_length_penalty",
        "fill_ground_truth", "normalize_to_grade_input", "parse_thinking_output", "word_count",
    }
    assert utils.word_count("two words") == 2


def test_the_metrics_type_checking_imports_are_its_lazy_exports() -> None:
    """autorubric_local.metrics lists its names once (``_EXPORTS``: ``__all__`` is built from
    it); the ``TYPE_CHECKING`` imports for type checkers must name the same names from the
    same modules, or an editor would see another API than the one that loads."""
    import ast
    from pathlib import Path

    import autorubric_local.metrics as metrics

    tree = ast.parse(Path(metrics.__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING")
    imported = {alias.asname or alias.name: node.module.rsplit(".", 1)[-1]
                for node in block.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert imported == metrics._EXPORTS
    assert metrics.__all__ == sorted(metrics._EXPORTS)
