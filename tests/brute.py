"""Brute-force transcriptions of the paper's formulas, written independently of the package:
explicit loops, densities from scipy.stats, the explicit Kronecker system. Small inputs only."""

from __future__ import annotations

import numpy as np
from scipy import stats

TINY = np.finfo(np.float64).tiny


# -- notions ----------------------------------------------------------------------------
def notion_problems(P, y, notion):
    """List of (z, zc, t) per problem with z (n, k) inputs, t (n, k') targets, plus for 1-D
    problems the complement zc = 1 - z computed as the sum of the other entries."""
    n, d = P.shape
    onehot = np.eye(d)[y]
    if notion == "top-label":
        k = np.array([int(np.argmax(row)) for row in P])
        c = P[np.arange(n), k]
        comp = np.array([sum(P[i, j] for j in range(d) if j != k[i]) for i in range(n)])
        return [(c[:, None], comp, (k == y).astype(float)[:, None])]
    if notion == "canonical":
        return [(P, None, onehot)]
    out = []
    for j in range(d):
        comp = np.array([sum(P[i, m] for m in range(d) if m != j) for i in range(n)])
        out.append((P[:, [j]], comp, onehot[:, [j]]))
    return out


def residual_matrix(P, y, notion):
    """A_ij = <u_i, u_j> for every pair."""
    probs = notion_problems(P, y, notion)
    if notion == "top-label":
        z, _, t = probs[0]
        U = z - t
    else:
        U = P - np.eye(P.shape[1])[y]
    n = P.shape[0]
    return np.array([[float(np.dot(U[i], U[j])) for j in range(n)] for i in range(n)])


def risk(H, A):
    """Eq. (20): explicit double sum over ordered pairs i != j."""
    n = A.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(n):
            if i != j:
                total += (A[i, j] - H[i, j]) ** 2
    return total / (n * (n - 1))


def _sum_over_problems(P_tr, y_tr, P_a, P_b, notion, per_problem):
    H = 0.0
    for (za_tr, zc_tr, t_tr), (za, zca, _), (zb, zcb, _) in zip(
        notion_problems(P_tr, y_tr, notion),
        notion_problems(P_a, np.zeros(len(P_a), int), notion),
        notion_problems(P_b, np.zeros(len(P_b), int), notion),
    ):
        H = H + per_problem(za_tr, zc_tr, t_tr, za, zca, zb, zcb)
    return H


# -- binning, Eq. (10), (23) ------------------------------------------------------------
def binning_h(P_tr, y_tr, P_a, P_b, notion, n_bins, strategy="uniform"):
    def per_problem(z_tr, _c, t_tr, za, _ca, zb, _cb):
        z_tr, t_tr = z_tr[:, 0], t_tr[:, 0]
        if strategy == "uniform":
            edges = [m / n_bins for m in range(n_bins + 1)]
        else:
            qs = [np.quantile(z_tr, m / n_bins) for m in range(1, n_bins)]
            edges = sorted(set([0.0] + qs + [1.0]))
        M = len(edges) - 1

        def which(z):
            for m in range(M):
                if edges[m] <= z < edges[m + 1]:
                    return m
            return M - 1 if z >= edges[-1] else 0

        members = [[i for i in range(len(z_tr)) if which(z_tr[i]) == m] for m in range(M)]
        glob = np.mean(z_tr) - np.mean(t_tr)
        gap = [np.mean(z_tr[idx]) - np.mean(t_tr[idx]) if idx else glob for idx in members]
        va = np.array([gap[which(z)] for z in za[:, 0]])
        vb = np.array([gap[which(z)] for z in zb[:, 0]])
        return np.outer(va, vb)

    return _sum_over_problems(P_tr, y_tr, P_a, P_b, notion, per_problem)


# -- kernel density ratio, Eq. (11), (25) -----------------------------------------------
def kde_h(P_tr, y_tr, P_a, P_b, notion, bandwidth):
    b = bandwidth

    def regress(z_tr, c_tr, t_tr, zq, cq):
        g = []
        for q in range(zq.shape[0]):
            # log densities, scaled by the largest before exponentiating: at small bandwidths the
            # densities themselves overflow or underflow (0 / 0), their ratios do not
            if z_tr.shape[1] == 1:  # Beta kernel on [z, 1 - z]
                x = min(max(zq[q, 0], TINY), 1.0)
                logw = np.array([stats.beta.logpdf(x, z_tr[j, 0] / b + 1, c_tr[j] / b + 1) for j in range(len(z_tr))])
            else:  # Dirichlet kernel
                logw = np.array([stats.dirichlet.logpdf(zq[q], z_tr[j] / b + 1) for j in range(len(z_tr))])
            w = np.exp(logw - logw.max())
            g.append(w @ t_tr / w.sum())
        return zq - np.array(g)

    def per_problem(z_tr, c_tr, t_tr, za, ca, zb, cb):
        return regress(z_tr, c_tr, t_tr, za, ca) @ regress(z_tr, c_tr, t_tr, zb, cb).T

    return _sum_over_problems(P_tr, y_tr, P_a, P_b, notion, per_problem)


# -- kernel ridge, Eq. (28), (32) ---------------------------------------------------------
def rbf(a, b, gamma):
    return float(np.exp(-gamma * np.sum((np.asarray(a) - np.asarray(b)) ** 2)))


def gram(A, B, kernel):
    return np.array([[kernel(a, b) for b in B] for a in A])


def ukkr_h(P_tr, y_tr, P_a, P_b, notion, lam, kernel):
    """Eq. (32): k(z)^T (K + lam n I)^-1 U U^T (K + lam n I)^-1 k(z')."""

    def per_problem(z_tr, _c, t_tr, za, _ca, zb, _cb):
        n = z_tr.shape[0]
        U = z_tr - t_tr
        M = gram(z_tr, z_tr, kernel) + lam * n * np.eye(n)
        Wa = np.linalg.solve(M, gram(z_tr, za, kernel))
        Wb = np.linalg.solve(M, gram(z_tr, zb, kernel))
        return Wa.T @ U @ U.T @ Wb

    return _sum_over_problems(P_tr, y_tr, P_a, P_b, notion, per_problem)


def kkkr_h(P_tr, y_tr, P_a, P_b, notion, lam, kernel):
    """Eq. (28): regress a_ij = <u_i, u_j> on pairs with the kernel K (x) K, solving the
    explicit n^2 x n^2 system (K (x) K + lam n^2 I) vec(C) = vec(U U^T)."""

    def per_problem(z_tr, _c, t_tr, za, _ca, zb, _cb):
        n = z_tr.shape[0]
        U = z_tr - t_tr
        K = gram(z_tr, z_tr, kernel)
        C = np.linalg.solve(np.kron(K, K) + lam * n**2 * np.eye(n * n), (U @ U.T).reshape(-1)).reshape(n, n)
        Ka, Kb = gram(za, z_tr, kernel), gram(zb, z_tr, kernel)
        return Ka @ C @ Kb.T

    return _sum_over_problems(P_tr, y_tr, P_a, P_b, notion, per_problem)


# -- temperature plug-in ------------------------------------------------------------------
def temperature_h(P_a, P_b, notion, T):
    """Canonical: v(p) = p - softmax(log p / T). Top-label and classwise: per problem
    v(z) = z - z^b / (z^b + (1 - z)^b), b = 1 / T, with 1 - z the sum of the other entries;
    ``T`` is one temperature for top-label and canonical, one per class for classwise."""

    def v_canonical(P):
        rows = []
        for p in P:
            logit = np.log(np.maximum(p, TINY)) / T
            g = np.exp(logit - logit.max())
            g /= g.sum()
            rows.append(p - g)
        return np.array(rows)

    def v_one_dimensional(P):
        temps = [T] if notion == "top-label" else list(T)
        cols = []
        for (z, zc, _), temp in zip(notion_problems(P, np.zeros(len(P), int), notion), temps):
            b = 1.0 / temp
            col = []
            for zi, ci in zip(z[:, 0], zc):
                num = np.power(max(zi, TINY), b)
                col.append(zi - num / (num + np.power(max(ci, TINY), b)))
            cols.append(col)
        return np.array(cols).T

    v = v_canonical if notion == "canonical" else v_one_dimensional
    return v(P_a) @ v(P_b).T


def binary_temperature_nll(z, zc, t, T):
    """Mean negative log-likelihood of the event t = 1 under g(z) = z^b / (z^b + zc^b)."""
    b = 1.0 / T
    total = 0.0
    for zi, ci, ti in zip(z, zc, t):
        num, den = np.power(max(zi, TINY), b), np.power(max(zi, TINY), b) + np.power(max(ci, TINY), b)
        total -= np.log(num / den) if ti == 1 else np.log(1.0 - num / den)
    return total / len(t)


def temperature_nll(P, y, T):
    total = 0.0
    for p, label in zip(P, y):
        logit = np.log(np.maximum(p, TINY)) / T
        total += np.log(np.sum(np.exp(logit - logit.max()))) + logit.max() - logit[label]
    return total / len(y)
