"""The mean of several fitted estimators, itself a calibration estimation function."""

from __future__ import annotations

import numpy as np

from calibdash.estimators.base import block_diag_or_none


class FoldEnsemble:
    """h(z, z') = (1/k) sum_f h_f(z, z') over the k fold models (Algorithm 1, step 4).

    Bilinear like its members: the features are stacked and the middle matrix is the
    block diagonal of the members' divided by k (plug-ins: features scaled by 1/sqrt(k)).
    """

    def __init__(self, estimators):
        if not estimators:
            raise ValueError("A fold ensemble needs at least one fitted estimator.")
        self.estimators = list(estimators)
        self.notion = self.estimators[0].notion
        self.n_classes_ = self.estimators[0].n_classes_

    def bilinear_form(self, P):
        forms = [e.bilinear_form(P) for e in self.estimators]
        k = len(forms)
        if all(G is None for _, G in forms):
            return np.hstack([F for F, _ in forms]) / np.sqrt(k), None
        Gs = [G if G is not None else np.eye(F.shape[1]) for F, G in forms]
        return np.hstack([F for F, _ in forms]), block_diag_or_none(Gs) / k

    def compact(self):
        """Compact every member (:meth:`CalibrationEstimator.compact`); returns self."""
        for e in self.estimators:
            e.compact()
        return self

    @property
    def family(self):
        return self.estimators[0].family

    def recalibration(self, P):
        """Mean of the members' recalibration maps (plug-in families only)."""
        return np.mean([e.recalibration(P) for e in self.estimators], axis=0)

    def h(self, P_a, P_b):
        return sum(e.h(P_a, P_b) for e in self.estimators) / len(self.estimators)

    def h_diag(self, P):
        return np.mean([e.h_diag(P) for e in self.estimators], axis=0)

    def squared_error(self, P):
        return float(np.mean(self.h_diag(P)))

    def calibration_error(self, P):
        return float(np.sqrt(max(0.0, self.squared_error(P))))
