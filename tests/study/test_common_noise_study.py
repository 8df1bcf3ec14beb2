"""[common_noise] in study files (MATH.md §13; issue 48 item 3): one common path, read in one place
(meanfield.study.build.common_noise), drives the density and every particle system of a study, so that W_p(density,
particles) is measured path by path; Σ = 0 is the study without the table, bit for bit; a skew Σ (rotations) with
rotation-equivariant attention (Q = K = V = I) turns the noiseless study by the path's flow R_t, to round-off."""

import numpy as np
import pytest

from meanfield.domains.circle import fourier
from meanfield.models.common_noise import CommonPath
from meanfield.study import StudyError, build, preflight, read
from meanfield.study.runner import run_config

CIRCLE = {"domain": "circle", "grid": {"n": 64}, "model": {"beta": 2.0}, "seed": 3,
          "time": {"t_end": 0.8, "frames": 5, "dt": 0.01},
          "particles": {"n": [20, 60], "repeats": 2, "dt": 0.01}, "distances": {"p": [1.0]}}


def study(base, **tables):
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    out.update(tables)
    return out


def run(raw):
    return run_config(read(raw), progress=False)[0]


@pytest.fixture(scope="module")
def noiseless():
    """The circle study without common noise ([time] refine = false: the noisy run's grid stays fixed too)."""
    return run(study(CIRCLE, time=CIRCLE["time"] | {"refine": False}))


def test_zero_sigma_is_the_study_without_the_table(noiseless):
    """σ = 0: no common noise, every variable of the study without the table bit for bit (density, energy, the
    particles, W1); the table adds the path, whose flow is then the identity."""
    ds = run(study(CIRCLE, time=CIRCLE["time"] | {"refine": False}, common_noise={"sigma": 0.0}))
    for name in noiseless.data_vars:
        assert np.array_equal(noiseless[name].values, ds[name].values, equal_nan=True), name
    assert set(ds.data_vars) - set(noiseless.data_vars) == {"common_path", "common_flow", "common_sigmas"}
    assert np.array_equal(ds["common_flow"].values, np.broadcast_to(np.eye(2), (5, 2, 2)))


def test_rotation_turns_the_noiseless_circle_study(noiseless):
    """Σ = σJ, Q = K = V = I: μ_t = (R_t)_# ν_t, R_t the rotation by σW_t (MATH.md §13), for the density (its
    Fourier interpolant at θ − σW_t) and for every particle system of every repeat (x R_tᵀ) on the one path; W1
    between them is then the noiseless study's (rotations are isometries)."""
    sigma = 0.8
    ds = run(study(CIRCLE, common_noise={"sigma": sigma, "seed": 11}))
    assert ds.attrs["status"] == "success"
    t = ds["time"].values
    W = CommonPath(1, 0.01, 0.8, seed=11).W(t)[:, 0]  # [common_noise] seed s is the Python API's path of seed s
    assert np.array_equal(ds["common_path"].values[:, 0], W)
    angle = sigma * W
    assert np.max(np.abs(angle)) > 0.3  # the rotation is not small
    R = ds["common_flow"].values
    np.testing.assert_allclose(R[:, 0, 0], np.cos(angle), atol=1e-14)  # exp(σWJ): round-off of 160 2×2 products
    grid = build.build_grid(read(CIRCLE))
    for k in range(t.size):
        turned = fourier.evaluate(noiseless["density"].values[k], grid.angles - angle[k])
        # 80 steps of an equivariant right-hand side (FFTs, ~1e-15 each) and 80 exact Fourier shifts: 1e-13 keeps
        # a 10x margin over the 1e-15 measured per step
        assert np.max(np.abs(ds["density"].values[k] - turned)) < 1e-13 * np.max(turned)
    for n in (20, 60):
        x, y = noiseless[f"positions_{n}"].values, ds[f"positions_{n}"].values
        # 80 RK4 steps and 160 rotations of unit vectors: round-off ~1e-15 per step (measured 4e-15 in all)
        assert np.max(np.abs(np.einsum("tab,rtnb->rtna", R, x) - y)) < 1e-12
    # W1 is rotation invariant; the density enters it by its measure on the grid (validation.wasserstein), which a
    # turn by an angle off the grid's nodes changes by the grid's spectral error: measured 1.4e-11 relative, asserted
    # with a 70x margin
    np.testing.assert_allclose(ds["wasserstein"].values, noiseless["wasserstein"].values, rtol=1e-9)


def test_rotation_turns_the_noiseless_sphere_particles():
    """On S² the kind 'rotation' is σ times the three generators of so(3) (a Brownian rotation): every repeat of every
    N is the noiseless system turned by the one R_t (an orthogonal matrix, R_tᵀR_t = I to round-off)."""
    base = {"domain": "sphere", "model": {"beta": 1.5}, "initial": {"kind": "uniform"}, "seed": 5,
            "time": {"t_end": 1.0, "frames": 3}, "particles": {"n": [8, 30], "repeats": 2, "dt": 0.02}}
    clean = run(base)
    ds = run(study(base, common_noise={"sigma": 0.6, "dt": 0.02}))
    R = ds["common_flow"].values
    assert ds["common_sigmas"].shape == (3, 3, 3)
    np.testing.assert_allclose(np.einsum("tba,tbc->tac", R, R), np.broadcast_to(np.eye(3), R.shape), atol=1e-13)
    assert np.max(np.abs(R[-1] - np.eye(3))) > 0.2
    for n in (8, 30):
        x, y = clean[f"positions_{n}"].values, ds[f"positions_{n}"].values
        assert np.max(np.abs(np.einsum("tab,rtnb->rtna", R, x) - y)) < 1e-12  # 50 steps, round-off per step
    # the pair fractions and E_β are functions of the inner products, which rotations keep
    np.testing.assert_allclose(ds["particle_energy"].values, clean["particle_energy"].values, rtol=1e-12)


def test_default_step_divides_the_output_steps():
    """[common_noise] dt's default: the largest h <= 0.01 with every output time a multiple of it."""
    cfg = read(study(CIRCLE, time={"t_end": 1.0, "frames": 4}, common_noise={}))
    h = cfg["common_noise"]["dt"]
    assert h <= 0.01 and np.isclose((1 / 3) / h, round((1 / 3) / h), rtol=0, atol=1e-9) and (1 / 3) / h == pytest.approx(34)
    assert cfg["common_noise"]["kind"] == "rotation"
    assert read(cfg) == cfg  # a checked study reads again to itself


SPHERE_PARTICLES = {"particles": {"n": [10]}, "initial": {"kind": "uniform"}}


@pytest.mark.parametrize("raw, message", [
    ({"domain": "euclidean", "grid": {"bounds": [[-3.0, 3.0], [-3.0, 3.0]], "shape": 64},
      "initial": {"kind": "gaussian"}, "common_noise": {}}, r"\[common_noise\]: common noise is not implemented on R\^d "
                                                            r"grids .* stretches the density out of any fixed box"),
    ({"domain": "euclidean", "dimension": 2, "particles": {"n": [10]}, "initial": {"kind": "gaussian"},
      "common_noise": {}}, r"\[common_noise\]: common noise is implemented for tokens on spheres"),
    ({"domain": "zonal", "dimension": 3, "grid": {"lmax": 16}, "common_noise": {}},
     r"\[common_noise\]: the push-forward of a zonal density .* not implemented on this grid .*non-zonal"),
    ({"domain": "circle", "model": {"causal": True}, "grid": {"n": 32}, "common_noise": {}},
     r"\[common_noise\]: common noise is not solved on SequenceGrid.* rows \(s, x\)"),
    ({"domain": "sphere", "model": {"causal": True}, "common_noise": {}} | SPHERE_PARTICLES,
     r"\[common_noise\]: common noise is implemented for tokens on spheres .*<domain sequence> is not one"),
    ({"domain": "circle", "grid": {"n": 32}, "common_noise": {"matrices": [[1.0, 0, 0], [0, 1, 0], [0, 0, 1]]}},
     r"\[common_noise\] matrices: must be 2×2 \(the tokens' dimension\), got 3×3"),
    ({"domain": "circle", "grid": {"n": 32}, "common_noise": {"kind": "matrices"}}, r"\[common_noise\] matrices: missing"),
    ({"domain": "circle", "grid": {"n": 32}, "common_noise": {"kind": "rotation", "matrices": [[0, 1.0], [1, 0]]}},
     r"\[common_noise\] matrices: given with kind 'rotation'"),
    ({"domain": "circle", "grid": {"n": 32}, "common_noise": {"dt": 0.03}},
     r"\[common_noise\] dt: every output time must be a multiple of the path's step 0.03 .* \[0.1, 0.2, 0.4\]"),
    ({"domain": "circle", "grid": {"n": 32}, "time": {"t_eval": [0, 0.1, 0.3]}, "common_noise": {}},
     r"\[common_noise\] dt: missing"),
    ({"domain": "circle", "grid": {"n": 32}, "common_noise": {"sigma": -1.0}}, r"\[common_noise\] sigma: must be >= 0"),
    ({"domain": "circle", "grid": {"n": 32}, "time": {"method": "rk45"}, "common_noise": {}},
     r"\[time\] method: must be one of \('rk4', 'ssprk3'\) with common noise"),
    ({"domain": "circle", "grid": {"n": 32}, "particles": {"n": [5], "method": "rk45"}, "common_noise": {}},
     r"\[particles\] method: particles under a common noise .* method = 'rk4'; got 'rk45'"),
    ({"domain": "circle", "grid": {"n": 32}, "stationary": {"noise": [0.1]}, "common_noise": {}},
     r"\[common_noise\]: a \[stationary\] study"),
    ({"domain": "circle", "grid": {"n": 32}, "time": {"representation": "lagrangian"}, "common_noise": {}},
     r"\[time\] representation: 'lagrangian': a density driven by `common_noise`"),
])
def test_refused_with_the_reason(raw, message):
    """Refused before any work (reading, or `meanfield check`'s preflight, which the run calls first), naming the key,
    with the library's reason (the grid's, the tokens' domain's, the solver's)."""
    with pytest.raises(StudyError, match=message):
        preflight.check(read(raw), None)


def test_zero_sigma_is_accepted_where_a_noise_is_refused():
    """σ = 0 is no common noise: a study the noise would be refused on runs as without the table."""
    raw = {"domain": "zonal", "dimension": 3, "grid": {"lmax": 16}, "common_noise": {"sigma": 0.0}}
    preflight.check(read(raw), None)


def test_the_energy_is_monitored_only_under_rotations():
    """The summary's monotone E_β (GLPR Lemma 3.7) holds under a rotation noise (the zonal E_β is rotation
    invariant) and not under a strain (a shared linear layer moves E_β either way): the CLI says so."""
    from meanfield.cli import _energy_direction

    for noise, expected in (({"sigma": 0.5}, 1.0), ({"matrices": [[1.0, 0.0], [0.0, -1.0]]}, 0.0),
                            ({"matrices": [[1.0, 0.0], [0.0, -1.0]], "sigma": 0.0}, 1.0)):
        cfg = read(study(CIRCLE, common_noise=noise))
        assert _energy_direction(build.build_model(cfg), cfg) == expected


def test_check_counts_the_paths_steps():
    """`meanfield check` (preflight.check with timing) times the particles on the study's common path: one step per
    step of the path (t_end/dt = 80), as the run takes them."""
    cfg = read(study(CIRCLE, common_noise={"sigma": 0.5}))
    est = preflight.check(cfg, None, timing=True)
    steps = {what.split(" (")[0]: run.steps for what, run in est.runs}
    assert steps["particles N = 20"] == steps["particles N = 60"] == 80


@pytest.mark.slow
def test_density_against_particles_on_one_path_at_the_mean_field_rate():
    """examples/common_noise_circle.toml (a strain noise, SA β = 1) with N = 100 … 2700, 8 repeats: conditioned on the
    one common path, W1(density, particles) ~ N^α with α = −½ inside the fitted 95 % interval at every output time
    (measured at t = 1: −0.465 [−0.625, −0.306]; about 3 minutes under load)."""
    import tomllib
    from pathlib import Path

    raw = tomllib.loads((Path(__file__).parents[2] / "examples" / "common_noise_circle.toml").read_text())
    raw["particles"] = {"n": [100, 300, 900, 2700], "repeats": 8}
    raw.pop("output")
    ds = run(raw)
    assert ds.attrs["status"] == "success"
    low, high = ds["rate_low"].values[0], ds["rate_high"].values[0]
    assert np.all(low <= -0.5) and np.all(-0.5 <= high) and np.all(high - low < 0.5)


def test_rotation_turns_the_noiseless_sphere_density():
    """On S² (lmax 24) the study's density under the Brownian rotation is the noiseless study's density turned by
    the path's R_t: ρ_t(x) = ν_t(R_tᵀx), the noiseless expansion evaluated at R_tᵀx (exact for its degree)."""
    base = {"domain": "sphere", "grid": {"lmax": 24}, "model": {"beta": 1.0}, "seed": 2,
            "initial": {"kind": "von-mises-fisher", "centres": [[0, 0, 1.0], [1.0, 0, 0]], "kappa": [3.0]},
            "time": {"t_end": 0.4, "frames": 3, "dt": 0.01}}
    clean = run(study(base, time=base["time"] | {"refine": False}))
    ds = run(study(base, common_noise={"sigma": 0.7, "seed": 1}))
    grid = build.build_grid(read(base))
    R = ds["common_flow"].values
    assert np.max(np.abs(R[-1] - np.eye(3))) > 0.2
    for k in range(3):
        turned = grid.interpolate(clean["density"].values[k], grid.points @ R[k]).reshape(grid.shape)
        # 40 steps of the equivariant S² right-hand side and 80 Wigner rotations (round-off ~1e-15 relative each):
        # measured 1e-13 of the maximum, asserted with a 10x margin
        assert np.max(np.abs(turned - ds["density"].values[k])) < 1e-12 * np.max(turned)
