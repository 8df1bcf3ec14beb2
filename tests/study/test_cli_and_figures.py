"""`meanfield run` / `meanfield sweep`: exit codes, one-line errors, figures; the examples are valid."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import meanfield
from meanfield.cli import main
from meanfield.study import StudyError, read

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.toml"))

SMALL = """
domain = "circle"
[grid]
n = 32
[model]
beta = 1.0
[initial]
kind = "von-mises-fisher"
angles = [0.5]
kappa = 2.0
[time]
t_end = 0.5
frames = 4
[particles]
n = [20, 40]
repeats = 2
[distances]
p = [1]
"""


def test_examples_are_valid_studies():
    assert len(EXAMPLES) >= 5
    for f in EXAMPLES:
        read(f)


@pytest.mark.parametrize(
    "text, message",
    [
        ('domain = "circle"\n[grid]\nn = 32\ncolour = 1\n', r"\[grid\] colour: unknown key"),
        ('domain = "sphere"\n[grid]\nlmax = 8\n[model]\nbeta = -1.0\n', r"\[model\] beta: -1 < 0 \(repulsive attention\)"),
        ('domain = "sphere"\n[grid]\nlmax = 8\n[model]\nQ = [[1.0, 0.0], [0.0, 1.0]]\n', r"\[model\] Q: must be 3×3"),
        ('domain = "circle"\n[grid]\nn = 32\n[initial]\nkind = "file"\npath = "missing.npz"\n',
         r"\[initial\] path: cannot read"),
    ],
)
def test_bad_study_files_exit_2_with_one_line(tmp_path, capsys, text, message):
    import re

    f = tmp_path / "bad.toml"
    f.write_text(text)
    assert main(["run", str(f), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("meanfield: error: ") and re.search(message, err[0])
    with pytest.raises(StudyError):  # --debug: the exception and its traceback
        main(["run", str(f), "--debug"])


def test_unreadable_study_file_from_a_real_process(tmp_path):
    r = subprocess.run([sys.executable, "-m", "meanfield.cli", "run", str(tmp_path / "nope.toml")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"meanfield: error: cannot read the study file '{tmp_path / 'nope.toml'}': " \
                               "No such file or directory"


def _angles(x):
    return np.mod(np.arctan2(x[..., 1], x[..., 0]), 2 * np.pi)


def _lines(ax):
    return {ln.get_label(): ln for ln in ax.get_lines()}


def test_run_writes_results_and_figures(tmp_path, capsys, saved_figures):
    """`meanfield run --plot --animation gif`: the statistics agree with what they are computed from, and each
    figure draws them.

    - pair fraction: the fraction of ordered pairs i ≠ j with ⟨x_i, x_j⟩ >= 1 − δ, recomputed from the saved
      positions; W_1 >= |∫x dμ^N − ∫x dμ| (Kantorovich–Rubinstein with the 1-Lipschitz x ↦ ⟨e, x⟩); the rate is
      the least-squares slope of log W_1 against log N over all (N, repeat) at the last time;
    - density: with four output times, the profiles ρ(t_k, θ) (θ = 2π closing the circle) and a histogram of the
      particles (the smallest N, repeat 0) at the last; energy: the density's E_β at every step, the particles'
      mean over repeats, the self-interaction e^β/(2βN); W_1 and the pair fraction: the means over repeats per N,
      their ±1 sd bands named in the legend, the fraction's axis from 0 fitting the data, the density's own
      fraction beside them; the rate figure: lines of slopes α and −1/2; the animation: one frame per output
      time."""
    f = tmp_path / "small.toml"
    f.write_text(SMALL)
    out = tmp_path / "small.nc"
    assert main(["run", str(f), "--output", str(out), "--plot", "--animation", "gif", "--quiet"]) == 0
    assert "rate         W1 ~ N^" in capsys.readouterr().out
    ds = meanfield.load(out)
    assert ds.attrs["status"] == "success" and ds.sizes["time"] == 4
    t, ns, beta, delta = ds.time.values, ds.n_particles.values, 1.0, 1e-3
    rho = ds.density.values
    mean_density = (rho * 2 * np.pi / rho.shape[1]) @ np.stack([np.cos(ds.theta), np.sin(ds.theta)], -1)
    for n in ns:
        x = ds[f"positions_{n}"].values  # (repeat, time, n, 2)
        G = x @ np.swapaxes(x, -1, -2)
        close = (np.sum(G >= 1 - delta, axis=(-1, -2)) - n) / (n * (n - 1))
        np.testing.assert_array_equal(ds.pair_fraction.sel(n_particles=n).values, close)
        gap = np.linalg.norm(x.mean(axis=2) - mean_density, axis=-1)
        assert np.all(ds.wasserstein.sel(p=1.0, n_particles=n).values >= gap - 1e-12)
    W = ds.wasserstein.sel(p=1.0).isel(time=-1).values  # (N, repeat)
    slope = np.polyfit(np.repeat(np.log(ns), W.shape[1]), np.log(W).ravel(), 1)[0]
    assert float(ds.rate.sel(p=1.0).isel(time=-1)) == pytest.approx(slope, rel=1e-12)

    figs = {name[len("small-"):-len(".png")]: fig for name, fig in saved_figures.items()}
    assert set(figs) == {"density", "energy", "wasserstein", "clusters", "rate"}
    ax = figs["density"].axes[0]  # four output times: their profiles ρ(t_k, θ), θ = 2π closing the circle
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("θ", "ρ(t, θ)") and ax.get_xlim() == (0.0, 2 * np.pi)
    lines = _lines(ax)
    for k, tk in enumerate(t):
        np.testing.assert_array_equal(lines[f"density, t = {tk:.3g}"].get_ydata(), np.append(rho[k], rho[k, 0]))
    (hist,) = [p for p in ax.patches if p.get_label().startswith(f"N = {ns.min()} particles at t = {t[-1]:.3g}")]
    x = ds[f"positions_{ns.min()}"].isel(repeat=0, time=-1).values
    counts, _ = np.histogram(_angles(x), bins=10, range=(0, 2 * np.pi), density=True)
    np.testing.assert_allclose(np.unique(hist.get_xy()[:, 1])[1:], np.unique(counts[counts > 0]), rtol=1e-12)
    ax = figs["energy"].axes[0]
    lines = _lines(ax)
    np.testing.assert_array_equal(lines["density"].get_xdata(), ds.step_time.values)
    np.testing.assert_array_equal(lines["density"].get_ydata(), ds.step_energy.values)
    for n in ns:
        np.testing.assert_allclose(lines[f"N = {n}"].get_ydata(),
                                   ds.particle_energy.sel(n_particles=n).mean("repeat").values, rtol=1e-15)
    (note,) = ax.texts
    assert note.get_text().endswith(", ".join(f"{np.exp(beta) / (2 * beta * n):.2g}" for n in ns))
    for name, var in (("wasserstein", ds.wasserstein.sel(p=1.0)), ("clusters", ds.pair_fraction)):
        ax = figs[name].axes[0]
        lines = _lines(ax)
        texts = [tx.get_text() for tx in ax.get_legend().get_texts()]
        assert ax.get_xlabel() == "t" and texts[:len(ns)] == [f"N = {n}" for n in ns]
        assert texts[-1] == "shaded: ±1 sd over 2 repeats"  # the bands named in the legend
        for n in ns:
            np.testing.assert_array_equal(lines[f"N = {n}"].get_xdata(), t)
            np.testing.assert_allclose(lines[f"N = {n}"].get_ydata(), var.sel(n_particles=n).mean("repeat").values,
                                       rtol=1e-15)
    lo, hi = figs["clusters"].axes[0].get_ylim()  # from 0, fitting the data (which stay far below 1)
    assert lo == 0.0 and np.nanmax(ds.pair_fraction.mean("repeat")) < hi <= 1.02
    assert "density (quadrature on its grid)" in _lines(figs["clusters"].axes[0])
    ax = figs["rate"].axes[0]
    fit = f"fit: exponent {float(ds.rate.sel(p=1.0).isel(time=-1)):.3f}".replace("-", "−")
    slopes = {"exponent −1/2": -0.5, fit:
              float(ds.rate.sel(p=1.0).isel(time=-1))}
    assert set(slopes) <= set(_lines(ax))
    for label, ln in _lines(ax).items():
        if label in slopes:
            lx, ly = np.log(ln.get_xdata()), np.log(ln.get_ydata())
            np.testing.assert_allclose(np.diff(ly) / np.diff(lx), slopes[label], rtol=1e-9)
    from PIL import Image

    with Image.open(tmp_path / "small-animation.gif") as gif:
        assert gif.n_frames == t.size


def test_sweep_command_and_its_figure(tmp_path, capsys, saved_figures):
    """`meanfield sweep --over beta=0:2:3 --plot`: three β, three repeats; the figure has one curve per β, each the
    pair fraction averaged over N and repeats at every output time."""
    f = tmp_path / "small.toml"
    f.write_text(SMALL)
    out = tmp_path / "sw.nc"
    assert main(["sweep", str(f), "--over", "beta=0:2:3", "--repeats", "3", "--serial", "--output", str(out),
                 "--plot", "--quiet"]) == 0
    ds = meanfield.load(out)
    assert list(ds.beta.values) == [0.0, 1.0, 2.0] and ds.sizes["repeat"] == 3
    ax = saved_figures["sw-map.png"].axes[0]
    lines = _lines(ax)
    assert list(lines) == [f"β = {b:g}" for b in ds.beta.values] and ax.get_xlabel() == "t"
    assert "over β" in ax.get_title() and "SA, β ∈ {0, 1, 2}" in saved_figures["sw-map.png"].get_suptitle()
    for b in ds.beta.values:
        np.testing.assert_array_equal(lines[f"β = {b:g}"].get_xdata(), ds.time.values)
        np.testing.assert_allclose(lines[f"β = {b:g}"].get_ydata(),
                                   ds.pair_fraction.sel(beta=b).mean(["n_particles", "repeat"]).values, rtol=1e-15)
    assert main(["sweep", str(f), "--over", "colour=1", "--serial", "--quiet"]) == 2
    assert "colour" in capsys.readouterr().err


def test_lost_resolution_exits_1(tmp_path):
    f = tmp_path / "lost.toml"
    f.write_text('domain = "circle"\n[grid]\nn = 64\n[model]\nbeta = 8.0\n[initial]\nkind = "von-mises-fisher"\n'
                 'angles = [1.0, 3.5]\nkappa = [8.0, 6.0]\n[time]\nt_end = 20.0\nframes = 5\nrefine = false\n'
                 'representation = "grid"\n')
    assert main(["run", str(f), "--output", str(tmp_path / "lost.nc"), "--quiet"]) == 1
    ds = meanfield.load(tmp_path / "lost.nc")
    assert ds.attrs["status"] == "resolution lost" and np.isnan(ds.density.isel(time=-1)).all()
