"""``meanfield.solvers.solve.prepare``: everything ``solve`` refuses, refused before any work (issue 39, item 1).

``meanfield check`` asks ``prepare`` what ``meanfield run``'s solve will ask; these tests hold ``prepare`` to that
from the Python side: what it refuses, ``solve`` refuses with the same message and without evaluating the
right-hand side once; what it accepts, ``solve`` runs on the planned chain. The study-level property (generated
studies: check ok ⇔ run reaches its integrator) is tests/study/test_check_means_run.py.
"""

from __future__ import annotations

import pytest

import meanfield as mf
from meanfield.representations.grid import GridProblem
from meanfield.solvers.solve import Prepared, prepare

NOISY = mf.SelfAttention(1.0, noise=0.1)


@pytest.fixture
def mu0():
    return mf.Density.uniform(mf.CircleGrid(32))


@pytest.fixture
def no_rate(monkeypatch):
    """Any evaluation of the grid's right-hand side fails the test: a refusal must come before the work."""

    def boom(self, *args, **kwargs):
        raise AssertionError("the right-hand side was evaluated before the refusal")

    monkeypatch.setattr(GridProblem, "rate", boom)


@pytest.mark.parametrize("options, named, reason", [
    ({"method": "dop853"}, "`method` 'dop853'", "no integrating-factor form"),
    ({"representation": "lagrangian"}, "`representation` 'lagrangian'", "with noise"),
    ({"representation": "nodes"}, "`representation` 'nodes'", "with noise"),
])
def test_what_prepare_refuses_solve_refuses_before_any_evaluation(mu0, no_rate, options, named, reason):
    """The two refusals of the issue (DOP853 with noise; the Lagrangian representations with noise): refused by
    ``prepare`` naming the argument and its value, and by ``solve`` with the same message before the rate is
    evaluated once (the DOP853 refusal used to come from the integrator, after the first step's set-up)."""
    with pytest.raises(ValueError) as prepared:
        prepare(NOISY, mu0, (0.0, 0.1), **options)
    message = str(prepared.value)
    assert message.startswith(named) and reason in message
    assert "the nodes does" not in message and "the panels does" not in message  # "the nodes representation does"
    with pytest.raises(ValueError) as solved:
        mf.solve(NOISY, mu0, (0.0, 0.1), **options)
    assert str(solved.value) == message


@pytest.mark.parametrize("method", ["rk45", "rk4", "ssprk3"])
def test_what_prepare_accepts_solve_runs_on_the_planned_chain(mu0, method):
    """A noisy model with a method that has an integrating-factor form: prepared (the grid alone, the options as
    given) and solved on that chain."""
    p = prepare(NOISY, mu0, (0.0, 0.05), method=method)
    assert isinstance(p, Prepared) and p.representations == ("grid",) and p.settings.method == method
    assert (p.t0, p.t1) == (0.0, 0.05)
    sol = mf.solve(NOISY, mu0, (0.0, 0.05), method=method)
    assert set(sol.representation) == set(p.representations)
    assert sol.raise_for_status() is sol


def test_the_integrator_refuses_a_method_without_integrating_factor_form_before_any_evaluation(mu0, no_rate):
    """:meth:`meanfield.integrate.Integrator.check`, which ``run`` asks first: the same rule for a caller that
    builds its own grid problem."""
    from meanfield.integrate import Integrator, integrating_factor_refusal

    problem = GridProblem(NOISY, mu0.grid, "auto", False, mu0.grid.n)
    with pytest.raises(ValueError, match="'dop853' has no integrating-factor form"):
        Integrator(problem, "dop853").run(0.0, mu0.values, [0.0, 0.1])
    assert integrating_factor_refusal("dop853") is not None
    assert all(integrating_factor_refusal(m) is None for m in ("rk4", "ssprk3", "rk45"))
