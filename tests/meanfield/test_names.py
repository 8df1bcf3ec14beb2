"""One meaning per name (issue 47, item 6): the renamed spellings fail in one line naming the new one."""

import numpy as np
import pytest

import meanfield as mf
from meanfield.solvers import depth
from meanfield.domains import gegenbauer
from meanfield.models import NORMALIZATIONS
from tests.helpers import EPS


def test_rescaling_to_mass_one_is_unit_mass():
    grid = mf.CircleGrid(64)
    rho = mf.Density(grid, 3.0 * (1.0 + 0.5 * np.cos(grid.angles)), check=False)
    assert abs(rho.unit_mass().mass() - 1.0) <= 64 * EPS  # a 64-term quadrature sum, divided once
    with pytest.raises(AttributeError, match=r"unit_mass\(\)"):
        rho.normalized()


def test_the_multipliers_scaled_by_exp_minus_beta_are_scaled_multipliers():
    m = gegenbauer.scaled_multipliers(3, 8, 2.0)
    assert m[0] > 0 and np.all(m <= 1.0)  # e^{−β}λ_l/|S^{d−1}| lies in (0, 1] (its docstring)
    with pytest.raises(AttributeError, match="scaled_multipliers"):
        gegenbauer.normalized_multipliers  # noqa: B018


def test_one_tuple_of_normalisations():
    """The layer-norm variants are the one NORMALIZATIONS; the projection after a discrete layer is PROJECTIONS."""
    assert tuple(NORMALIZATIONS) == ("post", "pre", "peri", "mix", "ngpt")
    assert not hasattr(depth, "NORMALIZATIONS")
    assert depth.PROJECTIONS == ("sphere", "rms", "none")
