r"""Phase transitions of the noisy zonal models: transition diagrams in (β, D) and hysteresis by time solves.

A zonal model (Q = qI, K = kI, V = cI) with noise D has the uniform law for a stationary state at every D, linearly
stable above D_c(β) (:func:`meanfield.analysis.stationary.critical_noise`). The single-cluster branch leaves it at D_c: towards
smaller D where the transition is continuous, towards larger D — up to its fold D_f(β), then back — where it is
discontinuous (USA above β_*(d), :func:`meanfield.analysis.stationary.critical_beta`; Mun & Rosenzweig 2026). Between D_c and
D_f both the uniform law and the clustered state are stable: sweeping D up from a clustered state keeps the cluster
up to D_f, sweeping it down from the uniform law keeps the uniform law down to D_c, a hysteresis loop of width
D_f − D_c.

- :func:`transition_diagram`: D_c(β), D_f(β) and β_* on a grid of β (the full branch for each β, its fold located
  exactly: :class:`meanfield.analysis.stationary.Branch`); :meth:`TransitionDiagram.plot`.
- :func:`hysteresis`: the loop by time solves, D swept up then down, each solve starting from the last state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..core import checks
from ..analysis import stationary as st
from ..density import Density, Frame
from ..domains import Domain, get
from ..models import SelfAttention

__all__ = ["TransitionDiagram", "transition_diagram", "Hysteresis", "hysteresis", "order_parameter"]


@dataclass(frozen=True)
class TransitionDiagram:
    """D_c(β), D_f(β) and β_* of a zonal model on a domain (module docstring).

    Attributes
    ----------
    beta : ndarray, shape (k,)
    critical : ndarray, shape (k,)
        D_c(β): below it the uniform law is unstable.
    fold : ndarray, shape (k,)
        D_f(β), the single-cluster branch's fold (its largest D, > D_c) where the transition is discontinuous; NaN
        where it is continuous (the branch falls monotonically from D_c).
    beta_star : float or None
        β_*(d) where the transition changes type (USA; None for SA, whose transition is continuous for every β:
        its branch never rises above D_c).
    normalized : bool
    c : float
    domain : Domain
    """

    beta: np.ndarray
    critical: np.ndarray
    fold: np.ndarray
    beta_star: float | None
    normalized: bool
    c: float
    domain: object

    def plot(self, ax=None):
        """D_c(β) and D_f(β) in one figure, the window between them shaded (bistable: uniform and clustered both
        stable), β_* marked. Returns the Axes."""
        import matplotlib.pyplot as plt

        from ..domains.plotting import SCRIPTED

        if ax is None:
            _, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
        ax.plot(self.beta, self.critical, "k-", lw=1.4, label=r"$D_c(\beta)$: the uniform law loses stability")
        folded = np.isfinite(self.fold)
        if folded.any():
            ax.plot(self.beta[folded], self.fold[folded], "C3-", lw=1.4, label=r"$D_f(\beta)$: the cluster's fold")
            ax.fill_between(self.beta[folded], self.critical[folded], self.fold[folded], color="C3", alpha=0.15,
                            lw=0, label="bistable: hysteresis")
        if self.beta_star is not None and self.beta[0] <= self.beta_star <= self.beta[-1]:
            ax.axvline(self.beta_star, color="0.4", ls=":", lw=1.0, label=rf"$\beta_* = {self.beta_star:.4f}$")
        ax.set_xlabel(r"$\beta$")
        ax.set_ylabel("noise D")
        kind = "SA" if self.normalized else "USA"
        ax.set_title(f"{kind} on {self.domain.symbol(self.domain.zonal_basis(1).d)}: transitions in (β, D)",
                     fontsize=9)
        ax.legend(fontsize=SCRIPTED, loc="upper left")
        return ax


def transition_diagram(domain, betas, *, normalized: bool = False, c: float = 1.0, points: int = 60,
                       r_max: float = 0.95, progress: bool | None = None) -> TransitionDiagram:
    r"""D_c(β), D_f(β) and β_* (module docstring) at the inverse temperatures ``betas``: for each β the closed-form
    D_c and the single-cluster branch at ``points`` order parameters up to ``r_max`` (its fold, where it has one,
    located exactly; :func:`meanfield.analysis.stationary.branch`). About 0.3 s a β on S¹ and S², 0.5 s on S^{127}.

    Parameters
    ----------
    domain : Domain or name
        The circle, S², or a zonal sphere S^{d−1}.
    betas : array_like
        Increasing β > 0.
    normalized : bool
        SA (True) or USA (False, the default: the transition whose type changes at β_*).
    c : float
        V = cI, c > 0.
    points, r_max : int, float
        The branch's order parameters: ``points`` >= 4 of them, equally spaced up to ``r_max`` in (0, 1).
    progress : bool or None
        A bar over the β (None: where standard error is a terminal).
    """
    from tqdm.auto import tqdm

    betas = np.asarray(betas, dtype=float)
    if betas.ndim != 1 or betas.size < 1 or not np.all(np.isfinite(betas)) or np.any(betas <= 0) \
            or np.any(np.diff(betas) <= 0):
        raise ValueError(f"`betas` must be increasing positive numbers, got {betas!r}.")
    c = checks.positive(c, "c")
    domain = get(domain) if isinstance(domain, str) else domain
    basis = domain.zonal_basis(1) if isinstance(domain, Domain) else None
    if basis is None:
        raise ValueError(f"`domain`: transition diagrams are computed on domains with zonal functions (the circle, "
                         f"S², the zonal S^(d-1)), got {domain!r}.")
    d = basis.d
    if isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 4:
        raise ValueError(f"`points` must be an integer >= 4, got {points!r}.")
    if not 0.0 < float(r_max) < 1.0:
        raise ValueError(f"`r_max` must lie in (0, 1) (1 is a point mass), got {r_max!r}.")
    r = np.linspace(r_max / points, r_max, points)
    critical, fold = np.empty(betas.size), np.full(betas.size, np.nan)
    for i, beta in enumerate(tqdm(betas, desc="transition diagram", unit="β", disable=not checks.progress(progress))):
        model = SelfAttention(float(beta), V=c * np.eye(d), normalized=normalized)
        b = st.branch(model, domain, r)
        critical[i] = b.critical
        if not b.continuous and len(b.folds):
            fold[i] = b.folds[0, 1]
    return TransitionDiagram(betas, critical, fold, None if normalized else st.critical_beta(d), bool(normalized),
                             float(c), domain)


@dataclass(frozen=True)
class Hysteresis:
    """A hysteresis loop by time solves (:func:`hysteresis`).

    Attributes
    ----------
    up, down : ndarray
        The noise values of the sweep up (increasing) and of the sweep down (decreasing).
    r_up, r_down : ndarray
        The order parameter r = |∫ x dρ| at the end of the solve at each of them.
    jump_up, jump_down : float
        The first D of the sweep up at which r fell below the threshold (the cluster dissolved: the first D of the
        sweep beyond the fold D_f), the first D of the sweep down at which it rose above it (the uniform law
        clustered: the first D below D_c); NaN where it did not.
    width : float
        jump_up − jump_down, the loop's width: D_f − D_c <= width < D_f − D_c + 2 ΔD for a sweep of step ΔD.
    threshold : float
    """

    up: np.ndarray
    down: np.ndarray
    r_up: np.ndarray
    r_down: np.ndarray
    jump_up: float
    jump_down: float
    width: float
    threshold: float

    def plot(self, ax=None, diagram: "TransitionDiagram | None" = None):
        """The loop: r against D, the sweep up and the sweep down, arrows of their direction; D_c and D_f of
        ``diagram``'s first β where given (a :class:`TransitionDiagram` of the same model). Returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5.2, 3.6), layout="constrained")
        ax.plot(self.up, self.r_up, "C3o-", ms=3.5, lw=1.2, label="D swept up (from the cluster)")
        ax.plot(self.down, self.r_down, "C0s--", ms=3.5, lw=1.2, label="D swept down (from the uniform law)")
        if diagram is not None:
            ax.axvline(diagram.critical[0], color="k", lw=0.9, ls=":", label="the uniform law loses stability")
            if np.isfinite(diagram.fold[0]):
                ax.axvline(diagram.fold[0], color="C3", lw=0.9, ls=":", label="the cluster's fold")
        ax.set_xlabel("noise D")
        ax.set_ylabel("order parameter r = |∫ x dρ|")
        ax.set_title(f"hysteresis by time solves: width {self.width:.4g}", fontsize=9)
        ax.legend(fontsize=8, loc="best")
        return ax


def order_parameter(density) -> float:
    """r = |∫ x dρ(x)| of a density on a sphere (:meth:`~meanfield.Density.mean`, in R^d on every domain)."""
    return float(np.linalg.norm(density.mean()))


def _seed(density, amplitude: float) -> Density:
    """The density times 1 + amplitude · u, u = ⟨x, e⟩ (a degree-1 function about the domain's axis: e_1 on the
    circle, the north pole e_d on S^{d-1}, cos θ on rings; ``Domain.polar_cosine``), normalised: a perturbation that
    grows at σ_1 below D_c."""
    u = density.domain.polar_cosine(density.grid.points)
    values = np.asarray(density.values, dtype=float)
    return Density(density.grid, values * (1.0 + amplitude * u.reshape(values.shape))).unit_mass()


def hysteresis(model, start: Density, noises, t_settle: float, *, threshold: float = 0.05, seed: float = 1e-2, settled: float = 1e-7,
               progress: bool | None = None, **solve_kwargs) -> Hysteresis:
    r"""The hysteresis loop by time solves (module docstring).

    From ``start`` (a clustered density), D takes the increasing ``noises`` one after the other, each solve of
    duration ``t_settle`` starting from the last state; then the same noises in decreasing order. The order parameter
    r = |∫ x dρ| at the end of each solve gives the jumps: up, where the cluster dissolves (r falls below
    ``threshold``: at the first D past the fold D_f, where the clustered state ceases to exist); down, where the
    uniform law clusters (r rises above it: at the first D below D_c). A solve stops early where r crosses the
    threshold (a terminal event), or where r has settled (``settled``). On the way down each solve starts from the last state times 1 + ``seed``·⟨x, e⟩:
    the uniform law is stationary at every D, so without a perturbation it would stay uniform below D_c (as the
    dynamics do in exact arithmetic); the seed stands for the fluctuations of any finite system. Above D_c the seed
    decays (at the rate σ_1 < 0): a solve stops once it has fallen by e, the uniform law being stable there.

    Parameters
    ----------
    model : SelfAttention
        A zonal model (Q = qI, K = kI, V = cI); its noise is replaced by each of ``noises``.
    start : Density
        A clustered density on the circle, S² or a zonal sphere (r above ``threshold``).
    noises : array_like
        Increasing D > 0, of step ΔD: the loop's width is located within 2ΔD (attribute ``width``).
    t_settle : float
        The duration of each solve. Near D_c the growth rate σ_1 = (d − 1)(D_c − D) vanishes: the first D below D_c
        must see ln(threshold/seed)/σ_1 and more; with D_c midway between two noises, t_settle >= ~4/((d − 1) ΔD).
    threshold, seed : float
        0 < seed < threshold < 1.
    settled : float
        A solve is done where r changed by less than this over t_settle/10 (the state has settled), before
        t_settle.
    progress : bool or None
        A bar over the solves (None: where standard error is a terminal).
    solve_kwargs
        Passed to :func:`meanfield.solve` (e.g. ``method``, ``rtol``, ``atol``, ``refine``).

    Returns
    -------
    Hysteresis
    """
    from ..representations import Event
    from .solve import Status, solve

    noises = np.asarray(noises, dtype=float)
    if noises.ndim != 1 or noises.size < 2 or not np.all(np.isfinite(noises)) or np.any(np.diff(noises) <= 0) \
            or np.any(noises <= 0):
        raise ValueError(f"`noises` must be at least two increasing positive numbers, got {noises!r}.")
    if not isinstance(start, Frame) or start.grid is None:  # seeded and solved on its grid
        raise TypeError(f"`start` must be a Density, got {type(start).__name__}.")
    t_settle = checks.positive(t_settle, "t_settle")
    threshold = checks.positive(threshold, "threshold")
    seed = checks.positive(seed, "seed")
    settled = checks.positive(settled, "settled")
    if not seed < threshold < 1.0:
        raise ValueError(f"need 0 < `seed` < `threshold` < 1, got seed = {seed:g}, threshold = {threshold:g}.")
    r0 = order_parameter(start)
    if r0 <= threshold:
        raise ValueError(f"`start` must be clustered: its order parameter r = {r0:.3g} is not above `threshold` = "
                         f"{threshold:g}.")
    bar = checks.progress(progress)

    def settle(D, state, direction, floor=None):
        """Solve at noise D in chunks of t_settle/10 until r crosses the threshold (or the floor), has changed by
        less than ``settled`` over a chunk, or t_settle has passed."""
        events = [Event(lambda t, frame: order_parameter(frame) - threshold, terminal=True, direction=direction)]
        if floor is not None:  # the seed decays: the uniform law is stable at D, nothing more to wait for
            events.append(Event(lambda t, frame: order_parameter(frame) - floor, terminal=True, direction=-1.0))
        noisy, chunk, r = replace(model, noise=float(D)), t_settle / 10, order_parameter(state)
        for _ in range(10):
            sol = solve(noisy, state, (0.0, chunk), events=events, raise_on_failure=True, **solve_kwargs)
            state, r_last, r = sol.densities[-1], r, order_parameter(sol.densities[-1])
            if sol.status is not Status.SUCCESS or abs(r - r_last) < settled:
                break
        return state

    from tqdm.auto import tqdm

    r_up, r_down = np.empty(noises.size), np.empty(noises.size)
    state = start
    with tqdm(total=2 * noises.size, disable=not bar, desc="hysteresis", unit="solve") as pbar:
        for i, D in enumerate(noises):
            state = settle(D, state, -1.0)
            r_up[i] = order_parameter(state)
            pbar.update()
        down = noises[::-1]
        for i, D in enumerate(down):
            seeded = _seed(state, seed)
            r_seeded = order_parameter(seeded)
            state = settle(D, seeded, +1.0, floor=r_seeded / np.e if r_seeded < threshold else None)
            r_down[i] = order_parameter(state)
            pbar.update()
    gone = np.flatnonzero(r_up < threshold)
    back = np.flatnonzero(r_down > threshold)
    jump_up = float(noises[gone[0]]) if gone.size else np.nan
    jump_down = float(down[back[0]]) if back.size else np.nan
    return Hysteresis(noises, down, r_up, r_down, jump_up, jump_down, jump_up - jump_down, threshold)
