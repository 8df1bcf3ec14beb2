"""E_β is recorded for every model that has one (issue 46, finding 2: ``Solution.energy`` was None for any
``Transformer``, even the default post-LN one, and for nGPT densities).

- post-LN attention alone is the attention itself (the same right-hand side): the same energies, bit for bit;
- nGPT, θ̇ = αP_θA/|A|: dE_β/dt = (α/c)∫ Z|P_θA|²/|A| dμ >= 0 for V = cI, c > 0 (``Transformer.energy_kernel``),
  so E_β never decreases along the solve (the resolution monitor checks it at every step; here at every step too,
  to ε·E_β per step, the quadrature's round-off: limit 1e-12 E_β, the monitor's own);
- with feed-forward blocks E_β is recorded (equal to the frames' own E_β) but not monotone.
"""

import numpy as np
import pytest

import meanfield as mf
from meanfield.models import FeedForward, Normalization, Transformer


def _circle_start(n=128):
    return mf.Density.from_function(mf.CircleGrid(n), lambda x: np.exp(np.cos(3 * np.arctan2(x[..., 1], x[..., 0]))
                                                                       + 0.3 * x[..., 0]))


def test_post_ln_transformer_records_the_attentions_energy():
    sa = mf.SelfAttention(2.0)
    a = mf.solve(sa, _circle_start(), (0, 3), t_eval=[0, 1, 2, 3])
    b = mf.solve(Transformer(sa), _circle_start(), (0, 3), t_eval=[0, 1, 2, 3])
    assert b.energy is not None and np.array_equal(a.energy, b.energy)
    assert np.array_equal(a.energy_steps, b.energy_steps)


@pytest.mark.parametrize("grid, start, T", [
    (mf.CircleGrid(128), lambda x: np.exp(np.cos(3 * np.arctan2(x[..., 1], x[..., 0])) + 0.3 * x[..., 0]), 1.5),
    (mf.SphereGrid(32), lambda x: np.exp(x[..., 2] + 0.5 * x[..., 0] * x[..., 1]), 0.6),
])
def test_ngpt_energy_never_decreases(grid, start, T):
    model = Transformer(mf.SelfAttention(2.0), normalization=Normalization("ngpt", alpha=0.5))
    sol = mf.solve(model, mf.Density.from_function(grid, start), (0, T), t_eval=np.linspace(0, T, 4))
    assert sol.status is mf.Status.SUCCESS, sol.message
    assert sol.energy is not None and sol.energy_steps.size > 10
    assert np.all(np.diff(sol.energy_steps) >= -1e-12 * sol.energy_steps[1:])
    assert sol.energy[-1] > sol.energy[0] + 0.03  # it moves: the test can fail
    assert sol.energy == pytest.approx([f.energy(2.0) for f in sol.densities], rel=1e-13)


def test_energy_beside_feed_forward_blocks_is_recorded():
    model = Transformer(mf.SelfAttention(2.0), FeedForward(W=np.eye(2), A=np.eye(2)))
    sol = mf.solve(model, _circle_start(), (0, 2), t_eval=[0, 1, 2])
    assert sol.energy is not None
    assert sol.energy == pytest.approx([f.energy(2.0) for f in sol.densities], rel=1e-13)
    assert model.energy_kernel.c == 0.0  # recorded, never checked for monotonicity
