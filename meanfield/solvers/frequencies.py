r"""Natural frequencies on the circle: Kuramoto disorder in self-attention (GLPR §7; docs/MATH.md §11).

Tokens carry frequencies ω drawn from a law g and move by θ̇_i = ω_i + X[μ](θ_i). The density ρ(θ, ω, t) on
S¹ × ℝ_ω solves

.. math:: ∂_t ρ + ∂_θ\big(ρ\,(ω + X[\bar ρ](θ))\big) = 0,\qquad \bar ρ(θ, t) = \int ρ(θ, ω, t)\,g(ω)\,dω,

ω never moves (ρ(·, ω) is the law of θ given ω, of mass 1 for every ω). Here ω is put on the nodes ω_j of a
finite quadrature of g with weights w_j (Σ w_j = 1): one circle density ρ_j(θ, t) per node, advected by
ω_j + X[ρ̄](θ), ρ̄ = Σ_j w_j ρ_j, the nodes coupled through the field of the marginal only.

The density is a :class:`FrequencyDensity` on a :class:`FrequencyGrid` (the circle grid × the quadrature), of the
product domain :data:`~meanfield.domains.products.FREQUENCIES`: :func:`meanfield.solve` advances it by the
"frequencies" representation (:class:`FrequencyRepresentation`) on the one integrator and monitor, and
:func:`solve` is the documented entry point, a view of that :class:`~meanfield.Solution` (:class:`FrequencySolution`).

With noise D > 0 (``SelfAttention(..., noise=D)``) each node's density also diffuses, ∂_t ρ_j + ∂_θ(ρ_j(ω_j +
X[ρ̄])) = D∂²_θρ_j: the linear part of its coefficients gains −Dk², integrated exactly with the rotation; about the
incoherent state the rate of mode k is the noiseless one with −Dk² added (the dispersion relation's λ is shifted by
Dk² for every ω). Nodes then do not hand over to atoms (atoms cannot diffuse).

Frequency laws (:class:`Lorentzian`, :class:`Gaussian`, :class:`Discrete`) give their quadratures
(:class:`Quadrature`) and iid samples for particles (:meth:`FrequencyLaw.sample`, an explicit ``rng``). A law
without a finite quadrature (a density given as a function) is refused: the solver needs nodes.

The Lorentzian's quadratures
----------------------------
- ``Lorentzian.pole()``: **one node at the pole ω_0 − iγ**, exact for first-harmonic fields (β = 0: the Kuramoto
  field c Im(z e^{−iθ}), any V). For a start independent of ω (any initial density ρ_0(θ), every token's angle drawn
  from it whatever its frequency) the Fourier coefficients ρ̂_k(ω, t) = (1/2π)∫ρ e^{−ikθ}dθ, k >= 1, obey
  ∂_t ρ̂_k = −ikω ρ̂_k − ik Σ_l X̂_l ρ̂_{k−l}; with X of degree one (l = 0, ±1) the right-hand side holds only the
  coefficients k − 1 >= 0 and k + 1, so the modes k >= 0 close on themselves, are analytic and bounded in ω in the
  lower half-plane for all t (e^{−ikωt} is bounded there), and closing the contour below, ∫ g(ω) ρ̂_k(ω, t) dω =
  ρ̂_k(ω_0 − iγ, t) (residue of g at its pole; Ott & Antonsen, Chaos 18, 037113, 2008). The node's "density" is the
  real function with the coefficients ρ̂_k(ω_0 − iγ), k >= 0 (the negative ones their conjugates): it *is* the
  marginal, advanced by ∂_t ρ̂_k = −ikω_0 ρ̂_k − kγ ρ̂_k + (the field's term). This is the quadrature that makes the
  Ott–Antonsen reduction exact on the computer; per-node data that depend on ω are refused with it.
  **For β > 0** the field's harmonics l >= 2 couple ρ̂_k to ρ̂_{k−l} with k − l < 0, the conjugates of coefficients
  that grow like e^{|k−l| γ t} below the axis: the contour does not close, and the pole solves another model — the
  marginal under Cauchy noise −γ|k| (Lévy flights of the angles), whose linear rates about the incoherent state are
  the Lorentzian's (exact) but whose nonlinear dynamics are not (USA β = 2, γ = 1 from f_{0.5}: |z(1)| 0.376
  against 0.422 for 10⁵ tokens with Cauchy frequencies, 0.425 for 256 real nodes). :func:`solve` refuses it there
  unless ``cauchy_noise=True`` asks for that model.
- ``Lorentzian.quadrature(J)``: J real nodes ω_j = ω_0 + γ tan φ_j, φ_j = −π/2 + π(j + ½)/J, w_j = 1/J: the
  substitution ω = ω_0 + γ tan φ maps g(ω)dω to dφ/π on (−π/2, π/2), and in ζ = e^{2iφ} = (γ + i(ω − ω_0))/(γ − i(ω
  − ω_0)) (the Cayley map of the upper half-plane onto the unit disc) the rule is the J-point trapezoidal rule on the
  unit circle: exact for ζ^m, |m| < J, i.e. for every rational function of ω whose poles are ω_0 ± iγ of order < J,
  and geometrically convergent for functions analytic in an annulus |ζ| ∈ (ρ, 1/ρ). The dispersion relation of the
  incoherent state, ∫ g(ω)/(λ + ikω) dω, is such a function (its pole maps to |ζ_*| = |kγ − λ|/(kγ + λ)): linear
  rates converge geometrically in J (exactly at λ = kγ). Gauss–Legendre in φ would lose that periodicity. But
  free streaming, ∫ g(ω) e^{−ikωt} dω = e^{−kγt}, is e^{−kγt(1−ζ)/(1+ζ)} in ζ, singular on the circle at ζ = −1
  (ω = ∞): its trapezoidal error decays like J^{−3/4} only (measured: 2e-2 at J = 64, 3e-3 at J = 1024 for kγt ~ 1),
  so phase mixing of the Lorentzian's heavy tails is not resolved by real nodes. Use the pole for the continuum.
- ``Lorentzian.bands(J)``: J complex nodes ω'_j − iδ, ω'_j the real nodes of Lorentzian(γ − δ), weights 1/J (δ = γ/2).
  Cauchy laws are stable (g_γ = g_{γ−δ} * g_δ): node j is the exact pole of the band of frequencies ω'_j + η,
  η ~ g_δ, and its "density" is that band's law of θ — a real probability density — whose free streaming carries
  e^{−kδt}: the finite sum over bands does not recur, and the synchronised state's r converges fast in J
  (docs/MATH.md §11). Exact, like the pole, for first-harmonic fields (β = 0) only; starts that depend on ω
  are refused.

The Gaussian's quadrature is Gauss–Hermite: exact for polynomials of degree < 2J; free streaming e^{−k²σ²t²/2} is
resolved until kσt ~ √J, after which the nodes re-phase (recurrence).

Resolution
----------
In θ every node is a trigonometric polynomial on the circle grid; its spectral tail (:meth:`CircleGrid.spectral_tail`
band) must stay below ``tail_tol``. Where a real node's does not — a locked frequency collapses to a point, as
clusters do — it is handed over to atoms (``handover``, default on; zonal models): the trapezoidal rule of its last
resolved state at the grid's midpoints, moved exactly by θ̇ = Re ω_j + X[ρ̄](θ) from then on, the field of the
marginal from its moments (grid nodes and atoms) through the circle's Bessel multipliers. Elsewhere (bands, the pole,
non-zonal models, ``handover=False``) the run stops, naming the node (no refinement here). In ω the
density filaments: ρ(θ, ω, t) carries e^{ik(θ − ωt)}, whose wavelength 2π/(kt) in ω shrinks without bound, and the
nodes stop resolving it. The solver measures this against the law's characteristic function φ(u) = ∫g e^{iuω}dω:
the quadrature's free-streaming error of mode k, E_k(t) = |Σ_j w_j e^{−ikω_j t} − φ(−kt)|, times the largest
amplitude A_k = Σ_j w_j|ρ̂_{j,k}|/ρ̄̂_0 of mode k met so far, must stay below ``omega_tol``; where it does not, the run
stops and says that the density has filamented in ω. This bounds what the nodes lose of the phase mixing of the
start; for modes the field creates later it is conservative (they have mixed for less than t). The pole and a
:class:`Discrete` law are exact (E_k = 0).

Time stepping
-------------
The linear part −ikω_j ρ̂_{j,k} (and the pole's −kγ) is diagonal in the coefficients and integrated exactly by
Lawson's integrating-factor RK4 (:func:`meanfield.integrate.lawson_rk4`), so fast nodes never limit stability; the
nonlinear part −∂_θ(ρ_j X[ρ̄]) is the circle solver's (the field of the marginal by the library's right-hand side
for the model, :meth:`~meanfield.domains.circle.CircleSpectral.angular_velocity`; products dealiased on the 3/2
grid; the divergence's k = 0 coefficient exactly zero, so every node's mass is conserved to round-off). The default
step is cfl × min(Δθ/max|X|, 1/max|∂_θX|, 1/L, 1/Ω), L = :func:`~meanfield.models.rate_scale`, Ω = max_j |Re ω_j|
(in the frame rotating with node j the field oscillates at frequency mΩ for its modes m: h·Ω bounds the phase a
stage sees).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..core import checks
from .. import kernels
from ..kernels import strategies
from ..density import Density, Frame
from ..domains import CIRCLE, CircleGrid
from ..domains import Measure
from ..domains import SPHERE
from ..domains.products import FREQUENCIES, ROTATIONS, ProductGrid
from ..domains.circle import fourier
from ..domains.circle.geometry import angles_to_points
from ..domains.circle.point_sums import circle_degree, fourier_moments, series_multipliers, zonal_scale
from ..integrate import FiniteTracker, Integrator, OutputTracker, Problem, Stages, Status, StopIntegration, Tracker
from ..models import heads, rate_scale
from ..models.normalization import density_refusal
from ..integrate.monitor import ResolutionError, ResolutionMonitor
from ..representations import Part, Representation, Settings, own_domain_refusal, register, run_to_end, solve_product
from ..representations.grid import step_bound

__all__ = ["FrequencyLaw", "Lorentzian", "Gaussian", "Discrete", "Quadrature", "frequency_law", "solve",
           "FrequencySolution", "order_parameter", "FrequencyGrid", "FrequencyDensity", "frequency_density",
           "frequency_solution", "FrequencyRepresentation", "RotationGrid", "RotationRepresentation"]


class Quadrature(NamedTuple):
    """A finite quadrature of a frequency law: ∫ f(ω) g(ω) dω ≈ Σ_j w_j f(ω_j).

    Attributes
    ----------
    nodes : ndarray, shape (J,)
        ω_j: real, or complex for the Lorentzian's pole and bands (module docstring), which act on the coefficients
        k >= 0.
    weights : ndarray, shape (J,)
        w_j > 0, Σ w_j = 1.
    rule : str
        "pole", "bands", "tan-trapezoid", "gauss-hermite" or "discrete".
    law : FrequencyLaw
        The law it integrates (its characteristic function measures the ω-resolution).
    """

    nodes: np.ndarray
    weights: np.ndarray
    rule: str
    law: object

    @property
    def exact(self) -> bool:
        """Whether free streaming is integrated exactly (the pole, a discrete law's own atoms)."""
        return self.rule in ("pole", "discrete")

    @property
    def real(self) -> bool:
        """Whether every node is a real frequency (per-node data and particles need real nodes)."""
        return not np.iscomplexobj(self.nodes)


class FrequencyLaw:
    """A law g of the natural frequencies: a finite :meth:`quadrature`, iid :meth:`sample`, the
    :meth:`characteristic` function φ(u) = ∫ g(ω) e^{iuω} dω."""

    name = "frequency law"

    def quadrature(self, nodes: int = 64) -> Quadrature:  # pragma: no cover - every law overrides it
        raise NotImplementedError(f"{self!r} has no finite quadrature: the density on S¹ × R_ω needs nodes ω_j and "
                                  "weights w_j.")

    def default_quadrature(self, nodes: int = 64) -> Quadrature:
        """The quadrature :func:`solve` uses for this law given alone."""
        return self.quadrature(nodes)

    def characteristic(self, u) -> np.ndarray:  # pragma: no cover - every law overrides it
        raise NotImplementedError

    def draw(self, rng, shape) -> np.ndarray:  # pragma: no cover - every law overrides it
        raise NotImplementedError

    def sample(self, size, rng) -> np.ndarray:
        """iid frequencies of shape ``size`` (an int or a tuple), drawn with ``rng`` (a seed or a numpy Generator:
        required, so the draw can be repeated)."""
        if rng is None:
            raise ValueError(f"`rng` is required to sample {self!r} (a seed or a numpy Generator), so the draw can be "
                             "repeated.")
        shape = (checks.count(size, "size"),) if isinstance(size, (int, np.integer)) else tuple(
            checks.count(s, "size") for s in size)
        return self.draw(checks.generator(rng), shape)


def _nodes_count(nodes) -> int:
    return checks.count(nodes, "nodes")


def _center(center) -> float:
    c = checks.real(center, "center")
    if not np.isfinite(c):
        raise ValueError(f"`center` must be finite, got {center!r}.")
    return c


class Lorentzian(FrequencyLaw):
    r"""The Lorentzian (Cauchy) law g(ω) = (γ/π)/((ω − ω_0)² + γ²), φ(u) = e^{iuω_0 − γ|u|}.

    Parameters
    ----------
    gamma : float
        The half-width γ >= 0 (γ = 0: identical frequencies ω_0).
    center : float
        ω_0 (default 0).
    """

    name = "Lorentzian"

    def __init__(self, gamma: float, center: float = 0.0):
        g = checks.real(gamma, "gamma")
        if not np.isfinite(g) or g < 0:
            raise ValueError(f"`gamma` (the Lorentzian's half-width γ) must be finite and >= 0, got {gamma!r}.")
        self.gamma, self.center = g, _center(center)

    def __repr__(self):
        return f"Lorentzian(gamma={self.gamma:g}" + (f", center={self.center:g})" if self.center else ")")

    def quadrature(self, nodes: int = 64) -> Quadrature:
        """J real nodes ω_0 + γ tan φ_j, φ_j = −π/2 + π(j + ½)/J, weights 1/J (module docstring: the trapezoidal rule
        in the Cayley variable; exact for rational functions with poles ω_0 ± iγ of order < J)."""
        J = _nodes_count(nodes)
        if self.gamma == 0.0:
            return Quadrature(np.array([self.center]), np.array([1.0]), "discrete", self)
        phi = -0.5 * np.pi + np.pi * (np.arange(J) + 0.5) / J
        return Quadrature(self.center + self.gamma * np.tan(phi), np.full(J, 1.0 / J), "tan-trapezoid", self)

    def bands(self, nodes: int = 64, width: float | None = None) -> Quadrature:
        r"""J bands of frequencies, each the exact pole of its sub-population (module docstring): complex nodes
        ω_j − iδ with ω_j = ω_0 + (γ − δ) tan φ_j the :meth:`quadrature` nodes of Lorentzian(γ − δ), weights 1/J.

        Cauchy laws are stable, g_γ = g_{γ−δ} * g_δ: a token's frequency is ω' + η with ω' ~ g_{γ−δ} and η ~ g_δ
        independent, and for a start independent of ω the law of θ in the band of centre ω' is ∫ g_δ(η) ρ(θ, ω' + η)
        dη = ρ(θ, ω' − iδ) (the pole argument of :meth:`pole`, for the band: β = 0, first-harmonic fields; for β > 0
        the Cauchy-noise model, refused by :func:`solve` unless asked). Each node is then a real probability
        density, the band's law of θ, whose free streaming is damped by e^{−kδt}: the finite sum over bands has no
        recurrence, and the synchronised state's r_∞ converges fast in J (docs/MATH.md §11). A locked band's law has
        the width ~δ/(c r) of its frequencies' spread: it does not collapse. Starts that depend on ω are refused.

        Parameters
        ----------
        nodes : int
            J.
        width : float, optional
            δ in (0, γ) (default γ/2).
        """
        J = _nodes_count(nodes)
        if self.gamma == 0.0:
            return Quadrature(np.array([self.center]), np.array([1.0]), "discrete", self)
        delta = 0.5 * self.gamma if width is None else checks.real(width, "width")
        if not 0.0 < delta < self.gamma:
            raise ValueError(f"`width` δ must lie in (0, γ) = (0, {self.gamma:g}): the bands' centres follow "
                             f"Lorentzian(γ − δ); got {width!r}.")
        phi = -0.5 * np.pi + np.pi * (np.arange(J) + 0.5) / J
        centres = self.center + (self.gamma - delta) * np.tan(phi)
        return Quadrature(centres - 1j * delta, np.full(J, 1.0 / J), "bands", self)

    def pole(self) -> Quadrature:
        """One node at ω_0 − iγ with weight 1: exact for starts independent of ω and first-harmonic fields (β = 0;
        module docstring)."""
        return Quadrature(np.array([complex(self.center, -self.gamma)]), np.array([1.0]), "pole", self)

    def default_quadrature(self, nodes: int = 64) -> Quadrature:
        """The pole (exact); real nodes with :meth:`quadrature`."""
        return self.pole()

    def characteristic(self, u) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        return np.exp(1j * self.center * u - self.gamma * np.abs(u))

    def draw(self, rng, shape) -> np.ndarray:
        return self.center + self.gamma * rng.standard_cauchy(shape)


class Gaussian(FrequencyLaw):
    r"""The Gaussian law N(ω_0, σ²), φ(u) = e^{iuω_0 − σ²u²/2}; its quadrature is Gauss–Hermite.

    Parameters
    ----------
    sigma : float
        The standard deviation σ >= 0 (σ = 0: identical frequencies ω_0).
    center : float
        ω_0 (default 0).
    """

    name = "Gaussian"

    def __init__(self, sigma: float, center: float = 0.0):
        s = checks.real(sigma, "sigma")
        if not np.isfinite(s) or s < 0:
            raise ValueError(f"`sigma` (the Gaussian's standard deviation σ) must be finite and >= 0, got {sigma!r}.")
        self.sigma, self.center = s, _center(center)

    def __repr__(self):
        return f"Gaussian(sigma={self.sigma:g}" + (f", center={self.center:g})" if self.center else ")")

    def quadrature(self, nodes: int = 64) -> Quadrature:
        """Gauss–Hermite: ω_j = ω_0 + √2 σ x_j, w_j = h_j/√π with (x_j, h_j) the rule for e^{−x²} (exact for
        polynomials of degree < 2J)."""
        J = _nodes_count(nodes)
        if self.sigma == 0.0:
            return Quadrature(np.array([self.center]), np.array([1.0]), "discrete", self)
        x, h = np.polynomial.hermite.hermgauss(J)
        w = h / np.sqrt(np.pi)
        keep = w > 0  # weights below the smallest double (J > ~180) carry nothing
        return Quadrature(self.center + np.sqrt(2.0) * self.sigma * x[keep], w[keep] / w[keep].sum(),
                          "gauss-hermite", self)

    def characteristic(self, u) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        return np.exp(1j * self.center * u - 0.5 * (self.sigma * u) ** 2)

    def draw(self, rng, shape) -> np.ndarray:
        return self.center + self.sigma * rng.standard_normal(shape)


class Discrete(FrequencyLaw):
    """A law with finitely many frequencies ω_j of probabilities w_j (e.g. two populations ±ω): its own
    quadrature, exact.

    Parameters
    ----------
    nodes : array_like, shape (J,)
        Real, finite frequencies.
    weights : array_like, shape (J,), optional
        Positive, summing to 1 (to 1e-12; default equal).
    """

    name = "discrete"

    def __init__(self, nodes, weights=None):
        w_nodes = np.array(nodes, dtype=float, ndmin=1)
        if w_nodes.ndim != 1 or not np.all(np.isfinite(w_nodes)):
            raise ValueError(f"`nodes` must be a 1-D array of finite frequencies, got {nodes!r}.")
        J = w_nodes.size
        w = np.full(J, 1.0 / J) if weights is None else np.array(weights, dtype=float, ndmin=1)
        if w.shape != (J,):
            raise ValueError(f"`weights` must have the shape of `nodes`, ({J},), got {np.shape(weights)}.")
        if not np.all(np.isfinite(w)) or np.any(w <= 0) or abs(w.sum() - 1.0) > 1e-12:
            raise ValueError(f"`weights` must be positive and sum to 1, got {weights!r} (sum {w.sum():.17g}).")
        self.nodes, self.weights = w_nodes, w

    def __repr__(self):
        return f"Discrete(nodes={self.nodes.tolist()}, weights={self.weights.tolist()})"

    def quadrature(self, nodes: int | None = None) -> Quadrature:
        """The atoms themselves (``nodes`` is ignored: the rule is exact)."""
        return Quadrature(self.nodes.copy(), self.weights.copy(), "discrete", self)

    def characteristic(self, u) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        return np.exp(1j * np.multiply.outer(u, self.nodes)) @ self.weights

    def draw(self, rng, shape) -> np.ndarray:
        return rng.choice(self.nodes, size=shape, p=self.weights)


def frequency_law(law):
    """``law`` as a :class:`FrequencyLaw` or a :class:`Quadrature`.

    Raises
    ------
    TypeError
        For a function of ω (a density g given as a callable): it has no finite quadrature — the density on
        S¹ × R_ω is one circle density per node, so the law must bring its nodes and weights.
    """
    if isinstance(law, (FrequencyLaw, Quadrature)):
        return law
    if callable(law):
        raise TypeError(f"a frequency law given as a function of ω ({law!r}) has no finite quadrature: the density on "
                        "S¹ × R_ω is one circle density per node ω_j with weight w_j, so the law must supply them. Use "
                        "Lorentzian(γ), Gaussian(σ), or Discrete(nodes, weights) with a quadrature of your g.")
    raise TypeError(f"`law` must be a FrequencyLaw (Lorentzian, Gaussian, Discrete) or a Quadrature, got "
                    f"{type(law).__name__}.")


# --------------------------------------------------------------------------------------------- the product grid
class FrequencyGrid(ProductGrid):
    r"""A circle grid times the nodes of a frequency law's quadrature: a grid of the product domain
    :data:`~meanfield.domains.products.FREQUENCIES` (values of shape (J, n): one circle density per node ω_j).

    Parameters
    ----------
    circle : CircleGrid
        The grid of every node's density in θ.
    quadrature : Quadrature
        The nodes ω_j and weights w_j (module docstring).
    cauchy_noise : bool
        For the Lorentzian's pole and bands at β > 0: they then solve the marginal under Cauchy noise −γ|k|
        (module docstring), which must be asked for.
    """


    domain = FREQUENCIES
    finer = "start on a finer circle grid"
    dim = 2

    def __init__(self, circle: CircleGrid, quadrature: Quadrature, cauchy_noise: bool = False):
        if not isinstance(quadrature, Quadrature):
            raise TypeError(f"`quadrature` must be a Quadrature, got {type(quadrature).__name__}.")
        if not isinstance(cauchy_noise, (bool, np.bool_)):
            raise TypeError(f"`cauchy_noise` must be True or False, got {cauchy_noise!r}.")
        self.circle, self.quadrature, self.cauchy_noise = circle, quadrature, bool(cauchy_noise)
        self.n, self.spacing = circle.n, circle.spacing

    def __repr__(self) -> str:
        return f"FrequencyGrid({self.circle!r}, {self.quadrature.nodes.size} {self.quadrature.rule} nodes)"

    @property
    def shape(self) -> tuple[int, int]:
        return (self.quadrature.nodes.size, self.circle.n)

    def integrate(self, values):
        """∫ ρ̄ dθ = Σ_j w_j ∫ ρ_j dθ: the mass of the marginal."""
        return self.quadrature.weights @ self.circle.integrate(values)

    def resample(self, values, n: int):
        return np.stack([self.circle.resample(v, n) for v in values])

    def interpolate(self, values, points):
        raise NotImplementedError(f"{self!r}: interpolate a node's density on its circle grid (grid.circle).")

    def resolution(self, values, tail_tol: float, *, spectrum=None):
        tails = _tails(fourier.coefficients(values), self.n)
        j = int(np.argmax(tails))
        return None if tails[j] <= tail_tol else (f"node {j}'s spectral tail {tails[j]:.3g} exceeds tail_tol = "
                                                  f"{tail_tol:.3g} on {self.circle!r}")

    def coordinates(self):
        return {"omega": (np.asarray(self.quadrature.nodes), {"weights": self.quadrature.weights}),
                "theta": (self.circle.angles, {})}

    @classmethod
    def from_coordinates(cls, coordinates):
        raise NotImplementedError("a FrequencyGrid is rebuilt from its law's quadrature, not from coordinates.")



class FrequencyDensity(Density):
    r"""The density on S¹ × R_ω at one time: a :class:`~meanfield.Density` on a :class:`FrequencyGrid` (values
    ρ_j(θ_i) of shape (J, n), NaN rows for nodes carried by atoms), with the state the solver holds.

    Attributes
    ----------
    coefficients : ndarray, shape (J, n/2 + 1)
        ρ̂_{j,k}, k = 0..n/2 (complex for the pole and bands: the continuation in ω; an atom node's from its atoms'
        moments).
    as_points : ndarray of bool, shape (J,)
        Which nodes are atoms (handed over when they collapsed).
    angles : ndarray, shape (J, n)
        The atoms' angles (NaN rows for nodes on the grid).
    masses : ndarray, shape (J, n)
        The atoms' masses (NaN rows for nodes on the grid).
    handovers : tuple of (float, tuple of int)
        When nodes went over to atoms, and which.
    """

    __slots__ = ("coefficients", "as_points", "angles", "masses", "handovers")

    def __init__(self, grid: FrequencyGrid, coefficients, as_points=None, angles=None, masses=None, handovers=(),
                 *, t=None):
        C = np.array(coefficients, dtype=complex)
        J, n = grid.shape
        as_points = np.zeros(J, dtype=bool) if as_points is None else np.array(as_points, dtype=bool)
        values = fourier.from_coefficients(C, n)
        values[as_points] = np.nan
        super().__init__(grid, values, check=False, t=t)
        self.coefficients, self.as_points = C, as_points
        self.angles = np.full((J, n), np.nan) if angles is None else np.array(angles, dtype=float)
        self.masses = np.full((J, n), np.nan) if masses is None else np.array(masses, dtype=float)
        self.handovers = tuple(handovers)

    def mass(self) -> float:
        """Σ_j w_j ∫ρ_j dθ (atoms: their masses' sums)."""
        return float(self.grid.quadrature.weights @ self.node_masses())

    def node_masses(self) -> np.ndarray:
        """∫ρ_j dθ of every node, shape (J,)."""
        return 2.0 * np.pi * self.coefficients[:, 0].real

    def marginal(self) -> Density:
        """ρ̄ = Σ_j w_j ρ_j as a :class:`~meanfield.Density` on the circle (``ValueError`` once a node is atoms)."""
        if np.any(self.as_points):
            raise ValueError(f"nodes {np.nonzero(self.as_points)[0].tolist()} are atoms: the marginal is a measure, "
                             "not a grid density.")
        cbar = self.grid.quadrature.weights @ self.coefficients
        return Density(self.grid.circle, fourier.from_coefficients(cbar, self.grid.n), check=False)

    def __repr__(self) -> str:
        return f"FrequencyDensity({self.grid!r}, mass={self.mass():.6g})"


def frequency_density(rho0, law, *, nodes: int = 64, grid: CircleGrid | None = None,
                      cauchy_noise: bool = False) -> FrequencyDensity:
    """The initial density on S¹ × R_ω, which :func:`meanfield.solve` advances (the "frequencies" representation).

    Parameters
    ----------
    rho0 : Density or array_like, shape (J, n)
        A density on a :class:`~meanfield.CircleGrid` (the law of θ for every ω) or one density per node (real
        nodes only), each of mass 1 (:func:`meanfield.solve` checks it after the resolution of each node).
    law : FrequencyLaw or Quadrature
        As :func:`solve`'s (``nodes``: J for a law given alone).
    grid : CircleGrid, optional
        For per-node values (default CircleGrid(n)).
    cauchy_noise : bool
        As :func:`solve`'s.
    """
    law = frequency_law(law)
    quad = law if isinstance(law, Quadrature) else law.default_quadrature(nodes)
    if not (isinstance(quad.weights, np.ndarray) and quad.nodes.shape == quad.weights.shape
            and abs(quad.weights.sum() - 1.0) < 1e-12 and np.all(quad.weights > 0)):
        raise ValueError(f"the quadrature's weights must be positive, sum to 1 and match its {quad.nodes.size} nodes.")
    circle, values = _initial(rho0, quad, grid)
    return FrequencyDensity(FrequencyGrid(circle, quad, cauchy_noise), fourier.coefficients(values))


def order_parameter(values, grid: CircleGrid) -> np.ndarray:
    """z = ∫ e^{iθ} ρ dθ of nodal values on ``grid`` (last axis), relative to their mass."""
    c = fourier.coefficients(values)
    return np.conj(c[..., 1]) / c[..., 0].real


# --------------------------------------------------------------------------------------------- the solver
def _attention_rhs(model, grid):
    """The circle's right-hand side of ``model`` on ``grid`` (its field at the padded nodes), as ``solve`` builds it;
    ValueError for what natural frequencies do not take."""
    if getattr(model, "has_blocks", False):
        raise ValueError(f"natural frequencies are built for attention models (SelfAttention, MultiHeadAttention); "
                         f"got {model!r}, whose feed-forward drift is not.")
    heads(model)  # TypeError for anything but an attention model
    if model.time_dependent:
        raise ValueError(f"`model` {model!r} has time-dependent weights: natural frequencies take constant weights.")
    if model.dim not in (None, 2):
        raise ValueError(f"the model's matrices are {model.dim}×{model.dim} but the circle lives in R².")
    if getattr(model, "manifold", None) not in (None, CIRCLE.manifold):
        raise ValueError(f"{model!r} is not a model on the sphere: natural frequencies live on the circle S¹.")
    strategy = strategies.resolve("auto", strategies.for_grid(model, grid), repr(grid))
    return CIRCLE.continuity(model, grid, strategy, kernels.grid_field(model))


class FrequencyProblem(Problem):
    """The nodes' state under dy/dt = Λy + N(y) (module docstring). A node on the grid carries its coefficients
    ρ̂_{j,k}, k = 0..n/2 (Λ_{jk} = −ikω_j, the real part only at the Nyquist mode); a node handed over
    (:meth:`hand_over`) carries the angles θ_{j,i}(t) of its n atoms, moved by θ̇ = Re ω_j + X[ρ̄](θ) (Λ = 0 there).
    The state is one complex vector: the grid nodes' coefficient rows, then the point nodes' angles (real)."""

    def __init__(self, model, grid: CircleGrid, quad: Quadrature, handover: bool = False):
        self.grid, self.n = grid, grid.n
        self.model = model
        self.rhs = _attention_rhs(model, grid)
        self.M = self.rhs.M
        K = self.n // 2
        k = np.arange(K + 1)
        self.quad = quad
        self.weights = np.asarray(quad.weights, dtype=float)
        self.nodes = np.asarray(quad.nodes)
        decay = -1j * np.multiply.outer(np.asarray(quad.nodes, dtype=complex), k)
        if self.n % 2 == 0:
            decay[:, K] = decay[:, K].real
        self.noise = float(model.noise)
        if self.noise:  # DΔρ_j = D∂²_θρ_j: −Dk² on every node's coefficients, integrated exactly with the rotation
            decay = decay - self.noise * k.astype(float) ** 2
        self.decay_rows = decay
        self._minus_ik = -1j * k
        if self.n % 2 == 0:
            self._minus_ik[K] = 0.0
        self.omega_max = float(np.max(np.abs(np.real(quad.nodes))))
        self.strain_bound = rate_scale(model)
        self.speeds = (0.0, 0.0)
        self._dtheta_M = 2.0 * np.pi / self.M
        self._padded = angles_to_points(self._dtheta_M * np.arange(self.M))
        J = self.weights.size
        self.handover = bool(handover)
        self.as_points = np.zeros(J, dtype=bool)  # nodes carried as atoms
        self.masses = np.full((J, self.n), np.nan)  # their atoms' masses, fixed from the hand-over on
        self.handovers: list[tuple[float, tuple[int, ...]]] = []
        self.unresolved: int | None = None  # the node whose θ-resolution the monitor found lost
        self._series = None  # (L, multipliers, scale) of the atoms' zonal field
        # the monitor's (solve sets it): grid nodes past 1e-2 of it go over with the one that failed
        self.tail_tol = 1e-10
        self._layout()

    # ---- the state's layout
    def _layout(self):
        self.on_grid = np.nonzero(~self.as_points)[0]
        self.on_points = np.nonzero(self.as_points)[0]
        self._split = self.on_grid.size * (self.n // 2 + 1)
        self.decay = np.concatenate([self.decay_rows[self.on_grid].ravel(),
                                     np.zeros(self.on_points.size * self.n, dtype=complex)])
        w = self.weights[self.on_points, None] * self.masses[self.on_points]
        self._point_weights = w.ravel()

    def pack(self, C, theta) -> np.ndarray:
        return np.concatenate([np.asarray(C, dtype=complex).ravel(), np.asarray(theta, dtype=complex).ravel()])

    def unpack(self, y):
        """(coefficient rows of the grid nodes (J_g, n/2 + 1), angles of the point nodes (J_p, n))."""
        return (y[: self._split].reshape(self.on_grid.size, self.n // 2 + 1),
                y[self._split:].real.reshape(self.on_points.size, self.n))

    def coefficients(self, y) -> np.ndarray:
        """ρ̂_{j,k}, k = 0..n/2, of every node (J, n/2 + 1): a point node's from its atoms' moments."""
        C, theta = self.unpack(y)
        out = np.empty((self.weights.size, self.n // 2 + 1), dtype=complex)
        out[self.on_grid] = C
        for i, j in enumerate(self.on_points):
            out[j] = fourier_moments(angles_to_points(theta[i]), self.masses[j], self.n // 2) / (2.0 * np.pi)
        return out

    def point_moments(self, y, L: int) -> np.ndarray:
        """c_k = Σ_j w_j Σ_i m_{j,i} e^{−ikθ_{j,i}}, k = 0..L, of the point nodes (zero without them)."""
        _, theta = self.unpack(y)
        if not theta.size:
            return np.zeros(L + 1, dtype=complex)
        return fourier_moments(angles_to_points(theta.ravel()), self._point_weights, L)

    # ---- the field of the marginal, and the nonlinear part
    def marginal(self, y) -> np.ndarray:
        """Σ_j w_j ρ̂_j over the grid nodes (coefficients, k = 0..n/2): the marginal while no node is points."""
        C, _ = self.unpack(y)
        return self.weights[self.on_grid] @ C

    def velocity(self, y):
        """X[ρ̄] on the padded grid of M nodes, and at the point nodes' atoms (J_p, n): the library's right-hand
        side for the model while every node is on the grid; with atoms, the zonal field from the marginal's
        moments c_k = ∫e^{−ikθ}dρ̄ (grid part 2πΣ_j w_j ρ̂_{j,k}, atoms by :func:`fourier_moments`), truncated where
        the Bessel multipliers fall below 1e-17 (:func:`circle_degree`)."""
        C, theta = self.unpack(y)
        if not theta.size:
            return self.rhs.angular_velocity(fourier.irfft(self.marginal(y) * self.n, self.n)), theta
        if self._series is None:  # the model's constant tables, once
            z = self.model.zonal
            L = circle_degree(z.beta)
            Nm, Dm, _ = series_multipliers(L, z.beta)
            self._series = (L, Nm, Dm, zonal_scale(z.beta, self.model.normalized, z.c))
        L, Nm, Dm, scale = self._series
        K = self.n // 2
        grid_part = np.zeros(L + 1, dtype=complex)
        m = min(L, K)
        grid_part[: m + 1] = 2.0 * np.pi * (self.weights[self.on_grid] @ C[:, : m + 1])
        if self.n % 2 == 0 and m == K:
            grid_part[K] *= 0.5  # the Nyquist mode splits between ±n/2
        ck = (grid_part + self.point_moments(y, L)) / (2.0 * np.pi)
        num, den = fourier.series(np.concatenate([self._padded, angles_to_points(theta.ravel())]), Nm * ck, Dm * ck)
        v = scale * (num / den if self.model.normalized else num)
        return v[: self.M], v[self.M:].reshape(theta.shape)

    def nonlinear(self, y):
        v, v_points = self.velocity(y)
        self._measure(v)
        C, _ = self.unpack(y)
        rows = C
        if C.size:
            P = fourier.pad(C * self.M, self.n, self.M // 2 + 1)
            flux = fourier.irfft(P, self.M) * v
            rows = fourier.rfft(flux)[:, : self.n // 2 + 1] * (self._minus_ik / self.M)
        drift = np.real(self.nodes[self.on_points])[:, None] + v_points
        return self.pack(rows, drift)

    def _measure(self, v):
        if not np.all(np.isfinite(v)):
            return  # the finiteness check rejects the step
        vmax = float(np.max(np.abs(v)))
        strain = float(np.max(np.abs(np.diff(v, append=v[:1])))) / self._dtheta_M
        self.speeds = (max(self.speeds[0], vmax), max(self.speeds[1], strain))

    # ---- the integrator's questions
    def rate(self, y):
        return self.decay * y + self.nonlinear(y)

    def stages(self):
        same = lambda z: z  # noqa: E731 - the state is the coefficients
        return Stages(same, same, self.nonlinear, self.decay)

    def probe(self, y):
        self.speeds = (0.0, 0.0)
        self._measure(self.velocity(y)[0])

    def begin_step(self):
        self.speeds = (0.0, 0.0)

    def max_step(self):
        """The grids' CFL step (:func:`~meanfield.representations.grid.step_bound`) with the rotation's 1/max|ω|."""
        return step_bound(self.grid.spacing, *self.speeds, self.strain_bound, self.omega_max)

    # ---- losing resolution: hand a collapsing node over to its atoms, or stop
    def handover_refusal(self) -> str | None:
        """Why a node that loses its θ-resolution cannot be handed over to atoms, or None."""
        if not self.handover:
            return "hand-over is off (handover=False; refine=False in meanfield.solve)"
        if self.noise:
            return (f"the model has noise D = {self.noise:g}: atoms are moved by the flow alone, they cannot diffuse "
                    "(start on a finer circle grid)")
        if not self.quad.real:
            return (f"the {self.quad.rule} rule's nodes are complex: a node is a sub-population's exact pole, whose "
                    "density is no transported measure")
        if self.model.zonal is None:
            return ("the atoms' field is summed through the marginal's moments, which needs a zonal model "
                    f"(Q = qI, K = kI, V = cI); got {self.model!r}")
        return None

    def hand_over(self, t, y, nodes) -> np.ndarray:
        """The state with ``nodes`` carried by atoms: node j's trapezoidal rule at the grid's midpoints θ_i + π/n,
        masses ρ_j(θ_i + π/n)·2π/n (exact for the trigonometric polynomial the resolved node is; their sum is 2πρ̂_0
        up to the round-off dips set to 0, below tail_tol of the mass), moved from t on by θ̇ = Re ω_j + X[ρ̄](θ)
        (docs/MATH.md §11)."""
        C, theta = self.unpack(y)
        rows = dict(zip(self.on_grid.tolist(), C))
        midpoints = self.grid.angles + np.pi / self.n
        shift = np.exp(1j * np.arange(self.n // 2 + 1) * np.pi / self.n)
        for j in nodes:  # the interpolant at the midpoints (a symmetric start's fixed points 0, π are grid nodes)
            values = fourier.from_coefficients(rows[j] * shift, self.n)
            values = np.where(values < 0, 0.0, values)  # round-off dips of a resolved node (>= −1e-13 max)
            self.masses[j] = values * (2.0 * np.pi / self.n)
        old_points = {j: theta[i] for i, j in enumerate(self.on_points)}
        self.as_points[list(nodes)] = True
        self._layout()
        angles = np.stack([old_points.get(j, midpoints) for j in self.on_points])
        self.handovers.append((float(t), tuple(int(j) for j in nodes)))
        return self.pack(np.array([rows[j] for j in self.on_grid]).reshape(-1, self.n // 2 + 1), angles)

    def reject(self, t, y, reason):
        j, self.unresolved = self.unresolved, None
        why = None if j is None else self.handover_refusal()
        if j is not None and why is None:
            tails = np.full(self.weights.size, -np.inf)
            C, _ = self.unpack(y)
            tails[self.on_grid] = _tails(C, self.n)
            near = set(np.nonzero(tails > 1e-2 * self.tail_tol)[0].tolist()) | {j}  # those about to follow, at once
            return self.hand_over(t, y, sorted(near))
        if j is not None:
            raise StopIntegration(t, y, f"{reason}; no hand-over: {why}",
                                  hint="Start on a finer circle grid (larger n), or stop earlier.")
        if "filamented in ω" not in reason:  # a non-finite state
            raise StopIntegration(t, y, reason, hint="Use a smaller step (cfl or dt) or a finer circle grid.")
        raise StopIntegration(t, y, reason, hint=(
            "The ω-nodes, not the circle grid, limit this run: use more nodes (the error falls like J^(-3/4) for "
            "real Lorentzian nodes), at β = 0 the Lorentzian's bands (Lorentzian.bands(J): each node the exact pole "
            "of a band of frequencies, its free streaming damped) or its pole (Lorentzian.pole(): the marginal, "
            "exact), or omega_tol=np.inf to follow the J-node system itself."))


def _tails(C, n: int) -> np.ndarray:
    """Each row's largest coefficient in the top sixteenth of its band (below the Nyquist mode of n nodes) relative to
    its mass coefficient."""
    if not C.size:
        return np.zeros(C.shape[0])
    top = (n - 1) // 2
    width = max(2, top // 16)
    return np.max(np.abs(C[:, top - width + 1: top + 1]), axis=1) / np.abs(C[:, 0])


class _Monitor(Tracker):
    """Every accepted step: finite state; every grid node's spectral tail below ``tail_tol`` (else the problem is told
    which node, to hand it over or stop); the ω-quadrature's free-streaming error times the amplitude met so far below
    ``omega_tol`` (module docstring; skipped where ``omega_tol`` is infinite)."""

    def __init__(self, problem: FrequencyProblem, quad: Quadrature, tail_tol: float, omega_tol: float):
        self.p, self.quad, self.tail_tol, self.omega_tol = problem, quad, tail_tol, omega_tol
        K = problem.n // 2
        self.amplitude = np.zeros(K + 1)
        self.error = np.zeros(K + 1)
        self.k = np.arange(K + 1)
        self.omega_error = 0.0
        self.max_tail = 0.0

    @property
    def watching_omega(self) -> bool:
        return not self.quad.exact and np.isfinite(self.omega_tol)

    def tails(self, y) -> np.ndarray:
        C, _ = self.p.unpack(y)
        return _tails(C, self.p.n)

    def initialize(self, t, y):
        if self.watching_omega:
            self._amplitudes(y)

    def _amplitudes(self, y):
        c = self.p.coefficients(y)
        a = self.p.weights @ np.abs(c) / abs(self.p.weights @ c[:, 0])
        np.maximum(self.amplitude, a, out=self.amplitude)

    def check(self, t, y):
        if not np.all(np.isfinite(y)):
            return f"the state became non-finite at t = {t:.6g}"
        tails = self.tails(y)
        if tails.size:
            i = int(np.argmax(tails))
            self.max_tail = max(self.max_tail, float(tails[i]))
            if not tails[i] <= self.tail_tol:
                j = int(self.p.on_grid[i])
                self.p.unresolved = j
                omega = self.quad.nodes[j]
                return (f"node {j} (ω = {omega:.6g}) is no longer resolved in θ: its spectral tail {tails[i]:.3g} "
                        f"exceeds tail_tol = {self.tail_tol:.3g} on {self.p.grid!r}")
        if not self.watching_omega:
            return None
        self._amplitudes(y)
        active = np.nonzero(2.0 * self.amplitude[1:] > self.omega_tol)[0] + 1
        if active.size:
            u = -np.multiply.outer(self.k[active], self.quad.nodes) * t  # complex nodes: their damping too
            err = np.abs(np.exp(1j * u) @ self.quad.weights - self.quad.law.characteristic(-self.k[active] * t))
            self.error[active] = np.maximum(self.error[active], err)
            bound = self.amplitude * self.error
            k = int(np.argmax(bound))
            self.omega_error = max(self.omega_error, float(bound[k]))
            if not bound[k] <= self.omega_tol:
                return (f"the density has filamented in ω: by t = {t:.6g} mode k = {k} carries e^(ik(θ − ωt)), of "
                        f"wavelength 2π/(kt) = {2 * np.pi / (k * t):.3g} in ω, which the {self.quad.rule} rule's "
                        f"{self.quad.nodes.size} nodes no longer integrate (free-streaming error {self.error[k]:.3g} × "
                        f"amplitude {self.amplitude[k]:.3g} > omega_tol = {self.omega_tol:.3g})")
        return None


class _Outputs(Tracker):
    """The state at every output time with the nodes it held as atoms then."""

    def __init__(self, problem: FrequencyProblem):
        self.p, self.times, self.coefficients, self.angles, self.as_points = problem, [], [], [], []

    def output(self, t, y):
        self.times.append(float(t))
        self.coefficients.append(self.p.coefficients(y))
        angles = np.full((self.p.weights.size, self.p.n), np.nan)
        _, theta = self.p.unpack(y)
        angles[self.p.on_points] = theta
        self.angles.append(angles)
        self.as_points.append(self.p.as_points.copy())


@dataclass(frozen=True)
class FrequencySolution:
    """The density on S¹ × R_ω at the output times (:func:`solve`).

    Attributes
    ----------
    t : ndarray, shape (T,)
        The output times reached.
    values : ndarray, shape (T, J, n)
        ρ_j(θ_i, t) of every node on the grid (the pole's and a band's: the law of θ of its sub-population); NaN
        for a node carried by atoms at that time (``as_points``): its law is a measure, ``angles`` and ``masses``.
    marginal : ndarray, shape (T, n)
        ρ̄ = Σ_j w_j ρ_j while every node is on the grid; NaN rows once a node is atoms (the marginal is then a
        measure: :meth:`marginal_measure`).
    z : ndarray, shape (T,)
        ∫ e^{iθ} dρ̄ (atoms included).
    mass : ndarray, shape (T, J)
        ∫ρ_j dθ (a node's atoms: their masses' sum), conserved to round-off.
    quadrature : Quadrature
    grid : CircleGrid
    status : Status
        SUCCESS, or RESOLUTION_LOST where a check stopped the run (``message`` says which).
    message : str
    t_reached : float
    nsteps, nfev : int
    max_tail : float
        The largest spectral tail of a grid node over the accepted steps.
    omega_error : float
        The largest ω-resolution bound over the run (0 for exact quadratures and where ``omega_tol`` is infinite).
    as_points : ndarray of bool, shape (T, J)
        Which nodes were atoms at each output (a node that collapses — a locked frequency — is handed over to the
        atoms of its last resolved grid state).
    angles : ndarray, shape (T, J, n)
        The atoms' angles θ_{j,i}(t) of the nodes carried by atoms (NaN elsewhere).
    masses : ndarray, shape (J, n)
        The atoms' masses (fixed from the hand-over on; NaN rows for nodes that stayed on the grid).
    handovers : tuple of (float, tuple of int)
        When nodes were handed over, and which.
    solution : Solution
        What :func:`meanfield.solve` returned, of which this is a view (its ``status``, ``message``, ``t_reached``;
        frames :class:`FrequencyDensity`, and the state where a run stopped after its last output).
    """

    t: np.ndarray
    values: np.ndarray
    marginal: np.ndarray
    z: np.ndarray
    mass: np.ndarray
    quadrature: Quadrature
    grid: CircleGrid
    status: Status
    message: str
    t_reached: float
    nsteps: int
    nfev: int
    max_tail: float
    omega_error: float
    as_points: np.ndarray
    angles: np.ndarray
    masses: np.ndarray
    handovers: tuple
    solution: object = None

    @property
    def order(self) -> np.ndarray:
        """r(t) = |∫ e^{iθ} dρ̄|."""
        return np.abs(self.z)

    @property
    def nodes(self) -> np.ndarray:
        return self.quadrature.nodes

    @property
    def weights(self) -> np.ndarray:
        return self.quadrature.weights

    def density(self, k: int) -> Density:
        """The marginal at output ``k`` as a :class:`~meanfield.Density` (``ValueError`` once a node is atoms)."""
        if np.any(self.as_points[k]):
            raise ValueError(f"at output {k} (t = {self.t[k]:.6g}) nodes {np.nonzero(self.as_points[k])[0].tolist()} "
                             "are atoms (handed over when they collapsed): the marginal is a measure, not a grid "
                             "density — use marginal_measure(k).")
        return Density(self.grid, self.marginal[k], check=False)

    def marginal_measure(self, k: int) -> Measure:
        """The marginal ρ̄ at output ``k`` as a measure on the circle: the grid nodes' trapezoidal rule (points θ_i,
        weights Σ_j w_j ρ_j(θ_i)·2π/n over the grid nodes) and every point node's atoms (weights w_j m_{j,i})."""
        grid_nodes = ~self.as_points[k]
        w = [self.weights[grid_nodes] @ self.values[k][grid_nodes] * (2.0 * np.pi / self.grid.n)]
        theta = [self.grid.angles]
        for j in np.nonzero(self.as_points[k])[0]:
            theta.append(self.angles[k, j])
            w.append(self.weights[j] * self.masses[j])
        return Measure(angles_to_points(np.concatenate(theta)), np.concatenate(w), CIRCLE)

    def raise_for_status(self) -> "FrequencySolution":
        if self.status is not Status.SUCCESS:
            raise ResolutionError(self.t_reached, self.message, self)
        return self


def _first_harmonic(model) -> bool:
    """Whether the model's field on the circle is of degree one in θ, X = ⟨θ^⊥, V m⟩ (every head at β = 0: a
    constant kernel), so that the Lorentzian's modes k >= 0 close on themselves (module docstring)."""
    return all(float(getattr(h, "beta", np.nan)) == 0.0 for h in heads(model))


def _initial(rho0, quad: Quadrature, grid):
    """(grid, values of shape (J, n)) from a Density (independent of ω) or per-node values."""
    J = quad.nodes.size
    if isinstance(rho0, Frame):  # a law of θ (a density on a CircleGrid), the same for every ω
        if not CIRCLE.holds(rho0.grid):
            raise ValueError(f"`rho0` must be a density on a CircleGrid, got one on {rho0.grid!r}.")
        if grid is not None and grid != rho0.grid:
            raise ValueError(f"`grid` {grid!r} differs from the density's {rho0.grid!r}.")
        grid, values = rho0.grid, np.broadcast_to(rho0.values, (J, rho0.grid.n))
    else:
        values = np.array(rho0, dtype=float)
        if values.ndim != 2:
            raise ValueError(f"`rho0` must be a Density (the same law of θ for every ω) or per-node values of shape "
                             f"(J, n) = ({J}, n), got shape {values.shape}.")
        if values.shape[0] != J:
            raise ValueError(f"`rho0` holds {values.shape[0]} node densities but the quadrature has J = {J} nodes "
                             f"({quad.rule}): one density per frequency node.")
        if not quad.real:
            raise ValueError("the Lorentzian's pole quadrature is exact for starts independent of ω (analytic in ω): "
                             "give a Density, or real nodes (Lorentzian.quadrature(J)) for per-node data.")
        grid = CircleGrid(values.shape[1]) if grid is None else grid
        if values.shape[1] != grid.n:
            raise ValueError(f"`rho0` has {values.shape[1]} values per node but the grid has n = {grid.n}.")
    if not np.all(np.isfinite(values)) or np.min(values) < -1e-13 * np.max(np.abs(values)):
        raise ValueError("`rho0` must be finite and non-negative.")
    return grid, values


def _check_masses(values, grid):
    mass = grid.integrate(values)
    bad = np.nonzero(np.abs(mass - 1.0) > 1e-8)[0]
    if bad.size:
        raise ValueError(f"every node's density is the law of θ given ω_j and has mass 1; node {bad[0]} has mass "
                         f"{mass[bad[0]]:.12g} (normalise it).")


def solve(model, rho0, law, t_span, t_eval=None, *, nodes: int = 64, grid: CircleGrid | None = None,
          dt: float | None = None, cfl: float = 0.1, tail_tol: float = 1e-10, omega_tol: float = 1e-6,
          handover: bool = True, cauchy_noise: bool = False, raise_on_failure: bool = False) -> FrequencySolution:
    r"""Solve ∂_t ρ + ∂_θ(ρ(ω + X[ρ̄])) = 0 on S¹ × R_ω, one circle density per frequency node (module docstring;
    docs/MATH.md §11, GLPR §7).

    Parameters
    ----------
    model : SelfAttention or MultiHeadAttention
        The attention on the circle (d = 2), constant weights; its field is the circle solver's. With noise D each
        node's density diffuses (module docstring).
    rho0 : Density or array_like, shape (J, n)
        A density on a :class:`~meanfield.CircleGrid` — the law of θ for every ω (a start independent of the
        frequencies) — or one density per node (real nodes only), each of mass 1.
    law : FrequencyLaw or Quadrature
        :class:`Lorentzian` (default quadrature: its exact pole), :class:`Gaussian` (Gauss–Hermite with ``nodes``
        nodes), :class:`Discrete`, or an explicit :class:`Quadrature` (``Lorentzian(γ).quadrature(64)``: real nodes;
        ``Lorentzian(γ).bands(64)``: bands of frequencies, each its sub-population's exact pole).
        A function of ω is refused (no finite quadrature).
    t_span : (float, float)
    t_eval : array_like, optional
        Output times within ``t_span`` (default its two ends).
    nodes : int
        J for a law given alone (ignored by the pole and discrete laws).
    grid : CircleGrid, optional
        For per-node values (default CircleGrid(n)).
    dt : float, optional
        Fixed step (default the CFL step of the module docstring).
    cfl : float
        Its safety factor (0.1).
    tail_tol : float
        The largest spectral tail of a node on the grid (1e-10, as :class:`~meanfield.ResolutionMonitor`).
    omega_tol : float
        The largest ω-resolution bound (module docstring; ``np.inf`` to compare with the finite-node system itself).
    cauchy_noise : bool
        The Lorentzian's pole and bands are exact for first-harmonic fields only (β = 0, any V); for β > 0 they solve
        the marginal under Cauchy noise −γ|k| instead (module docstring: the same linear rates about the incoherent
        state, other nonlinear dynamics), and are refused unless this asks for that model.
    handover : bool
        A real node that stops being resolved in θ (a locked frequency collapsing to a point, as clusters do) is
        handed over to the atoms of its last resolved state, which the flow moves exactly from then on (zonal models;
        docs/MATH.md §11); False: the run stops there instead.
    raise_on_failure : bool
        Raise :class:`~meanfield.ResolutionError` instead of returning a stopped solution.

    Returns
    -------
    FrequencySolution
    """
    _, _, t_eval = checks.time_span(t_span, t_eval)
    tail_tol = checks.positive(tail_tol, "tail_tol")
    omega_tol = checks.real(omega_tol, "omega_tol")
    if not omega_tol > 0:
        raise ValueError(f"`omega_tol` must be > 0 (np.inf to switch the ω check off), got {omega_tol!r}.")
    for name, value in (("handover", handover), ("cauchy_noise", cauchy_noise)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"`{name}` must be True or False, got {value!r}.")
    start = frequency_density(rho0, law, nodes=nodes, grid=grid, cauchy_noise=cauchy_noise)
    cfl = checks.positive(cfl, "cfl")
    dt = None if dt is None else checks.positive(dt, "dt")
    sol = solve_product(model, start, t_span, t_eval, Settings(
        dt=dt, cfl=cfl, refine=bool(handover), monitor=ResolutionMonitor(tail_tol=tail_tol, omega_tol=omega_tol)))
    out = frequency_solution(sol, t_eval)
    return out.raise_for_status() if raise_on_failure else out


def frequency_solution(sol, t_eval) -> "FrequencySolution":
    """The :class:`FrequencySolution` view of a :class:`~meanfield.Solution` of a :class:`FrequencyDensity`: its
    frames at the output times ``t_eval`` (the state where the run stopped only where it stopped before the
    first)."""
    outputs = set(np.asarray(t_eval, dtype=float).tolist())
    keep = [i for i, t in enumerate(sol.t) if float(t) in outputs] or [len(sol.t) - 1]
    frames, times = [sol.densities[i] for i in keep], [float(sol.t[i]) for i in keep]
    first = frames[0]
    grid, quad = first.grid.circle, first.grid.quadrature
    C = np.array([f.coefficients for f in frames])
    as_points = np.array([f.as_points for f in frames])
    vals = fourier.from_coefficients(C, grid.n)
    vals[as_points] = np.nan
    cbar = np.einsum("j,tjk->tk", quad.weights, C)
    marginal = fourier.from_coefficients(cbar, grid.n)
    marginal[np.any(as_points, axis=1)] = np.nan
    d = sol.diagnostics
    return FrequencySolution(
        t=np.array(times), values=vals, marginal=marginal, z=2.0 * np.pi * np.conj(cbar[:, 1]),
        mass=2.0 * np.pi * C[..., 0].real, quadrature=quad, grid=grid, status=sol.status, message=sol.message,
        t_reached=sol.t_reached, nsteps=sol.nsteps, nfev=sol.nfev, max_tail=d["max_tail"],
        omega_error=d["omega_error"], as_points=as_points, angles=np.array([f.angles for f in frames]),
        masses=sol.densities[-1].masses.copy(), handovers=d["handovers"], solution=sol)


# --------------------------------------------------------------------------------------------- representation
class FrequencyRepresentation(Representation):
    """One circle density per frequency node, coupled through the marginal (module docstring), a
    :class:`FrequencyDensity`: the "frequencies" representation :func:`meanfield.solve` plans for the product domain
    :data:`~meanfield.domains.products.FREQUENCIES`. Options: ``dt``, ``cfl``, ``monitor`` (``tail_tol``,
    ``omega_tol``), ``refine`` (a node that stops being resolved in θ goes over to atoms; default True, False: the run
    stops). ``Solution.diagnostics``: ``max_tail``, ``omega_error``, ``handovers`` (as :class:`FrequencySolution`)."""

    name = "frequencies"
    domain_words = "circle S¹ × R_ω (a FrequencyGrid)"
    options = frozenset({"dt", "cfl", "monitor", "refine"})
    accuracy = ("spectral in θ (each node's tail below tail_tol), the ω-quadrature's free-streaming error times the "
                "amplitude below omega_tol (docs/MATH.md §11)")
    #: the default CFL factor (:mod:`meanfield.solvers.frequencies`, "Time stepping")
    default_cfl = 0.1

    def refusal(self, model, domain, start=None):
        why = own_domain_refusal(self, domain)
        if why is not None:
            return why
        if start is not None:
            try:
                _attention_rhs(model, start.grid.circle)
            except ValueError as e:
                return str(e)
        return None

    def check(self, settings, model, start, t0, first):
        """Refuse the Lorentzian's pole and bands where the field is not first-harmonic (unless the grid asks for
        the Cauchy-noise model), and a start with atoms (a frequency density starts on its grid)."""
        quad = start.grid.quadrature
        if quad.rule in ("pole", "bands") and not start.grid.cauchy_noise and not _first_harmonic(model):
            raise ValueError(
                f"the Lorentzian's {quad.rule} is exact for first-harmonic fields only (β = 0, the Kuramoto field): "
                f"for {model!r} the field's harmonics l >= 2 couple the modes k >= 1 to negative ones, whose "
                f"continuation in ω grows below the real axis, and the {quad.rule} would solve the marginal under "
                "Cauchy noise −γ|k| instead — the same linear rates about the incoherent state, other nonlinear "
                "dynamics (docs/MATH.md §11). For natural frequencies at β > 0 use real nodes "
                "(Lorentzian(γ).quadrature(J), with omega_tol); cauchy_noise=True solves the Cauchy-noise model "
                "knowingly.")
        if np.any(start.as_points):
            raise ValueError("a frequency density starts with every node on its grid, not as atoms.")
        tails = _tails(start.coefficients, start.grid.n)
        if not np.max(tails) <= settings.monitor.tail_tol:
            j = int(np.argmax(tails))
            raise ResolutionError(t0, f"the initial density of node {j} is not resolved on {start.grid.circle!r}: "
                                  f"its spectral tail {tails[j]:.3g} exceeds tail_tol = {settings.monitor.tail_tol:.3g} "
                                  "(use a larger n)", initial=True)
        _check_masses(start.values, start.grid.circle)

    def run(self, model, start, t0, t1, t_eval, settings, hooks, first):
        grid, quad = start.grid, start.grid.quadrature
        monitor = settings.monitor
        handover = True if settings.refine is None else settings.refine
        problem = FrequencyProblem(model, grid.circle, quad, handover=handover)
        problem.tail_tol = monitor.tail_tol
        y0 = problem.pack(start.coefficients, np.empty((0, grid.n)))
        watch = _Monitor(problem, quad, monitor.tail_tol, monitor.omega_tol)  # the start's tails: check()

        def frame(t, y, state=None):
            as_points, angles, masses = state if state is not None else (
                problem.as_points.copy(), _angles(problem, y), problem.masses.copy())
            return FrequencyDensity(grid, problem.coefficients(y) if state is None else y, as_points, angles, masses,
                                    tuple(problem.handovers), t=t)

        outputs = _Outputs(problem)
        dt = settings.dt if first else None
        cfl = self.default_cfl if settings.cfl is None else settings.cfl
        integrator = Integrator(problem, "rk4", dt=dt, cfl=cfl, subdivide=dt is not None,
                                trackers=[FiniteTracker(), watch, outputs] + hooks.for_part(frame))
        status, message, hint, t_reached, last = Status.SUCCESS, "the solver reached the end of the interval", None, \
            t1, None
        try:
            t_reached, last = integrator.run(t0, y0, t_eval, t1)
        except StopIntegration as stop:
            status, t_reached, last, hint = stop.status, stop.t, stop.y, stop.hint
            message = f"stopped at t = {stop.t:.6g}: {stop.reason}" + (f". {stop.hint}" if stop.hint else "")
        except KeyboardInterrupt:
            status, message = Status.INTERRUPTED, "interrupted (Ctrl-C)"
            t_reached = outputs.times[-1] if outputs.times else t0
        if problem.handovers:
            words = "; ".join(f"nodes {list(js)} handed over to atoms at t = {t:.6g}" for t, js in problem.handovers)
            message = f"{words} (they stopped being resolved in θ); {message}"
        frames = [frame(t, C, (p, a, problem.masses.copy())) for t, C, p, a in
                  zip(outputs.times, outputs.coefficients, outputs.as_points, outputs.angles)]
        final = frame(t_reached, last) if last is not None else (frames[-1] if frames else frame(t0, y0))
        diagnostics = {"max_tail": watch.max_tail, "omega_error": watch.omega_error,
                       "handovers": tuple(problem.handovers)}
        return Part(self.name, list(outputs.times), frames, status, message, float(t_reached), final, "rk4",
                    "lawson", integrator.nfev, integrator.nsteps, hint=hint, diagnostics=diagnostics)


def _angles(problem, y):
    """The atoms' angles of every node (NaN rows for nodes on the grid), as the outputs record them."""
    angles = np.full((problem.weights.size, problem.n), np.nan)
    angles[problem.on_points] = problem.unpack(y)[1]
    return angles


register(FrequencyRepresentation())


# --------------------------------------------------------------------------------------------- the Lohe model on S²
class RotationGrid(ProductGrid):
    r"""A grid of S² times the nodes of a finite law of skew matrices Ω (the Lohe model: each token turns by its own
    Ω, ẋ = Ωx + X[μ̄](x)): values of shape (J,) + sphere.shape, one S² density per node Ω_j, coupled through the
    marginal μ̄ = Σ_j w_j ρ_j. A grid of the product domain :data:`~meanfield.domains.products.ROTATIONS`, advanced by
    :func:`meanfield.solve` ("rotations": :class:`RotationRepresentation`).

    Parameters
    ----------
    sphere : SphereGrid
        The grid of every node's density.
    omegas : array_like, shape (J, 3, 3)
        Skew matrices Ω_j (Ω^T = −Ω, finite).
    weights : array_like, shape (J,), optional
        w_j > 0 summing to 1 (default equal).
    """


    domain = ROTATIONS
    finer = "start on a finer sphere grid"
    dim = 3

    def __init__(self, sphere, omegas, weights=None):
        O = np.array(omegas, dtype=float)
        if O.ndim != 3 or O.shape[1:] != (3, 3) or not np.all(np.isfinite(O)):
            raise ValueError(f"`omegas` must be finite 3×3 matrices, shape (J, 3, 3), got shape {O.shape}.")
        if np.max(np.abs(O + np.swapaxes(O, 1, 2))) > 1e-14 * max(1.0, float(np.max(np.abs(O)))):
            raise ValueError("`omegas` must be skew (Ω^T = −Ω): a rotation's generator keeps tokens on the sphere.")
        J = O.shape[0]
        w = np.full(J, 1.0 / J) if weights is None else np.array(weights, dtype=float)
        if w.shape != (J,) or not np.all(w > 0) or abs(w.sum() - 1.0) > 1e-12:
            raise ValueError(f"`weights` must be {J} positive numbers summing to 1, got {weights!r}.")
        self.sphere, self.omegas, self.weights = sphere, O, w
        self.n, self.spacing = sphere.n, sphere.spacing

    def __repr__(self) -> str:
        return f"RotationGrid({self.sphere!r}, {self.weights.size} nodes)"

    @property
    def shape(self):
        return (self.weights.size,) + tuple(self.sphere.shape)

    def integrate(self, values):
        """Σ_j w_j ∫ ρ_j: the marginal's mass."""
        return float(sum(w * self.sphere.integrate(v) for w, v in zip(self.weights, values)))

    def interpolate(self, values, points):
        raise NotImplementedError(f"{self!r}: interpolate a node's density on its sphere grid (grid.sphere).")

    def resolution(self, values, tail_tol: float, *, spectrum=None):
        for j, v in enumerate(values):
            reason = self.sphere.resolution(v, tail_tol)
            if reason is not None:
                return f"node {j}: {reason}"
        return None

    def coordinates(self):
        raise NotImplementedError(f"{self!r}: no coordinates file format.")

    @classmethod
    def from_coordinates(cls, coordinates):
        raise NotImplementedError("a RotationGrid is rebuilt from its sphere grid and its law of Ω.")



class _RotationProblem(Problem):
    """dρ_j/dt = −div(ρ_j (X[μ̄] + Ω_j x)) for every node, the field X of the marginal summed once per stage by the
    sphere's quadrature strategy and the transport of each node by the sphere's own right-hand side (the domain's
    ``continuity`` with that field and the node's rotation as its drift)."""

    def __init__(self, model, grid: RotationGrid):
        self.grid, self.model = grid, model
        self._field = kernels.grid_field(model) or model.field
        self._current = None
        sphere = grid.sphere
        frozen = lambda points, weights, queries: self._current(queries)  # noqa: E731 - the marginal's field
        self.rhs = [SPHERE.continuity(model, sphere, "quadrature", frozen,
                                      None if not np.any(O) else (lambda q, O=O: q @ O.T)) for O in grid.omegas]
        self.omega_max = max(float(np.max(np.abs(np.linalg.eigvals(O)))) for O in grid.omegas)
        self.strain_bound = rate_scale(model)
        self.speeds = (0.0, 0.0)

    def rate(self, y):
        g = self.grid
        marginal = np.tensordot(g.weights, y, axes=1)
        points, w = g.sphere.points.reshape(-1, 3), (marginal * g.sphere.weights).ravel()
        self._current = lambda queries: self._field(points, w, queries)
        out, vmax = np.empty_like(y), 0.0
        for j, rhs in enumerate(self.rhs):
            out[j], speed, _ = rhs.rate_and_speeds(y[j])
            vmax = max(vmax, speed)
        self.speeds = (max(self.speeds[0], vmax), 0.0)
        return out

    def probe(self, y):
        self.rate(y)

    def begin_step(self):
        self.speeds = (0.0, 0.0)

    def max_step(self):
        return step_bound(self.grid.spacing, *self.speeds, self.strain_bound, self.omega_max)

    def reject(self, t, y, reason):
        raise StopIntegration(t, y, reason, hint="Start on a finer sphere grid (larger lmax), or stop earlier.")


class _RotationMonitor(Tracker):
    def __init__(self, grid: RotationGrid, monitor):
        self.grid, self.monitor = grid, monitor

    def check(self, t, y):
        for j, v in enumerate(y):
            reason = self.monitor.check_state(self.grid.sphere, v)
            if reason is not None:
                return f"node {j} (Ω_{j}) at t = {t:.6g}: {reason}"
        return None


class RotationRepresentation(Representation):
    """One S² density per node Ω_j of the Lohe model, coupled through the marginal (:class:`RotationGrid`): the
    "rotations" representation :func:`meanfield.solve` plans for :data:`~meanfield.domains.products.ROTATIONS`.
    RK4 (fixed ``dt`` or the CFL step with 1/max|Ω|); the monitor's checks on every node; no refinement."""

    name = "rotations"
    domain_words = "sphere S² × the skew matrices Ω (a RotationGrid)"
    options = frozenset({"dt", "cfl", "monitor"})
    accuracy = "spectral on S² (every node's tail below tail_tol)"
    default_cfl = 0.1

    def refusal(self, model, domain, start=None):
        why = own_domain_refusal(self, domain)
        if why is not None:
            return why
        # a layer around attention (its feed-forward, its normalisation) is not this field: the attention itself only
        if getattr(model, "attention", model) is not model or model.time_dependent or model.noise or \
                model.dim not in (None, 3) or not SPHERE.moved_by(model) or \
                any(getattr(h, "causal", False) for h in heads(model)):
            return (f"the Lohe model is built for non-causal attention on S² (SelfAttention, MultiHeadAttention in "
                    f"R³), constant weights, no noise; got {model!r}")
        return density_refusal(model, grids=True)  # hardmax attention: no density solver (its reason)

    def run(self, model, start, t0, t1, t_eval, settings, hooks, first):
        grid = start.grid
        problem = _RotationProblem(model, grid)

        def frame(t, y):
            return Density(grid, y, check=False, t=t)

        y0 = np.array(start.values)
        reason = _RotationMonitor(grid, settings.monitor).check(t0, y0)
        if reason is not None:
            raise ResolutionError(t0, f"the initial density is not resolved: {reason}", initial=True)
        outputs = OutputTracker()
        dt = settings.dt if first else None
        cfl = self.default_cfl if settings.cfl is None else settings.cfl
        integrator = Integrator(problem, "rk4", dt=dt, cfl=cfl,
                                trackers=[_RotationMonitor(grid, settings.monitor), outputs] + hooks.for_part(frame))
        status, message, hint, t_reached, y = run_to_end(
            integrator, t0, y0, t_eval, t1, "the rotations reached the end of the interval",
            lambda: (outputs.times[-1], outputs.states[-1]) if outputs.times else None)
        return Part(self.name, list(outputs.times), [frame(t, v) for t, v in zip(outputs.times, outputs.states)],
                    status, message, float(t_reached), frame(t_reached, y), "rk4", "quadrature", integrator.nfev,
                    integrator.nsteps, hint=hint)


register(RotationRepresentation())
