"""The statistical judgment behind the verdict: what the data support, not one number chosen
among several that the data cannot tell apart.

* The estimators whose paired fold risks are not significantly worse than the best one's
  are *tied* (:func:`calibdash.core.uncertainty.paired_risks`, the summary's ``tied``
  column). The verdict's interval is the union of the tied estimators' 95% intervals, so it
  covers the true error whenever any tied estimator's interval does.
* The tied estimators *disagree* when some two of their intervals do not overlap; their
  estimates then span a range rather than agree on one figure.
* When the trivial estimator h = 0 ("perfectly calibrated") is tied with the best, the
  data do not show any miscalibration, and the interval starts at 0.

:func:`judge` computes these from an :class:`~calibdash.EvaluationResult`;
:func:`calibdash.display.verdict.verdict` words them for the reader, and the coverage study
(:func:`calibdash.lab.coverage_study`) measures how often the interval covers the truth.
Numbers here are calibration errors as fractions, like the result's; the words give
percentage points.
"""

from __future__ import annotations

from dataclasses import dataclass

from calibdash.core.uncertainty import REFERENCE

__all__ = ["BASELINE", "Baseline", "Judgment", "judge"]

#: The familiar binned estimator the verdict sets beside the best one.
BASELINE = "15-bins"


@dataclass(frozen=True)
class Baseline:
    """How the familiar binned estimator (:data:`BASELINE`) stands against the verdict.

    Attributes
    ----------
    estimate, low, high : float
        Its estimate and 95% interval.
    standing : {"tied", "outside", "overlaps"}
        ``"tied"``: the risk cannot tell it apart from the best estimator; ``"outside"``:
        measurably worse and its interval does not meet the verdict's; ``"overlaps"``:
        measurably worse, but its interval meets the verdict's.
    """

    estimate: float
    low: float
    high: float
    standing: str


@dataclass(frozen=True)
class Judgment:
    """What the data support about a result's calibration error (fractions, not points).

    Attributes
    ----------
    estimator : str
        The estimator of lowest validation risk.
    estimate : float
        Its estimate.
    low, high : float
        The verdict's 95% interval: the union of the tied estimators' intervals, from 0
        when h = 0 is tied.
    tied_estimators : tuple of str
        The estimators the risk cannot tell apart from the best, the best included (h = 0
        not among them; see :attr:`tied`).
    reference_tied : bool
        The trivial estimator h = 0 is tied with the best.
    disagree : bool
        Some two tied estimators' intervals do not overlap.
    range : tuple of float
        The lowest and highest estimate of the tied estimators.
    shows_miscalibration : bool or None
        The best estimator's risk is clearly below that of h = 0 (None when the result has
        no reference risks).
    reference_z : float or None
        By how many paired standard errors the best estimator's risk is below h = 0's (inf
        when the standard error is 0); None when h = 0 is tied or the result has no
        reference risks.
    baseline : Baseline or None
        The :data:`BASELINE` estimator's standing; None when the result has no such row or
        it is the best.
    """

    estimator: str
    estimate: float
    low: float
    high: float
    tied_estimators: tuple
    reference_tied: bool
    disagree: bool
    range: tuple
    shows_miscalibration: bool | None
    reference_z: float | None = None
    baseline: Baseline | None = None

    @property
    def tied(self):
        """The tied estimators and ``"h = 0"`` when it is tied (as :attr:`EvaluationResult.tied
        <calibdash.evaluation.result.EvaluationResult.tied>`)."""
        return list(self.tied_estimators) + ([REFERENCE] if self.reference_tied else [])

    @property
    def excludes_zero(self):
        """The interval lies above 0."""
        return self.low > 0


def judge(result):
    """The tied set, the union interval and the reference's and baseline's standing of a result.

    Parameters
    ----------
    result : EvaluationResult

    Returns
    -------
    Judgment
    """
    s = result.summary
    best = result.best
    # A result written before the paired comparison has no "tied" column: the best alone.
    tied = s[s["tied"]] if "tied" in s else s[s["estimator"] == best["estimator"]]
    ref = result.reference
    ref_tied = bool(ref is not None and ref["tied"])
    low = 0.0 if ref_tied else float(tied["ci_low"].min())
    high = float(tied["ci_high"].max())
    # The tied estimators disagree when some two of their intervals do not overlap.
    disagree = len(tied) > 1 and float(tied["ci_low"].max()) > float(tied["ci_high"].min())
    z = None
    if ref is not None and not ref_tied:
        z = ref["risk_diff"] / ref["risk_diff_se"] if ref["risk_diff_se"] > 0 else float("inf")
    baseline = None
    rows = s[s["estimator"] == BASELINE]
    if len(rows) and best["estimator"] != BASELINE:
        b = rows.iloc[0]
        b_est, b_lo, b_hi = float(b["estimate"]), float(b["ci_low"]), float(b["ci_high"])
        if bool(b.get("tied", False)):
            standing = "tied"
        elif b_hi < low or b_lo > high:
            standing = "outside"
        else:
            standing = "overlaps"
        baseline = Baseline(b_est, b_lo, b_hi, standing)
    return Judgment(
        estimator=str(best["estimator"]),
        estimate=float(best["estimate"]),
        low=low,
        high=high,
        tied_estimators=tuple(tied["estimator"]),
        reference_tied=ref_tied,
        disagree=bool(disagree),
        range=(float(tied["estimate"].min()), float(tied["estimate"].max())),
        shows_miscalibration=None if ref is None else not ref_tied,
        reference_z=z,
        baseline=baseline,
    )
