"""Long runs say so (issue 46, finding 4): a warning before more than LONG_RUN_STEPS fixed steps, with the count and
a run time measured on the first steps; progress lines in logs where no bar can show (standard error no terminal),
the first after PROGRESS_FIRST seconds, then every PROGRESS_EVERY; none with progress=False or within quiet()."""

import logging
import sys
import warnings

import numpy as np
import pytest

import meanfield as mf
import particles as pt
from meanfield.core import checks
from meanfield.integrate import ProgressTracker, Status, trackers
from meanfield.integrate.trackers import LONG_RUN_STEPS, LongRunWarning, RunEstimate, duration, time_steps
from particles.system import run_estimate
from tests.helpers import smooth_density


@pytest.fixture
def no_terminal(monkeypatch):
    """Standard error is no terminal (a batch job's log): "auto" progress shows no bar."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)


@pytest.fixture
def unconfigured_logging(monkeypatch):
    """Logging as in a plain script: no handler for the progress logger (pytest's own capture handlers, on the root
    and on every non-propagating logger, are hidden from it), so the lines go to standard error."""
    monkeypatch.setattr(logging.getLogger(trackers.PROGRESS_LOGGER), "hasHandlers", lambda: False)


@pytest.fixture
def every_step(monkeypatch):
    """Progress lines from the first step on, at every step (the intervals of a long run, made short)."""
    monkeypatch.setattr(trackers, "PROGRESS_FIRST", 0.0)
    monkeypatch.setattr(trackers, "PROGRESS_EVERY", 0.0)


class Clock:
    """A stand-in for the tracker's ``time`` module: monotonic() is what the test sets."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def perf_counter(self):
        return self.now


# ------------------------------------------------------------------ where lines are written
def test_progress_lines_are_for_auto_progress_without_a_terminal(monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert checks.progress_lines(None) is True
    assert checks.progress_lines(True) is False and checks.progress_lines(False) is False
    with checks.quiet():
        assert checks.progress_lines(None) is False
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a terminal: the bar, no lines
    assert checks.progress_lines(None) is False
    with pytest.raises(TypeError, match="`progress` must be True, False or None"):
        checks.progress_lines("yes")


def test_the_first_line_comes_after_the_first_interval_then_one_every_interval(monkeypatch, caplog):
    clock = Clock()
    monkeypatch.setattr(trackers, "time", clock)
    caplog.set_level(logging.INFO, logger=trackers.PROGRESS_LOGGER)
    bar = ProgressTracker(100.0, enabled=False, lines="solve", first=30.0, every=60.0)
    bar.initialize(0.0, None)

    def step(t, seconds):
        clock.now += seconds
        bar.handle(t, None, 1.0)
        return [r.getMessage() for r in caplog.records]

    assert step(5.0, 29.0) == []  # 29 s in: nothing yet
    lines = step(10.0, 2.0)  # 31 s: the first line, the time left extrapolated (10 % in 31 s: 279 s left)
    assert lines == ["solve: t = 10 of 100 (10 %), 31 s elapsed, about 4.7 min left"]
    assert len(step(20.0, 59.0)) == 1  # 90 s: less than 60 s since the last line
    lines = step(30.0, 2.0)  # 92 s
    assert len(lines) == 2 and lines[1].startswith("solve: t = 30 of 100 (30 %), 92 s elapsed")
    clock.now += 1.0
    bar.finalize(20.0, None, Status.INTERRUPTED)  # Ctrl-C: the integrator reports the last output time
    assert caplog.records[-1].getMessage() == "solve: interrupted at t = 30 after 93 s"  # the steps went on to 30


def test_a_short_run_writes_no_line(no_terminal, unconfigured_logging, capsys):
    pt.simulate(mf.SelfAttention(1.0), pt.uniform_sphere(8, 3, rng=0), [0.0, 0.5], dt=0.05)
    assert capsys.readouterr().err == ""


def test_simulate_writes_progress_lines_to_stderr_where_logging_is_not_configured(no_terminal, unconfigured_logging,
                                                                                  every_step, capsys):
    pt.simulate(mf.SelfAttention(1.0), pt.uniform_sphere(8, 3, rng=0), [0.0, 0.5], dt=0.05)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 11  # one per step (every 0 s here), and how the run ended
    assert err[0].startswith("meanfield: particles.simulate: t = 0.05 of 0.5 (10 %), ") and "elapsed" in err[0]
    assert "left" in err[0] and err[-1].startswith("meanfield: particles.simulate: success at t = 0.5 after ")


def test_progress_false_quiet_and_a_terminal_write_no_lines(no_terminal, unconfigured_logging, every_step, capsys,
                                                            monkeypatch, tqdm_bars):
    model, x0 = mf.SelfAttention(1.0), pt.uniform_sphere(8, 3, rng=0)
    pt.simulate(model, x0, [0.0, 0.2], dt=0.05, progress=False)
    mf.solve(model, smooth_density(64), (0.0, 0.1), dt=0.05, progress=False)
    with checks.quiet():
        pt.simulate(model, x0, [0.0, 0.2], dt=0.05)
        mf.solve(model, smooth_density(64), (0.0, 0.1), dt=0.05)
    pt.simulate(model, x0, [0.0, 0.2], dt=0.05, progress=True)  # asked for: the bar, as before
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    pt.simulate(model, x0, [0.0, 0.2], dt=0.05)  # a terminal: the bar
    assert "meanfield:" not in capsys.readouterr().err
    assert [shown for shown, _ in tqdm_bars] == [False, False, False, False, True, True]


def test_solve_writes_progress_lines_through_logging_where_it_is_configured(no_terminal, every_step, caplog):
    caplog.set_level(logging.INFO, logger=trackers.PROGRESS_LOGGER)
    mf.solve(mf.SelfAttention(1.0), smooth_density(64), (0.0, 0.2), dt=0.05)
    lines = [r.getMessage() for r in caplog.records if r.name == trackers.PROGRESS_LOGGER]
    assert lines[0].startswith("solve: t = 0.05 of 0.2 (25 %), ")
    assert lines[-1].startswith("solve: success at t = 0.2 after ")
    caplog.clear()
    logging.getLogger(trackers.PROGRESS_LOGGER).setLevel(logging.WARNING)  # silenced by level, as logs are
    try:
        mf.solve(mf.SelfAttention(1.0), smooth_density(64), (0.0, 0.2), dt=0.05)
    finally:
        logging.getLogger(trackers.PROGRESS_LOGGER).setLevel(logging.NOTSET)
    assert not [r for r in caplog.records if r.name == trackers.PROGRESS_LOGGER]


# ------------------------------------------------------------------ the warning before a long run
def test_simulate_warns_before_two_hundred_thousand_steps_with_the_count_and_a_measured_time():
    """The case of the issue: SelfAttention(1e4) on [0, 1], h = 0.05 / rate scale = 5e-6. The warning, made an
    error here, comes before the run (which would take minutes)."""
    x0 = pt.uniform_sphere(32, 3, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LongRunWarning)
        with pytest.raises(LongRunWarning) as caught:
            pt.simulate(mf.SelfAttention(1e4), x0, [0.0, 1.0])
    message = str(caught.value)
    assert message.startswith("particles.simulate of SelfAttention(SA, beta=10000")
    assert "200020 rk4 steps of h = 5e-06" in message
    assert "rate scale over the run is 1e+04" in message and "a step, measured on the first steps" in message
    assert "larger `dt`" in message and "fewer output times do not help" in message and "progress=True" in message
    assert issubclass(LongRunWarning, UserWarning) and not issubclass(LongRunWarning, RuntimeWarning)


def test_no_warning_at_or_below_the_limit_nor_for_adaptive_methods():
    x0 = pt.uniform_sphere(8, 3, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LongRunWarning)
        pt.simulate(mf.SelfAttention(1.0), x0, [0.0, 0.5])
    assert run_estimate(mf.SelfAttention(1e4), x0, [0.0, 1.0], method="rk45").steps is None
    # the count is that of the step: exactly LONG_RUN_STEPS steps do not warn, one more does
    assert run_estimate(mf.SelfAttention(1.0), x0, [0.0, 1.0], dt=1.0 / LONG_RUN_STEPS, timing=False).steps == \
        LONG_RUN_STEPS


@pytest.mark.parametrize("t_eval, dt", [([0.0, 0.25, 1.0], 0.03), ([0.0, 0.1, 0.35], None)])
def test_the_count_is_the_steps_simulate_takes(t_eval, dt):
    x0 = pt.uniform_sphere(8, 3, rng=0)
    model = mf.SelfAttention(4.0)
    est = run_estimate(model, x0, t_eval, dt=dt)
    assert est.steps == pt.simulate(model, x0, t_eval, dt=dt).nsteps
    assert est.step_seconds > 0 and est.seconds == est.steps * est.step_seconds


@pytest.mark.parametrize("model", [mf.SelfAttention(1.0, noise=0.1), mf.SelfAttention(2.0)])
def test_timing_the_first_steps_changes_nothing_in_the_run(model, monkeypatch):
    """The warning's timing runs on copies (of the state, of the noise's generator): the trajectory is the same
    bit for bit."""
    import particles.system

    x0 = pt.uniform_sphere(40, 3, rng=1)
    quiet = pt.simulate(model, x0, [0.0, 0.1, 0.2], dt=0.01, rng=5)
    monkeypatch.setattr(particles.system, "LONG_RUN_STEPS", 5)
    with pytest.warns(LongRunWarning, match="20 rk4 steps of h = 0.01") as record:
        warned = pt.simulate(model, x0, [0.0, 0.1, 0.2], dt=0.01, rng=5)
    assert record[0].filename == __file__  # the caller's line
    assert np.array_equal(quiet.x, warned.x) and quiet.field_error_bound == warned.field_error_bound


def test_solve_warns_where_a_fixed_dt_makes_more_steps_than_the_limit():
    with warnings.catch_warnings():
        warnings.simplefilter("error", LongRunWarning)
        with pytest.raises(LongRunWarning, match=r"solve of SelfAttention.*: 1000000 rk4 steps of h = 1e-06, about "):
            mf.solve(mf.SelfAttention(1.0), smooth_density(64), (0.0, 1.0), dt=1e-6)
        mf.solve(mf.SelfAttention(1.0), smooth_density(64), (0.0, 0.2))  # the CFL step: not known, no warning


def test_solve_run_estimate_counts_the_fixed_steps_it_takes():
    from meanfield.solvers.solve import prepare, run_estimate as solve_estimate

    p = prepare(mf.SelfAttention(1.0), smooth_density(64), (0.0, 0.5), t_eval=[0.0, 0.12, 0.5], dt=0.05)
    est = solve_estimate(p)
    assert est.steps == mf.solve(mf.SelfAttention(1.0), smooth_density(64), (0.0, 0.5), t_eval=[0.0, 0.12, 0.5],
                                 dt=0.05).nsteps
    assert est.method == "rk4" and est.step_seconds > 0
    cfl = solve_estimate(prepare(mf.SelfAttention(1.0), smooth_density(64), (0.0, 0.5)))
    assert cfl.steps is None and cfl.seconds is None and cfl.step_seconds > 0  # a step's cost, no count


def test_time_steps_subtracts_what_a_run_costs_besides_its_steps(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(trackers, "time", clock)

    def run(k):  # 0.5 s to set up, 2 ms a step
        clock.now += 0.5 + 0.002 * k

    assert time_steps(run, budget=1.0) == pytest.approx(0.002)
    assert RunEstimate("rk4", 1000, 1e-3, "the `dt` given", 0.002).summary() == \
        "1000 rk4 steps of h = 0.001 (the `dt` given): about 2 s (2 ms a step, measured)"
    assert [duration(s) for s in (3.5e-5, 0.0014, 4.2, 45.0, 270.0, 8280.0, 3e5)] == \
        ["35 µs", "1.4 ms", "4.2 s", "45 s", "4.5 min", "2.3 h", "3.5 days"]


def test_progress_while_writes_a_line_after_the_first_interval_and_how_long_the_call_took(unconfigured_logging, capsys):
    """A call without steps (an optimal transport) gets the same lines: none where it ends before ``first``; where
    it runs past ``first`` (a sleep here, which like POT's simplex releases the GIL), "still running" and, on exit,
    the time it took."""
    import time

    with trackers.progress_while("validation.distance: W1", first=5.0):
        time.sleep(0.05)
    assert capsys.readouterr().err == ""
    with trackers.progress_while("validation.distance: W1", first=0.05, every=100.0):
        time.sleep(0.5)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2, err
    assert err[0].startswith("meanfield: validation.distance: W1: still running, ") and "elapsed" in err[0]
    assert err[1].startswith("meanfield: validation.distance: W1: done after ")
    with trackers.progress_while("x", enabled=False, first=0.0, every=0.0):
        time.sleep(0.05)
    assert capsys.readouterr().err == ""


def test_distances_write_progress_lines_exactly_where_solve_does(no_terminal, monkeypatch):
    """validation.distance (and w1, w2 through it) run inside progress_while, enabled where
    checks.progress_lines says (auto progress, no terminal, not quiet), as solve's and simulate's lines are."""
    import importlib

    import validation

    wasserstein = importlib.import_module("validation.wasserstein")  # the module (the package exports a function so named)
    seen = []

    class Recorder(trackers.progress_while):
        def __init__(self, what, enabled=True, **kwargs):
            seen.append((what, enabled))
            super().__init__(what, False)

    monkeypatch.setattr(wasserstein, "progress_while", Recorder)
    x, y = pt.uniform_sphere(20, 3, rng=0), pt.uniform_sphere(30, 3, rng=1)
    validation.w1(x, y)
    validation.w2(x, y, progress=False)
    with checks.quiet():
        validation.distance(x, y, 1)
    assert seen == [("validation.distance: W1", True), ("validation.distance: W2", False),
                    ("validation.distance: W1", False)]
