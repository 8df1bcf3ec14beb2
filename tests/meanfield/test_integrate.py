"""The time-integration layer on an exact solution: orders, landing on outputs, rejection and restart, trackers."""

import numpy as np
import pytest
from scipy.linalg import expm

from meanfield.integrate import (
    FiniteTracker, Integrator, InterruptTracker, OutputTracker, Problem, Status, StopIntegration, Tracker,
    equal_steps,
)
from meanfield.integrate.steppers import FixedStepper
from validation import observed_order
from tests.helpers import EPS

A = np.array([[-0.3, 1.0], [-1.0, -0.2]])
Y0 = np.array([1.0, 0.5])


class Linear(Problem):
    """y' = A y: y(t) = e^{tA} y0."""

    def __init__(self):
        self.calls = 0

    def rate(self, y):
        self.calls += 1
        return A @ y


def exact(t):
    return expm(t * A) @ Y0


class Recorder(Tracker):
    def __init__(self):
        self.events = []

    def initialize(self, t, y):
        self.events.append(("initialize", t))

    def handle(self, t, y, h):
        self.events.append(("handle", t, h))

    def output(self, t, y):
        self.events.append(("output", t))

    def reset(self, t, y):
        self.events.append(("reset", t))

    def finalize(self, t, y, status):
        self.events.append(("finalize", status))


@pytest.mark.parametrize("method, order", [("rk4", 4), ("ssprk3", 3)])
def test_fixed_steppers_have_their_order(method, order):
    hs = np.array([0.1, 0.05, 0.025, 0.0125])
    errs = []
    for h in hs:
        out = OutputTracker()
        Integrator(Linear(), method, dt=h, trackers=[out]).run(0.0, Y0, [0.0, 1.0])
        errs.append(np.max(np.abs(out.states[-1] - exact(1.0))))
    assert abs(observed_order(hs, errs).order - order) < 0.1


@pytest.mark.parametrize("method", ["rk45", "dop853"])
@pytest.mark.parametrize("dense", [False, True])
def test_adaptive_steppers_meet_their_tolerance_landing_or_dense(method, dense):
    t = np.linspace(0.0, 3.0, 7)
    out = OutputTracker()
    problem = Linear()
    it = Integrator(problem, method, rtol=1e-10, atol=1e-12, dense=dense, trackers=[out])
    it.run(0.0, Y0, t)
    np.testing.assert_array_equal(out.times, t)
    assert max(np.max(np.abs(y - exact(tk))) for tk, y in zip(t, out.states)) < 1e-8
    assert it.nfev == problem.calls and it.nsteps > 0


def test_landing_shortens_the_last_step_and_subdividing_cuts_equal_steps():
    rec = Recorder()
    it = Integrator(Linear(), "rk4", dt=0.3, trackers=[rec])
    it.run(0.0, Y0, [0.0, 1.0])
    steps = [e[2] for e in rec.events if e[0] == "handle"]
    assert steps[:3] == [0.3, 0.3, 0.3] and steps[3] == pytest.approx(0.1, abs=1e-15) and it.nsteps == 4
    assert [e[1] for e in rec.events if e[0] == "handle"][-1] == 1.0  # lands exactly
    rec = Recorder()
    it = Integrator(Linear(), "rk4", dt=0.3, subdivide=True, trackers=[rec])
    it.run(0.0, Y0, [0.0, 1.0])
    steps = [e[2] for e in rec.events if e[0] == "handle"]
    assert len(steps) == equal_steps(1.0, 0.3)[0] == 4 and np.allclose(steps, 0.25, rtol=1e-15)
    assert it.nfev == 16  # four RK4 stages per step


def test_tracker_hooks_in_order():
    rec = Recorder()
    Integrator(Linear(), "rk4", dt=0.5, trackers=[rec]).run(0.0, Y0, [0.0, 1.0])
    kinds = [e[0] for e in rec.events]
    assert kinds == ["initialize", "output", "handle", "handle", "output", "finalize"]
    assert rec.events[-1] == ("finalize", Status.SUCCESS)


class Doubling(Linear):
    """Rejects any state with |y| above a threshold once: the restart halves y (a stand-in for a refinement)."""

    def __init__(self):
        super().__init__()
        self.rejected = []

    def reject(self, t, y, reason):
        self.rejected.append((t, reason))
        if len(self.rejected) > 1:
            raise StopIntegration(t, y, reason)
        return 0.5 * y


class Guard(Tracker):
    def check(self, t, y):
        return "too large" if t > 0.45 and np.linalg.norm(y) > 0.4 else None


@pytest.mark.parametrize("method", ["rk4", "rk45"])
def test_a_rejected_step_restarts_from_the_state_the_problem_gives(method):
    problem, rec = Doubling(), Recorder()
    it = Integrator(problem, method, dt=0.1 if method == "rk4" else None, trackers=[Guard(), rec])
    with pytest.raises(StopIntegration) as info:
        it.run(0.0, Y0, [0.0, 2.0])
    # the first rejection restarted from half the last accepted state, the second stopped the run
    assert len(problem.rejected) == 2 and problem.rejected[0][1] == "too large"
    assert ("reset", problem.rejected[0][0]) in rec.events
    assert rec.events[-1] == ("finalize", Status.RESOLUTION_LOST)
    assert info.value.t == problem.rejected[1][0]


def test_interrupts_finalize_the_trackers_and_propagate():
    class Interrupting(Linear):
        def rate(self, y):
            if self.calls > 10:
                raise KeyboardInterrupt
            return super().rate(y)

    rec = Recorder()
    with pytest.raises(KeyboardInterrupt):
        Integrator(Interrupting(), "rk4", dt=0.1, trackers=[rec]).run(0.0, Y0, [0.0, 1.0])
    assert rec.events[-1] == ("finalize", Status.INTERRUPTED)


def test_non_finite_states_are_rejected():
    class Blowup(Linear):
        def rate(self, y):
            return y * np.inf

    with pytest.raises(StopIntegration, match="non-finite"):
        Integrator(Blowup(), "rk4", dt=0.1, trackers=[FiniteTracker()]).run(0.0, Y0, [0.0, 1.0])


def test_a_step_with_nowhere_to_retract_to_is_rejected_not_raised():
    """A retraction that has no answer (normalise of a zero row: ZeroVectorError, a FloatingPointError) rejects the
    step as a non-finite state does: the problem's reject ends the run with its status and the retraction's words,
    the trackers finalized; before, the error escaped solve/simulate and the partial results with it."""
    from meanfield.domains.sphere.geometry import ZeroVectorError, normalise

    class ToTheOrigin(Linear):
        def retract(self, y):  # every step lands on the origin (a stand-in for a stage that does)
            return normalise(np.zeros((1, y.size)))[0]

    rec = Recorder()
    with pytest.raises(StopIntegration, match=r"row 0 has norm") as info:
        Integrator(ToTheOrigin(), "rk4", dt=0.1, trackers=[rec]).run(0.0, Y0, [0.0, 1.0])
    assert info.value.t == 0.0 and rec.events[-1] == ("finalize", info.value.status)
    assert issubclass(ZeroVectorError, FloatingPointError)


def test_fixed_stepper_bookkeeping():
    s = FixedStepper(lambda y: A @ y, 0.0, Y0, 0.25, method="rk4", h=0.1)
    sizes = []
    while s.status == "running":
        sizes.append(s.step())
    assert s.status == "finished" and s.t == 0.25 and s.nfev == 12 and len(sizes) == 3
    assert sizes[-1] == pytest.approx(0.05, abs=8 * EPS * 0.25)  # 0.25 − 0.2 in float64: 0.05 − 1.4e-17
    assert s.step() == 0.0  # a finished stepper does not move
    with pytest.raises(ValueError, match="method"):
        Integrator(Linear(), "euler")


def test_sigterm_ends_an_integration_as_ctrl_c_does_and_the_handler_is_restored():
    import os
    import signal

    class Terminated(Linear):
        def rate(self, y):
            if self.calls == 20:
                os.kill(os.getpid(), signal.SIGTERM)
            return super().rate(y)

    rec = Recorder()
    with pytest.raises(KeyboardInterrupt):
        Integrator(Terminated(), "rk4", dt=0.01, trackers=[InterruptTracker(), rec]).run(0.0, Y0, [0.0, 1.0])
    assert rec.events[-1] == ("finalize", Status.INTERRUPTED)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_sigterm_during_solve_keeps_the_partial_solution():
    import importlib
    import os
    import signal

    import meanfield as mf

    solve_module = importlib.import_module("meanfield.solvers.solve")  # the attribute meanfield.solve is the function

    class Terminating:  # a user's tracker: SIGTERM after 30 accepted steps
        steps = 0

        def handle(self, t, frame, h):
            self.steps += 1
            if self.steps == 30:
                os.kill(os.getpid(), signal.SIGTERM)

    d = mf.Density.from_function(mf.CircleGrid(64), lambda x: np.exp(np.cos(2 * np.arctan2(x[..., 1], x[..., 0]))))
    with pytest.raises(solve_module.Interrupted) as info:
        mf.solve(mf.SelfAttention(2.0), d, (0, 1), t_eval=np.linspace(0, 1, 11), dt=0.01, trackers=[Terminating()])
    sol = info.value.solution
    assert sol.status is Status.INTERRUPTED and sol.t[-1] == pytest.approx(0.2) and len(sol.t_steps) == 31
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_the_progress_bar_shows_rounded_times(capsys):
    from meanfield.integrate import ProgressTracker

    bar = ProgressTracker(1.0, enabled=True)
    bar.initialize(0.0, None)
    bar.handle(0.08103095921703266, None, 0.08103095921703266)
    bar.bar.refresh()
    bar.finalize(0.08103095921703266, None, None)
    err = capsys.readouterr().err
    assert "t = 0.08103/1" in err and "0.0810309592" not in err


@pytest.mark.parametrize("method", ["rk4", "ssprk3"])
def test_stages_in_other_variables_are_the_same_step(method):
    """A nonlinear f(y) = decode(g(encode(y))) with encode a projection onto 3 of 5 orthonormal directions:
    the stages run on z = encode(y) give the y-space step to round-off, carry the part of y encode does not see
    unchanged, and count their evaluations; each step starts from the last one's z, so y is encoded once, and
    again only when the stepper's y is replaced (as the integrator does after a retraction)."""
    from meanfield.integrate.steppers import Stages

    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((5, 5)))[0][:, :3]
    M = np.array([[-0.3, 1.0, 0.2], [-1.0, -0.2, 0.0], [0.1, 0.4, -0.5]])

    def g(z):
        return M @ z + 0.3 * np.sin(z)

    def f(y):
        return Q @ g(Q.T @ y)

    encoded = []

    def encode(y):
        encoded.append(y)
        return Q.T @ y

    y0 = np.array([1.0, 0.5, -0.2, 0.7, 0.3])
    plain = FixedStepper(f, 0.0, y0, 1.0, method=method, h=0.1)
    staged = FixedStepper(f, 0.0, y0, 1.0, method=method, h=0.1, stages=Stages(encode, lambda z: Q @ z, g))
    while plain.status == "running":
        plain.step()
        staged.step()
        if staged.t == pytest.approx(0.5):
            staged.y = staged.y.copy()  # a new array: its z is not known
    assert staged.status == "finished" and staged.nfev == plain.nfev
    assert len(encoded) == 2 and encoded[0] is y0
    assert np.max(np.abs(staged.y - plain.y)) <= 1e-14
    residual = y0 - Q @ (Q.T @ y0)  # not seen by f: unchanged
    assert np.max(np.abs((staged.y - Q @ (Q.T @ staged.y)) - residual)) <= 16 * EPS  # a 5×3 product: EPS seen


def test_an_error_inside_the_integration_gives_back_the_sigterm_handler():
    """A rate that raises (particles.simulate of USA at β = 800 overflows in its first step) still finalizes the
    trackers: the SIGTERM handler the run installed is restored. It was left installed, and a later test that
    expects the default handler failed or not depending on which tests a pytest-xdist worker ran before it."""
    import signal

    import meanfield as mf
    import particles as pt

    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with pytest.raises(OverflowError, match="USA"):
        pt.simulate(mf.SelfAttention(800.0, normalized=False), pt.uniform_sphere(5, 3, rng=0), [0, 1], dt=0.1)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.parametrize("shape", [(7, 3), (300000, 2), (2, 70000, 3)])
def test_rk4_in_compiled_passes_is_the_textbook_expression(rng, shape):
    """RK4's compiled stage combinations (float64 arrays; tasks on the library's threads from 128k elements) are
    y + (h/6)(k1 + 2k2 + 2k3 + k4) with its stages y + (h/2)k1, ... evaluated as numpy evaluates the expressions:
    the same roundings in the same order, so the same bits; rates that are no such arrays take the expressions."""
    from meanfield.integrate.steppers import rk4

    A = rng.standard_normal((shape[-1], shape[-1]))

    def f(y):
        return np.sin(y @ A) - 0.3 * y

    def textbook(y, h):
        k1 = f(y)
        k2 = f(y + 0.5 * h * k1)
        k3 = f(y + 0.5 * h * k2)
        k4 = f(y + h * k3)
        return y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

    y = rng.standard_normal(shape)
    assert np.array_equal(rk4(f, y, 0.037), textbook(y, 0.037))
    assert rk4(lambda z: -z, 1.0, 0.1) == pytest.approx(np.exp(-0.1), abs=1e-7)  # scalars: the expressions (h⁵/120)
