"""The figures a referee sees, inspected as objects: titles in words and symbols (no code reprs), labelled colour
bars on a log scale where the density spans decades, every snapshot grid full with its first and last frame, one
colour scale and colour bar per grid, shared axes in R², π ticks and refinement marks on the circle, a legend entry
for every line and band, fractions on axes that fit them with bands inside [0, 1], the density's own pair fraction
by quadrature beside the particles', one panel per order of W_p (rates too) with labelled log ticks, Lagrangian
lines broken at gaps, readable longitudes on dark maps."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import LogNorm, Normalize, PowerNorm  # noqa: E402

from meanfield.domains.plotting import snapshot_frames
from meanfield.study import run
from meanfield.study import figures

CODE = ("CircleGrid(", "SphereGrid(", "EuclideanGrid(", "SelfAttention(", "Softmax(", "array(", "beta=", "[matrix]",
        "layers(", "_")


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


@pytest.fixture(scope="module")
def sphere():
    return run({"domain": "sphere", "grid": {"lmax": 16}, "model": {"beta": 4.0},
                "initial": {"kind": "von-mises-fisher", "centres": [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]],
                            "kappa": [1.0, 1.0]},
                "time": {"t_end": 1.4, "frames": 8, "tail_tol": 1e-8}, "particles": {"n": [40], "repeats": 2}},
               output=False, progress=False)


def _labelled(ax):
    return bool(ax.get_xlabel()) and bool(ax.get_ylabel())


def _no_code(text):
    return not any(c in text for c in CODE)


def _legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _tick_labels_inside(axis, lo, hi):
    return [t.get_text() for t, v in zip(axis.get_majorticklabels(), axis.get_majorticklocs())
            if lo <= v <= hi and t.get_text()]


# ------------------------------------------------------------------ titles
def _attrs(domain, dimension, table, grid=None, **extra):
    study = {"model": table, "grid": grid, "particles": {"delta": 1e-3}}
    return type("DS", (), {"attrs": {"domain": domain, "dimension": dimension, "study": json.dumps(study), **extra}})()


@pytest.mark.parametrize("ds, expected", [
    (_attrs("circle", 2, {"kind": "self-attention", "beta": 4.0, "normalized": True}, {"n": 128},
            resolution=128, resolution_final=2048, representation="grid"),
     "SA, β = 4 on S¹ · grid n = 128 → 2048"),
    (_attrs("sphere", 3, {"kind": "self-attention", "beta": 2.2, "normalized": False, "noise": 0.1}, {"lmax": 24},
            resolution=24, resolution_final=24, representation="grid"),
     r"USA, β = 2.2, noise D = 0.1 on S² · grid ℓmax = 24"),
    (_attrs("euclidean", 2, {"kind": "softmax", "beta": 1.0, "Q": [[0.5, 0.2], [0.0, 0.3]]},
            {"bounds": [[-4, 4], [-4, 4]], "shape": [96]}, resolution=96, resolution_final=96),
     "softmax attention, β = 1, Q = [0.5, 0.2; 0, 0.3] on ℝ² · 96 × 96 cells on [−4, 4]²"),
    (_attrs("sphere", 3, {"kind": "self-attention", "beta": 1.0, "Q": "random", "K": "random", "V": 2.0,
                          "random_scale": 0.5, "heads": 2}),
     "SA, β = 1, random Q, K (scale 0.5), V = 2I, 2 heads on S² · particles only"),
    (_attrs("circle", 2, {"kind": "self-attention", "beta": 5.0}, {"n": 512}, resolution=512,
            resolution_final=512, representation="panels"),
     "SA, β = 5 on S¹ · Lagrangian panels from grid n = 512"),
    (_attrs("sequence", 3, {"kind": "self-attention", "beta": 2.0, "causal": True}, {"n": 128, "positions": 33},
            resolution=128, resolution_final=512),
     "causal SA, β = 2 on [0, 1] × S¹ · 33 positions × grid n = 128 → 512"),
    (_attrs("sphere", 3, {"kind": "self-attention", "beta": 1.0, "weights": "/somewhere/layers.npz",
                          "activation": "gelu", "splitting": "sum"}, {"lmax": 32}, resolution=32,
            resolution_final=64, layer_boundaries="[1.0, 2.0]",
            model="Transformer(SelfAttention(SA, beta=layers(3 layers on [0, 3]), Q=layers(3 layers on [0, 3]), "
                  "K=layers(3 layers on [0, 3]), V=layers(3 layers on [0, 3])) + FeedForward(time-dependent))"),
     "3-layer Transformer (SA with per-layer weights) on S² · weights from layers.npz · grid "
     r"ℓmax = 32 → 64"),  # a file of before: the study's words, the repr never parsed
    (_attrs("sphere", 3, {"kind": "self-attention", "beta": 1.0, "weights": "/somewhere/layers.npz",
                          "activation": "gelu", "splitting": "sum"}, {"lmax": 32}, resolution=32,
            resolution_final=64, layer_boundaries="[1.0, 2.0]", model="Transformer(anything at all)",
            model_label="3-layer Transformer (SA with per-layer Q, K, V, β; a GELU feed-forward block)"),
     "3-layer Transformer (SA with per-layer Q, K, V, β; a GELU feed-forward block) on S² · weights from "
     r"layers.npz · grid ℓmax = 32 → 64"),  # the model's own words (its describe(), stored by the run)
    (_attrs("circle", 2, {"kind": "self-attention", "beta": 4.0, "V": -1.0}, {"n": 64}, resolution=64,
            resolution_final=64, model="SelfAttention(SA, beta=4, Q=I, K=I, V=[[-1. 0.] [ 0. -1.]])"),
     "SA, β = 4, V = −I on S¹ · grid n = 64"),
])
def test_titles_are_the_model_in_words_and_symbols(ds, expected):
    title = figures._title(ds, width=1000)
    assert title == expected
    assert "layers(" not in title and title.count("Transformer") <= 1  # a time-dependent model named once
    wrapped = figures._title(ds, width=60)
    assert all(len(figures._visible(line)) <= 60 for line in wrapped.splitlines() if " " in line)
    assert wrapped.replace(" ·\n", " · ").replace("\n", " ") == expected


@pytest.mark.parametrize("width, lines", [
    (60, ["3-layer Transformer (SA with per-layer Q, K, V, β;",
          "a GELU feed-forward block) on S² · weights from layers.npz ·", "grid ℓmax = 32 → 64"]),
    (40, ["softmax attention, β = 1,", "Q = [0.5, 0.2; 0, 0.3] on ℝ² ·", "96 × 96 cells"]),
    (55, ["SA, β = 4 on S² · Lagrangian measure on the nodes of", "grid ℓmax = 100"]),
])
def test_titles_wrap_between_phrases_not_inside_a_list_or_an_equation(width, lines):
    """A line ends between two parts (' ·'), else after a comma outside brackets, else after one inside them, else
    at a space outside brackets and equations: 'Q, K, V, β', '[0.5, 0.2; 0, 0.3]', 'ℓmax = 100' stay whole (the
    first was split after 'V,', the second after '0,')."""
    parts = {60: ["3-layer Transformer (SA with per-layer Q, K, V, β; a GELU feed-forward block) on S²",
                  "weights from layers.npz", "grid ℓmax = 32 → 64"],
             40: ["softmax attention, β = 1, Q = [0.5, 0.2; 0, 0.3] on ℝ²", "96 × 96 cells"],
             55: ["SA, β = 4 on S²", "Lagrangian measure on the nodes of grid ℓmax = 100"]}[width]
    wrapped = figures._wrap(parts, width)
    assert wrapped.splitlines() == lines
    assert wrapped.replace("\n", " ") == " · ".join(parts)  # every character kept, a space for each break


# ------------------------------------------------------------------ the circle
def test_circle_heat_map_log_scale_thinned_particles_refinements_and_a_title(circle):
    refinements = json.loads(circle.attrs["refinements"])
    assert refinements  # the clusters sharpen: the grid was refined (else the marks below test nothing)
    ax = figures.plot_density(circle)
    fig = ax.figure
    assert _labelled(ax)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "π/2", "π", "3π/2", "2π"]
    mesh = ax.collections[0]
    assert isinstance(mesh.norm, PowerNorm)  # the peaks reach 9× the uniform density: not linear, not log
    assert mesh.norm.vmax == pytest.approx(np.nanmax(circle.density.values)) and mesh.norm.vmin == 0.0
    (bar,) = [a for a in fig.axes if a is not ax and a.get_ylabel()]
    assert bar.get_ylabel() == "ρ(t, θ) (square-root scale)"
    sharp = circle.copy()
    sharp["density"] = sharp.density * 0 + np.exp(40 * np.cos(sharp.theta - 1.0)) / 1e16  # peaks 10³× uniform
    ax = figures.plot_density(sharp)
    assert isinstance(ax.collections[0].norm, LogNorm)
    assert [a for a in ax.figure.axes if a is not ax and a.get_ylabel()][0].get_ylabel() == "ρ(t, θ) (log scale)"
    ax = figures.plot_density(circle)
    vertical = [ln for ln in ax.get_lines() if len(set(ln.get_xdata())) == 1]
    assert sorted(ln.get_xdata()[0] for ln in vertical) == pytest.approx(sorted(r[0] for r in refinements))
    (top,) = [a for a in ax.child_axes]  # the new resolutions on a second time axis, never clipped
    assert [t.get_text() for t in top.get_xticklabels()] == [f"{int(r[2])}" for r in refinements]
    title = fig.get_suptitle()
    assert title.startswith("SA, β = 4 on S¹ · grid n = 32 → 256") and _no_code(title)
    (dots,) = [ln for ln in ax.get_lines() if ln.get_marker() == "."]  # one line of light dots, thinned in time
    assert dots.get_alpha() < 1 and np.unique(dots.get_xdata()).size <= 24
    assert dots.get_xdata()[-1] == circle.time.values[figures._computed_frames(circle)][-1] or \
        circle.time.values[-1] in dots.get_xdata()
    labels = _legend_texts(ax)
    assert labels[0].startswith("N = 30 particles") and "grid refinements" in labels
    plt.close("all")


def test_few_output_times_draw_profiles_not_blocks(circle):
    few = circle.isel(time=[0, 4, 6])
    ax = figures.plot_density(few)
    labels = _legend_texts(ax)
    assert labels[:3] == [f"density, t = {t:.3g}" for t in few.time.values]
    assert labels[3].startswith("N = 30 particles at t = ") and "histogram" in labels[3]
    assert ax.get_xlim() == (0.0, 2 * np.pi) and ax.get_ylim()[0] == 0.0
    plt.close("all")


def test_one_panel_per_order_of_the_distance_with_labelled_log_ticks(circle):
    ax = figures.plot_wasserstein(circle)
    panels = [a for a in ax.figure.axes if a.get_title()]
    assert len(panels) == 2 and ["$W_{1}$" in panels[0].get_title(), "$W_{2}$" in panels[1].get_title()] == [True] * 2
    for a in panels:
        assert a.get_xlabel() == "t" and _legend_texts(a) == ["N = 30", "N = 60", "shaded: ±1 sd over 2 repeats"]
        lo, hi = a.get_ylim()
        assert len(_tick_labels_inside(a.yaxis, lo, hi)) >= 2  # every curve has labelled ticks beside it
    assert _no_code(ax.figure.get_suptitle())
    plt.close("all")


def test_one_rate_panel_per_order_with_legends_in_words(circle):
    """The fitted and the reference exponent in words (a script in a 7-pt legend would print at 4.9 pt), W_p in
    mathtext on labels large enough for its subscript."""
    ax = figures.plot_rate(circle)
    panels = [a for a in ax.figure.axes if a.get_title()]
    assert len(panels) == 2  # W2 has no rate at the last time (resolution lost): its last fitted one
    for a, p in zip(panels, (1, 2)):
        k = np.flatnonzero(np.isfinite(circle.rate.sel(p=p).values))[-1]
        assert a.get_title().endswith(f"t = {circle.time.values[k]:.3g}")
        texts = _legend_texts(a)
        fit = float(circle.rate.sel(p=p).isel(time=k))
        assert f"$W_{{{p}}}$" in a.get_ylabel() and f"fit: exponent −{abs(fit):.3f}" in texts and fit < 0
        assert "exponent −1/2" in texts and not any("^" in t or "$" in t for t in texts)
        assert figures.small_text(a.figure) == []
    plt.close("all")


def test_energy_mathtext_and_a_legend_for_the_bands(circle):
    ax = figures.plot_energy(circle)
    assert _labelled(ax) and r"$E_\beta$" in ax.get_ylabel() and "E_β" not in ax.get_ylabel()
    assert any("exp(β)/(2βN)" in t.get_text() for t in ax.texts)  # 7 pt: no superscript (4.9 pt)
    assert figures.small_text(ax.figure) == []
    assert _legend_texts(ax) == ["density", "N = 30", "N = 60", "shaded: ±1 sd over 2 repeats"]
    plt.close("all")


def test_clusters_fit_the_data_clip_the_bands_and_show_the_density(circle):
    ax = figures.plot_clusters(circle)
    lo, hi = ax.get_ylim()
    data = np.nanmax(circle.pair_fraction.mean("repeat").values)
    assert lo == 0.0 and data < hi < 1.0  # autoscaled from 0, not a fixed 0–1 for data far below 1
    for band in (c for c in ax.collections if c.get_gid() == "sd-band"):
        y = band.get_paths()[0].vertices[:, 1]
        assert y.min() >= 0.0 and y.max() <= 1.0
    assert r"$\langle x_i, x_j\rangle \geq 1 - \delta$" in ax.get_ylabel() and "δ = 0.001" in ax.get_ylabel()
    texts = _legend_texts(ax)
    assert texts == ["N = 30", "N = 60", "density (quadrature on its grid)", "shaded: ±1 sd over 2 repeats"]
    line = [ln for ln in ax.get_lines() if ln.get_label().startswith("density")][0]
    t, values, _ = figures.density_pair_fraction(circle)
    np.testing.assert_array_equal(line.get_ydata(), values)
    assert values[0] == pytest.approx(np.nanmean(circle.pair_fraction.isel(time=0)), rel=0.5)
    plt.close("all")


def test_clusters_say_where_the_density_has_no_pair_fraction(circle):
    particles_only = circle.drop_vars([v for v in circle.data_vars if v not in ("pair_fraction",)])
    ax = figures.plot_clusters(particles_only)
    assert "not available" in ax.get_title() and "particles only" in ax.get_title()
    plt.close("all")


def test_density_pair_fraction_is_the_double_integral():
    """The quadrature ∬ 1{⟨x, y⟩ >= 1 − δ} ρ(x)ρ(y): δ/2 for the uniform law on S², arccos(1 − δ)/π on the circle
    (to round-off); a von Mises law on the circle and a von Mises–Fisher law on S² against a brute-force sum over
    a fine grid."""
    from meanfield import CircleGrid, SphereGrid
    from meanfield.density import Density
    from meanfield.domains import CIRCLE, SPHERE

    for delta in (1e-3, 0.1):
        uniform = Density(CircleGrid(64), np.full(64, 1 / (2 * np.pi)), check=False)
        assert CIRCLE.pair_fraction(uniform.grid, uniform.values, delta) == pytest.approx(np.arccos(1 - delta) / np.pi,
                                                                                     rel=1e-12)
        g = SphereGrid(12)
        uniform = Density(g, np.full(g.shape, 1 / (4 * np.pi)), check=False)
        assert SPHERE.pair_fraction(uniform.grid, uniform.values, delta) == pytest.approx(delta / 2, rel=1e-12)
    g = CircleGrid(64)
    rho = np.exp(3 * np.cos(g.angles - 1.0))
    rho /= rho.sum() * 2 * np.pi / 64
    m, a = 2 ** 16, np.arccos(0.99)  # ∫ρ(θ) (F(θ + a) − F(θ − a)) dθ, F the law's distribution function
    fine = np.linspace(0, 2 * np.pi, m, endpoint=False)
    r = np.exp(3 * np.cos(fine - 1.0))
    r /= r.sum()
    F = lambda x: np.interp(x, np.append(fine, 2 * np.pi), np.concatenate([[0], np.cumsum(r)]), period=None)  # noqa
    h = np.pi / m
    mass = F(np.mod(fine + h + a, 2 * np.pi)) - F(np.mod(fine + h - a, 2 * np.pi))
    brute = r @ np.where(mass < 0, mass + 1.0, mass)
    assert CIRCLE.pair_fraction(g, rho, 0.01) == pytest.approx(brute, rel=1e-6)
    g, fine = SphereGrid(16), SphereGrid(48)
    centre = np.array([0.3, 0.2, 0.9]) / np.linalg.norm([0.3, 0.2, 0.9])
    law = lambda x: np.exp(2.0 * x @ centre)  # noqa: E731
    coarse = Density(g, law(g.points), check=False)
    coarse = Density(g, coarse.values / coarse.mass(), check=False)
    x, w = fine.points.reshape(-1, 3), fine.weights.reshape(-1)
    f = law(x) * w
    f /= f.sum()
    brute = f @ ((x @ x.T >= 0.9) @ f)
    assert SPHERE.pair_fraction(g, coarse.values, 0.1) == pytest.approx(brute, rel=2e-2)


# ------------------------------------------------------------------ snapshots
@pytest.mark.parametrize("times, expected, ncols", [
    (np.arange(8) * 0.5, np.arange(8) * 0.5, 4),
    (np.arange(81) * 0.5, np.arange(0, 41, 5.0), 3),
    (np.arange(7) * 0.5, [0.0, 1.0, 2.0, 3.0], 4),
    (np.arange(71) * 0.1, np.arange(8.0), 4),
    (np.arange(3.0), np.arange(3.0), 3),
    (np.arange(12.0), None, 3),
])
def test_snapshot_frames_hold_the_first_and_last_and_fill_the_grid(times, expected, ncols):
    idx, cols = snapshot_frames(times)
    assert idx[0] == 0 and idx[-1] == times.size - 1 and idx.size % cols == 0 and cols == ncols
    if expected is not None:
        np.testing.assert_allclose(times[idx], expected, atol=1e-12)


def test_sphere_snapshots_every_panel_drawn_last_frame_included_readable_longitudes(sphere):
    fig = figures.plot_snapshots(sphere)
    maps = [a for a in fig.axes if a.name == "mollweide"]
    assert [a.get_title() for a in maps] == [f"t = {t:.3g}" for t in sphere.time.values]  # 8 frames: 2 × 4
    assert all(a.collections for a in maps) and len(fig.axes) == len(maps) + 1  # no empty panel, one colour bar
    assert len({(a.collections[0].norm.vmin, a.collections[0].norm.vmax) for a in maps}) == 1
    for a in maps:
        for label in a.get_xticklabels():
            assert label.get_color() == "white" and label.get_path_effects()  # white, outlined
    bar = [a for a in fig.axes if a not in maps][0]
    assert bar.get_ylabel() == "ρ"
    title = fig.get_suptitle()
    assert r"on S² · grid ℓmax = 16" in title and "N = 40 particles (cyan)" in title and _no_code(
        title.replace(r"ℓmax", ""))
    plt.close("all")


def test_sphere_clusters_compare_the_density_by_funk_hecke(sphere):
    ax = figures.plot_clusters(sphere)
    line = [ln for ln in ax.get_lines() if ln.get_label() == "density (quadrature on its grid)"][0]
    assert line.get_ydata()[0] == pytest.approx(1e-3 / 2, rel=0.5)  # near-uniform at first: δ/2
    assert np.all(np.diff(line.get_ydata()) > 0)  # the clusters gather
    plt.close("all")


def test_plane_snapshots_share_axes_one_norm_and_zoom_in(plane):
    fig = figures.plot_snapshots(plane)
    maps = [a for a in fig.axes if a.collections and a.get_title().startswith("t = ")]
    times = [float(a.get_title()[4:]) for a in maps]
    assert times[0] == 0.0 and times[-1] == pytest.approx(plane.time.values[-1])
    assert np.allclose(np.diff(times), times[1] - times[0], atol=2e-3)  # equally spaced
    assert len({a.collections[0].norm for a in maps}) == 1  # one colour scale
    assert type(maps[0].collections[0].norm) is Normalize  # a Gaussian: linear
    bars = [a for a in fig.axes if a.get_ylabel() == "ρ" and a not in maps]
    assert len(bars) == 1  # one colour bar
    assert len({a.get_xlim() for a in maps}) == 1 and len({a.get_ylim() for a in maps}) == 1  # shared axes
    lo, hi = maps[0].get_xlim()
    assert hi - lo < 0.7 * 12.0  # the Gaussian fills the panel, not a corner of the [-6, 6] box
    title = fig.get_suptitle()
    assert "softmax attention, β = 1, Q = [1, 0.2; 0, 1] on ℝ²" in title and _no_code(title)
    plt.close("all")


def test_a_title_says_how_many_particles_are_drawn():
    assert figures._particles_words(256, 200) == "N = 256 particles, 200 drawn (cyan)"
    assert figures._particles_words(100, 100, every=3) == "N = 100 particles at every 3rd output time (cyan)"


def test_the_overview_prints_its_title_once(circle):
    fig = figures.plot_overview(circle)
    title = fig.get_suptitle()
    assert title and all(title.splitlines()[0] not in a.get_title() for a in fig.axes)
    plt.close("all")


def test_no_clusters_figure_when_no_pair_clusters(circle, tmp_path):
    quiet = circle.copy()
    quiet["pair_fraction"] = quiet["pair_fraction"] * 0.0
    written = {p.name for p in figures.write_figures(quiet, tmp_path / "q.nc")}
    assert "q-clusters.png" not in written and "q-density.png" in written
    written = {p.name for p in figures.write_figures(circle, tmp_path / "c.nc")}
    assert "c-clusters.png" in written


# ------------------------------------------------------------------ Lagrangian frames
def _two_clusters():
    """A circle frame after collapse: two clusters of 50 points each, 1e-12 wide, ρ ~ 1e30, nothing between."""
    from meanfield.domains import get
    from meanfield.lagrangian import LagrangianMeasure

    theta = np.concatenate([1.0 + 1e-12 * np.linspace(-1, 1, 50), 4.0 + 1e-12 * np.linspace(-1, 1, 50)])
    w = np.full(100, 0.01)
    logr = np.log(w / 4e-14)
    return LagrangianMeasure(theta[:, None], w, logr, get("circle"), None, 100.0)


def test_lagrangian_line_spans_the_circle_and_breaks_at_gaps():
    from meanfield.domains import get
    from meanfield.lagrangian import LagrangianMeasure

    ax = _two_clusters().plot()
    (line,) = ax.get_lines()
    x = line.get_xdata()
    assert ax.get_xlim() == (0.0, 2 * np.pi) and ax.get_yscale() == "log"
    assert np.isnan(x).sum() >= 2  # no straight line across the empty arcs between the clusters
    for piece in np.split(x, np.flatnonzero(np.isnan(x))):
        piece = piece[np.isfinite(piece)]
        assert piece.size == 0 or np.ptp(piece) < 1e-6
    assert "log scale" in ax.get_ylabel()
    theta = np.linspace(0, 2 * np.pi, 200, endpoint=False)  # spread mass: one unbroken line over [0, 2π]
    uniform = LagrangianMeasure(theta[:, None], np.full(200, 1 / 200), np.full(200, -np.log(2 * np.pi)),
                                get("circle"), None, 0.0)
    (line,) = uniform.plot().get_lines()
    x = line.get_xdata()
    assert not np.isnan(x).any() and x.min() < 0 and x.max() >= 2 * np.pi
    plt.close("all")


def test_lagrangian_map_on_the_sphere_uses_the_density_colour_bar_convention():
    from meanfield.domains import get
    from meanfield.lagrangian import LagrangianMeasure
    from particles import uniform_sphere

    x = uniform_sphere(300, 3, rng=1)
    frame = LagrangianMeasure(x, np.full(300, 1 / 300), np.linspace(-3, 40, 300), get("sphere"), None, 2.0)
    ax = frame.plot()
    sc = ax.collections[0]
    assert isinstance(sc.norm, LogNorm) and sc.norm.vmax == pytest.approx(np.exp(40.0))
    (bar,) = [a for a in ax.figure.axes if a is not ax]
    assert bar.get_xlabel() == "ρ (at the points, log scale)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["−120°", "0°", "120°"]
    assert all(t.get_color() == "white" for t in ax.get_xticklabels())
    plt.close("all")


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
