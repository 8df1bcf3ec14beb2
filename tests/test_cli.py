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
    assert main(["--beta", "-1", "--quiet"]) == 2
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
