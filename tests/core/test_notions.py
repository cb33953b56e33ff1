"""calibdash.core.notions: the top-label confidence, its complement and the argmax."""

import numpy as np
import pytest

from calibdash.core.notions import top_label


def brute_top_label(P):
    k = [int(np.argmax(row)) for row in P]
    c = [row[j] for row, j in zip(P, k)]
    rest = [sum(v for i, v in enumerate(row) if i != j) for row, j in zip(P, k)]
    return np.array(c), np.array(rest), np.array(k)


@pytest.mark.parametrize("d", [2, 3, 7])
def test_top_label_is_the_largest_entry_and_the_exact_sum_of_the_others(d):
    rng = np.random.default_rng(d)
    P = rng.dirichlet(np.full(d, 0.3), size=200)
    P[0] = 1.0 / d  # a tie: the first index, numpy's convention
    P[1, :] = 0.0
    P[1, -1] = 1.0  # certain of the last class: its complement is exactly 0, not 1 - 1
    P[2, 0], P[2, 1:] = 1 - 1e-17 * (d - 1), 1e-17  # a complement far below 1 - c's rounding
    c, rest, k = top_label(P)
    c0, rest0, k0 = brute_top_label(P)
    assert np.array_equal(k, k0) and np.array_equal(c, c0)
    np.testing.assert_allclose(rest, rest0, rtol=1e-15, atol=0)
    assert k[0] == 0 and rest[1] == 0.0 and rest[2] == pytest.approx(1e-17 * (d - 1), rel=1e-15)


def test_a_binary_classifiers_top_label_is_numpys_argmax_and_its_gathers_exactly():
    # the two-column route compares the columns instead of calling np.argmax; the same numbers,
    # dtypes and ties, NaN included (np.argmax takes the first NaN as the largest value)
    rng = np.random.default_rng(0)
    p = rng.uniform(size=300)
    P = np.column_stack([p, 1 - p])
    P[:8] = [[0.5, 0.5], [np.nan, 0.2], [0.2, np.nan], [np.nan, np.nan], [1.0, 0.0], [0.0, 1.0], [-0.0, 0.0],
             [0.0, -0.0]]
    c, rest, k = top_label(P)
    rows = np.arange(len(P))
    k0 = np.argmax(P, axis=1)
    for got, want in ((k, k0), (c, P[rows, k0]), (rest, P[rows, 1 - k0])):
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(want))
    assert list(k[:8]) == [0, 0, 1, 0, 0, 1, 0, 0]


def test_int64_labels_are_checked_without_a_copy_and_others_converted():
    """At 10,000,000 rows a copy of the labels is 80 MB more for the whole run; labels of
    another integer type (or integral floats) are converted, and the caller's array is never
    changed."""
    from calibdash.core.simplex import check_labels

    y = np.array([0, 2, 1, 2], dtype=np.int64)
    assert check_labels(y, 4, 3) is y
    for other in (y.astype(np.int32), y.astype(np.uint8), y.astype(float)):
        got = check_labels(other, 4, 3)
        assert got.dtype == np.int64 and np.array_equal(got, y) and got is not other


def test_inside_validated_inputs_the_top_label_problem_of_a_read_only_array_is_computed_once(monkeypatch):
    """The pipeline's tasks make their rows read-only; every estimator then shares one
    top-label problem of them. Writeable arrays (which could change) are computed afresh,
    the shared results cannot be written to, and the memo ends with the scope."""
    from calibdash.core import notions

    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), 50)
    y = rng.integers(0, 3, 50)
    calls = []
    real = notions._top_label
    monkeypatch.setattr(notions, "_top_label", lambda P: calls.append(P) or real(P))
    expected = [notions.training_problems(P, y, "top-label"), notions.problems(P, "top-label"),
                notions.residuals(P, y, "top-label")]
    assert len(calls) == 3
    R, yr = P.copy(), y.copy()
    R.flags.writeable = yr.flags.writeable = False
    with notions.validated_inputs():
        first = notions.training_problems(R, yr, "top-label")
        again = [notions.training_problems(R, yr, "top-label"), notions.problems(R, "top-label"),
                 notions.residuals(R, yr, "top-label"), notions.top_label(R)]
        assert len(calls) == 4  # one for R, however often it is asked for
        assert again[0] is first and again[1][0] is first[0][0]
        notions.top_label(P)
        notions.top_label(P)
        assert len(calls) == 6  # writeable: every time
        other = R[::-1].copy()
        other.flags.writeable = False
        assert not np.array_equal(notions.top_label(other)[0], first[0][0].Z[:, 0])
        with pytest.raises(ValueError, match="read-only"):
            first[0][1][0] = 0.0
    (p, U, T), = first
    (q, V, S), = expected[0]
    for a, b in ((p.Z, q.Z), (p.S, q.S), (U, V), (T, S), (again[2], expected[2])):
        assert np.array_equal(a, b)
    with notions.validated_inputs():
        notions.top_label(R)
    assert len(calls) == 8  # a new scope, a new memo
