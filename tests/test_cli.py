"""The `meanfield` command, run in-process on a small problem."""

import numpy as np
import pytest
from scipy.special import iv

from meanfield.cli import main


def test_default_style_run_writes_figures(tmp_path, capsys):
    code = main(["--n", "64", "--t-end", "2", "--frames", "11", "--output", str(tmp_path), "--quiet"])
    assert code == 0
    out = capsys.readouterr().out
    assert "mass" in out and "energy" in out
    assert (tmp_path / "circle.png").stat().st_size > 10_000
    data = np.load(tmp_path / "circle.npz")
    assert data["rho"].shape[0] == 11 and np.all(np.diff(data["energy"]) >= -1e-12)


def test_lost_resolution_is_reported_with_exit_code_1(tmp_path, caplog):
    code = main(["--beta", "8", "--init", "vonmises", "--n", "128", "--t-end", "20", "--no-refine",
                 "--output", str(tmp_path), "--quiet"])
    assert code == 1
    assert "no longer resolved" in caplog.text
    assert (tmp_path / "circle.png").exists()  # what was computed is kept


def test_help_and_bad_arguments(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0 and "--beta" in capsys.readouterr().out
    assert main(["--domain", "sphere", "--beta", "-1", "--quiet"]) == 2  # β < 0: the circle's density only
    assert "beta" in capsys.readouterr().err


def test_sphere_run_writes_maps(tmp_path, capsys):
    code = main(["--domain", "sphere", "--lmax", "16", "--t-end", "0.5", "--frames", "3", "--output", str(tmp_path),
                 "--quiet"])
    assert code == 0
    assert "lmax = 16" in capsys.readouterr().out
    assert (tmp_path / "sphere.png").stat().st_size > 10_000
    data = np.load(tmp_path / "sphere.npz")
    assert data["rho"].shape[0] == 3 and np.all(np.diff(data["energy"]) >= -1e-12)
    assert np.allclose(data["mass"], 1.0, atol=1e-12)


def test_density_plots():
    import matplotlib

    matplotlib.use("Agg")
    import meanfield as mf
    from meanfield.plotting import sphere_map

    d = mf.Density.from_function(mf.SphereGrid(20), lambda x: np.exp(2 * x[..., 2]))
    lon, lat, v = sphere_map(d, nlat=31, nlon=61)
    # the map evaluates the density itself: exp(2 sin(lat)) up to normalisation, at the poles and equator
    ratio = v[-1, 0] / v[15, 0]
    assert ratio == pytest.approx(np.exp(2.0), rel=1e-10)
    assert d.plot() is not None and mf.Density.uniform(mf.CircleGrid(8)).plot() is not None


def test_a_mistyped_command_gets_a_suggestion(capsys):
    with pytest.raises(SystemExit) as e:
        main(["rnu"])
    assert e.value.code == 2 and "did you mean 'run'?" in capsys.readouterr().err


@pytest.mark.parametrize("argv, grid, initial", [
    (["--n", "96", "--init", "cauchy", "--amplitude", "0.4"], {"n": 96}, {"kind": "poisson", "a": [0.4, 0.0]}),
    (["--domain", "sphere", "--lmax", "20", "--init", "cauchy", "--amplitude", "0.4"], {"lmax": 20},
     {"kind": "poisson", "a": [0.0, 0.0, 0.4]}),
    (["--init", "vonmises"], {"n": 128},
     {"kind": "von-mises-fisher", "angles": [1.0, 3.5], "kappa": [8.0, 6.0],  # I_0(8), 0.6 I_0(6)
      "weights": [float(iv(0, 8.0)), float(0.6 * iv(0, 6.0))]}),
    (["--domain", "sphere", "--init", "vonmises"], {"lmax": 24},
     {"kind": "von-mises-fisher", "centres": [[0.0, 0.0, 1.0], [np.sin(2.0), 0.0, np.cos(2.0)]], "kappa": [6.0, 5.0],
      "weights": [4 * np.pi * (1 - np.exp(-12.0)) / 12, 0.6 * 4 * np.pi * (1 - np.exp(-10.0)) / 10]}),
])
def test_demo_studies_take_their_alternatives_from_the_demo_file(argv, grid, initial, tmp_path):
    """--init reads the demo file's [demo] table (not a study key); the resolution option is the domain's
    required grid parameter (--n on the circle, --lmax on S²); the result is a valid study."""
    from meanfield.cli import demo_study, demos, parser
    from meanfield.study import read

    assert demos() == ("circle", "sphere")
    study = demo_study(parser().parse_args(argv + ["--output", str(tmp_path)]))
    assert "demo" not in study and study["grid"] == grid
    assert study["initial"].keys() == initial.keys()
    for key, value in initial.items():
        assert np.allclose(study["initial"][key], value, rtol=1e-14, atol=0) if key != "kind" else \
            study["initial"][key] == value
    read(study)


def test_run_help_points_to_the_site_page_that_exists(capsys, tmp_path):
    """`run --help` (and check's) name the documentation site's page "Study file reference" and its path; the
    site's generator writes a page at that path whose title is that name, and the page is in a toctree."""
    from pathlib import Path

    from tests.helpers import docs_generators

    docs = Path(__file__).parents[1] / "docs"
    path = docs_generators().write_study_reference(tmp_path)  # the page the build writes at config-inited
    title = path.read_text(encoding="utf-8").splitlines()[0]
    assert title == "# Study file reference"
    relative = path.relative_to(tmp_path)
    for command in ("run", "check"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert f"'{title[2:]}'" in text and f"docs/{relative.as_posix()}" in text and "README" not in text
    assert f"\n{relative.with_suffix('').as_posix()}\n" in (docs / "index.md").read_text()  # in the toctree


def test_demo_says_where_it_writes_before_it_runs_and_titles_its_figure_once(tmp_path, caplog, saved_figures, capsys):
    """Before any work the demo logs, in words, the model and the directory it writes into (no raw config dict);
    its figure says its title once (the overview's suptitle, not again above the heat map)."""
    import logging

    out = tmp_path / "fresh"
    with caplog.at_level(logging.INFO, logger="meanfield"):
        assert main(["--n", "64", "--t-end", "1", "--frames", "5", "--output", str(out)]) == 0
    messages = [r.getMessage() for r in caplog.records]
    announce = next(i for i, m in enumerate(messages) if m.startswith("demo: "))
    solving = next(i for i, m in enumerate(messages) if m.startswith("solving"))
    assert announce < solving
    assert messages[announce] == (f"demo: SA with β = 4 on the circle (CircleGrid(n=64)), t in [0, 1]; writing circle.nc, "
                                  f"circle.png and circle.npz into {out}/ (created) (--output chooses the directory)")
    assert not any("{'kind'" in m or "'beta':" in m for m in messages)
    fig = saved_figures["circle.png"]
    shown = [t.strip() for t in [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes] if t.strip()]
    assert shown  # titled, and no title repeats another (or is repeated inside it)
    assert not any(a in b for i, a in enumerate(shown) for j, b in enumerate(shown) if i != j), shown
    assert "monotone: non-decreasing, as monitored" in capsys.readouterr().out


def test_run_summary_has_steps_mass_drift_energy_and_handovers(tmp_path, capsys):
    """`meanfield run` closes with what the demo's summary says: the steps, the largest |mass − 1|, whether the
    monitored energy was monotone, and the hand-overs."""
    study = tmp_path / "s.toml"
    study.write_text('domain = "circle"\n[grid]\nn = 32\n[model]\nbeta = 1.0\n[time]\nt_end = 0.2\nframes = 3\n')
    assert main(["run", str(study), "--output", str(tmp_path / "s.nc"), "--quiet"]) == 0
    lines = {line[:13].strip(): line[13:] for line in capsys.readouterr().out.splitlines()}
    import meanfield as mf

    ds = mf.load(tmp_path / "s.nc")
    assert lines["steps"].startswith(f"{ds.attrs['nsteps']} ({ds.attrs['nfev']} field evaluations, rk4)")
    drift = float(np.max(np.abs(ds["mass"].values - 1)))
    assert lines["mass"] == f"drift max |mass − 1| = {drift:.1e}"
    e = ds["energy"].values
    assert lines["energy E_β"] == f"{e[0]:.10g} → {e[-1]:.10g} (monotone: non-decreasing, as monitored)"
    assert lines["hand-overs"] == "none"


def test_summary_reports_handovers_and_energy_that_is_not_monotone():
    """The summary's parts on a Dataset that has them: a hand-over, an energy moving against the monitored
    direction (said, with where), and a model whose E_β is not monitored (noise)."""
    import json

    import xarray as xr

    from meanfield.cli import _energy_direction, _energy_line, _summary

    t = np.array([0.0, 1.0, 2.0])
    assert _energy_line(t, [1.0, 2.0, 1.5], 1.0).endswith(
        "(NOT monotone: non-decreasing expected, moved by -0.5 between t = 1 and 2)")
    assert _energy_line(t, [3.0, 2.0, np.nan], -1.0).endswith("(monotone: non-increasing, as monitored)")
    assert "not monitored" in _energy_line(t, [1.0, 1.0, 1.0], 0.0)
    assert _energy_line(t, [np.nan] * 3, 1.0) is None
    import meanfield as mf

    assert _energy_direction(mf.SelfAttention(2.0)) == 1.0
    assert _energy_direction(mf.SelfAttention(2.0, V=-np.eye(3))) == -1.0
    assert _energy_direction(mf.SelfAttention(2.0, noise=0.1)) == 0.0
    assert _energy_direction(mf.SelfAttention(2.0, Q=np.diag([1.0, 2.0, 3.0]))) == 0.0
    ds = xr.Dataset({"mass": ("time", [1.0, 1.0 + 3e-9, np.nan]), "energy": ("time", [1.0, 1.1, np.nan])},
                    coords={"time": t},
                    attrs={"status": "success", "nsteps": 12, "nfev": 50, "solver_method": "rk45",
                           "grid": "CircleGrid(n=64)", "grid_final": "CircleGrid(n=128)",
                           "handovers": json.dumps([[1.5, "grid", "panels", "the spectral tail 2e-10 exceeds"]])})
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        _summary(ds, 1.0)
    text = buf.getvalue()
    assert "steps        12 (50 field evaluations, rk45) on CircleGrid(n=64) → CircleGrid(n=128)" in text
    assert "mass         drift max |mass − 1| = 3.0e-09" in text
    assert "hand-overs   grid → panels at t = 1.5 (the spectral tail 2e-10 exceeds)" in text


@pytest.mark.parametrize("argv, says", [
    (["--n", "3"], "--n: must be >= 4, got 3"),
    (["--t-end", "-1"], "--t-end: must be > 0"),
    (["--init", "cauchy", "--amplitude", "1.5"], "--amplitude (--init cauchy: a = --amplitude × the demo's direction)"),
    (["--amplitude", "5"], "another --seed"),
    (["--domain", "sphere", "--beta", "-1"], "--beta: -1 < 0"),
    (["--max-n", "64"], "--max-n: must be an integer >= the initial resolution 128, got 64"),
])
def test_demo_errors_name_its_options_and_leave_no_directory(argv, says, tmp_path, capsys, caplog):
    """A bad demo option is refused in one line naming the option (not the study key it sets, nor `modes` or `rng`
    or [grid], which the demo has no option for), before anything is announced or solved, and without creating the
    output directory."""
    import logging

    out = tmp_path / "o2"
    with caplog.at_level(logging.INFO, logger="meanfield"):
        assert main(argv + ["--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("meanfield: error: ") and says in err, err
    assert not any(key in err for key in ("[grid]", "[time]", "[initial]", "[model]", "`modes`", " rng")), err
    assert not caplog.records, [r.getMessage() for r in caplog.records]  # no "demo: … writing", no "solving …"
    assert not out.exists()


def test_demo_refuses_a_complete_result_in_its_directory_by_its_option(tmp_path, capsys):
    """An earlier complete demo in --output is refused naming --output and --overwrite, before any work."""
    out = tmp_path / "o"
    out.mkdir()
    xr = pytest.importorskip("xarray")
    xr.Dataset(attrs={"status": "success"}).to_netcdf(out / "circle.nc")
    assert main(["--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("meanfield: error: --output: ") and "--overwrite" in err, err
