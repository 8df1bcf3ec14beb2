"""Figures for print (issue 39, item 3): vector files and a resolution from the study file and the command line,
layer boundaries drawn over the space-time maps, legend swatches in their band's colour, no text below 7 pt in any
figure the studies write, the S² snapshots laid out for one column; titles from the models' own words."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.image  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from meanfield.cli import main
from meanfield.study import StudyError, figures, run, sweep

CIRCLE = {"domain": "circle", "grid": {"n": 32}, "model": {"beta": 4.0},
          "initial": {"kind": "von-mises-fisher", "angles": [1.0, 4.0], "kappa": [2.0, 2.0]},
          "time": {"t_end": 1.0, "frames": 5}, "particles": {"n": [16, 32], "repeats": 2}, "distances": {"p": [1.0]}}

STUDIES = {  # every kind of figure the study layer writes, each in a second or two
    "circle": CIRCLE,
    "sphere": {"domain": "sphere", "grid": {"lmax": 16}, "model": {"beta": 4.0},
               "initial": {"kind": "von-mises-fisher", "centres": [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]],
                           "kappa": [1.0, 1.0]},
               "time": {"t_end": 0.6, "frames": 8, "tail_tol": 1e-8}, "particles": {"n": [30], "repeats": 2}},
    "stationary": {"domain": "circle", "seed": 1, "model": {"beta": 3.0, "normalized": False}, "grid": {"n": 32},
                   "initial": {"kind": "uniform"}, "time": {"t_end": 1.0, "frames": 3},
                   "particles": {"n": [32], "repeats": 2, "dt": 0.05},
                   "stationary": {"noise": [1.0, 1.325], "points": 20, "betas": [1.0, 3.0]}},
    "particles": {"domain": "sphere", "model": {"beta": 2.0}, "initial": {"kind": "uniform"},
                  "time": {"t_end": 2.0, "frames": 5}, "particles": {"n": [30, 60], "repeats": 2}},
    "lagrangian": {"domain": "circle", "grid": {"n": 64}, "model": {"beta": 4.0},
                   "initial": {"kind": "von-mises-fisher", "angles": [1.0, 4.0], "kappa": [2.0, 2.0]},
                   "time": {"t_end": 1.0, "frames": 5, "representation": "lagrangian"},
                   "particles": {"n": [20], "repeats": 2}},
    "zonal": {"domain": "zonal", "dimension": 16, "grid": {"lmax": 24}, "model": {"beta": 2.0},
              "initial": {"kind": "von-mises-fisher", "kappa": [4.0], "centres": [[0.0] * 15 + [1.0]]},
              "time": {"t_end": 0.5, "frames": 3}, "particles": {"n": [20, 40], "repeats": 2}},
    "euclidean": {"domain": "euclidean", "grid": {"bounds": [[-3.0, 3.0], [-3.0, 3.0]], "shape": 40},
                  "model": {"kind": "softmax", "Q": [[0.5, 0.2], [0.0, 0.3]]},
                  "initial": {"kind": "gaussian", "mean": [0.2, -0.1], "cov": [[0.3, 0.05], [0.05, 0.2]]},
                  "time": {"t_end": 0.2, "frames": 3}, "particles": {"n": [20, 40], "repeats": 2},
                  "distances": {"p": [2.0]}},
    "normalized": {"domain": "sphere", "dimension": 3, "model": {"beta": 1.0, "normalization": "pre"},
                   "initial": {"kind": "von-mises-fisher", "centres": [[0.0, 0.0, 1.0]], "kappa": [50.0]},
                   "time": {"t_end": 2.0, "frames": 5}, "particles": {"n": [12, 24], "repeats": 2}},
    "causal": {"domain": "circle", "grid": {"n": 32, "positions": 5}, "model": {"beta": 2.0, "causal": True},
               "initial": {"kind": "uniform"}, "time": {"t_end": 0.5, "frames": 3},
               "particles": {"n": [10, 20], "repeats": 2}},
}


def _figures(tmp_path, saved_figures, name, **output):
    study = dict(STUDIES[name], output={"path": str(tmp_path / f"{name}.nc"), "plot": True, **output})
    run(study, progress=False)
    return {k: v for k, v in saved_figures.items() if k.startswith(name)}


def _small_texts(fig, least=7.0):
    """(size, text) of every drawn text of ``fig`` with a glyph below ``least`` points, sub- and superscripts at
    the size they are drawn (:func:`meanfield.study.figures.small_text`)."""
    return [(size, text[:60]) for size, text in figures.small_text(fig, least)]


# ------------------------------------------------------------------ no text below 7 pt
@pytest.mark.parametrize("name", sorted(STUDIES))
def test_no_text_below_7_points_in_any_figure_a_study_writes(tmp_path, saved_figures, name):
    written = _figures(tmp_path, saved_figures, name)
    assert written, name
    for file, fig in written.items():
        assert _small_texts(fig) == [], file


def test_no_text_below_7_points_in_a_sweeps_map_and_curves(tmp_path, saved_figures):
    base = {"domain": "circle", "grid": {"n": 32}, "model": {"beta": 1.0},
            "initial": {"kind": "von-mises-fisher", "angles": [0.5], "kappa": 2.0}, "time": {"t_end": 0.5, "frames": 3},
            "particles": {"n": [16], "repeats": 2}}
    sweep(base, ["beta=0:4:5"], scheduler="serial", output=tmp_path / "map.nc", plot=True, progress=False)
    sweep(base, ["beta=0,4"], scheduler="serial", output=tmp_path / "curves.nc", plot=True, progress=False)
    assert {"map-map.png", "curves-map.png"} <= set(saved_figures)
    for file, fig in saved_figures.items():
        assert _small_texts(fig) == [], file


def test_the_test_sees_small_text():
    """The 7-pt check fails where a figure has 6-pt text (so that the test above can fail)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "small", fontsize=6)
    ax.tick_params(labelsize=6.5)
    assert (6.0, "small") in _small_texts(fig) and any(size == 6.5 for size, _ in _small_texts(fig))
    plt.close(fig)


def test_the_test_sees_scripts_drawn_below_7_points():
    """matplotlib draws mathtext sub- and superscripts at 0.7 of their text and a one-line radical sign at 0.69: a
    script of a 9-pt label is 6.3 pt (one of a 7-pt label nested twice 3.43 pt), the radical of a 10-pt label
    6.93 pt, both of a 10.5-pt label (SCRIPTED) above 7 pt; the check measures them, on every line of a text of
    several; tick labels outside the axis' range (kept by matplotlib, not drawn) do not count."""
    import matplotlib.pyplot as plt

    from meanfield.domains.plotting import SCRIPTED

    fig, ax = plt.subplots()
    ax.set_title(r"$W_1$ rate", fontsize=9)
    ax.set_ylabel("two lines\n" + r"$e^{x_i}$", fontsize=7)
    ax.set_xlabel(r"$W_1\,/\sqrt{\log N}$ and $\langle x_i, x_j\rangle$", fontsize=SCRIPTED)
    ax.text(0.5, 0.9, r"$W_1\,/\sqrt{\log N}$", fontsize=10)
    ax.text(0.5, 0.5, "S² and ℝ² (characters of the 8-pt font)", fontsize=8)
    ax.set_xticks([0.0, 0.5, 1.0], ["$10^{0}$", "0.5", "1"], fontsize=7)
    ax.set_xlim(0.5, 1.0)  # the tick at 0 is not drawn
    assert _small_texts(fig) == [(pytest.approx(3.43), "two lines\n$e^{x_i}$"), (pytest.approx(6.3), "$W_1$ rate"),
                                 (pytest.approx(6.93), r"$W_1\,/\sqrt{\log N}$")]
    plt.close(fig)


def test_the_sphere_strip_has_a_one_column_version(tmp_path, saved_figures):
    """S²: beside the strip of maps, <stem>-density-column at 3.5 in: 4 maps (the first and the last among them) in
    2 × 2, the colour bar below, every text >= 7 pt."""
    written = _figures(tmp_path, saved_figures, "sphere")
    fig = written["sphere-density-column.png"]
    assert fig.get_size_inches()[0] == pytest.approx(3.5)
    maps = [a for a in fig.axes if a.get_title().startswith("t = ")]
    assert len(maps) == 4 and len({round(a.get_position().x0, 6) for a in maps}) == 2  # 2 × 2
    assert maps[0].get_title() == "t = 0" and maps[-1].get_title() == "t = 0.6"
    bar = [a for a in fig.axes if a not in maps]
    assert len(bar) == 1 and bar[0].get_position().y1 < min(a.get_position().y0 for a in maps)  # below
    assert _small_texts(fig) == []
    assert written["sphere-density.png"].get_size_inches()[0] > 7  # the strip itself, as before


def test_the_column_has_no_blank_between_title_maps_and_colour_bar(tmp_path):
    """Three frames in a column: a row of three maps (no empty panel), each half as high as wide; the figure is as
    high as its contents — at most 0.15 in between the title and the maps' titles and between the maps and the
    colour bar (constrained layout alone left 0.4 in above a row of three)."""
    ds = run(dict(STUDIES["sphere"], time={"t_end": 0.6, "frames": 3, "tail_tol": 1e-8}), output=False,
             progress=False)
    fig = figures.plot_snapshots(ds, width=figures.COLUMN)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    maps = [a for a in fig.axes if a.get_title().startswith("t = ")]
    (bar,) = [a for a in fig.axes if a not in maps]
    assert len(maps) == 3 and len({round(a.get_position().y0, 6) for a in maps}) == 1
    boxes = [a.get_tightbbox(r) for a in maps]
    above = (fig.texts[0].get_window_extent(r).y0 - max(b.y1 for b in boxes)) / fig.dpi
    below = (min(b.y0 for b in boxes) - bar.get_tightbbox(r).y1) / fig.dpi
    assert 0 < above <= 0.15 and 0 < below <= 0.15, (above, below)
    for a in maps:  # the maps keep their 2:1 shape and the column's width (0.05 in between two, 0.1 outside)
        w, h = a.get_window_extent(r).width, a.get_window_extent(r).height
        assert w / h == pytest.approx(2.0, rel=0.02) and w / fig.dpi > (3.5 - 0.2) / 3 - 0.05
    assert fig.get_size_inches()[0] == pytest.approx(3.5) and _small_texts(fig) == []


def test_closing_the_gaps_never_narrows_the_maps(tmp_path, monkeypatch):
    """2 × 2 maps with particles overlaid (the column a study writes): the shortened figure's maps are as wide as
    without shortening (a cut that would make them height-limited is not taken; rounds that cut past the layout's
    own padding narrowed them by 8 %)."""
    study = dict(STUDIES["sphere"], particles={"n": [30], "repeats": 2})
    ds = run(study, output=False, progress=False)
    widths = {}
    for close in (True, False):
        if not close:
            monkeypatch.setattr(figures, "_close_gaps", lambda *args, **kwargs: None)
        fig = figures.plot_snapshots(ds, width=figures.COLUMN)
        fig.canvas.draw()
        maps = [a for a in fig.axes if a.get_title().startswith("t = ")]
        widths[close] = (fig.get_figheight(), [a.get_window_extent().width / fig.dpi for a in maps])
    assert len(widths[True][1]) == 4 and widths[True][0] < widths[False][0] - 0.1  # shortened
    np.testing.assert_allclose(widths[True][1], widths[False][1], rtol=1e-3)


# ------------------------------------------------------------------ format and resolution
def test_a_study_with_format_pdf_writes_pdfs(tmp_path, saved_figures):
    _figures(tmp_path, saved_figures, "particles", format="pdf")
    pdfs = sorted(p.name for p in tmp_path.glob("particles-*"))
    assert pdfs == ["particles-clusters.pdf", "particles-energy.pdf"]
    for p in tmp_path.glob("particles-*.pdf"):
        head = p.read_bytes()
        assert head.startswith(b"%PDF") and b"/FontFile2" in head  # TrueType (Type 42) fonts embedded
    assert not list(tmp_path.glob("*.png"))


def test_dpi_is_honoured_in_the_png_size(tmp_path):
    ds = run(dict(STUDIES["particles"]), output=False, progress=False)
    widths = {}
    for dpi in (60, 120):
        (path,) = [f for f in figures.write_figures(ds, tmp_path / f"r{dpi}.nc", dpi=dpi) if "energy" in f.name]
        widths[dpi] = matplotlib.image.imread(path).shape[1]
    assert widths[120] == pytest.approx(2 * widths[60], abs=3)
    # the study's [output] dpi, and output_options (the command line's --dpi) before it
    study = json.loads(ds.attrs["study"])
    study["output"]["dpi"] = 60
    ds.attrs["study"] = json.dumps(study)
    assert figures.figure_options(ds) == ("png", 60)
    with figures.output_options(format="svg", dpi=90):
        assert figures.figure_options(ds) == ("svg", 90)
        assert figures.figure_options(ds, dpi=70) == ("svg", 70)
    (path,) = [f for f in figures.write_figures(ds, tmp_path / "s.nc") if "energy" in f.name]
    assert matplotlib.image.imread(path).shape[1] == pytest.approx(widths[60], abs=2)


@pytest.mark.parametrize("output, message", [
    ({"format": "jpeg"}, r"\[output\] format: must be one of png, pdf, svg; got 'jpeg'"),
    ({"dpi": 20}, r"\[output\] dpi: must be >= 50, got 20"),
    ({"dpi": 5000}, r"\[output\] dpi: at most 1200 \(300 is print quality\), got 5000"),
    ({"dpi": 150.5}, r"\[output\] dpi: must be an integer"),
])
def test_bad_output_keys_are_named(tmp_path, output, message):
    with pytest.raises(StudyError, match=message):
        run(dict(CIRCLE, output=output), output=False, progress=False)


def test_the_command_line_format_and_dpi_replace_the_studys(tmp_path, capsys):
    (tmp_path / "s.toml").write_text(f"""domain = "sphere"
[model]
beta = 2.0
[initial]
kind = "uniform"
[time]
t_end = 1.0
frames = 3
[particles]
n = [16, 32]
repeats = 2
[output]
path = "{tmp_path / 'r.nc'}"
format = "png"
dpi = 100
""")
    assert main(["run", str(tmp_path / "s.toml"), "--format", "svg", "--dpi", "300", "--quiet"]) == 0  # implies --plot
    svgs = sorted(p.stem for p in tmp_path.glob("r-*.svg"))
    assert "r-energy" in svgs and not list(tmp_path.glob("r-*.png"))
    assert main(["plot", str(tmp_path / "r.nc"), "--format", "pdf", "--quiet"]) == 0  # drawn again, for print
    assert sorted(p.stem for p in tmp_path.glob("r-*.pdf")) == svgs
    assert main(["plot", str(tmp_path / "r.nc"), "--dpi", "40"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["meanfield: error: --dpi: must be from 50 to 1200 (300 is print quality), got 40"]
    assert main(["plot", str(tmp_path / "missing.nc")]) == 2
    assert "missing.nc: no such results file" in capsys.readouterr().err


# ------------------------------------------------------------------ layers, legends, titles
def test_layer_boundaries_are_drawn_over_the_space_time_map(tmp_path, saved_figures):
    """A circle study with per-layer weights: the heat map draws t = 1, 2 as lines above its mesh (at z-order 0.5
    they lay beneath it, named by the legend but invisible)."""
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "w.npz", Q=np.eye(2) + 0.1 * rng.standard_normal((3, 2, 2)), beta=np.array([1.0, 3.0, 5.0]))
    study = {"domain": "circle", "grid": {"n": 32}, "model": {"weights": str(tmp_path / "w.npz")},
             "initial": {"kind": "uniform-noise", "amplitude": 0.1}, "time": {"t_end": 3.0, "frames": 13},
             "output": {"path": str(tmp_path / "l.nc"), "plot": True}}
    ds = run(study, progress=False)
    assert json.loads(ds.attrs["layer_boundaries"]) == [1.0, 2.0]
    fig = saved_figures["l-density.png"]
    (ax,) = [a for a in fig.axes if a.get_xlabel() == "t"]
    mesh = max(c.get_zorder() for c in ax.collections)
    layers = [ln for ln in ax.get_lines() if ln.get_gid() == "layer-boundary"]
    assert [ln.get_xdata()[0] for ln in layers] == [1.0, 2.0]
    assert all(ln.get_zorder() > mesh and ln.get_linewidth() <= 0.7 for ln in layers)
    assert "layer boundaries" in [t.get_text() for t in ax.get_legend().get_texts()]
    # the model in its own words (SelfAttention.describe), never its repr
    assert ds.attrs["model_label"] == "SA with per-layer Q, β"
    assert fig.get_suptitle().startswith("SA with per-layer Q, β on S¹ · weights from w.npz")


def test_legend_swatches_are_in_their_bands_colour(tmp_path, saved_figures):
    """Each N's legend entry draws its ±1 sd band's swatch (its colour and opacity) under its line; the entry
    naming the bands is striped in every band's colour, not a grey patch."""
    from matplotlib.colors import to_rgba

    fig = _figures(tmp_path, saved_figures, "particles")["particles-clusters.png"]
    ax = fig.axes[0]
    bands = [c for c in ax.collections if c.get_gid() == "sd-band"]
    legend = ax.get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts == ["N = 30", "N = 60", "shaded: ±1 sd over 2 repeats"]
    swatches = legend.legend_handles
    for k in range(2):
        assert to_rgba(swatches[k].get_facecolor()) == pytest.approx(to_rgba(bands[k].get_facecolor()[0]))
        assert to_rgba(bands[k].get_facecolor()[0])[:3] == pytest.approx(to_rgba(f"C{k}")[:3])
    # the last entry's stripes: a patch per band, in the bands' colours
    stripes = [c for c in legend.get_children()[0].findobj(matplotlib.patches.Rectangle)
               if c.get_facecolor()[3] < 1 and c.get_width() > 0]
    colours = {tuple(np.round(to_rgba(s.get_facecolor()), 6)) for s in stripes}
    assert {tuple(np.round(to_rgba(b.get_facecolor()[0]), 6)) for b in bands} <= colours
