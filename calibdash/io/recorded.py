"""An input as a run records it, and read again from the record.

A run keeps, in each result's ``config["input"]``, where its data came from and how they
were read: the predictions file, the labels file and the loading options
(:data:`calibdash.predictions.LOAD_OPTIONS`). :func:`load_input` reads a file and makes that
record; :func:`load_recorded` reads a file a result file names, which is not verified until
its sha256 is checked (:func:`calibdash.evaluation.rerun.check_input`): nothing read from it
is shown before then.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from calibdash.errors import InputError
from calibdash.io.loading import LOAD_OPTIONS, load_predictions
from calibdash.text import quoted

__all__ = ["load_input", "load_recorded"]


def load_input(path, labels, options):
    """Load one file with the loader options; the record a result keeps of it.

    Parameters
    ----------
    path, labels : path-like or None
        The predictions file and its labels file (None when the labels are in it).
    options : dict
        ``{option: value}`` of :data:`~calibdash.predictions.LOAD_OPTIONS`; None is not given.

    Returns
    -------
    pred : Predictions
    record : dict
        The absolute paths, every loading option (``kind`` "auto" when not given), as a
        result's ``config["input"]`` keeps them.
    """
    given = {k: v for k, v in options.items() if v is not None}
    pred = load_predictions(path, labels, **given)
    record = {
        "predictions": str(Path(path).resolve()),
        "labels": str(Path(labels).resolve()) if labels else None,
        **{k: options.get(k) for k in LOAD_OPTIONS},
    }
    record["kind"] = record["kind"] or "auto"
    return pred, record


def load_recorded(path, labels, options):
    """Load a file named by a result file, as :func:`load_input` does.

    Before its sha256 is checked nothing read from it is shown: the loader's reasons for a
    refusal may quote its text (a header, a cell), so a refusal says only that the file
    cannot be read as the evaluated data.

    Raises
    ------
    InputError
        When a recorded file cannot be opened, is not a regular file, or cannot be read with
        the recorded options (an internal error of the loader is raised as it is).
    """
    for role, where in (("input", path), ("labels file", labels)):
        if where is None:
            continue
        try:
            st = os.stat(where)
        except OSError as e:
            raise InputError(f"the recorded {role} {quoted(where)} cannot be opened ({e.strerror or e}); pass its new "
                             "place with --predictions FILE (and --labels FILE).") from None
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"the recorded {role} {quoted(where)} is not a regular file; give the data with "
                             "--predictions FILE.")
    try:
        return load_input(path, labels, options)
    except InputError as e:
        if e.internal:
            raise
        raise InputError(f"the recorded input {quoted(path)} cannot be read as the evaluated data with the recorded "
                         "loading options (the reason is not shown: it would quote a file that is not verified); give "
                         "the data with --predictions FILE to see why.") from None
