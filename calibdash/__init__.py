"""calibdash: estimate how miscalibrated a classifier is, with honest error bars.

The compute package behind the app; usable from Python and the command line.
"""

from .estimators import FAMILIES, NOTIONS, CalibrationEstimator, EstimatorPath, make_estimator
from .pipeline import evaluate, evaluate_notions
from .result import EvaluationResult
from .risk import risk
from .simplex import softmax
from .errors import InputError
from .loading import Predictions, load_predictions
from .kernel_calibration import CalibrationTest, SKCEEstimate, calibration_test, skce
# the function calibdash.ece.ece is not re-exported: it would hide the module calibdash.ece
from .ece import ECE_ESTIMATORS, ece_bootstrap, ece_by_name, ece_kde
from .variational import VariationalEstimate, VariationalTopLabel, holdout_loss_gap, variational_error, variational_top_label
from .comparison import ComparisonResult, compare
from . import lab
from .reporting import report

__all__ = [
    "softmax", "make_estimator", "risk", "evaluate", "evaluate_notions", "EvaluationResult", "FAMILIES", "NOTIONS",
    "CalibrationEstimator", "EstimatorPath", "load_predictions", "Predictions", "InputError",
    "skce", "calibration_test", "SKCEEstimate", "CalibrationTest", "ece_kde", "ece_by_name", "ece_bootstrap",
    "ECE_ESTIMATORS", "variational_error", "variational_top_label", "holdout_loss_gap", "VariationalEstimate",
    "VariationalTopLabel",
]
__all__ += ["compare", "ComparisonResult", "lab"]
__all__ += ["report"]
__version__ = "0.1.0"
