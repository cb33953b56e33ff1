"""A plain-language verdict on an evaluation, for readers who are not specialists.

The verdict reports what the data support, not one number chosen among several that the
data cannot tell apart. What they support is judged in :mod:`calibdash.evaluation.verdict`
(:func:`~calibdash.evaluation.verdict.judge`): the estimators the risk cannot tell apart
from the best (*tied*), the union of their 95% intervals, whether they disagree, and
whether h = 0 ("perfectly calibrated") is among them. This module words that judgment:

* the headline gives the best estimator's figure and the union interval;
* when the tied estimators' intervals do not all overlap, the headline says so and gives
  the range of their estimates ("between 6 and 13 points: these estimators fit the data
  equally well and disagree");
* when h = 0 is tied with the best, the data do not show any miscalibration, and the
  interval starts at 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from calibdash.display.reliability import FIFTEEN_BIN_NAMES
from calibdash.evaluation.verdict import judge
from calibdash.formatting import p_statement

_NOTION_WORDS = {
    "top-label": "how far the model's confidence in its predicted class is from how often that class is right",
    "canonical": "how far the whole predicted probability vector is from the true class frequencies",
    "classwise": "how far each class's predicted probability is from how often that class occurs",
}


@dataclass
class Verdict:
    """The verdict's parts; :meth:`markdown` joins them for display.

    Attributes
    ----------
    estimator : str
        The estimator of lowest validation risk.
    notion : str
    estimate_pp : float
        Its estimate, in percentage points.
    low_pp, high_pp : float
        The verdict's 95% interval in percentage points: the union of the intervals of
        the tied estimators (from 0 when h = 0 is tied).
    excludes_zero : bool
        The interval lies above 0.
    tied : list of str
        The estimators the risk cannot tell apart from the best (and "h = 0" if tied).
    disagree : bool
        Tied estimators whose intervals do not overlap: the headline gives a range.
    range_pp : tuple of float
        The lowest and highest estimate of the tied estimators, in percentage points.
    shows_miscalibration : bool or None
        The best estimator's risk is clearly below that of h = 0 (None when the result
        has no reference risks).
    warnings : list of str
        The result's warnings, worded for the Python and command-line user.
    grid_edges : list of GridEdge
        The result's choices at the edge of their grids, which :meth:`markdown` words for
        the app's reader (:mod:`calibdash.evaluation.advice`).
    """

    estimator: str
    notion: str
    estimate_pp: float
    low_pp: float
    high_pp: float
    excludes_zero: bool
    headline: str
    details: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    tied: list = field(default_factory=list)
    disagree: bool = False
    range_pp: tuple = (float("nan"), float("nan"))
    shows_miscalibration: bool | None = None
    grid_edges: list = field(default_factory=list)

    def plain_warnings(self):
        """The warnings in plain words: each grid-edge advice as the app says it, any other
        warning as it is."""
        python = {edge.text("python") for edge in self.grid_edges}
        return [edge.text("app") for edge in self.grid_edges] + [w for w in self.warnings if w not in python]

    def markdown(self):
        """The verdict as the app shows it (warnings in plain words)."""
        lines = [f"**{self.headline}**", ""]
        lines += [f"- {d}" for d in self.details]
        warnings = self.plain_warnings()
        if warnings:
            lines += ["", "Warnings:"] + [f"- {w}" for w in warnings]
        return "\n".join(lines)


def _count(n):
    return "?" if n is None else f"{int(n):,}"


def _names(names):
    names = [f"**{n}**" for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def verdict(result):
    """Summarise an :class:`~calibdash.EvaluationResult` in a few sentences.

    Parameters
    ----------
    result : EvaluationResult

    Returns
    -------
    Verdict
    """
    notion = result.config.get("call", {}).get("notion", "?")
    best = result.best
    j = judge(result)
    est = 100 * j.estimate
    low, high = 100 * j.low, 100 * j.high
    lo_est, hi_est = 100 * j.range[0], 100 * j.range[1]
    ref_tied, disagree, excludes_zero = j.reference_tied, j.disagree, j.excludes_zero
    tied = list(j.tied_estimators)
    interval = f"95% interval {low:.2f} to {high:.2f}"
    if ref_tied:
        headline = (
            f"The data do not show that the model is miscalibrated: the {notion} calibration error is at most "
            f"about {high:.2f} percentage points ({interval}), and the estimate \"perfectly calibrated\" (h = 0) "
            "predicts held-out calibration gaps as well as the best estimator."
        )
    elif disagree:
        headline = (
            f"The {notion} calibration error lies between {lo_est:.2f} and {hi_est:.2f} percentage points "
            f"({interval}): {len(tied)} estimators fit the data equally well and disagree, so no single figure is "
            "supported."
        )
    else:
        level = "clearly miscalibrated" if low >= 2 else ("slightly but measurably miscalibrated" if excludes_zero
                                                           else "indistinguishable from perfectly calibrated at this sample size")
        headline = f"The {notion} calibration error is about {est:.2f} percentage points ({interval}): the model is {level}."

    details = [f"The {notion} error measures {_NOTION_WORDS.get(notion, 'miscalibration')}."]
    k = int(result.config.get("call", {}).get("n_folds") or len(result.folds["fold"].unique()))
    if len(tied) == 1:
        details.append(
            f"The estimator the risk trusts most is **{best['estimator']}** ({best['hyperparameters']}): paired over the "
            f"{k} validation folds, every other estimator predicts held-out calibration gaps measurably worse."
        )
    else:
        details.append(
            f"The risk cannot tell {_names(tied)} apart (paired over the {k} validation folds, none is "
            f"measurably worse than the best, **{best['estimator']}**); their estimates range from {lo_est:.2f} to "
            f"{hi_est:.2f} points, and the interval above covers all of their intervals."
        )
        if disagree:
            details.append(
                "Their intervals do not overlap: they smooth the data differently and the data cannot say which "
                "smoothing is right. Read the figure as this range, not as one number; more data would narrow it."
            )
    if j.shows_miscalibration is not None:
        if ref_tied:
            details.append(
                "The trivial estimator h = 0, which says the model is perfectly calibrated, is not measurably worse than "
                "the best estimator: absence of evidence is not proof of calibration."
            )
        else:
            details.append(
                f"The best estimator predicts held-out calibration gaps better than h = 0 (\"perfectly calibrated\") "
                f"by {j.reference_z:.1f} paired standard errors: the data show miscalibration."
            )
    b = j.baseline
    if b is not None:
        b_est, b_lo, b_hi = 100 * b.estimate, 100 * b.low, 100 * b.high
        text = f"The {FIFTEEN_BIN_NAMES['estimator']} is {b_est:.2f} points (95% interval {b_lo:.2f} to {b_hi:.2f})"
        if b.standing == "tied":
            details.append(text + ", and the risk cannot tell it apart from the best estimator.")
        elif b.standing == "outside":
            details.append(text + ": outside the interval above, and the risk ranks it measurably worse, so the usual "
                                  "binned figure would mislead here.")
        else:
            details.append(text + ": the risk ranks it measurably worse, but its interval overlaps the one above.")
    other = result.others
    tests = other[other["estimator"].str.startswith("skce") & other["p_value"].notna()] if len(other) else other
    for _, t in tests.iterrows():
        p = float(t["p_value"])
        shown = p_statement(p)
        details.append(
            f"The kernel calibration test of Widmann et al. ({t['estimator']}) "
            + (f"rejects 'the model is calibrated' at the 5% level ({shown})." if p < 0.05
               else f"does not reject 'the model is calibrated' at the 5% level ({shown}); absence of evidence is "
                    "not proof of calibration.")
        )
    ece15 = other[other["estimator"] == "ece-15-bins"] if len(other) else other
    if len(ece15):
        details.append(
            f"For reference, the familiar top-label {FIFTEEN_BIN_NAMES['ece']} is {100 * float(ece15.iloc[0]['estimate']):.2f} "
            "points; it is an L1 error, on another scale than the figure above, so compare it with other L1 errors only."
        )
    details.append(
        f"Every interval covers both which {_count(result.config.get('n_test'))} rows were held out and which rows fitted "
        f"the {k} fold models. It cannot cover an estimator's bias: smoothing estimators shrink small errors towards 0 "
        "(the measured coverage is in the documentation's results)."
    )
    return Verdict(
        estimator=j.estimator,
        notion=notion,
        estimate_pp=est,
        low_pp=low,
        high_pp=high,
        excludes_zero=excludes_zero,
        headline=headline,
        details=details,
        warnings=list(result.warnings),
        grid_edges=list(result.grid_edges),
        tied=j.tied,
        disagree=disagree,
        range_pp=(lo_est, hi_est),
        shows_miscalibration=j.shows_miscalibration,
    )


__all__ = ["Verdict", "verdict"]
