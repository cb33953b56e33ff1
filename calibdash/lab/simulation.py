"""Simulated classifiers with known calibration: ground truth for tests and teaching.

The paper's simulation (Gruber & Bach, Sec. 5.1): true conditionals P_i ~ Dirichlet(alpha),
labels Y_i ~ Cat(P_i) and a miscalibrated model f = softmax(distortion * log P_i).
Because f is a bijection of P, P(Y | f) = P and the truth is known.

The same holds for any model f = softmax(g(log P)) whose logit map g makes P -> f a
bijection (:func:`mapped_dirichlet_simulation`): besides the paper's scaling, a
class-dependent logit bias (:func:`logit_bias`) and a piecewise-linear bend of the
log-probabilities (:func:`piecewise_log`), two miscalibrations that are not a temperature
scaling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from calibdash.core.simplex import sample_labels, softmax
from calibdash.errors import ConfigError


def log_dirichlet(rng, alpha, size):
    """log of Dirichlet(alpha) samples, exact even when alpha is tiny.

    Gamma(a) = Gamma(a + 1) * U^(1/a) keeps the log finite where plain sampling underflows
    (with alpha = 0.04 most coordinates are below 1e-300).
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    logg = np.log(rng.gamma(alpha + 1.0, size=(size, alpha.shape[0]))) + np.log(rng.random((size, alpha.shape[0]))) / alpha
    return logg - logsumexp(logg, axis=1, keepdims=True)


@dataclass(frozen=True)
class Simulation:
    """A simulated data set: model outputs ``probs``, labels, and the true conditionals."""

    probs: np.ndarray
    labels: np.ndarray
    true_probs: np.ndarray
    log_true_probs: np.ndarray


def dirichlet_simulation(n=500, n_classes=5, alpha=0.04, distortion=0.3, random_state=None):
    """The paper's simulation: P ~ Dir(alpha * 1), Y ~ Cat(P), f = softmax(distortion log P).

    Parameters
    ----------
    n : int, default=500
    n_classes : int, default=5
    alpha : float, default=0.04
    distortion : float, default=0.3
        1.0 gives a calibrated model; the paper uses 0.3 (an under-confident model).
    random_state : int or numpy Generator

    Returns
    -------
    Simulation
    """
    return mapped_dirichlet_simulation(n, n_classes, alpha, lambda logP: distortion * logP, random_state)


def mapped_dirichlet_simulation(n, n_classes, alpha, logits_of, random_state=None):
    """P ~ Dir(alpha * 1), Y ~ Cat(P) and the model f = softmax(logits_of(log P)).

    ``logits_of`` must make P -> f a bijection (the paper's ``distortion * log P``,
    ``log P + logit_bias(...)``, ``piecewise_log(log P, ...)``): then P(Y | f) = P, the
    ``true_probs`` returned.

    Parameters
    ----------
    n, n_classes : int
    alpha : float
    logits_of : callable
        Maps the (n, n_classes) array of exact log P to the model's logits.
    random_state : int or numpy Generator

    Returns
    -------
    Simulation
    """
    rng = np.random.default_rng(random_state)
    logP = log_dirichlet(rng, np.full(n_classes, alpha), n)
    P = np.exp(logP)
    y = sample_labels(rng, P)
    return Simulation(softmax(logits_of(logP)), y, P, logP)


def logit_bias(n_classes, strength):
    """The fixed class bias b = strength * linspace(-1, 1, n_classes) of the logit-bias model.

    The model f = softmax(log P + b) is a bijection of P: log P = log f - b + constant,
    the constant fixed by sum P = 1. It favours the later classes over the earlier ones
    (the odds of class j against class k are multiplied by exp(b_j - b_k)): over-confident
    where the top class is a late one, under-confident where it is an early one, which no
    temperature undoes.
    """
    return float(strength) * np.linspace(-1.0, 1.0, int(n_classes))


def piecewise_log(x, knot, slope):
    """phi(x) = x for x >= knot, knot + slope * (x - knot) below: the piecewise model's map
    of each log-probability, f = softmax(phi(log P)).

    phi is continuous and strictly increasing (slope > 0), so P -> f is a bijection:
    given f, phi(log P_k) = log f_k + c with c = logsumexp_k phi(log P_k) unknown, and
    S(c) = sum_k exp(phi^-1(log f_k + c)) is continuous and strictly increasing in c
    (a sum of compositions of increasing maps), so S(c) = 1 has at most one solution,
    and it has the one c of the true P. Hence P is a function of f and P(Y | f) = P.
    With slope < 1 it lifts the small probabilities (an under-confident tail), with
    slope > 1 it lowers them; probabilities above exp(knot) keep their log-ratios. It is
    not a temperature scaling (that would scale every log-probability alike).
    """
    x = np.asarray(x, dtype=np.float64)
    return np.where(x >= knot, x, knot + slope * (x - knot))


def conditional_mean_sq_gap(z, target, per_bin=2000, bin_means=False):
    """E[(z - E[target | z])^2] from a large sample: E[target | z] by averaging within
    quantile bins of ``per_bin`` samples (bias of order Var(target | z) / per_bin).

    By default each row's own z is compared with its bin's mean target, which also counts
    the spread of z within a bin as error (an upward bias of the bins' mean variance of z:
    0.02 % of the paper's simulation's errors, but 1-3 % of a nearly calibrated model's).
    ``bin_means=True`` compares the bins' mean z with their mean target instead, i.e.
    averages the gap z - target within the bins (E[(z - E[target | z])^2] = E[E[z - target |
    z]^2]): its bias is minus the bins' mean variance of the gap, negligible when the gap
    varies smoothly with z.
    """
    order = np.argsort(z, kind="stable")
    z, target = z[order], target[order]
    n_bins = max(1, len(z) // per_bin)
    edges = np.linspace(0, len(z), n_bins + 1).astype(int)
    sums = np.add.reduceat(target, edges[:-1])
    means = sums / np.diff(edges)
    if bin_means:
        z_means = np.add.reduceat(z, edges[:-1]) / np.diff(edges)
        return float(np.sum(np.diff(edges) * (z_means - means) ** 2) / len(z))
    m = np.repeat(means, np.diff(edges))
    return float(np.mean((z - m) ** 2))


def simulation_truth(n_classes=5, alpha=0.04, distortion=0.3, n_mc=2_000_000, random_state=12345):
    """True calibration errors (not squared) of :func:`dirichlet_simulation`'s model.

    Canonical: CCE_2 = sqrt(E ||f - P||^2), exact per sample since P(Y | f) = P.
    Top-label: TCE_2 = sqrt(E (c - P(correct | c))^2) conditions on the confidence c alone,
    estimated from ``n_mc`` samples; classwise likewise for each class probability.

    Returns
    -------
    dict with keys "top-label", "canonical", "classwise".
    """
    rng = np.random.default_rng(random_state)
    out = {"top-label": 0.0, "canonical": 0.0, "classwise": 0.0}
    chunk = 500_000
    done = 0
    tl_z, tl_t, cw = [], [], [[] for _ in range(n_classes)]
    while done < n_mc:
        m = min(chunk, n_mc - done)
        logP = log_dirichlet(rng, np.full(n_classes, alpha), m)
        P = np.exp(logP)
        f = softmax(distortion * logP)
        out["canonical"] += float(np.sum((f - P) ** 2))
        k = np.argmax(f, axis=1)
        rows = np.arange(m)
        tl_z.append(f[rows, k])
        tl_t.append(P[rows, k])
        for j in range(n_classes):
            cw[j].append((f[:, j], P[:, j]))
        done += m
    out["canonical"] = np.sqrt(out["canonical"] / n_mc)
    out["top-label"] = np.sqrt(conditional_mean_sq_gap(np.concatenate(tl_z), np.concatenate(tl_t)))
    out["classwise"] = np.sqrt(
        sum(
            conditional_mean_sq_gap(np.concatenate([a for a, _ in cw[j]]), np.concatenate([b for _, b in cw[j]]))
            for j in range(n_classes)
        )
    )
    return {k: float(v) for k, v in out.items()}


WIDMANN_MODELS = ("calibrated", "mixed", "uniform")


def widmann_simulation(model="calibrated", n=250, n_classes=10, alpha=0.1, random_state=None):
    """The three models of Widmann, Lindsten & Zachariah (2019), Sec. 5.

    Predictions g(X) ~ Dirichlet(alpha * 1); labels from
    M1 ``"calibrated"``: Y ~ Cat(g(X));
    M2 ``"mixed"``: Y ~ Cat(g(X)) with probability 1/2, else Y = the first class;
    M3 ``"uniform"``: Y ~ Cat(uniform), whatever the prediction.

    Returns
    -------
    Simulation
        ``true_probs`` holds P(Y | g(X)): g, (g + e_1) / 2 and uniform respectively.
    """
    if model not in WIDMANN_MODELS:
        raise ConfigError(f"model must be one of {', '.join(map(repr, WIDMANN_MODELS))}; got {model!r}.")
    rng = np.random.default_rng(random_state)
    log_g = log_dirichlet(rng, np.full(n_classes, alpha), n)
    g = np.exp(log_g)
    if model == "calibrated":
        true = g
    elif model == "mixed":
        true = 0.5 * g
        true[:, 0] += 0.5
    else:
        true = np.full_like(g, 1.0 / n_classes)
    y = sample_labels(rng, true)
    with np.errstate(divide="ignore"):
        log_true = log_g if model == "calibrated" else np.log(true)
    return Simulation(g, y, true, log_true)
