"""The pages' downloads and their file names: the Results page's full results (JSON) and HTML
report (with a cache of the latest reports, shared by sessions) and the Compare page's report.
Each file is built when its button is clicked."""

from __future__ import annotations

import threading

import calibdash as cd
from calibdash.deprecation import renamed_parameters
from calibdash.evaluation.evaluations import Evaluations

# -- HTML report (for the report download; calibdash.reporting.html builds it) -------------
_REPORTS = {}  # the latest few reports, shared by sessions: one is several megabytes
_REPORTS_LOCK = threading.Lock()


def report_bytes(results, pred, title=None, *, results_file=None):
    """The self-contained HTML report of ``results`` ({notion: EvaluationResult}) on ``pred``, as UTF-8.

    Runs outside the script thread (a deferred download), so it keeps its cache in this
    module, not in the session. The cache is keyed by everything the report renders: the very
    Predictions and result objects (by identity, held by the entry so that no other object
    takes their id) with the title and file name. Keyed by the numbers and settings alone, it
    showed one session's class and file names in another session's report (issue 28); sessions
    share an entry only when they share those objects (the demo data and a shared job's results).
    """
    key = (id(pred), title, results_file, tuple((n, id(r)) for n, r in results.items()))
    with _REPORTS_LOCK:
        if key in _REPORTS:
            return _REPORTS[key][-1]
    # The provenance names the Results page's JSON download, the file the app offers beside the report.
    data = cd.report(results, pred, title=title, results_file=results_file, made_by="app").encode("utf-8")
    with _REPORTS_LOCK:
        _REPORTS[key] = (pred, dict(results), data)
        while len(_REPORTS) > 4:
            _REPORTS.pop(next(iter(_REPORTS)))
    return data


def file_slug(label):
    """A file-name-safe form of a data set's label."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(label))[:60] or "data"


@renamed_parameters(seed="random_state")
def download_name(what, ext, label, *, notion=None, random_state=None):
    """The file name of every download: what it holds, then the data, the notion and the seed it
    was computed with, e.g. ``summary_digits__random_forest_top-label_seed0.csv``."""
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
    format, named after the data and the seed; built when it is clicked."""
    results = dict(results)
    container.download_button(
        "Full results (JSON)", lambda: Evaluations.of(results, name=str(label)).to_json(indent=1),
        results_file_name(results, label), "application/json", key="dl_json", on_click="ignore",
        help="Every notion's results, reloadable with calibdash.evaluation.evaluations.Evaluations.from_json "
             "(or `calibdash rerun FILE` to recompute and compare every number).",
    )


def report_download(container, results, pred, label):
    """The "Report (HTML)" download button; the report is built when it is clicked."""
    results = dict(results)
    container.download_button(
        "Report (HTML)",
        lambda: report_bytes(results, pred, title=f"Calibration report: {label}", results_file=results_file_name(results, label)),
        download_name("calibdash_report", "html", label, random_state=result_seed(results)), "text/html", key="dl_report",
        on_click="ignore",
        help="A self-contained HTML document: data fingerprint, configuration and seed, library versions, verdict, "
             "tables, figures and references with BibTeX. Opens offline in any browser.",
    )


# -- the Compare page ----------------------------------------------------------------
def comparison_file_name(what, ext, res):
    """The name of a Compare page download: named after the models compared, the notion and the seed."""
    return download_name(what, ext, " vs ".join(map(str, res.models["model"])), notion=res.config["notion"],
                         random_state=res.config["random_state"])


def comparison_report_download(container, res, models):
    """The Compare page's "Report (HTML)" download (:func:`calibdash.reporting.html.comparison_report`),
    built when it is clicked."""
    models = dict(models)
    container.download_button(
        "Report (HTML)", lambda: cd.comparison_report(res, models).encode("utf-8"),
        comparison_file_name("calibdash_comparison", "html", res), "text/html", key="dl_cmp_report", on_click="ignore",
        help="A self-contained HTML document: the comparison's tables and figures, settings and seed, every model's data "
             "fingerprint, library versions and references with BibTeX. Opens offline in any browser.",
    )
