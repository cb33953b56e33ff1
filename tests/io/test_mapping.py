"""Column mapping of tables, and readings of the numbers that must never be silent misreads."""

import io
import pickle

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from calibdash.core.simplex import softmax
from calibdash.io import loading

N = 1000


def clinical(n=N, seed=0, percent=False):
    """A clinical table: p_malignant (0-1 or 0-100), diagnosis as words, a hospital site."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 0.5, n)
    y = np.where(rng.random(n) < p, "malignant", "benign")
    return pd.DataFrame({"p_malignant": np.round(p * 100, 2) if percent else p, "diagnosis": y,
                         "site": rng.choice(["north", "south"], n)})


def csv_bytes(df):
    return df.to_csv(index=False).encode()


# --------------------------------------------------------------------------- the mapping


def test_clinical_csv_loads_with_guesses_stated_in_notes():
    df = clinical()
    p = cd.load_predictions(csv_bytes(df), name="clinic.csv")
    assert p.class_names == ("benign", "malignant") and p.d == 2
    np.testing.assert_allclose(p.probs[:, 1], df["p_malignant"], rtol=1e-15)
    np.testing.assert_array_equal(p.labels, (df["diagnosis"] == "malignant").astype(int))
    assert {n.code for n in p.notes} == {"prob-columns", "positive"}
    assert "'site'" in next(n for n in p.notes if n.code == "prob-columns")
    assert "positive class: 'malignant'" in p.summary()
    assert p.groups == {}


def test_group_columns_are_kept_read_only_and_outside_the_hash():
    df = clinical()
    plain = cd.load_predictions(csv_bytes(df), name="clinic.csv")
    grouped = cd.load_predictions(csv_bytes(df), name="clinic.csv", groups=["site"])
    assert grouped.sha256 == plain.sha256
    assert list(grouped.groups) == ["site"]
    np.testing.assert_array_equal(grouped.groups["site"], df["site"].to_numpy(str))
    with pytest.raises(TypeError):
        grouped.groups["x"] = np.array(["a"])
    with pytest.raises(ValueError):
        grouped.groups["site"][0] = "east"
    assert "prob-columns" not in {n.code for n in grouped.notes}  # nothing left unused
    back = pickle.loads(pickle.dumps(grouped))
    np.testing.assert_array_equal(back.groups["site"], grouped.groups["site"])
    assert [n.code for n in back.notes] == [n.code for n in grouped.notes]


def test_explicit_mapping_on_a_table_without_telling_names():
    df = clinical().rename(columns={"p_malignant": "score", "diagnosis": "dx"})
    with pytest.raises(cd.InputError, match="several text columns that could hold the labels: 'dx', 'site'") as info:
        cd.load_predictions(df)
    assert info.value.option == "label_column"
    with pytest.raises(cd.InputError, match="column 'site' holds text") as info:
        cd.load_predictions(df, label_column="dx")
    assert info.value.option == "prob_columns"
    with pytest.raises(cd.InputError, match=r"does not say which of them.*positive=") as info:
        cd.load_predictions(df, label_column="dx", prob_columns=["score"])
    assert info.value.option == "positive" and "'benign', 'malignant'" in str(info.value)
    p = cd.load_predictions(df, label_column="dx", prob_columns=["score"], positive="malignant", groups="site")
    assert p.class_names == ("benign", "malignant") and p.notes == ()
    q = cd.load_predictions(df, label_column="dx", prob_columns=["score"], positive="benign")
    assert q.class_names == ("malignant", "benign")
    np.testing.assert_array_equal(q.labels, 1 - p.labels)
    np.testing.assert_allclose(q.probs, p.probs, rtol=1e-15)  # the column is now read as P(benign)
    with pytest.raises(cd.InputError, match="positive='cancer' is not one of the labels") as info:
        cd.load_predictions(df, label_column="dx", prob_columns=["score"], positive="cancer")
    assert info.value.option == "positive"
    # class_names says the same as positive, in column order: negative, then positive
    r = cd.load_predictions(df, label_column="dx", prob_columns=["score"], class_names=["benign", "malignant"])
    assert r.sha256 == p.sha256


def test_only_text_column_is_the_label_column_with_a_note():
    df = clinical()[["p_malignant", "diagnosis"]].rename(columns={"diagnosis": "histology"})
    p = cd.load_predictions(df)
    assert p.class_names == ("benign", "malignant")
    assert "label-column" in {n.code for n in p.notes} and "'histology'" in p.summary()


@pytest.mark.parametrize("pattern", ["p_{}", "prob_{}", "{}_prob", "P({})", "proba-{}"])
def test_class_names_from_probability_column_names(pattern):
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(3), size=N)
    classes = ["cat", "dog", "bird"]
    y = rng.integers(0, 3, size=N)
    df = pd.DataFrame(P, columns=[pattern.format(c) for c in classes]).assign(animal=np.array(classes)[y])
    p = cd.load_predictions(df, label_column="animal")
    assert p.class_names == tuple(classes)
    np.testing.assert_array_equal(p.labels, y)
    assert "class-names" in {n.code for n in p.notes}
    # the header's own names are accepted as class_names too (here with the labels as indices)
    raw = cd.load_predictions(df.assign(animal=y), label_column="animal", class_names=list(df.columns[:3]))
    assert raw.sha256 == p.sha256 and raw.class_names == tuple(df.columns[:3])


def test_one_column_with_more_than_two_labels_is_refused():
    df = clinical()
    df.loc[3, "diagnosis"] = "unclear"
    with pytest.raises(cd.InputError, match="holds 3 different labels") as info:
        cd.load_predictions(df)
    assert info.value.option == "prob_columns"


def test_labels_file_with_names_and_a_one_column_table():
    df = clinical()
    buf = io.BytesIO()
    np.save(buf, df["diagnosis"].to_numpy(str))
    p = cd.load_predictions(csv_bytes(df[["p_malignant"]]), buf.getvalue(), name="p.csv")
    q = cd.load_predictions(csv_bytes(df), name="clinic.csv")
    assert p.sha256 == q.sha256 and p.class_names == ("benign", "malignant")
    # a headerless array has no name to guess from: the positive class is asked for
    with pytest.raises(cd.InputError, match="Which class is positive") as info:
        cd.load_predictions(df["p_malignant"].to_numpy(), df["diagnosis"].to_numpy(str))
    assert info.value.option == "positive"
    # Python's wording for Python users; the app shows the problem without it, in its own words (issue 27)
    error = info.value
    assert str(error).endswith("Which class is positive? Pass positive=... (one of the labels).")
    assert error.fix == "Pass positive=... (one of the labels)."
    bare = error.without_fix()
    assert str(bare).endswith("Which class is positive?") and "Pass" not in str(bare) and bare.option == "positive"
    back = pickle.loads(pickle.dumps(error))  # from a worker process, whole
    assert (str(back), back.parts, back.problem, back.option, back.fix) == (str(error), error.parts, error.problem,
                                                                           error.option, error.fix)
    r = cd.load_predictions(df["p_malignant"].to_numpy(), df["diagnosis"].to_numpy(str), positive="malignant")
    assert r.sha256 == q.sha256


def test_mapping_options_are_checked():
    df = clinical()
    cases = [
        ({"prob_columns": ["nope"]}, "has no column named 'nope'", "prob_columns"),
        ({"label_column": "diagnosis", "groups": ["diagnosis"]}, "is the label column", "groups"),
        ({"prob_columns": ["p_malignant"], "groups": ["p_malignant"]}, "both a probability column and a grouping",
         "groups"),
        ({"prob_columns": []}, "prob_columns is empty", "prob_columns"),
        ({"groups": [7]}, "groups=7 is out of range", "groups"),
    ]
    for kwargs, message, option in cases:
        with pytest.raises(cd.InputError, match=message) as info:
            cd.load_predictions(df, **kwargs)
        assert info.value.option == option, kwargs
    with pytest.raises(cd.InputError, match="groups applies to tables") as info:
        cd.load_predictions(np.full(4, 0.5), [0, 1, 0, 1], groups=["site"])
    with pytest.raises(cd.InputError, match="positive applies to a single probability column"):
        cd.load_predictions(np.full((4, 2), 0.5), [0, 1, 0, 1], positive="1")


def test_inspect_reports_columns_and_guesses():
    df = clinical()
    found = cd.inspect_predictions(csv_bytes(df), name="clinic.csv")
    assert found.table and found.columns == ("p_malignant", "diagnosis", "site")
    assert found.numeric == ("p_malignant",) and found.label_candidates == ("diagnosis",)
    assert found.label_column == "diagnosis" and found.prob_columns == ("p_malignant",) and found.n_scores == 1
    assert found.label_values == ("benign", "malignant") and found.label_values_complete
    assert found.class_names == ("benign", "malignant") and found.positive == "malignant"
    assert found.problem is None and {n.code for n in found.notes} == {"prob-columns", "positive"}
    # ambiguous: no guess, the candidates and the reason instead of an exception
    odd = cd.inspect_predictions(df.rename(columns={"diagnosis": "dx", "p_malignant": "score"}))
    assert odd.label_column is None and odd.label_candidates == ("dx", "site")
    assert odd.problem.option == "label_column" and odd.prob_columns == ("score",)
    chosen = cd.inspect_predictions(df.rename(columns={"diagnosis": "dx", "p_malignant": "score"}), label_column="dx",
                                    prob_columns=["score"])
    assert chosen.label_values == ("benign", "malignant") and chosen.positive is None
    assert chosen.problem.option == "positive"
    # Kept for hours in the app's session: without the frames it was raised in, whose locals held the
    # decoded file (issue 28: 953 MB pinned by a 920-byte Parquet file's inspection).
    for problem in (odd.problem, chosen.problem):
        assert problem.__traceback__ is None and problem.__context__ is None and problem.__cause__ is None
    many = cd.inspect_predictions(pd.DataFrame({"p_a": np.full(200, 0.5), "label": np.arange(200) % 100}))
    assert len(many.label_values) == loading.MAX_LABEL_VALUES and not many.label_values_complete
    assert many.label_values[:3] == ("0", "1", "2")  # numbers in numeric order
    arrays = cd.inspect_predictions(np.full(4, 0.5), np.array(["x", "y", "x", "y"]))
    assert not arrays.table and arrays.n_scores == 1 and arrays.label_values == ("x", "y")


# --------------------------------------------------------------------------- readings

RNG = np.random.default_rng(5)
_L = RNG.normal(size=(N, 4)) * 2
_Y = np.array([RNG.choice(4, p=p) for p in softmax(_L, axis=1)])
_P = softmax(_L, axis=1)
_Z = _L[:, 0] - _L[:, 1]  # binary logits
_YB = (RNG.random(N) < 1 / (1 + np.exp(-_Z))).astype(int)
_PB = 1 / (1 + np.exp(-_Z))

# (id, scores, labels, expected kind or None for a refusal, what the note or message says)
READINGS = [
    ("genuine probabilities", _P, _Y, "probabilities", None),
    ("genuine logits", _L, _Y, "logits", None),
    ("genuine binary probabilities", _PB, _YB, "probabilities", None),
    ("genuine binary logits", _Z, _YB, "logits", None),
    ("percent, several columns", _P * 100, _Y, "percent", "every row sums to 100"),
    ("percent, several columns, rounded", np.round(_P * 100, 2), _Y, "percent", "renormalised"),
    ("percent, one column", np.round(_PB * 100, 1), _YB, "percent", "read as percentages"),
    ("float16 probabilities", _P.astype(np.float16), _Y, "probabilities", "float16 values"),
    ("rows summing to 1 within 1e-3", np.round(_P, 4), _Y, "probabilities", "renormalised"),
    ("non-negative logits", _L - _L.min(), _Y, None, "does not guess"),
    ("non-negative binary logits above 100", _Z - _Z.min() + 101, _YB, None, "does not guess"),
    ("one column of logits confidently wrong", -_Z * 30, _YB, None, "confidently wrong"),
]


@pytest.mark.parametrize("X, y, kind, says", [r[1:] for r in READINGS], ids=[r[0] for r in READINGS])
def test_auto_reading(X, y, kind, says):
    if kind is None:
        with pytest.raises(cd.InputError) as info:
            cd.load_predictions(X, y)
        assert says in str(info.value) and info.value.option == "kind"
        # what each reading would give, so that the choice is informed
        assert "accuracy" in str(info.value)
        return
    p = cd.load_predictions(X, y)
    assert p.kind == kind and p.kind_detected
    if says is None:
        assert p.notes == ()
    else:
        assert says in " ".join(p.notes), p.notes
    truth = _P if X.ndim == 2 else np.column_stack([1 - _PB, _PB])
    # every accepted reading recovers the probabilities (to the file's precision)
    np.testing.assert_allclose(p.probs, truth, atol=2e-3 if X.dtype == np.float16 or "round" in str(says) else 1e-3)


def test_refused_readings_load_when_the_kind_is_chosen():
    assert cd.load_predictions(_L - _L.min(), _Y, kind="logits").accuracy == cd.load_predictions(_L, _Y).accuracy
    assert cd.load_predictions(-_Z * 30, _YB, kind="logits").kind == "logits"


def test_percent_chosen_explicitly_and_probabilities_refused_with_a_pointer_to_percent():
    p = cd.load_predictions(_P * 100, _Y, kind="percent")
    assert p.kind == "percent" and not p.kind_detected
    np.testing.assert_allclose(p.probs, _P, rtol=1e-12)
    for X, y in ((_P * 100, _Y), (_PB * 100, _YB)):
        with pytest.raises(cd.InputError, match="choose kind='percent'") as info:
            cd.load_predictions(X, y, kind="probabilities")
        assert info.value.option == "kind"
    with pytest.raises(cd.InputError, match="choose kind='probabilities'"):
        cd.load_predictions(_P, _Y, kind="percent")
    with pytest.raises(cd.InputError, match=r"outside \[0, 100\]"):
        cd.load_predictions(_PB * 200, _YB, kind="percent")
    forced = cd.load_predictions(_P * 100, _Y, kind="logits")
    (override,) = [w for w in forced.warnings if w.code == "kind-override"]
    assert "percentages" in override


def test_clinical_percent_file_reads_as_its_probabilities():
    exact = cd.load_predictions(clinical(), name="c.csv")
    pct = cd.load_predictions(csv_bytes(clinical(percent=True)), name="c.csv")
    assert pct.kind == "percent" and "percent" in {n.code for n in pct.notes}
    assert pct.accuracy == exact.accuracy
    np.testing.assert_allclose(pct.probs, exact.probs, atol=5e-5)
