"""A zonal study through its hand-over, as its figures draw it (issue 39, figures a reader can trust).

SA β = 4 on S^127 from a von Mises–Fisher law (examples/zonal_clusters.toml to t = 8, no particles): the grid is
refined ℓmax 48 → 96 → 192 → 384 → 768 between two output times and hands over to the rings at t ≈ 0.79, and the
density then collapses towards the pole. On the start grid (Gauss nodes of sin^126 θ) the first node sits at
θ = 0.45, so the frames the runner stores after the hand-over (cell averages on those nodes) spread any mass
nearer the pole over [0, 0.45]: the figure must draw the rings' law on cells of its own.
"""

import json

import matplotlib.pyplot as plt
import numpy as np
import pytest

from meanfield import domains
from meanfield.study import figures, run

D = 128
STUDY = {"name": "z", "domain": "zonal", "dimension": D, "seed": 0, "grid": {"lmax": 48},
         "model": {"kind": "self-attention", "beta": 4.0},
         "initial": {"kind": "von-mises-fisher", "kappa": [40.0], "centres": [[0.0] * (D - 1) + [1.0]]},
         "time": {"t_end": 8.0, "frames": 17}}


@pytest.fixture(scope="module")
def zonal():
    ds = run(STUDY, output=False, progress=False)
    assert ds.attrs["status"] == "success" and ds.attrs["handover"] > 0  # else the checks below test nothing
    return ds


def test_the_final_resolution_is_the_finest_the_solver_reached(zonal):
    """The refinements after the last grid frame (just before the hand-over) count: the title says 48 → 768,
    not the 96 of the last stored grid frame."""
    refinements = json.loads(zonal.attrs["refinements"])
    assert zonal.attrs["resolution_final"] == int(refinements[-1][2]) == 768
    assert "lmax=768" in zonal.attrs["grid_final"]
    ax = figures.plot_density(zonal)
    assert "= 48 → 768" in ax.figure.get_suptitle()
    plt.close("all")


def test_refinements_close_in_time_share_one_label(zonal):
    """Four refinements in t ∈ [0.04, 0.79] of a run to t = 8: a line each, one label '96…768' (their labels 0.01
    apart overlapped)."""
    refinements = json.loads(zonal.attrs["refinements"])
    ax = figures.plot_density(zonal)
    vertical = [ln for ln in ax.get_lines() if len(set(ln.get_xdata())) == 1]
    assert len(vertical) == len(refinements) == 4
    (top,) = ax.child_axes
    labels = [t.get_text() for t in top.get_xticklabels()]
    ticks = top.get_xticks()
    assert labels[0].startswith("96") and labels[-1].endswith("768") and "…" in "".join(labels)
    assert np.all(np.diff(ticks) >= 0.06 * 8.0)
    plt.close("all")


def test_after_the_hand_over_the_map_draws_the_rings_law_not_the_start_grids_cells(zonal):
    """Each frame after the hand-over, as drawn: the masses of the map's own cells (Σ = 1) with no mass farther
    than one cell below the innermost ring (the start grid's cells put it down to θ = 0), and its mean θ that of
    the rings to within the widest cell holding mass. The density collapses onto the pole (θ ~ 1e-3 at t = 8): the
    cells are equal in ln θ (issue 46; on equal cells of [0, π] the frames from t = 5 on sat in the first one)."""
    domain = domains.get("zonal")
    ax = figures.plot_density(zonal)
    mesh = ax.collections[0]
    edges = mesh.get_coordinates()[:, 0, 1]  # 'flat' shading: the cells' own edges
    mass = np.asarray(mesh.get_array()).reshape(edges.size - 1, zonal.sizes["time"])  # (θ cells, time)
    cells = np.sqrt(edges[1:] * edges[:-1])  # the centres of cells equal in ln θ
    assert np.allclose(np.diff(np.log(edges)), np.log(edges[1] / edges[0])) and edges[-1] == pytest.approx(np.pi)
    assert "cells equal in ln θ" in [a for a in ax.figure.axes if a is not ax and a.get_ylabel()][0].get_ylabel()
    points, weights = zonal.lagrangian_points.values, zonal.lagrangian_weight.values
    after = np.flatnonzero(np.isfinite(weights).any(axis=1))
    assert after.size >= 10
    for i in after:
        ok = np.isfinite(weights[i])
        rings = np.reshape(domain.coordinates(points[i][ok]), -1)
        w = weights[i][ok] / weights[i][ok].sum()
        drawn = np.nan_to_num(mass[:, i])
        assert np.sum(drawn) == pytest.approx(1.0, rel=1e-12)
        assert np.all(drawn[edges[1:] < rings.min()] == 0.0)
        width = np.max(np.diff(edges)[drawn > 0])
        assert abs(np.sum(cells * drawn) - np.sum(w * rings)) <= width
    plt.close("all")


def test_the_lagrangian_figure_draws_what_its_titles_name(zonal):
    """Rings are not counted as clusters (a dense ring is no cluster of tokens): the right panel draws the energy
    on its own axis and its title names the energy alone — no panel with an empty axis, no title naming a curve
    that is not drawn. Every panel holds data; E_β is drawn as the run stored it."""
    assert not np.isfinite(zonal.cluster_count.values).any()  # else this tests nothing
    fig = figures.plot_lagrangian(zonal)
    panels = [a for a in fig.axes if a.get_title()]
    assert len(panels) == 2
    left, right = panels
    assert "cluster" not in right.get_title() and right.get_title().startswith("energy")
    for a in fig.axes:
        if a.get_label() == "<colorbar>":
            continue
        assert a.get_lines() or a.collections, a.get_title()  # no empty axis beside the curves
        assert a.get_yticks().size, a.get_title()
    (curve,) = [ln for ln in right.get_lines() if ln.get_label() == "density"]
    np.testing.assert_array_equal(curve.get_ydata(), zonal.energy.values)
    assert figures.small_text(fig) == []
    plt.close("all")
