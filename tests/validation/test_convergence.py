import numpy as np
import pytest

from validation import observed_order, self_convergence_order


def test_observed_order_recovers_power_law():
    h = np.array([0.1, 0.05, 0.025, 0.0125])
    fit = observed_order(h, 3.0 * h**2.5)
    assert fit.order == pytest.approx(2.5, abs=1e-12)
    assert fit.constant == pytest.approx(3.0, rel=1e-12)
    np.testing.assert_allclose(fit.local_orders, 2.5, atol=1e-12)


def test_self_convergence_order():
    # u_h = u + C h^p with p = 3
    u = np.linspace(0, 1, 5)
    sols = [u + 0.7 * h**3 for h in (0.1, 0.05, 0.025)]
    assert self_convergence_order(*sols) == pytest.approx(3.0, abs=1e-10)


@pytest.mark.parametrize("h, e", [([1.0], [1.0]), ([1.0, 0.5], [1.0, -1.0]), ([1.0, 1.0], [1.0, 0.5]), ([1, 0.5], [1, 0.5, 0.2])])
def test_bad_input(h, e):
    with pytest.raises(ValueError):
        observed_order(h, e)
