"""AutoRubric 1.6.1's public API here (issue 53): every name of ``autorubric``,
``autorubric.graders``, ``autorubric.meta`` and ``autorubric.metrics`` (listed with their
signatures from the released wheel by ``scripts/autorubric_api.py`` in
``tests/data/autorubric_api.json``) should exist in the same module under ``autorubric_local``
with a compatible signature: AutoRubric's parameters, in their positions, optional where they
are optional, with their literal defaults; extra optional ones allowed.

Until it all does, ``tests/data/autorubric_api_gaps.txt`` lists every gap, and this test holds
the package to exactly that list: a gap closed fails it until its line is removed, a new gap
(a name renamed, a parameter dropped) fails it until it is mended. The file is written by
``python scripts/autorubric_api.py --check --write-gaps``; its diff is the review."""

from __future__ import annotations

import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from autorubric_api import gaps  # noqa: E402


def test_the_listed_api_is_autorubric_1_6_1s() -> None:
    api = json.loads((DATA / "autorubric_api.json").read_text(encoding="utf-8"))
    assert api["autorubric_version"] == "1.6.1"
    assert {module: len(names) for module, names in api["modules"].items()} == {
        "autorubric": 96, "autorubric.graders": 4, "autorubric.meta": 30, "autorubric.metrics": 41}
    grader = api["modules"]["autorubric.graders"]["CriterionGrader"]["parameters"]
    assert {"name": "llm_calls", "kind": "keyword_only", "required": False, "default": "'per_criterion'"} in grader


def test_the_package_differs_from_autorubric_exactly_where_the_gaps_file_says() -> None:
    recorded = [line for line in (DATA / "autorubric_api_gaps.txt").read_text(encoding="utf-8").splitlines() if line]
    found = gaps(json.loads((DATA / "autorubric_api.json").read_text(encoding="utf-8")))
    closed = sorted(set(recorded) - set(found))
    new = sorted(set(found) - set(recorded))
    assert not new, "new gaps from AutoRubric 1.6.1's API (mend them):\n" + "\n".join(new)
    assert not closed, ("gaps closed: remove them from tests/data/autorubric_api_gaps.txt "
                        "(scripts/autorubric_api.py --check --write-gaps):\n" + "\n".join(closed))
