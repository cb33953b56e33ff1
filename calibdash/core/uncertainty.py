"""Standard errors and intervals of holdout estimates, with every source of randomness.

An estimate of Algorithm 1 is a mean over the holdout rows of values computed by k fold
models: the squared-error estimate averages h_f(z_i, z_i) over rows i and fold models f, a
comparison of two models averages their row differences, the variational estimator
averages loss gaps of k fold maps. Two things a user cares about are random in it:

* **which rows were held out.** The holdout rows are a sample of the population the
  model will meet. Given the fitted models, the estimate is a mean of n row values,
  whose variance is estimated exactly by s^2 / n (s^2 the sample variance of the row
  values averaged over the fold models; the bootstrap of the holdout rows estimates the
  same quantity, up to a factor (n - 1) / n and its resampling noise).
* **which rows fitted the models.** The k fold models are leave-one-fold-out fits of the
  optimisation set; the delete-a-fold jackknife turns the spread of their holdout means
  into the variance of a fit on the whole optimisation set: (k - 1)^2 / k times their
  sample variance. The spread alone (divided by k) would be (k - 1)^2 = 16 times too
  small at k = 5, because the fold models share most of their training rows.

The holdout rows and the training rows are disjoint, so the two parts add. The interval
is ``estimate +- t se`` with Student's t at the Welch-Satterthwaite degrees of freedom of
the sum (the jackknife part has only k - 1), as in :func:`calibdash.compare`. Intervals of a
calibration error (the square root of a squared error) are the square roots of the
squared-scale interval's ends, clipped at 0: monotone, so the coverage is the same.

What this does not include: the choice of the estimator and of its hyperparameters (the
risk picks them on the optimisation set, which the jackknife refits do not repeat), and an
estimator's bias, which no standard error measures. The verdict handles the first by
reporting the range of the estimators the risk cannot tell apart
(:func:`calibdash.evaluation.verdict.judge`); the coverage study in ``docs/results.md`` measures the
second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibdash.core.tails import norm_ppf, t_ppf
from calibdash.errors import ConfigError, InputError
from calibdash.intervals import ConfidenceInterval


def check_level(level):
    """Raise ConfigError unless ``level`` lies strictly between 0 and 1."""
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not 0 < level < 1:
        raise ConfigError(f"level must lie strictly between 0 and 1 (e.g. 0.95), got {level!r}.")
    return float(level)


def satterthwaite(v1, df1, v2, df2):
    """Degrees of freedom of the sum of two independent variance estimates (Welch-Satterthwaite).

    Returns ``inf`` when both parts are 0 (then the sum is known exactly) and the other
    part's degrees of freedom when one part is 0.
    """
    den = (v1 * v1 / df1 if df1 > 0 else 0.0) + (v2 * v2 / df2 if df2 > 0 else 0.0)
    if den <= 0:
        return math.inf
    return float((v1 + v2) ** 2 / den)


def t_quantile(level, df):
    """The two-sided ``level`` quantile of Student's t (the normal one for infinite df)."""
    level = check_level(level)
    if not math.isfinite(df):
        return float(norm_ppf(0.5 + level / 2))
    return float(t_ppf(0.5 + level / 2, df))


@dataclass(frozen=True)
class HoldoutError:
    """The uncertainty of a mean over holdout rows of values computed by k fold models.

    Attributes
    ----------
    estimate : float
        The mean over rows and fold models.
    var_rows : float
        Variance from the sampling of the holdout rows (s^2 / n).
    var_fit : float
        Variance from the fitting of the fold models (delete-a-fold jackknife); 0 when
        nothing was fitted (k = 1).
    n_rows, n_folds : int
    """

    estimate: float
    var_rows: float
    var_fit: float
    n_rows: int
    n_folds: int

    @property
    def se(self):
        return math.sqrt(self.var_rows + self.var_fit)

    @property
    def df(self):
        return satterthwaite(self.var_rows, self.n_rows - 1, self.var_fit, self.n_folds - 1)

    def confidence_interval(self, level=0.95):
        """(low, high): ``estimate +- t se``."""
        q = t_quantile(level, self.df)
        return ConfidenceInterval(self.estimate - q * self.se, self.estimate + q * self.se)

    def root_interval(self, level=0.95):
        """The interval of sqrt(estimate), for a squared error: the square roots of the
        squared-scale interval's ends, clipped at 0."""
        return root_interval(*self.confidence_interval(level))


def holdout_error(values):
    """:class:`HoldoutError` of the values of k fold models on n holdout rows.

    Parameters
    ----------
    values : array-like of shape (k, n)
        Row ``f`` holds fold model f's value on each holdout row; a 1-D array is one
        model (nothing fitted, k = 1).

    Returns
    -------
    HoldoutError
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = v[None, :]
    if v.ndim != 2 or v.shape[1] < 2:
        raise InputError(f"holdout_error needs values of k fold models on at least 2 rows, got shape {v.shape}.")
    return _error_of_means(v.mean(axis=0), v.mean(axis=1))


def _error_of_means(rows, folds):
    """:class:`HoldoutError` from the two means it needs: ``rows``, each holdout row's value
    averaged over the fold models, and ``folds``, each fold model's mean over the rows."""
    k, n = len(folds), len(rows)
    var_rows = float(rows.var(ddof=1) / n)
    var_fit = float((k - 1) ** 2 / k * np.asarray(folds).var(ddof=1)) if k > 1 else 0.0
    return HoldoutError(float(rows.mean()), var_rows, var_fit, n, k)


class HoldoutMeans:
    """The k fold models' values on n holdout rows, kept as the two means
    :func:`holdout_error` needs instead of the (k, n) table: n + k numbers.

    At 10,000,000 rows one estimator's table is 80 MB, five estimators' 400 MB, which the
    command's own process held under ``--dask-scheduler``. Fold models' values may arrive in
    any order; the numbers are the table's to the last bit: the row means are summed in fold
    order (a value that arrives early waits for those before it), as ``table.mean(axis=0)``
    sums them, and a fold's mean is ``np.mean`` of its whole row, as ``table.mean(axis=1)``.

    Parameters
    ----------
    n_folds, n_rows : int
    """

    def __init__(self, n_folds, n_rows):
        self.n_folds, self.n_rows = int(n_folds), int(n_rows)
        self.fold_means = np.full(self.n_folds, np.nan)
        self._sum, self._next, self._waiting = None, 0, {}

    def add(self, k, values):
        """Take fold model ``k``'s values on the holdout rows (an array of n_rows)."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.n_rows,):
            raise ValueError(f"fold {k}: expected {self.n_rows} values, got shape {values.shape}")
        if not 0 <= k < self.n_folds or k < self._next or k in self._waiting:
            raise ValueError(f"fold {k} was given twice or is not one of {self.n_folds} folds")
        self.fold_means[k] = np.mean(values)
        self._waiting[k] = values
        while self._next in self._waiting:
            row = self._waiting.pop(self._next)
            self._sum = row.copy() if self._sum is None else np.add(self._sum, row, out=self._sum)
            self._next += 1

    @property
    def complete(self):
        return self._next == self.n_folds

    def error(self):
        """:class:`HoldoutError` of the values, once every fold model's have been added."""
        if not self.complete:
            raise ValueError(f"only {self._next} of {self.n_folds} folds' values were added in order")
        return _error_of_means(self._sum / self.n_folds, self.fold_means)


def root_interval(low, high):
    """(sqrt(max(low, 0)), sqrt(max(high, 0))): an interval of a squared error taken to the
    scale of the error itself, as a :class:`~calibdash.intervals.ConfidenceInterval`."""
    return ConfidenceInterval(math.sqrt(max(low, 0.0)), math.sqrt(max(high, 0.0)))


def root_se(value, se):
    """sqrt(value) and its standard error: the delta method se / (2 sqrt(value)), or, near 0
    where it fails (value below 2 se), the distance from sqrt(value) to sqrt(value + se)."""
    root = math.sqrt(max(0.0, value))
    if value > 2 * se:
        return root, se / (2 * root)
    return root, math.sqrt(max(0.0, value) + se) - root


# The reference row of the paired risk comparison: the trivial estimator h = 0, which says
# "the model is perfectly calibrated" (its risk is the mean of <u_i, u_j>^2 over pairs).
REFERENCE = "h = 0"
# One-sided level of "worse than the best": an estimator whose paired risk difference to the
# best is not significantly positive at this level is tied with it.
TIE_LEVEL = 0.05


def paired_risks(fold_risks, best):
    """Paired comparison of fold risks with those of ``best``.

    The k validation folds are shared by every estimator, so the difference of two
    estimators' risks is measured fold by fold: the fold-to-fold variation that both share
    (some folds are harder) cancels, where the unpaired standard errors would add it.

    Parameters
    ----------
    fold_risks : dict {name: array of k fold risks}
    best : str
        The name compared with (the estimator of lowest mean risk).

    Returns
    -------
    dict {name: (risk_diff, risk_diff_se, tied)}
        ``risk_diff``: mean over folds of (risk - best's risk); ``risk_diff_se``: its
        standard error (sd over folds / sqrt(k)); ``tied``: not significantly worse than
        the best, a one-sided paired t test at level ``TIE_LEVEL`` with k - 1 degrees of
        freedom (the best itself is tied).
    """
    base = np.asarray(fold_risks[best], dtype=np.float64)
    k = len(base)
    q = float(t_ppf(1 - TIE_LEVEL, k - 1)) if k > 1 else math.inf
    out = {}
    for name, r in fold_risks.items():
        diff = np.asarray(r, dtype=np.float64) - base
        mean = float(diff.mean())
        se = float(diff.std(ddof=1) / math.sqrt(k)) if k > 1 else 0.0
        out[name] = (mean, se, bool(name == best or mean <= q * se))
    return out


def normal_interval(estimate, se, level=0.95, df=math.inf):
    """``estimate +- t se`` (normal quantile for infinite df): for estimates whose standard
    error comes from elsewhere (a bootstrap, a U-statistic)."""
    q = t_quantile(level, df)
    return estimate - q * se, estimate + q * se


__all__ = ["HoldoutError", "holdout_error", "satterthwaite", "t_quantile", "root_interval", "root_se",
           "normal_interval", "check_level", "paired_risks", "REFERENCE", "TIE_LEVEL"]
