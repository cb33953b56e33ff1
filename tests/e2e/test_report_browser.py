"""The HTML report in Debian's chromium, opened from disk with every network request refused.

Every figure must render (plotly.js comes inline with the file) without a console error,
a page error or a request that left the file.
"""

import pytest

import calibdash as cd
from calibdash.lab.simulation import dirichlet_simulation

from .browser import OUTPUT


def _model(seed, names=("cat", "<b>dog</b>", "bird")):
    sim = dirichlet_simulation(n=600, n_classes=3, alpha=0.5, random_state=seed)
    pred = cd.Predictions(probs=sim.probs, labels=sim.labels, class_names=names, kind="probabilities",
                          source_name='<img src="https://example.invalid/x.png">model.npz')
    grids = {"kde": {"bandwidth": [0.05, 0.2, 0.5]}, "bins": {"n_bins": [5, 10, 20]}}
    top = cd.evaluate(pred, notion="top-label", estimators=["15-bins", "bins", "kde", "temperature"], grids=grids, n_folds=3)
    can = cd.evaluate(pred, notion="canonical", estimators=["kde", "temperature"], grids={"kde": grids["kde"]}, n_folds=3)
    return pred, {"top-label": top, "canonical": can}


class _Test:  # a calibration test result as calibdash.skce returns one (duck-typed)
    statistic, p_value, method, estimator = 0.012, 0.003, "asymptotic", "unbiased"

    def text(self, alpha):
        return f"The model is not calibrated (p = 0.003 < {alpha})."


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    pred_a, res_a = _model(1)
    pred_b, res_b = _model(2)
    single = out / "report.html"
    cd.report(res_a, pred_a, calibration_test=_Test(), path=single)
    comparison = out / "comparison" / "report.html"
    comparison.parent.mkdir()
    cd.report({"model a": res_a, "model b": res_b}, {"model a": pred_a, "model b": pred_b}, path=comparison)
    return {"single": single, "comparison": comparison}


@pytest.mark.parametrize("which", ["single", "comparison"])
def test_report_renders_every_figure_offline(browser, reports, which):
    path = reports[which]
    context = browser.new_context(viewport={"width": 1300, "height": 1800})
    refused, failed, errors = [], [], []

    def route(r):
        url = r.request.url
        if url.startswith(("file://", "data:", "blob:")):
            r.continue_()
        else:
            refused.append(url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("requestfailed", lambda r: failed.append(r.url))
    try:
        page.goto(path.as_uri(), wait_until="load")
        expected = int(page.locator('meta[name="calibdash-figures"]').get_attribute("content"))
        assert expected >= (6 if which == "single" else 8)
        assert page.locator("figure.cd-figure").count() == expected
        # plotly draws each figure into svgs inside its div, with one group per trace
        count_js = ("() => [...document.querySelectorAll('figure.cd-figure')].map(f => [f.querySelectorAll("
                    "'.js-plotly-plot .main-svg').length, f.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length])")
        page.wait_for_function(f"n => ({count_js})().filter(([s, t]) => s > 0 && t > 0).length === n", arg=expected,
                               timeout=60_000)
        drawn = page.evaluate(count_js)
        assert len(drawn) == expected and all(s > 0 and t > 0 for s, t in drawn), drawn
        assert page.locator("figure.cd-figure .js-plotly-plot").count() == expected
        # markup in user strings stays text: no image element, the class name shown with its brackets
        assert page.evaluate("() => document.querySelectorAll('img').length") == 0
        assert page.locator("svg text", has_text="<b>dog</b>").count() >= 1
        page.screenshot(path=str(OUTPUT / f"report_{which}.png"), full_page=False)
    finally:
        context.close()
    assert not errors, errors
    assert not failed, failed
    assert not refused, refused
