"""The download names (issue 27): the data named without its file's suffix, each part joined by "_"."""

from types import SimpleNamespace

import pandas as pd

from calibdash.reporting.outputs import data_stem, model_names
from calibdash_app.downloads import comparison_file_name, download_name, file_slug


def test_an_uploads_suffix_stays_out_of_the_name():
    # was validation_report_mortality_validation.csv_seed0.html
    assert download_name("validation_report", "html", "mortality_validation.csv", random_state=0) \
        == "validation_report_mortality_validation_seed0.html"
    assert download_name("summary", "csv", "preds.npz", notion="top-label", random_state=3) \
        == "summary_preds_top-label_seed3.csv"
    assert download_name("recalibrated_risks", "csv", "x.csv.gz") == "recalibrated_risks_x.csv"
    assert file_slug("digits / random_forest") == "digits___random_forest"  # a demo's label: nothing stripped
    assert file_slug("notes.v2") == "notes.v2" and file_slug(".csv") == ".csv" and file_slug("") == "data"


def test_a_comparison_names_its_models_without_their_suffixes():
    res = SimpleNamespace(models=pd.DataFrame({"model": ["lenet.npz", "resnet.csv"]}),
                          config={"notion": "top-label", "random_state": 0})
    assert comparison_file_name("calibdash_comparison", "html", res) == "calibdash_comparison_lenet_vs_resnet_top-label_seed0.html"


def test_one_list_of_data_suffixes_serves_the_command_line_and_the_app():
    assert data_stem("a.parquet") == "a" and data_stem("a.tsv") == "a" and data_stem("a.txt.bz2") == "a"
    assert model_names(["dir/a.parquet", "b.npy"]) == ["a", "b"]
