"""The clinical validation report: offline, in TRIPOD+AI's order, user text escaped; the CSV."""

import dataclasses
import html
import io
import re

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from calibdash.display import clinical as dc
from calibdash.errors import InputError
from calibdash.reporting.validation import SECTIONS, metrics_csv, validation_report

HOSTILE = '<script>alert("x")</script>'


@pytest.fixture(scope="module")
def validation():
    rng = np.random.default_rng(0)
    n = 900
    lp = rng.normal(-0.5, 1.2, n)
    p = 1 / (1 + np.exp(-lp))
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(0.3 + 0.8 * lp))), "died", HOSTILE)
    groups = pd.Series(rng.choice(np.array(["ward <i>A</i>", "ward B"], dtype=object), n), name="ward & unit")
    frame = pd.DataFrame({"p_died": p, "outcome": y, "ward & unit": groups})
    pred = cd.load_predictions(frame, label_column="outcome", positive="died", groups=["ward & unit"],
                               name='hostile "<img src=x>" file')
    return pred, cd.validate_risk_model(pred, groups="ward & unit", n_resamples=40, calibration_error=False)


@pytest.fixture(scope="module")
def page(validation):
    pred, v = validation
    return validation_report(v, made_by="cli", results_file="metrics.csv", predictions=pred)


def _offline(page):
    # no external script, style, image or frame: everything a browser would fetch is inline, plotly.js once
    assert not re.search(r"<(script|img|iframe|link)[^>]+(src|href)=[\"']?(https?:)?//", page, re.I)
    assert len(re.findall(r"plotly\.js v\d", page)) == 1


def _table(page, name):
    """The HTML of the table named ``name`` (data-table), or None."""
    m = re.search(rf'<table data-table="{re.escape(name)}">.*?</table>', page, re.S)
    return m.group(0) if m else None


def test_self_contained(page):
    _offline(page)
    assert page.count("<script") >= 3  # plotly.js inline once, one call per figure
    # the calibration curve, the decision curve and the forest plot
    assert '<meta name="calibdash-figures" content="3">' in page and page.count("<figure") == 3


def test_the_stylesheet_is_the_toolkits_and_a_missing_number_an_empty_cell(page):
    from calibdash.reporting.html_kit import CSS

    assert page.count("<style>") == 1 and f"<style>{CSS}</style>" in page  # the evaluation report's too
    assert page.count('<figure class="cd-figure" data-figure=') == 3
    # the counts of events and non-events need no rows: the cell is empty, as in the evaluation report
    sample_size = _table(page, "sample-size")
    assert sample_size.count('<td>yes</td><td class="num"></td>') == 2


def test_sections_in_tripod_order(page):
    positions = [page.index(f'<section id="{anchor}">') for anchor, _ in SECTIONS if anchor != "centres"]
    assert positions == sorted(positions)
    assert [a for a, _ in SECTIONS] == ["data", "sample-size", "calibration", "discrimination", "usefulness",
                                       "subgroups", "centres", "recalibration", "provenance"]
    headings = re.findall(r"<h2>(\d+)\. ", page)
    assert headings == [str(i) for i in range(1, 9)]  # numbered as shown: no gap where "centres" is left out
    for key in ("vancalster2019calibration", "austin2019integrated", "riley2021minimum", "vickers2006decision",
                "delong1988comparing", "spiegelhalter1986probabilistic", "gruber2025optimizing", "debray2017guide",
                "clopper1934use"):
        assert f'data-key="{key}"' in page


def test_no_centres_section_without_clusters(page):
    assert '<section id="centres">' not in page and 'data-table="pooled"' not in page
    assert "pooled over the centres" not in page and "Each centre analysed alone" not in page


def test_user_text_escaped(page):
    assert "<img src=x>" not in page and "<i>A</i>" not in page and HOSTILE not in page
    assert "&lt;img src=x&gt;" in page and "ward &amp; unit" in page and "ward &lt;i&gt;A&lt;/i&gt;" in page


def test_verdicts_and_provenance(validation, page):
    _, v = validation
    assert page.count('class="status-') == 7
    statuses = re.findall(r'<li class="status-(\w+)"[^>]*><strong>[^<]*\((\w+)\):</strong>', page)
    assert len(statuses) == 7 and all(cls == word for cls, word in statuses)  # the app's words: "ok", not "fine"
    assert "(fine)" not in page
    assert "python -m calibdash validate FILE --groups ward &amp; unit" in page
    assert f"random_state={v.config['random_state']}" in page and "metrics.csv" in page
    assert "thresholds=(0.05, 0.5)" in page and "clusters=None" in page


def test_the_status_words_are_the_apps(validation, monkeypatch):
    # issue 27: the report said "(fine)" where the app said "(ok)"; both print calibdash.clinical.verdicts.STATUS_WORDS
    # (tests/app/test_validate.py holds the app to it)
    from calibdash.clinical.verdicts import STATUS_WORDS

    pred, v = validation
    statuses = [item["status"] for item in dc.hierarchy_verdicts(v)]
    assert "ok" in statuses
    monkeypatch.setitem(STATUS_WORDS, "ok", "all good")
    page = validation_report(v, made_by="cli", results_file="metrics.csv", predictions=pred)
    assert page.count("(all good):</strong>") == statuses.count("ok")


def test_units_stated_once_in_the_header(page):
    head = page[:page.index("<nav>")]
    assert "shown in %" in head and "shown in percentage points" in head and "per 100 patients" in head
    assert "logit scale" in head and "in fractions" in head


def test_grouped_points_and_notes(validation, page):
    _, v = validation
    grouped = _table(page, "grouped")
    g = v.grouped[v.grouped["group"].isna()].sort_values("mean_risk")
    assert grouped is not None and grouped.count("<tr>") == 1 + len(g) == 11
    top = g.iloc[-1]
    assert f"{100 * top['observed']:.1f}%" in grouped and f"{100 * top['ci_high']:.1f}%" in grouped
    whole = v.metrics[v.metrics["group"].isna()].iloc[0]
    data = page[page.index('<section id="data">'):page.index('<section id="sample-size">')]
    mean_risk = (g["mean_risk"] * g["n"]).sum() / g["n"].sum()
    assert f"{100 * mean_risk:.1f}%" in data and f"{whole['events'] / whole['n']:.1%}" in data


def test_net_benefit_with_the_threshold_range(validation, page):
    _, v = validation
    usefulness = page[page.index('<section id="usefulness">'):page.index('<section id="subgroups">')]
    assert '<strong data-thresholds="range">5% to 50%</strong>' in usefulness
    table = _table(usefulness, "net-benefit")
    assert table is not None and "net interventions avoided per 100 patients" in table
    nb = v.net_benefit[v.net_benefit["group"].isna() & np.isclose(v.net_benefit["threshold"], 0.1)].iloc[0]
    assert "<td>10%</td>" in table and f"{nb['avoided_low']:.1f} to {nb['avoided_high']:.1f}" in table
    per_group = _table(page, "group-net-benefit")
    assert per_group is not None and "ward B" in per_group


def test_recalibration_table(validation, page):
    _, v = validation
    section = page[page.index('<section id="recalibration">'):page.index('<section id="provenance">')]
    table = _table(section, "recalibration")
    r = v.recalibration.set_index(["model", "parameter"])
    b = r.loc[("logistic recalibration", "b")]
    assert table is not None and table.count("<tr>") == 4
    assert f"{b['estimate']:.3f}" in table and f"{b['ci_low']:.3f} to {b['ci_high']:.3f}" in table
    assert "p_new = expit(a + b logit(p))" in section


@pytest.mark.slow  # three reports
def test_calibration_error_only_when_asked(validation, page):
    pred, v = validation
    frame = pd.DataFrame({"class": v.classes[0], "group": [None, "ward B"], "estimator": ["kde", "ukkr"],
                          "estimate": [0.0213, 0.04], "ci_low": [0.0, 0.01], "ci_high": [0.05, 0.07], "n": [900, 450]})
    with_error = dataclasses.replace(v, calibration_error=frame)
    assert 'data-part="calibration-error"' not in page
    assert 'data-part="calibration-error"' not in validation_report(with_error, predictions=pred)  # off by default
    shown = validation_report(with_error, predictions=pred, calibration_error=True)
    assert 'data-part="calibration-error"' in shown and "<td class=\"num\">2.13</td>" in shown  # points
    assert f'title="{html.escape(dc.CALIBRATION_ERROR_HELP)}">{html.escape(dc.CALIBRATION_ERROR_HEADER)}</th>' in shown
    assert "not a squared one" in shown and "not comparable" in shown
    # asked for, but the validation has none: nothing to show
    assert 'data-part="calibration-error"' not in validation_report(v, predictions=pred, calibration_error=True)


def test_made_by_needs_a_results_file(validation):
    _, v = validation
    with pytest.raises(InputError, match="results_file"):
        validation_report(v, made_by="app")
    with pytest.raises(InputError, match="made_by"):
        validation_report(v, made_by="somebody")


def test_csv_round_trips(validation):
    _, v = validation
    back = pd.read_csv(io.StringIO(metrics_csv(v)))
    assert list(back.columns) == list(v.metrics.columns)
    pd.testing.assert_frame_equal(back[["estimate", "ci_low", "ci_high"]], v.metrics[["estimate", "ci_low", "ci_high"]],
                                  check_exact=True)
    assert (back["group"].fillna("") == v.metrics["group"].fillna("")).all()


def test_exported():
    assert cd.validation_report is validation_report


def test_metrics_csv_neutralises_formula_like_group_names():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.05, 0.95, 400)
    y = (rng.random(400) < p).astype(int)
    groups = np.where(np.arange(400) % 2, "=HYPERLINK(\"http://x\")", "@SUM(A1)")
    v = cd.validate_risk_model(p, y, groups=groups, n_resamples=0, calibration_error=False)
    text = metrics_csv(v)
    cells = [c for line in text.splitlines() for c in line.split(",")]
    assert not any(c.lstrip('"').startswith(("=", "@", "+")) for c in cells), text[:500]
    back = pd.read_csv(io.StringIO(text))
    assert set(back["group"].dropna()) == {"'=HYPERLINK(\"http://x\")", "'@SUM(A1)"}
    # numbers are untouched (a negative calibration-in-the-large stays a number)
    assert back["estimate"].to_numpy() == pytest.approx(v.metrics["estimate"].to_numpy(), nan_ok=True)


@pytest.fixture(scope="module")
def coarse():
    """A five-level score with risks of exactly 0 and 1, one risk-0 patient with the event."""
    rng = np.random.default_rng(3)
    p = rng.choice([0.0, 0.1, 0.35, 0.6, 1.0], 700, p=[0.05, 0.3, 0.3, 0.3, 0.05])
    y = (rng.random(700) < p).astype(int)
    y[np.flatnonzero(p == 0)[0]] = 1
    return cd.validate_risk_model(p, y, n_resamples=20, calibration_error=False)


@pytest.mark.slow
def test_notes_and_curve_fallback(coarse):
    page = validation_report(coarse)
    _offline(page)
    assert coarse.curve_method[coarse.classes[0]] == "levels" and len(coarse.notes) == 2
    notes = page[page.index('<ul class="notes">'):]
    notes = notes[:notes.index("</ul>")]
    for note in coarse.notes:  # risks of 0/1 left out of the logistic fits; the curve's fallback
        assert f"<li>{html.escape(note)}</li>" in notes
    calibration = page[page.index('<section id="calibration">'):page.index('<section id="discrimination">')]
    assert '<p class="note" data-note="curve">No flexible (loess) calibration curve' in calibration
    assert "no loess curve" in calibration and "each distinct predicted risk" in calibration
    grouped = _table(calibration, "grouped")
    assert grouped.count("<tr>") == 1 + 5 and "<td>0.0%</td>" in grouped and "<td>100.0%</td>" in grouped


CENTRES = np.array(["St <b>Mary</b>", "General & Co", '"><script>alert(1)</script>'], dtype=object)


@pytest.fixture(scope="module")
def multicentre():
    """Three hospitals with hostile names, one ("General & Co") shifted by +1 on the logit scale."""
    rng = np.random.default_rng(4)
    n = 1500
    lp = rng.normal(-1, 1, n)
    site = rng.choice(CENTRES, n)
    y = rng.random(n) < 1 / (1 + np.exp(-(lp + np.where(site == CENTRES[1], 1.0, 0.0))))
    frame = pd.DataFrame({"p_died": 1 / (1 + np.exp(-lp)), "outcome": np.where(y, "died", "alive"),
                          "hospital <x>": site})
    pred = cd.load_predictions(frame, label_column="outcome", positive="died", groups=["hospital <x>"])
    v = cd.validate_risk_model(pred, clusters="hospital <x>", n_resamples=30, calibration_error=False)
    return pred, v, validation_report(v, predictions=pred)


def test_pooled_section_with_clusters(multicentre):
    _, v, page = multicentre
    _offline(page)
    assert '<section id="centres">' in page and '<section id="subgroups">' not in page
    assert re.findall(r"<h2>(\d+)\. Centres</h2>", page) == ["6"]
    pooled = _table(page, "pooled")
    assert pooled is not None and pooled.count("<tr>") == 1 + 4
    assert "95% prediction interval (a new centre)" in pooled and "tau² (between-centre variance)" in pooled
    slope = v.pooled.set_index("metric").loc["calibration slope"]
    assert f"<td class=\"num\">{slope['estimate']:.2f}</td>" in pooled and f"{slope['pi_low']:.2f} to {slope['pi_high']:.2f}" in pooled
    assert _table(page, "centres") is not None and "Each centre analysed alone" in page
    assert page.count("<figure") == 3 + 4 and page.count('data-figure="pooled forest') == 4  # one per metric


def test_centre_findings_and_names_escaped(multicentre):
    _, v, page = multicentre
    found = v.group_findings()
    assert found and any("General & Co" in f for f in found)
    for sentence in found:
        assert f"<li>{html.escape(sentence)}</li>" in page
    for name in list(CENTRES) + ["hospital <x>"]:
        assert name not in page.replace(html.escape(name), "")
    assert "<b>Mary</b>" not in page and "<script>alert(1)" not in page and "hospital <x>" not in page
    assert "clusters=&#x27;hospital &lt;x&gt;&#x27;" in page and "groups=None" in page


@pytest.mark.slow  # two reports
def test_sample_size_says_at_which_values_rows_needed_were_computed(validation):
    pred, v = validation
    at = "at the observed O:E 1.49 and calibration slope 0.83"
    ss = v.sample_size.drop(columns=["assumption"], errors="ignore")
    with_at = dataclasses.replace(v, sample_size=ss.assign(assumption=[at] * 3 + [None] * (len(ss) - 3)))
    table = _table(validation_report(with_at, predictions=pred), "sample-size")
    assert "<th>rows needed computed at</th>" in table and table.count(f"<td>{at}</td>") == 3
    assert "None" not in table and "nan" not in table
    ss = ss.assign(achieved=np.where(ss["metric"] == "non-events", 1879.0, ss["achieved"]))
    without = _table(validation_report(dataclasses.replace(v, sample_size=ss), predictions=pred), "sample-size")
    assert "computed at" not in without
    assert '<td class="num">1,879</td>' in without  # a count as a count, not 1.88e+03
