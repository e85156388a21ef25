"""Decision-model judges: AutoRubric's ``DecisionModelConfig`` and a judge that speaks the
System One protocol.

A decision model writes no text. It takes a *state* (the material to judge) and a set of typed
questions, and answers each question with a probability distribution over that question's
outcomes (AutoRubric 1.6.1, ``autorubric.decision``; the protocol is TypeSafe's System One,
``POST {api_base}/v1/systemone``, https://docs.typesafe.ai/go/system-one). Three question
types are used here:

- ``noul``: yes/no; the answer is P(yes) (``{"type": "noul", "noul": p}``).
- ``choice``: one of named labels; the answer is the chosen label and a probability per label.
- ``score``: an ordered scale of levels 0..K-1; the answer is the expected level and a
  probability per level.

So a decision model grades an item with **one request for the whole rubric**: every criterion
becomes one question, keyed ``c0``, ``c1``, ... by its index, about one shared state. Each
answer becomes the criterion's verdict and its label probabilities; there is no explanation.

The transport is TypeSafe's SDK (``pip install typesafe-sdk``), imported only when a
:class:`DecisionModelJudge` is built: :class:`DecisionModelConfig`, the questions
(:func:`decision_questions`, plain dicts of the protocol's wire form) and the reading of the
answers (:func:`decision_outcome`) need nothing but this package.

Inside ``CriterionGrader`` (a sole judge, an ensemble of decision models, a cascade's first
stage) a decision model grades through :mod:`autorubric_local.graders.decision_stage`;
:meth:`DecisionModelJudge.grade_item` grades one item on its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, get_args

from autorubric_local.core.errors import InputError
from autorubric_local.core.grading_errors import classify_grading_error
from autorubric_local.core.types import Criterion, CriterionVerdict
from autorubric_local.engine.response_cache import ResponseCache, cache_key

__all__ = [
    "BinaryFraming",
    "DecisionItemResult",
    "DecisionModelConfig",
    "DecisionModelJudge",
    "DecisionOutcome",
    "OrdinalFraming",
    "decision_outcome",
    "decision_questions",
    "decision_state",
    "question_id",
    "question_kind",
    "selection_confidence",
]

BinaryFraming = Literal["noul", "noul_framed", "choice"]
"""How a binary criterion is asked (see :class:`DecisionModelConfig`)."""

OrdinalFraming = Literal["choice", "score"]
"""How an ordinal multi-choice criterion is asked (see :class:`DecisionModelConfig`)."""

SDK_INSTALL = "pip install typesafe-sdk"

_SCORE_LEVELS = (2, 10)
"""Fewest and most levels a ``score`` question is asked with here."""


def _real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass(frozen=True)
class DecisionModelConfig:
    """A decision-model judge (AutoRubric 1.6.1's ``DecisionModelConfig``, same fields and
    defaults; every field after ``model`` is keyword-only).

    Parameters
    ----------
    model : str
        Model name sent with each request, e.g. ``"jev-latest"`` or a self-hosted model's id.
    api_key : str or None, default None
        Bearer token. None: the SDK reads ``TYPESAFE_API_KEY``. Never shown in ``repr``.
    api_base : str or None, default None
        Base URL of a System One endpoint (requests go to ``{api_base}/v1/systemone``); must be
        ``http://`` or ``https://`` with no query or fragment. None: the SDK reads
        ``TYPESAFE_BASE_URL``, else TypeSafe's API.
    timeout : float > 0, default 60.0
        Seconds per HTTP operation.
    max_retries : int >= 1, default 3
        Attempts per request, the first included (the SDK retries 408, 429, 5xx and connection
        failures with backoff, within ``max_retries * (timeout + 5)`` seconds in all, 5 s being
        the SDK's longest backoff wait).
    max_parallel_requests : int >= 1 or None, default None
        Requests in flight at once. :meth:`DecisionModelJudge.grade_item` sends one at a time.
    cache_enabled : bool, default False
        AutoRubric's on-disk response cache: each answered request is kept (the SQLite
        :class:`~autorubric_local.engine.response_cache.ResponseCache` LLM judges use) and a
        request sent before is answered from it, never reaching the endpoint (the answers
        again, their ``input_tokens`` repeated, cost 0). Keyed by the judge's id, ``model``,
        ``api_base``, the state and the questions; a failed request is not kept.
    cache_dir : str or Path, default ".autorubric_cache"
        Where the cache lives (created if missing).
    cache_ttl : int > 0 or None, default None
        Seconds an entry is served; None: until cleared.
    extra_headers : dict of str to str, default {}
        Headers sent with every request (copied at construction).
    binary_framing : {"noul_framed", "noul", "choice"}, default "noul_framed"
        How a binary criterion is asked: a yes/no question with the requirement in a fixed
        sentence and the two outcomes described (``"noul_framed"``), the bare requirement as a
        yes/no question (``"noul"``), or a choice among ``MET``, ``UNMET`` and
        ``CANNOT_ASSESS`` (``"choice"``, the only binary framing that can abstain).
    ordinal_framing : {"choice", "score"}, default "choice"
        How an ordinal multi-choice criterion is asked: a choice over its option labels (NA
        included) or a score over its non-NA options in order (2 to 10 of them; the expected
        level is rounded, half to even, to the level selected; cannot abstain). Nominal
        criteria are always a choice.
    decision_threshold : float in [0, 1], default 0.5
        Cut on P(MET) for the yes/no framings: above it MET, below it UNMET, exactly at it the
        worst verdict for the weight's sign (UNMET for a positive weight, MET for a negative one).
    input_cost_per_token : float >= 0 or None, default None
        USD per input token; None: cost unknown.

    Raises
    ------
    InputError
        A field out of its range or not one of its values; the message names the field.
    """

    model: str
    _: KW_ONLY
    api_key: str | None = field(default=None, repr=False)
    api_base: str | None = None
    timeout: float = 60.0
    max_retries: int = 3
    max_parallel_requests: int | None = None
    cache_enabled: bool = False
    cache_dir: str | Path = ".autorubric_cache"
    cache_ttl: int | None = None
    extra_headers: dict[str, str] = field(default_factory=dict)
    binary_framing: BinaryFraming = "noul_framed"
    ordinal_framing: OrdinalFraming = "choice"
    decision_threshold: float = 0.5
    input_cost_per_token: float | None = None

    def __post_init__(self) -> None:
        def refuse(name: str, wanted: str) -> InputError:
            shown = "<not shown>" if name == "api_key" else repr(getattr(self, name))
            return InputError(f"DecisionModelConfig.{name} must be {wanted}, got {shown}")

        if not isinstance(self.model, str) or not self.model.strip():
            raise refuse("model", "a non-empty string")
        if self.api_key is not None and (not isinstance(self.api_key, str) or not self.api_key.strip()):
            raise refuse("api_key", "None or a non-empty string")
        if self.api_base is not None:
            base = self.api_base
            if (not isinstance(base, str) or not base.startswith(("http://", "https://"))
                    or any(c.isspace() for c in base) or "?" in base or "#" in base):
                raise refuse("api_base", "None or an http(s) URL without whitespace, query or fragment")
        if not (_real(self.timeout) and self.timeout > 0):
            raise refuse("timeout", "a positive finite number of seconds")
        if not _positive_int(self.max_retries):
            raise refuse("max_retries", "an integer >= 1 (attempts, the first included)")
        if self.max_parallel_requests is not None and not _positive_int(self.max_parallel_requests):
            raise refuse("max_parallel_requests", "None or an integer >= 1")
        if not isinstance(self.cache_enabled, bool):
            raise refuse("cache_enabled", "True or False")
        if not isinstance(self.cache_dir, (str, Path)):
            raise refuse("cache_dir", "a path")
        if self.cache_ttl is not None and not (_real(self.cache_ttl) and self.cache_ttl > 0):
            raise refuse("cache_ttl", "None or a positive number of seconds")
        headers = self.extra_headers
        if not isinstance(headers, Mapping) or not all(
                isinstance(k, str) and k and isinstance(v, str) for k, v in headers.items()):
            raise InputError("DecisionModelConfig.extra_headers must map non-empty header names (str) to "
                             "values (str); values are not shown")
        object.__setattr__(self, "extra_headers", dict(headers))
        if self.binary_framing not in get_args(BinaryFraming):
            raise refuse("binary_framing", f"one of {get_args(BinaryFraming)}")
        if self.ordinal_framing not in get_args(OrdinalFraming):
            raise refuse("ordinal_framing", f"one of {get_args(OrdinalFraming)}")
        if not (_real(self.decision_threshold) and 0 <= self.decision_threshold <= 1):
            raise refuse("decision_threshold", "a number in [0, 1]")
        price = self.input_cost_per_token
        if price is not None and not (_real(price) and price >= 0):
            raise refuse("input_cost_per_token", "None or a finite number >= 0 (USD per token)")


# ----------------------------------------------------------------------------- the request


def question_id(criterion_index: int) -> str:
    """The id a criterion's question and answer go under: ``"c<index>"``."""
    return f"c{criterion_index}"


def decision_state(submission: str, query: str | None = None, reference: str | None = None) -> dict[str, str]:
    """The state every question of an item is asked about: a JSON object with ``submission``,
    and ``prompt`` / ``reference_submission`` when given."""
    state = {"submission": submission}
    if query is not None:
        state["prompt"] = query
    if reference is not None:
        state["reference_submission"] = reference
    return state


_BINARY_LABELS = (CriterionVerdict.MET.value, CriterionVerdict.UNMET.value, CriterionVerdict.CANNOT_ASSESS.value)


def _binary_question(criterion: Criterion, framing: BinaryFraming) -> dict[str, Any]:
    if framing == "noul":
        return {"type": "noul", "instructions": criterion.requirement}
    asked = f"Judge the submission against this criterion: {criterion.requirement}"
    met = "The submission does what the criterion describes."
    unmet = "The submission does not do what the criterion describes."
    if framing == "noul_framed":
        return {"type": "noul", "instructions": asked, "criteria": {"true": met, "false": unmet}}
    return {"type": "choice", "instructions": asked, "criteria": {
        "MET": met, "UNMET": unmet,
        "CANNOT_ASSESS": "The submission does not give enough evidence to tell either way."}}


def question_kind(criterion: Criterion, config: DecisionModelConfig) -> str:
    """The question type ``criterion`` is asked as: ``"noul"`` (a binary criterion in a yes/no
    framing), ``"score"`` (an ordinal criterion under ``ordinal_framing="score"``) or ``"choice"``."""
    if criterion.options is None:
        return "choice" if config.binary_framing == "choice" else "noul"
    if criterion.scale_type == "ordinal" and config.ordinal_framing == "score":
        return "score"
    return "choice"


def _levels(criterion: Criterion) -> list[int]:
    """Option indices of a score question's levels 0..K-1: the non-NA options, in order."""
    levels = [i for i, option in enumerate(criterion.options or ()) if not option.na]
    low, high = _SCORE_LEVELS
    if not low <= len(levels) <= high:
        raise ValueError(f"a score question needs {low} to {high} non-NA options, this criterion has {len(levels)}")
    return levels


def _question(criterion: Criterion, config: DecisionModelConfig) -> dict[str, Any]:
    options = criterion.options
    if options is None:
        return _binary_question(criterion, config.binary_framing)
    if question_kind(criterion, config) == "score":
        return {"type": "score", "instructions": criterion.requirement,
                "criteria": [options[i].label for i in _levels(criterion)]}
    return {"type": "choice", "instructions": criterion.requirement,
            "criteria": {option.label: None for option in options}}


def decision_questions(criteria: Sequence[Criterion], config: DecisionModelConfig) -> dict[str, dict[str, Any]]:
    """Every criterion as one System One question, keyed by :func:`question_id`, in rubric order.

    Questions are the protocol's wire form (dicts): a binary criterion a ``noul`` (or a
    ``choice`` of ``MET`` / ``UNMET`` / ``CANNOT_ASSESS``), a multi-choice criterion a
    ``choice`` over its option labels, or a ``score`` over its non-NA options (ordinal, with
    ``ordinal_framing="score"``).

    Raises
    ------
    ValueError
        A criterion its framing cannot express (a score over fewer than 2 or more than 10
        levels); the message names the criterion.
    """
    questions = {}
    for index, criterion in enumerate(criteria):
        try:
            questions[question_id(index)] = _question(criterion, config)
        except ValueError as exc:
            raise ValueError(f"criterion {question_id(index)} ({criterion.name or criterion.requirement[:40]!r}) "
                             f"cannot be asked: {exc}") from exc
    return questions


# ----------------------------------------------------------------------------- the answers


def selection_confidence(p_selected: float, n_outcomes: int) -> float:
    """Support for the outcome selected: ``clamp((K p - 1) / (K - 1), 0, 1)`` for ``K`` outcomes
    offered, 1.0 at certainty and 0.0 at chance (1/K) or below (AutoRubric 1.6.1's
    ``selection_confidence``, TypeSafe's reported confidence for a choice)."""
    if not (isinstance(n_outcomes, int) and n_outcomes >= 2):
        raise ValueError(f"n_outcomes must be an integer >= 2, got {n_outcomes!r}")
    return min(1.0, max(0.0, (n_outcomes * p_selected - 1) / (n_outcomes - 1)))


@dataclass(frozen=True)
class DecisionOutcome:
    """One criterion's answer from a decision model.

    Attributes
    ----------
    verdict : CriterionVerdict or None
        A binary criterion's verdict; None for a multi-choice criterion or on error.
    selected_index : int or None
        A multi-choice criterion's selected option (its index in ``criterion.options``).
    probabilities : dict of str to float
        The answer's distribution, the endpoint's own values (not renormalised): a binary
        criterion's by verdict (``"MET"``, ``"UNMET"``, and ``"CANNOT_ASSESS"`` for a choice),
        a multi-choice criterion's by option index as a string (``"0"``, ...; a score question
        has no NA key). Empty on error.
    confidence : float in [0, 1] or None
        :func:`selection_confidence` of the outcome selected; None on error.
    error : str or None
        ``"<category>: <message>"`` (:data:`~autorubric_local.core.grading_errors.ErrorCategory`)
        when there is no usable answer; never a verdict then.
    """

    verdict: CriterionVerdict | None = None
    selected_index: int | None = None
    probabilities: dict[str, float] = field(default_factory=dict)
    confidence: float | None = None
    error: str | None = None


def _probability(value: object, what: str) -> float:
    if _real(value) and 0 <= value <= 1:  # type: ignore[operator]
        return float(value)  # type: ignore[arg-type]
    raise ValueError(f"{what} is {value!r}, not a number in [0, 1]")


def _distribution(answer: Mapping[str, Any], keys: Sequence[str]) -> dict[str, float]:
    given = answer.get("probabilities")
    if not isinstance(given, Mapping) or {str(k) for k in given} != set(keys):
        shown = sorted(map(str, given)) if isinstance(given, Mapping) else given
        raise ValueError(f"its probabilities must cover exactly {list(keys)}, got {shown!r}")
    by_key = {str(k): v for k, v in given.items()}
    return {key: _probability(by_key[key], f"the probability of {key!r}") for key in keys}


def decision_outcome(criterion: Criterion, answer: Mapping[str, Any] | None,
                     config: DecisionModelConfig) -> DecisionOutcome:
    """A criterion's :class:`DecisionOutcome` from its answer (the answer's wire form).

    - ``noul``: ``p = P(yes) = P(MET)``; MET above ``decision_threshold``, UNMET below, at it the
      worst verdict for the weight's sign; probabilities ``{"MET": p, "UNMET": 1 - p}``.
    - ``choice``: the chosen label is the verdict (binary) or the option of that label.
    - ``score``: level ``round(score)`` (half to even) clamped to the scale, mapped to its option.

    An answer missing, of another type than asked, choosing an outcome not offered, or with
    malformed probabilities gives a ``"parse: ..."`` error outcome, never a verdict.
    """
    try:
        return _outcome(criterion, answer, config)
    except ValueError as exc:
        return DecisionOutcome(error=f"parse: unusable decision-model answer: {exc}")


def _outcome(criterion: Criterion, answer: Mapping[str, Any] | None, config: DecisionModelConfig) -> DecisionOutcome:
    if answer is None:
        raise ValueError("no answer came back for this criterion")
    kind = question_kind(criterion, config)
    if answer.get("type") != kind:
        raise ValueError(f"a {kind} answer was asked for, a {answer.get('type')!r} answer came back")
    options = criterion.options
    if options is None:
        if kind == "noul":
            p = _probability(answer.get("noul"), "P(yes)")
            threshold = config.decision_threshold
            if p != threshold:
                verdict = CriterionVerdict.MET if p > threshold else CriterionVerdict.UNMET
            else:
                verdict = CriterionVerdict.UNMET if criterion.weight >= 0 else CriterionVerdict.MET
            probabilities = {"MET": p, "UNMET": 1.0 - p}
        else:
            probabilities = _distribution(answer, _BINARY_LABELS)
            if answer.get("choice") not in _BINARY_LABELS:
                raise ValueError(f"its choice {answer.get('choice')!r} is none of {list(_BINARY_LABELS)}")
            verdict = CriterionVerdict(answer["choice"])
        return DecisionOutcome(verdict=verdict, probabilities=probabilities,
                               confidence=selection_confidence(probabilities[verdict.value], len(probabilities)))
    if kind == "score":
        levels = _levels(criterion)
        by_level = _distribution(answer, [str(level) for level in range(len(levels))])
        expected = answer.get("score")
        if not _real(expected):
            raise ValueError(f"its expected score is {expected!r}, not a finite number")
        selected = levels[min(max(round(expected), 0), len(levels) - 1)]
        probabilities = {str(levels[int(level)]): p for level, p in by_level.items()}
    else:
        labels = [option.label for option in options]
        by_label = _distribution(answer, labels)
        if answer.get("choice") not in labels:
            raise ValueError(f"its choice {answer.get('choice')!r} is none of the option labels")
        selected = labels.index(answer["choice"])
        probabilities = {str(i): by_label[label] for i, label in enumerate(labels)}
    return DecisionOutcome(selected_index=selected, probabilities=probabilities,
                           confidence=selection_confidence(probabilities[str(selected)], len(probabilities)))


# ----------------------------------------------------------------------------- the judge


@dataclass(frozen=True)
class DecisionItemResult:
    """One item graded by a decision model: one :class:`DecisionOutcome` per criterion, in
    rubric order, with the request's ``model`` (as the endpoint names it; None when no answer
    came back), ``input_tokens`` (None when not reported) and ``cost_usd`` (None when unknown)."""

    outcomes: tuple[DecisionOutcome, ...]
    model: str | None = None
    input_tokens: int | None = None
    cost_usd: float | None = None


def _import_sdk() -> ModuleType:
    try:
        import typesafe_sdk
    except ImportError as exc:
        raise InputError(f"a decision-model judge needs TypeSafe's SDK, which is not installed: {SDK_INSTALL}") from exc
    return typesafe_sdk


class DecisionModelJudge:
    """A judge over a System One endpoint, through the SDK's client (built here, once).

    Parameters
    ----------
    config : DecisionModelConfig
    cache_namespace : str, optional
        Part of every response-cache key (a grader passes the judge's id, so judges sending the
        same request keep their own answers, as in AutoRubric).

    Raises
    ------
    InputError
        ``config`` is not a :class:`DecisionModelConfig`; the SDK is not installed (the message
        says ``pip install typesafe-sdk``); the SDK refuses the settings (no API key given or in
        ``TYPESAFE_API_KEY``, a malformed key; the key is never shown).
    """

    def __init__(self, config: DecisionModelConfig, *, cache_namespace: str | None = None) -> None:
        if not isinstance(config, DecisionModelConfig):
            raise InputError(f"DecisionModelJudge: config must be a DecisionModelConfig, got {type(config).__name__}")
        self.config = config
        self.cache_namespace = cache_namespace
        self._cache = ResponseCache(config.cache_dir, config.cache_ttl) if config.cache_enabled else None
        self._sdk = _import_sdk()
        # The SDK counts retries after the first attempt, within a total budget (30 s by default,
        # less than one default timeout): give every attempt its timeout and a longest backoff.
        longest_wait = self._sdk.RetryPolicy().backoff_max
        policy = self._sdk.RetryPolicy(max_retries=config.max_retries - 1,
                                       timeout=config.max_retries * (config.timeout + longest_wait))
        try:
            self._client = self._sdk.TypeSafeClient(
                api_key=config.api_key, base_url=config.api_base, model=config.model, retry=policy,
                timeout=config.timeout, headers=config.extra_headers or None)
        except self._sdk.TypeSafeError as exc:
            raise InputError(f"decision model {config.model!r}: the SDK refused the settings: {exc}") from None

    def close(self) -> None:
        """Close the SDK client's connections."""
        self._client.close()

    def __enter__(self) -> DecisionModelJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def grade_item(self, criteria: Sequence[Criterion], submission: str, *, query: str | None = None,
                   reference: str | None = None) -> DecisionItemResult:
        """Grade one item with one System One request for the whole rubric.

        Parameters
        ----------
        criteria : sequence of Criterion, length n_criteria >= 1
        submission : str
        query, reference : str or None
            The task prompt and a reference submission, sent in the state when given.

        Returns
        -------
        DecisionItemResult
            ``outcomes`` of length n_criteria, in rubric order. A failed request (after the
            SDK's retries) gives every criterion the request's error, prefixed by its category
            (``classify_grading_error``: ``"infrastructure: ..."``, or ``"parse: ..."`` for a
            response that did not validate, a 400 or a 422); an unusable answer fails only its
            own criterion (:func:`decision_outcome`). Answered from the response cache
            (``cache_enabled``): the stored answers read again, ``cost_usd`` 0.0.

        Raises
        ------
        InputError
            ``criteria`` is empty, or a criterion cannot be asked in its framing.
        """
        if not criteria:
            raise InputError("DecisionModelJudge.grade_item: criteria must not be empty")
        try:
            questions = decision_questions(criteria, self.config)
        except ValueError as exc:
            raise InputError(f"DecisionModelConfig.ordinal_framing={self.config.ordinal_framing!r}: {exc}") from None
        state = decision_state(submission, query, reference)
        key = None if self._cache is None else cache_key(
            kind="systemone", namespace=self.cache_namespace, model=self.config.model, api_base=self.config.api_base,
            state=state, questions=questions)
        cached = None if key is None else self._cache.get(key)  # type: ignore[union-attr] (key is set with the cache)
        if cached is not None:
            return self._result(criteria, cached["answers"], cached["model"], cached["input_tokens"], cost=0.0)
        try:
            response = self._client.system_one(state=state, questions=questions, model=self.config.model)
        except self._sdk.TypeSafeError as exc:
            error = f"{classify_grading_error(exc)}: decision model {self.config.model!r}: {exc}"
            return DecisionItemResult(outcomes=tuple(DecisionOutcome(error=error) for _ in criteria))
        answers = {qid: answer.model_dump(mode="json") for qid, answer in response.answers.items()}
        tokens = response.usage.input_tokens
        price = self.config.input_cost_per_token
        result = self._result(criteria, answers, response.model, tokens,
                              cost=None if tokens is None or price is None else tokens * price)
        if self._cache is not None and key is not None:
            self._cache.put(key, {"answers": answers, "model": response.model, "input_tokens": tokens})
        return result

    def _result(self, criteria: Sequence[Criterion], answers: Mapping[str, Any], model: str | None,
                tokens: int | None, cost: float | None) -> DecisionItemResult:
        """The item's result from the answers by question id (as sent, or from the cache)."""
        outcomes = tuple(decision_outcome(criterion, answers.get(question_id(i)), self.config)
                         for i, criterion in enumerate(criteria))
        return DecisionItemResult(outcomes=outcomes, model=model, input_tokens=tokens, cost_usd=cost)
