"""The HTML report (calibdash.reporting.html, cd.report) and the references behind it (calibdash.reporting.references).

Small simulated data (600 rows, 3 classes) and reduced grids keep this file fast; the
report's content does not depend on the data's size.
"""

import re
from html import escape
from types import SimpleNamespace

import numpy as np
import pytest

import calibdash as cd
from calibdash.clinical.verdicts import format_p
from calibdash.display import plots
from calibdash.display.units import PERCENTAGE_POINTS, QUANTITY_UNITS
from calibdash.display.verdict import verdict
from calibdash.estimators.registry import REGISTRY
from calibdash.formatting import format_significant
from calibdash.lab.simulation import dirichlet_simulation
from calibdash.reporting.html import normalise_results
from calibdash.reporting.references import CORE, REFERENCES, VALIDATION_REFERENCES, bibtex, reference_keys, references_for

HOSTILE_NAME = '<img src="http://example.invalid/x.png" onerror="alert(1)">preds.npz'
HOSTILE_CLASS = "</script><script>alert(2)</script>"
PLOTLY_SIGNATURE = "plotly.js v"  # the header comment of the embedded library


def _predictions(seed=1, n=600, hostile=False):
    sim = dirichlet_simulation(n=n, n_classes=3, alpha=0.5, random_state=seed)
    classes = ("cat", HOSTILE_CLASS, "dog") if hostile else ("a", "b", "c")
    return cd.Predictions(probs=sim.probs, labels=sim.labels, class_names=classes, kind="probabilities",
                          source_name=HOSTILE_NAME if hostile else "sim.npz")


def _evaluate(pred, notion):
    estimators = ["15-bins", "bins", "kde", "temperature"] if notion == "top-label" else ["kde", "temperature"]
    grids = {"kde": {"bandwidth": [0.05, 0.2, 0.5]}}
    if notion == "top-label":
        grids["bins"] = {"n_bins": [5, 10, 20]}
    return cd.evaluate(pred, notion=notion, estimators=estimators, grids=grids, n_folds=3, random_state=4)


@pytest.fixture(scope="module")
def model():
    pred = _predictions(hostile=True)
    return pred, {"top-label": _evaluate(pred, "top-label"), "canonical": _evaluate(pred, "canonical")}


@pytest.fixture(scope="module")
def html(model):
    pred, results = model
    return cd.report(results, pred)


def _notion_figures(res):
    """Risk curves and estimates, plus the panel of literature estimates when the result has any."""
    from calibdash.display import plots

    others = getattr(res, "others", None)
    return 2 + int(others is not None and len(others) > 0 and hasattr(plots, "estimates_by_quantity"))


def _figure_count(doc):
    return int(re.search(r'<meta name="calibdash-figures" content="(\d+)">', doc).group(1))


def _visible_text(doc):
    """The document without scripts and tags: what a reader sees."""
    doc = re.sub(r"<script.*?</script>", "", doc, flags=re.S)
    return re.sub(r"<[^>]+>", " ", doc)


@pytest.mark.slow
def test_report_states_fingerprint_configuration_versions_and_verdict(model, html):
    pred, results = model
    text = _visible_text(html)
    assert pred.sha256 in text
    for notion, res in results.items():
        assert verdict(res).headline in text
        for name in res.summary["estimator"]:
            assert f"<td>{name}</td>" in html
        # the seed, folds and holdout fraction of the call
        call = res.config["call"]
        assert f"<td>{notion}</td>" in html and f'<td class="num">{call["random_state"]}</td>' in html
    for lib, version in results["top-label"].config["versions"].items():
        assert lib in text and version in text
    # the run's estimate in points, with its interval; every estimator's interval, the
    # paired comparison and the reference h = 0 in the summary table
    best = results["top-label"].best
    assert f"{100 * best['estimate']:.2f}" in text
    for res in results.values():
        for _, r in res.summary.iterrows():
            assert f"{100 * r['ci_low']:.2f} to {100 * r['ci_high']:.2f}" in text
        ref = res.reference
        assert "perfectly calibrated (reference)" in text and f"{ref['risk_diff']:.3g}" in text
        v = verdict(res)
        assert f"95% interval {v.low_pp:.2f} to {v.high_pp:.2f}" in text
    assert "tied with best" in text and "risk above best (paired)" in text


def test_report_gives_one_unit_per_quantity_in_its_headers(model, html):
    """Issue 27: as the app, calibration errors in percentage points, every other quantity on its own
    scale said in the header, and the paper's 100 sqrt(risk) not read as an error."""
    _, results = model
    assert "<th>calibration error (points)</th>" in html and "<th>95% interval (points)</th>" in html
    assert "<th>100 √risk (a score, not an error)</th>" in html and "<th>error (points)</th>" not in html
    for res in results.values():
        for _, r in res.others.iterrows():
            unit = QUANTITY_UNITS[r["quantity"]]
            if unit == PERCENTAGE_POINTS:
                assert f'<td class="num">{100 * r["estimate"]:.2f}</td>' in html
            else:
                assert f"<th>{escape(f'estimate ({unit})')}</th>" in html
                assert f'<td class="num">{format_significant(r["estimate"])}</td>' in html
    assert "<th>estimate (points)</th>" in html and "<th>95% low (points)</th>" in html
    assert "<th>quantity</th>" not in html  # one table per quantity, named above it


def test_report_has_every_figure_and_plotly_once_inline(model, html):
    pred, results = model
    # per notion (risk curves, estimates, ...) + top-label diagram + per-class panels + simplex
    assert _figure_count(html) == sum(map(_notion_figures, results.values())) + 3
    assert html.count('class="cd-figure"') == _figure_count(html)
    assert html.count("Plotly.newPlot(") == _figure_count(html)
    assert html.count(PLOTLY_SIGNATURE) == 1


def test_report_loads_nothing_from_the_network(html):
    assert not re.search(r"<script[^>]*\bsrc=", html)
    assert "<link" not in html and "@import" not in html and "@font-face" not in html
    assert not re.search(r"url\(\s*['\"]?https?:", html)
    assert not re.search(r"<(img|iframe)\b", html)


@pytest.mark.slow
def test_the_stylesheet_is_the_toolkits_and_a_missing_number_an_empty_cell(model, html):
    from calibdash.reporting.html_kit import CSS

    assert html.count("<style>") == 1 and f"<style>{CSS}</style>" in html  # the validation report's too
    pred, results = model
    test = SimpleNamespace(statistic=float("nan"), p_value=None, method="asymptotic", estimator="unbiased",
                           text=lambda alpha: "no test")
    doc = cd.report(results["canonical"], pred, calibration_test=test)
    assert "<th>statistic</th><td></td>" in doc and "<th>p-value</th><td></td>" in doc


def test_user_strings_are_escaped(html):
    assert HOSTILE_NAME not in html and HOSTILE_CLASS not in html
    assert "&lt;img src=&quot;http://example.invalid/x.png&quot;" in html


def test_references_cover_every_estimator_with_bibtex(model, html):
    _, results = model
    names = {n for res in results.values() for n in res.summary["estimator"]}
    for res in results.values():
        others = getattr(res, "others", None)
        if others is not None:
            names |= set(others["estimator"])
    cited = set(re.findall(r"@\w+\{([^,]+),", html))
    assert cited == {key for name in names for key in reference_keys(name)} | {"gruber2025optimizing"}
    assert {"guo2017calibration", "popordanoska2022consistent"} <= cited
    # each entry twice: under its reference and in the block of all entries
    assert all(html.count(f"{{{key},") == 2 for key in cited)


def test_predictions_of_other_data_are_refused(model):
    _, results = model
    other = _predictions(seed=2)
    with pytest.raises(cd.InputError, match="not the data the results were computed on"):
        cd.report(results, other)


@pytest.mark.slow
def test_without_predictions_the_diagrams_are_left_out_with_a_note(model):
    _, results = model
    doc = cd.report(results["top-label"])
    assert _figure_count(doc) == _notion_figures(results["top-label"]) and "pass <code>predictions=</code>" in doc


@pytest.mark.slow
def test_result_from_json_has_no_recalibration_curve_and_says_why(model, tmp_path):
    pred, results = model
    loaded = cd.EvaluationResult.from_json(results["top-label"].to_json())
    doc = cd.report(loaded, pred, path=tmp_path / "r.html", title="A <title>")
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == doc
    assert "which a result read from JSON does not hold" in doc
    assert "<title>A &lt;title&gt;</title>" in doc
    with_models = cd.report(results["top-label"], pred)
    assert "recalibrated by" in with_models and "recalibrated by" not in doc


@pytest.mark.slow
def test_calibration_test_is_duck_typed(model):
    pred, results = model
    calls = []

    def text(alpha):
        calls.append(alpha)
        return f"Reject calibration at level {alpha} <b>"

    test = SimpleNamespace(statistic=2520.43, p_value=0.0005102, method="asymptotic", estimator="unbiased", text=text)
    doc = cd.report(results["canonical"], pred, calibration_test=test, alpha=0.01)
    assert calls == [0.01]
    assert "Reject calibration at level 0.01 &lt;b&gt;" in doc
    # issue 27: "2.52e+03" and "0.0005102"; the p-value as the project writes p-values (format_p)
    assert "<td>2,520</td>" in doc and "<td>&lt; 0.001</td>" in doc and "asymptotic" in doc
    assert "2.52e+03" not in doc and "0.0005102" not in doc
    assert "widmann2019calibration" in doc  # the SKCE test's reference


@pytest.mark.slow
def test_comparison_report(model):
    pred, results = model
    pred2 = _predictions(seed=7)
    other = {"top-label": _evaluate(pred2, "top-label")}
    doc = cd.report({"model A": results, "model <B>": other}, {"model A": pred, "model <B>": pred2})
    assert doc.count(PLOTLY_SIGNATURE) == 1
    assert 'id="comparison"' in doc and "model &lt;B&gt;" in doc and "model <B>" not in doc
    assert pred.sha256 in doc and pred2.sha256 in doc
    # comparison figure + model A (its notions + 3 diagrams) + model B (its notion + top-label diagram)
    assert _figure_count(doc) == 1 + sum(map(_notion_figures, results.values())) + 3 + _notion_figures(other["top-label"]) + 1
    assert doc.count("Plotly.newPlot(") == _figure_count(doc)


def test_normalise_results_shapes_and_errors(model):
    pred, results = model
    assert [m.name for m in normalise_results(results)] == [None]
    assert list(normalise_results(list(results.values()))[0].results) == ["top-label", "canonical"]
    assert [m.name for m in normalise_results({"x": results["top-label"], "y": results})] == ["x", "y"]
    with pytest.raises(ValueError, match="expected an EvaluationResult"):
        normalise_results({"x": 3})
    with pytest.raises(ValueError, match="results must be"):
        normalise_results({})
    with pytest.raises(ValueError, match="two results for the 'top-label' notion"):
        normalise_results([results["top-label"], results["top-label"]])
    other = _evaluate(_predictions(seed=9), "canonical")
    with pytest.raises(ValueError, match="different data"):
        normalise_results([results["top-label"], other])
    with pytest.raises(ValueError, match="unknown models"):
        normalise_results({"x": results}, {"y": pred})


@pytest.mark.parametrize(
    "name, key",
    [
        ("bins", "gruber2025optimizing"), ("ukkr", "gruber2025optimizing"), ("kkkr", "gruber2025optimizing"),
        ("bins-quantile", "gruber2025optimizing"), ("15-bins", "guo2017calibration"),
        ("temperature", "guo2017calibration"), ("kde", "popordanoska2022consistent"),
        ("skce-unbiased", "widmann2019calibration"), ("variational-l2", "berta2026variational"),
        ("ece-kde", "posocco2021estimating"), ("isotonic", "zadrozny2002transforming"),
        ("something-new", "gruber2025optimizing"),
    ],
)
def test_reference_of_each_estimator_name(name, key):
    assert reference_keys(name) == [key]


def test_every_pipeline_estimator_has_a_reference_and_the_core_paper_comes_first():
    refs = references_for(list(REGISTRY))
    assert refs[0][0].key == "gruber2025optimizing"
    cited = {n for _, names in refs for n in names}
    assert cited == set(REGISTRY)


def test_bibtex_entries_are_well_formed():
    text = bibtex(["kde", "skce-linear", "variational", "ece-bins", "isotonic", "15-bins"])
    entries = re.findall(r"@(\w+)\{([^,]+),(.*?)\n\}", text, flags=re.S)
    # the estimators cite every reference but those only the clinical validation cites
    clinical_only = set(VALIDATION_REFERENCES) - {CORE}
    assert {k for _, k, _ in entries} == set(REFERENCES) - clinical_only
    entries += re.findall(r"@(\w+)\{([^,]+),(.*?)\n\}", "\n\n".join(REFERENCES[k].bibtex for k in clinical_only),
                          flags=re.S)
    assert {k for _, k, _ in entries} == set(REFERENCES)
    for kind, key, body in entries:
        assert kind in ("article", "inproceedings", "misc")
        assert body.count("{") == body.count("}"), key
        for field in ("author", "title", "year"):
            assert re.search(rf"^\s*{field}\s*=", body, flags=re.M), (key, field)
        year = re.search(r"year\s*=\s*\{(\d{4})\}", body).group(1)
        assert year in REFERENCES[key].citation


@pytest.mark.slow
def test_provenance_names_the_result_file_its_caller_offers(model):
    from calibdash.reporting.html import report

    pred, results = model
    app = report(results, pred, results_file="results_sim_seed4.json", made_by="app")
    assert "Full results (JSON)" in app and "rerun results_sim_seed4.json --predictions FILE" in app
    assert "result.json" not in app and "written beside this report" not in app
    cli = report(results, pred, results_file="result.json", made_by="cli")
    assert "rerun result.json --use-recorded-paths</code> on the result file written beside this report" in cli
    assert "Full results (JSON)" not in cli
    python = report(results, pred)
    assert "Evaluations.of(results).to_json()" in python and "result.json" not in python
    with pytest.raises(cd.InputError, match="results_file"):
        report(results, pred, made_by="app")
    with pytest.raises(cd.InputError, match="made_by"):
        report(results, pred, results_file="x.json", made_by="browser")


@pytest.fixture(scope="module")
def comparison():
    preds = {"model <b>a</b>": _predictions(seed=5), "model b": _predictions(seed=5)}
    # the same rows and labels, other probabilities for model b: a flattened copy of model a
    P = preds["model b"].probs ** 0.5
    preds["model b"] = cd.Predictions(probs=P / P.sum(axis=1, keepdims=True), labels=preds["model b"].labels,
                                      class_names=("a", "b", "c"), kind="probabilities", source_name="flat.npz")
    return preds, cd.compare(preds, notion="top-label", estimator="kde", random_state=3)


@pytest.mark.slow
def test_comparison_report_is_self_contained_and_holds_the_comparisons_numbers(comparison):
    preds, cmp = comparison
    doc = cd.comparison_report(cmp, preds)
    # offline: no external script, style, font or image
    assert not re.search(r"<script[^>]*\bsrc=", doc)
    assert "<link" not in doc and "@import" not in doc and "@font-face" not in doc
    assert not re.search(r"url\(\s*['\"]?https?:", doc) and not re.search(r"<(img|iframe)\b", doc)
    assert doc.count(PLOTLY_SIGNATURE) == 1 and _figure_count(doc) == 3 == doc.count("Plotly.newPlot(")
    # the models' and the pairs' numbers, the settings and seed, the fingerprints, the versions, the references
    # issue 27: calibration errors and their differences in percentage points, as in the app
    for _, r in cmp.models.iterrows():
        assert f"{100 * r['estimate']:.2f}" in doc and f"{100 * r['accuracy']:.2f}" in doc and f"{r['brier']:.4f}" in doc
        assert f"{100 * r['ci_low']:.2f} to {100 * r['ci_high']:.2f}" in doc
    pair = cmp.error_differences().iloc[0]
    assert f'<td class="num">{100 * pair["error_difference"]:.2f}</td>' in doc
    assert f">{format_p(pair['p_value']).replace('<', '&lt;')}</td>" in doc
    low, high = pair["error_difference_low"], pair["error_difference_high"]
    assert (f"{100 * low:.2f} to {100 * high:.2f}" if np.isfinite(low) else plots.NO_PAIR_INTERVAL) in doc
    assert "<th>difference of errors (points)</th>" in doc and "<th>calibration error (points)</th>" in doc
    assert all(res.config["data_sha256"] in doc for res in cmp.results.values())
    assert "<th>seed</th><td>3</td>" in doc and "<th>estimator</th><td>kde</td>" in doc
    versions = next(iter(cmp.results.values())).config["versions"]
    assert all(f"<th>{k}</th><td>{v}</td>" in doc for k, v in versions.items()) and "plotly (report)" in doc
    assert "gruber2025optimizing" in doc and "References" in doc
    # user text escaped
    assert "model <b>a</b>" not in doc and "model &lt;b&gt;a&lt;/b&gt;" in doc and "flat.npz" in doc
