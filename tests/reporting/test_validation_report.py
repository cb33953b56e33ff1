"""The clinical validation report: offline, in TRIPOD+AI's order, user text escaped; the CSV."""

import io
import re

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
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
    pred = cd.load_predictions(frame, label_column="outcome", positive="died", group_columns=["ward & unit"],
                               name='hostile "<img src=x>" file')
    return pred, cd.validate_risk_model(pred, groups="ward & unit", n_resamples=40, calibration_error=False)


@pytest.fixture(scope="module")
def page(validation):
    pred, v = validation
    return validation_report(v, made_by="cli", results_file="metrics.csv", predictions=pred)


def test_self_contained(page):
    # no external script, style, image or frame: everything a browser would fetch is inline
    assert not re.search(r"<(script|img|iframe|link)[^>]+(src|href)=[\"']?(https?:)?//", page, re.I)
    assert page.count("<script") >= 3 and "plotly" in page  # plotly.js inline once, one call per figure
    # the calibration curve, the decision curve and the forest plot
    assert '<meta name="calibdash-figures" content="3">' in page and page.count("<figure") == 3


def test_sections_in_tripod_order(page):
    positions = [page.index(f'<section id="{anchor}">') for anchor, _ in SECTIONS]
    assert positions == sorted(positions)
    assert [a for a, _ in SECTIONS] == ["data", "sample-size", "calibration", "discrimination", "usefulness",
                                       "subgroups", "provenance"]
    for key in ("vancalster2019calibration", "austin2019integrated", "riley2021minimum", "vickers2006decision",
                "delong1988comparing", "spiegelhalter1986probabilistic", "gruber2025optimizing"):
        assert f'data-key="{key}"' in page


def test_user_text_escaped(page):
    assert "<img src=x>" not in page and "<i>A</i>" not in page and HOSTILE not in page
    assert "&lt;img src=x&gt;" in page and "ward &amp; unit" in page and "ward &lt;i&gt;A&lt;/i&gt;" in page


def test_verdicts_and_provenance(validation, page):
    _, v = validation
    assert page.count('class="status-') == 7
    assert "python -m calibdash validate FILE --groups ward &amp; unit" in page
    assert f"random_state={v.settings['random_state']}" in page and "metrics.csv" in page


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
