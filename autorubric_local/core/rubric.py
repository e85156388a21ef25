"""``Rubric``: a list of criteria, its loaders, serialisation and score computation.

Accepted formats and loader error messages follow the AutoRubric API reference ("Core
Grading", ``Rubric``) and AutoRubric's README (github.com/delip/autorubric),
"Loading Rubrics". Input errors are raised as
:class:`~autorubric_local.core.errors.InputError`, a ``ValueError``.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from autorubric_local.core.checks import MAX_FILE_BYTES, decode_utf8, read_input_text
from autorubric_local.core.errors import InputError, MissingFileError
from autorubric_local.core.penalty import (
    LengthPenalty,
    ToGradeInput,
    compute_length_penalty,
    normalize_to_grade_input,
)
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

__all__ = ["Grader", "Rubric", "SupportsGrade"]

_SUPPORTED = "Supported formats: .yaml, .yml, .json"


class SupportsGrade(Protocol):
    """Anything ``Rubric.grade`` can delegate to: :class:`Grader` subclasses and
    ``CriterionGrader``."""

    async def grade(
        self,
        to_grade: ToGradeInput,
        rubric: list[Criterion],
        query: str | None = None,
        reference_submission: str | None = None,
    ) -> EvaluationReport | EnsembleEvaluationReport: ...


def normalize_guidelines(guidelines: str | None) -> str | None:
    """Rubric guidelines as stored: the text verbatim, or None for none (blank text is none).

    Raises
    ------
    TypeError
        If ``guidelines`` is neither a str nor None.
    """
    if guidelines is not None and not isinstance(guidelines, str):
        raise TypeError(f"Rubric guidelines must be a str or None, got {type(guidelines).__name__}")
    return guidelines if guidelines and guidelines.strip() else None


def _takes_guidelines(method: Any) -> bool:
    """Whether ``method`` can be called with ``guidelines=`` (a parameter of that name that
    can be passed by keyword, or ``**kwargs``)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is p.VAR_KEYWORD or (p.name == "guidelines" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
               for p in parameters)


_WARNED = "_autorubric_local_guidelines_warned"


def _warn_ignored_guidelines(grader: object) -> None:
    """AutoRubric's warning "<Grader> ignores rubric guidelines", once per grader object."""
    if getattr(grader, _WARNED, False):
        return
    warnings.warn(f"{type(grader).__name__} ignores rubric guidelines", UserWarning, stacklevel=3)
    try:
        setattr(grader, _WARNED, True)
    except (AttributeError, TypeError):  # an object without attributes warns every time
        pass


class Grader:
    """AutoRubric's base class of a custom grader: subclass it, implement :meth:`judge` and
    :meth:`aggregate`, and :meth:`grade` runs them and applies the length penalty.

    ``CriterionGrader`` does not derive from it (it plans a whole batch of judgments at once)
    but takes the same ``length_penalty`` and ``normalize``.

    Parameters
    ----------
    length_penalty : LengthPenalty, optional
        Subtracted from the score :meth:`aggregate` returns (clamped at 0 when ``normalize``).
    normalize : bool, default True
        Passed to :meth:`aggregate`: scores in [0, 1]; False asks for raw weighted sums.
    """

    def __init__(self, *, length_penalty: LengthPenalty | None = None, normalize: bool = True) -> None:
        self.length_penalty = length_penalty
        self.normalize = normalize

    async def judge(
        self,
        to_grade: str,
        rubric: list[Criterion],
        query: str | None = None,
        reference_submission: str | None = None,
    ) -> Any:
        """The raw judge results of one submission (a subclass's own shape). A ``judge`` with a
        ``guidelines`` keyword (or ``**kwargs``) is passed the rubric's guidelines."""
        raise NotImplementedError(f"{type(self).__name__} must implement judge()")

    async def aggregate(self, judge_results: Any, *, normalize: bool = True) -> EvaluationReport | EnsembleEvaluationReport:
        """The report of ``judge_results``; ``normalize`` as in the constructor."""
        raise NotImplementedError(f"{type(self).__name__} must implement aggregate()")

    async def grade(
        self,
        to_grade: ToGradeInput,
        rubric: list[Criterion],
        query: str | None = None,
        reference_submission: str | None = None,
        *,
        guidelines: str | None = None,
    ) -> EvaluationReport | EnsembleEvaluationReport:
        """Judge, aggregate, then subtract the length penalty.

        ``to_grade`` given as a ``{"thinking", "output"}`` dict reaches :meth:`judge` as one
        string with ``<thinking>``/``<output>`` markers. ``guidelines`` (blank: none) go to
        :meth:`judge` when it takes them; otherwise it is called without them and a
        ``UserWarning`` "<Grader> ignores rubric guidelines" is given, once per grader. A
        report with ``score=None`` (a failed grade) is returned unchanged.
        """
        guidelines = normalize_guidelines(guidelines)
        if guidelines is not None and not _takes_guidelines(self.judge):
            _warn_ignored_guidelines(self)
            guidelines = None
        if isinstance(to_grade, str):
            text = to_grade
        else:
            marked = [f"<{key}>{to_grade[key]}</{key}>" for key in ("thinking", "output") if to_grade.get(key)]
            text = "\n".join(marked)
        extra = {} if guidelines is None else {"guidelines": guidelines}
        report = await self.aggregate(await self.judge(text, rubric, query, reference_submission, **extra),
                                      normalize=self.normalize)
        if self.length_penalty is None or report.score is None:
            return report
        score = report.score - compute_length_penalty(normalize_to_grade_input(to_grade), self.length_penalty)
        return report.model_copy(update={"score": max(0.0, score) if self.normalize else score})


class Rubric:
    """An ordered list of weighted criteria.

    Parameters
    ----------
    rubric : list of Criterion
        Stored as the attribute ``rubric`` (AutoRubric's API reference, "Core Grading").
    guidelines : str, optional
        AutoRubric's free text that applies to every criterion, stored as ``guidelines``
        (blank text: None). :meth:`grade` passes them to a grader whose ``grade`` takes
        ``guidelines=``; ``CriterionGrader`` does not yet (it warns "ignores rubric guidelines",
        as AutoRubric does for such a grader). Not written by :meth:`to_dict` nor read by the
        loaders yet.

    Raises
    ------
    TypeError
        If an item is not a :class:`Criterion` (build from dicts with :meth:`from_dict`).
    """

    guidelines: str | None = None  # a Rubric pickled before guidelines existed has none

    def __init__(self, rubric: list[Criterion], *, guidelines: str | None = None) -> None:
        self.guidelines = normalize_guidelines(guidelines)
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
        return self.rubric == other.rubric and self.guidelines == other.guidelines

    __hash__ = None  # type: ignore[assignment]  # mutable container

    def __repr__(self) -> str:
        return f"Rubric({self.rubric!r})"

    async def grade(
        self,
        to_grade: ToGradeInput,
        grader: SupportsGrade,
        query: str | None = None,
        reference_submission: str | None = None,
    ) -> EvaluationReport | EnsembleEvaluationReport:
        """Grade ``to_grade`` against this rubric with ``grader``.

        Parameters
        ----------
        to_grade : str or ThinkingOutputDict
            The submission; a string may carry ``<thinking>``/``<output>`` markers.
        grader : Grader or CriterionGrader
            Required; given the rubric's ``guidelines`` when its ``grade`` takes them. Length penalty and normalisation are configured on the grader.
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
        extra: dict[str, Any] = {}
        if self.guidelines is not None:
            if _takes_guidelines(grader.grade):
                extra["guidelines"] = self.guidelines
            else:
                _warn_ignored_guidelines(grader)
        return await grader.grade(
            to_grade=to_grade,
            rubric=self.rubric,
            query=query,
            reference_submission=reference_submission,
            **extra,
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
