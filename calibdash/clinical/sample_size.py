"""Is the validation set large enough? The precision targets of Riley et al. (2021).

Riley, Debray, Collins et al., "Minimum sample size for external validation of a clinical
prediction model with a binary outcome", Statistics in Medicine 40 (2021) 4230-4251, ask
that a validation study estimate O:E with a 95% interval no wider than 0.2, the calibration
slope with one no wider than 0.2, and the C statistic with one no wider than 0.1; and, with
Collins et al. (2016), at least 100 events and 100 non-events. For each target this module
compares the interval actually achieved with the target and gives the sample size that
Riley's formulas say would reach it, computed from this data's prevalence, C statistic and
distribution of the linear predictor (assuming the model is calibrated, as Riley does).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import optimize, stats

from calibdash.clinical.logistic import logit

__all__ = ["TARGETS", "MIN_EVENTS", "sample_size_table", "required_n"]

# metric -> target width of its 95% interval (Riley et al. 2021, section 3)
TARGETS = {"O:E": 0.2, "calibration slope": 0.2, "AUROC": 0.1}
# Collins, Ogundimu & Altman (2016): at least 100 events and 100 non-events.
MIN_EVENTS = 100
_Z = stats.norm.ppf(0.975)


def _n_for_oe(prevalence, width):
    # SE(ln O/E) = sqrt((1 - phi) / (n phi)); the interval of O/E around 1 is
    # exp(+-z se), of width 2 sinh(z se) (Riley 2021, criterion 1)
    se = np.arcsinh(width / 2) / _Z
    return (1 - prevalence) / (prevalence * se**2)


def _n_for_slope(p, width):
    # var(slope) = I_a / (n (I_a I_b - I_ab^2)) with the information of the calibrated model
    # a = 0, b = 1 averaged over this data's linear predictor (Riley 2021, criterion 2)
    lp = logit(p)
    w = p * (1 - p)
    i_a, i_ab, i_b = np.mean(w), np.mean(w * lp), np.mean(w * lp**2)
    det = i_a * i_b - i_ab**2
    se = width / (2 * _Z)
    return i_a / (se**2 * det) if det > 0 else np.inf


def _newcombe_se(c, prevalence, n):
    # Newcombe (2006)'s standard error of the C statistic, used by Riley 2021 (criterion 3)
    n1, n0 = n * prevalence, n * (1 - prevalence)
    m = n / 2 - 1
    var = c * (1 - c) * (1 + m * (1 - c) / (2 - c) + m * c / (1 + c)) / (n1 * n0)
    return np.sqrt(var)


def _n_for_c(c, prevalence, width):
    se_target = width / (2 * _Z)
    if not (0.5 <= c < 1) or prevalence <= 0 or prevalence >= 1:
        return np.nan

    def f(n):
        return _newcombe_se(c, prevalence, n) - se_target

    lo, hi = 10.0, 10.0
    while f(hi) > 0 and hi < 1e9:
        hi *= 2
    if f(hi) > 0:
        return np.inf
    if f(lo) <= 0:
        return lo
    return optimize.brentq(f, lo, hi)


def required_n(p, y, *, c_statistic):
    """Riley's minimum sample size for each target, from this data's characteristics.

    Returns
    -------
    dict
        metric -> rows needed (rounded up).
    """
    p = np.asarray(p, dtype=float)
    prev = float(np.mean(y))
    out = {
        "O:E": _n_for_oe(prev, TARGETS["O:E"]),
        "calibration slope": _n_for_slope(p, TARGETS["calibration slope"]),
        "AUROC": _n_for_c(c_statistic, prev, TARGETS["AUROC"]),
    }
    return {k: (float(np.ceil(v)) if np.isfinite(v) else float(v)) for k, v in out.items()}


def sample_size_table(p, y, widths, *, c_statistic):
    """The achieved interval widths against Riley's targets.

    Parameters
    ----------
    p, y : array-like
    widths : dict
        metric -> achieved width of its 95% interval (``ci_high - ci_low``), for the keys of
        :data:`TARGETS`.
    c_statistic : float
        The AUROC of this data (Riley's formula for the C statistic depends on it).

    Returns
    -------
    DataFrame
        Columns ``criterion``, ``target``, ``achieved``, ``adequate``, ``rows_needed``,
        ``rows``: one row per precision target, plus one for events and one for non-events
        (``target`` 100, ``achieved`` the count).
    """
    y = np.asarray(y)
    n = len(y)
    need = required_n(p, y, c_statistic=c_statistic)
    rows = []
    for metric, target in TARGETS.items():
        achieved = float(widths.get(metric, np.nan))
        rows.append({
            "criterion": f"width of the 95% interval of {metric}",
            "metric": metric,
            "target": target,
            "achieved": achieved,
            "adequate": bool(np.isfinite(achieved) and achieved <= target),
            "rows_needed": need[metric],
            "rows": n,
        })
    events = int(np.sum(y))
    for name, count in (("events", events), ("non-events", n - events)):
        rows.append({
            "criterion": f"number of {name} (at least {MIN_EVENTS})",
            "metric": name,
            "target": float(MIN_EVENTS),
            "achieved": float(count),
            "adequate": count >= MIN_EVENTS,
            "rows_needed": np.nan,
            "rows": n,
        })
    return pd.DataFrame(rows)
