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


@pytest.mark.parametrize("d", [3, 4])
def test_fused_steps_that_blow_up_are_reported(rng, d):
    """A step with |h V| ~ 1e310 overflows a stage to inf, whose retraction inf/inf is NaN (the generic kernel,
    d = 3, and the zonal one, d >= ZONAL_FROM): FloatingPointError naming the system, never NaN returned; the same
    batch at a sane step stays on the sphere."""
    x0 = pt.uniform_sphere(8, d, rng=rng, batch=3)
    model = mf.SelfAttention(1.0, V=1e300 * np.eye(d))
    with pytest.raises(FloatingPointError, match="3 system\\(s\\) became non-finite \\(the first: system 0\\)"):
        fused.rk4_small_systems(model, x0, 1e10, 1)
    out = fused.rk4_small_systems(mf.SelfAttention(1.0), x0, 0.01, 2)
    assert np.max(np.abs(np.linalg.norm(out, axis=-1) - 1.0)) <= 1e-14  # retracted each stage: |x| = 1 to ~ε


def test_phase_diagram_script_small(tmp_path, saved_figures):
    """16 realisations of n = 32 points on S², δ = 1e-3, three β, t ≤ 12.

    At t = 0 (the same points for every β) ⟨x, y⟩ is uniform on [−1, 1] for independent uniform x, y on S²
    (Archimedes), so each pair indicator h = 1{⟨x_i, x_j⟩ >= 1 − δ} has mean p = δ/2. The statistic is the mean of
    R independent U-statistics U = (1/n(n−1)) Σ_{i≠j} h; by Hoeffding Var U = (2/n(n−1))(2(n−2)ζ₁ + ζ₂) with
    ζ₂ = p(1 − p) and ζ₁ = Var E[h | x_i] = 0 (E[h | x_i] = p for every x_i by rotation invariance: the pairs are
    uncorrelated), so sd = √(2p(1 − p)/(R n(n − 1))) ≈ 2.5e-4, and the estimate lies within 5 sd of δ/2.
    The figure shows p over (β, t), the equiangular curve t*(β) and the axes the script states."""
    from scripts.phase_diagram import main

    R, n, delta = 16, 32, 1e-3
    main(["--realisations", str(R), "--betas", "3", "--t-max", "12", "--dt-out", "1", "--output", str(tmp_path)])
    data = np.load(tmp_path / "phase_diagram.npz")
    p = data["p_pair"]
    assert p.shape == (3, 13) and np.all((0 <= p) & (p <= 1))
    assert np.all(p[:, 0] == p[0, 0])
    mean = delta / 2
    sd = np.sqrt(2 * mean * (1 - mean) / (R * n * (n - 1)))
    assert abs(p[0, 0] - mean) <= 5 * sd, (p[0, 0], mean, sd)
    assert p[0, -1] == pytest.approx(1.0)  # β = 0.1: a single cluster by t = 12 (GLPR Thm 6.3 regime)
    # equiangular curve: ρ(t*) = 1 − δ, increasing in β (the right-hand side of (6.9) decreases in β)
    assert np.all(np.diff(data["t_star"]) > 0)
    # the figure drawn is of these numbers
    assert list(saved_figures) == ["phase_diagram.png"]
    ax = saved_figures["phase_diagram.png"].axes[0]
    assert ax.get_xlabel() == "β" and ax.get_ylabel() == "t" and ax.get_ylim() == (0, 12)
    (mesh,) = ax.collections
    np.testing.assert_array_equal(np.asarray(mesh.get_array()).reshape(13, 3), p.T)
    (curve,) = ax.get_lines()
    finite = np.isfinite(data["t_star"])
    np.testing.assert_array_equal(curve.get_xdata(), data["beta"][finite])
    np.testing.assert_array_equal(curve.get_ydata(), data["t_star"][finite])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["equiangular curve, GLPR (6.9)"]


def test_noisy_particles_scheme_is_weak_order_two():
    """The splitting scheme's weak error, computed exactly through the Markov chain of two particles' relative angle
    (scripts/noisy_particles.py): it falls by 4 (± 0.5) per halving of h from h = 0.1 (second order)."""
    from scripts.noisy_particles import weak_order

    hs, e = weak_order()
    ratios = e[:-1] / e[1:]
    assert np.all(np.abs(ratios[1:] - 4.0) <= 0.5), ratios
