"""What a newcomer who reads the docs trips on: an ambiguous argument refused with both readings spelled out, a short
repr of a solution, a package namespace without its import helpers."""

import re

import numpy as np
import pytest

import meanfield as mf
from meanfield.models import Masked, Softmax


@pytest.mark.parametrize("kind", [Softmax, Masked])
@pytest.mark.parametrize("q", [2.0, 3, np.float64(0.5), np.array(2.0)])
def test_a_bare_number_as_q_is_refused_with_both_readings(kind, q):
    """Softmax(2.0) read Q = [[2]] with β = 1 where SelfAttention(2.0) means β = 2: the 0-d Q is refused (TypeError),
    the message giving both spellings; each spelling builds the model it names (β = 2 with Q = I; a 1 × 1 Q)."""
    name, v = kind.__name__, float(q)
    words = (f"{name}(Q, K, V, beta): Q is a matrix (d × d); for the inverse temperature write {name}(beta={v!r}), "
             f"for a 1 × 1 Q write Q=[[{v!r}]]")
    with pytest.raises(TypeError, match=re.escape(words)):
        kind(q)
    assert kind(beta=v).beta == v and kind(beta=v).Q is None
    np.testing.assert_array_equal(kind(Q=[[v]]).Q, [[v]])


def test_a_solution_prints_a_short_summary():
    """repr(sol) is a summary whose length does not grow with the run (30 frames or 300, one refinement): status,
    message, the span and the number of frames, the representation, the arrays by dtype and shape — no array's
    values; the refinements hold plain Python numbers (t, n_old, n_new) with n_new = 2 n_old (zero-padding doubles)."""
    rho0 = mf.Density.from_function(mf.CircleGrid(32), lambda x: np.exp(0.5 * x[..., 0]))
    lengths = []
    for frames in (31, 301):
        sol = mf.solve(mf.SelfAttention(8.0), rho0, (0, 4), t_eval=np.linspace(0, 4, frames), refine=True, max_n=256)
        r = repr(sol)
        assert sol.refinements and all(type(t) is float and type(a) is int and type(b) is int and b == 2 * a
                                       for t, a, b in sol.refinements)
        assert r.startswith("Solution(") and "SUCCESS" in r and sol.message in r and f"{frames} frames" in r
        assert f"t float64 ({frames},)" in r and "grid" in r and "refinements: 1" in r
        assert "array(" not in r and "np.float64" not in r and "Density(" not in r
        lengths.append(len(r))
    assert lengths[1] - lengths[0] <= 10 and lengths[1] < 1000  # only the digits of the counts differ


def test_the_namespace_holds_the_package_not_its_import_helpers():
    """dir(meanfield) shows no import helper (sys, import_module, PackageNotFoundError, version); ``meanfield.MOVED``
    still maps every earlier root module to its new home, each alias the new module itself."""
    import importlib

    shown = set(dir(mf))
    assert shown.isdisjoint({"sys", "import_module", "PackageNotFoundError", "version", "MOVED"})
    assert set(mf.__all__) <= shown
    assert mf.MOVED and all(importlib.import_module(f"meanfield.{old}") is importlib.import_module(f"meanfield.{new}")
                            for old, new in mf.MOVED.items())
    with pytest.raises(AttributeError, match="no attribute 'sys'"):
        mf.sys


@pytest.mark.parametrize("domain", ["circle", "sphere"])
def test_a_kernel_too_sharp_for_harmonics_is_refused_before_its_table_is_built(domain):
    """The degree search tabulates ~4|β| multipliers: at β = 1e9 that would be 32 GB (a generated study once held
    23.6 GB this way and was killed). It refuses past checks.HARMONIC_TABLE_MAX, naming beta, at once and without
    the memory; the particles' choice of sums then takes the pair sums (exact at any β) instead of failing."""
    import resource

    from meanfield.core import checks
    from meanfield.domains.circle.point_sums import circle_degree
    from meanfield.domains.sphere.point_sums import sphere_degree

    degree = circle_degree if domain == "circle" else sphere_degree
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(checks.DegreeBeyondReach, match=r"`beta` = 1e\+09"):
        degree(1e9)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # kB: nothing of β's size
    point_sums = mf.domains.get(domain).point_sums(2 if domain == "circle" else 3)
    assert point_sums.pays_off(10**6, 1e9) is False and point_sums.pays_off(10**6, 4.0) is True
    assert degree(4.0) < 64  # a moderate β is untouched
