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


def test_run_writes_results_and_figures(tmp_path, capsys):
    f = tmp_path / "small.toml"
    f.write_text(SMALL)
    out = tmp_path / "small.nc"
    assert main(["run", str(f), "--output", str(out), "--plot", "--animation", "gif", "--quiet"]) == 0
    assert "rate         W1 ~ N^" in capsys.readouterr().out
    ds = meanfield.load(out)
    assert ds.attrs["status"] == "success" and ds.sizes["time"] == 4
    for name in ("density", "energy", "wasserstein", "clusters", "rate"):
        assert (tmp_path / f"small-{name}.png").stat().st_size > 5_000
    assert (tmp_path / "small-animation.gif").stat().st_size > 5_000


def test_sweep_command_and_its_figure(tmp_path, capsys):
    f = tmp_path / "small.toml"
    f.write_text(SMALL)
    out = tmp_path / "sw.nc"
    assert main(["sweep", str(f), "--over", "beta=0:2:3", "--repeats", "3", "--serial", "--output", str(out),
                 "--plot", "--quiet"]) == 0
    ds = meanfield.load(out)
    assert list(ds.beta.values) == [0.0, 1.0, 2.0] and ds.sizes["repeat"] == 3
    assert (tmp_path / "sw-map.png").stat().st_size > 5_000
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
