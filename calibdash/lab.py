"""A simulation lab with known truth: how estimators behave, and the paper's Figure 1.

Scenarios (all with exactly known conditional probabilities P(Y | model output)):

* ``"dirichlet"``: the paper's simulation (Sec. 5.1), true conditionals P ~ Dir(alpha)
  and the model softmax(distortion * log P); distortion 1 is calibrated, below 1
  under-confident, above 1 over-confident.
* ``"widmann"``: the three models of Widmann et al. (2019): ``"calibrated"`` (M1),
  ``"mixed"`` (M2) and ``"uniform"`` (M3).
* ``"logistic"``: binary, x ~ N(0, scale^2), P(y = 1 | x) = sigmoid(x) and the model
  sigmoid(slope * x); slope > 1 is over-confident, slope < 1 under-confident.

The true calibration errors (not squared) come from the known conditionals: by Monte
Carlo for the Dirichlet and Widmann scenarios (the top-label error conditions on the
confidence alone) and by Gauss-Hermite quadrature for the logistic one. They are cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.special import expit

from .notions import check_notion, residuals
from .comparison import _ONLY_TUNED
from .pipeline import evaluate
from .risk import path_risks
from .simplex import softmax
from .simulation import (
    Simulation,
    WIDMANN_MODELS,
    _conditional_mean_sq_gap,
    dirichlet_simulation,
    log_dirichlet,
    sample_labels,
    widmann_simulation,
)

SCENARIOS = ("dirichlet", "widmann", "logistic")
_DEFAULTS = {
    "dirichlet": {"distortion": 0.3, "n_classes": 5, "alpha": 0.04},
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
    kind : {"dirichlet", "widmann", "logistic"}
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
        return f"binary logistic, slope {p['slope']:g}, scale {p['scale']:g}"

    @property
    def n_classes(self):
        return 2 if self.kind == "logistic" else int(self.p["n_classes"])

    def sample(self, n, random_state=None):
        """``n`` rows of model outputs, labels and true conditionals.

        Returns
        -------
        calibdash.simulation.Simulation
        """
        p = self.p
        if self.kind == "dirichlet":
            return dirichlet_simulation(n, p["n_classes"], p["alpha"], p["distortion"], random_state)
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
    kind : {"dirichlet", "widmann", "logistic"}
    **params
        dirichlet: ``distortion`` (0.3), ``n_classes`` (5), ``alpha`` (0.04);
        widmann: ``model`` ("calibrated", "mixed", "uniform"), ``n_classes`` (10), ``alpha`` (0.1);
        logistic: ``slope`` (2.0), ``scale`` (2.0).

    Examples
    --------
    >>> scenario("logistic", slope=0.5).truth("top-label") > 0
    True
    """
    if kind not in SCENARIOS:
        raise ValueError(f"Unknown scenario {kind!r}; choose one of {', '.join(map(repr, SCENARIOS))}.")
    unknown = set(params) - set(_DEFAULTS[kind])
    if unknown:
        raise ValueError(f"The {kind} scenario has no parameter {', '.join(sorted(unknown))}; "
                         f"its parameters are {', '.join(_DEFAULTS[kind])}.")
    p = {**_DEFAULTS[kind], **params}
    for name in ("distortion", "alpha", "slope", "scale"):
        if name in p and not (isinstance(p[name], (int, float, np.integer, np.floating)) and p[name] > 0):
            raise ValueError(f"{name} must be a positive number, got {p[name]!r}.")
        if name in p:
            p[name] = float(p[name])
    if "n_classes" in p:
        if isinstance(p["n_classes"], bool) or int(p["n_classes"]) != p["n_classes"] or p["n_classes"] < 2:
            raise ValueError(f"n_classes must be a whole number of at least 2, got {p['n_classes']!r}.")
        p["n_classes"] = int(p["n_classes"])
    if kind == "widmann" and p["model"] not in WIDMANN_MODELS:
        raise ValueError(f"model must be one of {', '.join(map(repr, WIDMANN_MODELS))}; got {p['model']!r}.")
    return Scenario(kind, tuple(sorted(p.items())))


@lru_cache(maxsize=128)
def _truth(sc, notion):
    p = sc.p
    if sc.kind == "dirichlet":
        if p["distortion"] == 1.0:  # the model is the true conditional
            return 0.0
        return _dirichlet_truth(p["n_classes"], p["alpha"], p["distortion"], notion)
    if sc.kind == "logistic":
        return _logistic_truth(p["slope"], p["scale"])[notion]
    return _widmann_truth(p["model"], p["n_classes"], p["alpha"])[notion]


def _dirichlet_truth(n_classes, alpha, distortion, notion, n_mc=_N_MC, random_state=12345):
    """The truth of one notion of the paper's simulation, by Monte Carlo; the same
    formulas as :func:`calibdash.simulation.simulation_truth`, which computes all three
    notions at once (several times slower; the page needs one)."""
    logP = log_dirichlet(np.random.default_rng(random_state), np.full(n_classes, alpha), n_mc)
    P = np.exp(logP)
    f = softmax(distortion * logP)
    if notion == "canonical":
        return float(np.sqrt(np.mean(np.sum((f - P) ** 2, axis=1))))
    if notion == "top-label":
        k = np.argmax(f, axis=1)
        rows = np.arange(n_mc)
        return float(np.sqrt(_conditional_mean_sq_gap(f[rows, k], P[rows, k])))
    return float(np.sqrt(sum(_conditional_mean_sq_gap(f[:, j], P[:, j]) for j in range(n_classes))))


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
        sq_top = _conditional_mean_sq_gap(c, true[np.arange(n_mc), k])
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
                   n_jobs=1, keep_models=False, **_ONLY_TUNED)
    return res.summary[["estimator", "estimate", "squared_estimate", "val_risk"]]


def estimates_vs_n(scenario, ns=(250, 500, 1000, 2000), n_repeats=10, estimators=None, notion="top-label",
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
        raise ValueError("scenario must be made by calibdash.lab.scenario(kind, ...).")
    ns = [int(n) for n in ns]
    if not ns or min(ns) < 20:
        raise ValueError(f"ns must hold sample sizes of at least 20, got {ns!r}.")
    if isinstance(n_repeats, bool) or int(n_repeats) != n_repeats or n_repeats < 1:
        raise ValueError(f"n_repeats must be a positive whole number, got {n_repeats!r}.")
    truth = scenario.truth(notion)
    draws = [(n, r) for n in ns for r in range(int(n_repeats))]
    # Parallel over draws, each evaluation in one process: the draws are small, so this
    # keeps both cores busy where evaluate's own tasks would be too short to share.
    out = Parallel(n_jobs=n_jobs)(
        delayed(_one_draw)(scenario, n, r, random_state, notion, estimators, grids) for n, r in draws
    )
    rows = []
    for (n, r), summary in zip(draws, out):
        for row in summary.itertuples():
            rows.append({"n": n, "repeat": r, "estimator": row.estimator, "estimate": row.estimate,
                         "squared_estimate": row.squared_estimate, "val_risk": row.val_risk, "truth": truth})
    return pd.DataFrame(rows)


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


DEFAULT_THETAS = tuple(np.round(np.linspace(0.5, 1.5, 41), 6))


def figure1(n=500, n_seeds=100, thetas=DEFAULT_THETAS, random_state=0, n_classes=5, alpha=0.04, distortion=0.3):
    """The paper's Figure 1: the risk of h_theta against theta, over repeated seeds.

    The data are the paper's simulation; h_theta(p, p') = <p - softmax(theta/distortion
    log p), p' - softmax(theta/distortion log p')> (design note, section 6). Since
    log p = distortion log P + constant, theta = 1 recovers the true conditional P and the
    expected risk is minimised there. The estimator has no fitted part, so every draw is
    held-out data for it.

    Returns
    -------
    pandas.DataFrame
        One row per theta x seed: ``theta``, ``seed``, ``risk``.
    """
    thetas = np.asarray(thetas, dtype=np.float64)
    if thetas.ndim != 1 or len(thetas) < 2 or np.any(~np.isfinite(thetas)):
        raise ValueError("thetas must be at least two finite numbers.")
    if isinstance(n_seeds, bool) or int(n_seeds) != n_seeds or n_seeds < 1:
        raise ValueError(f"n_seeds must be a positive whole number, got {n_seeds!r}.")
    if int(n) != n or n < 2:
        raise ValueError(f"n must be a whole number of at least 2, got {n!r}.")
    out = np.empty((int(n_seeds), len(thetas)))
    for s in range(int(n_seeds)):
        sim = dirichlet_simulation(int(n), n_classes, alpha, distortion, random_state=_seed(random_state, s))
        U = residuals(sim.probs, sim.labels, "canonical")
        # softmax(theta/distortion * log p) = softmax(theta * log P): from the exact log P,
        # finite even where P underflows.
        V = sim.probs[None] - softmax(thetas[:, None, None] * sim.log_true_probs[None], axis=2)
        out[s] = path_risks(U, [(v, None) for v in V])
    seeds, th = np.meshgrid(np.arange(int(n_seeds)), thetas, indexing="ij")
    return pd.DataFrame({"theta": th.ravel(), "seed": seeds.ravel(), "risk": out.ravel()})


def summarise_figure1(df):
    """Mean risk per theta with its standard error over seeds; ``attrs["argmin"]`` holds the
    theta of the lowest mean risk."""
    g = df.groupby("theta")["risk"]
    out = g.agg(["mean", "std", "count"]).reset_index()
    out["se"] = out["std"].fillna(0.0) / np.sqrt(out["count"])
    out.attrs["argmin"] = float(out.loc[out["mean"].idxmin(), "theta"])
    return out[["theta", "mean", "se", "count"]]


__all__ = ["SCENARIOS", "Scenario", "scenario", "estimates_vs_n", "summarise_estimates",
           "figure1", "summarise_figure1", "DEFAULT_THETAS"]
