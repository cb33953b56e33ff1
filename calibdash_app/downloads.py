"""The pages' downloads and their file names: the Results page's full results (JSON) and HTML
report, the Compare page's report and the Validate page's files, built before their buttons are
shown and kept in a cache shared by sessions (:func:`built`).

Why not built when clicked: Streamlit's deferred downloads (a callable as the button's data)
leave the generated file referenced by no session, and every script run of any session (a
job's progress refreshes every second) collects such files: the second collection after the
click deletes it, so when two runs anywhere on the server end between the click and the
browser's fetch, the click gives no file ("Deferred file ... not found" in the server's log;
read from Streamlit 1.67's media_file_manager.py, not caught in the act). A file given as bytes
belongs to the page that shows its button until that page is rerun without it, so it is always
there to fetch. The cost: a report is built when its page first shows it (2.5 s for the demo's).
"""

from __future__ import annotations

import threading

import calibdash as cd
from calibdash.deprecation import renamed_parameters
from calibdash.evaluation.evaluations import Evaluations
from calibdash.reporting.outputs import data_stem

# -- the files, built once per result and shared by sessions -------------------------------
_BUILT = {}  # the latest few files: (kind, key) -> (the objects keyed by their id, bytes)
_BUILT_LOCK = threading.Lock()
MAX_BUILT = 12  # a report is several megabytes; a page shows at most three built files


def built(kind, objects, extra, build):
    """``build()`` (bytes) for the ``objects`` (by identity) and the hashable ``extra`` (title, file
    name, class...), from the cache when built before.

    The cache is keyed by everything the file renders: the very result and data objects (by
    identity, held by the entry so that no other object takes their id) with ``extra``. Keyed by
    the numbers and settings alone, it showed one session's class and file names in another
    session's report (issue 28); sessions share an entry only when they share those objects (the
    demo data and a shared job's results).
    """
    key = (kind, tuple(id(o) for o in objects), extra)
    with _BUILT_LOCK:
        if key in _BUILT:
            _BUILT[key] = _BUILT.pop(key)  # the most recently used, the last dropped
            return _BUILT[key][-1]
    data = build()
    data = data.encode("utf-8") if isinstance(data, str) else data
    with _BUILT_LOCK:
        _BUILT[key] = (tuple(objects), data)
        while len(_BUILT) > MAX_BUILT:
            _BUILT.pop(next(iter(_BUILT)))
    return data


def report_bytes(results, pred, title=None, *, results_file=None):
    """The self-contained HTML report of ``results`` ({notion: EvaluationResult}) on ``pred``, as UTF-8
    (cached by :func:`built`)."""
    # The provenance names the Results page's JSON download, the file the app offers beside the report.
    return built("report", (pred, *results.values()), (title, results_file, tuple(results)),
                 lambda: cd.report(results, pred, title=title, results_file=results_file, made_by="app"))


def file_slug(label):
    """A file-name-safe form of a data set's label, without the suffix of the file it came from
    (an upload's label is its file name: "mortality.csv" names the data "mortality")."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in data_stem(label))[:60] or "data"


@renamed_parameters(seed="random_state")
def download_name(what, ext, label, *, notion=None, random_state=None):
    """The file name of every download: what it holds, then the data (:func:`file_slug`), the notion
    and the seed it was computed with, joined by "_", e.g. ``summary_digits__random_forest_top-label_seed0.csv``
    or ``validation_report_mortality_seed0.html`` for the upload mortality.csv."""
    parts = [what, file_slug(label)] + ([notion] if notion else []) + ([f"seed{random_state}"] if random_state is not None else [])
    return "_".join(parts) + "." + ext


def result_seed(results):
    """The seed of the split of ``results`` ({notion: EvaluationResult}; the notions share it)."""
    return next(iter(results.values())).config.get("call", {}).get("random_state")


def results_file_name(results, label):
    """The name of the "Full results (JSON)" download (the report's provenance names it too)."""
    return download_name("results", "json", label, random_state=result_seed(results))


def results_download(container, results, label):
    """The "Full results (JSON)" download: every notion evaluated, in calibdash's one result
    format, named after the data and the seed."""
    results = dict(results)
    data = built("json", tuple(results.values()), (str(label), tuple(results)),
                 lambda: Evaluations.of(results, name=str(label)).to_json(indent=1))
    container.download_button(
        "Full results (JSON)", data,
        results_file_name(results, label), "application/json", key="dl_json", on_click="ignore",
        help="Every notion's results, reloadable with calibdash.evaluation.evaluations.Evaluations.from_json "
             "(or `calibdash rerun FILE` to recompute and compare every number).",
    )


def report_download(container, results, pred, label):
    """The "Report (HTML)" download button (the report built by :func:`report_bytes`)."""
    results = dict(results)
    container.download_button(
        "Report (HTML)",
        report_bytes(results, pred, title=f"Calibration report: {label}", results_file=results_file_name(results, label)),
        download_name("calibdash_report", "html", label, random_state=result_seed(results)), "text/html", key="dl_report",
        on_click="ignore",
        help="A self-contained HTML document: data fingerprint, configuration and seed, library versions, verdict, "
             "tables, figures and references with BibTeX. Opens offline in any browser.",
    )


# -- the Compare page ----------------------------------------------------------------
def comparison_file_name(what, ext, res):
    """The name of a Compare page download: named after the models compared, the notion and the seed."""
    return download_name(what, ext, " vs ".join(data_stem(m) for m in res.models["model"]), notion=res.config["notion"],
                         random_state=res.config["random_state"])


def comparison_report_download(container, res, models):
    """The Compare page's "Report (HTML)" download (:func:`calibdash.reporting.html.comparison_report`)."""
    models = dict(models)
    data = built("comparison report", (res, *models.values()), tuple(models),
                 lambda: cd.comparison_report(res, models))
    container.download_button(
        "Report (HTML)", data,
        comparison_file_name("calibdash_comparison", "html", res), "text/html", key="dl_cmp_report", on_click="ignore",
        help="A self-contained HTML document: the comparison's tables and figures, settings and seed, every model's data "
             "fingerprint, library versions and references with BibTeX. Opens offline in any browser.",
    )
