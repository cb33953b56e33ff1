"""One BLAS and OpenMP thread for a block of work, cheaply.

The thread count changes the rounding of matrix products, and the same seed must give the
same numbers whatever ``n_jobs``; and scikit-learn's OpenMP threads spinning beside joblib's
workers cost 20-60x on a shared 2-core machine. threadpoolctl's ``threadpool_limits`` scans
the loaded libraries on every call (milliseconds); the controller here scans once per
process.
"""

from __future__ import annotations

from threadpoolctl import ThreadpoolController

_CONTROLLER = None


def one_blas_thread():
    """Context in which BLAS and OpenMP use one thread."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1)
