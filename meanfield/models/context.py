r"""Attention scaled with the context length: β_n, a function of the number of tokens n (MATH.md §13).

Long contexts (Chen, Lin, Polyanskiy & Rigollet, arXiv 2510.05554; Bruno, Chen, Lin, Polyanskiy & Rigollet, arXiv
2605.08505) take β_n = γ log n, or γ n^a: the temperature of the softmax follows the number of tokens it averages.
A :class:`ContextScaling` is that rule, given to a model as its β (``SelfAttention(ContextScaling.log(2.0))``), and
read in ONE place, :func:`at_context`, which returns the model with β = β_n for n tokens. The particles
(``particles.simulate``, ``particles.velocity``), the discrete layers (``particles.discrete_depth``,
``meanfield.solvers.depth.layer_map``) and the study files (``[model] beta_scaling = "2*log(n)"``, whose particle runs
resolve it for each N) call :func:`at_context` with their n; a density has no n, and ``meanfield.solve`` refuses a
model that still depends on it (:func:`context_refusal`).

An unresolved rule used as a number (β·x, float(β), β < 0, a repr's format) raises ``ValueError`` saying how to
resolve it: no code path can run with a rule where a number belongs.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["ContextScaling", "at_context", "context_dependent", "context_refusal", "parse_scaling"]

_NUMBER = r"[+]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_LOG = re.compile(rf"^\s*(?:({_NUMBER})\s*\*\s*)?log\s*\(\s*n\s*\)\s*$")
_POWER = re.compile(rf"^\s*(?:({_NUMBER})\s*\*\s*)?n\s*(?:\^|\*\*)\s*\(?\s*({_NUMBER})\s*\)?\s*$")


def _unresolved(self, *_args, **_kwargs):
    raise ValueError(f"β = {self.words} depends on the number of tokens n (MATH.md §13): resolve the model for n "
                     "tokens first, meanfield.models.at_context(model, n) (the particles and discrete layers do so "
                     "with their n; a density has no n).")


@dataclass(frozen=True, eq=False)
class ContextScaling:
    r"""β_n as a function of the number of tokens n (module docstring).

    Build it with :meth:`log` (β_n = γ log n), :meth:`power` (β_n = γ n^a) or :meth:`of` (any callable n ↦ β_n),
    or from a study file's text with :func:`parse_scaling` ("2*log(n)", "0.5*n^0.5").

    Attributes
    ----------
    rule : callable
        n ↦ β_n.
    words : str
        The rule in words, for titles and errors ("2 log n").
    gamma, exponent : float or None
        γ and a of the built-in rules (exponent None for γ log n; both None for a callable).
    """

    rule: object
    words: str
    gamma: float | None = None
    exponent: float | None = None

    @classmethod
    def log(cls, gamma: float) -> "ContextScaling":
        """β_n = γ log n, γ > 0 (Chen, Lin, Polyanskiy & Rigollet: the critical γ is 1/(1 − ρ))."""
        g = _positive(gamma, "gamma")
        return cls(lambda n: g * math.log(n), f"{g:g} log n", g, None)

    @classmethod
    def power(cls, gamma: float, exponent: float) -> "ContextScaling":
        """β_n = γ n^a, γ > 0, a finite (Bruno, Chen, Lin, Polyanskiy & Rigollet: iid keys on S^{d-1} are critical
        at a = 2/(d − 1))."""
        g = _positive(gamma, "gamma")
        a = float(exponent)
        if not math.isfinite(a):
            raise ValueError(f"`exponent` must be finite (β_n = γ n^a), got {exponent!r}.")
        return cls(lambda n: g * float(n) ** a, f"{g:g} n^{a:g}", g, a)

    @classmethod
    def of(cls, function, words: str | None = None) -> "ContextScaling":
        """Any callable n ↦ β_n (its values checked where they are taken: :meth:`at`)."""
        if not callable(function):
            raise TypeError(f"`function` must be a callable n ↦ β_n, got {function!r}.")
        return cls(function, words or f"β({getattr(function, '__name__', 'n')})(n)")

    def at(self, n, name: str = "beta") -> float:
        """β_n for n >= 1 tokens: ``ValueError`` naming ``name``, the rule and n where β_n is not finite or not > 0
        (γ log n at n = 1 is 0: one token has no context to scale with)."""
        if isinstance(n, (bool, np.bool_)) or int(n) != n or n < 1:
            raise ValueError(f"`n` (the number of tokens β_n = {self.words} is taken at) must be an integer >= 1, "
                             f"got {n!r}.")
        value = self.rule(int(n))
        try:
            b = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"`{name}`: β_n = {self.words} at n = {int(n)} is not a real number: {value!r}.") from None
        if not (math.isfinite(b) and b > 0):
            raise ValueError(f"`{name}`: β_n = {self.words} at n = {int(n)} must be positive and finite, got {b!r}.")
        return b

    def __repr__(self) -> str:
        return f"ContextScaling({self.words})"

    # a rule is not a number: every use of it as one says how to resolve it
    __float__ = __int__ = __index__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __add__ = __radd__ = \
        __sub__ = __rsub__ = __neg__ = __abs__ = __pow__ = __lt__ = __le__ = __gt__ = __ge__ = __format__ = \
        __array__ = _unresolved


def _positive(value, name):
    if isinstance(value, (bool, np.bool_, str)):
        raise TypeError(f"`{name}` must be a real number, got {value!r}.")
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"`{name}` must be positive and finite, got {value!r}.")
    return v


def parse_scaling(text: str) -> ContextScaling:
    """A study file's β_n: "γ*log(n)" or "log(n)" (β_n = γ log n), "γ*n^a" / "γ*n**a" / "n^a" (γ n^a); anything
    else ``ValueError`` naming the forms."""
    if not isinstance(text, str):
        raise TypeError(f"`beta_scaling` must be a string such as '2*log(n)' or '0.5*n^0.5', got {text!r}.")
    m = _LOG.match(text)
    if m:
        return ContextScaling.log(float(m.group(1)) if m.group(1) else 1.0)
    m = _POWER.match(text)
    if m:
        return ContextScaling.power(float(m.group(1)) if m.group(1) else 1.0, float(m.group(2)))
    raise ValueError(f"`beta_scaling` must read 'γ*log(n)' or 'γ*n^a' (γ > 0, a a number; e.g. '2*log(n)', "
                     f"'0.5*n^0.5'), got {text!r}.")


def _parts(model):
    """(field name, value) of a dataclass model, or () for anything else."""
    if not dataclasses.is_dataclass(model) or isinstance(model, type):
        return ()
    return tuple((f.name, getattr(model, f.name)) for f in dataclasses.fields(model))


def context_dependent(model) -> bool:
    """Whether ``model`` (a head, heads, a Transformer's blocks: any dataclass field, tuples of them) holds a
    :class:`ContextScaling` still to be resolved."""
    if isinstance(model, ContextScaling):
        return True
    if isinstance(model, tuple):
        return any(context_dependent(m) for m in model)
    return any(context_dependent(v) for _, v in _parts(model))


def at_context(model, n: int):
    """``model`` with each :class:`ContextScaling` replaced by its β_n for ``n`` tokens (the one place the rule is
    read; module docstring); the model itself where nothing depends on n. ``ValueError`` where β_n is not positive
    and finite, naming the weight, the rule and n."""
    if not context_dependent(model):
        return model
    if isinstance(model, tuple):
        return tuple(at_context(m, n) for m in model)
    changes = {}
    for name, value in _parts(model):
        if isinstance(value, ContextScaling):
            changes[name] = value.at(n, name)
        elif context_dependent(value):
            changes[name] = at_context(value, n)
    return dataclasses.replace(model, **changes)


def context_refusal(model) -> str | None:
    """Why a density solver cannot take ``model``: its β depends on the number of tokens n, which a density does not
    have (the mean-field limit of β_n = γ log n is β = ∞); None where nothing depends on n."""
    if not context_dependent(model):
        return None
    return ("its β depends on the number of tokens n (MATH.md §13), which a density does not have (n → ∞ sends "
            "β_n = γ log n to ∞): give the density solver the model of an n, meanfield.models.at_context(model, n), "
            "or run particles, which resolve β_n with their n")
