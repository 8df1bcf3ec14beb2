r"""Where a Transformer normalises its tokens: post-LN, pre-LN, peri-LN, Mix-LN, nGPT (docs/MATH.md §10).

Karagodin, Ge, Polyanskiy & Rigollet (arXiv 2510.22026) and nGPT (Loshchilov et al., arXiv 2410.01131). A token is
x = rθ, r = |x| > 0, θ = N(x) = x/|x| ∈ S^{d-1}, and attention is computed on the normalised tokens:

.. math::

    A_i = \sum_j \operatorname{softmax}_j(\beta\langle Q\theta_i, K\theta_j\rangle)\, V\theta_j
    \qquad (\text{the heads' average, summed over heads, never projected}),

``average(model, θ, w, θ)`` below (one place for every head). With P_θ y = y − ⟨θ, y⟩θ:

==========  ===============================  ===================================  ================================
name        continuous depth                 radius and direction                 layer of depth h
==========  ===============================  ===================================  ================================
``post``    θ̇ = P_θ A                         r = 1                                x ↦ N(x + h P_x A)  (GLPR §2.1)
``pre``     ẋ = A                            ṙ = ⟨θ, A⟩, θ̇ = P_θ A / r             x ↦ x + h A(N(x))
``peri``    ẋ = A / |A|                      ṙ = ⟨θ, A⟩/|A|, θ̇ = P_θ A/(r|A|)      x ↦ x + h N(A(N(x)))
``mix``     post for t < t_0, pre after      r = 1 until t_0                      post's, then pre's
``ngpt``    θ̇ = α P_θ A / |A|  (α > 0)       r = 1                                θ ↦ N(θ + hα(N(A) − θ))
==========  ===============================  ===================================  ================================

Each layer map is the explicit Euler step of its flow followed by a normalisation that changes the step by O(h²):
first order in h. post-LN's layer is today's N(x + h P_x A) (MATH.md §10 writes N(x + hA); the two differ by
O(h²): N(x + hA) = N(x + h P_x A/(1 + h⟨x, A⟩))). Post-LN's residual stream holds unit vectors: a Mix-LN run that
starts before t_0 normalises its tokens first (the output of a post-LN layer is N(·) of something), then runs
post-LN to t_0 and pre-LN from there with r(t_0) = 1.

Each variant is one class (:class:`PostLN`, :class:`PreLN`, :class:`PeriLN`, :class:`MixLN`, :class:`NGPT`),
a subclass of :class:`Normalization` registered by name in :data:`VARIANTS` (:func:`register`), which owns
everything about it: its velocity and layer map, its state space (``radial``), its step scale, its parameters
(:class:`VariantParameter`, which the study files read: :func:`meanfield.study.schema.normalization_keys`), its
words for titles, and its answers to the solvers (``density_refusal``, ``cylinder_refusal``, ``scale_average``,
``equiangular_rates``, ``noise_refusal``, ``unit_until``). Nothing above this module asks a variant's name: a new
variant is one subclass and one :func:`register` call (tests/particles/test_new_variant.py defines one).
``Normalization("ngpt", alpha=0.2)`` builds the registered variant of a name.

``post`` is the model of every density solver of the library (the default, bit for bit the field of the heads).
The others are refused by the density solvers (:func:`density_refusal`) and run as particles
(``particles.simulate``, ``particles.discrete_depth``), which read the normalisation here, from
:func:`normalization_of`, and the average A from :func:`average` or the compiled ``meanfield.kernels.average`` —
never the heads' projected field P_θ A, which is post-LN's alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..core import checks
from ..domains.sphere.geometry import project_tangent
from ..core.numerics import check_usa_beta
from ..core.tokens import is_sparse
from .registry import Parameter

__all__ = ["Normalization", "NORMALIZATIONS", "VARIANTS", "VariantParameter", "ParameterError", "study_doc", "POST", "as_normalization",
           "normalization_of", "average", "norms_of", "density_refusal", "radial_zonal_heads", "register", "unregister", "variant",
           "PostLN", "PreLN", "PeriLN", "MixLN", "NGPT"]

#: Every registered variant by name, in the order of registration (:func:`register`): the one table that lists them
VARIANTS: dict[str, type] = {}


class _Names(Sequence):
    """The registered variants' names, read from :data:`VARIANTS` whenever asked (a variant registered later is
    one at once); equal to the tuple of the same names, printed as that tuple."""

    def __getitem__(self, i):
        return tuple(VARIANTS)[i]

    def __len__(self) -> int:
        return len(VARIANTS)

    def __eq__(self, other) -> bool:
        return isinstance(other, (tuple, _Names)) and tuple(self) == tuple(other)

    __hash__ = None

    def __repr__(self) -> str:
        return repr(tuple(VARIANTS))


#: the variants, by name (docs/MATH.md §10; the names of :data:`VARIANTS`, whatever is registered)
NORMALIZATIONS = _Names()

#: the study reference's words for the built-in variants ([model] normalization); a variant registered later adds
#: its name and ``doc``
STUDY_DOC = ("where the tokens are normalised (meanfield.models.Normalization, docs/MATH.md §10; self-attention on the "
             "sphere, non-causal, attention alone): post (post-LN, tokens on S^{d-1}; every density solver's model); pre "
             "(ẋ = A), peri (ẋ = A/|A|) and mix (post-LN before [model] switch, pre-LN after) carry a radius, tokens "
             "x = rθ started at r = 1; ngpt (θ̇ = αP_θA/|A|, needs [model] alpha; its [grid] density on the circle "
             "and S² is solved by the sums that give A, the Lagrangian representations refuse it). pre, peri, mix: "
             "particles only (a [grid] density is refused with the solvers' reason)")



def study_doc() -> str:
    """[model] normalization's words in the study reference: :data:`STUDY_DOC`, then each variant registered after
    the built-ins by its name and ``doc``."""
    extra = list(VARIANTS.values())[len(_BUILT_IN):]
    return STUDY_DOC + "".join(f"; {v.name}: {v.doc or v.words}" for v in extra)


_RUN = "run its particles (particles.simulate, particles.discrete_depth)"


@dataclass(frozen=True)
class VariantParameter(Parameter):
    """A parameter of a normalisation variant (its study-file key too): a :class:`~.registry.Parameter` (``default``
    None: required) with ``needs``, the words of the error where it is missing ("its α > 0")."""

    needs: str = ""


class ParameterError(ValueError):
    """A variant's parameter given where it does not belong, missing, or out of its range: ``parameter`` names it
    (a study names its key by it)."""

    def __init__(self, message: str, parameter: str):
        super().__init__(message)
        self.parameter = parameter


class ParameterTypeError(ParameterError, TypeError):
    """A variant's parameter of the wrong type (a TypeError too, as the argument checks raise)."""


def _checked(p: Parameter, value):
    """``value`` for the variant parameter ``p`` by its rules (a finite real; ``positive``, ``minimum``), or the
    error naming it and the value."""
    if p.type == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise ParameterTypeError(f"`{p.name}` must be a bool, got {value!r}.", p.name)
        return bool(value)
    try:
        x = checks.real(value, p.name)
    except TypeError as exc:
        raise ParameterTypeError(str(exc), p.name) from None
    except ValueError as exc:
        raise ParameterError(str(exc), p.name) from None
    if not np.isfinite(x) or (p.positive and not x > 0) or (p.minimum is not None and not x >= p.minimum):
        rule = " and > 0" if p.positive else f" and >= {p.minimum:g}" if p.minimum is not None else ""
        raise ParameterError(f"`{p.name}` ({p.doc}) must be finite{rule}, got {value!r}.", p.name)
    return x


def _rebuild(name, values):
    return Normalization(name, **values)


class Normalization:
    r"""Where the tokens are normalised (module docstring; docs/MATH.md §10): the base of the variants, each one
    class registered by name (:func:`register`), which owns every fact about it.

    ``Normalization("pre")``, ``Normalization("ngpt", alpha=0.2)`` build the registered variant of that name (its
    parameters checked by their :class:`VariantParameter` rules; ``None`` is "not given"); equal when of one variant
    with equal parameters; immutable.

    Parameters
    ----------
    kind : str
        The variant's name: one of :data:`NORMALIZATIONS` ("post", "pre", "peri", "mix", "ngpt" built in).
    **parameters
        The variant's own (nGPT's ``alpha``, Mix-LN's ``switch``), required where they have no default.

    Attributes (of each variant's class)
    ------------------------------------
    name : str
        Its name (``kind``, its study value).
    words : str
        For titles ("pre-LN").
    doc : str
        One line for the study reference (variants registered after the built-ins).
    parameters : tuple of VariantParameter
    radial : bool
        Its state space: the tokens carry a radius (points x = rθ of R^d \ {0}), else unit vectors on S^{d-1}.
    heads_field : bool
        It moves the tokens by the heads' field P_θA itself (post-LN, every solver's model); the others by their own
        :meth:`velocity` of the average A.
    lyapunov : bool
        Its flow moves the attention's energy E_β monotonically, in the direction of V = cI's c (post-LN, nGPT).
    time_dependent : bool
        Its variant depends on the depth (:meth:`at`), with breakpoints (:meth:`breakpoints`).
    """

    name: ClassVar[str] = ""
    words: ClassVar[str] = ""
    doc: ClassVar[str] = ""
    parameters: ClassVar[tuple] = ()
    radial: ClassVar[bool] = False
    heads_field: ClassVar[bool] = False
    lyapunov: ClassVar[bool] = False
    time_dependent: ClassVar[bool] = False

    def __new__(cls, kind=None, **parameters):
        if cls is Normalization:
            cls = variant("post" if kind is None else kind)
        return object.__new__(cls)

    def __init__(self, kind=None, **parameters):
        if kind is not None and kind != self.name:
            raise ValueError(f"{type(self).__name__} is normalization {self.name!r}, got kind {kind!r}.")
        own = {p.name: p for p in self.parameters}
        for key, value in parameters.items():
            if key in own or value is None:
                continue
            owners = [v for v in VARIANTS.values() if key in {p.name for p in v.parameters}]
            if owners:
                raise ParameterError(f"`{key}` belongs to {owners[0].words} (normalization {owners[0].name!r}); "
                                     f"normalization {self.name!r} takes none, got {value!r}.", key)
            raise TypeError(f"normalization {self.name!r} takes no parameter `{key}` (it takes "
                            f"{', '.join(own) or 'none'}).")
        for p in self.parameters:
            value = parameters.get(p.name)
            if value is None:
                if p.default is None:
                    raise ParameterError(f"normalization {self.name!r} needs {p.needs or f'`{p.name}`'}: `{p.name}` "
                                         f"is missing (Normalization({self.name!r}, {p.name}=...)).", p.name)
                value = p.default
            object.__setattr__(self, p.name, _checked(p, value))

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for p in cls.parameters:
            if not isinstance(p, Parameter):
                raise TypeError(f"{cls.__name__}.parameters must hold Parameters, got {p!r}.")

    # ------------------------------------------------------------------ a value
    @property
    def kind(self) -> str:
        """The variant's name (its ``name``)."""
        return self.name

    def values(self) -> dict:
        """The variant's parameters by name."""
        return {p.name: getattr(self, p.name) for p in self.parameters}

    def __getattr__(self, key):
        # another variant's parameter reads None here (``Normalization("pre").alpha``), as on the one class before
        if not key.startswith("_") and any(key in {p.name for p in v.parameters} for v in VARIANTS.values()):
            return None
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __setattr__(self, key, value):
        raise AttributeError(f"a Normalization is immutable: cannot set {key!r}.")

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.values() == self.values()

    def __hash__(self) -> int:
        return hash((type(self), tuple(self.values().items())))

    def __reduce__(self):
        return _rebuild, (self.name, self.values())

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v:g}" if isinstance(v, float) else f", {k}={v!r}" for k, v in self.values().items())
        return f"Normalization({self.name!r}{extra})"

    # ------------------------------------------------------------------ depth
    def at(self, t: float) -> "Normalization":
        """The variant at depth t (Mix-LN's post-LN before t_0, pre-LN after); every constant one is itself."""
        return self

    def breakpoints(self, t0: float, t1: float) -> np.ndarray:
        """The depths inside (t0, t1) where the velocity jumps (Mix-LN's t_0); none for the constant variants."""
        return np.empty(0)

    @property
    def unit_until(self) -> float | None:
        """The depth before which a radial variant's stream holds unit vectors (Mix-LN's t_0: a run started before
        it normalises its tokens first), None where there is none."""
        return None

    # ------------------------------------------------------------------ the dynamics of the tokens
    def velocity(self, x, A) -> np.ndarray:
        r"""ẋ for tokens x (..., n, d) (unit vectors where not ``radial``) and the average A (..., n, d) computed at
        their directions θ = x/|x| (module docstring's table). ``FloatingPointError`` where it divides by |A| = 0."""
        raise NotImplementedError(f"{type(self).__name__} states no velocity")

    def layer(self, x, A, h: float) -> np.ndarray:
        """One layer of depth h at tokens x with the average A at their directions (module docstring's table)."""
        raise NotImplementedError(f"{type(self).__name__} states no layer map")

    def step_scale(self, inverse_radius: float, smallest_length) -> float:
        r"""The factor by which the directions' speed exceeds the heads' at the start (the particles' default step and
        the grids' strain cap divide by it): ``inverse_radius`` max(1, 1/min r), ``smallest_length()`` min |A| over
        the tokens (computed only where asked). No default: a variant that does not state its own would be stepped
        at another variant's speed."""
        raise NotImplementedError(f"{type(self).__name__} states no step scale (the factor by which its directions' "
                                  "speed exceeds the heads')")

    def _radius_scale(self, inverse_radius: float, smallest_length) -> float:
        """θ̇ = P_θA/r (pre-LN; post-LN has r = 1): the step scale 1/min r."""
        return inverse_radius

    def noise_refusal(self) -> str | None:
        """Why noise is not defined with this variant, or None (particles.simulate and the study ask here)."""
        return None

    def length(self, A) -> np.ndarray:
        """|A| row by row, shape (..., n, 1), for the variants that divide by it: ``FloatingPointError`` naming the
        first token where A = 0 (no direction to go)."""
        length = np.linalg.norm(A, axis=-1, keepdims=True)
        if np.any(length == 0.0):
            i = np.argwhere(length[..., 0] == 0.0)[0]
            raise FloatingPointError(f"normalization {self.name!r} divides the average A by |A|, but A = 0 at token "
                                     f"{tuple(int(k) for k in i)}: its direction A/|A| is undefined there.")
        return length

    # ------------------------------------------------------------------ what the solvers ask
    def density_refusal(self, grids: bool = False) -> str | None:
        """Why the density solvers cannot take this variant (:func:`density_refusal`, which adds the heads'
        reasons), or None: a radial variant's law lives on S^(d-1) × (0, ∞); a variant on the sphere other than
        post-LN moves by a function of the whole average A, which only the grids' quadrature sums give (``grids``:
        the question of a grid on the circle or S²)."""
        if self.heads_field:
            return None
        if self.radial:
            radial = ("; on the circle (d = 2), pre- and peri-LN densities of (direction, log r) are "
                      "meanfield.solve_radial's" if self.cylinder_refusal() is None else "")
            return (f"normalization {self!r} carries the radius: its tokens x = rθ have a law on S^(d-1) × (0, ∞) "
                    "(direction × radius; the direction turns at speed 1/r), which the sphere's density solvers do "
                    f"not represent — they solve laws on S^(d-1) moved by post-LN's P_θA{radial}; or {_RUN}")
        if grids:
            return None
        return (f"normalization {self!r} stays on the sphere, but its field is a function of the whole average A: "
                "the fast sums (spectral, moments) give P_θA alone and the Lagrangian measure would need its "
                f"divergence; its densities are the grids' on the circle and S² (representation='grid', strategy "
                f"'quadrature'), or {_RUN}")

    def scale_average(self, components: tuple, length) -> tuple:
        """For a radial variant moving its tokens by ẋ = f(|A|) A: each of ``components`` (parts of A) times f(|A|),
        ``length()`` giving |A| where f needs it (pre-LN f = 1, peri-LN 1/|A|): what the cylinder S¹ × (0, ∞) asks
        (meanfield.solve_radial)."""
        raise NotImplementedError(f"{self!r} does not move its tokens by a multiple f(|A|)A of the average")

    def speed_bound(self, average_bound: float) -> float:
        """A bound on |ẋ| where |A| <= ``average_bound`` (pre-LN: itself; peri-LN: 1), for ``scale_average``'s
        variants."""
        raise NotImplementedError(f"{self!r} does not move its tokens by a multiple f(|A|)A of the average")

    def cylinder_refusal(self) -> str | None:
        """Why the cylinder's densities (meanfield.solve_radial, S¹ × (0, ∞)) cannot take this variant, or None: they
        solve the radial variants whose velocity is f(|A|)A (:meth:`scale_average`)."""
        if not self.radial:
            return f"{self.words} keeps its tokens on the sphere"
        if type(self).scale_average is Normalization.scale_average:
            return f"{self.words} does not move its tokens by a multiple f(|A|)A of the average: not built"
        return None

    def equiangular_rates(self, g: float, a: float, length: float, r: float) -> list:
        r"""[d log(1 − ρ)/dt, d log r/dt] of n equiangular tokens (:func:`meanfield.analysis.exact.normalized_equiangular`):
        g = F/(1 − ρ), a = ⟨θ_i, A_i⟩, |A_i| = ``length``, r the radius. With θ̇ = c P_θA and ṙ: [−gc, ṙ/r]."""
        raise NotImplementedError(f"{self!r} states no equiangular reduction")


def register(cls: type) -> type:
    """Add a variant class to :data:`VARIANTS` under its ``name`` (a decorator; ``ValueError`` for a name taken by
    another class, or a parameter name another registered variant has: study files name parameters by their key
    alone, so each belongs to one variant)."""
    if not (isinstance(cls, type) and issubclass(cls, Normalization)) or cls is Normalization:
        raise TypeError(f"a variant is a subclass of Normalization, got {cls!r}.")
    if not isinstance(cls.name, str) or not cls.name:
        raise ValueError(f"{cls.__name__}.name must be a non-empty string, got {cls.name!r}.")
    known = VARIANTS.get(cls.name)
    if known is not None and known is not cls:
        raise ValueError(f"normalization {cls.name!r} is registered already (by {known.__name__}).")
    for other in VARIANTS.values():
        shared = {p.name for p in cls.parameters} & {p.name for p in other.parameters}
        if other is not cls and other.name != cls.name and shared:
            raise ValueError(f"normalization {cls.name!r}: its parameter {sorted(shared)[0]!r} is {other.name!r}'s "
                             "already (study files name a parameter by its key alone); give it another name.")
    VARIANTS[cls.name] = cls
    return cls


def unregister(name: str) -> type:
    """Remove the variant ``name`` from :data:`VARIANTS` (a test's own variant, once it is done); returns its class."""
    try:
        return VARIANTS.pop(name)
    except KeyError:
        raise ValueError(f"no normalization {name!r} is registered ({NORMALIZATIONS}).") from None


def variant(name) -> type:
    """The class of the variant called ``name``; ``ValueError`` listing the registered ones."""
    if not isinstance(name, str):
        raise TypeError(f"`normalization` must be one of {NORMALIZATIONS} or a Normalization, got "
                        f"{type(name).__name__}.")
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"`normalization` must be one of {NORMALIZATIONS}, got {name!r}.") from None


def _theta(x) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@register
class PostLN(Normalization):
    """post-LN: θ̇ = P_θA, tokens on S^{d-1}; the layer N(x + h P_x A) (GLPR §2.1). Every solver's model."""

    name, words = "post", "post-LN"
    heads_field = lyapunov = True
    step_scale = Normalization._radius_scale

    def velocity(self, x, A):
        return project_tangent(_theta(x), A)

    def layer(self, x, A, h):
        theta = _theta(x)
        y = theta + h * project_tangent(theta, A)
        return y / np.linalg.norm(y, axis=-1, keepdims=True)

    def equiangular_rates(self, g, a, length, r):
        return [-g, 0.0]


@register
class PreLN(Normalization):
    """pre-LN: ẋ = A (ṙ = ⟨θ, A⟩, θ̇ = P_θA/r); the layer x + hA."""

    name, words = "pre", "pre-LN"
    radial = True
    step_scale = Normalization._radius_scale

    def velocity(self, x, A):
        return np.array(A, dtype=float, copy=True)

    def layer(self, x, A, h):
        return x + h * A

    def scale_average(self, components, length):
        return tuple(components)

    def speed_bound(self, average_bound):
        return average_bound

    def equiangular_rates(self, g, a, length, r):
        return [-g / r, a / r]


@register
class PeriLN(Normalization):
    """peri-LN: ẋ = A/|A| (ṙ = ⟨θ, A⟩/|A|, θ̇ = P_θA/(r|A|)); the layer x + h A/|A|."""

    name, words = "peri", "peri-LN"
    radial = True

    def velocity(self, x, A):
        return A / self.length(A)

    def layer(self, x, A, h):
        return x + h * (A / self.length(A))

    def step_scale(self, inverse_radius, smallest_length):
        return inverse_radius / smallest_length()

    def scale_average(self, components, length):
        L = length()
        return tuple(c / L for c in components)

    def speed_bound(self, average_bound):
        return 1.0

    def equiangular_rates(self, g, a, length, r):
        return [-g / (r * length), a / (r * length)]


ALPHA = VariantParameter("alpha", "float", None, "nGPT's α > 0, the speed of the direction", positive=True,
                         needs="its α > 0")
SWITCH = VariantParameter("switch", "float", None, "the depth t_0 where post-LN hands over to pre-LN",
                          needs="the depth t_0 where post-LN hands over to pre-LN")


@register
class MixLN(Normalization):
    """Mix-LN: post-LN for depth t < ``switch`` = t_0, pre-LN from there (r = 1 until t_0)."""

    name, words = "mix", "Mix-LN"
    parameters = (SWITCH,)
    radial = time_dependent = True
    step_scale = Normalization._radius_scale  # post-LN's, then pre-LN's: 1/min r either way

    def at(self, t):
        return POST if float(t) < self.switch else PRE

    def breakpoints(self, t0, t1):
        if t0 < self.switch < t1:
            return np.array([self.switch])
        return np.empty(0)

    @property
    def unit_until(self):
        return self.switch

    def velocity(self, x, A):
        raise ValueError("Mix-LN's variant depends on the depth: take that of a time, normalization.at(t).")

    layer = velocity

    def noise_refusal(self):
        return (f"Mix-LN's tokens (normalization {self.name!r}) change space at t_0 = {self.switch:g} (unit vectors "
                "diffusing on S^(d-1) before, points of R^d after): noise across the switch is not defined here; run "
                "the two stretches (post-LN, then pre-LN)")

    def cylinder_refusal(self):
        return "Mix-LN changes its state space at t_0 (post-LN on S¹ before, S¹ × (0, ∞) after): not built"


@register
class NGPT(Normalization):
    """nGPT: θ̇ = α P_θA/|A| (α > 0), tokens on S^{d-1}; the layer N(θ + hα(A/|A| − θ))."""

    name, words = "ngpt", "nGPT"
    parameters = (ALPHA,)
    lyapunov = True

    def velocity(self, x, A):
        return self.alpha * project_tangent(_theta(x), A) / self.length(A)

    def layer(self, x, A, h):
        theta = _theta(x)
        y = theta + (h * self.alpha) * (A / self.length(A) - theta)
        return y / np.linalg.norm(y, axis=-1, keepdims=True)

    def step_scale(self, inverse_radius, smallest_length):
        return self.alpha / smallest_length()

    def density_refusal(self, grids=False):
        if grids:
            return None
        return (f"normalization {self!r} stays on the sphere, but its field αP_θA/|A| divides by |A|, the length of "
                "the average (its normal part included): the fast sums (spectral, moments) give P_θA alone and the "
                "Lagrangian measure would need div(A/|A|); its densities are the grids' on the circle and S² "
                f"(representation='grid', strategy 'quadrature'), or {_RUN}")

    def cylinder_refusal(self):
        return "nGPT keeps its tokens on the sphere (its field αP_θA/|A|)"

    def equiangular_rates(self, g, a, length, r):
        return [-self.alpha * g / length, 0.0]


POST = Normalization("post")
PRE = Normalization("pre")
#: the variants registered by this module, which :data:`STUDY_DOC` describes
_BUILT_IN = tuple(VARIANTS)


def as_normalization(value) -> Normalization:
    """A :class:`Normalization` from itself or a name ("post", "pre", "peri"; "ngpt" and "mix" need their
    parameter: ``Normalization('ngpt', alpha=...)``, ``Normalization('mix', switch=...)``)."""
    if isinstance(value, Normalization):
        return value
    if not isinstance(value, str):
        raise TypeError(f"`normalization` must be one of {NORMALIZATIONS} or a Normalization, got "
                        f"{type(value).__name__}.")
    return Normalization(value)


def normalization_of(model) -> Normalization:
    """The normalisation of ``model``: a :class:`~meanfield.models.Transformer`'s own, post-LN for anything else
    (a head or heads alone are today's model)."""
    norm = getattr(model, "normalization", None)
    return norm if isinstance(norm, Normalization) else POST


def average(model, points, weights, queries) -> np.ndarray:
    r"""A = Σ_h u_h(queries), the heads' averages before any projection (module docstring), shape (..., m, d).

    The reference sum (NumPy, row chunks); ``meanfield.kernels.average`` is its compiled twin. No input checks: the
    callers pass unit vectors (the directions θ) and their weights. ``points`` may be a 2-D scipy.sparse array
    (the keys; ``queries`` dense) where every head takes them (its ``sparse_refusal`` None; ``ValueError`` with
    the first head's reason otherwise): O(m · nnz) work (:mod:`meanfield.core.tokens`).
    """
    from .base import heads

    hs = heads(model)
    for h in hs:
        if getattr(h, "causal", False):
            raise ValueError(f"{h!r} is causal: the normalisation variants take non-causal heads.")
        why = getattr(h, "sparse_refusal", "its sums take dense points only") if is_sparse(points) else None
        if why is not None:
            raise ValueError(f"`points` are a sparse {points.shape[0]}×{points.shape[1]} array, which the "
                             f"{type(h).__name__} head does not take: {why}.")
    return sum(h.average(points, weights, queries) for h in hs)


def norms_of(x) -> np.ndarray:
    """|x| row by row, shape (..., n), with ``ValueError`` naming the first token of radius 0 (pre/peri/mix-LN
    tokens are x = rθ with r > 0: the direction of 0 is undefined)."""
    r = np.linalg.norm(x, axis=-1)
    if np.any(r == 0.0):
        i = tuple(int(k) for k in np.argwhere(r == 0.0)[0])
        raise ValueError(f"`x0`: token {i[-1] if len(i) == 1 else i} has radius r = |x| = 0; tokens are x = rθ with "
                         "r > 0 (the direction θ = x/|x| of the zero vector is undefined).")
    return r


def density_refusal(model, grids: bool = False) -> str | None:
    """Why the density solvers (grids, the Lagrangian measure) cannot take ``model``, or None: they solve post-LN
    attention with a finite β, whose field P_θA their sums give (spectral, separable, moments, the divergence the
    Lagrangian measure needs). Pre-, peri- and Mix-LN carry the radius (a law on S^{d-1} × (0, ∞); Mix-LN from its
    post-LN stretch on, ``Transformer.at(t)`` marking the stretch's model with ``stretch_of``, so that a solve is
    refused at its start, not at t_0); hardmax attention's field jumps across its cells. All of them run as particles.

    nGPT's α P_θA/|A| stays on the sphere; it needs |A|, the length of the average (its normal part ⟨θ, A⟩ too),
    which only the grids' quadrature sums give: with ``grids`` true (the question of a grid on the circle or S²,
    :attr:`meanfield.domains.Domain.quadrature_of_any_field`) it is taken, otherwise refused (the Lagrangian
    measure would need div(A/|A|), which no sum here gives)."""
    norm = getattr(model, "stretch_of", None) or normalization_of(model)  # Mix-LN's post-LN stretch is Mix-LN's
    why = norm.density_refusal(grids)
    if why is not None:
        return why
    from .base import heads

    try:
        hs = heads(model)
    except TypeError:
        return None
    if any(getattr(h, "kind", None) == "hardmax" for h in hs):
        return ("hardmax attention (β = ∞) has no density solver: a density's tokens attend to the maximisers of "
                "⟨Qx, Ky⟩ over its support, a null set, and the field jumps across the cells' boundaries, so the "
                "continuity equation with it is not the limit of the softmax ones (MATH.md §11); run particles "
                "(particles.simulate, particles.discrete_depth)")
    return None


def radial_zonal_heads(model, d: int, solver: str, space: str) -> tuple:
    """(its normalisation, [(β, c, normalized)] per head) of a Transformer whose variant moves its tokens by
    f(|A|)A (:meth:`Normalization.cylinder_refusal`) with zonal self-attention heads on R^d — what the densities on
    S^(d-1) × (0, ∞) solve (``solve_radial`` on the circle, d = 2; ``solve_zonal_radial`` on the zonal S^(d-1)) —
    or ``ValueError`` naming what ``solver`` (on ``space``, in words) refuses and where it runs instead."""
    from .base import heads

    solvers = ("meanfield.solve (post-LN on the circle, S², zonal S^(d-1)); particles.simulate for every "
               "normalisation")
    if not getattr(model, "has_blocks", False):  # attention alone
        raise ValueError(f"`model` {model!r} is post-LN (a head without a Transformer's normalisation: tokens on the "
                         f"sphere): its density solvers are {solvers}. For pre- or peri-LN give "
                         "Transformer(attention, normalization='pre') (or 'peri').")
    norm = normalization_of(model)
    why = norm.cylinder_refusal()
    if why is not None:
        raise ValueError(f"{solver} solves pre- and peri-LN on {space} (a radius per token); normalization {norm!r} "
                         f"is refused: {why}. Its solvers: {solvers}.")
    out = []
    for i, h in enumerate(heads(model.attention)):
        if not h.exp_kernel or h.causal:
            raise ValueError(f"head {i} ({h!r}) is not a non-causal SelfAttention: {solver} takes zonal "
                             "self-attention heads; run particles (particles.simulate).")
        if h.noise:
            raise ValueError(f"head {i} has noise D = {h.noise:g}: the noisy pre/peri-LN density (a diffusion of "
                             f"x in R^{d}) is not built; run particles (particles.simulate).")
        z = h.zonal
        if z is None:
            raise ValueError(f"head {i} ({h!r}) is not zonal: {solver} needs Q = qI, K = kI (qk >= 0) and V = cI, "
                             "constant in time (the field's zonal multipliers); run particles (particles.simulate) "
                             "for other matrices.")
        if h.dim not in (None, d):
            raise ValueError(f"head {i} acts on R^{h.dim}: {solver} solves {space}, d = {d}.")
        check_usa_beta(z.beta, h.normalized, space)
        out.append((float(z.beta), float(z.c), bool(h.normalized)))
    return norm, out
