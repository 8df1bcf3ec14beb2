"""RoPE with one frequency per plane (docs/MATH.md §13; issue 48 item 2): ``SelfAttention(rope=[ω_0, ω_1, …])`` or
RoPE's ladder ω_p = ω b^{−2p/d} (``rope_base`` = b; Su et al. 2021), plane p = (x_2p, x_2p+1) turned by ω_p s.

Asserted: equal frequencies are the scalar ω bit for bit (particles on S³ and the density on [0, 1] × S¹); the ladder
is the array of its frequencies bit for bit; permuting the planes together with the coordinates permutes the run
(round-off); two tokens in plane p follow the closed form :func:`meanfield.analysis.exact.positional_pair` with that
plane's own frequency ω_p (and not another's); the refusals name ``rope`` / ``rope_base`` and the value."""

import numpy as np
import pytest

import meanfield as mf
import particles
from meanfield.analysis.exact import positional_pair
from meanfield.density import Density
from meanfield.domains.sequence import SequenceGrid, with_positions
from meanfield.models import SelfAttention


def _tokens(n, d, seed):
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def run(model, x, t=(0.0, 0.5), dt=0.02):
    return particles.simulate(model, with_positions(x), list(t), dt=dt).x


def test_equal_frequencies_are_the_scalar_bit_for_bit():
    """rope = [ω, ω] on S³ is rope = ω: the angles are the same products ω·s, so the same bits (particles); on
    [0, 1] × S¹ (one plane) rope = [ω] and rope_base (ω b⁰ = ω) are rope = ω bit for bit (the density)."""
    x = _tokens(30, 4, 1)
    ref = run(SelfAttention(2.0, causal=True, rope=3.0), x)
    assert np.array_equal(run(SelfAttention(2.0, causal=True, rope=[3.0, 3.0]), x), ref)
    g = SequenceGrid(16, 5)
    s, th = g.positions[:, None], g.angles[None, :]
    rho = Density(g, (1.0 + 0.4 * np.cos(th - s) + 0.2 * np.sin(2 * th) * s) / (2 * np.pi))

    def density(model):
        return mf.solve(model, rho, (0.0, 0.1), dt=0.02, refine=False).densities[-1].values

    base = density(SelfAttention(1.5, causal=True, rope=2.0))
    for model in (SelfAttention(1.5, causal=True, rope=[2.0]), SelfAttention(1.5, causal=True, rope=2.0, rope_base=1e4)):
        assert np.array_equal(density(model), base)


def test_the_ladder_is_the_array_of_its_frequencies():
    """rope_base = b gives ω_p = ω b^{−2p/d}: the run with the base is the run with that array, bit for bit, and the
    planes do turn at different rates (the ladder differs from ω in every plane: a different run)."""
    d, omega, b = 6, 4.0, 100.0
    model = SelfAttention(1.0, causal=True, rope=omega, rope_base=b)
    w = omega * b ** (-2.0 * np.arange(3) / d)
    np.testing.assert_array_equal(model.rope_frequencies(d), w)
    x = _tokens(20, d, 2)
    ladder = run(model, x)
    assert np.array_equal(ladder, run(SelfAttention(1.0, causal=True, rope=w), x))
    assert np.max(np.abs(ladder - run(SelfAttention(1.0, causal=True, rope=omega), x))) > 1e-3


def test_permuting_planes_permutes_the_run():
    """The planes are independent: frequencies (ω_0, ω_1, ω_2) on coordinates x, and the same frequencies permuted
    with the planes of x, give the same run with its coordinates permuted — to round-off (the inner products sum the
    coordinates in another order: 1e-13 over 25 RK4 steps of O(1) fields, ~1e-16 each)."""
    d, w = 6, np.array([5.0, -1.0, 2.5])
    x = _tokens(25, d, 3)
    perm = [2, 0, 1]  # new plane q is old plane perm[q]
    coords = np.concatenate([[2 * p, 2 * p + 1] for p in perm])
    a = run(SelfAttention(1.5, causal=True, rope=w), x)
    b = run(SelfAttention(1.5, causal=True, rope=w[perm]), x[:, coords])
    np.testing.assert_array_equal(a[..., 0], b[..., 0])  # the positions never move
    assert np.max(np.abs(a[..., 1:][..., coords] - b[..., 1:])) < 1e-13
    # a permutation of the frequencies alone is another run
    c = run(SelfAttention(1.5, causal=True, rope=w[perm]), x)
    assert np.max(np.abs(a - c)) > 1e-3


@pytest.mark.parametrize("plane", [0, 1, 2])
def test_two_tokens_in_a_plane_turn_at_its_frequency(plane):
    """Two tokens of S⁵ in plane p (s = ¼, ¾: Δs = ½) never leave it (the field is a combination of the keys, turned
    within the plane); the first rests and the second's signed angle follows :func:`positional_pair` with α = ω_p/2,
    ω_p that plane's frequency of the ladder ω b^{−2p/d} (RK4 at dt = 0.004: ~dt⁴, asserted to 1e-10 as for one
    frequency in tests/meanfield/test_positions.py); the other planes' frequencies would give other angles."""
    d, omega, b, theta0 = 6, 5.0, 30.0, 2.2
    model = SelfAttention(1.0, causal=True, rope=omega, rope_base=b)
    w = model.rope_frequencies(d)
    x = np.zeros((2, d))
    x[0, 2 * plane], x[1, 2 * plane], x[1, 2 * plane + 1] = 1.0, np.cos(theta0), np.sin(theta0)
    t = np.linspace(0.0, 3.0, 4)
    traj = particles.simulate(model, with_positions(x), t, dt=0.004).x
    tokens = traj[..., 1:]
    others = np.delete(tokens, [2 * plane, 2 * plane + 1], axis=-1)
    assert np.max(np.abs(others)) == 0.0  # never left the plane
    assert np.max(np.abs(tokens[:, 0] - tokens[0, 0])) <= 1e-15
    a, c = tokens[:, 0, 2 * plane:2 * plane + 2], tokens[:, 1, 2 * plane:2 * plane + 2]
    got = np.arctan2(a[:, 0] * c[:, 1] - a[:, 1] * c[:, 0], np.sum(a * c, -1))
    assert np.max(np.abs(got - positional_pair(t, theta0, 1.0, 0.0, w[plane] / 2))) <= 1e-10
    for q in set(range(3)) - {plane}:  # another plane's frequency is another curve
        assert np.max(np.abs(got - positional_pair(t, theta0, 1.0, 0.0, w[q] / 2))) > 1e-3


def test_refusals_name_the_argument():
    with pytest.raises(ValueError, match=r"`rope` holds 3 frequencies but tokens in R\^4 have 2 plane"):
        run(SelfAttention(1.0, causal=True, rope=[1.0, 2.0, 3.0]), _tokens(5, 4, 0))
    with pytest.raises(ValueError, match=r"`rope` = array\(\[1\., 2\.\]\) weighs the tokens by their positions"):
        SelfAttention(1.0, rope=[1.0, 2.0])
    with pytest.raises(ValueError, match="`rope` must be finite"):
        SelfAttention(1.0, causal=True, rope=[1.0, np.inf])
    with pytest.raises(ValueError, match=r"`rope` must be a number or a 1-D array"):
        SelfAttention(1.0, causal=True, rope=[[1.0]])
    with pytest.raises(ValueError, match=r"`rope_base` = 10 sets the ladder .* got rope = 0"):
        SelfAttention(1.0, causal=True, rope_base=10.0)
    with pytest.raises(ValueError, match=r"`rope_base` must be > 0"):
        SelfAttention(1.0, causal=True, rope=1.0, rope_base=-2.0)
    with pytest.raises(ValueError, match=r"`rope_base` .* not both"):
        SelfAttention(1.0, causal=True, rope=[1.0, 2.0], rope_base=10.0)


def test_study_files_take_the_base():
    """[model] rope_base in a study: the model's ladder for the tokens' dimension (S³: two planes, ω and ω/b^{1/2}),
    and the study's particles are those of particles.simulate with that model (the same draws, bit for bit)."""
    from meanfield.study import build, read
    from meanfield.study.runner import run_config

    cfg = read({"domain": "sphere", "dimension": 4, "seed": 4, "model": {"causal": True, "rope": 4.0, "rope_base": 100.0},
                "initial": {"kind": "uniform"}, "time": {"t_end": 0.4, "frames": 3},
                "particles": {"n": [12], "dt": 0.02}})
    model = build.build_model(cfg)
    np.testing.assert_allclose(model.rope_frequencies(4), [4.0, 0.4], rtol=1e-15)
    ds = run_config(cfg, progress=False)[0]
    x0 = build.initial_particles(cfg, None, 12)
    ref = particles.simulate(model, x0, cfg["time"]["t_eval"], dt=0.02).x
    assert np.array_equal(ds["positions_12"].values, np.moveaxis(ref, 0, 1))
