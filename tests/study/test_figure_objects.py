"""The figures a referee sees, inspected as objects: labels present, one colour scale and one colour bar per
snapshot grid, equally spaced snapshots, π ticks and refinement marks on the circle, one panel per order of W_p,
data-driven limits in R², titles without array reprs, no empty panel."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from meanfield.study import run  # noqa: E402
from meanfield.study import figures  # noqa: E402


@pytest.fixture(scope="module")
def circle():
    return run({"domain": "circle", "grid": {"n": 32}, "model": {"beta": 4.0},
                "initial": {"kind": "von-mises-fisher", "angles": [1.0, 4.0], "kappa": [2.0, 2.0]},
                "time": {"t_end": 4.0, "frames": 9, "representation": "grid", "max_n": 256},
                "particles": {"n": [30, 60], "repeats": 2}, "distances": {"p": [1.0, 2.0]}},
               output=False, progress=False)


@pytest.fixture(scope="module")
def plane():
    return run({"domain": "euclidean", "grid": {"bounds": [[-6.0, 6.0], [-6.0, 6.0]], "shape": 96},
                "model": {"kind": "softmax", "Q": [[1.0, 0.2], [0.0, 1.0]]},
                "initial": {"cov": 0.2}, "time": {"t_end": 0.4, "frames": 8},
                "particles": {"n": [50]}}, output=False, progress=False)


def _labelled(ax):
    return bool(ax.get_xlabel()) and bool(ax.get_ylabel())


def test_circle_heat_map_has_pi_ticks_refinement_marks_and_a_title(circle):
    import json

    refinements = json.loads(circle.attrs["refinements"])
    assert refinements  # the clusters sharpen: the grid was refined (else the marks below test nothing)
    ax = figures.plot_density(circle)
    assert _labelled(ax)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "π/2", "π", "3π/2", "2π"]
    vertical = [ln for ln in ax.get_lines() if len(set(ln.get_xdata())) == 1]
    assert sorted(ln.get_xdata()[0] for ln in vertical) == pytest.approx(sorted(r[0] for r in refinements))
    assert "CircleGrid(n=32)" in ax.get_title() and "array(" not in ax.get_title()
    assert len(ax.figure.axes) == 2  # the heat map and its colour bar
    plt.close("all")


def test_one_panel_per_order_of_the_distance(circle):
    ax = figures.plot_wasserstein(circle)
    panels = [a for a in ax.figure.axes if a.get_title()]
    assert len(panels) == 2 and ["W1" in panels[0].get_title(), "W2" in panels[1].get_title()] == [True, True]
    for a in panels:
        assert a.get_xlabel() == "t" and len(a.get_legend().get_texts()) == 2  # one curve per N
    plt.close("all")


def test_snapshot_grid_shares_one_norm_and_one_colour_bar_and_zooms_in(plane):
    fig = figures.plot_snapshots(plane)
    maps = [a for a in fig.axes if a.collections and a.get_title().startswith("t = ")]
    times = [float(a.get_title()[4:]) for a in maps]
    assert len(maps) >= 4 and np.allclose(np.diff(times), times[1] - times[0], atol=2e-3)  # equally spaced
    clims = {a.collections[0].get_clim() for a in maps}
    assert len(clims) == 1  # one colour scale
    bars = [a for a in fig.axes if a.get_ylabel() == "ρ" and a not in maps]
    assert len(bars) == 1  # one colour bar
    for a in maps:
        assert _labelled(a)
        lo, hi = a.get_xlim()
        assert hi - lo < 0.7 * 12.0  # the Gaussian fills the panel, not a corner of the [-6, 6] box
    assert "array(" not in fig._suptitle.get_text() and "[matrix]" in fig._suptitle.get_text()
    plt.close("all")


def test_energy_says_it_counts_the_self_interaction(circle):
    ax = figures.plot_energy(circle)
    assert _labelled(ax)
    assert any("self-interaction" in t.get_text() for t in ax.texts)
    plt.close("all")


def test_no_clusters_figure_when_no_pair_clusters(circle, tmp_path):
    quiet = circle.copy()
    quiet["pair_fraction"] = quiet["pair_fraction"] * 0.0
    written = {p.name for p in figures.write_figures(quiet, tmp_path / "q.nc")}
    assert "q-clusters.png" not in written and "q-density.png" in written
    written = {p.name for p in figures.write_figures(circle, tmp_path / "c.nc")}
    assert "c-clusters.png" in written


def test_lagrangian_frames_on_a_map_are_cell_averages_that_keep_the_mass():
    """A Lagrangian frame on S² is drawn as cell averages (its chart's cell_averages) on the domain's grid with
    about 50 points per cell: lmax = ⌊√(points/100)⌋, mass 1; a frame without points falls back to the grid's."""
    import xarray as xr

    from meanfield import SphereGrid
    from particles import uniform_sphere

    grid = SphereGrid(8)
    dims = tuple(grid.coordinates())
    x = uniform_sphere(4900, 3, rng=0)
    w = np.full((2, 4900), 1.0 / 4900)
    w[1] = np.nan
    ds = xr.Dataset({"density": (("time",) + dims, np.full((2,) + grid.shape, 1.0 / (4.0 * np.pi))),
                     "lagrangian_points": (("time", "lagrangian_point", "component"), np.stack([x, x])),
                     "lagrangian_weight": (("time", "lagrangian_point"), w)},
                    coords={name: values for name, (values, _) in grid.coordinates().items()},
                    attrs={"domain": "sphere"})
    domain, density = figures._densities(ds)
    frames = figures._cell_frames(ds, domain, density)
    cells = frames(0)
    edges, nlon = cells.grid.colatitude_edges, cells.grid.longitudes.size
    area = np.outer(np.cos(edges[:-1]) - np.cos(edges[1:]), np.full(nlon, 2 * np.pi / nlon))  # the cells'
    assert cells.grid.lmax == 7 and np.sum(cells.values * area) == pytest.approx(1.0, rel=1e-12)
    assert frames(1).grid == grid
