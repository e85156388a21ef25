"""``Rubric``: a list of criteria, its loaders, serialisation and score computation.

Accepted formats and loader error messages follow the AutoRubric API reference ("Core
Grading", ``Rubric``) and AutoRubric's README (github.com/delip/autorubric),
"Loading Rubrics". Input errors are raised as
:class:`~autorubric_local.core.errors.InputError`, a ``ValueError``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from autorubric_local.core.checks import MAX_FILE_BYTES, decode_utf8, read_input_text
from autorubric_local.core.errors import InputError, MissingFileError
from autorubric_local.core.penalty import ToGradeInput
from autorubric_local.core.reports import (
    CriterionReport,
    EnsembleEvaluationReport,
    EvaluationReport,
)
from autorubric_local.core.rubric_loading import criteria_from_data, parse_rubric_text
from autorubric_local.core.scoring import score_reports
from autorubric_local.core.types import (
    CannotAssessConfig,
    CannotAssessStrategy,
    Criterion,
    CriterionVerdict,
    MultiChoiceVerdict,
)

__all__ = ["Grader", "Rubric"]

_SUPPORTED = "Supported formats: .yaml, .yml, .json"


class Grader(Protocol):
    """Anything ``Rubric.grade`` can delegate to (the graders implement it)."""

    async def grade(
        self,
        *,
        to_grade: ToGradeInput,
        rubric: list[Criterion],
        query: str | None = None,
        reference_submission: str | None = None,
    ) -> EvaluationReport | EnsembleEvaluationReport: ...


class Rubric:
    """An ordered list of weighted criteria.

    Parameters
    ----------
    rubric : list of Criterion
        Stored as the attribute ``rubric`` (AutoRubric's API reference, "Core Grading").

    Raises
    ------
    TypeError
        If an item is not a :class:`Criterion` (build from dicts with :meth:`from_dict`).
    """

    def __init__(self, rubric: list[Criterion]) -> None:
        criteria = list(rubric)
        for idx, criterion in enumerate(criteria):
            if not isinstance(criterion, Criterion):
                raise TypeError(
                    f"Rubric expects Criterion objects, got {type(criterion).__name__} at "
                    f"index {idx}; use Rubric.from_dict for plain data"
                )
        self.rubric: list[Criterion] = criteria

    def __len__(self) -> int:
        return len(self.rubric)

    def __iter__(self) -> Iterator[Criterion]:
        return iter(self.rubric)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Rubric):
            return NotImplemented
        return self.rubric == other.rubric

    __hash__ = None  # type: ignore[assignment]  # mutable container

    def __repr__(self) -> str:
        return f"Rubric({self.rubric!r})"

    async def grade(
        self,
        to_grade: ToGradeInput,
        grader: Grader,
        query: str | None = None,
        reference_submission: str | None = None,
    ) -> EvaluationReport | EnsembleEvaluationReport:
        """Grade ``to_grade`` against this rubric with ``grader``.

        Parameters
        ----------
        to_grade : str or ThinkingOutputDict
            The submission; a string may carry ``<thinking>``/``<output>`` markers.
        grader : Grader
            Required. Length penalty and normalisation are configured on the grader.
        query : str or None
            The prompt the submission answers.
        reference_submission : str or None
            An exemplar answer given to the judge for calibration.

        Raises
        ------
        TypeError
            If ``grader`` is None.
        """
        if grader is None:
            raise TypeError("Rubric.grade() requires a grader, e.g. grader=CriterionGrader(...)")
        return await grader.grade(
            to_grade=to_grade,
            rubric=self.rubric,
            query=query,
            reference_submission=reference_submission,
        )

    # ------------------------------------------------------------------ loading

    @staticmethod
    def validate_and_create_criteria(data: Any) -> list[Criterion]:
        """Build criteria from parsed rubric data.

        Accepted shapes: a flat list of criterion dicts; a list of sections
        (``{"name": ..., "criteria": [...]}``, mixed freely with criteria);
        ``{"sections": [...]}``; ``{"rubric": {"sections": [...]}}``; ``{"rubric": [...]}``.
        Sections are flattened in order. Details in :mod:`.rubric_loading`.

        Raises
        ------
        InputError
            With AutoRubric's messages: wrong container types, "No criteria found", a
            non-dict item, or an invalid criterion ("Invalid criterion at index i:" followed
            by one "field: message" line per validation error). Extensions: an unknown key
            (with the closest known field), more than ``MAX_CRITERIA`` (10,000) criteria,
            and the criterion's name beside its index.
        """
        return criteria_from_data(data)

    @classmethod
    def from_dict(cls, data: list[dict[str, Any]] | dict[str, Any]) -> Rubric:
        """Rubric from already-parsed data (see :meth:`validate_and_create_criteria`)."""
        return cls(cls.validate_and_create_criteria(data))

    @classmethod
    def from_json(cls, json_string: str) -> Rubric:
        """Rubric from a JSON string.

        Raises
        ------
        InputError
            "Failed to parse JSON string: ..." (a syntax error, or nesting deeper than
            ``MAX_DEPTH``), or a format error.
        """
        return cls.from_dict(parse_rubric_text(json_string, ".json", "string"))

    @classmethod
    def from_yaml(cls, yaml_string: str) -> Rubric:
        """Rubric from a YAML string (``yaml.safe_load`` semantics).

        Raises
        ------
        InputError
            "Failed to parse YAML string: ..." (a syntax error, nesting deeper than
            ``MAX_DEPTH``, too many values or criteria), or a format error.
        """
        return cls.from_dict(parse_rubric_text(yaml_string, ".yaml", "string"))

    @classmethod
    def from_file(cls, source: str | os.PathLike[str] | IO[str] | IO[bytes]) -> Rubric:
        """Rubric from a ``.yaml``/``.yml``/``.json`` file, chosen by extension.

        Parameters
        ----------
        source : str, os.PathLike or file object
            A path, or an open file whose ``name`` attribute carries the extension.

        Raises
        ------
        MissingFileError
            "File not found: <path>" (a ``FileNotFoundError``, as in AutoRubric, and an
            ``InputError``).
        InputError
            Unsupported extension, a file object without a usable name, an unreadable file
            (a directory, over ``MAX_FILE_BYTES``, not UTF-8), a parse error ("Failed to
            parse YAML file: ...", "Failed to parse JSON from file object: ..."), a format
            error, or an unsupported ``source`` type. Every message starts with the file's
            name.
        """
        if hasattr(source, "read"):
            return cls._from_file_object(source)  # type: ignore[arg-type]
        if not isinstance(source, (str, os.PathLike)):
            raise InputError(
                "Invalid source type: expected str (file path) or file-like object, "
                f"got {type(source).__name__}"
            )
        path = Path(source)
        if not path.exists():
            raise MissingFileError(f"File not found: {source}")
        extension = path.suffix.lower()
        if extension not in (".yaml", ".yml", ".json"):
            raise InputError(
                f"Unsupported file format '{extension}' for file: {source}\n{_SUPPORTED}"
            )
        text = read_input_text(path)
        try:
            return cls.from_dict(parse_rubric_text(text, extension, "file"))
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from exc

    @classmethod
    def _from_file_object(cls, handle: IO[str] | IO[bytes]) -> Rubric:
        name = getattr(handle, "name", "")
        extension = Path(name).suffix.lower() if isinstance(name, str) and name else ""
        if not extension:
            raise InputError(
                "Cannot determine file format from file object. "
                "File object must have a 'name' attribute with a file extension."
            )
        if extension not in (".yaml", ".yml", ".json"):
            raise InputError(
                f"Unsupported file format '{extension}' for file object: {name}\n{_SUPPORTED}"
            )
        try:
            try:
                content = handle.read(MAX_FILE_BYTES + 1)
            except TypeError:  # a minimal file-like object whose read() takes no size
                content = handle.read()
        except (OSError, ValueError) as exc:  # closed file, unreadable mode, bad encoding
            raise InputError(f"{name}: Failed to read from file object: {exc}") from exc
        if len(content) > MAX_FILE_BYTES:
            raise InputError(f"{name}: file too large (the limit is {MAX_FILE_BYTES // 2**20} MiB)")
        text = decode_utf8(content, name) if isinstance(content, bytes) else content
        if not isinstance(text, str):
            raise InputError(f"{name}: read() returned {type(content).__name__}, not text")
        try:
            return cls.from_dict(parse_rubric_text(text, extension, "from file object"))
        except InputError as exc:
            raise InputError(f"{name}: {exc}") from exc

    # ------------------------------------------------------------ serialisation

    def to_list(self) -> list[dict[str, Any]]:
        """Criteria as a flat list of plain dicts; ``Rubric.from_dict`` reads it back.

        ``None`` fields are omitted, as is ``scale_type`` of binary criteria (it has no
        meaning there); every value is JSON- and YAML-safe.
        """
        items: list[dict[str, Any]] = []
        for criterion in self.rubric:
            item = criterion.model_dump(mode="json", exclude_none=True)
            if criterion.is_binary:
                item.pop("scale_type", None)
            items.append(item)
        return items

    def to_dict(self) -> dict[str, Any]:
        """``{"rubric": self.to_list()}``; ``Rubric.from_dict`` reads it back."""
        return {"rubric": self.to_list()}

    # ------------------------------------------------------------------ scoring

    def compute_score(
        self,
        verdicts: Sequence[CriterionVerdict | str],
        normalize: bool = True,
        cannot_assess_strategy: CannotAssessStrategy = CannotAssessStrategy.SKIP,
        partial_credit: float = 0.5,
    ) -> float:
        """Score a list of verdicts (e.g. ground truth) against this rubric.

        Builds one :class:`CriterionReport` per criterion and delegates to
        :func:`autorubric_local.core.scoring.score_reports`, so it agrees with live grading.

        Parameters
        ----------
        verdicts : sequence, length len(self)
            Binary criteria: a ``CriterionVerdict`` or its string value ("MET", "UNMET",
            "CANNOT_ASSESS"). Multi-choice criteria: an option label (matched ignoring
            case and surrounding whitespace).
        normalize : bool, default True
            True: score in [0, 1]; False: raw weighted sum.
        cannot_assess_strategy : CannotAssessStrategy, default SKIP
        partial_credit : float in [0, 1], default 0.5

        Raises
        ------
        ValueError
            Wrong number of verdicts, an invalid binary verdict, a non-string verdict for
            a multi-choice criterion, or an unknown label.
        """
        if len(verdicts) != len(self.rubric):
            raise InputError(f"Expected {len(self.rubric)} verdicts, got {len(verdicts)}")
        reports = [
            _report_from_verdict(criterion, verdict)
            for criterion, verdict in zip(self.rubric, verdicts, strict=True)
        ]
        config = CannotAssessConfig(strategy=cannot_assess_strategy, partial_credit=partial_credit)
        return score_reports(reports, config, normalize)


def _report_from_verdict(criterion: Criterion, verdict: CriterionVerdict | str) -> CriterionReport:
    """A reason-less report carrying ``verdict`` for ``criterion``."""
    if criterion.is_multi_choice:
        if isinstance(verdict, CriterionVerdict) or not isinstance(verdict, str):
            raise InputError(
                f"Multi-choice criterion '{criterion.name}' requires a label string, "
                f"got {type(verdict).__name__}"
            )
        index = criterion.find_option_by_label(verdict)
        option = criterion.options[index]  # type: ignore[index]
        mc_verdict = MultiChoiceVerdict(
            selected_index=index, selected_label=option.label, value=option.value, na=option.na
        )
        return CriterionReport.from_criterion(criterion, multi_choice_verdict=mc_verdict, reason="")
    if not isinstance(verdict, CriterionVerdict):
        try:
            verdict = CriterionVerdict(verdict)
        except ValueError:
            raise InputError(
                f"Invalid binary verdict '{verdict}'. Must be 'MET', 'UNMET', or 'CANNOT_ASSESS'."
            ) from None
    return CriterionReport.from_criterion(criterion, verdict=verdict, reason="")
