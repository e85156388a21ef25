"""Rating indeterminacy: validate judges when more than one rating of an item can be right.

Implements the framework of the blog post on
Guerdan et al., "Validating LLM-as-a-Judge Systems under Rating Indeterminacy", NeurIPS 2025):

- :mod:`.model`: response sets ``Q``, ``O = F theta``, ``Omega = Lambda theta``, ``F`` estimated
  from paired ratings, human response sets from forced-choice labels through ``beta``;
- :mod:`.elicitation`: a judge's forced-choice and response-set ratings read off its label
  probabilities (threshold), or from a Maybe option (recommendation 1);
- :mod:`.agreement`: hit rate, Cohen's kappa, KL (human -> judge), JSD, multi-label MSE;
- :mod:`.downstream`: decision consistency ``C^tau``, estimation bias ``B^tau``, rankings, regret;
- :mod:`.analysis`, :mod:`.report`: per criterion and over criteria, across a beta grid;
- :mod:`.runs`, :mod:`.api`: graded runs in, reports out and into SQLite; :mod:`.plots`;
- :mod:`.synthetic`: ratings drawn from known ``theta`` and ``F``.

Example
-------
>>> report, run_ids = analyse_runs(["q1.sqlite"], ["q1-smollm2", "q1-gemma3"])   # doctest: +SKIP
>>> print(report.summary())                                                      # doctest: +SKIP
"""

from autorubric_local.indeterminacy.agreement import (
    cohen_kappa,
    hit_rate,
    js_divergence,
    kl_divergence,
    multilabel_mse,
)
from autorubric_local.indeterminacy.analysis import (
    AGREEMENT_METRICS,
    DEFAULT_BETAS,
    DEFAULT_TAUS,
    AnalysisSettings,
    CriterionAnalysis,
    CriterionRatings,
    analyse_criterion,
)
from autorubric_local.indeterminacy.api import (
    analyse_ratings,
    analyse_runs,
    load_report,
    load_sources,
    save_report,
)
from autorubric_local.indeterminacy.downstream import (
    decision_consistency,
    estimation_bias,
    rank_judges,
    regret,
)
from autorubric_local.indeterminacy.elicitation import (
    ElicitationSettings,
    JudgeRatings,
    elicit,
    elicit_maybe,
    maybe_criterion,
    maybe_rubric,
)
from autorubric_local.indeterminacy.model import (
    Translation,
    beta_translation,
    estimate_beta,
    estimate_reverse_translation,
    estimate_translation,
    estimate_translation_per_item,
    forced_choice_distribution,
    membership_matrix,
    multi_label_vector,
    response_set_index,
    response_sets,
)
from autorubric_local.indeterminacy.report import (
    IndeterminacyReport,
    IndeterminacySettings,
)
from autorubric_local.indeterminacy.runs import RunSource, collect_ratings

__all__ = [
    "AGREEMENT_METRICS",
    "DEFAULT_BETAS",
    "DEFAULT_TAUS",
    "AnalysisSettings",
    "CriterionAnalysis",
    "CriterionRatings",
    "ElicitationSettings",
    "IndeterminacyReport",
    "IndeterminacySettings",
    "JudgeRatings",
    "RunSource",
    "Translation",
    "analyse_criterion",
    "analyse_ratings",
    "analyse_runs",
    "beta_translation",
    "cohen_kappa",
    "collect_ratings",
    "decision_consistency",
    "elicit",
    "elicit_maybe",
    "estimate_beta",
    "estimate_reverse_translation",
    "estimate_translation",
    "estimate_translation_per_item",
    "estimation_bias",
    "forced_choice_distribution",
    "hit_rate",
    "js_divergence",
    "kl_divergence",
    "load_report",
    "load_sources",
    "maybe_criterion",
    "maybe_rubric",
    "membership_matrix",
    "multi_label_vector",
    "multilabel_mse",
    "rank_judges",
    "regret",
    "response_set_index",
    "response_sets",
    "save_report",
]
