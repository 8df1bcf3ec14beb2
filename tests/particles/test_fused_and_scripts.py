"""The fused small-system strategy against the generic path; the phase-diagram script end to end."""

import numpy as np
import pytest

import meanfield as mf
import particles as pt
from particles import fused


@pytest.mark.parametrize("normalized", [True, False])
def test_fused_rk4_equals_generic_rk4(rng, normalized):
    d = 3
    model = mf.SelfAttention(2.0, Q=rng.standard_normal((d, d)), K=rng.standard_normal((d, d)),
                             V=rng.standard_normal((d, d)), normalized=normalized)
    x0 = pt.uniform_sphere(24, d, rng=rng, batch=8)
    dt = 0.02 / mf.models.rate_scale(model)
    t = [0.0, 10 * dt, 25 * dt]
    a = pt.simulate(model, x0, t, dt=dt, strategy="fused")
    b = pt.simulate(model, x0, t, dt=dt, strategy="pairwise")
    assert a.strategy == "fused" and b.strategy == "pairwise" and a.nsteps == b.nsteps
    assert np.max(np.abs(a.x - b.x)) <= 1e-13


def test_fused_path_is_chosen_for_small_batches_and_refuses_multihead(rng):
    x0 = pt.uniform_sphere(16, 3, rng=rng, batch=4)
    assert pt.simulate(mf.SelfAttention(1.0), x0, [0, 0.1]).strategy == "fused"
    heads = mf.MultiHeadAttention([mf.SelfAttention(1.0), mf.SelfAttention(2.0)])
    assert pt.simulate(heads, x0, [0, 0.1]).strategy == "pairwise"
    with pytest.raises(ValueError, match="fused"):
        pt.simulate(heads, x0, [0, 0.1], strategy="fused")
    with pytest.raises(TypeError, match="single-head"):
        fused.rk4_small_systems(heads, x0, 0.01, 1)


def test_phase_diagram_script_small(tmp_path):
    from scripts.phase_diagram import main

    main(["--realisations", "16", "--betas", "3", "--t-max", "12", "--dt-out", "1", "--output", str(tmp_path)])
    data = np.load(tmp_path / "phase_diagram.npz")
    p = data["p_pair"]
    assert p.shape == (3, 13) and np.all((0 <= p) & (p <= 1))
    # at t = 0 (same points for every β) ⟨x, y⟩ is uniform on [-1, 1] (Archimedes): P = δ/2
    assert np.all(p[:, 0] == p[0, 0]) and p[0, 0] < 10 * 1e-3 / 2
    assert p[0, -1] == pytest.approx(1.0)  # β = 0.1: a single cluster by t = 12 (GLPR Thm 6.3 regime)
    # equiangular curve: ρ(t*) = 1 − δ, increasing in β
    assert np.all(np.diff(data["t_star"]) > 0)
    assert (tmp_path / "phase_diagram.png").stat().st_size > 10_000
