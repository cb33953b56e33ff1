"""Built-in demo data: real classifiers on scikit-learn's digits, the paper's simulation, and a
clinical risk model on scikit-learn's breast-cancer data (:func:`load_validation_demo`).

Everything is computed offline from data bundled with scikit-learn, then cached as an
``.npz`` (written by this module, read with ``allow_pickle=False``) under
``~/.cache/calibdash/`` or ``$CALIBDASH_CACHE_DIR``. A missing or unreadable cache file is
simply regenerated.
"""

from __future__ import annotations

import functools
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


# -- the clinical validation demo -------------------------------------------------------------
VALIDATION_DEMO_NAME = "demo: breast cancer (scikit-learn)"
VALIDATION_DEMO_GROUPS = "site"
VALIDATION_DEMO_CLASSES = ("benign", "malignant")
VALIDATION_DEMO_DESCRIPTION = (
    "A logistic regression of malignancy on three weak features of scikit-learn's 569 breast-cancer "
    "biopsies (worst texture, mean smoothness, mean compactness), out of fold: it was fitted with balanced class "
    "weights, as if malignant and benign were equally common, so its risks are too high on average. The 'site' "
    "column is synthetic: three hospitals drawn at random, and hospital C's risks are shifted up (its "
    "software used an outdated intercept), so the subgroups differ.")
# The three weak features keep the AUROC near 0.9, as for a typical clinical model (the full 30
# features separate the classes almost perfectly, and a validation of that shows little).
_VALIDATION_FEATURES = ("worst texture", "mean smoothness", "mean compactness")
_SITES = ("hospital A", "hospital B", "hospital C")
_SITE_SHARES = (0.4, 0.35, 0.25)
# Hospital C's shift on the logit scale: large enough that the heterogeneity test detects it.
_SITE_C_SHIFT = 1.5


def validation_demo_frame():
    """The validation demo as a table: ``benign``, ``malignant`` (predicted risks),
    ``diagnosis`` and ``site``; deterministic and computed offline in well under a second."""
    import pandas as pd
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    data = load_breast_cancer(as_frame=True)
    X = data.data[list(_VALIDATION_FEATURES)].to_numpy()
    malignant = (data.target.to_numpy() == list(data.target_names).index("malignant")).astype(np.int64)
    model = make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced"))
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=_SEED)
    risk = cross_val_predict(model, X, malignant, cv=cv, method="predict_proba")[:, 1]
    rng = np.random.default_rng(_SEED)
    site = rng.choice(np.array(_SITES), size=len(risk), p=_SITE_SHARES)
    shifted = site == _SITES[2]
    logit = np.log(risk[shifted]) - np.log1p(-risk[shifted])
    risk[shifted] = 1 / (1 + np.exp(-(logit + _SITE_C_SHIFT)))
    return pd.DataFrame({"benign": 1 - risk, "malignant": risk,
                         "diagnosis": np.array(VALIDATION_DEMO_CLASSES)[malignant], "site": site})


@functools.lru_cache(maxsize=1)
def load_validation_demo():
    """A binary clinical risk model to validate: :class:`calibdash.Predictions` with the classes
    ("benign", "malignant") and the grouping column ``"site"`` (:data:`VALIDATION_DEMO_GROUPS`).

    Pass it to ``calibdash.validate_risk_model(pred, groups=VALIDATION_DEMO_GROUPS)``; the
    positive class is "malignant". Nothing is cached on disk: it is computed in milliseconds
    (the result is kept in memory; Predictions are read-only).

    Returns
    -------
    Predictions
    """
    frame = validation_demo_frame()
    return load_predictions(frame, kind="probabilities", prob_columns=list(VALIDATION_DEMO_CLASSES),
                            label_column="diagnosis", groups=[VALIDATION_DEMO_GROUPS], name=VALIDATION_DEMO_NAME)


__all__ = ["DEMO_NAMES", "DEFAULT_DEMO", "DESCRIPTIONS", "cache_dir", "demo_arrays", "load_demo",
           "VALIDATION_DEMO_NAME", "VALIDATION_DEMO_GROUPS", "VALIDATION_DEMO_CLASSES", "VALIDATION_DEMO_DESCRIPTION",
           "validation_demo_frame", "load_validation_demo"]
