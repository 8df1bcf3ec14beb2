"""The figures as a new user read them (issue 46, finding 5), each finding checked on the drawn Figure.

A zonal study through its collapse (SA β = 4 on S^127 from a von Mises–Fisher law, as examples/zonal_clusters.toml,
to t = 8 with few frames and particles): the grid is refined ℓmax 48 → 768 by t ≈ 0.79 and hands over to the rings,
which then collapse onto the pole θ = 0 like e^{−t} (their median θ is 1e-3 at t = 8). On equal cells of [0, π] the
whole law sat in the first cell from t ≈ 5 on: a black map with a bright line under its axis. Checked here:

- the refinement label and its values read as one line (the words were centred over the map, the values in its
  corner);
- after the collapse the map resolves the law (over several cells, on an axis logarithmic near the pole) and draws
  where its mass is, each frame's mass conserved;
- the W1 figure says what the distance is on the zonal sphere: W1 of the polar angles' laws, a lower bound of W1 on
  S^127 (the domain says so: the particles live on a sphere that the zonal domain is a quotient of);
- the Lagrangian figure's two panels share one time axis;
- the rate figure's legend covers none of its data (it covered the repeats of examples/compare_softmax_1d.toml).
"""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402

from meanfield import domains
from meanfield.study import figures, run

D = 128
ZONAL = {"name": "z", "domain": "zonal", "dimension": D, "seed": 0, "grid": {"lmax": 48},
         "model": {"kind": "self-attention", "beta": 4.0},
         "initial": {"kind": "von-mises-fisher", "kappa": [40.0], "centres": [[0.0] * (D - 1) + [1.0]]},
         "time": {"t_end": 8.0, "frames": 9}, "particles": {"n": [20, 40], "repeats": 2},
         "distances": {"p": [1.0]}}


@pytest.fixture(scope="module")
def zonal():
    ds = run(ZONAL, output=False, progress=False)
    assert ds.attrs["status"] == "success" and ds.attrs["handover"] > 0  # else the map's rings are not tested
    assert json.loads(ds.attrs["refinements"])  # else the refinement label is not tested
    return ds


def _rings(ds, i):
    """(polar angles, probability weights) of the rings of Lagrangian frame ``i``."""
    w = ds["lagrangian_weight"].values[i]
    ok = np.isfinite(w)
    theta = np.reshape(domains.get("zonal").coordinates(ds["lagrangian_points"].values[i][ok]), -1)
    return theta, w[ok] / w[ok].sum()


def _map_cells(ax, times):
    """(θ edges (m + 1,), values (m, T)) of the density map's mesh, one column per output time."""
    mesh = ax.collections[0]
    coordinates = mesh.get_coordinates()  # (rows + 1, columns + 1, 2) of its corners
    values = np.ma.filled(np.asarray(mesh.get_array(), dtype=float).reshape(coordinates.shape[0] - 1, -1), np.nan)
    assert values.shape[1] == times.size
    return coordinates[:, 0, 1], values


def _mirrored(ds):
    """``ds`` reflected through the equator (θ → π − θ): the same study collapsing onto the south pole."""
    out = ds.copy(deep=True)
    out["lagrangian_points"] = np.pi - out["lagrangian_points"]
    nodes = out[out["density"].dims[1]].values
    assert np.allclose(nodes, np.pi - nodes[::-1])  # Gauss nodes of sin^{d-2}θ: symmetric about the equator
    out["density"] = out["density"].copy(data=out["density"].values[:, ::-1])
    for name in [v for v in out.data_vars if v.startswith("positions_")]:
        x = out[name].values.copy()
        x[..., -1] *= -1.0  # ⟨x, e⟩ → −⟨x, e⟩ for the axis e = e_d
        out[name] = out[name].copy(data=x)
    return out


# ------------------------------------------------------------------ (a) the refinement label
def test_the_refinement_label_and_its_first_values_read_as_one_line(zonal):
    """'grid refined to ℓmax =' stands on the line of the values, just before the first of them, and both inside
    the figure: one unit a reader reads left to right, not words centred over the map and values in its corner."""
    ax = figures.plot_density(zonal)
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (top,) = ax.child_axes
    label = top.xaxis.label
    assert label.get_text().startswith("grid refined to") and label.get_text().endswith("=")
    first = min((t for t in top.get_xticklabels() if t.get_text()), key=lambda t: t.get_window_extent(renderer).x0)
    words, value = label.get_window_extent(renderer), first.get_window_extent(renderer)
    space = 7.0 / 72 * fig.dpi  # a 7-pt em
    assert 0.0 <= value.x0 - words.x1 <= space  # the words end just before the value
    assert abs(words.y0 - value.y0) <= 0.15 * space and abs(words.y1 - value.y1) <= 0.3 * space  # one line
    for box in (words, value):
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1  # nothing cut off
    (suptitle,) = [t for t in fig.texts if t.get_text() == fig.get_suptitle()]
    assert not words.overlaps(suptitle.get_window_extent(renderer))
    assert figures.small_text(fig) == []
    plt.close("all")


# ------------------------------------------------------------------ (b) the map after the collapse
@pytest.mark.parametrize("pole", ["north", "south"])
def test_after_the_collapse_the_map_resolves_the_law_where_its_mass_is(zonal, pole):
    """Every frame after the hand-over, drawn as the mass of each cell (the colour bar says so): its mass 1, over
    at least 4 cells holding 90 % of it, the cells at least 4 pixels high in all, and where the rings are (the
    drawn median of θ within a cell of theirs). On equal cells of [0, π] the frames from t = 5 on sat in one cell,
    a line of pixels under the axis; reflected through the equator (``pole`` south) the map resolves θ near π."""
    ds = zonal if pole == "north" else _mirrored(zonal)
    ax = figures.plot_density(ds)
    edges, mass = _map_cells(ax, ds["time"].values)
    pixels = np.abs(np.diff(ax.transData.transform(np.c_[np.zeros_like(edges), edges])[:, 1]))
    after = np.flatnonzero(np.isfinite(ds["lagrangian_weight"].values).any(axis=1))
    assert after.size >= 7 and ds["time"].values[after[-1]] == 8.0
    for i in after:
        share = np.nan_to_num(mass[:, i]) / np.nansum(mass[:, i])  # on equal cells: the cells' masses (× a constant)
        order = np.argsort(share)[::-1]
        held = order[:np.searchsorted(np.cumsum(share[order]), 0.9) + 1]  # the fewest cells with 90 % of the mass
        assert held.size >= 4 and pixels[held].sum() >= 4.0, (ds["time"].values[i], held.size)
    (bar,) = [a for a in ax.figure.axes if a is not ax and a.get_ylabel()]
    assert "mass of each cell" in bar.get_ylabel()
    for i in after:
        theta, w = _rings(ds, i)
        m = np.nan_to_num(mass[:, i])
        assert m.sum() == pytest.approx(1.0, rel=1e-12)
        drawn_median = np.interp(0.5, np.cumsum(m) - m / 2, 0.5 * (edges[1:] + edges[:-1]))
        rings_median = theta[np.argsort(theta)][np.searchsorted(np.cumsum(w[np.argsort(theta)]), 0.5)]
        cell = np.searchsorted(edges, rings_median) - 1
        assert abs(drawn_median - rings_median) <= 1.5 * (edges[cell + 1] - edges[cell])
    lo, hi = ax.get_ylim()
    assert lo >= 0.0 and hi <= np.pi
    assert figures.small_text(ax.figure) == []
    plt.close("all")


# ------------------------------------------------------------------ (c) what the distance is
def test_the_zonal_distance_is_titled_as_the_polar_angles_lower_bound(zonal):
    """On the zonal sphere W1 compares the polar angles' laws (validation's 'polar-angle' method): a lower bound of
    W1 on S^127, as the panel's title says; its texts print at 7 pt or more."""
    ax = figures.plot_wasserstein(zonal)
    title = ax.get_title()
    assert "polar angle" in title and "lower bound" in title and "S¹²⁷" in title
    assert "$W_{1}$" in title
    assert figures.small_text(ax.figure) == []
    plt.close("all")


def test_on_the_circle_the_distance_is_titled_as_the_distance_itself():
    """Where the particles live on the density's own domain, the title names W1 between them, with no bound."""
    ds = run({"domain": "circle", "grid": {"n": 32}, "model": {"beta": 1.0}, "initial": {"kind": "uniform"},
              "time": {"t_end": 0.2, "frames": 3}, "particles": {"n": [10, 20], "repeats": 2},
              "distances": {"p": [1.0]}}, output=False, progress=False)
    title = figures.plot_wasserstein(ds).get_title()
    assert title == "$W_{1}$ between the density and N particles"
    plt.close("all")


# ------------------------------------------------------------------ (d) one time axis
def test_the_lagrangian_panels_share_one_time_axis(zonal):
    """The points (from the hand-over on) and the energy (from t = 0) over the same time range, the run's."""
    fig = figures.plot_lagrangian(zonal)
    left, right = [a for a in fig.axes if a.get_title()]
    t = zonal["time"].values
    assert left.get_xlim() == right.get_xlim() == (t[0], t[-1])
    assert left.get_shared_x_axes().joined(left, right)
    plt.close("all")


# ------------------------------------------------------------------ 2. the rate figure's legend
#: W1 and W2 at t = 0.5 of examples/compare_softmax_1d.toml (seed 0): (p, N, repeat), and the fitted exponents
RATE_W = [[[0.05150551811647881, 0.03702717696574359, 0.15483484187367327, 0.06718402643944486],
           [0.08849842760803794, 0.04098417919684121, 0.03239605045630402, 0.08217881103337868],
           [0.0210477013588944, 0.01313323846141618, 0.02448573967215019, 0.06585045759347385],
           [0.01650178265381388, 0.04465092399272369, 0.01313915814967386, 0.01250296222835703]],
          [[0.09124278794356185, 0.06819448077693946, 0.1909777910588186, 0.09232379165814705],
           [0.1136142866310981, 0.04965587983843031, 0.04832650005339435, 0.10657505741050331],
           [0.02916107299678591, 0.02494324853587929, 0.0329617307899748, 0.0737085802642357],
           [0.02330367330207311, 0.04939792822233628, 0.01936221520755854, 0.01861709822283127]]]
RATES = [(-0.3989779878435758, -0.6363849700566406, -0.16157100563051102),
         (-0.42413044617092377, -0.6055289074267795, -0.24273198491506812)]


def _rate_dataset():
    """The rate variables of examples/compare_softmax_1d.toml at its last output time."""
    w = np.array(RATE_W)[..., None]
    rate = np.array(RATES).T[:, :, None]  # (rate/low/high, p, time)
    law = {"long_name": "exponent α of W_p ~ N^α", "law": "W_p ~ N^α"}
    study = {"model": {"kind": "softmax", "Q": [[1.0]]}, "grid": {"bounds": [[-6.0, 6.0]], "shape": [768]}}
    return xr.Dataset(
        {"wasserstein": (("p", "n_particles", "repeat", "time"), w),
         **{name: (("p", "time"), rate[k], law) for k, name in enumerate(("rate", "rate_low", "rate_high"))}},
        coords={"p": [1.0, 2.0], "n_particles": [100, 316, 1000, 3162], "repeat": np.arange(4), "time": [0.5]},
        attrs={"domain": "euclidean", "dimension": 1, "study": json.dumps(study), "resolution": 768})


def test_the_rate_legend_covers_none_of_the_data():
    """In each panel the legend's box holds no drawn point of the data (repeats, means, the fit, its band, the
    reference slope), in display coordinates, and lies outside the data area: inside it ('best') the legend covered
    the upper third of the panel, 16 pixels (at 150 dpi) from the repeats at N = 316, where other seeds' repeats
    fall. Its texts print at 7 pt or more."""
    ax = figures.plot_rate(_rate_dataset())
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    panels = [a for a in fig.axes if a.get_title()]
    assert len(panels) == 2
    for a in panels:
        box = a.get_legend().get_window_extent(renderer)
        points = [line.get_transform().transform(line.get_xydata()) for line in a.get_lines()]
        points += [c.get_transform().transform(p.vertices) for c in a.collections for p in c.get_paths()]
        points = np.concatenate(points)
        covered = [(x, y) for x, y in points if box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1]
        assert not covered, f"{a.get_title()}: the legend covers {len(covered)} data points"
        assert not box.overlaps(a.patch.get_window_extent(renderer)), f"{a.get_title()}: the legend is on the data"
        assert a.get_legend().get_texts()
    assert figures.small_text(fig) == []
    plt.close("all")
