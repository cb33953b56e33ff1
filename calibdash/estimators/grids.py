"""Default hyperparameter search spaces (after the paper's Appendix B).

How ``lam`` relates to the fold size: the ridge enters as K + lam * n * I (UKKR) and
K (x) K + lam * n^2 * I (KKKR), with n the number of training rows of the fold, so a
fixed ``lam`` means the same amount of smoothing per data point whatever the fold size.
The authors' published code writes the ridge as c * n^0.75 (two-step) and c * n^1.5
(Kronecker) instead (docs/design.md, section 7); their c corresponds to
lam = c * n^-0.25 and lam = c * n^-0.5 respectively. For n = 6,400 (5 folds of an
8,000-row optimisation set) that is lam ~ 0.11 c and lam ~ 0.0125 c; the grids below
cover the span of their c grids at that size, in half-decade (UKKR) or decade (KKKR) steps,
and reach two to four decades lower for canonical calibration (and two for top-label KKKR),
where the paper's simulation and CIFAR-10 select values at the low end: the risk must be seen
to rise again (or stay flat) beyond the selection, not guessed (issue 13).

The recalibration plug-ins: isotonic regression has no smoothing parameter, so its grid is
the single floor y_min = 0 (like temperature's single "fit"); logistic recalibration tunes
its L2 penalty C over five decades around scikit-learn's default 1 (0.01 to 100: one fit
of 100 classes on 8,000 rows takes about a minute, so the grid is kept short); boosting
tunes only its learning rate, over three values, because each fit grows one tree per class
and iteration.
"""

from __future__ import annotations

import numpy as np

from calibdash.estimators import FAMILIES
from calibdash.core.notions import check_notion

_KDE_BANDWIDTHS = sorted(np.logspace(-5, -1, 15).tolist() + [0.2, 0.4, 0.6, 0.8, 1.0])
# Canonical calibration of confident many-class models selects the top of the paper's grid
# (bandwidth 1 in every split of CIFAR-10 WRN-16-4, whose risk is lowest near 1.8 and rises
# steeply by 3): three wider values keep the selection off the edge.
_KDE_BANDWIDTHS_CANONICAL = _KDE_BANDWIDTHS + [1.5, 2.0, 3.0]

_GRIDS = {
    "bins": {"any": {"n_bins": list(range(5, 101, 5))}},
    "kde": {"any": {"bandwidth": _KDE_BANDWIDTHS}, "canonical": {"bandwidth": _KDE_BANDWIDTHS_CANONICAL}},
    "ukkr": {
        "top-label": {"lam": np.logspace(0, -10, 11).tolist()},
        # The paper's simulation (n = 10,000) selects 1e-8 and the risk rises below it;
        # above 10 the risk is flat (the fit is ~0) on every file tried.
        "canonical": {"lam": np.logspace(1, -10, 23).tolist()},
        "classwise": {"lam": np.logspace(0, -10, 11).tolist()},
    },
    # Top-label KKKR's risk falls down to about 1e-14 and is flat below (CIFAR-10 WRN-16-4):
    # the grid reaches 1e-18 so that the flat part is seen, not guessed.
    "kkkr": {
        "top-label": {"lam": np.logspace(-2, -18, 17).tolist()},
        "canonical": {"lam": np.logspace(3, -14, 18).tolist()},
        "classwise": {"lam": np.logspace(-2, -18, 17).tolist()},
    },
    "temperature": {"any": {"temperature": ["fit"]}},
    "isotonic": {"any": {"y_min": [0.0]}},
    "logistic": {"any": {"C": np.logspace(-2, 2, 5).tolist()}},
    "boosting": {"any": {"learning_rate": [0.03, 0.1, 0.3]}},
}


def default_grid(family, notion):
    """The default search space of ``family`` for ``notion``: {parameter: [values]}.

    Examples
    --------
    >>> default_grid("bins", "top-label")["n_bins"][:3]
    [5, 10, 15]
    """
    if family not in FAMILIES:
        raise ValueError(f"Unknown estimator {family!r}; choose one of {', '.join(map(repr, FAMILIES))}.")
    check_notion(notion, FAMILIES[family].supported_notions, family)
    grids = _GRIDS[family]
    grid = grids.get(notion, grids.get("any"))
    return {k: list(v) for k, v in grid.items()}
