"""``meanfield check`` accepts a study exactly when ``meanfield run`` starts it (issue 39, item 1).

Two studies passed ``check`` and were refused by ``run`` after seconds of work: [time] representation = "lagrangian"
and [time] method = "dop853", each with noise (the Lagrangian nodes carry no diffusion; DOP853 has no
integrating-factor form for the noise's DΔ). ``check`` now asks :func:`meanfield.solvers.solve.prepare`, the checks and plan
that ``solve`` runs first (:func:`meanfield.study.preflight.solver`).

The property: studies generated over the schema — every domain, every model kind (the registry's study kinds, of the
domain's manifold and of others), every [time], [particles], [distances], [stationary] option with values of each
kind, heads, random and scaled matrices, per-layer weight files with feed-forward blocks — are accepted by
``check`` (read + :func:`~meanfield.study.preflight.check`, what ``meanfield check`` does) if and only if the run
reaches its integrators: :meth:`meanfield.integrate.Integrator.run` is replaced by a stop that asks the integrator's
own refusals first (:meth:`~meanfield.integrate.Integrator.check`: where DOP853 with noise was refused) and takes no
step. The density's integrator is reached through
``study.run``; where the study also has particles, their integrator through the runner's particle stage; a
[stationary] study reaches its particles' integrator after the branch (or finishes, without particles). A refusal
must be a :class:`StudyError` (one line naming the key); any other exception fails the test.

The default run takes 500 generated studies (about 7 s on one core) and always the explicit examples of the two
studies of the issue; the slow test (``-m slow``) draws 1200 (at least 500 distinct). Both are derandomized by a fixed
seed: the same studies on every run (a random draw once met a study of 1100 s and 5.66 GB, see
:func:`test_sinkhorn_on_grid_nodes_is_checked_within_the_memory_of_a_few_rows`).
"""

from __future__ import annotations

import collections
from unittest import mock

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

import meanfield.analysis.stationary
from meanfield import domains
from meanfield.integrate import Integrator
from meanfield.models import registry
from meanfield.study import StudyError, build, config, preflight, read, run, runner
from meanfield.study import stationary as study_stationary


class _Reached(Exception):
    """Raised in place of an integration: the integrator was built and accepted its problem and method
    (:meth:`~meanfield.integrate.Integrator.check`, which its ``run`` asks first)."""


def _stop_at_first_step(self, t0, y0, t_eval, t_end=None):
    self.check()  # the integrator's own refusals (where DOP853 with noise was refused), before any evaluation
    raise _Reached(type(self.problem).__name__)


_STUDY_KINDS = tuple(k.name for k in registry.kinds(study=True))

#: Values drawn for each [model] parameter of a kind (by name), and for each [time] option.
_PARAMETERS = {"beta": [0.0, 1.0, 4.0, 800.0], "normalized": [True, False], "noise": [0.0, 0.05],
               "causal": [False, False, True], "tau": [0.5, 1.0], "b": [-1.0, 0.0]}
_TIME = {"method": list(config.METHODS), "dt": [0.01], "refine": [True, False], "max_n": [64],
         "representation": list(config.SCHEMA["time"]["representation"].choices),
         "lagrangian_nodes": ["panels", "grid"], "lagrangian_tol": [1e-8], "max_points": [4096],
         "rtol": [1e-8], "atol": [1e-10], "tail_tol": [1e-6], "neg_tol": [1e-6], "energy_rtol": [1e-8]}

#: Mistakes a user makes, one of which a study carries now and then: (section, key, value); a function of the
#: tables for values that depend on them.
_MISTAKES = [("", "dimension", 2), ("", "dimension", 4), ("model", "kind", "softmax"), ("model", "kind", "self-attention"),
             ("model", "beta", -1.0), ("model", "tau", 1.0), ("time", "dt", 0.01), ("time", "lagrangian_nodes", "grid"),
             ("particles", "method", "rk45"), ("particles", "dt_factor", 0.05), ("distances", "p", [1.0]),
             ("initial", "kind", "gaussian"), ("initial", "kind", "uniform-noise"), ("grid", "n", 16),
             ("stationary", "noise", [0.3]), ("model", "Q", [[1.0, 0.0], [0.0, 1.0]]),
             ("model", "normalization", "pre"), ("model", "normalization", "peri"), ("model", "normalization", "ngpt"),
             ("model", "normalization", "mix"), ("model", "alpha", 0.2), ("model", "switch", 0.5)]


def _pick(draw, pool, none=0.5):
    """A value of ``pool``, or None (not given) with probability about ``none``."""
    return draw(st.sampled_from([None] * round(len(pool) * none / (1 - none)) + list(pool))) if pool else None


@st.composite
def studies(draw, weights_dir):
    """A study's tables (module docstring): a coherent study of a domain — its kinds, its dimension, its grid keys,
    its laws, [time] options that go together — with, one time in four, one mistake of :data:`_MISTAKES`. Each
    option is drawn among all the values the schema allows it, so the refusals that remain are those of the solver
    (the combinations) and of the mistakes: about half the studies pass the check, and both directions of the
    property are exercised."""
    domain = draw(st.sampled_from([d for d in config.DOMAINS if domains.get(d).positions is not None
                                   or not domains.get(d).has_positions]))  # "sequence" is reached by causal only
    dom = domains.get(domain)
    tables: dict = {"domain": domain, "seed": draw(st.integers(0, 3))}
    own = tuple(k.name for k in registry.kinds(dom.manifold, study=True))
    kind = _pick(draw, own, none=0.25)
    parameters = registry.get(kind or own[0]).parameters
    model = {p.name: v for p in parameters if (v := _pick(draw, _PARAMETERS.get(p.name, [p.default]))) is not None}
    if not dom.positions:
        model.pop("causal", None)
    if kind is not None:
        model["kind"] = kind
    causal = model.get("causal", False)

    grid = None
    if draw(st.integers(0, 4)) > 0:  # a density, mostly
        pools = {"n": [32, 64], "lmax": [12, 24], "backend": [None, "ducc0", "pyshtools"],
                 "bounds": [[[-4.0, 4.0]], [[-4.0, 4.0], [-4.0, 4.0]]], "shape": [64, 96], "positions": [None, 5]}
        grid = {k: v for k in dom.grid_parameters if (v := draw(st.sampled_from(pools[k]))) is not None}
        tables["grid"] = grid
    # the tokens' dimension: the domain's, any d of a sphere's particles, that of R^d's box
    if domain == "zonal":
        d = draw(st.sampled_from([3, 5, 16]))
        tables["dimension"] = d
    elif grid is not None and "bounds" in grid:
        d = len(grid["bounds"])
    else:
        d = draw(st.sampled_from([3, 4, 5])) if grid is None and dom.intrinsic_dimension(3) == 2 else \
            dom.check_dimension(None, False)
        if d != dom.check_dimension(None, False) or draw(st.booleans()):
            tables["dimension"] = d

    for name in ("Q", "K", "V"):
        value = _pick(draw, ["identity", "random", 0.5, "eye"], none=0.6)
        if value is not None:
            model[name] = np.eye(d).tolist() if value == "eye" else value
    heads = _pick(draw, [1, 2])
    if heads is not None:
        model["heads"] = heads
    if draw(st.integers(0, 3)) == 0:  # per-layer weights as a trained network's, with a feed-forward block or not
        for name in ("Q", "K", "V", "heads"):
            model.pop(name, None)
        arrays = draw(st.sampled_from(["attention", "feedforward", "both"]))
        beta = any(p.name == "beta" for p in parameters)
        model["weights"] = str(_weight_file(weights_dir, d, arrays, beta))
        for key in ("activation", "splitting") if arrays != "attention" else ():
            value = _pick(draw, list(config.SCHEMA["model"][key].choices), none=0.2)
            if value is not None:
                model[key] = value
    if model:
        tables["model"] = model

    # [initial]: a law of this domain with what it needs (laws given by grid values only with a grid)
    laws = [law for law in dom.initial_laws if grid is not None or law not in config.GRID_LAWS]
    law = _pick(draw, laws, none=0.3) if grid is not None or "uniform-noise" not in dom.initial_laws else \
        draw(st.sampled_from(laws))
    initial: dict = {} if law is None else {"kind": law}
    if law in (None, "uniform-noise"):
        initial["amplitude"] = draw(st.sampled_from([0.05, 0.5]))
        initial["modes"] = draw(st.sampled_from([1, 3]))
    if law == "von-mises-fisher":
        if d == 2 and draw(st.booleans()):
            initial["angles"] = [0.5]
        else:  # on the axis e_d, where the zonal sphere's laws are zonal
            initial["centres"] = [[0.0] * (d - 1) + [1.0]]
        initial["kappa"] = draw(st.sampled_from([[1.0], [8.0]]))
    if law == "poisson":  # on the axis e_d, where the zonal sphere's law is zonal
        initial["a"] = [0.0] * (d - 1) + [0.3]
    if law == "gaussian":
        initial["cov"] = draw(st.sampled_from([0.2, 0.3]))
    if causal and law in (None, "uniform-noise", "von-mises-fisher"):
        initial["twist"] = draw(st.sampled_from([0.0, 0.5]))
    if initial:
        tables["initial"] = initial

    # [time]: every option solve takes, and the study's own; dt with a fixed method, grid nodes with 'lagrangian'
    time = {"t_end": draw(st.sampled_from([0.1, 0.2])), "frames": draw(st.sampled_from([2, 3, 4]))}
    rare = ("refine", "max_n", "lagrangian_tol", "max_points", "tail_tol", "neg_tol", "energy_rtol")  # one chain's
    time.update({k: v for k, pool in _TIME.items()
                 if (v := _pick(draw, pool, none=0.9 if k in rare else 0.6)) is not None})
    if time.get("method") in ("rk45", "dop853"):
        time.pop("dt", None)
    if time.get("lagrangian_nodes") == "grid":
        time["representation"] = "lagrangian"
    tables["time"] = time

    # [stationary], [particles], [distances]
    if dom.bounded and draw(st.integers(0, 7)) == 0:
        tables["stationary"] = {"noise": [0.3], "points": 6}
    if grid is None or draw(st.booleans()):
        noisy = model.get("noise") or "stationary" in tables
        particles = {"n": draw(st.sampled_from([[8], [8, 16]])), "repeats": draw(st.sampled_from([1, 2])),
                     "method": "rk4" if noisy else draw(st.sampled_from(config.PARTICLE_METHODS))}
        if particles["method"] == "rk4":
            step = _pick(draw, ["dt", "dt_factor"])
            if step is not None:
                particles[step] = 0.01
        if draw(st.booleans()):
            particles["save_positions"] = False
        tables["particles"] = particles
        if grid is not None and "stationary" not in tables and draw(st.integers(0, 2)) == 0:
            tables["distances"] = {"p": draw(st.sampled_from([[1.0], [1.0, 2.0]]))}

    if draw(st.integers(0, 3)) == 0:  # one mistake
        section, key, value = draw(st.sampled_from(_MISTAKES))
        (tables.setdefault(section, {}) if section else tables)[key] = value
    return tables


def _weight_file(directory, d, arrays, beta=True):
    """An .npz of two layers of weights in dimension d: attention (Q, K, V, and β where the kind has one), a
    feed-forward block (W, A), or both (written once per content)."""
    path = directory / f"w{d}-{arrays}-{beta}.npz"
    if not path.exists():
        rng = np.random.default_rng(d)
        eye = np.broadcast_to(np.eye(d), (2, d, d))
        out = {}
        if arrays in ("attention", "both"):
            out.update(Q=eye + 0.1 * rng.standard_normal((2, d, d)), K=eye.copy(), V=0.5 * eye)
            if beta:
                out["beta"] = np.array([1.0, 2.0])
        if arrays in ("feedforward", "both"):
            out.update(W=0.1 * rng.standard_normal((2, d, 3)), A=rng.standard_normal((2, 3, d)))
        np.savez(path, **out)
    return path


def _check(tables) -> tuple[bool, str]:
    """What ``meanfield check`` says: (accepted, the refusal)."""
    try:
        preflight.check(read(tables), None, announce=False)
    except StudyError as exc:
        return False, str(exc)
    return True, ""


def _run(tables) -> tuple[bool, str]:
    """Whether the run reaches the solver of every part it starts — the density's integrator, the branch of a
    [stationary] study (:func:`meanfield.analysis.stationary.branch`, replaced by a stop), the particles' integrator: (reached,
    the refusal)."""
    try:
        with mock.patch.object(Integrator, "run", _stop_at_first_step), \
                mock.patch.object(meanfield.analysis.stationary, "branch", side_effect=_Reached("branch")):
            with pytest.raises(_Reached):  # every study solves something: its first solver stops the run
                run(tables, output=False, progress=False, plot=False)
            cfg = read(tables)
            if cfg["particles"] is None or cfg["grid"] is None and cfg.get("stationary") is None:
                return True, ""  # the run's one kind of solver was reached
            model = build.build_model(cfg)
            if cfg.get("stationary") is not None:  # the particles after the branch
                noise = cfg["stationary"]["noise"]
                stage = lambda: study_stationary.particle_order(cfg, model, noise, False)  # noqa: E731
            else:  # the particles after the density
                grid = build.build_grid(cfg)
                t_eval = np.array(cfg["time"]["t_eval"])
                stage = lambda: runner._particles(cfg, model, build.initial_density(cfg, grid), t_eval, False, {})  # noqa: E731
            with pytest.raises(_Reached):
                stage()
            return True, ""
    except StudyError as exc:
        return False, str(exc)


def _agree(tables, seen=None):
    checked, refusal = _check(tables)
    reached, refused = _run(tables)
    assert checked == reached, (f"check {'accepts' if checked else 'refuses'} but the run "
                                f"{'reaches its integrator' if reached else 'is refused'}: {refusal or refused}\n"
                                f"{tables}")
    if seen is not None:  # the study as read (every default filled in) where it was accepted
        seen.append((tables, checked, refusal, read(tables) if checked else None))


NOISY = {"domain": "circle", "grid": {"n": 32}, "model": {"beta": 1.0, "noise": 0.1}, "time": {"t_end": 0.2}}


@pytest.mark.parametrize("time, key", [({"representation": "lagrangian"}, "[time] representation"),
                                       ({"method": "dop853"}, "[time] method")])
def test_the_studies_of_the_issue_are_refused_by_check_naming_the_key(time, key):
    """The two studies that passed check and failed their run: refused by check, naming the key and the reason."""
    tables = {**NOISY, "time": {**NOISY["time"], **time}}
    checked, refusal = _check(tables)
    assert not checked and refusal.startswith(f"{key}: ")
    assert "noise" in refusal or "noisy model (D = 0.1)" in refusal
    assert "does not apply" not in refusal or "the nodes representation does not apply" in refusal  # grammatical
    assert _run(tables)[0] is False


#: The study a random draw of the property once met (issue: 1100 s, 5.66 GB resident): Sinkhorn attention on the
#: 9216 nodes of a 96 × 96 grid, by the Lagrangian nodes. Check and run evaluate the rate at the start (the nodes'
#: refusals), whose Sinkhorn potentials formed S and its log-sum-exp temporaries densely: 9216² doubles = 680 MB each.
#: The draws' seed (hypothesis.seed): the same studies on every run and machine, and after an edit of the
#: property's examples (derandomize alone seeds by a digest of the function's source). Of seeds 0, 1, 2 the one
#: whose 500 draws the default test took shortest (6.3 s on one core) and cover all it asserts (seeds 0 and 1 met no
#: accepted Sinkhorn, L2 study).
SEED = 2

SINKHORN_NODES = {"domain": "euclidean", "seed": 0, "grid": {"shape": 96, "bounds": [[-4.0, 4.0], [-4.0, 4.0]]},
                  "model": {"kind": "sinkhorn"},
                  "time": {"t_end": 0.1, "frames": 2, "representation": "lagrangian", "lagrangian_nodes": "grid"}}


def test_sinkhorn_on_grid_nodes_is_checked_within_the_memory_of_a_few_rows():
    """The study above is accepted by check (whose solve's prepare evaluates the nodes' rate once, as the run's
    does), and that evaluation holds O(n) memory: the potentials' log-sum-exps run by blocks of rows. Bound: the
    peak of the allocations during check (tracemalloc, which traces NumPy's) below a quarter of one dense n × n
    matrix (170 MB of 680 MB); blocked, it is two blocks of CHUNK = 2^21 entries (17 MB each) and the nodes' arrays.
    (Dense, check alone held 4.96 GB resident for 55 s.)"""
    import tracemalloc

    n = 96 * 96
    tracemalloc.start()
    try:
        accepted, refusal = _check(SINKHORN_NODES)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert accepted, refusal
    assert peak < n * n * 8 / 4, f"{peak / 1e6:.0f} MB"


@pytest.fixture(scope="module")
def weights_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("weights")


def _one(weights_dir, max_examples, seen=None, derandomize=True, seed=SEED):
    @hypothesis.seed(seed)
    @hypothesis.settings(max_examples=max_examples, deadline=None, database=None, derandomize=derandomize,
                         suppress_health_check=[hypothesis.HealthCheck.too_slow,
                                                hypothesis.HealthCheck.data_too_large,
                                                hypothesis.HealthCheck.filter_too_much])
    @hypothesis.given(tables=studies(weights_dir))
    @hypothesis.example(tables={**NOISY, "time": {"t_end": 0.1, "representation": "lagrangian"}})
    @hypothesis.example(tables={**NOISY, "time": {"t_end": 0.1, "method": "dop853"}})
    @hypothesis.example(tables={**NOISY, "time": {"t_end": 0.1, "method": "rk45"}})
    # causal USA at β = 800: the sequence domain's default particle step reads the rate scale, which overflows —
    # check refuses it as the run does (check used to ask only unit-vector domains for the rate scale)
    @hypothesis.example(tables={"domain": "circle", "model": {"beta": 800.0, "normalized": False, "causal": True,
                                                              "noise": 0.05},
                                "time": {"t_end": 0.1}, "particles": {"n": [8], "method": "rk4"}})
    # USA at β = 800 by the Lagrangian measure: the panels' (and nodes') sums overflow as they are built — check
    # refuses it as the run does (the Lagrangian representations' check used to build nothing)
    @hypothesis.example(tables={"domain": "circle", "seed": 0, "grid": {"n": 32},
                                "model": {"beta": 800.0, "normalized": False, "kind": "self-attention"},
                                "initial": {"amplitude": 0.05, "modes": 1},
                                "time": {"t_end": 0.1, "frames": 2, "representation": "lagrangian"}})
    # accepted studies of the two values the default run's fixed draw does not accept (the coverage it asserts):
    # the sequence domain, by causal attention, and the panels representation
    @hypothesis.example(tables={"domain": "circle", "seed": 0, "model": {"beta": 1.0, "causal": True},
                                "initial": {"kind": "uniform"}, "time": {"t_end": 0.1}, "particles": {"n": [8]}})
    @hypothesis.example(tables={"domain": "circle", "seed": 0, "grid": {"n": 32}, "model": {"beta": 1.0},
                                "time": {"t_end": 0.1, "representation": "panels"}})
    def prop(tables):
        _agree(tables, seen)

    prop()


def _accepted_cover(seen):
    """The studies check accepted (as read) meet every domain, model kind, [time] method and representation and
    particle method."""
    accepted = [cfg for _, ok, _, cfg in seen if ok]
    assert {cfg["domain"] for cfg in accepted} >= set(config.DOMAINS)  # "sequence" by causal studies
    assert {cfg["model"]["kind"] for cfg in accepted} == set(_STUDY_KINDS)
    for key in ("method", "representation"):
        assert {cfg["time"][key] for cfg in accepted} >= set(config.SCHEMA["time"][key].choices)
    assert {cfg["particles"]["method"] for cfg in accepted if cfg["particles"]} == set(config.PARTICLE_METHODS)
    return accepted


def test_check_accepts_exactly_the_studies_whose_run_reaches_its_integrator(weights_dir, monkeypatch):
    """500 generated studies (about 7 s on one core), 0 disagreements; the explicit examples pin the studies of the
    issue. The studies' memory budget is stated, 1 GB (``MEANFIELD_MEMORY``: below the suite's 2 GB a test), not
    half of whatever machine runs the suite: a generated study the preflight accepts must fit the test.

    Derandomized with a fixed seed (:data:`SEED`), as the slow test: the same studies on every run and machine. A
    random draw once met Sinkhorn on a 96 × 96 grid's nodes, which took 1100 s and 5.66 GB
    (:data:`SINKHORN_NODES`, now its own test): a default run that fails or stalls by chance on a fresh machine is
    a defect, and the fixed draw (283 distinct studies with hypothesis 6.170) is the one whose time and coverage
    were measured. What the accepted studies cover is asserted by the slow test only: another hypothesis release
    draws other studies from the same seed."""
    monkeypatch.setenv("MEANFIELD_MEMORY", "1GB")
    _one(weights_dir, 500)


@pytest.mark.slow
def test_check_means_run_over_1200_generated_studies(weights_dir, capsys):
    """The same property over 1200 generated studies (about 20 s on two cores): at least 500 distinct ones; every
    domain, model kind, [time] method and representation and particle method among those accepted, accepted studies
    with weight files, distances and [stationary], every activation and splitting given; both verdicts well
    represented. A summary is printed (refusals counted by the key they name)."""
    seen = []
    _one(weights_dir, 1200, seen)  # derandomized: the same studies on every run, the numbers reported
    distinct = {repr(t) for t, *_ in seen}
    accepted = _accepted_cover(seen)
    assert len(distinct) >= 500
    assert 0.2 * len(seen) < len(accepted) < 0.8 * len(seen)
    assert any(cfg["model"]["weights"] for cfg in accepted)
    for key in ("activation", "splitting"):  # given with weights files, accepted or not
        assert {t["model"][key] for t, *_ in seen if key in t.get("model", {})} == set(config.SCHEMA["model"][key].choices)
    assert any(cfg["distances"]["p"] for cfg in accepted) and any(cfg["stationary"] for cfg in accepted)
    reasons = collections.Counter(r.split(":")[0] for _, ok, r, _ in seen if not ok)
    with capsys.disabled():
        print(f"\ncheck ⇔ run: {len(seen)} generated studies ({len(distinct)} distinct), {len(accepted)} accepted by "
              f"check and reached their integrators, {len(seen) - len(accepted)} refused by both, 0 disagreements; "
              f"refusals by key: {dict(reasons.most_common())}")
