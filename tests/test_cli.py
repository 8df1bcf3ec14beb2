"""The `meanfield` command, run in-process on a small problem."""

import numpy as np
import pytest

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
