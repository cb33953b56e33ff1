"""End to end: Debian's chromium, driven by Playwright, against a real ``streamlit run``.

Screenshots of every page go to tests/output/ (not committed).
"""

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from tests.shared_data import SHARED_DATA

from .browser import OUTPUT, upload_and_run

CIFAR10 = SHARED_DATA / "cifar10_wrn16-4.npz"


def test_demo_landing_and_every_page(page):
    pg = page.page
    pg.locator(".st-key-risk_curves .js-plotly-plot").wait_for(timeout=120_000)
    pg.locator(".st-key-verdict").get_by_text("percentage points").first.wait_for()
    OUTPUT.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=OUTPUT / "demo_results.png", full_page=True)
    for title in ["Data", "Evaluate", "Reliability", "Results"]:
        page.goto_page(title)
        page.check()
        pg.screenshot(path=OUTPUT / f"demo_{title.lower()}.png", full_page=True)


@pytest.mark.shared_data
def test_cifar10_upload_evaluate_download(page, tmp_path):
    pg = page.page
    # No timing threshold here (the guide's rule): bench/bench_app.py times this in the browser.
    upload_and_run(page, CIFAR10)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=OUTPUT / "cifar10_evaluate.png", full_page=True)

    page.goto_page("Results")
    pg.locator(".st-key-risk_curves .js-plotly-plot").wait_for(timeout=60_000)
    pg.locator(".st-key-forest .js-plotly-plot").wait_for()
    # the verdict states its interval and compares the best estimator with h = 0
    verdict_box = pg.locator(".st-key-verdict")
    verdict_box.get_by_text("95% interval").first.wait_for()
    verdict_box.get_by_text("h = 0").first.wait_for()
    page.check()
    pg.screenshot(path=OUTPUT / "cifar10_results.png", full_page=True)
    with pg.expect_download() as info:
        pg.locator(".st-key-dl_summary button").first.click()
    path = tmp_path / "summary.csv"
    info.value.save_as(path)
    got = pd.read_csv(path)

    probs, labels = np.load(CIFAR10)["predictions"], np.load(CIFAR10)["ground_truth"]
    want = cd.evaluate(cd.load_predictions(CIFAR10), notion="top-label").summary
    assert list(got["estimator"]) == list(want["estimator"])
    for col in ["val_risk", "val_risk_se", "risk_diff", "risk_diff_se", "estimate", "estimate_se", "ci_low", "ci_high",
                "squared_estimate"]:
        np.testing.assert_allclose(got[col], want[col], rtol=1e-9, atol=1e-15, err_msg=col)
    assert list(got["tied"]) == list(want["tied"])
    assert probs.shape == (10_000, 10) and len(labels) == 10_000

    page.goto_page("Reliability")
    pg.locator(".st-key-reliability_diagram .js-plotly-plot").wait_for(timeout=60_000)
    page.check()
    pg.screenshot(path=OUTPUT / "cifar10_reliability.png", full_page=True)
    pg.locator(".st-key-view__notion").get_by_text("canonical").click()
    page.wait_idle()
    pg.locator(".st-key-per_class .js-plotly-plot").wait_for(timeout=60_000)
    page.check()
    pg.screenshot(path=OUTPUT / "cifar10_reliability_canonical.png", full_page=True)
    page.goto_page("Data")
    pg.get_by_text("In use: cifar10_wrn16-4.npz").wait_for()  # the upload stayed in the session
    pg.screenshot(path=OUTPUT / "cifar10_data.png", full_page=True)


def test_bad_upload_shows_message(page, tmp_path):
    pg = page.page
    bad = tmp_path / "broken.npy"
    bad.write_bytes(b"definitely not numpy")
    page.goto_page("Data")
    pg.locator(".st-key-source").get_by_text("Upload my predictions").click()
    page.wait_idle()
    pg.locator(".st-key-upload_predictions input[type=file]").set_input_files(str(bad))
    pg.locator('[data-testid="stAlertContentError"]').wait_for(timeout=30_000)
    assert "broken.npy" in pg.locator('[data-testid="stAlertContentError"]').first.inner_text()
    page.wait_idle()
    OUTPUT.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=OUTPUT / "bad_upload.png", full_page=True)
