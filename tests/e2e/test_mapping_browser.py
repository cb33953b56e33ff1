"""End to end: a clinical CSV maps in through the Data page's controls, without editing the file."""

import time

import numpy as np
import pandas as pd

from .browser import OUTPUT


def clinical(n=1000, seed=0, percent=False):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 0.5, n)
    return pd.DataFrame({"p_malignant": np.round(100 * p, 2) if percent else p,
                         "diagnosis": np.where(rng.random(n) < p, "malignant", "benign"),
                         "site": rng.choice(["north", "south"], n)})


def upload(w, path, key="upload_predictions", wait_for=None):
    pg = w.page
    pg.locator(f".st-key-{key} input[type=file]").set_input_files(str(path))
    pg.get_by_text(wait_for or f"In use: {path.name}").first.wait_for(timeout=60_000)
    w.wait_idle()


def wait_for_results(w, timeout=240):
    """The run may finish after the Run click returns: look at Results until the verdict is there."""
    deadline = time.monotonic() + timeout
    while True:
        w.goto_page("Results")
        verdict = w.page.locator(".st-key-verdict")
        if verdict.count():
            return verdict
        assert time.monotonic() < deadline, "no result appeared"
        time.sleep(3)


def test_clinical_csv_maps_runs_and_reports_the_positive_class(page, tmp_path):
    pg = page.page
    path = tmp_path / "clinic.csv"
    clinical().to_csv(path, index=False)
    page.goto_page("Data")
    pg.locator(".st-key-source").get_by_text("Upload my predictions").click()
    page.wait_idle()
    upload(page, path)
    # the guesses are shown in the controls, and the positive class is named
    label_box = pg.locator(".st-key-src__label_column")
    shown = label_box.inner_text() + " ".join(i.input_value() for i in label_box.locator("input").all())
    assert "diagnosis" in shown
    assert "p_malignant" in pg.locator(".st-key-src__prob_columns").inner_text()
    pg.get_by_text("Positive class:").first.wait_for()
    assert not pg.locator('[data-testid="stAlertContentError"]').count()
    # keep the site as a grouping column
    pg.locator(".st-key-src__group_columns").click()
    pg.get_by_role("option", name="site").click()
    page.wait_idle()
    pg.keyboard.press("Escape")
    pg.get_by_text("Grouping columns kept:").first.wait_for(timeout=30_000)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=OUTPUT / "mapping_data.png", full_page=True)

    page.goto_page("Evaluate")
    pg.locator(".st-key-run button").first.click()
    page.wait_idle(timeout=240_000)
    wait_for_results(page)
    pg.get_by_text("positive class").first.wait_for(timeout=60_000)
    assert "malignant" in pg.get_by_text("positive class").first.inner_text()
    with pg.expect_download(timeout=120_000) as info:
        pg.locator(".st-key-dl_report button").first.click()
    report = tmp_path / "report.html"
    info.value.save_as(report)
    html = report.read_text(encoding="utf-8")
    assert "<th>positive class</th><td>malignant</td>" in html
    assert "<th>grouping columns</th><td>site</td>" in html
    page.check()

    # the same file in percent: recognised as percentages, with a note
    page.goto_page("Data")
    pct = tmp_path / "clinic_percent.csv"
    clinical(percent=True).to_csv(pct, index=False)
    upload(page, pct)
    pg.get_by_text("read as percentages").first.wait_for(timeout=30_000)
    assert "percent" in pg.locator('[data-testid="stMetric"]', has_text="Input").inner_text()
    page.check()


def test_labels_npy_in_the_labels_box(page, tmp_path):
    pg = page.page
    df = clinical()
    scores, labels = tmp_path / "scores.csv", tmp_path / "diagnosis.npy"
    df[["p_malignant"]].to_csv(scores, index=False)
    np.save(labels, df["diagnosis"].to_numpy(str))
    page.goto_page("Data")
    pg.locator(".st-key-source").get_by_text("Upload my predictions").click()
    page.wait_idle()
    pg.locator(".st-key-upload_predictions input[type=file]").set_input_files(str(scores))
    page.wait_idle()
    # without labels: the message says where to put them in the app
    pg.locator('[data-testid="stAlertContentError"]').get_by_text("Labels").first.wait_for(timeout=30_000)
    upload(page, labels, key="upload_labels", wait_for="In use: scores.csv")
    assert not pg.locator('[data-testid="stAlertContentError"]').count()
    pg.get_by_text("Positive class:").first.wait_for()
    page.check()
