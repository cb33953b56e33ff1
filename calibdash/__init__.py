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

__all__ = ["softmax", "make_estimator", "risk", "evaluate", "evaluate_notions", "EvaluationResult", "FAMILIES", "NOTIONS", "CalibrationEstimator", "EstimatorPath", "load_predictions", "Predictions", "InputError"]
__version__ = "0.1.0"
