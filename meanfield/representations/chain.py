r"""Chains of representations: which apply, the options they take, and the run that hands over between them.

A chain is a sequence of representations (:mod:`.grid`, :mod:`.lagrangian`). The first advances the initial
measure; where it stops because it can no longer resolve the solution at its stated accuracy
(status RESOLUTION_LOST), the next goes on from its last state, and so on; the last one's status is the run's.
Every hand-over is recorded (:class:`~meanfield.representations.base.Handover`).

=================  ====================================================================================
``representation``  chain
=================  ====================================================================================
"auto" (default)   grid → panels → nodes where the panels apply (zonal models on the circle and S²;
                   grid → nodes with a strategy the panels do not take), grid → nodes on the zonal sphere
                   S^{d-1} (its rings; without noise), else the grid alone
"grid"             the grid alone
"lagrangian"       panels → nodes where the panels apply, else nodes
"panels", "nodes"  that representation alone
a sequence         those names in that order, e.g. ("grid", "nodes")
=================  ====================================================================================

A :class:`~meanfield.lagrangian.LagrangianMeasure` starts the nodes (its points, fixed).
"""

from __future__ import annotations

import numpy as np

from ..core import checks
from ..integrate import Status
from ..integrate.monitor import ResolutionError
from ..core.numerics import EXP_MAX
from .base import Handover, Hooks, Part, Settings, Solution
from .grid import GridRepresentation
from .lagrangian import NodesRepresentation, PanelsRepresentation

__all__ = ["REPRESENTATIONS", "register", "plan", "check_options", "run_chain", "solve_product"]

#: Every representation by name.
REPRESENTATIONS = {r.name: r for r in (GridRepresentation(), PanelsRepresentation(), NodesRepresentation())}


def register(representation):
    """Add ``representation`` to :data:`REPRESENTATIONS` under its name (the product domains' representations register
    from their modules, :mod:`meanfield.solvers.cylinder` and :mod:`meanfield.solvers.frequencies`, which lie above this layer);
    returns it."""
    REPRESENTATIONS[representation.name] = representation
    return representation


def _offers(rep, model, start) -> tuple[str, ...]:
    """The strategy names a representation offers for this model and start."""
    if rep.name == "grid" and start.grid is not None:
        return tuple(start.domain.grid_strategies(model, start.grid))
    return getattr(rep, "strategies", ())


def plan(representation, model, start, strategy: str = "auto") -> list:
    """The chain for ``representation`` (module table) from ``start``, each member checked to apply."""
    domain = start.domain
    own = getattr(domain, "representation", None)  # a product domain's one representation (domains/products.py)
    if own is not None:
        if representation not in (None, "auto", own, (own,)):
            raise ValueError(f"`representation` {representation!r}: a density on the {domain.description} is "
                             f"advanced by the {own} representation alone: pass {own!r} (or 'auto', None).")
        why = REPRESENTATIONS[own].refusal(model, domain, start)
        if why is not None:
            raise ValueError(f"`representation` {representation!r}: the {own} representation does not apply: {why}.")
        return [REPRESENTATIONS[own]]
    grid, panels, nodes = (REPRESENTATIONS[k] for k in ("grid", "panels", "nodes"))
    panels_apply = panels.refusal(model, domain) is None
    panels_take = strategy in ("auto",) + panels.strategies
    if start.grid is None:  # a Lagrangian measure (solve admits no other point frame)
        if representation not in (None, "auto", "lagrangian", "nodes", ("nodes",)):
            raise ValueError(f"a LagrangianMeasure is advanced as one, by fixed nodes: `representation` must be "
                             f"'nodes' (or 'lagrangian', 'auto', None), got {representation!r}.")
        names = ["nodes"]
    elif representation in (None, "auto"):
        # fixed nodes follow where panels apply, or where the domain's rings need no panels (the zonal sphere)
        nodes_follow = panels_apply or (domain.nodes_follow_grid and nodes.refusal(model, domain) is None)
        names = ["grid"] + (["panels"] if panels_apply and panels_take else []) + (["nodes"] if nodes_follow else [])
    elif representation == "lagrangian":
        names = (["panels"] if panels_apply and panels_take else []) + ["nodes"]
    elif isinstance(representation, str):
        if representation not in REPRESENTATIONS:
            raise ValueError(f"`representation` must be 'auto', 'lagrangian', one of {tuple(REPRESENTATIONS)} or a "
                             f"sequence of those, got {representation!r}.")
        names = [representation]
    else:
        try:
            names = list(representation)
        except TypeError:
            raise ValueError(f"`representation` must be a name or a sequence of names, got {representation!r}.") from None
        bad = [n for n in names if n not in REPRESENTATIONS]
        if not names or bad or len(set(names)) != len(names):
            raise ValueError(f"`representation` must be a sequence of distinct names of {tuple(REPRESENTATIONS)}, "
                             f"got {representation!r}.")
    chain = [REPRESENTATIONS[n] for n in names]
    for i, rep in enumerate(chain):
        why = rep.refusal(model, domain, start if i == 0 else None)
        if why is None and i > 0 and rep.name == "grid":
            why = "a grid cannot take over from a Lagrangian representation"
        if why is not None:
            raise ValueError(f"`representation` {representation!r}: the {rep.name} representation does not apply: "
                             f"{why}.")
    return chain


def solve_product(model, start, t_span, t_eval, settings: Settings) -> Solution:
    """What :func:`meanfield.solve` runs for a density on a product domain, ``settings`` already checked: its one
    representation planned and checked, run on the one integrator into one :class:`Solution` (no progress bar, no
    users' trackers). The documented entry points :func:`meanfield.solvers.cylinder.solve_radial` and
    :func:`meanfield.solvers.frequencies.solve`, which lie beside :mod:`meanfield.solve` in the layers, are views of it;
    ``KeyboardInterrupt`` where the run was interrupted."""
    t0, t1, t_eval = checks.time_span(t_span, t_eval)
    chain = plan(None, model, start)
    chain[0].check(settings, model, start, t0, first=True)
    solution = run_chain(chain, model, start, t0, t1, t_eval, settings, Hooks())
    if solution.status is Status.INTERRUPTED:
        raise KeyboardInterrupt(solution.message)
    return solution


def check_options(chain, given: dict, model, start) -> None:
    """Refuse an option no representation of the chain takes (naming it and the chain), ``method``/``dt`` that
    the first one does not take, and a strategy none of them offers."""
    names = tuple(r.name for r in chain)
    for option in given:
        takers = [r.name for r in chain if option in r.options]
        if not takers:
            owners = [r.name for r in REPRESENTATIONS.values() if option in r.options]
            raise ValueError(f"`{option}` does not apply to the representation chain {names}: it applies to "
                             f"the {' and the '.join(owners)}.")
        if option in ("method", "dt") and chain[0].name not in takers:
            raise ValueError(f"`{option}` sets the integrator of the chain's first representation, the {chain[0].name}, "
                             f"which does not take it (the panels step by their recorded Dormand–Prince 8(5,3)); use "
                             f"representation='nodes' for fixed nodes advanced by `method`.")
    strategy = given.get("strategy")
    if strategy is not None and strategy != "auto":
        offered = {s for i, r in enumerate(chain) for s in _offers(r, model, start if i == 0 else None)}
        if strategy not in offered:
            raise ValueError(f"`strategy` {strategy!r} does not apply to the representation chain {names}; it offers "
                             f"{('auto',) + tuple(sorted(offered))}.")


def run_chain(chain, model, start, t0: float, t1: float, t_eval, settings: Settings, hooks: Hooks) -> Solution:
    """Run the chain from ``start`` at t0 through the outputs ``t_eval`` to t1 and gather one :class:`Solution`."""
    parts, handovers = [], []
    t = t0
    for i, rep in enumerate(chain):
        outputs = t_eval[t_eval >= t] if i == 0 else t_eval[t_eval > t]
        try:
            part = rep.run(model, start, t, t1, outputs, settings, hooks, first=i == 0)
        except ResolutionError as refused:  # the initial state itself is not resolved: bad input, raised with it
            if refused.initial:
                only = Part(rep.name, [t], [start], Status.RESOLUTION_LOST, refused.reason, t, start, "", "")
                refused.solution = _assemble(model, [only], [], hooks, (t0, t1))
                hooks.finish(t, start, Status.RESOLUTION_LOST)
            raise
        parts.append(part)
        if part.status is not Status.RESOLUTION_LOST or i + 1 == len(chain):
            break
        nxt = chain[i + 1]
        handovers.append(Handover(part.t_reached, rep.name, nxt.name, part.message, nxt.accuracy))
        start, t = part.last, part.t_reached
    solution = _assemble(model, parts, handovers, hooks, (t0, t1))
    hooks.finish(solution.t_reached, parts[-1].last, solution.status)
    return solution


def _assemble(model, parts, handovers, hooks, t_span) -> Solution:
    times, frames, names = [], [], []
    for p in parts:
        times += p.times
        frames += p.frames
        names += [p.name] * len(p.frames)
    last = parts[-1]
    stopped = last.status in (Status.RESOLUTION_LOST, Status.FAILED, Status.EVENT)
    if stopped and (not times or times[-1] < last.t_reached):  # the last state it held, at its own time
        times.append(last.t_reached)
        frames.append(last.last)
        names.append(last.name)
    domain = last.last.domain
    beta = domain.energy_beta(model)
    has_energy = beta is not None and beta <= EXP_MAX
    grid = [p for p in parts if p.name == "grid"]
    steps = {k: np.array([v for p in grid for v in getattr(p, k)]) for k in ("t_steps", "mass_steps", "energy_steps")}
    words = [f"the {h.source} handed over to the {h.target} at t = {h.t:.6g} ({h.reason})" for h in handovers]
    return Solution(
        t=np.array(times),
        frames=tuple(frames),
        mass=np.array([f.mass() for f in frames]),
        energy=np.array([f.energy(beta) for f in frames]) if has_energy else None,
        t_steps=steps["t_steps"], mass_steps=steps["mass_steps"],
        energy_steps=steps["energy_steps"] if has_energy else None,
        refinements=tuple((float(t), int(a), int(b)) for p in grid for t, a, b in p.refinements),
        nfev=sum(p.nfev for p in parts), nsteps=sum(p.nsteps for p in parts),
        status=last.status, message="; ".join(words + [last.message]),
        method=parts[0].method, strategy=parts[0].strategy, representation=tuple(names),
        handovers=tuple(handovers), t_events=tuple(np.array(te) for te in hooks.t_events),
        t_reached=float(last.t_reached), t_span=t_span, hint=last.hint, outflow=sum(p.outflow for p in parts),
        diagnostics={k: v for p in parts for k, v in p.diagnostics.items()},
    )
