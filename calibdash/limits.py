"""The bounds on the work calibdash accepts, each checked before the work starts.

A setting or a file that asks for more than a limit is refused at once with a
:class:`~calibdash.errors.ConfigError` (a setting) or an
:class:`~calibdash.errors.InputError` (a file) that names the limit, its value and the
environment variable that changes it. The variables are read whenever a limit is checked,
so one setting serves Python, the command line and the app's server (set it before starting
``calibdash app``)::

    CALIBDASH_MAX_GRID_VALUES=5000 calibdash evaluate preds.npz --grid kde.bandwidth=... --out out

The defaults are far above what the paper's settings need and far below what would exhaust
a laptop's memory or run for hours. Two more bounds are the loader's keyword arguments,
since they belong to one call: the size of a file (``max_bytes``, default
:data:`calibdash.io.loading.MAX_FILE_BYTES`) and the memory its numbers may need
(``max_memory_bytes``, :data:`calibdash.io.loading.MAX_MEMORY_BYTES`). One rule depends on
the data rather than on a limit: a number of bins is at most the number of rows
(:meth:`calibdash.evaluation.config.EvaluationConfig.check_rows`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from calibdash.errors import ConfigError, InputError

__all__ = ["Limit", "GRID_VALUES", "GRID_COMBINATIONS", "FOLDS", "RESAMPLES", "TABLE_COLUMNS", "TEXT_CHARACTERS", "RESULT_BYTES",
           "RESULT_DEPTH", "LIMITS", "help_text"]


@dataclass(frozen=True)
class Limit:
    """One bound: its default, what it counts, why it is there, and how to change it.

    Attributes
    ----------
    variable : str
        The environment variable that replaces the default (a whole number of at least 1).
    default : int
    unit : str
        What is counted, as the messages name it ("values").
    scope : str
        What holds them ("a hyperparameter's grid").
    why : str
        What the limit protects against (for the documentation).
    remedy : str
        What to do instead of raising the limit, as the messages say it.
    error : type
        :class:`~calibdash.errors.ConfigError` for a setting, :class:`~calibdash.errors.InputError`
        for a file.
    """

    variable: str
    default: int
    unit: str
    scope: str
    why: str
    remedy: str
    error: type = ConfigError

    @property
    def value(self):
        """The limit in force: the environment variable's value, else the default."""
        text = os.environ.get(self.variable, "").strip()
        if not text:
            return self.default
        if not text.isdigit() or int(text) < 1:
            raise ConfigError(f"The environment variable {self.variable} must be a whole number of at least 1, "
                              f"got {text!r}; unset it for the default ({self.default:,}).")
        return int(text)

    def check(self, count, subject):
        """Raise ``self.error`` if ``count`` exceeds the limit; ``subject`` says what has
        ``count`` of them, e.g. ``"the grid of 'kde'"``."""
        limit = self.value
        if count > limit:
            raise self.error(self.message(count, subject, limit))

    def describe(self):
        """One line for the documentation: the default and its variable."""
        return f"{self.default:,} {self.unit} in {self.scope} ({self.variable})"

    def message(self, count, subject, limit=None):
        """The refusal's text: what was asked, the limit, and how to change it."""
        limit = self.value if limit is None else limit
        return (f"{subject} has {count:,} {self.unit}, over the limit of {limit:,}; {self.remedy}, or raise the "
                f"limit with the environment variable {self.variable} (e.g. {self.variable}={count}).")


#: Values of one hyperparameter in a grid (``--grid``, the app's grid boxes, ``grids=``).
GRID_VALUES = Limit(
    "CALIBDASH_MAX_GRID_VALUES", 1_000, "values", "a hyperparameter's grid",
    "Values per hyperparameter: every value is fitted on every fold; the paper's largest grid has 23 values.", "give fewer values")
#: Combinations of values in one estimator's grid, searched as a product.
GRID_COMBINATIONS = Limit(
    "CALIBDASH_MAX_GRID_COMBINATIONS", 10_000, "combinations of values", "an estimator's grid",
    "The values of an estimator's parameters are searched as a product, each combination on every fold.",
    "give fewer values, or hold some parameters at one value")
#: Folds of the cross-validation (``--folds``, ``n_folds=``).
FOLDS = Limit(
    "CALIBDASH_MAX_FOLDS", 100, "folds", "the cross-validation",
    "Every estimator is fitted once per fold and per grid value; 5 folds is the paper's choice.", "use fewer folds")
#: Resamples of a bootstrap or a resampling test (``n_resamples=``).
RESAMPLES = Limit(
    "CALIBDASH_MAX_RESAMPLES", 10_000, "resamples", "a bootstrap or resampling test",
    "Bootstrap and resampling tests hold a resample-by-row matrix: 10,000 resamples of 50,000 rows are 4 GB.",
    "use fewer resamples")
#: Fields on a line of a text table, counted on the raw bytes before parsing.
TABLE_COLUMNS = Limit(
    "CALIBDASH_MAX_TABLE_COLUMNS", 100_000, "fields", "a line of a text table",
    "Fields are counted from the raw bytes before a text table is parsed: a table of 100,000 columns takes "
    "seconds to read, a single line of millions of fields would take hours and gigabytes.",
    "give one line per sample, or save the predictions as .npy or .npz", InputError)
#: Characters of one text cell of a Parquet file (a label, class or group name), from its dictionary
#: before the text is expanded.
TEXT_CHARACTERS = Limit(
    "CALIBDASH_MAX_TEXT_CHARACTERS", 10_000, "characters", "a text cell of a Parquet file",
    "Labels, class and group names are short. Parquet stores a repeated text once, compressed: a 2 KB file "
    "can hold 200 cells of 5 MB, gigabytes once read (a text table's cells are bounded by its file size).",
    "leave long text columns out of the file", InputError)
#: Bytes of a result file (``result.json``, the app's JSON download).
RESULT_BYTES = Limit(
    "CALIBDASH_MAX_RESULT_BYTES", 100 * 10**6, "bytes", "a result file",
    "A result file of 100 MB records a split of about 10 million rows; parsing JSON takes several times its size.",
    "check that it is a result file written by calibdash", InputError)
#: Levels of nesting of a result file, measured on its text before parsing.
RESULT_DEPTH = Limit(
    "CALIBDASH_MAX_RESULT_DEPTH", 32, "levels of nesting", "a result file",
    "calibdash writes result files 9 levels deep; deeper nesting is not a result, and would exhaust the parser's stack.",
    "check that it is a result file written by calibdash", InputError)

#: Every limit, in the order the documentation lists them.
LIMITS = (GRID_VALUES, GRID_COMBINATIONS, FOLDS, RESAMPLES, TABLE_COLUMNS, TEXT_CHARACTERS, RESULT_BYTES, RESULT_DEPTH)


def help_text(indent="  "):
    """Every limit, one line each (the command line's ``--help`` lists them)."""
    return "\n".join(indent + limit.describe() for limit in LIMITS)
