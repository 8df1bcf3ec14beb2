"""`meanfield check` says how long a study will step (issue 46, finding 4): each run's steps where they are known
before it starts, and the run time from a step of the actual model at the actual sizes, timed on its first steps."""

import copy
import re
import tomllib

import meanfield
from meanfield.cli import main
from meanfield.study import preflight
from tests.study.test_preflight import SMALL, _never_runs, _write


def _lines(out: str, key: str) -> list[str]:
    return [x for x in out.splitlines() if x.startswith(key)]


def test_check_prints_the_steps_of_each_run_and_a_measured_run_time(tmp_path, monkeypatch, capsys):
    _never_runs(monkeypatch)
    study = copy.deepcopy(SMALL)
    study["time"] = {**study["time"], "dt": 0.01}  # the density's step fixed: 0.2 / 0.01 = 20 steps
    assert main(["check", str(_write(tmp_path / "s.toml", study)), "--output", str(tmp_path / "s.nc")]) == 0
    out = capsys.readouterr().out
    density, particles = _lines(out, "steps")
    assert density.startswith("steps        density: 20 rk4 steps of h = 0.01 (the `dt` given): about ")
    # the particles' default step: 0.05 / rate scale, SA at β = 1: 2, so h = 0.025 and 8 steps to t = 0.2
    assert particles.startswith("steps        particles N = 20 (1 × 20): 8 rk4 steps of h = 0.025 (the default step")
    for line in (density, particles):
        assert re.search(r"about \d[\d.]* (µs|ms|s)\b.*a step, measured\)$", line), line
    (total,) = _lines(out, "run time")
    assert re.match(r"run time     about \d[\d.]* (µs|ms|s) of stepping;", total), total
    # with the memory estimate, before the verdict
    keys = [x.split()[0] for x in out.splitlines()]
    assert keys.index("largest") < keys.index("steps") < keys.index("run") < keys.index("ok")
    assert not (tmp_path / "s.nc").exists()


def test_a_step_that_follows_the_solution_is_timed_but_not_counted(tmp_path, monkeypatch, capsys):
    _never_runs(monkeypatch)
    assert main(["check", str(_write(tmp_path / "s.toml", SMALL)), "--output", str(tmp_path / "s.nc")]) == 0
    out = capsys.readouterr().out
    (density,) = [x for x in _lines(out, "steps") if "density" in x]
    assert "rk4 steps chosen as the run goes (the grid's step follows the solution): " in density
    assert density.endswith("a step, measured at the start")
    (total,) = _lines(out, "run time")
    assert "for the fixed steps; density: steps chosen as the run goes" in total


def test_check_counts_the_two_hundred_thousand_steps_of_beta_ten_thousand(tmp_path, monkeypatch, capsys):
    """The issue's run, as a study: particles of SA at β = 1e4 on [0, 1], h = 0.05 / 10001."""
    _never_runs(monkeypatch)
    study = {"domain": "circle", "model": {"beta": 1e4}, "initial": {"kind": "uniform"},
             "time": {"t_end": 1.0, "frames": 3}, "particles": {"n": [32], "repeats": 1}}
    assert main(["check", str(_write(tmp_path / "s.toml", study)), "--output", str(tmp_path / "s.nc")]) == 0
    (line,) = _lines(capsys.readouterr().out, "steps")
    assert "particles N = 32 (1 × 32): 200020 rk4 steps of h = 5e-06" in line
    assert "the model's rate scale over the run is 1e+04" in line and "a step, measured)" in line


def test_a_run_does_not_pay_for_the_timing(tmp_path):
    """`meanfield run` checks the study too (preflight.check): without `timing` nothing is stepped."""
    cfg = meanfield.study.read(tomllib.loads(_write(tmp_path / "s.toml", SMALL).read_text()))
    assert preflight.check(cfg).runs == []
    assert [what for what, _ in preflight.check(cfg, timing=True).runs] == ["density", "particles N = 20 (1 × 20)"]


def test_first_steps_that_fail_are_noted_not_refused(tmp_path, monkeypatch, capsys):
    """The timing is advisory: where the first steps raise, check still passes (the run reports its own failure),
    with the count alone and a note saying why there is no time."""
    _never_runs(monkeypatch)
    counted = preflight.solve_estimate

    def failing(prepared, timing=True, budget=0.25):
        if timing:
            raise FloatingPointError("the state became non-finite")
        return counted(prepared, False)

    monkeypatch.setattr(preflight, "solve_estimate", failing)
    study = copy.deepcopy(SMALL)
    study["time"] = {**study["time"], "dt": 0.01}
    assert main(["check", str(_write(tmp_path / "s.toml", study)), "--output", str(tmp_path / "s.nc")]) == 0
    out = capsys.readouterr().out
    assert "steps        density: 20 rk4 steps of h = 0.01 (the `dt` given)\n" in out  # no time: not measured
    assert ("note         density: the first steps could not be timed (FloatingPointError: the state became "
            "non-finite)") in out
    assert "can run here" in out


def test_a_study_in_a_batch_job_writes_progress_lines(tmp_path, monkeypatch, capsys):
    """`meanfield run` without a terminal (a batch job): the density solve and the particles write their periodic
    progress lines (here from the first step on); --quiet writes none. Before, the runner turned "auto" into False
    on the way down and a long study printed nothing."""
    import logging
    import sys

    from meanfield.integrate import trackers

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    monkeypatch.setattr(trackers, "PROGRESS_FIRST", 0.0)
    monkeypatch.setattr(trackers, "PROGRESS_EVERY", 0.0)
    monkeypatch.setattr(logging.getLogger(trackers.PROGRESS_LOGGER), "hasHandlers", lambda: False)
    path = _write(tmp_path / "s.toml", SMALL)
    assert main(["run", str(path), "--output", str(tmp_path / "a.nc")]) == 0
    err = capsys.readouterr().err
    assert re.search(r"solve: t = \S+ of", err) and re.search(r"particles\.simulate: t = \S+ of", err), err[-2000:]
    assert main(["run", str(path), "--output", str(tmp_path / "b.nc"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "solve: t =" not in err and "simulate: t =" not in err
