r"""Metastable states: the cluster count predicted from the initial data, and the states a solution passes through.

Prediction (Bruno, Pasqualotto & Agazzi, arXiv 2410.23228; docs/MATH.md §9, §13). About the uniform law on S¹ the
Fourier mode of degree k of a zonal model (Q = qI, K = kI, V = cI, noise D) grows at the linear rate

    σ_k = k²(c I_k(β)/(β I_0(β)) − D)  (SA),      σ_k = k²(c I_k(β)/β − D)  (USA),

(:func:`meanfield.analysis.stationary.linear_rates`). From near-uniform data the mode of the largest rate, k* = argmax_k σ_k,
outgrows the others, and the density forms k* clusters where that mode peaks: the density's k-th component is
(1/π)|μ̂_k| cos(kθ − arg μ̂_k), μ̂_k = ∫ e^{ikθ} dμ_0, so the clusters sit at

    θ_j = (arg μ̂_{k*}(0) + 2πj)/k*,   j = 0, …, k* − 1

(a point mass at θ_0 gives θ_0 + 2πj/k*). The prediction is as good as the gap between σ_{k*} and the next rate:
at the saturation time t ~ log(1/ε)/σ_{k*} of a perturbation of size ε a mode k has grown relative to k* by
ε^{σ_k/σ_{k*} − 1}, which is small when ε is small and the gap is not (:class:`ClusterPrediction` carries the gap).
:func:`predicted_clusters` reads μ̂_k from any frame: a grid density, a Lagrangian measure, a particle snapshot.

States (Geshkovski, Koubbi, Polyanskiy & Rigollet, arXiv 2410.06833). Clusters form by t ~ β and persist until
log t ~ β; the energy E_β climbs a staircase, each plateau a metastable state near a saddle of E_β. Given the masses
of the clusters at each output time (:func:`meanfield.lagrangian.cluster_history` of a Lagrangian solution, or
:func:`particles.metastability.cluster_masses` of a particle trajectory), :func:`metastable_states` cuts time into
states of constant cluster count: a frame counts once its clusters (of mass >= ``min_mass``) hold at least
``settled`` of the mass, a state is a maximal run of counted frames with one count (runs shorter than
``min_duration`` are transients and are dropped), a merge is a fall of the count from one state to the next. The
lifetime of a state is the time from its first frame to the first frame of the next state: a merge is located to
within the spacing of the output times (each state's ``resolution``), so lifetimes spanning decades are best measured
on geometrically spaced outputs. T₂, the lifetime of the two-cluster state (from the merge or formation that leaves
two clusters to the merge into one), and the time of the last merge are :attr:`MetastableStates.T2` and
:attr:`MetastableStates.last_merge`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.stationary import linear_rates, most_unstable_degree

__all__ = ["ClusterPrediction", "predicted_clusters", "fourier_coefficients", "MetastableState", "MetastableStates",
           "metastable_states"]


def _circle_measure(frame):
    """(θ, w) of a frame on S¹, w normalised to a probability; ValueError naming the frame otherwise."""
    as_measure = getattr(frame, "as_measure", None)
    if as_measure is None:
        raise TypeError(f"`frame` must be a frame (a Density, a LagrangianMeasure or a particle Snapshot), got "
                        f"{type(frame).__name__}.")
    pts, w = as_measure()
    pts, w = np.asarray(pts, dtype=float), np.asarray(w, dtype=float)
    if not (frame.domain.unit_vectors and pts.ndim == 2 and pts.shape[1] == 2):
        raise ValueError(f"the predicted cluster count is derived on S¹ (points that are unit vectors of R²); the frame "
                         f"is on the {frame.domain.name} with points of shape {pts.shape}.")
    total = float(np.sum(w))
    if not total > 0:
        raise ValueError(f"the frame's mass must be positive, got {total!r}.")
    return np.arctan2(pts[:, 1], pts[:, 0]), w / total


def fourier_coefficients(frame, degrees) -> np.ndarray:
    r"""μ̂_k = ∫ e^{ikθ} dμ / μ(S¹) of a frame on S¹ for each k in ``degrees`` (complex, shape of ``degrees``).

    A grid density's is its quadrature rule's (exact for the trigonometric interpolant up to degree n/2 on n
    nodes); a Lagrangian measure's or a snapshot's is the sum over its weighted points."""
    theta, w = _circle_measure(frame)
    k = np.asarray(degrees)
    if not np.issubdtype(k.dtype, np.integer):
        raise ValueError(f"`degrees` must be integers, got {degrees!r}.")
    return np.exp(1j * np.multiply.outer(k, theta)) @ w


@dataclass(frozen=True)
class ClusterPrediction:
    """The clusters predicted from a near-uniform law on S¹ (module docstring; arXiv 2410.23228).

    Attributes
    ----------
    count : int
        k* = argmax_k σ_k, the degree of the largest linear rate.
    angles : ndarray, shape (count,)
        (arg μ̂_{k*} + 2πj)/k* in [0, 2π), increasing.
    rate : float
        σ_{k*}.
    runner_up : int
        The degree of the second largest rate.
    gap : float
        σ_{k*}/σ_{runner_up} − 1 (inf where the runner-up does not grow): the relative gap of the top two rates.
    coefficient : complex
        μ̂_{k*} of the frame; its modulus says how far the data are from uniform in that mode (angles are
        meaningless where it is at round-off).
    rates : ndarray
        σ_1, σ_2, … up to the largest degree examined.
    """

    count: int
    angles: np.ndarray
    rate: float
    runner_up: int
    gap: float
    coefficient: complex
    rates: np.ndarray


def predicted_clusters(frame, model, noise: float | None = None) -> ClusterPrediction:
    r"""The number of metastable clusters and their angles predicted from a frame on S¹ (module docstring).

    k* = argmax_k σ_k of the linear rates about the uniform law (docs/MATH.md §9,
    :func:`meanfield.analysis.stationary.linear_rates`), and θ_j = (arg μ̂_{k*} + 2πj)/k* with μ̂_k = ∫ e^{ikθ} dμ_0
    (Bruno, Pasqualotto & Agazzi, arXiv 2410.23228; docs/MATH.md §13).

    Parameters
    ----------
    frame : Frame
        The initial law on S¹: a :class:`meanfield.Density`, a Lagrangian measure or a particle snapshot
        (``particles.Snapshot``, ``Trajectory.frame(0)``).
    model : SelfAttention
        A zonal model (Q = qI, K = kI, V = cI), SA or USA.
    noise : float, optional
        D (default ``model.noise``).

    Returns
    -------
    ClusterPrediction

    Raises
    ------
    ValueError
        A frame not on S¹, a model that is not zonal, or no growing mode (the uniform law is stable).
    """
    theta, w = _circle_measure(frame)
    k = most_unstable_degree(model, frame.domain, noise)
    L = max(2 * k, 8)
    rates = linear_rates(model, frame.domain, np.arange(1, L + 1), noise)
    order = np.argsort(rates)[::-1]
    second = int(order[1]) + 1
    gap = float(rates[k - 1] / rates[second - 1] - 1.0) if rates[second - 1] > 0 else np.inf
    mu = complex(np.exp(1j * k * theta) @ w)
    angles = np.sort(np.mod((np.angle(mu) + 2.0 * np.pi * np.arange(k)) / k, 2.0 * np.pi))
    return ClusterPrediction(int(k), angles, float(rates[k - 1]), second, gap, mu, rates)


# ------------------------------------------------------------------ metastable states
@dataclass(frozen=True)
class MetastableState:
    """One metastable state: a run of output times with one cluster count.

    Attributes
    ----------
    count : int
        The number of clusters.
    start : float
        Its first output time.
    end : float
        The first output time of the next state (the merge), ``inf`` where it lasts to the last output.
    last : float
        Its last output time: the change to the next state happened in (last, end].
    energy : float
        The mean of the given energy over its frames (NaN where none was given).
    """

    count: int
    start: float
    end: float
    last: float
    energy: float

    @property
    def lifetime(self) -> float:
        """end − start (``inf`` for the last state: only ``last − start`` is known, a lower bound)."""
        return self.end - self.start

    @property
    def resolution(self) -> float:
        """end − last: the merge that ends it lies in (last, end] (``inf`` for the last state)."""
        return self.end - self.last


@dataclass(frozen=True)
class MetastableStates:
    """The states a solution passes through (:func:`metastable_states`).

    Attributes
    ----------
    states : tuple of MetastableState
        In time order.
    merges : tuple of (float, int, int)
        (t, count before, count after) where the count falls from one state to the next, t the first output time
        of the new state.
    t_end : float
        The last output time.
    """

    states: tuple
    merges: tuple
    t_end: float

    def __len__(self) -> int:
        return len(self.states)

    def __repr__(self) -> str:
        shown = " → ".join(f"{s.count} [{s.start:.4g}, {s.end:.4g})" for s in self.states)
        return f"MetastableStates({shown or 'none'}; t_end = {self.t_end:g})"

    @property
    def formed(self) -> int | None:
        """The count of the first state (the clusters that formed), None where no frame settled."""
        return self.states[0].count if self.states else None

    @property
    def counts(self) -> np.ndarray:
        """The count of each state."""
        return np.array([s.count for s in self.states], dtype=int)

    @property
    def lifetimes(self) -> np.ndarray:
        """The lifetimes of the states that ended (every state but the last)."""
        return np.array([s.lifetime for s in self.states[:-1]])

    def lifetime(self, count: int) -> float:
        """The lifetime of the last state of ``count`` clusters that ended in a merge; NaN where there is none."""
        for a, b in zip(self.states[-2::-1], self.states[:0:-1]):
            if a.count == count and b.count < a.count:
                return a.lifetime
        return float("nan")

    @property
    def T2(self) -> float:
        """The lifetime of the two-cluster state that merged into one: from the first output time with two
        clusters (after the merge or formation that left two) to the first with one; NaN where the solution did
        not go from two clusters to one."""
        for a, b in zip(self.states[:-1], self.states[1:]):
            if a.count == 2 and b.count == 1:
                return a.lifetime
        return float("nan")

    @property
    def last_merge(self) -> float:
        """The first output time with a single cluster after a merge (the time of the last merge); NaN where the
        solution did not reach one cluster by merging."""
        for t, before, after in self.merges:
            if after == 1:
                return t
        return float("nan")


def _masses(masses, T):
    if len(masses) != T:
        raise ValueError(f"`masses` must hold one array per output time ({T}), got {len(masses)}.")
    out = []
    for m in masses:
        m = np.asarray(m, dtype=float).ravel()
        if not np.all(np.isfinite(m)) or np.any(m < 0):
            raise ValueError("cluster masses must be finite and non-negative.")
        out.append(m)
    return out


def metastable_states(t, masses, *, energy=None, min_mass: float = 0.02, settled: float = 0.9,
                      min_duration: float = 0.0, total: float = 1.0) -> MetastableStates:
    r"""The metastable states of a solution from the masses of its clusters at each output time (module docstring).

    Parameters
    ----------
    t : array_like, shape (T,)
        Increasing output times.
    masses : sequence of T arrays
        The masses of the clusters at each time (``ClusterHistory.masses``,
        :func:`particles.metastability.cluster_masses`).
    energy : array_like, shape (T,), optional
        E_β at each time (any energy: its mean over each state is reported).
    min_mass : float
        Clusters lighter than this (a fraction of ``total``) are stragglers, not counted.
    settled : float
        A frame counts once its counted clusters hold at least this fraction of ``total``; earlier frames (the
        clusters still forming) belong to no state.
    min_duration : float
        Runs of one count shorter than this (last − start) between two others are transients and are dropped.
    total : float
        The total mass (1 for probability measures).

    Returns
    -------
    MetastableStates
    """
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise ValueError(f"`t` must be a non-empty increasing 1-d array of finite times, got shape {t.shape}.")
    masses = _masses(masses, t.size)
    for name, v, lo, hi in (("min_mass", min_mass, 0.0, 1.0), ("settled", settled, 0.0, 1.0)):
        if not lo <= v <= hi:
            raise ValueError(f"`{name}` must lie in [{lo}, {hi}], got {v!r}.")
    if not min_duration >= 0:
        raise ValueError(f"`min_duration` must be >= 0, got {min_duration!r}.")
    if not total > 0:
        raise ValueError(f"`total` must be positive, got {total!r}.")
    if energy is not None:
        energy = np.asarray(energy, dtype=float)
        if energy.shape != t.shape:
            raise ValueError(f"`energy` must have the shape of `t` {t.shape}, got {energy.shape}.")
    count = np.array([int(np.sum(m >= min_mass * total)) for m in masses])
    held = np.array([float(np.sum(m[m >= min_mass * total])) for m in masses])
    counted = (count >= 1) & (held >= settled * total * (1.0 - 1e-12))
    # runs of one count over the counted frames: [first index, last index, count]
    runs = []
    for i in np.flatnonzero(counted):
        if runs and runs[-1][2] == count[i]:  # the same count, after uncounted frames or not: one state
            runs[-1][1] = i
        else:
            runs.append([i, i, int(count[i])])
    if min_duration > 0 and len(runs) > 2:  # transients between two other runs are dropped, equal neighbours joined
        kept = [runs[0]]
        for r in runs[1:-1]:
            if t[r[1]] - t[r[0]] >= min_duration:
                kept.append(r)
        kept.append(runs[-1])
        runs = []
        for r in kept:
            if runs and runs[-1][2] == r[2]:
                runs[-1][1] = r[1]
            else:
                runs.append(list(r))
    states = []
    for j, (a, b, c) in enumerate(runs):
        end = t[runs[j + 1][0]] if j + 1 < len(runs) else np.inf
        e = float(np.mean(energy[a:b + 1])) if energy is not None else float("nan")
        states.append(MetastableState(c, float(t[a]), float(end), float(t[b]), e))
    merges = tuple((s2.start, s1.count, s2.count) for s1, s2 in zip(states[:-1], states[1:]) if s2.count < s1.count)
    return MetastableStates(tuple(states), merges, float(t[-1]))
