r"""Tokens with natural frequencies on the circle: θ̇_i = ω_i + X[μ^n](θ_i) (GLPR §7; docs/MATH.md §11).

The particles are unit vectors x_i = (cos θ_i, sin θ_i); the field X[μ^n] is the attention's, summed by the
strategies of :func:`particles.velocity` (pairwise for few particles, the O(nL) spectral sums of the circle from
1024 on), and the frequency turns each token, ẋ_i = X(x_i) + ω_i J x_i, J the rotation by π/2. In the complex
coordinate z_i = x_{i,1} + i x_{i,2} the rotation is the diagonal linear part iω_i z_i, integrated exactly by
Lawson's integrating-factor RK4 (:func:`meanfield.integrate.lawson_rk4`): a token of large |ω| (the Lorentzian's
heavy tail puts some at |ω| ~ γN) turns exactly and never limits the step; the field is evaluated at the stage
points' retractions (the 0-homogeneous extension of :func:`particles.simulate`), and the state is retracted onto
the circle after each step. With ω = 0 this is :func:`particles.simulate`'s system, advanced by RK4.

:func:`lohe` is the same on S^{d-1} for any d (the Lohe model; docs/MATH.md §11 is its circle): each token turns
by its own skew matrix, ẋ_i = Ω_i x_i + X[μ^n](x_i), Ω_i given per token or drawn from a finite law (nodes and
probabilities, the particles of :class:`meanfield.solvers.frequencies.RotationGrid`'s densities); on the circle Ω = ωJ is a
frequency ω.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meanfield.core import checks
from meanfield.solvers.frequencies import FrequencyLaw, frequency_law
from meanfield.domains import unit_sphere
from meanfield.integrate import FiniteTracker, Integrator, InterruptTracker, OutputTracker, Problem, Stages
from meanfield.models import as_model, rate_scale

from .system import SplittingStepper, initial_points, velocity

__all__ = ["simulate", "KuramotoTrajectory", "lohe", "LoheTrajectory"]


@dataclass(frozen=True)
class KuramotoTrajectory:
    """Tokens with natural frequencies over time.

    Attributes
    ----------
    t : ndarray, shape (T,)
    x : ndarray, shape (T, [batch,] n, 2)
        Unit vectors.
    omega : ndarray, shape ([batch,] n)
        The frequencies ω_i.
    weights : ndarray, shape ([batch,] n)
    nfev, nsteps : int
    """

    t: np.ndarray
    x: np.ndarray
    omega: np.ndarray
    weights: np.ndarray
    nfev: int
    nsteps: int

    @property
    def theta(self) -> np.ndarray:
        """θ_i in [0, 2π), shape (T, [batch,] n)."""
        return np.mod(np.arctan2(self.x[..., 1], self.x[..., 0]), 2.0 * np.pi)

    @property
    def z(self) -> np.ndarray:
        """∫ e^{iθ} dμ^n = Σ_i w_i e^{iθ_i}, shape (T, [batch])."""
        return np.sum(self.weights * (self.x[..., 0] + 1j * self.x[..., 1]), axis=-1)

    @property
    def order(self) -> np.ndarray:
        """r = |z|."""
        return np.abs(self.z)


class _Rotating(Problem):
    """ż = iωz + N(z): the field in the complex coordinate, the rotation as the stages' diagonal linear part."""

    def __init__(self, model, omega, weights, strategy):
        self.model, self.omega, self.weights, self.strategy = model, omega, weights, strategy

    @staticmethod
    def encode(y):
        return y[..., 0] + 1j * y[..., 1]

    @staticmethod
    def decode(z):
        return np.stack([z.real, z.imag], axis=-1)

    def field(self, y):
        u = y / np.linalg.norm(y, axis=-1, keepdims=True)
        return velocity(self.model, u, weights=self.weights, strategy=self.strategy)

    def nonlinear(self, z):
        return self.encode(self.field(self.decode(z)))

    def rate(self, y):
        return self.field(y) + self.omega[..., None] * np.stack([-y[..., 1], y[..., 0]], axis=-1)

    def stages(self):
        return Stages(self.encode, self.decode, self.nonlinear, 1j * self.omega)

    def retract(self, y):
        return y / np.linalg.norm(y, axis=-1, keepdims=True)


def _frequencies(omega, shape, rng):
    """ω of the tokens' shape ([batch,] n): an array (broadcast from (n,) over a batch), or a law sampled with rng."""
    if isinstance(omega, FrequencyLaw) or callable(omega):
        law = frequency_law(omega)  # TypeError for a bare function of ω
        return law.sample(shape, rng)
    w = np.array(omega, dtype=float)
    if w.shape != shape:
        if w.ndim == 1 and len(shape) == 2 and w.shape[0] == shape[1]:
            w = np.broadcast_to(w, shape).copy()
        else:
            raise ValueError(f"`omega` must hold one frequency per token, shape {shape} (or ({shape[-1]},) for a "
                             f"batch), got shape {w.shape}.")
    if not np.all(np.isfinite(w)):
        raise ValueError("`omega` contains non-finite frequencies.")
    return w


def simulate(model, x0, omega, t_eval, dt: float | None = None, rng=None, *, weights=None,
             strategy: str = "auto") -> KuramotoTrajectory:
    r"""Tokens θ̇_i = ω_i + X[μ^n](θ_i) on the circle (module docstring; docs/MATH.md §11).

    Parameters
    ----------
    model : SelfAttention or MultiHeadAttention
        The attention in d = 2 (constant weights). With noise D > 0 each token also diffuses, dθ_i = (ω_i +
        X(θ_i)) dt + √(2D) dB_i: Strang-split steps (:class:`particles.system.SplittingStepper`), the drift — rotation
        included, then by RK4, so keep |ω| dt small — and the circle's exact Brownian step, increments from ``rng``.
    x0 : array_like, shape (n, 2) or (batch, n, 2), or tuple
        Unit vectors, or ``(density, n[, batch])`` drawn iid with ``rng`` (:func:`particles.simulate`).
    omega : array_like, shape ([batch,] n) or (n,), or FrequencyLaw
        The frequencies, one per token; a law (:class:`meanfield.solvers.frequencies.Lorentzian`, ``Gaussian``,
        ``Discrete``) is sampled iid with ``rng`` after ``x0`` (independent of the angles).
    t_eval : array_like, shape (T,)
        Increasing output times; ``t_eval[0]`` is the initial time.
    dt : float, optional
        Largest step (each output interval cut into equal steps); default 0.05 / rate_scale(model), the step of
        :func:`particles.simulate` (the rotation is exact and does not limit it).
    rng : int, Generator or None
        For drawing ``x0`` and ``omega`` (required where either is drawn) and the noise's increments (required with
        noise).
    weights : array_like, optional
        Token weights (default 1/n).
    strategy : str
        The field's sums (:func:`particles.velocity`).

    Returns
    -------
    KuramotoTrajectory
    """
    model = as_model(model)
    noise = float(model.noise)
    if noise and rng is None:
        raise ValueError(f"`model` has noise = {noise:g}: give `rng` (a seed or a numpy Generator) for its Brownian "
                         "increments.")
    if model.time_dependent:
        raise ValueError(f"`model` {model!r} has time-dependent weights: natural frequencies take constant weights.")
    t_eval = checks.output_times(t_eval)
    gen = checks.generator(rng) if rng is not None else None
    # with noise, the Brownian increments come from the same generator, after x0 and omega are drawn
    drawn = isinstance(x0, tuple) or isinstance(omega, FrequencyLaw)
    if drawn and gen is None:
        raise ValueError("`rng` is required where `x0` or `omega` is drawn (a seed or a numpy Generator), so the draw "
                         "can be repeated.")
    x0 = np.asarray(x0, dtype=float) if not isinstance(x0, tuple) else x0
    if not isinstance(x0, tuple) and x0.shape[-1:] != (2,):
        raise ValueError(f"tokens with natural frequencies live on the circle: `x0` must hold unit vectors of R², got "
                         f"shape {x0.shape}.")
    circle = unit_sphere(2)
    x = initial_points(x0, gen, circle)  # the circle's own checks of its points
    if x.shape[-1] != circle.dim:  # drawn from a density of another domain
        raise ValueError(f"tokens with natural frequencies live on the circle: `x0` was drawn on R^{x.shape[-1]}.")
    w_omega = _frequencies(omega, x.shape[:-1], gen)
    w = checks.particle_weights(weights, x.shape[:-1])
    h = checks.positive(dt, "dt") if dt is not None else 0.05 / max(rate_scale(model), 1e-300)
    velocity(model, x, weights=w, strategy=strategy)  # the strategy checked once, before any step
    problem = _Rotating(model, w_omega, w, strategy)
    outputs = OutputTracker()
    stepper = None
    if noise:  # Strang splitting: the drift (rotation and field) by RK4, the circle's Brownian step exact
        circle = unit_sphere(2)
        stepper = lambda f, t, y, t_bound: SplittingStepper(f, t, y, t_bound, h, noise, circle, gen)  # noqa: E731
    integrator = Integrator(problem, "rk4", dt=h, subdivide=True,
                            trackers=[FiniteTracker(), outputs, InterruptTracker()], stepper=stepper)
    integrator.run(t_eval[0], x, t_eval)
    return KuramotoTrajectory(t=t_eval.copy(), x=np.stack(outputs.states), omega=w_omega, weights=w,
                              nfev=integrator.nfev, nsteps=integrator.nsteps)


# --------------------------------------------------------------------------------------------- the Lohe model
@dataclass(frozen=True)
class LoheTrajectory:
    """Tokens turning by their own skew matrices Ω_i over time (:func:`lohe`).

    Attributes
    ----------
    t : ndarray, shape (T,)
    x : ndarray, shape (T, [batch,] n, d)
        Unit vectors.
    omega : ndarray, shape ([batch,] n, d, d)
        Each token's Ω_i.
    node : ndarray of int, shape ([batch,] n), or None
        The index of each token's node where Ω was drawn from a finite law; None where given per token.
    weights : ndarray, shape ([batch,] n)
    nfev, nsteps : int
    """

    t: np.ndarray
    x: np.ndarray
    omega: np.ndarray
    node: np.ndarray | None
    weights: np.ndarray
    nfev: int
    nsteps: int


class _Turning(Problem):
    """ẏ_i = Ω_i y_i + X[μ^n](y_i/|y_i|): the field at the stage points' retractions (as :func:`particles.simulate`),
    the rotation linear in y; retracted onto the sphere after each step."""

    def __init__(self, model, omega, weights, strategy):
        self.model, self.omega, self.weights, self.strategy = model, omega, weights, strategy

    def rate(self, y):
        u = y / np.linalg.norm(y, axis=-1, keepdims=True)
        return velocity(self.model, u, weights=self.weights, strategy=self.strategy) + \
            np.einsum("...ij,...j->...i", self.omega, y)

    def retract(self, y):
        return y / np.linalg.norm(y, axis=-1, keepdims=True)


def _skew(O, name: str):
    """``O`` (shape (..., d, d)) checked finite and skew, Ω^T = −Ω to round-off (the generator of a rotation)."""
    if not np.all(np.isfinite(O)):
        raise ValueError(f"`{name}` contains non-finite entries.")
    asym = float(np.max(np.abs(O + np.swapaxes(O, -1, -2)), initial=0.0))
    if asym > 1e-14 * max(1.0, float(np.max(np.abs(O), initial=0.0))):
        at = np.unravel_index(int(np.argmax(np.abs(O + np.swapaxes(O, -1, -2)))), O.shape)
        raise ValueError(f"`{name}` must hold skew matrices (Ω^T = −Ω: a rotation's generator keeps tokens on the "
                         f"sphere); |Ω + Ω^T| = {asym:.3g} at index {tuple(int(i) for i in at)}.")
    return O


def _rotations(omega, shape, d, rng):
    """Ω_i of the tokens' shape ([batch,] n) + (d, d), and each token's node index: per-token matrices (broadcast from
    (n, d, d) over a batch), or a law ``(nodes, probabilities)`` sampled iid with rng."""
    if isinstance(omega, tuple):
        if len(omega) != 2:
            raise ValueError(f"`omega` as a law is a pair (nodes, probabilities), got a tuple of {len(omega)}.")
        nodes = _skew(np.array(omega[0], dtype=float), "omega[0]")
        if nodes.ndim != 3 or nodes.shape[1:] != (d, d):
            raise ValueError(f"`omega[0]` must hold the law's nodes, shape (J, {d}, {d}), got shape {nodes.shape}.")
        p = np.array(omega[1], dtype=float)
        if p.shape != nodes.shape[:1] or not np.all(p >= 0) or abs(p.sum() - 1.0) > 1e-12:
            raise ValueError(f"`omega[1]` must be {nodes.shape[0]} non-negative probabilities summing to 1, got "
                             f"{omega[1]!r}.")
        node = rng.choice(p.size, size=shape, p=p)
        return nodes[node], node
    O = _skew(np.array(omega, dtype=float), "omega")
    full = tuple(shape) + (d, d)
    if O.shape != full:
        if O.ndim == 3 and len(shape) == 2 and O.shape == full[1:]:
            O = np.broadcast_to(O, full).copy()
        else:
            raise ValueError(f"`omega` must hold one {d}×{d} skew matrix per token, shape {full} (or {full[1:]} for "
                             f"a batch), or be a law (nodes, probabilities); got shape {O.shape}.")
    return O, None


def lohe(model, x0, omega, t_eval, dt: float | None = None, rng=None, *, weights=None,
         strategy: str = "auto") -> LoheTrajectory:
    r"""Tokens ẋ_i = Ω_i x_i + X[μ^n](x_i) on S^{d-1}, each turning by its own skew matrix (module docstring).

    Parameters
    ----------
    model : SelfAttention or MultiHeadAttention
        The attention (constant weights, no noise).
    x0 : array_like, shape (n, d) or (batch, n, d), or tuple
        Unit vectors, or ``(density, n[, batch])`` drawn iid with ``rng`` (:func:`particles.simulate`).
    omega : array_like, shape ([batch,] n, d, d) or (n, d, d), or tuple
        Skew matrices Ω_i (Ω^T = −Ω), one per token; or a finite law ``(nodes, probabilities)``, nodes of shape
        (J, d, d) — e.g. ``(grid.omegas, grid.weights)`` of a :class:`meanfield.solvers.frequencies.RotationGrid` — each
        token's node drawn iid with ``rng`` after ``x0`` (independent of the positions).
    t_eval : array_like, shape (T,)
        Increasing output times; ``t_eval[0]`` is the initial time.
    dt : float, optional
        Largest RK4 step (each output interval cut into equal steps); default 0.05 / max(rate_scale(model), max|Ω|)
        (the rotation is integrated by RK4 too: its error is O((|Ω| dt)⁴) per unit time).
    rng : int, Generator or None
        For drawing ``x0`` and ``omega`` (required where either is drawn).
    weights : array_like, optional
        Token weights (default 1/n).
    strategy : str
        The field's sums (:func:`particles.velocity`).

    Returns
    -------
    LoheTrajectory
    """
    model = as_model(model)
    if model.noise:
        raise ValueError(f"`model` has noise = {float(model.noise):g}: the Lohe particles take no noise.")
    if model.time_dependent:
        raise ValueError(f"`model` {model!r} has time-dependent weights: the Lohe particles take constant weights.")
    t_eval = checks.output_times(t_eval)
    drawn = isinstance(x0, tuple) or isinstance(omega, tuple)
    if drawn and rng is None:
        raise ValueError("`rng` is required where `x0` or `omega` is drawn (a seed or a numpy Generator), so the draw "
                         "can be repeated.")
    gen = checks.generator(rng) if rng is not None else None
    x = initial_points(x0 if isinstance(x0, tuple) else np.asarray(x0, dtype=float), gen, None)  # unit vectors
    d = x.shape[-1]
    O, node = _rotations(omega, x.shape[:-1], d, gen)
    w = checks.particle_weights(weights, x.shape[:-1])
    spin = float(np.max(np.abs(np.linalg.eigvals(O)))) if O.size and np.any(O) else 0.0
    h = checks.positive(dt, "dt") if dt is not None else 0.05 / max(rate_scale(model), spin, 1e-300)
    velocity(model, x, weights=w, strategy=strategy)  # the strategy checked once, before any step
    outputs = OutputTracker()
    integrator = Integrator(_Turning(model, O, w, strategy), "rk4", dt=h, subdivide=True,
                            trackers=[FiniteTracker(), outputs, InterruptTracker()])
    integrator.run(t_eval[0], x, t_eval)
    return LoheTrajectory(t=t_eval.copy(), x=np.stack(outputs.states), omega=O, node=node, weights=w,
                          nfev=integrator.nfev, nsteps=integrator.nsteps)
