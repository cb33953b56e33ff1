"""Validating a clinical risk model (binary outcome): the calibration hierarchy of Van Calster
et al. (2019), discrimination, net benefit, sample-size adequacy (Riley et al. 2021) and
subgroups, with the reference numbers of R (``rms::val.prob``, ``glm``, ``loess``).

- :mod:`~calibdash.clinical.validation`: :func:`validate_risk_model` and its result;
- :mod:`~calibdash.clinical.measures`: O:E, Brier, AUROC (DeLong), Spiegelhalter, the loess
  summaries, net benefit;
- :mod:`~calibdash.clinical.logistic`: calibration-in-the-large, the slope, heterogeneity tests;
- :mod:`~calibdash.clinical.loess`: R's loess (through scikit-misc);
- :mod:`~calibdash.clinical.sample_size`: Riley's four sample-size criteria, to plan a study
  (:func:`~calibdash.clinical.sample_size.plan_sample_size`) or check one;
- :mod:`~calibdash.clinical.meta`: the random-effects meta-analysis of per-centre results
  (REML, Hartung-Knapp, prediction interval; R's ``metafor``);
- :mod:`~calibdash.clinical.verdicts`: the judgments (one status and sentence per level).
"""

from calibdash.clinical.validation import METRICS, RiskValidation, validate_risk_model

__all__ = ["METRICS", "RiskValidation", "validate_risk_model"]
