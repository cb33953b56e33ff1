"""A folder of Parquet files read as one table (a dataset): the same predictions as the
concatenated file, the budgets over the whole folder, and clear refusals."""

import re

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from calibdash.errors import InputError
from calibdash.io import formats
from calibdash.text import strip_marks


def refusal(call, pattern):
    """The refusal's message, as the user reads it, matches ``pattern``."""
    with pytest.raises(InputError) as info:
        call()
    assert re.search(pattern, strip_marks(str(info.value))), str(info.value)


def frame(n, seed):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    return pd.DataFrame({"p": p, "y": np.where(rng.random(n) < p, "died", "survived")})


@pytest.fixture
def dataset(tmp_path):
    root = tmp_path / "registry"
    parts = [frame(50, i) for i in range(4)]
    # hive-style partitions: files in subfolders, read in sorted path order
    for i, part in enumerate(parts):
        folder = root / f"year={2020 + i // 2}"
        folder.mkdir(parents=True, exist_ok=True)
        part.to_parquet(folder / f"part-{i}.parquet")
    (root / "_SUCCESS").write_text("")  # a writer's marker file is not data
    return root, pd.concat(parts, ignore_index=True)


def test_a_dataset_loads_like_the_concatenated_table(dataset, tmp_path):
    root, whole = dataset
    single = tmp_path / "whole.parquet"
    whole.to_parquet(single)
    options = {"prob_columns": ["p"], "label_column": "y", "positive": "died"}
    got = cd.load_predictions(root, **options)
    want = cd.load_predictions(single, **options)
    np.testing.assert_array_equal(got.probs, want.probs)
    np.testing.assert_array_equal(got.labels, want.labels)
    assert got.sha256 == want.sha256
    assert "4 Parquet files" in strip_marks(got.source_name)
    found = cd.inspect_predictions(str(root))
    assert found.prob_columns == ("p",) and strip_marks(found.label_column) == "y"
    assert found.label_values == ("died", "survived")  # the question the Data page asks next: which is positive


LOAD = {"prob_columns": ["p"], "label_column": "y", "positive": "died"}


def test_files_with_other_columns_are_refused_by_name(dataset):
    root, _ = dataset
    frame(5, 9).rename(columns={"p": "risk"}).to_parquet(root / "year=2021" / "extra.parquet")
    refusal(lambda: cd.load_predictions(root, **LOAD), "extra.parquet has the columns risk, y.*same columns")


def test_a_damaged_file_is_named(dataset):
    root, _ = dataset
    (root / "year=2021" / "zz.parquet").write_bytes(b"PAR1 not really")
    refusal(lambda: cd.load_predictions(root, **LOAD), "zz.parquet is not a readable Parquet file")


def test_budgets_count_the_whole_folder(dataset):
    root, _ = dataset
    total = sum(f.stat().st_size for f in root.rglob("*.parquet"))
    largest = max(f.stat().st_size for f in root.rglob("*.parquet"))
    assert largest < total - 1  # each file alone is within the limit: the sum is what is refused
    refusal(lambda: cd.load_predictions(root, **LOAD, max_bytes=total - 1), "file-size limit")
    copies = formats.WORKING_COPIES
    refusal(lambda: cd.load_predictions(root, **LOAD, max_memory_bytes=150 * 2 * 8 * copies), "memory budget")
    # What 200 rows need: p's float64 copies, and y's text (at most 8 characters) twice with 64 bytes a cell
    cd.load_predictions(root, **LOAD, max_bytes=total, max_memory_bytes=200 * (8 * copies + 2 * 8 + 64))
    refusal(lambda: cd.load_predictions(root, **LOAD, max_memory_bytes=200 * (8 * copies + 64)),
            "with the files before it")


def test_a_folder_without_parquet_files_says_what_to_give(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    refusal(lambda: cd.load_predictions(tmp_path), "folder without Parquet files")
