"""What a table's columns mean (calibdash.io.columns), on raw tables read by calibdash.io.formats."""

import io

import numpy as np
import pandas as pd
import pytest

from calibdash.errors import InputError
from calibdash.io import columns, formats
from calibdash.text import user

# An unnamed index column (as DataFrame.to_csv writes it), two columns named after their
# class, an extra numeric column, and the labels as words in a column whose name is not a
# label name: every guess of the split at once.
PETS = b",p_cat,p_dog,age,species\n0,0.2,0.8,31,dog\n1,0.7,0.3,45,cat\n2,0.4,0.6,28.5,dog\n"


def read(data, name="pets.csv", **rule):
    blob = formats.Blob(data, user(name), ".csv")
    return formats.read_table(blob, is_header=columns.header_rule(**rule), max_memory_bytes=10**8)


def marked(parts):
    return [(text, is_user) for text, is_user in parts]


def test_formats_reads_the_table_raw_without_splitting_it():
    table = read(PETS)
    assert isinstance(table, formats.Table)
    assert table.names == ["", "p_cat", "p_dog", "age", "species"] and table.name == "pets.csv"
    assert all(type(n).__name__ == "UserText" for n in table.names)
    assert table.frame.shape == (3, 5) and table.frame.iloc[:, 4].tolist() == ["dog", "cat", "dog"]
    assert table.where_kwargs["lines"](2) == 4  # data row 2 is line 4 of the file


def test_split_of_a_tricky_table_is_what_the_loader_always_made_of_it():
    # Pinned from the split as formats._split_table made it before the guessing moved here.
    p = columns.split_table(read(PETS))
    np.testing.assert_array_equal(p.scores, [[0.2, 0.8], [0.7, 0.3], [0.4, 0.6]])
    assert p.scores.flags.c_contiguous and p.scores.dtype == np.float64
    assert p.labels.dtype == object and p.labels.tolist() == ["dog", "cat", "dog"]
    assert p.score_names == ("p_cat", "p_dog") and p.class_names == ("cat", "dog")
    assert p.class_names_origin == "the header of \ue000pets.csv\ue001"
    assert p.groups == {}
    assert [n.code for n in p.notes] == ["label-column", "prob-columns", "class-names"]
    assert list(p.notes) == [
        "the labels were taken from column 'species', the only column of text",
        "probability columns taken from their names: ['p_cat', 'p_dog']; not used: ['age'] "
        "(keep them as grouping columns with groups=[...])",
        "class names taken from the column names: 'p_cat' -> 'cat', 'p_dog' -> 'dog'",
    ]
    assert marked(p.notes[0].parts) == [("the labels were taken from column '", False), ("species", True),
                                         ("', the only column of text", False)]
    assert [w.code for w in p.warnings] == ["index-column"]
    assert p.warnings[0] == ("pets.csv: dropped the unnamed first column (0, 1, 2, ...), a row index as written "
                             "by DataFrame.to_csv; pass index=False when saving to avoid it.")
    assert p.where.cell(1, 1) == "line 3 of \ue000pets.csv\ue001, column '\ue000p_dog\ue001'"
    assert p.labels_where.at(2) == "line 4 of \ue000pets.csv\ue001, column '\ue000species\ue001'"


def test_split_of_the_same_table_as_a_dataframe_with_a_grouping_column():
    frame = pd.read_csv(io.BytesIO(PETS))  # the index column comes back named 'Unnamed: 0'
    p = columns.split_table(formats.parse_dataframe(frame, "df"), groups=["age"])
    assert p.scores.shape == (3, 2) and p.warnings == []
    assert "not used: ['Unnamed: 0']" in p.notes[1]
    assert p.groups["age"].tolist() == ["31", "45", "28.5"] and not p.groups["age"].flags.writeable


def test_split_refuses_choices_that_cannot_be_made():
    with pytest.raises(InputError, match="both a probability column and a grouping column"):
        columns.split_table(read(PETS), prob_columns=["p_cat", "age"], groups=["age"])
    with pytest.raises(InputError, match="labels were given twice: pets.csv has a label column 'label'"):
        columns.split_table(read(b"p_a,label\n0.5,1\n"), labels_separate=True)
    with pytest.raises(InputError, match="several text columns that could hold the labels"):
        columns.split_table(read(b"p,a,b\n0.5,x,y\n"))


@pytest.mark.parametrize("first, rule, expected", [
    (b"0.1,0.9,1", {}, False),
    (b"a,b,c", {}, True),
    (b"0.1,0.9,cat", {}, False),  # the last column holds the labels
    (b"0.1,0.9,cat", {"labels_separate": True}, True),
    (b"0.1,cat,0.9", {"label_column": 1}, False),
    (b"0.1,0.9,1", {"prob_columns": ["x"]}, True),  # an option that names columns
    (b"a,b,c", {"header": False}, False),
    (b"1,0", {"role": "labels"}, False),
    (b"label", {"role": "labels"}, True),
    (b"cat", {"role": "labels"}, False),  # one field: a label, not a header
])
def test_header_rule(first, rule, expected):
    assert columns.header_rule(**rule)([f.decode() for f in first.split(b",")]) is expected


def test_labels_from_a_table_and_inspection():
    p = columns.labels_from_table(read(b"id,label\n1,cat\n2,dog\n", role="labels"))
    assert p.labels.tolist() == ["cat", "dog"] and p.labels_where.at(0) == "line 2 of \ue000pets.csv\ue001, column '\ue000label\ue001'"
    found = columns.inspect_table(read(PETS, labels_separate=True))
    assert found["label_column"] == "species" and found["prob_columns"] == ("p_cat", "p_dog")
    assert found["numeric"] == ("", "p_cat", "p_dog", "age") and found["problem"] is None


@pytest.mark.parametrize("column, cls", [("p_cat", "cat"), ("cat_proba", "cat"), ("P(cat)", "cat"),
                                         ("logit-cat", "cat"), ("cat", None), ("p_", None)])
def test_class_name_of_column(column, cls):
    assert columns.class_name_of_column(column) == cls


def test_a_parquet_file_with_text_reads_as_pyarrow_and_pandas_read_it():
    # formats reads text columns dictionary-encoded to measure them before they are expanded
    # (issue 28); the frame must still be the one pf.read().to_pandas() gives, nulls,
    # categories and bytes included, for one row group or several.
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    n = 500
    table = pa.table({
        "p": rng.random(n),
        "label": pa.array([None if i % 37 == 0 else ["died", "survived", "\u00e9t\u00e9 \u2014 ok"][i % 3] for i in range(n)]),
        "site": pd.Categorical(rng.choice(["north", "south"], n)),
        "raw": pa.array([bytes([i % 256]) * (i % 5) for i in range(n)]),
        "note": pa.array([f"row {i}" for i in range(n)], pa.large_string()),
    })
    for row_group_size in (n, 64):
        buf = io.BytesIO()
        pq.write_table(table, buf, row_group_size=row_group_size)
        got = formats.read_table(formats.Blob(buf.getvalue(), user("t.parquet"), ".parquet"), is_header=None,
                                 max_memory_bytes=10**8)
        want = pq.ParquetFile(io.BytesIO(buf.getvalue())).read().to_pandas()
        pd.testing.assert_frame_equal(got.frame, want)
        assert got.names == list(want.columns)


@pytest.mark.parametrize("cell", ["", "nan"])
def test_a_wide_table_finds_its_missing_cells_as_a_narrow_one_does(monkeypatch, cell):
    # Above formats.WIDE_COLUMNS columns the missing cells are looked for in one array (issue 28:
    # 2.4 s for 10 x 100,000 column by column); the refusal must be the one the column-wise check gives.
    d = formats.WIDE_COLUMNS + 500
    rows = [",".join(f"p{k}" for k in range(d)) + ",label"]
    rows += [",".join([f"{1 / d:.9f}"] * d) + f",{i % 2}" for i in range(6)]
    cells = rows[4].split(",")
    cells[d - 7] = cell
    rows[4] = ",".join(cells)
    data = ("\n".join(rows) + "\n").encode()
    messages = []
    for wide in (formats.WIDE_COLUMNS, 10**9):
        monkeypatch.setattr(formats, "WIDE_COLUMNS", wide)
        with pytest.raises(InputError) as info:
            read(data, "wide.csv", header=None, labels_separate=True)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and f"column 'p{d - 7}'" in messages[0], messages


def test_text_columns_are_found_among_many_numeric_ones():
    d = 3000
    frame = pd.DataFrame(np.full((4, d), 1 / d), columns=[f"p{k}" for k in range(d)])
    frame.insert(1700, "site", ["north", "south", "north", "east"])
    frame["label"] = ["a", "b", "a", "b"]
    numeric = columns.numeric_columns(frame)
    assert numeric.sum() == d and not numeric[1700] and not numeric[-1]
    assert columns.text_columns(frame, range(frame.shape[1])) == [1700, d + 1]
    found = columns.inspect_table(formats.parse_dataframe(frame, "df"), label_column="label", prob_columns=None,
                                  labels_separate=False)
    assert len(found["numeric"]) == d and found["label_candidates"] == ("label",)


@pytest.mark.parametrize("nested", [False, True], ids=["flat", "with a struct column"])
def test_a_parquet_text_column_over_the_limit_is_found_from_the_metadata(nested):
    # The pages' average proves a cell is over CALIBDASH_MAX_TEXT_CHARACTERS before anything is
    # read; the text column's leaf is found by its field position in a flat table, else searched.
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns_ = {"p": [0.2, 0.5, 0.7], "label": ["x" * 50_000] * 3}
    if nested:
        columns_ = {"meta": pa.array([{"a": 1, "b": "q"}] * 3), **columns_}
    buf = io.BytesIO()
    pq.write_table(pa.table(columns_), buf, use_dictionary=False)
    with pytest.raises(InputError, match="the column 'label' averages 4\\d,\\d{3} bytes of text a cell"):
        formats.read_table(formats.Blob(buf.getvalue(), user("t.parquet"), ".parquet"), is_header=None,
                           max_memory_bytes=10**8)
