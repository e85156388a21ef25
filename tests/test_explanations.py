"""Copy rate of explanations against hand-counted cases."""

from __future__ import annotations

import pytest

from autorubric_local.metrics.explanations import copy_rate, mean_copy_rate, words

SUBMISSION = "The anode releases lithium ions, which travel through the electrolyte to the cathode."


def test_words_drop_punctuation_and_case() -> None:
    assert words("It's the Anode, isn't it?") == ["it's", "the", "anode", "isn't", "it"]


def test_an_explanation_that_pastes_the_submission_copies_everything() -> None:
    assert copy_rate(SUBMISSION.upper(), SUBMISSION) == 1.0


def test_own_words_copy_nothing() -> None:
    assert copy_rate("The answer names both electrodes but never explains ion flow.", SUBMISSION) == 0.0


def test_partial_copy_counts_only_runs_of_min_words() -> None:
    # 10 words; "lithium ions which travel through the electrolyte" is a 7-word run from the submission.
    explanation = "It says lithium ions, which travel through the electrolyte. Fine."
    assert len(words(explanation)) == 10
    assert copy_rate(explanation, SUBMISSION) == pytest.approx(7 / 10)
    # With runs of at least 8 words required, the 7-word run does not count.
    assert copy_rate(explanation, SUBMISSION, min_words=8) == 0.0
    # Shorter shared runs ("the anode", 2 words) are ordinary vocabulary, not copying.
    assert copy_rate("Mentions the anode only.", SUBMISSION) == 0.0


def test_empty_explanations_have_no_rate_and_are_left_out_of_the_mean() -> None:
    assert copy_rate("", SUBMISSION) is None
    assert copy_rate("...", SUBMISSION) is None
    assert mean_copy_rate([("", SUBMISSION), (SUBMISSION, SUBMISSION), ("No copy at all here.", SUBMISSION)]) == 0.5
    assert mean_copy_rate([]) is None


def test_min_words_must_be_positive() -> None:
    with pytest.raises(ValueError, match="min_words"):
        copy_rate("a", "a", min_words=0)
