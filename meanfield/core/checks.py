"""Argument checks shared by the public functions of every layer.

Each check returns the value in its canonical type or raises ``TypeError`` /
``ValueError`` naming the argument and what was received (docs/STYLE.md, 6).
"""

from __future__ import annotations

import inspect
import os
import sys
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

__all__ = ["real", "beta", "noise", "positive", "count", "square_matrix", "matrices_act_on", "time_span",
           "output_times", "progress", "progress_lines", "quiet", "positive_perturbation", "denominators",
           "particle_weights", "weights_fit",
           "user_stacklevel", "generator", "HARMONIC_TABLE_MAX", "DegreeBeyondReach", "harmonic_table"]


def real(value, name: str) -> float:
    """A real number (``TypeError`` otherwise): a Python or numpy int or float, or a 0-d numeric array; a string
    is refused although ``float("4")`` would read it (a number typed as text is a mistake upstream)."""
    if isinstance(value, (str, bytes, bytearray)) or (isinstance(value, np.ndarray) and value.dtype.kind not in "biuf"):
        raise TypeError(f"`{name}` must be a real number, got {value!r} ({type(value).__name__}).")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a real number, got {value!r}.") from None


def beta(value, name: str = "beta", repulsive: bool = False) -> float:
    """An inverse temperature: a real number (not a string or a bool: ``TypeError``), finite and >= 0; any finite
    real where ``repulsive`` (β < 0 weighs far tokens more: self-attention on the sphere, MATH.md §13)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be a real number, got {value!r} (bool).")
    b = real(value, name)
    if not np.isfinite(b) or (b < 0 and not repulsive):
        raise ValueError(f"`{name}` must be finite{'' if repulsive else ' and >= 0'}, got {value!r}.")
    return b


def noise(value, name: str = "noise") -> float:
    """A noise strength D: finite and >= 0 (0 is the deterministic model)."""
    d = real(value, name)
    if not np.isfinite(d) or d < 0:
        raise ValueError(f"`{name}` must be finite and >= 0 (the diffusion coefficient D), got {value!r}.")
    return d


def positive(value, name: str) -> float:
    """A finite number > 0."""
    v = real(value, name)
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"`{name}` must be a positive finite number, got {value!r}.")
    return v


def count(value, name: str, minimum: int = 1) -> int:
    """An integer (not a bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def weights_fit(weights, shape, name: str = "weights", exact: bool = False) -> tuple:
    """``shape`` (the particles' shape without d, (n,) or (batch, n)) after checking, on the shapes alone (no pass
    over the data: the inner loops call it), that ``weights`` broadcasts to it (has it, where ``exact``);
    ``ValueError`` naming ``name``, its shape and the shape required otherwise."""
    shape = tuple(int(k) for k in shape)
    if exact and np.shape(weights) == shape:
        return shape
    if exact:
        raise ValueError(f"`{name}` must have the particles' shape {shape}, one weight per particle, got shape "
                         f"{np.shape(weights)}.")
    try:
        if np.broadcast_shapes(np.shape(weights), shape) == shape:
            return shape
    except ValueError:
        pass
    alt = f" or {shape}" if len(shape) > 1 else ""
    raise ValueError(f"`{name}` must have shape (n,) = ({shape[-1] if shape else 0},){alt}, one weight per particle, "
                     f"got shape {np.shape(weights)}.")


def particle_weights(weights, shape, name: str = "weights", nonnegative: bool = True) -> np.ndarray:
    """Weights of particles whose positions have shape ``shape`` + (d,): equal weights 1/n (n = ``shape[-1]``) where
    ``weights`` is None, else a float copy broadcast to ``shape`` — (n,) or a scalar for every system, or ``shape``
    itself, e.g. (batch, n). ``ValueError`` naming ``name``, its shape and the shape required where they do not
    broadcast (numpy's own message names neither), or where a weight is not finite (or negative, where
    ``nonnegative``)."""
    if weights is None:
        return np.full(shape, 1.0 / shape[-1])
    shape = weights_fit(weights, shape, name)
    w = np.broadcast_to(np.asarray(weights, dtype=float), shape).copy()
    if not np.all(np.isfinite(w)) or (nonnegative and np.any(w < 0)):
        raise ValueError(f"`{name}` must be finite{' and non-negative' if nonnegative else ''}.")
    return w


def generator(rng, name: str = "rng") -> np.random.Generator:
    """``numpy.random.default_rng(rng)``: None (fresh entropy), a non-negative integer seed or a sequence of them, a
    ``numpy.random.SeedSequence``, ``BitGenerator`` or ``Generator``; ``TypeError``
    (a string, a float) or ``ValueError`` (a negative seed) naming ``name`` otherwise (numpy's own message speaks
    of SeedSequence entropy, not of the argument that was given)."""
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"`{name}` must be None, a non-negative integer seed (or a sequence of them), a "
                        f"numpy.random.SeedSequence or a numpy.random.Generator, got {rng!r} "
                        f"({type(rng).__name__}; numpy: {exc}).") from None


def positive_perturbation(f_of_theta, amplitudes, degrees, amplitude, modes) -> None:
    """``ValueError`` naming ``amplitude`` unless the law 1 + Σ_k a_k g_k(θ) drawn by ``uniform_noise`` is positive,
    g_k a trigonometric polynomial of degree ``degrees[k]`` in θ with |g_k| <= 1 (cos(kθ + φ) on the circle, the
    normalised zonal polynomials of cos θ): its minimum over 64 (max degree + 1) equal steps of θ, less the
    bound Σ k²|a_k| δ²/8 on what the samples miss (|g_k''| <= k², Bernstein), must be > 0. Σ |a_k| < 1 always is."""
    a = np.abs(np.asarray(amplitudes, dtype=float))
    k = np.asarray(degrees, dtype=float)
    if a.sum() < 1.0:
        return
    theta = np.linspace(0.0, 2.0 * np.pi, 64 * (int(k.max()) + 1), endpoint=False)
    delta = theta[1]
    values = f_of_theta(theta)
    low = float(np.min(values)) - float(np.sum(k * k * a)) * delta * delta / 8.0
    if not low > 0:
        raise ValueError(
            f"`amplitude` = {amplitude!r} with `modes` = {modes}: the law drawn, 1 + Σ a_k g_k(θ) with Σ|a_k| = "
            f"{a.sum():.3g}, reaches {float(np.min(values)):.3g} at θ = {float(theta[np.argmin(values)]):.3g}: a "
            f"density cannot be negative. Take amplitude < 1/modes = {1.0 / modes:.3g} (positive for every draw), "
            "or another rng.")


def square_matrix(M, name: str, min_dim: int = 2) -> np.ndarray | None:
    """A finite d×d matrix, d >= ``min_dim``, as a private read-only copy; ``None`` stays ``None``."""
    if M is None:
        return None
    A = np.array(M, dtype=float, ndmin=2)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < min_dim:
        raise ValueError(f"`{name}` must be a square d×d matrix with d >= {min_dim}, got shape {np.shape(M)}.")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"`{name}` contains non-finite entries.")
    A.setflags(write=False)
    return A


def matrices_act_on(dim: int | None, d: int, where: str = "the points live in", *, at: float | None = None) -> None:
    """``ValueError`` unless a model whose matrices are ``dim`` × ``dim`` acts on points of R^``d`` (``dim`` None:
    identities or callables, any d): "the model's matrices are 3×3 but <where> R^2." — ``where`` names what is in
    R^d ("the particles live in", "<grid> lives in", "<grid> is on S^2 ⊂"), ``at`` the time of a time-dependent
    model's matrices. The one check of the models' dimension against the points', wherever they meet."""
    if dim is not None and dim != d:
        what = "matrices" if at is None else "time-dependent matrices"
        when = "" if at is None else f" at t = {at:g}"
        raise ValueError(f"the model's {what} are {dim}×{dim}{when} but {where} R^{d}.")


def time_span(t_span, t_eval=None) -> tuple[float, float, np.ndarray]:
    """``(t0, t1, t_eval)`` for an integration over ``t_span`` with outputs ``t_eval`` (default the two ends)."""
    try:
        t0, t1 = (float(v) for v in t_span)
    except (TypeError, ValueError):
        raise ValueError(f"`t_span` must be a pair (t0, t1) of numbers, got {t_span!r}.") from None
    if not (np.isfinite(t0) and np.isfinite(t1)) or not t1 > t0:
        raise ValueError(f"`t_span` must be finite with t1 > t0, got {t_span!r}.")
    if t_eval is None:
        return t0, t1, np.array([t0, t1])
    te = np.asarray(t_eval, dtype=float)
    if te.ndim != 1 or te.size == 0:
        raise ValueError(f"`t_eval` must be a non-empty 1-dimensional array, got shape {te.shape}.")
    if not np.all(np.isfinite(te)):
        raise ValueError("`t_eval` contains non-finite values.")
    if np.any(np.diff(te) <= 0):
        raise ValueError("`t_eval` must be strictly increasing.")
    if te[0] < t0 or te[-1] > t1:
        raise ValueError(f"`t_eval` must lie within `t_span` = ({t0:g}, {t1:g}), got [{te[0]:g}, {te[-1]:g}].")
    return t0, t1, te


def output_times(t_eval) -> np.ndarray:
    """Output times that also give the start: 1-D, at least two, finite, strictly increasing."""
    t = np.asarray(t_eval, dtype=float)
    if t.ndim != 1 or t.size < 2:
        raise ValueError(f"`t_eval` must be 1-dimensional with at least 2 times (start and end), got shape {t.shape}.")
    if not np.all(np.isfinite(t)):
        raise ValueError("`t_eval` contains non-finite values.")
    if np.any(np.diff(t) <= 0):
        raise ValueError("`t_eval` must be strictly increasing.")
    return t


_QUIET: ContextVar[bool] = ContextVar("meanfield_quiet", default=False)


@contextmanager
def quiet():
    """Within it "auto" progress (``progress=None``) is off, also in calls a library function makes for the caller
    (the distances of a study run): the command line's --quiet. An explicit ``progress=True`` still shows."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


def progress(value, name: str = "progress") -> bool:
    """Whether to show a progress bar: ``None`` means "auto", on exactly where standard error is a terminal
    (``sys.stderr.isatty()``: off under pytest, in pipes and in logs) and not within :func:`quiet`; a bool is
    taken as given."""
    if value is None:
        if _QUIET.get():
            return False
        isatty = getattr(sys.stderr, "isatty", None)
        try:
            return bool(isatty()) if callable(isatty) else False
        except (ValueError, OSError):  # a closed or detached stream
            return False
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be True, False or None (auto: on where standard error is a terminal), "
                        f"got {value!r}.")
    return bool(value)


def progress_lines(value, name: str = "progress") -> bool:
    """Whether to write periodic progress lines where no bar is shown (``meanfield.integrate.ProgressTracker``'s
    ``lines``): for "auto" progress (``None``) where standard error is no terminal — a batch job's log, a pipe — and
    not within :func:`quiet`, so that a long run says it is alive; never for an explicit ``True`` (the bar) or
    ``False`` (nothing). ``TypeError`` as :func:`progress` for anything but a bool or None."""
    shown = progress(value, name)
    return value is None and not shown and not _QUIET.get()


def denominators(velocity, bound, signed: bool) -> None:
    r"""Refuse a self-attention (SA) field of point sums that divides by a normalising sum indistinguishable from 0.

    SA's field is X(q) = c N(q)/D(q), D(q) = Σ_j w_j e^{β(⟨q, y_j⟩ − 1)}, the sums truncated within T_D of D, so that
    the returned bound is (T_N + |X/c| T_D)/(|D̃| − T_D), ``inf`` where |D̃| <= T_D (SA's X = ∇_S log(K_β*μ)/β,
    docs/MATH.md §2.1; the bound: |N/D − Ñ/D̃| <= (T_N + |Ñ/D̃| T_D)/|D| and |D| >= |D̃| − T_D). Non-negative
    weights make D > 0: there ``inf`` means "no guarantee" and the field is returned, unless it is not finite (D̃
    underflowed to 0). Signed weights (``signed``: some w_j < 0) can make D vanish: where |D̃| <= T_D the query may sit
    at a pole of X, whose value, even its sign, is then undetermined. Both raise, never an inf or NaN returned.

    Parameters
    ----------
    velocity : ndarray, shape (m, ...)
        The field at the m queries.
    bound : ndarray, shape (m,)
        Its truncation bound (``inf`` where |D̃| <= T_D).
    signed : bool
        Whether some weight is negative.

    Raises
    ------
    ValueError
        Naming ``weights`` and the first offending query's index. Costs one pass over ``bound`` where nothing is
        wrong (and one over ``velocity`` only where some bound is ``inf``).
    """
    unbounded = np.isinf(bound)
    if not unbounded.any():
        return
    v = np.asarray(velocity).reshape(bound.size, -1)
    blown = unbounded & ~np.all(np.isfinite(v), axis=1)
    bad = unbounded & signed | blown
    if bad.any():
        i = int(np.argmax(bad))
        why = (f"the weights are signed and at query {i} the normalising sum D = Σ_j w_j e^(β(⟨q, y_j⟩ − 1)) is "
               "within its error bound of 0, so the field c N/D may have a pole there (its value, even its sign, is "
               "undetermined)" if signed else
               f"the SA field at query {i} is not finite (its normalising sum D = Σ_j w_j e^(β(⟨q, y_j⟩ − 1)) "
               "underflowed to 0)")
        raise ValueError(f"`weights`: {why}; {int(bad.sum())} of the {bound.size} queries are so.")


#: the directory holding the library's packages (meanfield, particles, validation)
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def user_stacklevel(packages: tuple = ("meanfield", "particles", "validation")) -> int:
    """The ``stacklevel`` for a ``warnings.warn`` in the calling function that points at the first frame outside
    ``packages`` (default the whole library: the user's call of ``solve``, ``simulate``, ...), however deep in them
    the warning is raised: Python 3.12's ``skip_file_prefixes`` computed by hand (the venv runs 3.11)."""
    prefixes = tuple(os.path.join(_ROOT, p) + os.sep for p in packages)
    frame, level = inspect.currentframe().f_back, 1  # the frame of the function that warns
    while frame is not None and frame.f_code.co_filename.startswith(prefixes):
        frame, level = frame.f_back, level + 1
    return level


#: The longest table of harmonic multipliers a kernel's degree search may build (2²², 32 MB of doubles): the search
#: tabulates k = 0 … ~4|β| (the circle, S²), so an inverse temperature past ~10⁶ would allocate gigabytes before
#: anything could refuse it (a generated study with β ~ 10⁹ held 23.6 GB in ``meanfield check`` and was killed).
HARMONIC_TABLE_MAX = 2**22


class DegreeBeyondReach(ValueError):
    """The kernel e^{β⟨x,y⟩} is too sharp for any harmonic sum: its degree search would tabulate more than
    :data:`HARMONIC_TABLE_MAX` multipliers. Pair sums (exact at any β) remain; a grid cannot resolve such a kernel."""


def harmonic_table(size: int, beta: float) -> int:
    """``size`` where it is at most :data:`HARMONIC_TABLE_MAX`, else :class:`DegreeBeyondReach` naming ``beta``."""
    if size > HARMONIC_TABLE_MAX:
        raise DegreeBeyondReach(
            f"`beta` = {beta:g}: the kernel's harmonics reach beyond degree ~{size // 4:g} (a table of {size:g} "
            f"multipliers, more than {HARMONIC_TABLE_MAX}): no grid or harmonic sum resolves a kernel this sharp; "
            "lower beta (particles: the pairwise sums take any beta).")
    return size
