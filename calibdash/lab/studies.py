"""A simulation lab with known truth: how estimators behave, and the paper's Figure 1.

Scenarios (all with exactly known conditional probabilities P(Y | model output)):

* ``"dirichlet"``: the paper's simulation (Sec. 5.1), true conditionals P ~ Dir(alpha)
  and the model softmax(distortion * log P); distortion 1 is calibrated, below 1
  under-confident, above 1 over-confident.
* ``"logit-bias"``: the same P and the model softmax(log P + b) with the fixed class bias
  b = strength * linspace(-1, 1, d): over-confident for some classes, under-confident for
  others, not a temperature scaling; strength 0 is calibrated.
* ``"piecewise"``: the same P and the model softmax(phi(log P)), phi the identity above
  ``knot`` and of slope ``slope`` below it (small probabilities lifted when slope < 1): a
  nearly calibrated model with a small error at the defaults; slope 1 is calibrated.
* ``"widmann"``: the three models of Widmann et al. (2019): ``"calibrated"`` (M1),
  ``"mixed"`` (M2) and ``"uniform"`` (M3).
* ``"logistic"``: binary, x ~ N(0, scale^2), P(y = 1 | x) = sigmoid(x) and the model
  sigmoid(slope * x); slope > 1 is over-confident, slope < 1 under-confident.

The true calibration errors (not squared) come from the known conditionals: by Monte
Carlo for the Dirichlet-based (one function, :func:`_dirichlet_truth`, for the three
models) and Widmann scenarios (the top-label error conditions on the
confidence alone) and by Gauss-Hermite quadrature for the logistic one. They are cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.special import expit

from calibdash.core.notions import check_notion, residuals
from calibdash.core.risk import path_risks
from calibdash.core.simplex import softmax
from calibdash.errors import ConfigError
from calibdash.evaluation.compare import ONLY_TUNED
from calibdash.evaluation.pipeline import evaluate
from calibdash.lab.simulation import (
    WIDMANN_MODELS,
    Simulation,
    conditional_mean_sq_gap,
    dirichlet_simulation,
    log_dirichlet,
    logit_bias,
    mapped_dirichlet_simulation,
    piecewise_log,
    sample_labels,
    widmann_simulation,
)

SCENARIOS = ("dirichlet", "widmann", "logistic", "logit-bias", "piecewise")
# The two non-temperature models default to alpha = 0.1 rather than the paper's 0.04: at
# 0.04 half the rows have a confidence above 0.99 (the 5 classes' Dirichlet mass sits at
# the corners), at 0.1 it is 18 % with a median of 0.87 and a 5 % quantile of 0.5, a
# realistic mix of sure and unsure rows (Bayes accuracy 81 %).
_DEFAULTS = {
    "dirichlet": {"distortion": 0.3, "n_classes": 5, "alpha": 0.04},
    "logit-bias": {"strength": 1.0, "n_classes": 5, "alpha": 0.1},
    "piecewise": {"knot": float(np.log(0.2)), "slope": 0.7, "n_classes": 5, "alpha": 0.1},
    "widmann": {"model": "calibrated", "n_classes": 10, "alpha": 0.1},
    "logistic": {"slope": 2.0, "scale": 2.0},
}
# Monte Carlo size of the truths: the top-label truth's binning bias is of order
# Var(target | c) / 2000 in squared units, far below the estimators' spread at lab sizes.
_N_MC = 500_000


@dataclass(frozen=True)
class Scenario:
    """A simulated classifier with known calibration. Build it with :func:`scenario`.

    Attributes
    ----------
    kind : {"dirichlet", "widmann", "logistic", "logit-bias", "piecewise"}
    params : tuple of (name, value)
        The scenario's parameters (hashable, so a scenario can key a cache).
    """

    kind: str
    params: tuple

    @property
    def p(self):
        return dict(self.params)

    @property
    def label(self):
        p = self.p
        if self.kind == "dirichlet":
            return f"Dirichlet simulation, {p['n_classes']} classes, distortion {p['distortion']:g}"
        if self.kind == "widmann":
            return f"Widmann et al. {p['model']} model, {p['n_classes']} classes"
        if self.kind == "logit-bias":
            return (f"Dirichlet simulation, {p['n_classes']} classes, a fixed bias towards the later classes "
                    f"added to the logits (strength {p['strength']:g})")
        if self.kind == "piecewise":
            how = "lifted" if p["slope"] < 1 else "lowered" if p["slope"] > 1 else "left alone"
            return (f"Dirichlet simulation, {p['n_classes']} classes, probabilities below {np.exp(p['knot']):.3g} "
                    f"{how} (log-slope {p['slope']:g})")
        return f"binary logistic, slope {p['slope']:g}, scale {p['scale']:g}"

    @property
    def calibrated(self):
        """Whether the model is the true conditional (its truth is 0 for every notion)."""
        p = self.p
        return ((self.kind == "dirichlet" and p["distortion"] == 1.0)
                or (self.kind == "logit-bias" and p["strength"] == 0.0)
                or (self.kind == "piecewise" and p["slope"] == 1.0)
                or (self.kind == "widmann" and p["model"] == "calibrated")
                or (self.kind == "logistic" and p["slope"] == 1.0))

    def _logits_of(self):
        """The Dirichlet-based models' map from the exact log P to the model's logits."""
        p = self.p
        if self.kind == "dirichlet":
            distortion = p["distortion"]
            return lambda logP: distortion * logP
        if self.kind == "logit-bias":
            b = logit_bias(p["n_classes"], p["strength"])
            return lambda logP: logP + b
        if self.kind == "piecewise":
            knot, slope = p["knot"], p["slope"]
            return lambda logP: piecewise_log(logP, knot, slope)
        raise RuntimeError(f"The {self.kind} scenario is not built on the Dirichlet simulation.")

    @property
    def n_classes(self):
        return 2 if self.kind == "logistic" else int(self.p["n_classes"])

    def sample(self, n, random_state=None):
        """``n`` rows of model outputs, labels and true conditionals.

        Returns
        -------
        calibdash.lab.simulation.Simulation
        """
        p = self.p
        if self.kind == "dirichlet":
            return dirichlet_simulation(n, p["n_classes"], p["alpha"], p["distortion"], random_state)
        if self.kind in _DIRICHLET_KINDS:
            return mapped_dirichlet_simulation(n, p["n_classes"], p["alpha"], self._logits_of(), random_state)
        if self.kind == "widmann":
            return widmann_simulation(p["model"], n, p["n_classes"], p["alpha"], random_state)
        rng = np.random.default_rng(random_state)
        x = rng.normal(0.0, p["scale"], n)
        true = np.column_stack([expit(-x), expit(x)])
        model = np.column_stack([expit(-p["slope"] * x), expit(p["slope"] * x)])
        y = sample_labels(rng, true)
        return Simulation(model, y, true, np.log(true))

    def truth(self, notion):
        """The true calibration error (not squared) for ``notion``."""
        check_notion(notion)
        return _truth(self, notion)


def scenario(kind="dirichlet", **params):
    """A :class:`Scenario` of ``kind`` with the given parameters (others at their defaults).

    Parameters
    ----------
    kind : {"dirichlet", "widmann", "logistic", "logit-bias", "piecewise"}
    **params
        dirichlet: ``distortion`` (0.3), ``n_classes`` (5), ``alpha`` (0.04);
        widmann: ``model`` ("calibrated", "mixed", "uniform"), ``n_classes`` (10), ``alpha`` (0.1);
        logistic: ``slope`` (2.0), ``scale`` (2.0);
        logit-bias: ``strength`` (1.0, any real; 0 is calibrated, a negative value reverses
        the bias), ``n_classes`` (5), ``alpha`` (0.1);
        piecewise: ``knot`` (log 0.2, a negative log-probability), ``slope`` (0.7, positive;
        1 is calibrated), ``n_classes`` (5), ``alpha`` (0.1).

    Examples
    --------
    >>> scenario("logistic", slope=0.5).truth("top-label") > 0
    True
    """
    if kind not in SCENARIOS:
        raise ConfigError(f"Unknown scenario {kind!r}; choose one of {', '.join(map(repr, SCENARIOS))}.")
    unknown = set(params) - set(_DEFAULTS[kind])
    if unknown:
        raise ConfigError(f"The {kind} scenario has no parameter {', '.join(sorted(unknown))}; "
                         f"its parameters are {', '.join(_DEFAULTS[kind])}.")
    p = {**_DEFAULTS[kind], **params}
    for name in ("distortion", "alpha", "slope", "scale"):
        if name in p and not (_is_real(p[name]) and 0 < p[name] < np.inf):
            raise ConfigError(f"{name} must be a positive number, got {p[name]!r}.")
        if name in p:
            p[name] = float(p[name])
    if "strength" in p:
        if not (_is_real(p["strength"]) and np.isfinite(p["strength"])):
            raise ConfigError(f"strength must be a finite number (0 is calibrated), got {p['strength']!r}.")
        p["strength"] = float(p["strength"])
    if "knot" in p:
        if not (_is_real(p["knot"]) and -np.inf < p["knot"] < 0):
            raise ConfigError(f"knot must be a negative number (a log-probability, e.g. log 0.2 = -1.61), "
                             f"got {p['knot']!r}.")
        p["knot"] = float(p["knot"])
    if "n_classes" in p:
        if isinstance(p["n_classes"], bool) or int(p["n_classes"]) != p["n_classes"] or p["n_classes"] < 2:
            raise ConfigError(f"n_classes must be a whole number of at least 2, got {p['n_classes']!r}.")
        p["n_classes"] = int(p["n_classes"])
    if kind == "widmann" and p["model"] not in WIDMANN_MODELS:
        raise ConfigError(f"model must be one of {', '.join(map(repr, WIDMANN_MODELS))}; got {p['model']!r}.")
    return Scenario(kind, tuple(sorted(p.items())))


_DIRICHLET_KINDS = ("dirichlet", "logit-bias", "piecewise")


def _is_real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


@lru_cache(maxsize=128)
def _truth(sc, notion):
    p = sc.p
    if sc.kind in _DIRICHLET_KINDS:
        if sc.calibrated:  # the model is the true conditional
            return 0.0
        # the paper's scenario keeps the row-centred binning its truths were pinned with
        return _dirichlet_truth(p["n_classes"], p["alpha"], sc._logits_of(), notion,
                                bin_means=sc.kind != "dirichlet")
    if sc.kind == "logistic":
        return _logistic_truth(p["slope"], p["scale"])[notion]
    return _widmann_truth(p["model"], p["n_classes"], p["alpha"])[notion]


def _dirichlet_truth(n_classes, alpha, logits_of, notion, n_mc=_N_MC, random_state=12345, bin_means=False):
    """The truth of one notion of a Dirichlet-based model f = softmax(logits_of(log P)),
    P ~ Dir(alpha * 1), by Monte Carlo.

    ``logits_of`` must make P -> f a bijection, so that P(Y | f) = P: the canonical error is
    then exact per sample, E||f - P||^2; the top-label one conditions on the confidence
    c = max f alone, P(correct | c) = E[P_argmax f | c], and the classwise one on each f_j
    alone, both by averaging within quantile bins of 2,000 samples. For the paper's model
    (``distortion * log P``) these are the formulas of
    :func:`calibdash.lab.simulation.simulation_truth`, which computes all three notions at once
    (several times slower; the page needs one).

    ``bin_means`` (see :func:`calibdash.lab.simulation.conditional_mean_sq_gap`) averages the
    gap within the bins rather than comparing each row's own f with its bin's mean P: the
    latter overstates a nearly calibrated model's error by the spread of f within the bins
    (by 1 % for the default piecewise model's classwise truth, 2.5 % for its binary
    version; 0.02 % for the paper's scenario, which keeps it for its pinned numbers).
    """
    logP = log_dirichlet(np.random.default_rng(random_state), np.full(n_classes, alpha), n_mc)
    P = np.exp(logP)
    f = softmax(logits_of(logP))
    if notion == "canonical":
        return float(np.sqrt(np.mean(np.sum((f - P) ** 2, axis=1))))
    if notion == "top-label":
        k = np.argmax(f, axis=1)
        rows = np.arange(n_mc)
        return float(np.sqrt(conditional_mean_sq_gap(f[rows, k], P[rows, k], bin_means=bin_means)))
    return float(np.sqrt(sum(conditional_mean_sq_gap(f[:, j], P[:, j], bin_means=bin_means)
                             for j in range(n_classes))))


def _logistic_truth(slope, scale, n_nodes=200):
    """Gauss-Hermite quadrature of E[(sigmoid(slope x) - sigmoid(x))^2], x ~ N(0, scale^2).

    The confidence max(q, 1 - q) = sigmoid(slope |x|) is a bijection of |x|, and
    P(correct | |x|) = sigmoid(|x|) by symmetry, so the top-label squared error is that
    expectation; the canonical and classwise ones are twice it (two equal class terms).
    """
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)
    x = scale * nodes
    sq = float(np.sum(weights * (expit(slope * x) - expit(x)) ** 2) / np.sqrt(2 * np.pi))
    return {"top-label": float(np.sqrt(sq)), "canonical": float(np.sqrt(2 * sq)), "classwise": float(np.sqrt(2 * sq))}


def _widmann_truth(model, n_classes, alpha, n_mc=_N_MC, random_state=12345):
    """Truths of Widmann et al.'s models by Monte Carlo over g ~ Dir(alpha).

    P(Y | g) is g (M1), (g + e_1) / 2 (M2) or uniform (M3). Canonical and classwise
    coincide: P(Y = k | g) depends on g_k alone in all three. Top-label conditions on the
    confidence c = max g alone.
    """
    if model == "calibrated":
        return {"top-label": 0.0, "canonical": 0.0, "classwise": 0.0}
    rng = np.random.default_rng(random_state)
    g = np.exp(log_dirichlet(rng, np.full(n_classes, alpha), n_mc))
    k = np.argmax(g, axis=1)
    c = g[np.arange(n_mc), k]
    if model == "mixed":
        true = 0.5 * g
        true[:, 0] += 0.5
        sq_canonical = float(np.mean(np.sum((g - true) ** 2, axis=1)))
        sq_top = conditional_mean_sq_gap(c, true[np.arange(n_mc), k])
    else:
        sq_canonical = float(np.mean(np.sum((g - 1.0 / n_classes) ** 2, axis=1)))
        sq_top = float(np.mean((c - 1.0 / n_classes) ** 2))
    return {"top-label": float(np.sqrt(sq_top)), "canonical": float(np.sqrt(sq_canonical)),
            "classwise": float(np.sqrt(sq_canonical))}


def _seed(random_state, *keys):
    return np.random.default_rng([int(random_state), *map(int, keys)])


def _one_draw(scenario, n, r, random_state, notion, estimators, grids):
    sim = scenario.sample(n, _seed(random_state, n, r))
    res = evaluate(sim.probs, sim.labels, notion=notion, estimators=estimators, grids=grids, random_state=r,
                   n_jobs=1, keep_models=False, **ONLY_TUNED)
    return res.summary[["estimator", "estimate", "squared_estimate", "val_risk"]]


def estimates_vs_n(scenario, *, ns=(250, 500, 1000, 2000), n_repeats=10, estimators=None, notion="top-label",
                   random_state=0, grids=None, n_jobs=1):
    """Each estimator's estimate against the truth as the sample size grows.

    For every ``n`` and repeat a fresh sample is drawn and :func:`calibdash.evaluate`
    (Algorithm 1: tuning by the risk, holdout estimate) runs on it.

    Parameters
    ----------
    scenario : Scenario
        From :func:`scenario`.
    ns : sequence of int
    n_repeats : int
    estimators : list of str or None
        As in :func:`calibdash.evaluate`.
    notion : str, default="top-label"
    random_state : int
        Seed of the draws; draw (n, repeat) is seeded by (random_state, n, repeat), so
        adding sizes or repeats leaves the others unchanged.
    grids : as in :func:`calibdash.evaluate`.
    n_jobs : int, default=1
        Draws evaluated in parallel (joblib); the numbers do not depend on it.

    Returns
    -------
    pandas.DataFrame
        One row per n x repeat x estimator: ``n``, ``repeat``, ``estimator``, ``estimate``
        (calibration error), ``squared_estimate``, ``val_risk``, ``truth``.
    """
    if not isinstance(scenario, Scenario):
        raise ConfigError("scenario must be made by calibdash.lab.scenario(kind, ...).")
    ns = [int(n) for n in ns]
    if not ns or min(ns) < 20:
        raise ConfigError(f"ns must hold sample sizes of at least 20, got {ns!r}.")
    if isinstance(n_repeats, bool) or int(n_repeats) != n_repeats or n_repeats < 1:
        raise ConfigError(f"n_repeats must be a positive whole number, got {n_repeats!r}.")
    draws = [(n, r) for n in ns for r in range(int(n_repeats))]
    return estimates_of_draws(scenario, draws=draws, estimators=estimators, notion=notion, random_state=random_state,
                              grids=grids, n_jobs=n_jobs)


def estimates_of_draws(scenario, *, draws, estimators=None, notion="top-label", random_state=0, grids=None, n_jobs=1,
                       progress=None):
    """:func:`estimates_vs_n`'s rows of the given draws only, the same numbers.

    Draw ``(n, repeat)`` is seeded by (random_state, n, repeat), and an estimator's estimate on
    a draw does not depend on which other estimators run beside it (a test holds this), so a
    table can be grown a draw, a sample size or an estimator at a time: the Learn page computes
    only what a changed setting adds.

    Parameters
    ----------
    scenario : Scenario
    draws : sequence of (n, repeat) or of (n, repeat, estimators)
        The draws to evaluate; a third element names the estimators of that draw (default:
        ``estimators``).
    estimators, notion, random_state, grids, n_jobs : as in :func:`estimates_vs_n`.
    progress : callable or None
        Called as ``progress(done, total, message)`` after every draw.

    Returns
    -------
    pandas.DataFrame
        As :func:`estimates_vs_n`; ``attrs["evaluations"]``: how many draws were evaluated.
    """
    if not isinstance(scenario, Scenario):
        raise ConfigError("scenario must be made by calibdash.lab.scenario(kind, ...).")
    todo = []
    for draw in draws:
        n, r, *which = draw
        todo.append((int(n), int(r), list(which[0]) if which else estimators))
    if todo and min(n for n, _, _ in todo) < 20:
        raise ConfigError(f"sample sizes must be at least 20, got {sorted({n for n, _, _ in todo})!r}.")
    truth = scenario.truth(notion)
    # Parallel over draws, each evaluation in one process: the draws are small, so this
    # keeps both cores busy where evaluate's own tasks would be too short to share.
    results = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(_one_draw)(scenario, n, r, random_state, notion, ests, grids) for n, r, ests in todo
    )
    rows = []
    for done, ((n, r, _), summary) in enumerate(zip(todo, results), start=1):
        for row in summary.itertuples():
            rows.append({"n": n, "repeat": r, "estimator": row.estimator, "estimate": row.estimate,
                         "squared_estimate": row.squared_estimate, "val_risk": row.val_risk, "truth": truth})
        if progress is not None:
            progress(done, len(todo), f"draw {done} of {len(todo)} (n = {n:,})")
    out = pd.DataFrame(rows, columns=["n", "repeat", "estimator", "estimate", "squared_estimate", "val_risk", "truth"])
    out.attrs["evaluations"] = len(todo)
    return out


def missing_draws(have, *, ns, n_repeats, estimators):
    """What :func:`estimates_of_draws` must still compute for a table of ``ns`` x ``n_repeats``
    x ``estimators`` when the rows ``have`` (its earlier output, or None) are at hand:
    ``[(n, repeat, estimators), ...]``, each draw once with the estimators it lacks."""
    done = set() if have is None or have.empty else set(zip(have["n"], have["repeat"], have["estimator"]))
    out = []
    for n in ns:
        for r in range(int(n_repeats)):
            lacking = [e for e in estimators if (int(n), r, e) not in done]
            if lacking:
                out.append((int(n), r, tuple(lacking)))
    return out


def select_estimates(have, *, ns, n_repeats, estimators):
    """The rows of ``have`` (rows of :func:`estimates_of_draws`, possibly overlapping) that make up
    the table of ``ns`` x ``n_repeats`` x ``estimators``, in :func:`estimates_vs_n`'s order."""
    order = {e: i for i, e in enumerate(estimators)}
    keep = have[have["n"].isin([int(n) for n in ns]) & (have["repeat"] < int(n_repeats))
                & have["estimator"].isin(list(estimators))]
    keep = keep.drop_duplicates(["n", "repeat", "estimator"])
    keep = keep.assign(_order=keep["estimator"].map(order)).sort_values(["n", "repeat", "_order"])
    return keep.drop(columns="_order").reset_index(drop=True)


def estimates_study(kind, params=(), *, ns=(250, 500, 1000, 2000), n_repeats=10, estimators=None, notion="top-label",
                    random_state=0, n_jobs=1):
    """:func:`estimates_vs_n` on ``scenario(kind, **params)`` with what is shown beside it, in one call
    (the app runs it as one job).

    Returns
    -------
    tuple
        ``(estimates, summary, truth, label)``: :func:`estimates_vs_n`'s table, its
        :func:`summarise_estimates`, the scenario's true error for ``notion`` and its label.
    """
    sc = scenario(kind, **dict(params))
    df = estimates_vs_n(sc, ns=ns, n_repeats=n_repeats, estimators=estimators, notion=notion,
                        random_state=random_state, n_jobs=n_jobs)
    return df, summarise_estimates(df), sc.truth(notion), sc.label


def summarise_estimates(df):
    """Per n and estimator: mean estimate, its spread (sd over repeats), bias, RMSE, truth.

    Returns
    -------
    pandas.DataFrame
        ``n``, ``estimator``, ``mean``, ``sd``, ``se_mean`` (sd / sqrt(repeats)), ``bias``
        (mean - truth), ``rmse``, ``truth``, ``repeats``.
    """
    g = df.assign(err2=(df["estimate"] - df["truth"]) ** 2).groupby(["n", "estimator"], sort=False)
    out = g.agg(mean=("estimate", "mean"), sd=("estimate", "std"), mse=("err2", "mean"), truth=("truth", "first"),
                repeats=("estimate", "size")).reset_index()
    out["sd"] = out["sd"].fillna(0.0)
    out["se_mean"] = out["sd"] / np.sqrt(out["repeats"])
    out["bias"] = out["mean"] - out["truth"]
    out["rmse"] = np.sqrt(out.pop("mse"))
    return out[["n", "estimator", "mean", "sd", "se_mean", "bias", "rmse", "truth", "repeats"]]


# How many standard errors of the mean over the draws a bias must reach to be called one: with r
# draws an unbiased estimator is called biased with probability 2 P(t_{r-1} > 2), 12% for 5 draws,
# 5% for 30 (see describe_bias).
BIAS_SE = 2.0


def describe_bias(summary):
    """What the Learn page's chart shows at its largest sample size, as markdown: each estimator's
    mean estimate against the truth, in percentage points, said to be above or below the truth only
    when the gap exceeds :data:`BIAS_SE` standard errors of the mean over the draws, else within the
    draws' noise. ``summary``: :func:`summarise_estimates`. With r draws an unbiased estimator is
    called above or below the truth with probability 2 P(t_{r-1} > 2): 12% with the page's default
    5 draws, 5% with 30 (tests/lab/test_studies.py measures the level and the power).

    The page's teaching text is generated from this (the fixed text it had said plug-in estimators
    overstate the error while the chart showed temperature scaling 4-5 points under the truth).
    """
    n = summary["n"].max()
    last = summary[summary["n"] == n]
    parts = []
    for row in last.itertuples():
        gap = 100 * row.bias
        if abs(row.bias) > BIAS_SE * row.se_mean:
            where = f"{abs(gap):.2f} points {'above' if gap > 0 else 'below'} the truth"
        else:
            where = f"within the draws' noise of the truth ({gap:+.2f} points, {100 * row.se_mean:.2f} s.e.)"
        parts.append(f"**{row.estimator}** {100 * row.mean:.2f} ({where})")
    return (f"At n = {n:,} the mean estimates are: " + "; ".join(parts)
            + f". The truth is {100 * last['truth'].iloc[0]:.2f} percentage points.")


def _coverage_draw(scenario, n, r, random_state, notions, truths):
    """One fresh draw of the coverage study: every notion's ranked estimators and verdict."""
    from calibdash.evaluation.pipeline import evaluate_notions
    from calibdash.evaluation.verdict import judge

    sim = scenario.sample(n, _seed(random_state, n, r))
    results = evaluate_notions(sim.probs, sim.labels, notions=notions, random_state=r, n_jobs=1, keep_models=False,
                               **ONLY_TUNED)
    rows = []
    for notion, res in results.items():
        truth = truths[notion]
        j = judge(res)
        best = res.best["estimator"]
        for row in res.summary.itertuples():
            rows.append({"n": n, "draw": r, "notion": notion, "estimator": row.estimator, "estimate": row.estimate,
                         "ci_low": row.ci_low, "ci_high": row.ci_high, "tied": bool(row.tied),
                         "best": row.estimator == best, "truth": truth})
        rows.append({"n": n, "draw": r, "notion": notion, "estimator": VERDICT, "estimate": j.estimate,
                     "ci_low": j.low, "ci_high": j.high, "tied": j.disagree,
                     "best": bool(j.shows_miscalibration), "truth": truth})
    return rows


# The row of the coverage study that holds the verdict: its estimate is the best
# estimator's, its interval the verdict's; "tied" says the tied estimators disagreed (the
# headline gave a range) and "best" that the data showed miscalibration (h = 0 beaten).
VERDICT = "verdict"


def coverage_study(scenario, *, ns=(1000, 5000), n_draws=100, notions=("top-label", "canonical"), random_state=0, n_jobs=1):
    """How often the intervals cover the true error, over fresh draws with known truth.

    Every draw evaluates the default ranked estimators of each notion (Algorithm 1 with
    the paired risk comparison) on a fresh sample, and records each estimator's estimate and
    95% interval and the verdict's (:func:`calibdash.evaluation.verdict.judge`).

    Parameters
    ----------
    scenario : Scenario
    ns : sequence of int
        Sample sizes.
    n_draws : int, default=100
        Fresh draws per size; draw (n, r) is seeded by (random_state, n, r) and split with
        seed r, so adding sizes or draws leaves the others unchanged.
    notions : sequence of str
    random_state : int
    n_jobs : int
        Draws evaluated in parallel (the numbers do not depend on it).

    Returns
    -------
    pandas.DataFrame
        One row per n x draw x notion x estimator, plus one row per n x draw x notion with
        ``estimator == "verdict"``: ``estimate``, ``ci_low``, ``ci_high`` (calibration errors,
        not squared), ``tied``, ``best`` and ``truth``.

    See Also
    --------
    summarise_coverage : coverage, bias and RMSE per estimator.
    """
    if not isinstance(scenario, Scenario):
        raise ConfigError("scenario must be made by calibdash.lab.scenario(kind, ...).")
    if isinstance(n_draws, bool) or int(n_draws) != n_draws or n_draws < 1:
        raise ConfigError(f"n_draws must be a positive whole number, got {n_draws!r}.")
    notions = [notions] if isinstance(notions, str) else list(notions)
    truths = {notion: scenario.truth(notion) for notion in notions}
    draws = [(int(n), r) for n in ns for r in range(int(n_draws))]
    out = Parallel(n_jobs=n_jobs)(delayed(_coverage_draw)(scenario, n, r, random_state, notions, truths)
                                  for n, r in draws)
    return pd.DataFrame([row for rows in out for row in rows])


def summarise_coverage(df):
    """Per n, notion and estimator (and the verdict): the share of draws whose 95% interval
    covers the truth, the mean estimate, bias, RMSE and mean interval width, and how often
    the estimator was the best or tied with it (for the verdict row: how often the tied
    estimators disagreed, and how often the data showed miscalibration).

    Returns
    -------
    pandas.DataFrame
        ``n``, ``notion``, ``estimator``, ``coverage``, ``mean``, ``bias``, ``rmse``,
        ``width``, ``best``, ``tied``, ``truth``, ``draws``.
    """
    d = df.assign(covered=(df["ci_low"] <= df["truth"]) & (df["truth"] <= df["ci_high"]),
                  err2=(df["estimate"] - df["truth"]) ** 2, width=df["ci_high"] - df["ci_low"])
    g = d.groupby(["n", "notion", "estimator"], sort=False)
    out = g.agg(coverage=("covered", "mean"), mean=("estimate", "mean"), mse=("err2", "mean"), width=("width", "mean"),
                best=("best", "mean"), tied=("tied", "mean"), truth=("truth", "first"), draws=("draw", "size")).reset_index()
    out["bias"] = out["mean"] - out["truth"]
    out["rmse"] = np.sqrt(out.pop("mse"))
    return out[["n", "notion", "estimator", "coverage", "mean", "bias", "rmse", "width", "best", "tied", "truth", "draws"]]


DEFAULT_THETAS = tuple(np.round(np.linspace(0.5, 1.5, 41), 6))


def figure1(*, n=500, n_seeds=100, thetas=DEFAULT_THETAS, random_state=0, n_classes=5, alpha=0.04, distortion=0.3,
            first_seed=0, progress=None):
    """The paper's Figure 1: the risk of h_theta against theta, over repeated seeds.

    The data are the paper's simulation; h_theta(p, p') = <p - softmax(theta/distortion
    log p), p' - softmax(theta/distortion log p')> (docs/design.md, section 6). Since
    log p = distortion log P + constant, theta = 1 recovers the true conditional P and the
    expected risk is minimised there. The estimator has no fitted part, so every draw is
    held-out data for it.

    Data set ``seed`` (``first_seed`` to ``first_seed + n_seeds - 1``) is drawn from
    (random_state, seed), so more data sets extend the table without changing its rows (the
    Learn page computes only the data sets a larger "Seeds" setting adds). ``progress``: called
    as ``progress(done, total, message)`` after every data set.

    Returns
    -------
    pandas.DataFrame
        One row per theta x seed: ``theta``, ``seed``, ``risk``.
    """
    thetas = np.asarray(thetas, dtype=np.float64)
    if thetas.ndim != 1 or len(thetas) < 2 or np.any(~np.isfinite(thetas)):
        raise ConfigError("thetas must be at least two finite numbers.")
    if isinstance(n_seeds, bool) or int(n_seeds) != n_seeds or n_seeds < 1:
        raise ConfigError(f"n_seeds must be a positive whole number, got {n_seeds!r}.")
    if int(n) != n or n < 2:
        raise ConfigError(f"n must be a whole number of at least 2, got {n!r}.")
    if isinstance(first_seed, bool) or int(first_seed) != first_seed or first_seed < 0:
        raise ConfigError(f"first_seed must be a whole number of at least 0, got {first_seed!r}.")
    seeds = np.arange(int(first_seed), int(first_seed) + int(n_seeds))
    out = np.empty((len(seeds), len(thetas)))
    for i, s in enumerate(seeds):
        sim = dirichlet_simulation(int(n), n_classes, alpha, distortion, random_state=_seed(random_state, s))
        U = residuals(sim.probs, sim.labels, "canonical")
        # softmax(theta/distortion * log p) = softmax(theta * log P): from the exact log P,
        # finite even where P underflows.
        V = sim.probs[None] - softmax(thetas[:, None, None] * sim.log_true_probs[None], axis=2)
        out[i] = path_risks(U, [(v, None) for v in V])
        if progress is not None:
            progress(i + 1, len(seeds), f"data set {i + 1} of {len(seeds)}")
    seeds, th = np.meshgrid(seeds, thetas, indexing="ij")
    return pd.DataFrame({"theta": th.ravel(), "seed": seeds.ravel(), "risk": out.ravel()})


def summarise_figure1(df):
    """Mean risk per theta with its standard error over seeds; ``attrs["argmin"]`` holds the
    theta of the lowest mean risk."""
    g = df.groupby("theta")["risk"]
    out = g.agg(["mean", "std", "count"]).reset_index()
    out["se"] = out["std"].fillna(0.0) / np.sqrt(out["count"])
    out.attrs["argmin"] = float(out.loc[out["mean"].idxmin(), "theta"])
    return out[["theta", "mean", "se", "count"]]


__all__ = ["SCENARIOS", "Scenario", "scenario", "estimates_vs_n", "estimates_of_draws", "missing_draws", "select_estimates",
           "estimates_study", "summarise_estimates", "describe_bias",
           "BIAS_SE", "coverage_study",
           "summarise_coverage", "VERDICT",
           "figure1", "summarise_figure1", "DEFAULT_THETAS"]
