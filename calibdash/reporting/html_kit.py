"""The parts both HTML reports are built of: one stylesheet, escaping, numbers, tables,
figures, the document shell and the provenance's rerun sentence.

:mod:`calibdash.reporting.html` (:func:`calibdash.report`, :func:`calibdash.comparison_report`)
and :mod:`calibdash.reporting.validation` (:func:`calibdash.validation_report`) both use them,
so that the reports look alike, escape alike and write a missing number alike.

Text and HTML. :func:`escape` turns text (anything, through ``str``) into HTML. :func:`table`
and :func:`kv_table` take cells that are HTML already (a report builds them with
:func:`escape`); :func:`text_table`, :func:`frame_table` and :func:`text_kv_table` take text
and escape every cell. Headers, tooltips, captions, titles and data attributes are text and
always escaped. Nothing here fetches anything: the style uses the system's fonts, and
:class:`Figures` puts plotly.js inline once.

A missing number. :func:`num` writes anything that is not a finite number (None, NaN, an
infinity, a text) as :data:`MISSING`, the empty string, in both reports: an empty cell. The
clinical formatting that the validation report shares with the app
(:func:`calibdash.clinical.verdicts.format_metric`, ``format_p``, ``interval_text``) already
leaves a missing number empty, so every missing value of both reports reads the same; and an
empty cell pasted into a spreadsheet is a missing number, where "n/a" would be text in a
column of numbers.
"""

from __future__ import annotations

import datetime as _dt
import html

import numpy as np

from calibdash.errors import InputError
from calibdash.io.export import write_file

__all__ = ["CSS", "MISSING", "MADE_BY", "escape", "num", "interval", "table", "text_table", "frame_table", "kv_table",
           "text_kv_table", "details", "reference_link", "Figures", "title_block", "document", "check_made_by",
           "rerun_text"]

# One stylesheet for every report: the evaluation's verdict box (.verdict) and warnings (.warn),
# the validation's list of verdicts by status (ul.verdicts, li.status-*).
CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       margin: 0 auto; max-width: 1100px; padding: 1.5rem 2rem 4rem; color: #1d1d1f; line-height: 1.45; }
h1 { font-size: 1.8rem; margin-bottom: .2rem; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; margin-top: 2.2rem; }
h3 { margin-top: 1.6rem; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: .85rem; }
pre { background: #f6f6f6; padding: .7rem; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: .9rem; }
th, td { border: 1px solid #ddd; padding: .25rem .55rem; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
.verdict { border: 1px solid #ccc; border-left: 5px solid #d62728; padding: .6rem 1rem; background: #fcfcfc; }
ul.verdicts { list-style: none; padding-left: 0; }
ul.verdicts li { border-left: 5px solid #999; padding: .3rem .8rem; margin: .4rem 0; background: #fcfcfc; }
li.status-ok { border-left-color: #2ca02c !important; }
li.status-problem { border-left-color: #d62728 !important; }
li.status-uncertain { border-left-color: #ff7f0e !important; }
.muted { color: #666; font-size: .9rem; }
.warn { color: #8a4b00; }
figure.cd-figure { margin: 1rem 0; }
figcaption { color: #555; font-size: .88rem; margin-top: .3rem; }
nav ul { columns: 2; }
"""

# A missing number in a report's cell (see the module's docstring).
MISSING = ""

# Who made a report, so that its provenance names the file that caller offers (``made_by``).
MADE_BY = ("python", "cli", "app")


def escape(value):
    """``str(value)`` as HTML text: ``& < > " '`` escaped (safe in elements and quoted attributes)."""
    return html.escape(str(value), quote=True)


def num(value, fmt):
    """``value`` formatted with ``fmt`` (``format(float(value), fmt)``), or :data:`MISSING`
    when it is not a finite number. The result needs no escaping."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return MISSING
    return format(v, fmt) if np.isfinite(v) else MISSING


def interval(low, high, fmt):
    """"low to high", both ends formatted with ``fmt`` (a format spec, or a function of the number
    such as :func:`calibdash.formatting.format_significant`); :data:`MISSING` when either is missing."""
    lo, hi = (fmt(low), fmt(high)) if callable(fmt) else (num(low, fmt), num(high, fmt))
    return f"{lo} to {hi}" if lo != MISSING and hi != MISSING else MISSING


def _header_cell(h, titles):
    return f'<th title="{escape(titles[h])}">{escape(h)}</th>' if h in titles else f"<th>{escape(h)}</th>"


def table(header, rows, numeric=(), *, titles=None, data=None):
    """An HTML table whose cells are HTML.

    Parameters
    ----------
    header : list of str
        The column headers (text).
    rows : iterable of sequences
        The cells, HTML (escaped by the caller).
    numeric : collection of int
        The positions of the columns aligned as numbers (``<td class="num">``).
    titles : dict, optional
        ``{header: tooltip}`` (text): the header cell's ``title``.
    data : str, optional
        The table's name, ``data-table``, for readers and tests.
    """
    titles = titles or {}
    out = [f'<table data-table="{escape(data)}">' if data else "<table>", "<thead><tr>",
           *(_header_cell(h, titles) for h in header), "</tr></thead><tbody>"]
    for row in rows:
        cells = "".join(("<td class=\"num\">" if i in numeric else "<td>") + f"{c}</td>" for i, c in enumerate(row))
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def text_table(header, rows, numeric=(), *, titles=None, data=None):
    """:func:`table` of cells that are text (anything, through ``str``): every cell escaped."""
    return table(header, ([escape(c) for c in row] for row in rows), numeric, titles=titles, data=data)


def frame_table(df, numeric=(), *, titles=None, data=None):
    """:func:`text_table` of a data frame's columns and rows; ``numeric`` names the columns
    aligned as numbers."""
    return text_table(list(df.columns), df.itertuples(index=False, name=None),
                      [i for i, c in enumerate(df.columns) if c in numeric], titles=titles, data=data)


def kv_table(pairs):
    """A two-column table without a header row of (label, value) pairs: labels text, values HTML."""
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{v}</td></tr>" for k, v in pairs)
    return f"<table><tbody>{rows}</tbody></table>"


def text_kv_table(pairs):
    """:func:`kv_table` of values that are text: every value escaped."""
    return kv_table((k, escape(v)) for k, v in pairs)


def details(summary, text):
    """A closed ``<details>`` block: ``summary`` (text) that opens on ``text`` shown preformatted."""
    return f"<details><summary>{escape(summary)}</summary><pre>{escape(text)}</pre></details>"


def reference_link(ref):
    """A reference's link (``" <a href=URL>URL</a>"``, to follow after its citation), or ""."""
    return f' <a href="{escape(ref.url)}">{escape(ref.url)}</a>' if ref.url else ""


class Figures:
    """A report's plotly figures in document order; the first carries plotly.js inline, the
    others reuse it. ``count`` is how many were added."""

    def __init__(self):
        self.count = 0

    def add(self, fig, caption, name):
        """``fig`` as ``<figure class="cd-figure" data-figure=name>`` with ``caption`` (text)."""
        self.count += 1
        body = fig.to_html(full_html=False, include_plotlyjs=self.count == 1, div_id=f"cd-fig-{self.count}",
                           config={"displaylogo": False, "responsive": True})
        return (f'<figure class="cd-figure" data-figure="{escape(name)}">{body}'
                f"<figcaption>{escape(caption)}</figcaption></figure>")


def title_block(title, method):
    """The report's heading (``title``, text) and the line under it: the calibdash version, the
    time it was generated (UTC, to the minute) and ``method`` (HTML)."""
    from calibdash import __version__

    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<h1>{escape(title)}</h1><p class=\"muted\">calibdash {escape(__version__)}, generated {stamp}. {method}</p>"


def document(title, head, nav, body, figs, *, path=None):
    """The whole HTML document, offline, with :data:`CSS`; also written to ``path`` if given.

    Parameters
    ----------
    title : str
        The document's ``<title>`` (text).
    head : str
        HTML before the table of contents: :func:`title_block` and anything that follows it.
    nav, body : iterable of str
        The table of contents' ``<li>`` items and the sections after it (HTML).
    figs : Figures
        Its count is the ``calibdash-figures`` meta tag.
    path : str or path-like, optional
        Also write the document there (UTF-8, whole or not at all).
    """
    from calibdash import __version__

    doc = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<meta name=\"generator\" content=\"calibdash {escape(__version__)}\">"
        f"<meta name=\"calibdash-figures\" content=\"{figs.count}\">"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"{head}<nav><ul>{''.join(nav)}</ul></nav>{''.join(body)}</body></html>\n"
    )
    if path is not None:
        write_file(path, doc)
    return doc


def check_made_by(made_by, results_file, what="result file"):
    """Raise :class:`~calibdash.errors.InputError` unless ``made_by`` is one of :data:`MADE_BY`,
    and, but from Python, ``results_file`` names the ``what`` that goes with the report."""
    if made_by not in MADE_BY:
        raise InputError(f"made_by must be one of {', '.join(MADE_BY)}; got {made_by!r}.")
    if made_by != "python" and not results_file:
        raise InputError(f"made_by={made_by!r} needs results_file, the name of the {what} that goes with the report.")


def rerun_text(made_by, results_file, ways, *, what="result file"):
    """The provenance's paragraph "To rerun to the same numbers: ..." for the caller ``made_by``.

    Parameters
    ----------
    made_by : {"python", "cli", "app"}
        Who makes the report (checked with :func:`check_made_by`).
    results_file : str or None
        The name of the file that goes with the report; required unless ``made_by="python"``.
    ways : dict
        ``{made_by: HTML}``, how the reader of each caller's report reruns the numbers (the
        rest of the sentence; ``results_file`` escaped in it by the caller).
    what : str
        What ``results_file`` is, for the error message.
    """
    check_made_by(made_by, results_file, what)
    return f"<p>To rerun to the same numbers: {ways[made_by]}</p>"
