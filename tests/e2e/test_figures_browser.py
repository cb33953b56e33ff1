"""End to end: the figures read right on a 400-pixel-wide screen (issue 16).

In Debian's chromium against a real ``streamlit run``: every axis title and tick label lies
inside its figure, no panel title covers a tick label, an axis title or the legend, and every
interval bar shows beyond its marker. Screenshots go to tests/output/ (not committed).
"""

from .browser import OUTPUT, new_session

NARROW = {"width": 400, "height": 900}

# Text boxes, interval bars and markers of one plotly chart, in page pixels.
MEASURE = """(root) => {
    const box = e => { const b = e.getBoundingClientRect();
                       return {l: b.left, r: b.right, t: b.top, b: b.bottom, text: e.textContent}; };
    const texts = sel => [...root.querySelectorAll(sel)].filter(e => e.textContent.trim()).map(box);
    return {
        figure: box(root.querySelector('.main-svg')),
        titles: texts('.infolayer g[class^="g-"][class$="title"] text'),
        annotations: texts('.infolayer .annotation text'),
        ticks: texts('g[class$="tick"] > text'),
        legend: texts('.legend text'),
        bars: [...root.querySelectorAll('g.errorbar path')].map(box),
        markers: [...root.querySelectorAll('.scatterlayer g.points path.point')].map(box),
    };
}"""


def inside(a, b, slack=1.0):
    return a["l"] >= b["l"] - slack and a["r"] <= b["r"] + slack and a["t"] >= b["t"] - slack and a["b"] <= b["b"] + slack


def overlap(a, b, slack=1.0):
    return min(a["r"], b["r"]) - max(a["l"], b["l"]) > slack and min(a["b"], b["b"]) - max(a["t"], b["t"]) > slack


def check_chart(pg, key, *, axis_titles=True):
    """Measure the chart of widget ``key`` and assert that it reads right; returns the measures."""
    root = pg.locator(f".st-key-{key} .js-plotly-plot")
    root.wait_for(timeout=240_000)
    root.scroll_into_view_if_needed()
    pg.wait_for_timeout(300)
    m = root.evaluate(MEASURE)
    assert bool(m["titles"]) == axis_titles, f"{key}: axis titles {m['titles']}"
    for t in m["titles"] + m["ticks"]:
        assert inside(t, m["figure"]), f"{key}: {t['text']!r} is cut off by the figure's edge ({t} outside {m['figure']})"
    for a in m["annotations"]:
        for t in m["ticks"] + m["titles"] + m["legend"]:
            assert not overlap(a, t), f"{key}: the title {a['text']!r} covers {t['text']!r}"
    OUTPUT.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=OUTPUT / f"narrow_{key}.png")
    return m


def check_interval_bars(m, key):
    assert m["bars"] and len(m["bars"]) == len(m["markers"]), f"{key}: {len(m['bars'])} bars, {len(m['markers'])} markers"
    for bar, marker in zip(m["bars"], m["markers"]):
        assert bar["b"] - bar["t"] > marker["b"] - marker["t"], f"{key}: an interval bar hides behind its marker"


def narrow(w):
    w.page.set_viewport_size(NARROW)
    w.page.wait_for_timeout(1500)  # plotly redraws on resize


def test_results_figures_read_right_at_400_pixels(browser, server):
    context, w = new_session(browser, server)
    try:
        w.goto_page("Results")
        narrow(w)
        risk = check_chart(w.page, "risk_curves")
        assert "temperature" not in [a["text"] for a in risk["annotations"]]  # top-label shown first: no default temperature
        assert any("\u2212" in t["text"] for t in risk["ticks"])  # powers of ten: 10^-k with a true minus
        assert not any(t["text"].rstrip().endswith(("f", "p", "n", "\u00b5", "m")) for t in risk["ticks"])  # no SI prefixes
        check_interval_bars(check_chart(w.page, "forest"), "forest")
        check_interval_bars(check_chart(w.page, "estimates_by_quantity", axis_titles=False), "estimates_by_quantity")
        w.page.set_viewport_size({"width": 1400, "height": 2000})
        w.page.locator(".st-key-view__notion").get_by_text("canonical").click()
        w.wait_idle()
        narrow(w)
        risk = check_chart(w.page, "risk_curves")
        assert "temperature" in [a["text"] for a in risk["annotations"]]  # its panel is drawn
        w.check()
    finally:
        context.close()


def test_reliability_figures_read_right_at_400_pixels(browser, server):
    context, w = new_session(browser, server)
    try:
        w.goto_page("Reliability")
        narrow(w)
        m = check_chart(w.page, "reliability_diagram")
        assert m["bars"] and all(b["r"] - b["l"] >= 4 for b in m["bars"])  # every band has its caps
        check_chart(w.page, "continuous_reliability")
        w.page.set_viewport_size({"width": 1400, "height": 2000})
        w.page.locator(".st-key-view__notion").get_by_text("canonical").click()
        w.wait_idle()
        narrow(w)
        m = check_chart(w.page, "per_class", axis_titles=False)
        titles = [a["text"] for a in m["annotations"]]
        assert len(titles) == 6 and all(t.startswith("digit ") for t in titles), titles  # the class names
        w.check()
    finally:
        context.close()


def test_legends_cover_no_title_at_any_width(browser, tmp_path):
    # issue 27: on Compare's overlaid reliability chart the legend covered the x axis's title. The
    # figures with a legend, drawn alone (no server needed) at a phone's width and a desktop's.
    import numpy as np

    from calibdash.display import plots
    from calibdash.display import reliability as rl

    rng = np.random.default_rng(27)
    tables = {}
    for i, name in enumerate(["a model with a long name", "another model", "a third one"]):
        conf = rng.uniform(0.4, 1.0, 2000)
        correct = (rng.random(2000) < conf ** (1 + i / 2)).astype(int)
        tables[name] = rl.reliability_table(conf, correct, n_bins=10, n_resamples=0)
    figures = {"overlaid": plots.overlaid_reliability_figure(tables), "reliability": plots.reliability_figure(tables["another model"]),
               "continuous": plots.continuous_reliability_figure(rl.continuous_reliability_curve(
                   np.column_stack([conf, 1 - conf]), 1 - correct, n_resamples=0, grid=21))}
    context = browser.new_context()
    try:
        pg = context.new_page()
        for name, fig in figures.items():
            path = tmp_path / f"{name}.html"
            fig.write_html(path, include_plotlyjs=True, config={"responsive": True})
            for size in (NARROW, {"width": 1200, "height": 900}):
                pg.set_viewport_size(size)
                pg.goto(path.as_uri())
                root = pg.locator(".js-plotly-plot")
                root.wait_for(timeout=60_000)
                pg.wait_for_timeout(500)
                m = root.evaluate(MEASURE)
                assert m["legend"] and m["titles"], (name, size)
                for entry in m["legend"]:
                    for t in m["titles"] + m["ticks"]:
                        assert not overlap(entry, t), f"{name} at {size['width']} px: the legend's {entry['text']!r} covers {t['text']!r}"
    finally:
        context.close()
