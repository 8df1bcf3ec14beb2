"""The statistics of one weighted point set (moved here from the study's figures, issue 39 item 4): the measure's
own pair fraction against a direct double sum, the heaviest cluster's centre, coincident points merged."""

import numpy as np
import pytest

from particles import clusters


def _direct(x, w, delta):
    """∬ 1{⟨x, y⟩ >= 1 − δ} dμ dμ / μ(S)², every pair (i = j included) summed."""
    close = x @ x.T >= 1.0 - delta
    return float(w @ close @ w) / w.sum() ** 2


@pytest.mark.parametrize("d", [2, 3, 5])
def test_weighted_pair_fraction_is_the_double_sum(rng, d):
    """Clustered points (three bumps, some points repeated exactly as a collapsed cluster's are) with random
    weights: the circle's sorted windows and the k-d tree count equal the n² sum."""
    centres = rng.standard_normal((3, d))
    x = centres[rng.integers(0, 3, 300)] + 0.15 * rng.standard_normal((300, d))
    x = np.concatenate([x, np.repeat(x[:5], 20, axis=0)])  # coincident points
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w = rng.random(x.shape[0])
    for delta in (1e-3, 0.05, 0.3):
        assert clusters.weighted_pair_fraction(x, w, delta) == pytest.approx(_direct(x, w, delta), rel=1e-12,
                                                                              abs=1e-15)


def test_heaviest_cluster_finds_the_planted_one(rng):
    """Two clusters on S², the one near e_3 three times as heavy: its centre is found to within its spread."""
    a = np.array([0.0, 0.0, 1.0]) + 0.02 * rng.standard_normal((200, 3))
    b = np.array([1.0, 0.0, 0.0]) + 0.02 * rng.standard_normal((200, 3))
    x = np.concatenate([a, b])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w = np.concatenate([np.full(200, 3.0), np.ones(200)])
    c = clusters.heaviest_cluster(x, w)
    assert np.linalg.norm(c) == pytest.approx(1.0) and c @ [0.0, 0.0, 1.0] > 0.99  # a point of it (spread 0.02)
    c = clusters.heaviest_cluster(x, w[::-1])
    assert c @ [1.0, 0.0, 0.0] > 0.99


def test_merge_coincident_keeps_the_mass_and_the_mean():
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0 + 1e-12, 0.0]])
    w = np.array([1.0, 2.0, 3.0, 4.0])
    xm, wm = clusters.merge_coincident(x, w, 1e-9)
    assert xm.shape == (2, 2) and wm.sum() == pytest.approx(10.0) and sorted(wm) == [3.0, 7.0]
    with pytest.raises(ValueError, match="weights must be non-negative"):
        clusters.merge_coincident(x, -w)
    with pytest.raises(ValueError, match="`h` must be positive"):
        clusters.merge_coincident(x, w, 0.0)
    with pytest.raises(ValueError, match="shape"):
        clusters.weighted_pair_fraction(x, w[:2], 0.1)
