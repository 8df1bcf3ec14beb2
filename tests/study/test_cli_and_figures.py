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
        ('domain = "circle"\n[grid]\nn = 32\n[model]\nbeta = -1.0\n', r"\[model\] beta: must be >= 0"),
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
    - density: the heat map is ρ(t, θ) (θ = 2π closing the circle) over the first to the last output time, the
      particles (the smallest N, repeat 0) at their angles; energy: the density's E_β at every step, the particles'
      mean over repeats, the self-interaction e^β/(2βN); W_1 and the pair fraction: the means over repeats per N;
      the rate figure: lines of slopes α and −1/2; the animation: one frame per output time."""
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
    ax = figs["density"].axes[0]
    assert ax.get_xlim() == (t[0], t[-1]) and (ax.get_xlabel(), ax.get_ylabel()) == ("t", "θ")
    np.testing.assert_array_equal(np.asarray(ax.collections[0].get_array()).reshape(rho.shape[1] + 1, t.size),
                                  np.hstack([rho, rho[:, :1]]).T)
    dots = [ln for ln in ax.get_lines() if ln.get_marker() == "."]
    x = ds[f"positions_{ns.min()}"].isel(repeat=0).values
    assert len(dots) == ns.min()
    np.testing.assert_allclose(np.array([ln.get_ydata() for ln in dots]).T, _angles(x), rtol=0, atol=1e-14)
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
        assert ax.get_xlabel() == "t" and [tx.get_text() for tx in ax.get_legend().get_texts()] == \
            [f"N = {n}" for n in ns]
        for n in ns:
            np.testing.assert_array_equal(lines[f"N = {n}"].get_xdata(), t)
            np.testing.assert_allclose(lines[f"N = {n}"].get_ydata(), var.sel(n_particles=n).mean("repeat").values,
                                       rtol=1e-15)
    assert figs["clusters"].axes[0].get_ylim() == (-0.02, 1.02)
    ax = figs["rate"].axes[0]
    for label, ln in _lines(ax).items():
        if label.startswith("N^"):
            lx, ly = np.log(ln.get_xdata()), np.log(ln.get_ydata())
            expected = -0.5 if label == "N^-1/2" else float(ds.rate.sel(p=1.0).isel(time=-1))
            np.testing.assert_allclose(np.diff(ly) / np.diff(lx), expected, rtol=1e-9)
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
    assert list(lines) == [f"beta = {b}" for b in ds.beta.values] and ax.get_xlabel() == "t"
    for b in ds.beta.values:
        np.testing.assert_array_equal(lines[f"beta = {b}"].get_xdata(), ds.time.values)
        np.testing.assert_allclose(lines[f"beta = {b}"].get_ydata(),
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
