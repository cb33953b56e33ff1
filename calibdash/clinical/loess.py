"""The flexible calibration curve: loess as R's ``loess(y ~ p)`` computes it.

R's ``loess`` is Cleveland, Grosse and Shyu's netlib code; scikit-misc wraps the same code, so
the curve and the summaries built on it (ICI, E50, E90, Emax of Austin & Steyerberg 2019)
match R's to rounding. The defaults are R's: span 0.75, degree 2, the gaussian family and
the kd-tree with interpolation (``surface = "interpolate"``), which, like R, gives no value
outside the range of the fitted ``p`` (NaN here, NA in R).
"""

from __future__ import annotations

import numpy as np

__all__ = ["LoessCurve", "loess_fit", "SPAN", "DEGREE"]

SPAN = 0.75
DEGREE = 2


class LoessCurve:
    """A fitted loess curve of ``y`` on one predictor ``x``.

    Build it with :func:`loess_fit`.
    """

    def __init__(self, model, x_min, x_max):
        self._model = model
        self.x_min = x_min
        self.x_max = x_max

    def predict(self, x_new):
        """The curve at ``x_new``; NaN outside ``[x_min, x_max]`` (R gives NA there)."""
        x_new = np.asarray(x_new, dtype=float).ravel()
        out = np.full(x_new.shape, np.nan)
        inside = (x_new >= self.x_min) & (x_new <= self.x_max)
        if inside.any():
            out[inside] = np.asarray(self._model.predict(x_new[inside]).values, dtype=float)
        return out


def loess_fit(x, y, *, span=SPAN, degree=DEGREE, weights=None):
    """Fit ``loess(y ~ x)`` with R's defaults (span 0.75, degree 2, gaussian, interpolate).

    Parameters
    ----------
    x, y : array-like of shape (n,)
    weights : array-like of shape (n,), optional
        Prior weights, as R's ``loess(y ~ x, weights = w)``: each point's squared residual is
        multiplied by its weight in every local fit. The neighbourhood is still the
        ``span * n`` nearest *points*, whatever their weights.

    Returns
    -------
    LoessCurve
    """
    from skmisc.loess import loess  # import on use: the app's first page does not need it

    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if weights is None:
        model = loess(x, y, span=span, degree=degree, family="gaussian")
    else:
        model = loess(x, y, weights=np.asarray(weights, dtype=float).ravel(), span=span, degree=degree,
                      family="gaussian")
    model.fit()
    return LoessCurve(model, float(x.min()), float(x.max()))
