"""Built-in demo data: real classifiers on scikit-learn's digits and the paper's simulation.

Everything is computed offline from data bundled with scikit-learn, then cached as an
``.npz`` (written by this module, read with ``allow_pickle=False``) under
``~/.cache/calibdash/`` or ``$CALIBDASH_CACHE_DIR``. A missing or unreadable cache file is
simply regenerated.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from calibdash.errors import ConfigError
from calibdash.io.loading import load_predictions

# Bump when the recipe changes so that stale caches are ignored.
_RECIPE = 1
_SEED = 0

DIGITS_MODELS = {
    "digits: random forest": "random_forest",
    "digits: naive Bayes": "naive_bayes",
    "digits: logistic regression": "logistic_regression",
    "digits: neural network": "mlp",
}
SIMULATIONS = {
    "simulation: 5 classes (paper)": 5,
    "simulation: 3 classes": 3,
}
DEMO_NAMES = tuple(DIGITS_MODELS) + tuple(SIMULATIONS)
# Under-confident with a clear, smooth miscalibration: the most instructive first view.
DEFAULT_DEMO = "digits: random forest"

DESCRIPTIONS = {
    "digits: random forest": "Random forest (100 trees) on the 1,797 handwritten digits: "
    "accurate but under-confident (votes are averaged).",
    "digits: naive Bayes": "Gaussian naive Bayes on the digits: strongly over-confident "
    "(its independence assumption is badly wrong for pixels).",
    "digits: logistic regression": "Logistic regression on the digits: usually close to calibrated.",
    "digits: neural network": "A small neural network (one hidden layer of 64 units) on the digits: "
    "accurate and slightly over-confident.",
    "simulation: 5 classes (paper)": "The paper's simulation (Sec. 5.1): 5,000 rows, 5 classes, "
    "Dirichlet(0.04) truth distorted to an under-confident model; the true error is known.",
    "simulation: 3 classes": "The same simulation with 3 classes, so predictions can be drawn "
    "in a triangle (the simplex plot on the Reliability page).",
}


def cache_dir():
    """Directory of the demo cache (``$CALIBDASH_CACHE_DIR`` or ``~/.cache/calibdash``)."""
    root = os.environ.get("CALIBDASH_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "calibdash"


def _classifier(key):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return {
        "random_forest": lambda: RandomForestClassifier(n_estimators=100, random_state=_SEED),
        "naive_bayes": GaussianNB,
        "logistic_regression": lambda: make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)),
        "mlp": lambda: make_pipeline(
            StandardScaler(), MLPClassifier(hidden_layer_sizes=(64,), max_iter=500, random_state=_SEED)
        ),
    }[key]()


def _make_digits(key):
    import warnings

    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    X, y = load_digits(return_X_y=True)
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=_SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        probs = cross_val_predict(_classifier(key), X, y, cv=cv, method="predict_proba")
    return probs, y


def _make_simulation(n_classes):
    from calibdash.lab.simulation import dirichlet_simulation

    sim = dirichlet_simulation(n=5000, n_classes=n_classes, random_state=_SEED)
    return sim.probs, sim.labels


def _class_names(name, d):
    if name in DIGITS_MODELS:
        return tuple(f"digit {k}" for k in range(d))
    return tuple(f"class {k}" for k in range(d))


def _cache_path(name):
    slug = "".join(c if c.isalnum() else "_" for c in name).strip("_")
    return cache_dir() / f"demo_{slug}_v{_RECIPE}.npz"


def _read_cache(path):
    try:
        with np.load(path, allow_pickle=False) as data:
            probs, labels = data["probs"], data["labels"]
        if probs.ndim != 2 or labels.shape != (probs.shape[0],):
            return None
        return probs.astype(np.float64), labels.astype(np.int64)
    except Exception:  # noqa: BLE001 - any unreadable cache is regenerated
        return None


def _write_cache(path, probs, labels):
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp.npz")
        np.savez(tmp, probs=probs, labels=labels)
        os.replace(tmp, path)  # atomic, so a concurrent reader never sees half a file
    except OSError:
        pass  # a read-only home only costs recomputation


def demo_arrays(name):
    """(probabilities, labels) of the demo set ``name``, from the cache when possible."""
    if name not in DEMO_NAMES:
        raise ConfigError(f"Unknown demo set {name!r}; choose one of {', '.join(map(repr, DEMO_NAMES))}.")
    path = _cache_path(name)
    cached = _read_cache(path) if path.exists() else None
    if cached is not None:
        return cached
    if name in DIGITS_MODELS:
        probs, labels = _make_digits(DIGITS_MODELS[name])
    else:
        probs, labels = _make_simulation(SIMULATIONS[name])
    probs, labels = np.asarray(probs, dtype=np.float64), np.asarray(labels, dtype=np.int64)
    _write_cache(path, probs, labels)
    return probs, labels


def load_demo(name=DEFAULT_DEMO):
    """The demo set ``name`` as validated :class:`calibdash.Predictions`.

    Parameters
    ----------
    name : str
        One of :data:`DEMO_NAMES`.

    Returns
    -------
    Predictions
    """
    probs, labels = demo_arrays(name)
    return load_predictions(probs, labels, kind="probabilities", class_names=_class_names(name, probs.shape[1]), name=name)


__all__ = ["DEMO_NAMES", "DEFAULT_DEMO", "DESCRIPTIONS", "cache_dir", "demo_arrays", "load_demo"]
