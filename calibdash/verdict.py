"""A plain-language verdict on an evaluation, for readers who are not specialists."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

Z95 = 1.96

_NOTION_WORDS = {
    "top-label": "how far the model's confidence in its predicted class is from how often that class is right",
    "canonical": "how far the whole predicted probability vector is from the true class frequencies",
    "classwise": "how far each class's predicted probability is from how often that class occurs",
}


@dataclass
class Verdict:
    """The verdict's parts; :meth:`markdown` joins them for display."""

    estimator: str
    notion: str
    estimate_pp: float
    low_pp: float
    high_pp: float
    excludes_zero: bool
    headline: str
    details: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    def markdown(self):
        lines = [f"**{self.headline}**", ""]
        lines += [f"- {d}" for d in self.details]
        if self.warnings:
            lines += ["", "Warnings:"] + [f"- {w}" for w in self.warnings]
        return "\n".join(lines)


def verdict(result):
    """Summarise an :class:`~calibdash.EvaluationResult` in a few sentences.

    The estimator with the lowest validation risk is the one the risk "trusts most"; its
    holdout estimate is reported in percentage points with an approximate 95% interval
    (estimate +- 1.96 standard errors over the fold models, clipped at 0).

    Parameters
    ----------
    result : EvaluationResult

    Returns
    -------
    Verdict
    """
    s = result.summary
    notion = result.config.get("call", {}).get("notion", "?")
    best = result.best
    est = 100 * float(best["estimate"])
    se = 100 * float(best["estimate_se"])
    low, high = max(0.0, est - Z95 * se), est + Z95 * se
    excludes_zero = low > 0
    if excludes_zero:
        level = "clearly miscalibrated" if est >= 2 else "slightly but measurably miscalibrated"
    else:
        level = "indistinguishable from perfectly calibrated at this sample size"
    headline = (
        f"The {notion} calibration error is about {est:.2f} percentage points "
        f"(95% interval {low:.2f} to {high:.2f}): the model is {level}."
    )
    details = [
        f"The {notion} error measures {_NOTION_WORDS.get(notion, 'miscalibration')}.",
        f"The estimator the risk trusts most is **{best['estimator']}** ({best['hyperparameters']}): "
        "it has the lowest validation risk, i.e. it predicted held-out calibration gaps best.",
    ]
    others = s[s["estimator"] != best["estimator"]].sort_values("val_risk")
    if len(others):
        runner = others.iloc[0]
        diff = float(runner["val_risk"] - best["val_risk"])
        spread = float(np.hypot(runner["val_risk_se"], best["val_risk_se"]))
        if diff > 2 * spread:
            details.append(f"It beats the runner-up, {runner['estimator']}, clearly (risk difference above twice its standard error).")
        else:
            details.append(
                f"The runner-up, {runner['estimator']}, is within the noise of the risk; its estimate is "
                f"{100 * runner['estimate']:.2f} points, so read the figure as a range."
            )
    baseline = s[s["estimator"] == "15-bins"]
    if len(baseline) and best["estimator"] != "15-bins":
        b = 100 * float(baseline.iloc[0]["estimate"])
        inside = low <= b <= high
        details.append(
            f"The common 15-bin estimate is {b:.2f} points, "
            + ("inside this interval." if inside else "outside this interval: the usual binned figure would mislead here.")
        )
    other = result.others
    tests = other[other["estimator"].str.startswith("skce") & other["p_value"].notna()] if len(other) else other
    for _, t in tests.iterrows():
        p = float(t["p_value"])
        shown = "p < 0.001" if p < 0.001 else f"p = {p:.3f}"
        details.append(
            f"The kernel calibration test of Widmann et al. ({t['estimator']}) "
            + (f"rejects 'the model is calibrated' at the 5% level ({shown})." if p < 0.05
               else f"does not reject 'the model is calibrated' at the 5% level ({shown}); absence of evidence is "
                    "not proof of calibration.")
        )
    ece15 = other[other["estimator"] == "ece-15-bins"] if len(other) else other
    if len(ece15):
        details.append(
            f"For reference, the familiar 15-bin top-label ECE is {100 * float(ece15.iloc[0]['estimate']):.2f} points; it is an "
            "L1 error, on another scale than the figure above, so compare it with other L1 errors only."
        )
    details.append(
        f"The interval reflects the spread over the {len(result.folds['fold'].unique()) if len(result.folds) else '?'} "
        f"fold models on {result.config.get('n_test', '?')} held-out rows; it does not include the uncertainty of the choice of estimator."
    )
    return Verdict(
        estimator=str(best["estimator"]),
        notion=notion,
        estimate_pp=est,
        low_pp=low,
        high_pp=high,
        excludes_zero=excludes_zero,
        headline=headline,
        details=details,
        warnings=list(result.warnings),
    )


__all__ = ["Verdict", "verdict"]
