"""Quantiles and tail probabilities of the normal and Student's t distributions.

These are the special functions that ``scipy.stats.norm`` and ``scipy.stats.t`` call
(``ndtri``, ``ndtr``, ``stdtrit``, ``stdtr``), so the values are the same bit for bit
(tests/core/test_tails.py). The pipeline takes them from ``scipy.special`` because
importing ``scipy.stats`` costs 0.6-0.8 s, which every process that runs the pipeline's
tasks (each joblib or Dask worker) would pay before its first task.
"""

from __future__ import annotations

from scipy import special


def norm_ppf(q):
    """``scipy.stats.norm.ppf(q)``."""
    return special.ndtri(q)


def norm_sf(x):
    """``scipy.stats.norm.sf(x)``."""
    return special.ndtr(-x)


def t_ppf(q, df):
    """``scipy.stats.t.ppf(q, df)``; ``df`` may be infinite (the normal quantile)."""
    return special.stdtrit(df, q)


def t_sf(x, df):
    """``scipy.stats.t.sf(x, df)``; ``df`` may be infinite (the normal tail)."""
    return special.stdtr(df, -x)
