"""A self-contained HTML report of one evaluation, or a comparison of several models.

The report states what an auditor needs to check and rerun a result: the data's
fingerprint, the configuration and seed, the library versions, the verdict in plain
words, the summary table, the app's figures (risk curves, estimates, reliability
diagrams), a calibration test when one was run, and the literature with BibTeX.

It works offline: plotly.js is embedded once, inline; the style uses the system's fonts;
nothing is fetched when the file is opened. Links to papers are plain links.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

from calibdash.core.notions import NOTIONS
from calibdash.deprecation import renamed_parameters
from calibdash.display import plots, units
from calibdash.display.reliability import diagram_ece_name
from calibdash.display.text import plot_text
from calibdash.display.verdict import verdict
from calibdash.display.views import per_class_view, top_label_view
from calibdash.errors import InputError
from calibdash.evaluation.evaluations import Evaluations
from calibdash.formatting import format_count, format_p, format_significant
from calibdash.io.loading import Predictions
from calibdash.reporting.html_kit import (
    MADE_BY,
    Figures,
    details,
    document,
    escape,
    interval,
    kv_table,
    num,
    reference_link,
    rerun_text,
    table,
    text_kv_table,
    title_block,
)
from calibdash.reporting.references import references_for

__all__ = ["report", "comparison_report", "ModelResults", "normalise_results", "MADE_BY"]

_NOTION_TITLES = {"top-label": "Top-label", "canonical": "Canonical", "classwise": "Classwise"}


@dataclass
class ModelResults:
    """One model's results as the report shows them.

    Attributes
    ----------
    name : str or None
        The model's name (None in a single-model report).
    results : dict
        ``{notion: EvaluationResult}`` in the order of ``calibdash.NOTIONS``.
    predictions : Predictions or None
        The evaluated data, for the reliability diagrams.
    calibration_test : object or None
        Anything with ``statistic``, ``p_value``, ``method``, ``estimator`` and ``text(alpha)``.
    """

    name: str | None
    results: dict
    predictions: Predictions | None = None
    calibration_test: object = None

    @property
    def data_sha256(self):
        return next(iter(self.results.values())).config.get("data_sha256")


def _notion_rank(notion):
    return NOTIONS.index(notion) if notion in NOTIONS else len(NOTIONS)


def _as_predictions(obj, where):
    if obj is None or isinstance(obj, Predictions):
        return obj
    if isinstance(obj, (tuple, list)) and len(obj) == 2:
        P, y = obj
        P = np.asarray(P, dtype=np.float64)
        return Predictions(probs=P, labels=np.asarray(y, dtype=np.int64), class_names=tuple(str(k) for k in range(P.shape[1])),
                           kind="probabilities", source_name="the predictions array")
    raise InputError(f"{where}: predictions must be what calibdash.load_predictions returned (or a (P, y) pair), "
                     f"got {type(obj).__name__}.")


def normalise_results(results, predictions=None, calibration_test=None):
    """The models a report shows, checked: a list of :class:`ModelResults`.

    Parameters
    ----------
    results : Evaluations, EvaluationResult, dict or list
        Anything :meth:`calibdash.evaluation.evaluations.Evaluations.of` reads: one
        model's results (one ``EvaluationResult``, ``{notion: EvaluationResult}`` as the app
        holds them, or a list) give a single-model report; ``{model name: ...}`` or an
        ``Evaluations`` of several models a comparison report.
    predictions : Predictions, (P, y), dict or None
        The evaluated data: one for a single model; for a comparison, a dict
        ``{model name: Predictions}`` (models left out get no reliability diagram) or one
        Predictions shared by every model.
    calibration_test : object, dict or None
        One test result, or ``{model name: test}`` for a comparison.

    Raises
    ------
    InputError
        When the predictions are not the data a result was computed on (different
        sha256), or the arguments do not have one of the shapes above.
    """
    evaluations = Evaluations.of(results)
    models = [ModelResults(name, {n: notions[n] for n in sorted(notions, key=_notion_rank)})
              for name, notions in evaluations.items()]
    if len(models) == 1 and models[0].name is None:
        preds, tests = {None: predictions}, {None: calibration_test}
    else:
        if isinstance(predictions, dict):
            unknown = set(map(str, predictions)) - {m.name for m in models}
            if unknown:
                raise InputError(f"predictions were given for unknown models: {', '.join(sorted(unknown))}.")
            preds = {str(k): v for k, v in predictions.items()}
        else:
            preds = {m.name: predictions for m in models}
        if isinstance(calibration_test, dict):
            tests = {str(k): v for k, v in calibration_test.items()}
        else:
            tests = {m.name: calibration_test for m in models}
    for m in models:
        where = "the predictions" if m.name is None else f"the predictions of {m.name!r}"
        pred = _as_predictions(preds.get(m.name), where)
        if pred is not None and pred.sha256 != m.data_sha256:
            raise InputError(
                f"{where} ({pred.source_name}, sha256 {pred.sha256[:16]}...) are not the data the results "
                f"were computed on (sha256 {str(m.data_sha256)[:16]}...); pass the predictions that were evaluated."
            )
        m.predictions = pred
        m.calibration_test = tests.get(m.name)
    return models


# ----------------------------------------------------------------------------- html bits
def _markdown_inline(text):
    """Escape, then turn the verdict's **bold** into <strong>."""
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escape(text))


# ----------------------------------------------------------------------------- sections
def _data_section(m, h):
    res = next(iter(m.results.values()))
    cfg = res.config
    pairs = []
    pred = m.predictions
    recorded = cfg.get("input") or {}
    if pred is not None:
        pairs.append(("source", escape(pred.source_name)))
    if recorded.get("predictions"):
        pairs.append(("predictions file (recorded)", f"<code>{escape(recorded['predictions'])}</code>"))
    if recorded.get("labels"):
        pairs.append(("labels file (recorded)", f"<code>{escape(recorded['labels'])}</code>"))
    pairs += [
        ("rows", format_count(cfg.get("n")) or escape(cfg.get("n", "?"))),
        ("classes", escape(cfg.get("n_classes", "?"))),
    ]
    if pred is not None:
        pairs += [
            ("input numbers", escape(f"{pred.kind} ({'detected' if pred.kind_detected else 'as told'})")),
            ("accuracy", f"{pred.accuracy:.2%}"),
            ("mean confidence", f"{pred.mean_confidence:.2%}"),
            ("class names", escape(", ".join(pred.class_names[:20]) + (", ..." if pred.d > 20 else ""))),
        ]
        if pred.d == 2 and pred.class_names != ("0", "1"):
            pairs.append(("positive class", escape(pred.class_names[1])))
        if pred.groups:
            pairs.append(("grouping columns", escape(", ".join(pred.groups))))
    pairs += [
        ("data sha256", f"<code>{escape(cfg.get('data_sha256', '?'))}</code>"),
        ("optimisation / holdout rows", escape(f"{cfg.get('n_optimisation', '?')} / {cfg.get('n_test', '?')}")),
        ("validation fold sizes", escape(", ".join(map(str, cfg.get("fold_sizes", []))))),
    ]
    out = [f"<h{h}>Data</h{h}>", kv_table(pairs)]
    out.append('<p class="muted">The sha256 is of the probabilities (float64) and labels (int64) as evaluated, '
               "whatever the file format: equal numbers give equal fingerprints.</p>")
    if pred is not None and pred.warnings:
        out.append("<ul>" + "".join(f'<li class="warn">{escape(w)}</li>' for w in pred.warnings) + "</ul>")
    return "".join(out)


def _rerun_text(made_by, results_file):
    """The provenance paragraph: which result file reruns these numbers, and how (for ``made_by``)."""
    in_python = "or in Python <code>cd.evaluate(cd.load_predictions(FILE), **config[\"call\"])</code> with the calls below."
    ways = {
        "cli": (f"<code>python -m calibdash rerun {escape(results_file)} --use-recorded-paths</code> on the result file "
                "written beside this report (it records the input files; the option confirms that they may be read), "),
        "app": ("save the Results page's download \"Full results (JSON)\", "
                f"<code>{escape(results_file)}</code>, and run <code>python -m calibdash rerun {escape(results_file)} "
                "--predictions FILE</code> with the predictions file that was evaluated (the app does not record where it "
                "came from), "),
        "python": ("write the results with <code>Evaluations.of(results).to_json()</code> and run "
                   "<code>python -m calibdash rerun FILE --predictions DATA</code> on that file, "),
    }
    return rerun_text(made_by, results_file, {k: w + in_python for k, w in ways.items()})


def _versions(results):
    """The library versions the results recorded, and plotly's that draws the report's figures."""
    versions = {}
    for res in results:
        versions.update(res.config.get("versions", {}))
    import plotly

    versions.setdefault("plotly (report)", plotly.__version__)
    return text_kv_table(versions.items())


def _config_section(m, h, rerun):
    rows = []
    for notion, res in m.results.items():
        call = res.config.get("call", {})
        rows.append((escape(notion), escape(", ".join(call.get("estimators", []))), _holdout(call.get("test_size")),
                     escape(call.get("n_folds")), escape(call.get("random_state")), num(res.config.get("seconds"), ".1f")))
    out = [f"<h{h}>Configuration and seed</h{h}>",
           table(["notion", "estimators", "holdout fraction", "folds", "seed", "seconds"], rows, numeric=(2, 3, 4, 5))]
    out.append(rerun)
    for notion, res in m.results.items():
        text = json.dumps(res.config.get("call", {}), indent=1, default=str)
        out.append(details(f"{notion}: the full call (grids written out)", text))
    out.append(f"<h{h}>Library versions</h{h}>")
    out.append(_versions(m.results.values()))
    return "".join(out)


def _summary_table(res):
    rows = []
    for _, r in res.summary.sort_values("val_risk").iterrows():
        rows.append((
            escape(r["estimator"]), escape(r["hyperparameters"]), num(r["val_risk"], ".5g"),
            format_significant(r["risk_diff"]), format_significant(r["risk_diff_se"], 2), "yes" if bool(r["tied"]) else "",
            num(r["sqrt_risk_x100"], ".3f"), num(100 * float(r["estimate"]), ".2f"),
            interval(100 * float(r["ci_low"]), 100 * float(r["ci_high"]), ".2f"), format_significant(r["squared_estimate"]),
            "yes" if bool(r["at_grid_edge"]) else "", num(r["seconds"], ".2f"),
        ))
    ref = res.reference
    if ref is not None:
        rows.append((escape(ref["estimator"]), "perfectly calibrated (reference)", num(ref["val_risk"], ".5g"),
                     format_significant(ref["risk_diff"]), format_significant(ref["risk_diff_se"], 2), "yes" if ref["tied"] else "",
                     "", "0.00", "", "0", "", ""))
    return table(
        ["estimator", "hyperparameters", "risk", "risk above best (paired)", "its s.e.", "tied with best",
         "100 √risk (a score, not an error)", "calibration error (points)", "95% interval (points)",
         "signed squared estimate (fraction²)", "at grid edge", "seconds"],
        rows, numeric=(2, 3, 4, 6, 7, 9, 11),
    )


def _notion_section(notion, res, figs, h, anchor):
    v = verdict(res)
    out = [f'<h{h} id="{escape(anchor)}">{escape(_NOTION_TITLES.get(notion, notion))} calibration</h{h}>']
    out.append(f'<div class="verdict"><p><strong>{escape(v.headline)}</strong></p><ul>'
               + "".join(f"<li>{_markdown_inline(d)}</li>" for d in v.details) + "</ul>")
    if v.warnings:
        out.append("<p>Warnings:</p><ul>" + "".join(f'<li class="warn">{escape(w)}</li>' for w in v.warnings) + "</ul>")
    out.append("</div>")
    out.append(f"<h{h + 1}>Summary table</h{h + 1}>")
    out.append('<p class="muted">Sorted by validation risk (lower is better; the first row is the estimator the risk '
               "trusts most). \"Risk above best\" is the mean over the validation folds of the fold-by-fold risk "
               "difference to the best estimator, with its standard error; \"tied\" estimators are not measurably "
               "worse (one-sided paired t test, 5%). The last row is the trivial estimator h = 0 (\"perfectly "
               "calibrated\"): if it is tied, the data do not show miscalibration. Error in percentage points on the "
               "holdout set; its 95% interval covers both which rows were held out and which rows fitted the fold "
               "models (an estimator's bias excepted). summary.csv has every column at full precision.</p>")
    out.append(_summary_table(res))
    if plots.curve_estimators(res):
        out.append(f"<h{h + 1}>Risk against hyperparameter</h{h + 1}>")
        out.append(figs.add(plots.risk_curves(res), "Mean validation risk over folds (line), +- one paired standard "
                            "error of the fold-by-fold difference to the chosen value (band), the chosen value (red "
                            "diamond), the 15-bin estimator's risk (dotted) and the risk of h = 0, perfectly calibrated "
                            "(dashed).", f"{notion} risk curves"))
    out.append(f"<h{h + 1}>Estimator comparison</h{h + 1}>")
    out.append(figs.add(plots.forest_plot(res), "Holdout estimate of every estimator with its 95% interval; red: the "
                        "lowest validation risk, blue: tied with it, grey: measurably worse; shaded: the verdict's "
                        "interval.", f"{notion} estimates"))
    out.append(_others_section(notion, res, figs, h + 1))
    return "".join(out)


def _others(res):
    """The literature estimators the risk cannot rank (``result.others``), or None."""
    return res.others if len(res.others) else None


def _others_section(notion, res, figs, h):
    others = _others(res)
    if others is None:
        return ""
    out = [f"<h{h}>Estimates from the literature</h{h}>",
           '<p class="muted">Computed on the same holdout rows but not ranked by the risk; each estimates its own '
           "quantity, so compare numbers only within a quantity.</p>"]
    out.append(figs.add(plots.estimates_by_quantity(res), "Every estimate in one panel per quantity estimated, with "
                        "95% intervals; red: the estimator the risk selected.", f"{notion} estimates by quantity"))
    # One table per quantity in its unit, as the app's Results page (calibdash.display.units).
    for quantity, unit, part in units.literature_tables(others):
        u = units.header_unit(unit)
        points = unit == units.PERCENTAGE_POINTS
        cols = [c for c in ("estimator", "label", "estimate", "estimate_se", "ci_low", "ci_high", "p_value", "details")
                if c in part]
        value = (lambda x: num(x, ".2f")) if points else format_significant
        spread = (lambda x: num(x, ".2f")) if points else (lambda x: format_significant(x, 2))
        fmt = {"estimate": value, "estimate_se": spread, "ci_low": value, "ci_high": value, "p_value": _p}
        words = {"estimate": f"estimate ({u})", "estimate_se": f"s.e. ({u})", "ci_low": f"95% low ({u})",
                 "ci_high": f"95% high ({u})", "p_value": "p-value (a probability)"}
        rows = [[fmt[c](r[c]) if c in fmt else escape(r[c]) for c in cols] for _, r in part.iterrows()]
        out.append(f"<p><strong>{escape(quantity)}</strong>" + ("" if f"({unit})" in quantity else f", in {escape(unit)}")
                   + "</p>")
        out.append(table([words.get(c, c) for c in cols], rows, numeric=tuple(i for i, c in enumerate(cols) if c in fmt)))
    return "".join(out)


def _reliability_section(m, figs, h, n_bins, strategy, n_resamples):
    out = [f"<h{h}>Reliability diagram</h{h}>"]
    pred = m.predictions
    if pred is None:
        out.append('<p class="muted">Not included: the report was built without the predictions '
                   "(pass <code>predictions=</code> to <code>calibdash.report</code>).</p>")
        return "".join(out)
    names = pred.class_names  # the figures escape them for plotly (calibdash.display.text.plot_text)
    opts = {"n_bins": n_bins, "strategy": strategy, "n_resamples": n_resamples}
    top = top_label_view(pred, m.results.get("top-label"), **opts)
    note = f" {top.note}" if top.note else ""
    out.append(figs.add(
        plots.reliability_figure(top.table, title="Top-label reliability", recal=top.recalibration),
        f"{'Equal-width' if strategy == 'uniform' else 'Equal-mass'} bins ({n_bins}) of all rows: how often the "
        f"predicted class is right, with a 90% bootstrap band ({n_resamples} resamples); orange: the selected "
        f"estimator's recalibration map on the holdout rows. {diagram_ece_name(n_bins, strategy, sentence=True)}: "
        f"{100 * top.table.attrs['ece']:.2f} points.{note}",
        "top-label reliability",
    ))
    # one set of per-class panels, as in the app: canonical if evaluated, else classwise
    notion = next((n for n in ("canonical", "classwise") if n in m.results), None)
    if notion is not None:
        view = per_class_view(pred, m.results[notion], **opts)
        out.append(f"<h{h + 1}>Per-class reliability ({escape(notion)})</h{h + 1}>")
        out.append(figs.add(
            plots.per_class_figure(view.tables, names, view.recalibration),
            f"The {len(view.classes)} most frequent classes: predicted probability of the class against how often it "
            f"occurs; orange: the map of the selected estimator ({view.estimator or 'not available'}) on the holdout rows.",
            f"{notion} per-class reliability",
        ))
        if view.triangle is not None:
            out.append(figs.add(
                plots.ternary_figure(view.triangle[0], view.triangle[1], names, labels=view.triangle[2]),
                "Holdout predictions in the probability triangle; orange: where the selected estimator moves them.",
                f"{notion} simplex",
            ))
    return "".join(out)


def _p(p):
    """A p-value as HTML: as the project writes p-values (format_p: "< 0.001", else three decimals)."""
    return escape(format_p(p))


def _holdout(test_size):
    """The holdout's size as the call gave it: a fraction (0.3), or a number of rows ("2,520")."""
    try:
        size = float(test_size)
    except (TypeError, ValueError):
        return escape(test_size)
    return format_count(size) if size >= 1 else num(size, "g")


def _test_section(test, h, alpha):
    out = [f"<h{h}>Calibration test</h{h}>"]
    pairs = [
        ("null hypothesis", "the model is calibrated"),
        ("method", escape(getattr(test, "method", "?"))),
        ("estimator", escape(getattr(test, "estimator", "?"))),
        ("statistic", format_significant(getattr(test, "statistic", float("nan")), 4)),
        ("p-value", _p(getattr(test, "p_value", float("nan")))),
    ]
    out.append(kv_table(pairs))
    try:
        text = test.text(alpha)
    except Exception as e:  # noqa: BLE001 - a foreign object's text must not sink the report
        text = f"(no text: {type(e).__name__}: {e})"
    out.append(f"<p>{escape(text)}</p>")
    return "".join(out)


def _references_section(names, h):
    refs = references_for(names)
    out = [f"<h{h}>References</h{h}>", "<ol>"]
    for ref, used in refs:
        by = f"cited for {escape(', '.join(used))}: " if used else ""
        out.append(f"<li>{escape(ref.citation)}{reference_link(ref)}<br><span class=\"muted\">{by}{escape(ref.role)}</span>"
                   f"<pre>{escape(ref.bibtex)}</pre></li>")
    out.append("</ol>")
    every = "\n\n".join(ref.bibtex for ref, _ in refs)
    out.append(details(f"All {len(refs)} BibTeX entries in one block", every))
    return "".join(out)


def _estimator_names(models):
    names = []
    for m in models:
        for res in m.results.values():
            names += [n for n in res.summary["estimator"] if n not in names]
            others = _others(res)
            if others is not None:
                names += [n for n in others["estimator"] if n not in names]
        if m.calibration_test is not None:
            # Calibration tests are SKCE tests (Widmann et al.); their estimator is named
            # "unbiased", "linear", ... without the prefix that selects the reference.
            est = str(getattr(m.calibration_test, "estimator", "") or "")
            name = est if est.startswith("skce") else f"skce-{est}" if est else "skce"
            if name not in names:
                names.append(name)
    return names


def _model_body(m, figs, h, n_bins, strategy, n_resamples, alpha, prefix, rerun):
    out = [_data_section(m, h), _config_section(m, h, rerun)]
    for notion, res in m.results.items():
        out.append(_notion_section(notion, res, figs, h, f"{prefix}{notion}"))
    out.append(_reliability_section(m, figs, h, n_bins, strategy, n_resamples))
    if m.calibration_test is not None:
        out.append(_test_section(m.calibration_test, h, alpha))
    return "".join(out)


def _comparison_figure(models):
    import plotly.graph_objects as go

    fig = go.Figure()
    notions = [n for n in NOTIONS if any(n in m.results for m in models)]
    for notion in notions:
        xs, ys, lo, hi, text = [], [], [], [], []
        for m in models:
            res = m.results.get(notion)
            if res is None:
                continue
            v = verdict(res)
            xs.append(v.estimate_pp)
            lo.append(v.estimate_pp - v.low_pp)
            hi.append(v.high_pp - v.estimate_pp)
            ys.append(plot_text(m.name))
            text.append(plot_text(v.estimator))
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=notion, marker=dict(size=11),
                                 error_x=dict(type="data", symmetric=False, array=hi, arrayminus=lo, visible=True),
                                 customdata=text,
                                 hovertemplate="%{y}: %{x:.2f} points (%{customdata})<extra>" + notion + "</extra>"))
    fig.update_layout(xaxis_title="calibration error of the estimator the risk trusts most (points; the verdict's "
                                  "95% interval)",
                      height=140 + 40 * len(models) * max(1, len(notions)), margin=dict(t=30, b=50, l=160, r=20),
                      legend=dict(orientation="h", y=1.05))
    fig.update_xaxes(rangemode="tozero")
    return fig


def _comparison_section(models, figs, h):
    rows = []
    for m in models:
        for notion, res in m.results.items():
            v = verdict(res)
            base = res.summary[res.summary["estimator"] == "15-bins"]
            base_txt = num(100 * float(base.iloc[0]["estimate"]), ".2f") if len(base) else ""
            rows.append((f'<a href="#model-{escape(_slug(m.name))}">{escape(m.name)}</a>', escape(notion), escape(res.config.get("n")),
                         f"<code>{escape(str(m.data_sha256)[:12])}</code>", escape(v.estimator), num(v.estimate_pp, ".2f"),
                         interval(v.low_pp, v.high_pp, ".2f"), escape(", ".join(v.tied)), base_txt,
                         escape(len(res.warnings) or "")))
    out = [f"<h{h}>Comparison</h{h}>",
           '<p class="muted">Every model was evaluated with the same settings and seed. Per model and notion: the '
           "estimator with the lowest validation risk, its holdout estimate in percentage points, the verdict's "
           "95% interval (the union of the intervals of the estimators tied with the best) and the tied estimators. "
           "Intervals of different models on different data are independent; on the same test set they are not, "
           "and a paired comparison (calibdash.compare) is sharper.</p>",
           table(["model", "notion", "rows", "data sha256", "estimator", "calibration error (points)",
                  "95% interval (verdict, points)",
                  "tied with the best", "15-bin (points)", "warnings"], rows, numeric=(2, 5, 8, 9)),
           figs.add(_comparison_figure(models), "The trusted estimate of every model, by notion.", "comparison")]
    return "".join(out)


@renamed_parameters(n_boot="n_resamples")
def comparison_report(comparison, predictions=None, *, title=None, path=None, n_bins=15, n_resamples=100):
    """A self-contained HTML report of :func:`calibdash.compare`, the paired comparison of models.

    It holds what the app's Compare page shows (every model's calibration error, accuracy and
    Brier score, the paired differences with intervals and p-values, the overlaid reliability
    diagrams), the settings and seed, every model's data fingerprint, the library versions and
    the references. Like :func:`report`, it loads nothing from the network.

    Parameters
    ----------
    comparison : ComparisonResult
    predictions : dict, optional
        ``{model name: Predictions}``: their source names are shown beside the fingerprints.
    title : str, optional
        Default: "Calibration comparison of N models".
    path : str or path-like, optional
        Also write the HTML there (UTF-8).
    n_bins, n_resamples : int
        The overlaid reliability diagrams' equal-width bins (all rows) and bootstrap resamples.

    Returns
    -------
    str
        The HTML document.
    """
    from calibdash.display import reliability as rl

    cfg = comparison.config
    names = list(comparison.models["model"])
    if title is None:
        title = f"Calibration comparison of {len(names)} models"
    figs = Figures()
    head = title_block(title, "Method: every model is evaluated with the same split and seed and measured by the same "
                              "estimator; two models differ by the paired difference of their squared calibration "
                              "errors on the same holdout rows, with an interval and a p-value that cover which rows "
                              "were held out and which rows fitted the fold models (Gruber &amp; Bach, TMLR 2025).")
    body = []
    nav = [f'<li><a href="#{a}">{t}</a></li>' for a, t in (
        ("settings", "Settings and seed"), ("models", "Models"), ("pairs", "Differences between models"), ("data", "Data"),
        ("versions", "Library versions"), ("references", "References"))]
    settings = [("notion", escape(cfg.get("notion"))), ("estimator", escape(comparison.estimator)),
                ("estimator chosen by", escape(cfg.get("estimator_chosen_by"))),
                ("estimators tried", escape(", ".join(cfg.get("estimators") or []))),
                ("holdout fraction", _holdout(cfg.get("test_size"))), ("folds", escape(cfg.get("n_folds"))),
                ("seed", escape(cfg.get("random_state"))), ("interval level", num(cfg.get("level"), "g")),
                ("rows / holdout rows", escape(f"{cfg.get('n')} / {cfg.get('n_test')}"))]
    body.append('<section id="settings"><h2>Settings and seed</h2>' + kv_table(settings)
                + "<p>To rerun in Python: <code>cd.compare(models, notion=..., estimator=..., random_state=...)</code> "
                  "with the settings above and the same predictions (their fingerprints are below).</p></section>")
    rows = [(escape(r["model"]), num(r["accuracy"], ".2f"), num(r["brier"], ".4f"), escape(r["estimator"]), escape(r["hyperparameters"]),
             num(r["val_risk"], ".5g"), num(r["estimate"], ".2f"), interval(r["ci_low"], r["ci_high"], ".2f"))
            for _, r in plots.comparison_models_points(comparison.models).iterrows()]
    body.append('<section id="models"><h2>Models</h2><p class="muted">The calibration error of each model on the holdout '
                "rows (0 = calibrated) with its 95% interval; accuracy and the Brier score mix in how often the model is "
                "right.</p>"
                + table(["model", "accuracy (% correct)", "Brier", "estimator", "hyperparameters", "risk", "calibration error (points)",
                         "95% interval (points)"], rows, numeric=(1, 2, 5, 6))
                + figs.add(plots.comparison_figure(comparison), "Calibration error in percentage points with its 95% "
                           "interval, accuracy and Brier score of every model.", "comparison estimates")
                + "</section>")
    rows = [(escape(r["model_a"]), escape(r["model_b"]), num(r["error_difference"], ".2f"),
             interval(r["error_difference_low"], r["error_difference_high"], ".2f")
             if np.isfinite(r["error_difference_low"]) else escape(plots.NO_PAIR_INTERVAL),
             _p(r["p_value"]), num(r["estimate_a"], ".2f"), num(r["estimate_b"], ".2f"))
            for _, r in plots.comparison_pairs_points(comparison).iterrows()]
    out = ['<section id="pairs"><h2>Differences between models</h2><p class="muted">The calibration error of model a '
           "minus that of model b on the same holdout rows, in percentage points: below 0, model a is better calibrated. "
           "The p-value is that of 'both models are equally well calibrated' (a paired test of their squared errors: "
           "equal squares are equal errors); the interval is the delta method's, none when an error is within two "
           "standard errors of 0. ComparisonResult.pairs (and the app's pairs download) has every column, the squared "
           "differences among them, in fractions.</p>",
           table(["model a", "model b", "difference of errors (points)", "95% interval (points)", "p-value",
                  "error of a (points)", "error of b (points)"], rows, numeric=(2, 4, 5, 6)),
           figs.add(plots.pairs_figure(comparison), "Differences of the calibration errors between pairs of models, in "
                    "percentage points, with 95% intervals.", "comparison pairs")]
    if comparison.probs and comparison.labels is not None:
        tables = {name: rl.reliability_table(*rl.top_label(P, comparison.labels), n_bins=n_bins, n_resamples=n_resamples)
                  for name, P in comparison.probs.items()}
        out.append(figs.add(plots.overlaid_reliability_figure(tables), f"Top-label reliability of every model ({n_bins} "
                            "equal-width bins, all rows): the closer to the dashed diagonal, the better calibrated.",
                            "comparison reliability"))
    body.append("".join(out) + "</section>")
    predictions = predictions or {}
    rows = []
    for name in names:
        res_cfg = comparison.results[name].config if name in comparison.results else {}
        pred = predictions.get(name)
        rows.append((escape(name), escape(pred.source_name) if pred is not None else "", escape(res_cfg.get("n", "")),
                     escape(res_cfg.get("n_classes", "")), f"<code>{escape(res_cfg.get('data_sha256', '?'))}</code>"))
    body.append('<section id="data"><h2>Data</h2>'
                + table(["model", "source", "rows", "classes", "data sha256"], rows, numeric=(2, 3))
                + '<p class="muted">The sha256 is of the probabilities (float64) and labels (int64) as evaluated, whatever '
                  "the file format: equal numbers give equal fingerprints.</p></section>")
    body.append('<section id="versions"><h2>Library versions</h2>' + _versions(comparison.results.values()) + "</section>")
    used = [comparison.estimator] + [e for e in (cfg.get("estimators") or []) if e != comparison.estimator]
    body.append('<section id="references">' + _references_section(used, 2) + "</section>")
    return document(title, head, nav, body, figs, path=path)


def _slug(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(name)).strip("-") or "model"


@renamed_parameters(n_boot="n_resamples")
def report(results, predictions=None, *, calibration_test=None, title=None, path=None, n_bins=15,
           strategy="uniform", n_resamples=200, alpha=0.05, results_file=None, made_by="python"):
    """A self-contained HTML report of an evaluation, or a comparison of models.

    Parameters
    ----------
    results : EvaluationResult, dict or list
        One model: an ``EvaluationResult``, a dict ``{notion: EvaluationResult}`` (what
        the app holds) or a list of one model's results for several notions.
        Comparison: ``{model name: EvaluationResult or {notion: EvaluationResult}}``.
        See :func:`normalise_results`.
    predictions : Predictions, (P, y), dict or None
        The evaluated data, for the reliability diagrams (the result does not hold it).
        Their sha256 must equal the results' ``config["data_sha256"]``. For a comparison,
        ``{model name: Predictions}``. None leaves the diagrams out.
    calibration_test : object, dict or None
        A calibration test result: any object with ``statistic``, ``p_value``,
        ``method``, ``estimator`` and ``text(alpha)``; for a comparison, optionally
        ``{model name: test}``.
    title : str, optional
        Default: "Calibration report" (with the data's name when known).
    path : str or path-like, optional
        Also write the HTML there (UTF-8).
    n_bins, strategy, n_resamples : int, {"uniform", "quantile"}, int
        Reliability diagram settings (display only), as on the app's Reliability page.
    alpha : float, default=0.05
        Level passed to ``calibration_test.text``.
    results_file : str, optional
        The name of the result file that goes with the report: the provenance tells the
        reader to rerun it. Required unless ``made_by="python"``.
    made_by : {"python", "cli", "app"}, default="python"
        Who makes the report, so that the provenance names what that caller offers: the
        command line's result file written beside the report, the app's "Full results
        (JSON)" download, or (Python) how to write a result file.

    Returns
    -------
    str
        The HTML document. It loads nothing from the network: plotly.js is inline once,
        the fonts are the system's.

    Raises
    ------
    InputError
        For predictions that are not the evaluated data, or results in none of the
        accepted shapes.
    """
    rerun = _rerun_text(made_by, results_file)
    models = normalise_results(results, predictions, calibration_test)
    comparison = len(models) > 1 or models[0].name is not None
    if title is None:
        if comparison:
            title = f"Calibration comparison of {len(models)} models"
        elif models[0].predictions is not None:
            title = f"Calibration report: {models[0].predictions.source_name}"
        else:
            title = "Calibration report"
    figs = Figures()
    body, nav = [], []
    head = title_block(title, "Method: Gruber &amp; Bach (TMLR 2025): estimators of squared calibration errors tuned "
                              "and chosen by a mean-squared-error risk on validation folds, estimates on a holdout "
                              "set never used for selection.")
    if comparison:
        nav.append('<li><a href="#comparison">Comparison</a></li>')
        body.append('<section id="comparison">' + _comparison_section(models, figs, 2) + "</section>")
        for m in models:
            slug = _slug(m.name)
            nav.append(f'<li><a href="#model-{escape(slug)}">{escape(m.name)}</a></li>')
            body.append(f'<section id="model-{escape(slug)}"><h2>Model: {escape(m.name)}</h2>'
                        + _model_body(m, figs, 3, n_bins, strategy, n_resamples, alpha, f"{slug}-", rerun) + "</section>")
    else:
        m = models[0]
        for notion in m.results:
            nav.append(f'<li><a href="#{escape(notion)}">{escape(_NOTION_TITLES.get(notion, notion))} calibration</a></li>')
        body.append(_model_body(m, figs, 2, n_bins, strategy, n_resamples, alpha, "", rerun))
    nav.append('<li><a href="#references">References</a></li>')
    body.append('<section id="references">' + _references_section(_estimator_names(models), 2) + "</section>")
    return document(title, head, nav, body, figs, path=path)
