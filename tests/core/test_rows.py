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


def _stable(v):
    return np.argsort(v, kind="stable")


@pytest.mark.parametrize("tied_share", [0.0, 0.01, 0.3, 0.9])
def test_stable_order_is_the_stable_argsort_on_large_arrays(tied_share):
    from calibdash.core.rows import stable_order

    rng = np.random.default_rng(2)
    n = 300_000
    v = rng.uniform(0.5, 1.0, n)
    # a share of the rows copies another row's value: runs of ties in the sorted order
    copies = rng.choice(n, int(tied_share * n), replace=False)
    v[copies] = v[rng.choice(n, copies.size)]
    v[:7] = [0.0, -0.0, 0.0, 1.0, 1.0, 0.75, 0.75]
    want = _stable(v)
    if tied_share:
        # NumPy's default sort orders these ties otherwise, so the repair is what is tested
        assert not np.array_equal(np.argsort(v), want)
    got = stable_order(v)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    for other in (v.astype(np.float32), np.round(v * 1000).astype(np.int64), -v):
        assert np.array_equal(stable_order(other), _stable(other))


def test_stable_order_on_small_and_odd_inputs():
    from hypothesis import given
    from hypothesis import strategies as st

    from calibdash.core.rows import stable_order

    pool = [0.0, -0.0, 0.25, 0.5, 1.0, np.inf, -np.inf, 1e-300]

    @given(st.lists(st.one_of(st.sampled_from(pool), st.floats(allow_nan=False), st.just(np.nan)), max_size=60))
    def floats(values):
        v = np.array(values, dtype=np.float64)
        assert np.array_equal(stable_order(v), _stable(v))

    @given(st.lists(st.integers(-3, 3), max_size=60))
    def integers(values):
        v = np.array(values, dtype=np.int64)
        assert np.array_equal(stable_order(v), _stable(v))

    floats()
    integers()
    # NaN, which no tie test sees, and non-numbers go to NumPy's stable sort
    v = np.tile([0.3, np.nan, 0.1], 50_000)
    assert np.array_equal(stable_order(v), _stable(v))
    words = np.array(["b", "a", "b"])
    assert np.array_equal(stable_order(words), _stable(words))
