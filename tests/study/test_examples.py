"""Every shipped example passes the checks a run makes before any work, through the study path.

``meanfield check`` (read + preflight.check) validates a study file's keys, its grid, initial density and sizes,
but the options a study hands to :func:`meanfield.solve` were only checked by ``solve`` itself, when the run
started: examples/metastability.toml (method = "dop853" with representation = "lagrangian", which ``solve`` now
refuses: the panels take no `method`) passed ``meanfield check`` and failed its run, and the slow test of that
example calls ``solve`` directly with its own options, so neither saw it. Here each example also goes through
``study.run`` up to the integrator: ``solve`` validates the study's options and plans its representation chain, and
the chain's run is replaced by a stop (no time step is taken).
"""

import importlib
from pathlib import Path

import pytest

from meanfield.study import preflight, read, run

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.toml"))


class _Validated(Exception):
    """Raised in place of the representation chain's run: solve accepted the study's options."""


def test_the_examples_are_found():
    assert len(EXAMPLES) >= 10 and any(f.name == "metastability.toml" for f in EXAMPLES)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_passes_the_checks_of_a_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default results path <name>.nc is free here
    # the examples are sized for a workstation (the d = 128 phase diagram holds 4 GB of trajectories): their checks
    # are asserted against a budget of 32 GiB, not the tests' (tests/conftest.py) nor what other processes left free
    # (a CI run failed three examples with 1.2 GB free); the refusal itself is tests/study/test_preflight.py's
    monkeypatch.setenv("MEANFIELD_MEMORY", "32GiB")
    cfg = read(path)
    preflight.check(cfg, tmp_path / f"{cfg['name']}.nc", announce=False)  # what `meanfield check` does
    if cfg["grid"] is None or cfg.get("stationary") is not None:
        return  # particles only, or a bifurcation study: no density solve
    solve_module = importlib.import_module("meanfield.solvers.solve")

    def stop(*args, **kwargs):
        raise _Validated

    monkeypatch.setattr(solve_module, "run_chain", stop)
    with pytest.raises(_Validated):  # a refused option would be a StudyError naming its [time] key
        run(path, output=False, progress=False, plot=False)


def test_metastability_runs_through_the_study_path(tmp_path):
    """examples/metastability.toml as the command line runs it (its [time] table, the Lagrangian panels), to t = 2
    without particles: a refusal of its options at the study level fails here, at a cost of seconds (the slow
    test of the example solves with its own options)."""
    import tomllib

    tables = tomllib.loads((Path(__file__).parents[2] / "examples" / "metastability.toml").read_text())
    tables.pop("particles")
    tables["time"].update(t_end=2.0, frames=5)
    tables["output"] = {"path": str(tmp_path / "m.nc")}
    ds = run(tables, progress=False)
    assert ds.attrs["status"] == "success" and ds.attrs["t_reached"] == 2.0
    assert ds.attrs["representation"] != "grid" and "lagrangian_points" in ds
