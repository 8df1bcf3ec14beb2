"""The model kinds, registered once each: name, class, manifold and study-file parameters.

Every model module registers its kinds here (:func:`register`) next to the class that
defines them; everything that lists models — the study schema and its checks
(:mod:`meanfield.study.config`, generated from :data:`KINDS`), the builder of a study's
model, the command line's help — reads this table. A new model kind is one module: its class
(field, divergence, bounds through ``constants``, energy where it has one) and one
``register(ModelKind(...))`` call; compiled sums are optional (the ``quadrature`` strategy,
the model's own ``field``, always applies).

=============== ============ ==========================================================
kind            manifold     class
=============== ============ ==========================================================
self-attention  sphere       :class:`~meanfield.models.SelfAttention` (SA/USA, GLPR (2.3))
softmax         euclidean    :class:`~meanfield.models.Softmax` (CACP)
l2              euclidean    :class:`~meanfield.models.L2`
sinkhorn        euclidean    :class:`~meanfield.models.Sinkhorn`
sigmoid         euclidean    :class:`~meanfield.models.Sigmoid`
masked          euclidean    :class:`~meanfield.models.Masked` (not in study files: their laws carry no positions)
=============== ============ ==========================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Parameter", "ModelKind", "KINDS", "NOISE", "register", "get", "kinds", "default_kind", "words"]


@dataclass(frozen=True)
class Parameter:
    """A parameter of a model kind besides Q, K, V: its study-file key.

    ``type`` is "float", "bool" or "str"; ``minimum`` is inclusive, ``positive`` strict.
    """

    name: str
    type: str
    default: Any
    doc: str
    minimum: float | None = None
    positive: bool = False


#: The noise strength every kind takes (docs/MATH.md §7): dX = X[μ](X) dt + √(2D) dB, ∂_t ρ + div(ρX[ρ]) = DΔρ.
NOISE = Parameter("noise", "float", 0.0, "noise strength D >= 0: particles dX = X dt + √(2D) dB on the manifold, "
                  "densities ∂_t ρ + div(ρX) = DΔρ", minimum=0.0)


@dataclass(frozen=True)
class ModelKind:
    """One kind of attention model (module docstring).

    Attributes
    ----------
    name : str
        Its ``[model] kind`` in study files.
    cls : type
        The head class; ``cls(Q=..., K=..., V=..., **parameters)`` builds one head.
    manifold : str
        "sphere" (S^{d-1}, the circle included) or "euclidean" (R^d): the domains it moves.
    parameters : tuple of Parameter
    doc : str
        One line for the study reference.
    study : bool
        Whether a study file can build it (its initial laws must fit the kind's points).
    words : str or callable, optional
        Its name in a figure's title: a string, or a function of the study's ``[model]`` table (a dict) giving one
        ("SA"/"USA" by ``normalized``); default its ``name``.

    What else a kind offers (its Gaussian closure, compiled rows, the fast sums of grids and particles) its class
    states as hooks (:class:`~meanfield.models.base.Head`: ``gaussian_closure``, ``compiled_rows``,
    ``exp_kernel``, ``translation_kernel``, ``tilt_matrix``, ``layer_map``); the layers above ask those, never
    the kind's name.
    """

    name: str
    cls: type
    manifold: str
    parameters: tuple = field(default_factory=tuple)
    doc: str = ""
    study: bool = True
    words: Any = None
    convert: Any = None  # parameters (dict) -> the class's keyword arguments, where a study key is not one of them


    def title(self, model: dict | None = None) -> str:
        """Its name in a figure's title for the study's ``[model]`` table ``model`` (:attr:`words`)."""
        if callable(self.words):
            return self.words(dict(model or {}))
        return self.name if self.words is None else self.words

    def build(self, Q=None, K=None, V=None, **parameters):
        """One head of this kind (its parameters through :attr:`convert` first, where it has one)."""
        if self.convert is not None:
            parameters = self.convert(dict(parameters))
        return self.cls(Q=Q, K=K, V=V, **parameters)


#: Every registered kind by name, in the order of registration (a manifold's first kind is its default).
KINDS: dict[str, ModelKind] = {}


def register(kind: ModelKind) -> ModelKind:
    """Add a kind (each model module registers its own at import); ``ValueError`` for a name taken by another class."""
    known = KINDS.get(kind.name)
    if known is not None and known.cls is not kind.cls:
        raise ValueError(f"model kind {kind.name!r} is registered already (by {known.cls.__name__}).")
    KINDS[kind.name] = kind
    return kind


def get(name: str) -> ModelKind:
    """The kind called ``name``; ``ValueError`` listing the known ones."""
    try:
        return KINDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"`kind` must be one of {tuple(KINDS)}, got {name!r}.") from None


def kinds(manifold: str | None = None, *, study: bool | None = None) -> tuple[ModelKind, ...]:
    """The registered kinds, of one manifold and/or only those a study can build."""
    return tuple(k for k in KINDS.values() if (manifold is None or k.manifold == manifold)
                 and (study is None or k.study == study))


def default_kind(manifold: str) -> ModelKind:
    """The first registered study kind of ``manifold`` (self-attention on spheres, softmax in R^d)."""
    return kinds(manifold, study=True)[0]


def words(name: str, model: dict | None = None) -> str:
    """The title words of the kind called ``name`` for the study's ``[model]`` table (:meth:`ModelKind.title`); an
    unknown name is its own words (a figure of a study whose kind is not registered now)."""
    kind = KINDS.get(name)
    return name if kind is None else kind.title(model)
