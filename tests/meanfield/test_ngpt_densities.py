"""nGPT densities on S¹ and S² (issue 37; docs/MATH.md §10): the continuity equation with nGPT's field
X = α P_θA/|A| solved on the grids by quadrature.

Oracles: the growth rates of the zonal modes about the uniform law (``exact.ngpt_rates``: post-LN's linearisation
divided by |A_0|, a closed form in Bessel functions, derived independently of the grids' sums), the reference sum of
the field (``Transformer.field``, NumPy) for the compiled one, mass conservation of the divergence form, spectral
convergence in the resolution, and the particles (the mean-field limit: W_1 ~ N^(-1/2))."""

import numpy as np
import pytest
from scipy.special import eval_legendre, iv

import meanfield as mf
from meanfield.analysis import exact
from meanfield import kernels
from meanfield.domains import zonal_domain
from meanfield.models import Normalization, SelfAttention, Transformer

ALPHA, BETA = 0.5, 2.0
EPS = 1e-7  # the perturbation: its square bounds the nonlinear part of the measured rates


def _ngpt(beta=BETA, alpha=ALPHA, **head):
    return Transformer(SelfAttention(beta, **head), normalization=Normalization("ngpt", alpha=alpha))


# ------------------------------------------------------------------ the closed form
def test_rates_closed_forms_on_the_circle_and_s2():
    """d = 2: σ_k = α k² I_k(β)/(β I_1(β)) (written here with scipy's unscaled iv); degree 1 on every sphere is
    α(d − 1)/β (λ_1/λ_1); the noise subtracts D l(l + d − 2); the sign of c flips the drift."""
    k = np.arange(1, 6)
    assert np.allclose(exact.ngpt_rates(k, BETA, ALPHA), ALPHA * k * k * iv(k, BETA) / (BETA * iv(1, BETA)),
                       rtol=1e-13, atol=0)
    for d in (2, 3, 16, 128):
        assert exact.ngpt_rates([1], 3.0, 0.2, d=d)[0] == pytest.approx(0.2 * (d - 1) / 3.0, rel=1e-13)
    l = np.arange(1, 4)
    assert np.allclose(exact.ngpt_rates(l, BETA, ALPHA, d=3, noise=0.3),
                       exact.ngpt_rates(l, BETA, ALPHA, d=3) - 0.3 * l * (l + 1), rtol=1e-13)
    assert np.allclose(exact.ngpt_rates(l, BETA, ALPHA, d=3, c=-2.0), -exact.ngpt_rates(l, BETA, ALPHA, d=3))


@pytest.mark.parametrize("kwargs, words", [({"beta": 0.0}, "β = 0"), ({"alpha": 0.0}, "`alpha`"),
                                           ({"noise": -1.0}, "`noise`"), ({"d": 1}, "`d`"), ({"c": 0.0}, "`c`")])
def test_rates_refuse_bad_input(kwargs, words):
    args = {"beta": BETA, "alpha": ALPHA, **kwargs}
    with pytest.raises(ValueError, match=words):
        exact.ngpt_rates([1], **args)


# ------------------------------------------------------------------ the grids against the closed form
def _measured_rates(model, grid, basis, T=1.0):
    """log(c_l(T)/c_l(0))/T of each column of ``basis`` (functions orthogonal under the grid's quadrature), from
    the uniform law plus EPS times their sum (the default strategy)."""
    volume = np.sum(grid.weights)
    rho0 = (1.0 + EPS * basis.sum(axis=-1)) / volume
    sol = mf.solve(model, mf.Density(grid, rho0), (0.0, T), t_eval=[0.0, T], representation="grid")
    assert sol.strategy in ("moments", "quadrature")  # the moments on S² where their degree allows
    coefficient = lambda v: np.tensordot(grid.weights * v, basis, axes=(tuple(range(v.ndim)),) * 2)
    return np.log(coefficient(sol.densities[-1].values) / coefficient(sol.densities[0].values)) / T


@pytest.mark.parametrize("normalized, noise", [(True, 0.0), (False, 0.3)])
def test_circle_rates(normalized, noise):
    """Modes k = 1, 2, 3 about the uniform law on S¹ (n = 64): SA without noise, USA with it; relative error
    within the perturbation's 1e-7 (measured ~1e-8)."""
    grid = mf.CircleGrid(64)
    k = np.arange(1, 4)
    basis = np.cos(np.multiply.outer(grid.angles, k))
    measured = _measured_rates(_ngpt(normalized=normalized, noise=noise), grid, basis)
    assert np.allclose(measured, exact.ngpt_rates(k, BETA, ALPHA, noise=noise), rtol=1e-6, atol=0)


@pytest.mark.parametrize("normalized, noise", [(True, 0.0), (False, 0.3)])
def test_s2_rates(normalized, noise):
    """Zonal degrees l = 1, 2, 3 about the uniform law on S² (lmax 12), Legendre polynomials of the polar cosine."""
    grid = mf.SphereGrid(12)
    l = np.arange(1, 4)
    basis = np.stack([eval_legendre(j, grid.points[..., 2]) for j in l], axis=-1)
    measured = _measured_rates(_ngpt(normalized=normalized, noise=noise), grid, basis)
    assert np.allclose(measured, exact.ngpt_rates(l, BETA, ALPHA, d=3, noise=noise), rtol=1e-6, atol=0)


# ------------------------------------------------------------------ the field, the mass, the resolution
def test_compiled_field_is_the_reference_sum_and_records_the_smallest_length(rng):
    """kernels.NGPTField (the grids' sums) against Transformer.field (NumPy) on S² with anisotropic V and two heads
    of differing kinds; its smallest_length is min |A| of the averages."""
    heads = mf.MultiHeadAttention((SelfAttention(1.5, V=np.diag([1.0, -0.5, 2.0])),
                                   SelfAttention(0.7, normalized=False)))
    model = Transformer(heads, normalization=Normalization("ngpt", alpha=0.3))
    x = rng.normal(size=(300, 3))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    q = x[:50]
    w = rng.uniform(0.5, 1.5, 300) / 300
    field = kernels.grid_field(model)
    assert isinstance(field, kernels.NGPTField)
    X = field(x, w, q)
    assert np.max(np.abs(X - model.field(x, w, q))) <= 1e-13
    A = sum(h.average(x, w, q) for h in heads.heads)
    assert field.smallest_length == pytest.approx(np.min(np.linalg.norm(A, axis=-1)), rel=1e-13)
    assert np.max(np.abs(np.sum(X * q, axis=-1))) <= 1e-14  # tangent
    assert np.max(np.linalg.norm(X, axis=-1)) <= 0.3 * (1 + 1e-14)  # |X| <= α


def test_mass_is_conserved_and_the_circle_converges_spectrally():
    """A perturbed uniform law on S¹ clustering under nGPT to t = 2 (no refinement, the spectral-tail monitor
    loosened to 1e-4 so that coarse grids run on, a fixed step): mass to round-off; the solution at n = 32, 64
    against n = 256 (max error of the densities) falls by orders of magnitude (spectral convergence)."""
    model = _ngpt()
    sols = {}
    loose = mf.ResolutionMonitor(tail_tol=1e-4)
    for n in (32, 64, 128, 256):
        grid = mf.CircleGrid(n)
        th = grid.angles
        mu0 = mf.Density(grid, (1.0 + 0.5 * np.cos(th) + 0.3 * np.sin(2.0 * th)) / (2.0 * np.pi))
        sols[n] = mf.solve(model, mu0, (0.0, 2.0), t_eval=[0.0, 2.0], representation="grid", refine=False, dt=1e-2,
                           monitor=loose)
        assert sols[n].status == mf.Status.SUCCESS, sols[n].message
        assert abs(sols[n].densities[-1].mass() - 1.0) <= 1e-13
    fine = sols[256].densities[-1]
    errors = [np.max(np.abs(sols[n].densities[-1].resampled(fine.grid).values - fine.values)) for n in (32, 64, 128)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert orders[0] >= 4.0 and orders[1] >= orders[0] + 2.0 and errors[-1] <= 1e-8, errors


def test_s2_mass_is_conserved():
    """A perturbed uniform law on S² (lmax 16, the tail monitor at 1e-6) under nGPT to t = 1: mass to round-off."""
    grid = mf.SphereGrid(16)
    x = grid.points
    rho = 1.0 + 0.4 * x[..., 2] + 0.3 * x[..., 0] * x[..., 1]
    mu0 = mf.Density(grid, rho / np.sum(grid.weights * rho))
    sol = mf.solve(_ngpt(), mu0, (0.0, 1.0), t_eval=[0.0, 1.0], representation="grid", refine=False,
                   monitor=mf.ResolutionMonitor(tail_tol=1e-6))
    assert sol.status == mf.Status.SUCCESS, sol.message
    assert abs(sol.densities[-1].mass() - 1.0) <= 1e-13
    assert sol.strategy == "moments"


def test_s2_moments_sum_the_reference_field():
    """On S² the default strategy is the moments (the moment generating function gives the unprojected average A):
    nGPT's field there equals the quadrature sums' to round-off, for an anisotropic V."""
    from meanfield.domains.sphere import SPHERE

    model = _ngpt(V=np.diag([1.0, 0.8, 1.2]))
    grid = mf.SphereGrid(16)
    x = grid.points
    rho = 1.0 + 0.4 * x[..., 2] + 0.3 * x[..., 0] * x[..., 1]
    rho = rho / np.sum(grid.weights * rho)
    field = kernels.grid_field(model)
    moments, quadrature = (SPHERE.continuity(model, grid, s, field) for s in ("moments", "quadrature"))
    X = moments._field(rho)
    assert np.max(np.abs(X - quadrature._field(rho))) <= 1e-13
    assert moments.smallest_length == pytest.approx(field.smallest_length, rel=1e-12)


# ------------------------------------------------------------------ what is refused, and why
def test_refusals_name_the_reason():
    grid = mf.CircleGrid(32)
    mu0 = mf.Density(grid, (1 + 0.1 * np.cos(grid.angles)) / (2 * np.pi))
    model = _ngpt()
    with pytest.raises(ValueError, match="spectral sums do not give"):
        mf.solve(model, mu0, (0, 0.1), strategy="spectral")
    for representation in ("lagrangian", "nodes", "panels", ("grid", "nodes")):
        with pytest.raises(ValueError, match=r"div\(A/\|A\|\)"):
            mf.solve(model, mu0, (0, 0.1), representation=representation)
    # the default chain is the grid alone (no hand-over to a Lagrangian measure that would refuse it)
    assert mf.solve(model, mu0, (0, 0.1)).representation == ("grid", "grid")
    zgrid = zonal_domain(8).make_grid({"lmax": 16})
    with pytest.raises(ValueError, match="nGPT densities run on the circle and S²"):
        mf.solve(_ngpt(), mf.Density.uniform(zgrid), (0, 0.1))


# ------------------------------------------------------------------ against the particles
def _meanfield_exponent(domain, grid, ns, repeats, dt=0.05):
    from meanfield import laws
    from validation.meanfield_limit import meanfield_limit

    mu0 = mf.Density.from_function(grid, laws.uniform_noise(domain, 0.3, 3, rng=1))
    # RK4 at dt = 0.05: a time error ~1e-5 against the sampling error N^(-1/2) >= 0.03
    return meanfield_limit(_ngpt(), mu0, ns, [0.0, 1.0, 2.0], repeats=repeats, rng=0, dt=dt)


@pytest.mark.slow  # ~50 s: 108 exact circle distances against the density quantised to 2^20 atoms
def test_meanfield_limit_on_the_circle():
    """nGPT tokens drawn iid from the density and moved by particles.simulate: W_1 to the grid's density at t = 2
    decays like N^(-1/2) (the 95 % interval of the fitted exponent holds −½; N = 10² … 10³, 12 repeats: nGPT's
    particles sum pairwise, O(N²); scripts/ngpt_meanfield_limit.py goes to 3·10³)."""
    r = _meanfield_exponent("circle", mf.CircleGrid(256), [100, 316, 1000], 12)
    lo, hi = r.exponent_ci[-1]
    assert lo < -0.5 < hi and abs(r.exponent[-1] + 0.5) <= 0.15, (r.exponent, r.exponent_ci)


@pytest.mark.slow
def test_meanfield_limit_on_s2():
    """The same on S² (lmax 32, the moments; exact OT to the grid measure), N = 10² … 3·10³."""
    r = _meanfield_exponent("sphere", mf.SphereGrid(32), [100, 316, 1000, 3162], 6)
    lo, hi = r.exponent_ci[-1]
    assert lo < -0.5 < hi, (r.exponent, r.exponent_ci)
