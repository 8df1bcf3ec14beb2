r"""Product domains: a circle or S² times a coordinate that is not on a sphere (docs/MATH.md §10.1, §11).

=================  =================================  ==============================================================
domain             grid                               advanced by (its representation, registered from its module)
=================  =================================  ==============================================================
``CYLINDER``       :class:`meanfield.solvers.cylinder.CylinderGrid`  "cylinder": pre/peri-LN densities of (θ, s = log r) on
                   (n_θ angles × n_s cells of log r)  S¹ × (0, ∞)
``FREQUENCIES``    :class:`meanfield.solvers.frequencies.FrequencyGrid`  "frequencies": one circle density per node of a
                   (a circle grid × the ω-quadrature)  frequency law, coupled through the marginal
``ROTATIONS``      :class:`meanfield.solvers.frequencies.RotationGrid`  "rotations": one S² density per skew matrix Ω of a
                   (an S² grid × a finite law of Ω)   finite law (the Lohe model), coupled through the marginal
``ZONAL_CYLINDER`` :class:`meanfield.solvers.zonal_cylinder.ZonalCylinderGrid`  "zonal-cylinder": pre/peri-LN densities of
(a family: one     (lmax + 1 Gauss rings of the polar  (u = ⟨θ, e⟩, s = log r) on the zonal S^{d-1} × (0, ∞), any d
member per d,      cosine × n_s cells of log r)
``of_dim(d)``)
=================  =================================  ==============================================================

A product domain knows the one representation that advances its densities (``representation``, the name
:func:`meanfield.representations.plan` chains alone) and answers the questions :func:`meanfield.solve` asks of every
initial state's domain (``check_model``, ``energy_beta``); its grids are :class:`~meanfield.domains.Grid`\ s, so an
initial state is a :class:`~meanfield.Density` on one. The model's refusals (which normalisations, which heads) are
the representation's, which names what it takes.

``ZONAL_CYLINDER`` stands for the family in every d (``dim`` None, as ``ZONAL`` among the sphere's domains); its
member in R^d, ``ZONAL_CYLINDER.of_dim(d)`` (one instance per d, ``dim`` == d), is what a grid of dimension d carries.
"""

from __future__ import annotations

from .base import REPULSION_REFUSAL, Grid
from .zonal_sphere.grid import check_dimension

__all__ = ["ProductDomain", "ProductGrid", "CYLINDER", "FREQUENCIES", "ROTATIONS", "ZONAL_CYLINDER"]


class ProductDomain:
    """A product of the circle with a second coordinate, advanced by one representation (module docstring).

    Attributes
    ----------
    name : str
    description : str
        What its points are, in words (error messages).
    representation : str
        The name of the representation that advances its densities.
    dim : int or None
        The ambient dimension d of the sphere factor's points (2 for the circle, 3 for S², d for the zonal
        S^{d-1}); None on a family object that stands for every d (:meth:`of_dim` gives its members).
    """

    manifold = "sphere"  # the models that move it: attention on the circle factor
    conserves_mass = True
    nodes_follow_grid = False
    panels = None
    default_max_n = None
    default_method = "rk4"  # the time integrator of its representations where none is given (run estimates name it)
    repulsion_refusal = REPULSION_REFUSAL

    def __init__(self, name: str, description: str, representation: str, dim: int | None = 2, member_words=None):
        self.name, self.description, self.representation, self.dim = name, description, representation, dim
        self._member_words = member_words  # a family's: d -> its member's description
        self._members: dict = {}

    def of_dim(self, d: int) -> "ProductDomain":
        """The member of this family whose sphere factor lies in R^d (``dim`` == d, one instance per d); a domain of
        one dimension returns itself for its own d. ``ValueError`` naming ``d`` otherwise."""
        if self.dim is not None:
            if isinstance(d, bool) or d != self.dim:
                raise ValueError(f"the {self.description} lives in R^{self.dim}, not in R^{d!r}.")
            return self
        d = check_dimension(d)
        if d not in self._members:
            self._members[d] = ProductDomain(self.name, self._member_words(d), self.representation, d)
        return self._members[d]

    def _not_yet(self, what: str):
        raise NotImplementedError(f"{what} of a density on the {self.description} is not built: its frames have no "
                                  "point set in one ambient R^d yet; read the solution's marginals (the product "
                                  "solvers' own results: direction and radius marginals, the θ-marginal of the nodes)")

    def mean(self, points, weights):
        """Refused (:meth:`_not_yet`): no first moment in one ambient space is defined here yet."""
        self._not_yet("the first moment")

    def energy(self, *args, **kwargs):
        """Refused (:meth:`_not_yet`)."""
        self._not_yet("the interaction energy")

    def plot(self, *args, **kwargs):
        """Refused (:meth:`_not_yet`)."""
        self._not_yet("a plot")

    def no_points(self, grid):
        """What a product grid's ``points`` says (:meth:`_not_yet`): the frames' W1, sampling and energy need them."""
        self._not_yet(f"the point set of {grid!r} (W1, sampling, energy)")

    def __repr__(self) -> str:
        return f"<domain {self.name}>" if self._member_words is None else f"<domain {self.name} (every d)>"

    def check_model(self, model, where) -> None:
        """Nothing here: the representation's ``refusal`` names the models it takes (and why not the others)."""

    def energy_beta(self, model) -> None:
        """None: no interaction energy is monitored on a product domain."""
        return None

    def grid_strategies(self, model, grid) -> dict:
        """No field strategies to choose: the representation sums the field its own way."""
        return {}



class ProductGrid(Grid):
    """What the grids of a product domain refuse alike (``finer``: where a finer grid comes from, in words): no point
    set in one ambient R^d yet (their domain says so), no refinement or resampling during a run, no coarsened
    measure. Their subclasses hold the rest (``domain``, shape, mass, resolution)."""

    finer = "give a finer grid"

    def linear_transport_refusal(self) -> str:
        return (f"common noise is not solved on {self!r}: its points are rows (s, x) of a position and a token, and "
                "the push-forward of each row's density by a linear layer's map x ↦ e^A x/|e^A x| (the position "
                "unmoved) is not written for product grids (nor are the particles' rows moved: the causal tokens' "
                "particles refuse it too)")

    @property
    def points(self):
        """Refused: a product domain's frames have no point set in one ambient R^d yet (its domain says so)."""
        return self.domain.no_points(self)

    def refined(self, factor: int = 2):
        raise ValueError(f"{self!r} is not refined: {self.finer}.")

    def resample(self, values, n: int):
        raise ValueError(f"{self!r} is not resampled: {self.finer}.")

    def coarsened(self, values):
        raise NotImplementedError(f"{self!r}: no coarsened measure.")

#: pre/peri-LN tokens x = rθ as (θ, s = log r) ∈ S¹ × ℝ (docs/MATH.md §10.1)
CYLINDER = ProductDomain("cylinder", "cylinder S¹ × (0, ∞) of directions and radii", "cylinder")
#: tokens with natural frequencies, (θ, ω) ∈ S¹ × ℝ_ω, ω on the nodes of a quadrature (docs/MATH.md §11)
FREQUENCIES = ProductDomain("frequencies", "circle S¹ × R_ω of angles and natural frequencies", "frequencies")
#: tokens on S² each turning by its own skew matrix Ω (the Lohe model), Ω on the nodes of a finite law (docs/MATH.md §11)
ROTATIONS = ProductDomain("rotations", "sphere S² × the skew matrices Ω of R³ (the Lohe model)", "rotations", dim=3)
#: pre/peri-LN tokens x = rθ with a law zonal about an axis e, as (u = ⟨θ, e⟩, s = log r) on S^{d-1} × ℝ, any d
#: (docs/MATH.md §10); the family: ``ZONAL_CYLINDER.of_dim(d)`` is the member in R^d
ZONAL_CYLINDER = ProductDomain("zonal-cylinder", "zonal S^(d-1) × (0, ∞) of polar cosines and radii, every d",
                               "zonal-cylinder", None,
                               lambda d: f"zonal S^{d - 1} × (0, ∞) of polar cosines and radii (d = {d})")
