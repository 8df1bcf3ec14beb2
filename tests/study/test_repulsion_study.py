"""β < 0 (repulsive attention, MATH.md §13; issue 48 item 4) in study files: accepted where the mathematics and the
solvers hold it — particles on spheres (S¹, S², S^{d-1}) and the circle's density (SA, USA) — and refused with the
domain's reason where a density solver's sums and bounds assume β >= 0 (S², zonal, causal grids)."""

import numpy as np
import pytest

from meanfield.analysis.exact import equiangular_closed_form
from meanfield.study import StudyError, build, preflight, read
from meanfield.study.runner import run_config


def run(raw):
    return run_config(read(raw), progress=False)[0]


@pytest.mark.parametrize("domain", ["circle", "sphere"])
@pytest.mark.parametrize("normalized", [True, False], ids=["SA", "USA"])
@pytest.mark.parametrize("beta", [-0.5, -2.0])
def test_two_tokens_follow_the_closed_form(domain, normalized, beta):
    """Two tokens (N = 2, three repeats from iid uniform starts) stay in their plane and their inner product
    ρ = ⟨x_1, x_2⟩ follows MATH.md §13's ODE ρ' = 2(1 − ρ)(1 + ρ)/(e^{β(1−ρ)} + 1) (SA) or e^{βρ}(1 − ρ)(1 + ρ) (USA),
    whose closed form t(ρ) (meanfield.analysis.exact.equiangular_closed_form, n = 2, inverted to 1e-14) holds for
    every real β: repulsion slows the merging but two tokens still merge."""
    ds = run({"domain": domain, "model": {"beta": beta, "normalized": normalized}, "seed": 1,
              "initial": {"kind": "uniform"}, "time": {"t_end": 2.0, "frames": 5},
              "particles": {"n": [2], "repeats": 3, "dt": 0.0025}})
    x = ds["positions_2"].values  # (repeat, time, token, component)
    rho = np.sum(x[:, :, 0] * x[:, :, 1], axis=-1)
    for r in range(3):
        exact = equiangular_closed_form(ds["time"].values, 2, beta, rho[r, 0], normalized)
        # RK4's global error C h^4: measured 1.0e-9 at h = 0.005 (USA, β = −2, the worst case), so <= 6.4e-11 at
        # h = 0.0025; asserted below 1e-9
        assert np.max(np.abs(rho[r] - exact)) < 1e-9
    assert np.all(rho[:, -1] > rho[:, 0])  # they approach each other


@pytest.mark.parametrize("normalized", [True, False], ids=["SA", "USA"])
def test_circle_density_climbs_the_energy(normalized):
    """The circle's density at β = −1: mass conserved to round-off and E_β = (1/2β)∫∫e^{β⟨x,y⟩}dρdρ non-decreasing
    (E_β is the flow's Lyapunov functional for every real β ≠ 0, GLPR Lemma 3.7 with MATH.md §13), the particles on
    the same study drawn from it, W1 between them finite; the command line's summary monitors E_β upwards."""
    from meanfield.cli import _energy_direction

    raw = {"domain": "circle", "model": {"beta": -1.0, "normalized": normalized}, "seed": 2, "grid": {"n": 64},
           "initial": {"kind": "von-mises-fisher", "angles": [0.0, 2.0], "kappa": [2.0]},
           "time": {"t_end": 2.0, "frames": 9}, "particles": {"n": [50], "repeats": 2}, "distances": {"p": [1.0]}}
    ds = run(raw)
    assert ds.attrs["status"] == "success" and ds.attrs["representation"] == "grid"
    np.testing.assert_allclose(ds["mass"].values, 1.0, rtol=0, atol=1e-13)
    energy = ds["energy"].values
    assert np.all(np.diff(energy) >= -1e-12 * np.max(np.abs(energy)))  # round-off of the quadrature
    assert energy[-1] - energy[0] > 1e-4  # it does climb
    assert np.all(np.diff(ds["particle_energy"].values, axis=-1) >= -1e-12)
    assert np.all(np.isfinite(ds["wasserstein"].values))
    cfg = read(raw)
    assert _energy_direction(build.build_model(cfg), cfg) == 1.0


@pytest.mark.parametrize("raw, where", [
    ({"domain": "sphere", "grid": {"lmax": 16}}, "sphere"),
    ({"domain": "zonal", "dimension": 4, "grid": {"lmax": 16}}, "zonal"),
    ({"domain": "circle", "model": {"causal": True}, "grid": {"n": 32}}, "sequence"),
])
def test_densities_other_than_the_circle_refuse_it_with_the_reason(raw, where):
    raw = raw | {"model": raw.get("model", {}) | {"beta": -0.5}}
    with pytest.raises(StudyError, match=rf"\[model\] beta: -0.5 < 0 \(repulsive attention\) with a \[grid\] on "
                                         rf"domain '{where}': .*derived for kernels e\^{{β⟨x,y⟩}} with β >= 0"):
        read(raw)
    raw.pop("grid")  # the particles alone take it
    preflight.check(read(raw | {"particles": {"n": [5]}, "initial": {"kind": "uniform"}}), None)


def test_stationary_and_lagrangian_refuse_it_with_the_reason():
    base = {"domain": "circle", "model": {"beta": -0.5}, "grid": {"n": 64}}
    with pytest.raises(StudyError, match=r"\[stationary\]: .*β = -0.5 < 0 .*derived for β >= 0"):
        preflight.check(read(base | {"stationary": {"noise": [0.1]}}), None)
    with pytest.raises(StudyError, match=r"\[time\] representation: 'lagrangian': .*repulsive attention \(β < 0\)"):
        preflight.check(read(base | {"time": {"representation": "lagrangian"}}), None)
