"""Time-dependent weights Q(t), K(t), V(t), β(t) (CACP; docs/MATH.md §8): schedules of layers and callables.

Asserted: the Gaussian closures with three-layer schedules (softmax, L2 in R²) against the Lagrangian measure on
Gauss–Hermite nodes (affine flow: exact up to the integrator) and the R² grid (convergence in h); smooth callables
against an ODE written out here; the time change of V(t) = v(t) I on S¹ and S² (the solution at t is the constant
one at τ(t) = ∫_0^t v); the support bound R(t) <= exp(∫‖V‖) R_0 on R^d particles; the layer boundaries hit exactly;
and the errors for bad schedules and callables.
"""

import numpy as np
import pytest
from scipy.integrate import quad, solve_ivp

import meanfield as mf
import particles
from meanfield.analysis import gaussian
from meanfield.lagrangian import start_gaussian
from meanfield.models import L2, SelfAttention, Softmax, layers
from tests.helpers import smooth_density

_A = [np.array([[0.5, 0.2], [-0.1, 0.3]]), np.array([[-0.2, 0.4], [0.3, 0.1]]), np.array([[0.3, 0.0], [0.2, -0.4]])]
_V = [np.array([[1.0, 0.3], [0.0, 0.8]]), np.array([[-0.5, 0.2], [0.4, 0.6]]), np.array([[0.7, -0.3], [0.1, 0.2]])]
_DEPTHS = [0.4, 0.3, 0.5]
_M0, _C0 = np.array([0.5, -0.3]), np.array([[0.5, 0.1], [0.1, 0.3]])


def _layered(name):
    Q, V = layers(_A, _DEPTHS), layers(_V, _DEPTHS)
    return Softmax(Q=Q, V=V) if name == "softmax" else L2(Q=Q, V=V, tau=2.0)


def _moments(f):
    m = f.mean()
    return m, (f.weights[:, None] * (f.points - m)).T @ (f.points - m)


@pytest.mark.parametrize("name", ["softmax", "l2"])
def test_three_layer_closures_against_the_lagrangian_measure(name):
    """From N(m0, C0) the flow of every layer is affine, so the Gauss–Hermite nodes carry the closure's mean and
    covariance exactly through the three layers: to 1e-10 at the boundaries and between them."""
    model = _layered(name)
    t_eval = [0.2, 0.4, 0.55, 0.7, 1.2]
    sol = mf.solve(model, start_gaussian(_M0, _C0, 24), (0, 1.2), t_eval=t_eval, rtol=1e-13, atol=1e-14)
    ref = gaussian.solve_gaussian(model, _M0, _C0, [0.0] + t_eval)
    assert sol.status == mf.Status.SUCCESS
    for f, mean, cov in zip(sol.densities, ref.mean[1:], ref.cov[1:]):
        m, C = _moments(f)
        assert np.max(np.abs(m - mean)) <= 1e-10 and np.max(np.abs(C - cov)) <= 1e-10, (name, f.t)
    # the layers matter: the schedule's solution is not the first layer's
    first = gaussian.solve_gaussian(Softmax(Q=_A[0], V=_V[0]) if name == "softmax" else L2(Q=_A[0], V=_V[0], tau=2.0),
                                    _M0, _C0, [0.0, 1.2])
    assert np.max(np.abs(first.cov[-1] - ref.cov[-1])) > 1e-2


def _closure_ode(A_of_t, V_of_t, t_eval):
    """Softmax in R^d on N(m, Σ), written out: the tilt of N(m, Σ) by exp(yᵀA x) is N(m + ΣAx, Σ), so
    X(x) = V(m + ΣAx) and ṁ = V(m + ΣAm), Σ̇ = VΣAΣ + ΣAᵀΣVᵀ."""
    d = _M0.size

    def rhs(t, y):
        m, S = y[:d], y[d:].reshape(d, d)
        A, V = A_of_t(t), V_of_t(t)
        return np.concatenate([V @ (m + S @ A @ m), (V @ S @ A @ S + S @ A.T @ S @ V.T).ravel()])

    sol = solve_ivp(rhs, (0, t_eval[-1]), np.concatenate([_M0, _C0.ravel()]), t_eval=t_eval, method="Radau",
                    rtol=1e-13, atol=1e-15)
    return sol.y[:d].T, sol.y[d:].T.reshape(-1, d, d)


def test_smooth_callables_against_the_written_out_ode():
    """Q(t), V(t) smooth callables (K = I): the closure, the Lagrangian measure and an independent Radau solve of the
    written-out ODE agree to 1e-10."""
    A_of_t = lambda t: np.array([[0.5 * np.cos(t), 0.2], [-0.1, 0.3 + 0.2 * np.sin(2 * t)]])  # noqa: E731
    V_of_t = lambda t: np.array([[1.0, 0.3 * np.sin(t)], [0.1 * t, 0.8]])  # noqa: E731
    model = Softmax(Q=A_of_t, V=V_of_t)
    t_eval = [0.5, 1.0, 1.5]
    mean, cov = _closure_ode(A_of_t, V_of_t, t_eval)
    ref = gaussian.solve_gaussian(model, _M0, _C0, [0.0] + t_eval)
    assert np.max(np.abs(ref.mean[1:] - mean)) <= 1e-10 and np.max(np.abs(ref.cov[1:] - cov)) <= 1e-10
    sol = mf.solve(model, start_gaussian(_M0, _C0, 24), (0, 1.5), t_eval=t_eval, rtol=1e-13, atol=1e-14)
    for f, m_ref, C_ref in zip(sol.densities, mean, cov):
        m, C = _moments(f)
        assert np.max(np.abs(m - m_ref)) <= 1e-10 and np.max(np.abs(C - C_ref)) <= 1e-10


@pytest.mark.filterwarnings("ignore:.*has left the box")  # the Gaussian's tail beyond 7σ: < 1e-7, below the errors
def test_three_layer_closure_on_the_grid_converges():
    """The R² grid through the three softmax layers: the mean and covariance errors against the closure fall at
    order >= 2 in h (the scheme's own order or better; the field jumps at the boundaries, where the steps land)."""
    model = _layered("softmax")
    T = 1.0
    ref = gaussian.solve_gaussian(model, _M0, _C0, [0.0, T])
    errors = []
    for n in (48, 96):
        grid = mf.EuclideanGrid([(-6.0, 6.0)] * 2, n)
        mu0 = gaussian.gaussian_density(grid, _M0, _C0)
        f = mf.solve(model, mu0, (0, T), t_eval=[T]).densities[-1]
        _, m, C = grid.moments(f.values)
        errors.append(max(np.max(np.abs(m - ref.mean[-1])), np.max(np.abs(C - ref.cov[-1]))))
    order = np.log2(errors[0] / errors[1])
    assert order >= 1.9 and errors[1] <= 2e-2, (errors, order)


@pytest.mark.parametrize("domain", ["circle", "sphere"])
def test_time_change_of_the_value_matrix(domain):
    """Q = K = I, V(t) = v(t) I: X[μ](x) = v(t) X_1[μ](x), so μ_t = μ¹_{τ(t)} with τ(t) = ∫_0^t v, μ¹ the solution
    with V = I. Checked for a smooth callable v and a schedule of layers, on the grid, to 1e-10."""
    beta = 1.5
    if domain == "circle":
        mu0, d = smooth_density(128), 2
    else:
        mu0 = mf.Density.from_function(mf.SphereGrid(32), lambda x: 1 + 0.5 * x[..., 0] + 0.3 * x[..., 1] * x[..., 2])
        d = 3
    v = lambda t: 1.0 + 0.5 * np.sin(3 * t)  # noqa: E731
    T = 0.8
    tau = quad(v, 0, T, epsabs=1e-15)[0]
    opts = dict(method="dop853", rtol=1e-13, atol=1e-15, refine=False)
    timed = mf.solve(SelfAttention(beta, V=lambda t: v(t) * np.eye(d)), mu0, (0, T), t_eval=[T], **opts)
    const = mf.solve(SelfAttention(beta), mu0, (0, tau), t_eval=[tau], **opts)
    assert np.max(np.abs(timed.densities[-1].values - const.densities[-1].values)) <= 1e-10
    sched = SelfAttention(beta, V=layers([0.5 * np.eye(d), 2.0 * np.eye(d)], [0.4, 0.4]))
    timed = mf.solve(sched, mu0, (0, T), t_eval=[T], **opts)
    const = mf.solve(SelfAttention(beta), mu0, (0, 1.0), t_eval=[1.0], **opts)
    assert np.max(np.abs(timed.densities[-1].values - const.densities[-1].values)) <= 1e-10


def test_time_dependent_beta_is_a_time_change_too():
    """β(t) changes the kernel, not just the speed: the schedule's first layer alone matches the constant model up
    to its boundary, then the two differ (the boundary is where the integrator stops)."""
    mu0 = smooth_density(64)
    model = SelfAttention(layers([1.0, 4.0], [0.5, 0.5]))
    opts = dict(rtol=1e-12, atol=1e-14, representation="grid", refine=False)
    a = mf.solve(model, mu0, (0, 1.0), t_eval=[0.5, 1.0], **opts)
    b = mf.solve(SelfAttention(1.0), mu0, (0, 1.0), t_eval=[0.5, 1.0], **opts)
    assert np.max(np.abs(a.densities[0].values - b.densities[0].values)) <= 1e-11
    assert np.max(np.abs(a.densities[1].values - b.densities[1].values)) > 1e-3


@pytest.mark.parametrize("kind", ["layers", "callable"])
def test_support_bound_with_time_dependent_values(kind, rng):
    """R(t) <= exp(∫_0^t ‖V(s)‖ ds) R_0 (CACP) for softmax particles in R² whose V expands (positive definite), with
    the bound attained to within a factor: it is not vacuous."""
    from validation.stability import support_radius, support_radius_bound

    if kind == "layers":
        V = layers([np.eye(2), np.array([[1.5, 0.5], [0.5, 1.0]]), 0.3 * np.eye(2)], [0.3, 0.3, 0.4])
    else:
        V = lambda t: (1.0 + t) * np.array([[1.0, 0.2], [0.2, 0.8]])  # noqa: E731
    model = Softmax(Q=0.2 * np.eye(2), V=V)
    x0 = rng.standard_normal((200, 2))
    t = np.linspace(0, 1.0, 11)
    traj = particles.simulate(model, x0, t, dt=1e-3)
    R = support_radius(traj.x)
    bound = support_radius_bound(model, t, R[0])
    assert np.all(R <= bound * (1 + 1e-12))
    assert R[-1] >= 0.1 * bound[-1]


def test_particles_land_on_layer_boundaries():
    """With a fixed RK4 step that does not divide the layers, the schedule's particles still match two constant runs
    chained at the boundary (the step is cut there), to round-off."""
    x0 = particles.uniform_sphere(30, 3, rng=np.random.default_rng(0))
    model = SelfAttention(2.0, V=layers([np.eye(3), -0.5 * np.eye(3)], [0.33, 1.0]))
    a = particles.simulate(model, x0, [0.0, 0.33, 0.6], dt=0.05).x
    b1 = particles.simulate(SelfAttention(2.0), x0, [0.0, 0.33], dt=0.05).x[-1]
    b2 = particles.simulate(SelfAttention(2.0, V=-0.5 * np.eye(3)), b1, [0.33, 0.6], dt=0.05).x[-1]
    assert np.max(np.abs(a[-1] - b2)) <= 1e-13


# ------------------------------------------------------------------ bad input
def test_a_callable_of_the_wrong_shape_is_named_with_its_time():
    model = Softmax(Q=lambda t: np.eye(3) if t > 0.5 else np.eye(2))
    x0 = np.random.default_rng(0).standard_normal((10, 2))
    with pytest.raises(ValueError, match=r"t = 0\.[56].*`Q`"):
        particles.simulate(model, x0, [0.0, 1.0], dt=0.1)


def test_a_callable_with_a_nonfinite_entry_is_named():
    model = SelfAttention(1.0, V=lambda t: np.full((3, 3), np.nan) if t >= 0.2 else np.eye(3))
    x0 = particles.uniform_sphere(10, 3, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"`V`.*t = 0\.2"):
        particles.simulate(model, x0, [0.0, 1.0], dt=0.1)


def test_a_callable_beta_is_checked():
    model = SelfAttention(lambda t: float("nan"))  # (β < 0 is repulsive attention, accepted: MATH.md §13)
    with pytest.raises(ValueError, match="beta"):
        model.at(0.0)


def test_a_callable_beta_turning_repulsive_is_refused_where_the_density_solver_needs_beta_positive():
    """β(t) < 0 met during a run: the S² grid's sums are wrong there (its multipliers are β >= 0's), so the run stops
    naming β < 0 and the time (a constant β < 0 is refused before the run the same way); on the circle, which takes
    β < 0, a callable is the constant's run bit for bit."""
    import meanfield as mf

    mu = mf.Density.from_function(mf.SphereGrid(12), lambda x: np.exp(x[..., 0]))
    for beta in (-3.0, lambda t: -3.0, lambda t: 1.0 - 4.0 * t):  # the last turns negative at t = 0.25
        with pytest.raises(ValueError, match="β < 0"):
            mf.solve(SelfAttention(beta), mu, (0.0, 0.5), dt=0.01, representation="grid", refine=False,
                     monitor=mf.ResolutionMonitor(tail_tol=1e-3))  # lmax 12 kept to reach t = 0.25: not accuracy
    circle = mf.Density.from_function(mf.CircleGrid(64), lambda x: np.exp(x[..., 0]))
    runs = [mf.solve(SelfAttention(beta), circle, (0.0, 0.5), dt=0.01, representation="grid", refine=False)
            for beta in (-3.0, lambda t: -3.0)]
    assert np.array_equal(runs[0].frames[-1].values, runs[1].frames[-1].values)


@pytest.mark.parametrize("depths", [0.0, [1.0, -1.0], np.inf, [1.0, 2.0, 3.0]])
def test_bad_depths_are_refused(depths):
    with pytest.raises(ValueError, match="depths"):
        layers([np.eye(2), np.eye(2)], depths)


def test_layers_of_different_sizes_are_refused():
    with pytest.raises(ValueError, match="layer 1"):
        Softmax(V=layers([np.eye(2), np.eye(3)]))


def test_a_time_dependent_model_refuses_a_constant_question():
    model = SelfAttention(1.0, V=layers([np.eye(3), 2 * np.eye(3)]))
    with pytest.raises(TypeError, match=r"model\.at\(t\)"):
        model.field(np.array([[1.0, 0, 0]]), np.ones(1), np.array([[1.0, 0, 0]]))
    assert model.at(1.5).V[0, 0] == 2.0 and model.at(0.2).V[0, 0] == 1.0
