"""End to end, per domain: a study file runs, its density follows an exact solution, the
results file loads back identical; interruptions and lost resolution keep what was computed."""

from matplotlib.colors import LogNorm
import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield.analysis import exact, gaussian
from meanfield.domains import CircleGrid, SphereGrid
from meanfield.models import Softmax
from meanfield.study import StudyInterrupted, build, read, run


def write(tmp_path, text, name="study.toml"):
    f = tmp_path / name
    f.write_text(text)
    return f


def test_circle_study_follows_ott_antonsen_and_round_trips(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = write(tmp_path, """
domain = "circle"
seed = 5
[grid]
n = 128
[model]
beta = 0.0
[initial]
kind = "poisson"
a = [0.3, 0.0]
[time]
t_end = 2.0
frames = 5
[particles]
n = [200, 800]
repeats = 2
[distances]
p = [1, 2]
""")
    ds = run(f, progress=False)
    assert ds.attrs["status"] == "success" and (tmp_path / "study.nc").exists()
    # β = 0: the wrapped Cauchy family is invariant, a(t) by Ott–Antonsen (MATH.md §3)
    for t in ds.time.values:
        a = exact.ott_antonsen(t, 0.3)
        rho = ds.density.sel(time=t).values
        assert np.max(np.abs(rho - exact.wrapped_cauchy(ds.theta.values, a))) < 1e-9
    assert np.max(np.abs(ds.mass - 1.0)) < 1e-12
    # particles on the circle, distances positive, W1 <= W2
    for n in (200, 800):
        x = ds[f"positions_{n}"].values
        assert x.shape == (2, 5, n, 2) and np.max(np.abs(np.linalg.norm(x, axis=-1) - 1)) < 1e-12
    w = ds.wasserstein
    assert np.all(w > 0) and np.all(w.sel(p=1.0) <= w.sel(p=2.0) + 1e-12)
    assert ds.rate.shape == (2, 5)
    xr.testing.assert_identical(ds, meanfield.load(tmp_path / "study.nc"))
    with meanfield.load(tmp_path / "study.nc", lazy=True) as lazy:  # data read on use
        xr.testing.assert_identical(ds, lazy.load())


def test_sphere_study_follows_the_mobius_family_and_round_trips(tmp_path):
    out = tmp_path / "sphere.nc"
    study = {"domain": "sphere", "grid": {"lmax": 24}, "model": {"beta": 0.0},
             "initial": {"kind": "poisson", "a": [0.0, 0.0, 0.3]}, "time": {"t_end": 1.0, "frames": 3},
             "particles": {"n": [40, 80], "repeats": 2}, "distances": {"p": [1]}, "output": {"path": str(out)}}
    ds = run(study, progress=False)
    grid = SphereGrid(ds.sizes["colatitude"] - 1)
    assert np.allclose(ds.colatitude, grid.colatitudes) and np.allclose(ds.longitude, grid.longitudes)
    for t in ds.time.values:
        s = exact.mobius_radius(t, 0.3)[0]
        rho = ds.density.sel(time=t).values
        ref = exact.mobius_density(grid.points, np.array([0.0, 0.0, s]))
        assert np.max(np.abs(rho - ref)) < 1e-8 * ref.max()
    # β = 0 energy is ½|∫x dμ|², the same functional for particles: both finite and non-decreasing
    assert np.all(np.diff(ds.energy) >= -1e-12)
    assert np.all(np.diff(ds.particle_energy, axis=-1) >= -1e-12)
    # W_1(μ^N_t, μ_t) >= |∫x dμ^N_t − ∫x dμ_t| (Kantorovich–Rubinstein: x ↦ ⟨e, x⟩ is 1-Lipschitz), and > 0
    # (a finite point set is not a density)
    mean = np.einsum("tij,ijk->tk", ds.density.values * grid.weights, grid.points)
    for n in (40, 80):
        gap = np.linalg.norm(ds[f"positions_{n}"].values.mean(axis=2) - mean, axis=-1)  # (repeat, time)
        w1 = ds.wasserstein.sel(p=1.0, n_particles=n).values
        assert np.all(w1 >= gap - 1e-12) and np.all(w1 > 0)
    xr.testing.assert_identical(ds, meanfield.load(out))


def test_euclidean_study_follows_the_gaussian_closure_and_round_trips(tmp_path):
    out = tmp_path / "r1.nc"
    study = {"domain": "euclidean", "grid": {"bounds": [[-6.0, 6.0]], "shape": 384},  # h = 1/32
             "model": {"kind": "softmax", "Q": [[0.5]]},
             "initial": {"kind": "gaussian", "mean": [0.2], "cov": 0.3}, "time": {"t_end": 0.5, "frames": 3},
             "particles": {"n": [100, 200], "repeats": 2}, "distances": {"p": [2]}, "output": {"path": str(out)}}
    ds = run(study, progress=False)
    closure = gaussian.solve_gaussian(Softmax(Q=np.array([[0.5]])), np.array([0.2]), np.array([[0.3]]),
                                      ds.time.values)
    x, h = ds.x.values, ds.x.values[1] - ds.x.values[0]
    for i in range(ds.sizes["time"]):
        rho = ds.density.isel(time=i).values
        mean = h * np.sum(x * rho)
        var = h * np.sum((x - mean) ** 2 * rho)
        # second order in h = 1/32 (issue 6 table): measured 6e-5 (mean), 1.4e-4 (variance) at t = 0.5
        assert abs(mean - closure.mean[i, 0]) < 5e-4 and abs(var - closure.cov[i, 0, 0]) < 5e-4
    assert np.max(np.abs(ds.mass - 1.0)) < 1e-12
    assert "pair_fraction" not in ds  # clustering on the sphere only
    xr.testing.assert_identical(ds, meanfield.load(out))


def test_initial_density_from_a_file(tmp_path):
    grid = CircleGrid(64)
    values = 1.0 + 0.5 * np.cos(grid.angles)
    np.savez(tmp_path / "rho.npz", values=values)
    cfg = read({"domain": "circle", "grid": {"n": 64}, "initial": {"kind": "file", "path": str(tmp_path / "rho.npz")}})
    mu0 = build.initial_density(cfg, grid)
    assert np.allclose(mu0.values, values / (2 * np.pi)) and mu0.mass() == pytest.approx(1.0, abs=1e-14)
    with pytest.raises(meanfield.study.StudyError, match="do not fit the grid"):
        cfg = read({"domain": "circle", "grid": {"n": 32}, "initial": {"kind": "file", "path": str(tmp_path / "rho.npz")}})
        build.initial_density(cfg, CircleGrid(32))


@pytest.mark.parametrize("d", [2, 3, 5])
def test_von_mises_fisher_is_normalised_and_sampled_exactly(d):
    from scipy import special

    kappas = [0.0, 1.0, 30.0]
    if d == 2:
        g = CircleGrid(256)
        for k in kappas:
            f = meanfield.laws.von_mises_fisher(g.points, [[1.0, 0.0]], k)
            assert g.integrate(f) == pytest.approx(1.0, abs=1e-12)
            assert np.allclose(f, np.exp(k * np.cos(g.angles)) / (2 * np.pi * special.i0(k)), rtol=1e-12)
    if d == 3:
        g = SphereGrid(96)
        for k in kappas:
            assert g.integrate(meanfield.laws.von_mises_fisher(g.points, [[0.0, 0.0, 1.0]], k)) == pytest.approx(1,
                                                                                                       abs=1e-12)
    # particles without a grid: E⟨x, c⟩ = A_d(κ) = I_{d/2}(κ)/I_{d/2−1}(κ) (Mardia & Jupp (9.3.9))
    c = np.zeros(d)
    c[0] = 1.0
    cfg = read({"domain": "sphere" if d > 2 else "circle", "dimension": d, "seed": 1,
                "initial": {"kind": "von-mises-fisher", "centres": [c.tolist()], "kappa": 4.0},
                "particles": {"n": 4000, "repeats": 2}})
    x = build.initial_particles(cfg, None, 4000)
    u = x @ c
    A = special.ive(d / 2, 4.0) / special.ive(d / 2 - 1, 4.0)
    assert abs(u.mean() - A) < 5 * u.std() / np.sqrt(u.size)
    # the public sampler: a mixture's component masses and each component's mean resultant length
    c2 = -c
    y = meanfield.laws.sample_von_mises_fisher(20000, [c, c2], [4.0, 0.0], [0.7, 0.3], rng=2)
    assert y.shape == (20000, d) and np.allclose(np.linalg.norm(y, axis=1), 1.0)
    v = y @ c  # E⟨y, c⟩ = 0.7 A_d(4) + 0.3 · 0 (the κ = 0 component is uniform)
    assert abs(v.mean() - 0.7 * A) < 5 * v.std() / np.sqrt(v.size)
    with pytest.raises(ValueError, match="unit vectors"):
        meanfield.laws.sample_von_mises_fisher(10, [2 * c], 1.0, rng=0)


def test_resolution_lost_keeps_the_resolved_frames(tmp_path):
    # loses resolution at t ≈ 0.68, between the output times 0.5 and 1
    study = {"domain": "circle", "grid": {"n": 128}, "model": {"beta": 8.0},
             "initial": {"kind": "von-mises-fisher", "angles": [1.0, 3.5], "kappa": [8.0, 6.0]},
             "time": {"t_end": 4.0, "frames": 9, "refine": False, "representation": "grid"},
             "output": {"path": str(tmp_path / "r.nc")}}
    ds = run(study, progress=False)
    t_lost = ds.attrs["t_reached"]
    assert ds.attrs["status"] == "resolution lost" and 0.5 < t_lost < 1.0
    done = ds.time <= t_lost
    assert np.all(np.isfinite(ds.density.sel(time=done))) and np.all(np.isnan(ds.density.sel(time=~done)))
    # every kept frame is the solution at its own time (the last resolved state, at t_lost, is not
    # put on the next output time but kept apart)
    cfg = read(study)
    mu0 = build.initial_density(cfg, build.build_grid(cfg))
    ref = meanfield.solve(build.build_model(cfg), mu0, (0.0, 0.5), t_eval=[0.0, 0.5])
    np.testing.assert_array_equal(ds.density.sel(time=[0.0, 0.5]).values, np.array([d.values for d in ref.densities]))
    assert ds.density_last_resolved.attrs["time"] == t_lost
    xr.testing.assert_identical(ds, meanfield.load(tmp_path / "r.nc"))


def test_the_grid_hands_over_in_a_study_and_the_lagrangian_frames_are_written(tmp_path, saved_figures):
    """The same study as above with representation = 'auto': past the grid's cap the Lagrangian measure goes on
    to t_end; its frames conserve the mass (cell averages, weights), its clusters are the two bumps, and the
    written file loads back identical. The Lagrangian figure draws every Lagrangian point at its time and angle
    coloured by ρ on a log scale, the cluster count (integer ticks) and E_β in one legend; the heat map runs to
    t_end."""
    study = {"domain": "circle", "grid": {"n": 128}, "model": {"beta": 8.0},
             "initial": {"kind": "von-mises-fisher", "angles": [1.0, 3.5], "kappa": [8.0, 6.0]},
             "time": {"t_end": 4.0, "frames": 9, "refine": False, "method": "dop853", "representation": "auto"},
             "output": {"path": str(tmp_path / "r.nc"), "plot": True}}
    ds = run(study, progress=False)
    assert ds.attrs["status"] == "success" and ds.attrs["representation"] == "grid+panels"
    assert 0.5 < ds.attrs["handover"] < 1.0
    late = ds.time > ds.attrs["handover"]
    np.testing.assert_allclose(ds.density.sel(time=late).sum("theta") * 2 * np.pi / 128, 1.0, atol=1e-12)
    np.testing.assert_allclose(ds.lagrangian_weight.sel(time=late).sum("lagrangian_point"), 1.0, atol=1e-12)
    count = ds.cluster_count.sel(time=late).values  # the bumps pass 10× the uniform density by t = 2
    assert count[-1] == 2 and np.all(np.diff(count) >= 0) and np.all(np.isnan(ds.cluster_count.sel(time=~late)))
    assert np.all(np.diff(ds.energy.values) > 0)
    assert set(saved_figures) == {"r-density.png", "r-energy.png", "r-lagrangian.png"}
    assert saved_figures["r-density.png"].axes[0].get_xlim() == (0.0, 4.0)
    axes = {a.get_ylabel(): a for a in saved_figures["r-lagrangian.png"].axes}
    points, bar = axes["θ"], axes["ρ (at the points, log scale)"]
    clusters_ax, energy_ax = axes["number of clusters of the density"], axes[r"interaction energy $E_\beta$"]
    logr = ds.lagrangian_log_density.values
    ok = np.isfinite(logr)
    x = ds.lagrangian_points.values[ok]
    drawn = np.column_stack([points.collections[0].get_offsets(), np.log10(points.collections[0].get_array())])
    expected = np.column_stack([np.broadcast_to(ds.time.values[:, None], logr.shape)[ok],
                                np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * np.pi), logr[ok] / np.log(10)])
    np.testing.assert_allclose(drawn[np.lexsort(drawn.T[::-1])], expected[np.lexsort(expected.T[::-1])],
                               rtol=1e-13, atol=1e-13)
    assert isinstance(points.collections[0].norm, LogNorm) and bar.collections  # one colour bar, log scale
    (step,) = clusters_ax.get_lines()
    np.testing.assert_array_equal(step.get_xdata(), ds.time.values)
    np.testing.assert_array_equal(step.get_ydata(), ds.cluster_count.values)
    ticks = [v for v in clusters_ax.get_yticks() if clusters_ax.get_ylim()[0] <= v <= clusters_ax.get_ylim()[1]]
    assert ticks == [round(v) for v in ticks]  # an integer count: integer ticks
    np.testing.assert_array_equal(energy_ax.get_lines()[0].get_ydata(), ds.energy.values)
    legend = [t.get_text() for t in clusters_ax.get_legend().get_texts()]
    assert legend[:2] == ["clusters of the density (left axis)", "density"]  # the step and E_β, one legend
    xr.testing.assert_identical(ds, meanfield.load(tmp_path / "r.nc"))


def test_fixed_lagrangian_nodes_in_a_study(tmp_path, saved_figures):
    """[time] lagrangian_nodes = 'grid': the grid's nodes advanced as fixed characteristics (as solve of
    lagrangian.start(mu0)): one point per node, mass fixed; refused unless the representation is 'lagrangian'."""
    from meanfield.study.config import StudyError

    study = {"domain": "sphere", "grid": {"lmax": 24}, "model": {"beta": 2.0},
             "initial": {"kind": "uniform-noise", "amplitude": 0.5, "modes": 3},
             "time": {"t_end": 1.0, "frames": 3, "method": "dop853", "representation": "lagrangian",
                      "lagrangian_nodes": "grid"},
             "output": {"path": str(tmp_path / "s.nc"), "plot": True}}
    ds = run(study, progress=False)
    assert ds.attrs["status"] == "success" and ds.attrs["representation"] == "nodes"
    assert ds.sizes["lagrangian_point"] == 25 * 49  # the lmax-24 grid's nodes
    # the frames' cell averages on the grid hold the mass; the figures are drawn
    grid = build.build_grid(read(study))
    edges = np.concatenate([[0.0], 0.5 * (grid.colatitudes[1:] + grid.colatitudes[:-1]), [np.pi]])
    area = np.outer(np.cos(edges[:-1]) - np.cos(edges[1:]), np.full(grid.longitudes.size, 2 * np.pi / 49))
    np.testing.assert_allclose((ds.density.values * area).sum(axis=(1, 2)), 1.0, atol=1e-13)
    # the figures: a snapshot per output time (the last included) on one colour bar, E_β at the output times,
    # every point's angle to the heaviest cluster against t
    assert set(saved_figures) == {f"s-{name}.png" for name in ("density", "density-column", "energy", "lagrangian")}
    *snapshots, bar = saved_figures["s-density.png"].axes
    assert [a.get_title() for a in snapshots] == [f"t = {t:g}" for t in ds.time.values] and "ρ" in bar.get_ylabel()
    np.testing.assert_array_equal(saved_figures["s-energy.png"].axes[0].get_lines()[0].get_ydata(), ds.energy)
    points = saved_figures["s-lagrangian.png"].axes[0]  # on S²: every point's angle to the last frame's cluster
    offsets = points.collections[0].get_offsets()
    assert points.get_ylabel().startswith("angle to the heaviest cluster at t = 1")
    np.testing.assert_array_equal(np.sort(offsets[:, 0]), np.repeat(ds.time.values, ds.sizes["lagrangian_point"]))
    assert offsets[:, 1].min() >= 0.0 and offsets[:, 1].max() <= np.pi
    np.testing.assert_allclose(ds.lagrangian_weight.sum("lagrangian_point"), 1.0, atol=1e-13)
    cfg = read(study)
    mu0 = build.initial_density(cfg, build.build_grid(cfg))
    ref = meanfield.solve(build.build_model(cfg), meanfield.lagrangian.start(mu0), (0.0, 1.0), t_eval=[0.0, 0.5, 1.0])
    np.testing.assert_allclose(ds.lagrangian_points.isel(time=-1).values, ref.densities[-1].points, atol=1e-12)
    study["time"]["representation"] = "auto"
    with pytest.raises(StudyError, match="lagrangian_nodes"):
        run(study, progress=False)


def test_ctrl_c_keeps_what_was_computed(tmp_path, monkeypatch):
    import particles

    from meanfield.integrate import Integrator

    out = tmp_path / "i.nc"
    study = {"domain": "circle", "grid": {"n": 64}, "time": {"t_end": 1.0, "frames": 11},
             "particles": {"n": [50]}, "output": {"path": str(out)}}
    # Ctrl-C while the particles run: the density is kept, the particles are missing
    monkeypatch.setattr(particles, "simulate", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(StudyInterrupted) as e:
        run(study, progress=False)
    ds = meanfield.load(out)
    assert ds.attrs["status"] == "interrupted" and np.all(np.isfinite(ds.density))
    assert np.all(np.isnan(ds.pair_fraction)) and "positions_50" not in ds
    xr.testing.assert_identical(ds, e.value.dataset)
    # Ctrl-C during the density solve, after 4 output times
    calls = {"n": 0}
    advance = Integrator._advance

    def interrupting(self, *args):
        calls["n"] += 1
        if calls["n"] > 4:
            raise KeyboardInterrupt
        return advance(self, *args)

    monkeypatch.setattr(Integrator, "_advance", interrupting)
    with pytest.raises(StudyInterrupted):
        run(study, progress=False)
    ds = meanfield.load(out)
    assert ds.attrs["status"] == "interrupted"
    assert np.all(np.isfinite(ds.density.isel(time=slice(0, 5)))) and np.all(np.isnan(ds.density.isel(time=slice(5, None))))


def test_ctrl_c_during_the_particle_statistics_keeps_what_was_computed(tmp_path, monkeypatch):
    from particles import clusters as particle_clusters

    study = {"domain": "circle", "grid": {"n": 64}, "time": {"t_end": 1.0, "frames": 11},
             "particles": {"n": [20, 40]}, "output": {"path": str(tmp_path / "i.nc")}}
    pair_fraction = particle_clusters.pair_fraction
    calls = {"n": 0}

    def interrupting(*args):
        calls["n"] += 1
        if calls["n"] > 1:  # the second N's statistics
            raise KeyboardInterrupt
        return pair_fraction(*args)

    monkeypatch.setattr(particle_clusters, "pair_fraction", interrupting)
    with pytest.raises(StudyInterrupted):
        run(study, progress=False)
    ds = meanfield.load(tmp_path / "i.nc")
    assert ds.attrs["status"] == "interrupted" and np.all(np.isfinite(ds.density))
    assert np.all(np.isfinite(ds.pair_fraction.sel(n_particles=20)))
    assert np.all(np.isnan(ds.pair_fraction.sel(n_particles=40)))


def test_an_unresolved_initial_density_is_a_study_error():
    study = {"domain": "circle", "grid": {"n": 16}, "initial": {"kind": "von-mises-fisher", "angles": [0.0],
                                                               "kappa": 200.0}}
    with pytest.raises(meanfield.study.StudyError, match=r"\[grid\]/\[initial\]: the initial density is not resolved"):
        run(study, output=False, progress=False)


def test_zarr_store_round_trip(tmp_path):
    pytest.importorskip("zarr")
    study = {"domain": "circle", "grid": {"n": 32}, "time": {"t_end": 0.5, "frames": 3},
             "particles": {"n": [20], "repeats": 2}, "output": {"path": str(tmp_path / "r.zarr")}}
    ds = run(study, progress=False)
    xr.testing.assert_identical(ds, meanfield.load(tmp_path / "r.zarr"))
    assert ds.positions_20.shape == (2, 3, 20, 2)


def test_a_bad_output_path_is_refused_before_any_work(tmp_path, monkeypatch):
    from meanfield.study import StudyError, runner

    def never(*args, **kwargs):
        raise AssertionError("the study ran before its output path was checked")

    monkeypatch.setattr(runner, "run_config", never)
    study = {"domain": "circle", "grid": {"n": 32}, "time": {"t_end": 0.1, "frames": 2}}
    with pytest.raises(StudyError, match="does not exist"):
        run(study, output=tmp_path / "missing" / "r.nc", progress=False)
    with pytest.raises(StudyError, match=r"\.nc"):
        run(study, output=tmp_path / "r.txt", progress=False)


def test_writes_are_atomic_and_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    import xarray as xr

    from meanfield.core.io import save

    path = tmp_path / "r.nc"
    old = xr.Dataset({"a": ("x", np.arange(3.0))})
    save(old, path)

    def broken(self, target, *args, **kwargs):
        open(target, "wb").write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", broken)
    with pytest.raises(OSError, match="disk full"):
        save(xr.Dataset({"a": ("x", np.zeros(3))}), path)
    monkeypatch.undo()
    xr.testing.assert_identical(meanfield.load(path), old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.nc"]  # no partial file left behind


def test_a_coarse_grid_measure_is_reported_beside_the_distances(tmp_path, caplog):
    """W1 against particles measures the grid measure too: its own error (validation.wasserstein.discretisation)
    is stored, positive and at most the W1 it is part of within that estimate's factor; a grid so coarse that
    it is comparable with the distances at t = 0 is warned about, a fine one is not."""
    from validation.wasserstein import discretisation

    def study(lmax):
        return {"domain": "sphere", "grid": {"lmax": lmax}, "model": {"beta": 1.0},
                "initial": {"kind": "von-mises-fisher", "centres": [[0.0, 0.0, 1.0]], "kappa": [0.5]},
                "time": {"t_end": 0.1, "frames": 2, "refine": False, "tail_tol": 1e-2},
                "particles": {"n": [200, 400], "repeats": 2, "save_positions": False}, "distances": {"p": [1]},
                "output": {"path": str(tmp_path / f"s{lmax}.nc")}}

    with caplog.at_level("WARNING", logger="meanfield.study"):
        coarse = run(study(4), progress=False)
    cfg = read(study(4))
    floor = float(coarse["wasserstein_discretisation"])
    assert floor == pytest.approx(discretisation(build.initial_density(cfg, build.build_grid(cfg))), rel=1e-12)
    assert floor > 0.5 * coarse.wasserstein.isel(time=0, n_particles=-1).mean()
    assert "grid measure's own W1 error" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="meanfield.study"):
        fine = run(study(32), progress=False)
    assert 0 < float(fine["wasserstein_discretisation"]) < 0.5 * fine.wasserstein.isel(time=0, n_particles=-1).mean()
    assert "grid measure's own" not in caplog.text


def test_a_stationary_study_draws_the_bifurcation_diagram(tmp_path, saved_figures):
    """[stationary] on the circle, USA β = 3 > β_*: the stored branch is the solver's (D(r) with its fold, D_c the
    closed form), the states listed at each D solve the self-consistency equation on the branch (their r between
    the branch's), the particles' order parameter is stored per D, N and repeat, and the figure draws the branch,
    the uniform law and one marker series per N."""
    import json

    import meanfield as mf
    from meanfield.analysis import stationary as st
    from meanfield.domains import CIRCLE
    from meanfield.study import run
    from meanfield.study.stationary import summary_lines

    study = {"domain": "circle", "seed": 1, "model": {"beta": 3.0, "normalized": False}, "grid": {"n": 32},
             "initial": {"kind": "uniform"}, "time": {"t_end": 2.0, "frames": 3},
             "particles": {"n": [32, 64], "repeats": 2, "dt": 0.02},
             "stationary": {"noise": [1.0, 1.325], "points": 40, "betas": [1.0, 2.0, 3.0, 4.0]},
             "output": {"path": str(tmp_path / "b.nc"), "plot": True}}
    ds = run(study, progress=False)
    model = mf.SelfAttention(3.0, normalized=False)
    b = st.branch(model, CIRCLE, np.linspace(0.95 / 40, 0.95, 40))
    np.testing.assert_array_equal(ds["branch_noise"].values, b.noise)
    assert ds.attrs["critical_noise"] == st.critical_noise(model, CIRCLE) and ds.attrs["transition"] == "discontinuous"
    # Folds and bifurcation points as data variables on their coordinates: the folds (r, D) the solver located,
    # the degree-k branches leaving the uniform law at D_k = c I_k(β)/β (USA on S¹: σ_k = 0), every one above the
    # study's smallest D.
    from scipy.special import iv

    np.testing.assert_array_equal(np.c_[ds["fold_r"].values, ds["fold_noise"].values], b.folds)
    assert ds["fold_noise"].dims == ("fold",) and float(ds["critical_noise"]) == ds.attrs["critical_noise"]
    k = ds["degree"].values
    np.testing.assert_allclose(ds["bifurcation_noise"].values, iv(k, 3.0) / 3.0, rtol=1e-12)
    assert k[0] == 1 and iv(k[-1] + 1, 3.0) / 3.0 < 1.0 <= iv(k[-1], 3.0) / 3.0
    assert list(ds["state"].values) == list(range(ds.sizes["state"]))
    # The transition diagram over [stationary] betas: D_c(β) = I_1(β)/β, a fold above D_c past β_* = 2.4469 only.
    np.testing.assert_allclose(ds["diagram_critical"].values, iv(1, ds["beta"].values) / ds["beta"].values,
                               rtol=1e-12)
    fold = ds["diagram_fold"].values
    assert np.all(np.isnan(fold[:2])) and np.all(fold[2:] > ds["diagram_critical"].values[2:])
    assert fold[2] == pytest.approx(b.folds[0, 1], rel=1e-9) and ds.attrs["beta_star"] == st.critical_beta(2)
    assert "b-transitions.png" in saved_figures
    lines = "\n".join(summary_lines(ds))
    assert "discontinuous at D_c = " in lines and f"D_f = {b.folds[0, 1]:.10g}" in lines and "D_1 = " in lines
    assert "4 β in [1, 4]: discontinuous (a fold) for β in [3, 4]; β_* = 2.44" in lines
    r = ds["state_r"].values
    assert np.isfinite(r[0]).sum() == 1 and np.isfinite(r[1]).sum() == 2  # the fold's window holds two states
    assert np.all(ds["state_growth"].values[1][np.argsort(r[1])] * [1, -1] > 0)  # lower unstable, upper stable
    assert ds["particle_order"].shape == (2, 2, 2) and np.all((ds["particle_order"] >= 0) & (ds["particle_order"] <= 1))
    fig = saved_figures["b-bifurcation.png"]
    ax = fig.axes[0]
    assert ax.get_xlabel() == "noise D" and "discontinuous" in ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "uniform law, stable" in labels and "N = 32 particles at late times: mean, 95% interval" in labels and \
        "N = 64 particles at late times: mean, 95% interval" in labels
    # The legend stands beside the axes (clear of the data) and an inset enlarges D_c and the fold.
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    assert ax.get_legend().get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1
    (inset,) = ax.child_axes
    lo, hi = inset.get_xlim()
    assert lo < ds.attrs["critical_noise"] < b.folds[0, 1] < hi and hi - lo < 0.5 * np.ptp(ax.get_xlim())


def test_a_stationary_study_refuses_what_it_cannot_do():
    from meanfield.study.config import StudyError, read

    base = {"domain": "circle", "model": {"beta": 2.0}, "initial": {"kind": "uniform"}, "stationary": {"noise": [0.1]}}
    with pytest.raises(StudyError, match=r"\[stationary\] noise: missing"):
        read({**base, "stationary": {"points": 10}})
    with pytest.raises(StudyError, match=r"\[stationary\] r_max"):
        read({**base, "stationary": {"noise": [0.1], "r_max": 1.0}})
    with pytest.raises(StudyError, match=r"\[stationary\]: stationary states"):
        read({"domain": "euclidean", "stationary": {"noise": [0.1]}})


def test_dt_factor_with_per_layer_weights_takes_the_largest_rate_scale_over_the_layers(tmp_path, monkeypatch):
    """[particles] dt_factor with [model] weights (a schedule of layers, examples/layers.toml) failed with
    "[particles]: Improper number of dimensions to norm.": the step divided by rate_scale(model), which cannot take
    a schedule. The step is dt_factor over the largest rate scale of the layers met in the run
    (meanfield.models.bounds.rate_scale_over, the one rule particles.simulate's default step uses too): here the
    last layer's (β = 4), not the first's; a run to t = 1.5 meets the first two layers only."""
    import particles
    from meanfield.models.bounds import rate_scale, rate_scale_over

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    eye = np.broadcast_to(np.eye(3), (3, 3, 3))
    np.savez(tmp_path / "w.npz", Q=eye + 0.1 * rng.standard_normal((3, 3, 3)), K=eye.copy(), V=eye.copy(),
             beta=np.array([1.0, 2.0, 4.0]))
    study = """
domain = "sphere"
seed = 1
[model]
weights = "w.npz"
[initial]
kind = "uniform"
[time]
t_end = {t_end}
frames = 4
[particles]
n = [16]
dt_factor = 0.05
"""
    steps, simulate = [], particles.simulate

    def recording(model, x0, t_eval, **kw):
        steps.append(kw["dt"])
        return simulate(model, x0, t_eval, **kw)

    monkeypatch.setattr(particles, "simulate", recording)
    ds = run(write(tmp_path, study.format(t_end=3.0)), output=False, progress=False)
    assert ds.attrs["status"] == "success" and np.all(np.isfinite(ds["positions_16"].values))
    model = build.build_model(read(write(tmp_path, study.format(t_end=3.0))))
    per_layer = [rate_scale(model.at(t)) for t in (0.5, 1.5, 2.5)]
    assert per_layer[2] == max(per_layer) > per_layer[0]
    assert steps == [0.05 / per_layer[2]] and rate_scale_over(model, 0.0, 3.0) == per_layer[2]
    run(write(tmp_path, study.format(t_end=1.5)), output=False, progress=False)
    assert steps[1] == 0.05 / max(per_layer[:2]) and rate_scale_over(model, 0.0, 1.5) == max(per_layer[:2])
    with pytest.raises(ValueError, match="rate_scale_over"):  # one number for all times: refused, with the way out
        rate_scale(model)
