"""Increasing maps of one score by isotonic regression, and the shuffled k-fold split of the
cross-fitting, without importing scikit-learn.

Both reproduce scikit-learn to the last digit (tests/metrics/test_isotonic.py compares them
with ``IsotonicRegression(y_min, y_max, out_of_bounds="clip")`` and ``KFold(shuffle=True)``):
the variational estimators run them in every worker process of the pipeline, and importing
scikit-learn there cost each worker 0.7 s before its first variational task (issue 26). The
pool-adjacent-violators step itself is SciPy's, which scikit-learn calls too.
"""

from __future__ import annotations

import numbers

import numpy as np

from calibdash.core.rows import stable_order
from calibdash.errors import check_is_fitted

# scikit-learn merges sorted inputs that lie within this distance of the first of their group
# into one point (its ``_make_unique``): np.finfo(np.float64).resolution.
_TIE_DISTANCE = float(np.finfo(np.float64).resolution)


def tie_groups(x):
    """First index of each group of the sorted ``x`` that scikit-learn's isotonic regression
    merges: a group starts at the first value at least ``_TIE_DISTANCE`` above the value that
    started the group before it (so a chain of values each within it of the next can still
    be split, as there)."""
    n = x.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    # A step of at least the distance always starts a group: the group's first value is at
    # most the previous one, and rounding a larger difference never gives a smaller one.
    certain = np.flatnonzero(np.diff(x) >= _TIE_DISTANCE) + 1
    bounds = np.concatenate([[0], certain, [n]])
    # Between certain starts every step is below the distance; the run is one group unless
    # its whole span reaches it, which needs the sequential rule (a few values near 0 or 1).
    long_runs = np.flatnonzero(x[bounds[1:] - 1] - x[bounds[:-1]] >= _TIE_DISTANCE)
    if long_runs.size == 0:
        return bounds[:-1].astype(np.intp)
    starts = [bounds[:-1]]
    for r in long_runs:
        # a group can only start at the first of equal values: walk the run's distinct values
        # (a few units in the last place apart), not its rows (millions near 1 at registry size)
        values, first_rows = np.unique(x[bounds[r] : bounds[r + 1]], return_index=True)
        first = values[0]
        for value, row in zip(values[1:], first_rows[1:]):
            if value - first >= _TIE_DISTANCE:
                starts.append(np.array([bounds[r] + row]))
                first = value
    return np.sort(np.concatenate(starts)).astype(np.intp)


def _sorted_by(x, order):
    """``x[order]`` when ``order`` is a permutation of x's rows that puts it in ascending
    order, else None."""
    order = np.asarray(order)
    if order.shape != x.shape or not np.issubdtype(order.dtype, np.integer):
        return None
    if order.size and (order.min() < 0 or order.max() >= x.shape[0]):
        return None
    xs = x[order]
    if not np.all(xs[1:] >= xs[:-1]):
        return None
    # a sorted gather could still repeat rows: a permutation hits every row once
    seen = np.zeros(x.shape[0], dtype=bool)
    seen[order] = True
    return xs if seen.all() else None


class IsotonicMap:
    """An increasing map of one score fitted to targets by isotonic regression; scores
    outside the training range take the nearest end value.

    The same numbers as scikit-learn's ``IsotonicRegression(y_min=y_min, y_max=y_max,
    out_of_bounds="clip")``: tied scores are merged into their mean target, the pool-adjacent-
    violators fit is ``scipy.optimize.isotonic_regression`` weighted by the tie counts, the
    values are clipped to [``y_min``, ``y_max``], and new scores are interpolated linearly.

    Parameters
    ----------
    y_min, y_max : float or None
        Bounds on the fitted values (None: unbounded).
    """

    def __init__(self, y_min=None, y_max=None):
        self.y_min = y_min
        self.y_max = y_max

    def fit(self, x, y, *, order=None):
        """Fit on scores ``x`` (n,) and targets ``y`` (n,); returns self.

        ``order``: optional row indices that may sort ``x`` (for instance the reverse of the
        order of a score that ``x`` decreases with). They are used when they do sort it and
        the targets are 0/1, where the order within tied scores changes nothing; otherwise
        ``x`` is sorted here. The fit is the same either way."""
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if x.shape != y.shape or x.size == 0:
            raise ValueError(f"x and y must be non-empty and of one length, got {x.shape} and {y.shape}.")
        # scikit-learn's order: by score, ties by target. With 0/1 targets (every use here)
        # the tie groups' sums are exact integers whatever the order within a group, so one
        # sort of the scores serves (2.0 s against lexsort's 2.3 s at 10,000,000 rows).
        binary = bool(np.all((y == 0.0) | (y == 1.0)))
        xs = _sorted_by(x, order) if binary and order is not None else None
        if xs is None:
            order = stable_order(x) if binary else np.lexsort((y, x))
            xs = x[order]
        x, y = xs, y[order]
        starts = tie_groups(x)
        counts = np.diff(np.append(starts, x.shape[0])).astype(np.float64)
        means = np.add.reduceat(y, starts) / counts
        # imported here: scipy.optimize takes 0.1 s to import, in every process that runs the
        # pipeline's tasks, and most never fit an isotonic map
        from scipy.optimize import isotonic_regression

        fitted = np.asarray(isotonic_regression(means, weights=counts, increasing=True).x, dtype=np.float64)
        if self.y_min is not None or self.y_max is not None:
            np.clip(fitted, -np.inf if self.y_min is None else self.y_min,
                    np.inf if self.y_max is None else self.y_max, out=fitted)
        knots = x[starts]
        self.x_min_, self.x_max_ = float(knots[0]), float(knots[-1])
        # Inner points equal to both neighbours do not change the interpolation.
        keep = np.ones(fitted.shape[0], dtype=bool)
        keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
        self.x_thresholds_, self.y_thresholds_ = knots[keep], fitted[keep]
        return self

    def predict(self, x):
        """The map at the scores ``x`` (n,), clipped to the training range first."""
        check_is_fitted(self, "y_thresholds_")
        x = np.clip(np.asarray(x, dtype=np.float64).reshape(-1), self.x_min_, self.x_max_)
        if self.y_thresholds_.shape[0] == 1:
            return np.repeat(self.y_thresholds_, x.shape[0])
        return np.interp(x, self.x_thresholds_, self.y_thresholds_)


def shuffled_kfold(n, n_folds, random_state):
    """(train, test) row indices of scikit-learn's ``KFold(n_folds, shuffle=True,
    random_state=random_state).split`` on ``n`` rows: the rows shuffled by
    ``numpy.random.RandomState(random_state)`` (the global one for None), cut into folds whose
    sizes differ by at most one (the larger first), both index arrays sorted."""
    if random_state is None or random_state is np.random:
        rng = np.random.mtrand._rand
    elif isinstance(random_state, np.random.RandomState):
        rng = random_state
    elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        rng = np.random.RandomState(int(random_state))
    else:
        raise ValueError(f"random_state must be None, an integer or a numpy RandomState, got {random_state!r}.")
    indices = np.arange(n)
    rng.shuffle(indices)
    sizes = np.full(n_folds, n // n_folds, dtype=int)
    sizes[: n % n_folds] += 1
    out, start = [], 0
    for size in sizes:
        test = np.zeros(n, dtype=bool)
        test[indices[start : start + size]] = True
        out.append((np.flatnonzero(~test), np.flatnonzero(test)))
        start += size
    return out


__all__ = ["IsotonicMap", "shuffled_kfold", "tie_groups"]
