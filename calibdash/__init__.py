"""calibdash: estimate how miscalibrated a classifier is, with honest error bars.

The compute package behind the app; usable from Python and the command line.
"""

from .simplex import softmax

__all__ = ["softmax"]
__version__ = "0.1.0"
