"""take_rows: the pipeline's row gathers, the same as NumPy's indexing."""

import numpy as np
import pytest

from calibdash.core.rows import take_rows


@pytest.mark.parametrize("shape", [(50,), (50, 2), (50, 7), (50, 1)])
def test_take_rows_is_indexing(shape, tmp_path):
    rng = np.random.default_rng(0)
    A = rng.random(shape)
    rows = rng.permutation(50)[:31]
    out = take_rows(A, rows)
    assert out.dtype == A.dtype and np.array_equal(out, A[rows])
    assert np.array_equal(take_rows(A, rows[:0]), A[rows[:0]])
    # joblib hands large arrays to its workers memory-mapped: the rows come back as an ndarray
    np.save(tmp_path / "a.npy", A)
    mapped = np.load(tmp_path / "a.npy", mmap_mode="r")
    got = take_rows(mapped, rows)
    assert type(got) is np.ndarray and got.flags.writeable and np.array_equal(got, A[rows])
    with pytest.raises(IndexError):
        take_rows(A, np.array([0, 50]))


@pytest.mark.parametrize("values", ["continuous", "ties"])
def test_sorted_parts_give_the_stable_order_of_any_concatenation(values):
    from calibdash.core.rows import SortedParts

    rng = np.random.default_rng(1)
    n = 1000
    v = rng.uniform(0, 1, n) if values == "continuous" else np.round(rng.uniform(0, 1, n), 1)
    parts = np.array_split(rng.permutation(n), 5) + [np.array([], dtype=np.int64)]
    sp = SortedParts(v, parts)
    for keep in ([1, 2, 3, 4], [0, 2, 3, 4], [0, 1, 2, 3], [3, 0, 1], [2], [5, 1, 0], list(range(6))):
        rows = np.concatenate([parts[j] for j in keep])
        expected = np.argsort(v[rows], kind="stable")
        assert np.array_equal(sp.order_of(keep), expected), keep
        assert np.array_equal(sp.order_of(iter(keep)), expected)
