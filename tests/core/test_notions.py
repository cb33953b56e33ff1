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
