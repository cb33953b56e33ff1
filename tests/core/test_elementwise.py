"""calibdash.core.elementwise: the fast loops give NumPy's numbers exactly."""

import numpy as np
import pytest

from calibdash.core.elementwise import at_least


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(7,), (5, 9), (3, 4, 6)])
def test_at_least_is_numpys_maximum_to_the_bit(dtype, shape):
    rng = np.random.default_rng(0)
    A = (rng.standard_normal(shape) * 50).astype(dtype)
    flat = A.reshape(-1)
    flat[::5] = -60.0
    flat[1::7] = np.nan
    flat[2::11] = -np.inf
    flat[3::13] = -0.0
    for value in (-60.0, 0.0, 1.5):
        expected = np.maximum(A, value)
        got = at_least(A, value)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)  # NaN where NaN, the same values elsewhere
        assert np.array_equal(np.signbit(got), np.signbit(expected))


def test_at_least_writes_into_out_and_keeps_other_inputs():
    A = np.array([[-70.0, -10.0, 3.0], [np.nan, -61.0, -60.0]])
    W = A.copy()
    assert at_least(W, -60.0, out=W) is W
    np.testing.assert_array_equal(W, [[-60.0, -10.0, 3.0], [np.nan, -60.0, -60.0]])
    np.testing.assert_array_equal(at_least(np.array([-3, 2, 5]), 0.5), [0.5, 2.0, 5.0])  # integers as NumPy does
    assert at_least(np.float64(-2.0), 0.0) == 0.0
