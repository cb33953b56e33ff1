"""What calibdash writes: CSV text safe to open in a spreadsheet, and files written whole.

Every CSV the project offers (the command line's tables, the app's downloads) is made by
:func:`csv_text`, the one place where a table becomes CSV (a test finds any other). Every
file the command line writes goes through :func:`write_file`.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

__all__ = ["FORMULA_PREFIXES", "neutralise", "csv_text", "write_file"]

#: Text starting with one of these is a formula to a spreadsheet (OWASP's CSV injection list).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value):
    """``value`` with a ``'`` in front if it is text a spreadsheet would run as a formula.

    Anything else (numbers included, negative ones too) is returned unchanged.

    >>> neutralise("=HYPERLINK(\\"http://x\\")"), neutralise("-0.5"), neutralise(-0.5), neutralise("model")
    ('\\'=HYPERLINK("http://x")', "'-0.5", -0.5, 'model')
    """
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_PREFIXES) else value


def csv_text(frame):
    r"""The CSV text of a DataFrame (without its index), its text cells and column names neutralised.

    A file name such as ``=HYPERLINK("http://...")`` or ``@SUM(A1:A9)`` reaches the tables as
    a model's name; opened in a spreadsheet, the cell would run. OWASP's remedy: a text
    cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a
    leading ``'``, which the spreadsheet shows as text. Numeric columns are written as
    pandas writes them: a negative number stays a number. Lines end with CRLF, as RFC 4180
    says: then a text cell holding a line break of either kind is quoted (with ``\n``
    alone, a bare ``\r`` in a cell would be written unquoted, and a spreadsheet would start
    a new row, and perhaps a formula, there).

    Parameters
    ----------
    frame : pandas.DataFrame

    Returns
    -------
    str
    """
    import pandas as pd

    safe = frame.copy()
    # by position: column names may repeat
    safe.columns = range(frame.shape[1])
    for j in range(frame.shape[1]):
        if not (pd.api.types.is_numeric_dtype(safe[j]) or pd.api.types.is_datetime64_any_dtype(safe[j])):
            safe[j] = safe[j].map(neutralise)
    safe.columns = [neutralise(c) for c in frame.columns]
    return safe.to_csv(index=False, lineterminator="\r\n")


def write_file(path, data):
    """Write ``data`` (str as UTF-8, or bytes) to ``path`` whole, or not at all.

    The data go to a temporary file beside ``path`` created exclusively (``O_EXCL``, never
    following a link: a link planted where the temporary file goes cannot redirect the
    write), which then replaces ``path`` in one step (``os.replace``, which replaces a link
    at ``path`` rather than its target). On any failure the temporary file is removed and
    ``path`` is left as it was.

    Parameters
    ----------
    path : path-like
    data : str or bytes

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.part")
        try:
            fd = os.open(tmp, flags, 0o666)  # the umask applies, as for any file the user writes
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "no free temporary name beside it", str(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path
