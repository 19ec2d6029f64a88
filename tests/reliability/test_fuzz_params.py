"""Property-based fuzzing (hypothesis, fixed seed) of the theory and simulator parameter
validation, at the library level and through the `lr` command line.

Each property takes arbitrary input (NaN, inf, negatives, subnormals, huge numbers, wrong types,
junk strings) and accepts exactly two outcomes: a refusal (InvalidParameter / UserError, or exit
code 2 with one `lr: error:` line) or a result that is finite, strict JSON and satisfies the
theory's invariants. Anything else (another exception, a NaN, a traceback) fails.

benchmarks/bench_fuzz_params.py runs the same properties (PROPERTIES below) with a large budget.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cli
from lrcore.errors import UserError
from lrsim.theory import HybridParams, InvalidParameter, check_theorem, hybrid, optimize
from lrsim.theory.formulas import f_step, f_sync, parallel_dim, sd_speedup
from lrsim.theory.optimize import MAX_TIES
from lrsim.theory.params import MAX_BUDGET
from lrsim.theory.point import speedup_point

RTOL = 1e-9
TRIED = Counter()          # inputs tried per property (the benchmark reports these)

# --- strategies -------------------------------------------------------------------------------
EDGE_UNIT = [0.0, 1.0, 5e-324, 2.2250738585072014e-308, 1e-300, 1 - 2**-53, 0.5, 1e-12, 1 - 1e-12]
UNIT = st.one_of(st.floats(0.0, 1.0), st.sampled_from(EDGE_UNIT))
ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
JUNK = st.one_of(st.none(), st.booleans(), st.text(max_size=3), st.integers(-10**30, 10**30))
PARAM = st.one_of(UNIT, UNIT, ANY_FLOAT, JUNK)
MODE = st.one_of(st.sampled_from(["sync", "async"]), st.sampled_from(["", "SYNC", "bogus"]), st.none())
DIM = st.one_of(st.integers(1, 64), st.integers(-3, 10**12), st.integers(10**9, 10**400),
                st.floats(allow_nan=True), st.booleans())
BUDGET = st.one_of(st.integers(1, 128), st.integers(-3, 400),
                   st.sampled_from([0, MAX_BUDGET + 1, 10**30, 2.5, float("nan"), True, "8"]))
WEIRD_TEXT = ["nan", "NaN", "inf", "-inf", "1e999", "-1e999", "", " ", "abc", "0x10", "1_000", "½",
              "--json", "-M", "1e-400", "5e-324", "-0", "+1", "1e3", "99999999999999999999"]


def number_text(valid):
    """Option values as a user might type them: mostly from the valid strategy, then junk."""
    return st.one_of(valid, valid, st.sampled_from(WEIRD_TEXT),
                     ANY_FLOAT.map(repr), st.integers(-10**25, 10**25).map(str),
                     st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=5))


UNIT_TEXT = number_text(UNIT.map(repr))


def run_cli(argv):
    """`lr ARGV` in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def strict_json(text: str) -> dict:
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name} in output")
    return json.loads(text, parse_constant=refuse)


def check_refusal_line(code, out, err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("lr: error: "), (code, err, out[-200:])
    assert "Traceback" not in err


def finite_leaves(obj, path="$"):
    """Every number in a JSON document is finite (strict_json already refuses NaN/Infinity)."""
    if isinstance(obj, float):
        assert math.isfinite(obj), path
    elif isinstance(obj, dict):
        for k, v in obj.items():
            finite_leaves(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            finite_leaves(v, f"{path}[{i}]")


# --- (a) theory, library level ----------------------------------------------------------------
def params_or_none(a1, c1, a2, c2, mode):
    try:
        p = HybridParams(a1, c1, a2, c2, mode)
    except InvalidParameter:
        return None
    for v in (p.alpha1, p.c1, p.alpha2, p.c2):
        assert not isinstance(v, bool) and math.isfinite(v) and 0.0 <= v <= 1.0
    assert p.mode in ("sync", "async")
    return p


def check_point(res, p):
    """Invariants of f, g, h at one (k1, k2) (App. B Thms. 1-2, Sec. 3.3)."""
    f, g, h, k1, k2 = res["f"], res["g"], res["h"], res["k1"], res["k2"]
    for v in (f, g, h):
        assert isinstance(v, float) and math.isfinite(v) and v > 0
    assert h == f * g
    assert g <= k2 * (1 + RTOL)
    if p.alpha2 < 1:
        assert g <= (1 + RTOL) / (1 - p.alpha2)
    if p.c2 == 0:
        assert g >= 1 - RTOL
    if k1 == 1:
        assert abs(f - 1) <= RTOL
    if k2 == 1:
        assert g == 1.0
    if p.mode == "sync":
        assert f <= k1 * (1 + RTOL)
        if p.alpha1 < 1:
            assert f <= (1 + RTOL) / (1 - p.alpha1)
    else:
        assert f >= 1 - RTOL and f >= float(f_sync(p.alpha1, p.c1, k1)) * (1 - RTOL)
    ceiling = res["step_ceiling"]
    if ceiling is None:
        assert p.alpha1 == 1.0 and p.c1 < 1e-300
    else:
        assert math.isfinite(ceiling) and ceiling >= 1 - RTOL and f <= ceiling * (1 + RTOL)
    limit = res["depth_limit"]
    assert (limit is None) == (p.c1 == 0 or not math.isfinite(1.0 / p.c1))
    if limit is not None:
        assert isinstance(limit, int) and limit >= 1
    json.dumps(res, allow_nan=False)


def prop_speedup_point(a1, c1, a2, c2, mode, k1, k2):
    TRIED["theory.speedup_point"] += 1
    p = params_or_none(a1, c1, a2, c2, mode)
    if p is None:
        return
    try:
        res = speedup_point(p, k1, k2)
    except InvalidParameter as e:
        assert e.name in ("k1", "k2")
        return
    check_point(res, p)


def prop_optimize(a1, c1, a2, c2, mode, budget):
    TRIED["theory.optimize"] += 1
    p = params_or_none(a1, c1, a2, c2, mode)
    if p is None:
        return
    try:
        opt = optimize(p, budget)
    except InvalidParameter as e:
        assert e.name == "budget"
        return
    b = opt.best
    assert math.isfinite(b.speedup) and b.speedup >= 1 - RTOL   # (1, 1) = AR is always feasible
    assert float(parallel_dim(p.c1, b.k1, p.mode)) * b.k2 <= budget
    assert abs(b.speedup - float(hybrid(p.alpha1, p.c1, b.k1, p.alpha2, p.c2, b.k2, p.mode))) <= RTOL * b.speedup
    for other in (opt.pure_sd, opt.pure_lr, opt.best_hybrid):
        if other is not None:
            assert other.speedup <= b.speedup * (1 + RTOL)
    assert 1 <= len(opt.ties) <= MAX_TIES and opt.n_ties >= len(opt.ties)
    if budget <= 48:  # exhaustive check of the O(M) optimiser against the whole grid
        brute = max(float(f_step(p.alpha1, p.c1, k1, p.mode)) * float(sd_speedup(p.alpha2, p.c2, k2))
                    for k1 in range(1, budget + 1) for k2 in range(1, budget + 1)
                    if float(parallel_dim(p.c1, k1, p.mode)) * k2 <= budget)
        assert abs(b.speedup - brute) <= RTOL * brute
    json.dumps(check_theorem(opt).as_dict(), allow_nan=False)


# --- (b) theory through the CLI ---------------------------------------------------------------
def prop_cli_speedup(values, k1, k2, mode, as_json):
    TRIED["cli.theory-speedup"] += 1
    argv = ["theory", "speedup", "--k1", k1]
    for flag, v in values.items():
        argv += [flag, v]
    argv += (["--k2", k2] if k2 is not None else []) + (["--mode", mode] if mode else [])
    code, out, err = run_cli(argv + (["--json"] if as_json else []))
    if code != 0:
        return check_refusal_line(code, out, err)
    assert err == "" and {"--alpha1", "--c1"} <= set(values)
    if as_json:
        res = strict_json(out)
        p = HybridParams(**{k: float(values[f"--{k}"]) if f"--{k}" in values else 0.0
                            for k in ("alpha1", "c1", "alpha2", "c2")}, mode=res["mode"])
        check_point(res, p)


def prop_cli_optimize(values, budget, mode):
    TRIED["cli.theory-optimize"] += 1
    argv = ["theory", "optimize", "--budget", budget, "--json"]
    for flag, v in values.items():
        argv += [flag, v]
    code, out, err = run_cli(argv + (["--mode", mode] if mode else []))
    if code != 0:
        return check_refusal_line(code, out, err)
    res = strict_json(out)
    finite_leaves(res)
    assert res["speedup"] >= 1 - RTOL and res["n_ties"] >= 1


# --- (c) simulator: Options -> Config validation, and `lr simulate` ---------------------------
SMALL = {"--k1": (1, 6), "--depth": (1, 4), "--width": (1, 3), "--k2": (1, 5), "--requests": (1, 2),
         "--steps": (1, 5), "--seed": (0, 10**20)}
BAD_INT = ["0", "-1", "1025", "99999999999999999999", "1.5", "nan", "", "abc", "1e3"]


def int_text(lo, hi):
    return st.one_of(st.integers(lo, hi).map(str), st.sampled_from(BAD_INT))


def prop_sim_options(opts):
    from lrsim.sim.build import MAX_KNOB, MAX_WORKLOAD, Options, build

    TRIED["sim.build"] += 1
    try:
        cfg = build(Options(**opts))
    except UserError as e:
        assert str(e) and "\n" not in str(e)
        return
    for v in (cfg.depth, cfg.width, cfg.k2):
        assert isinstance(v, int) and 1 <= v <= MAX_KNOB
    assert isinstance(cfg.k1, int) and 1 <= cfg.k1 <= MAX_KNOB + 1   # --depth d runs k1 = d + 1
    assert cfg.policy in ("ar", "sd", "lr-sync", "lr-async", "lr-stage")
    wl = cfg.workload
    for name in ("alpha1", "alpha2"):
        v = getattr(wl, name, None)
        assert v is None or (math.isfinite(v) and 0 <= v <= 1), (name, v)
    assert getattr(wl, "steps", 1) <= MAX_WORKLOAD and getattr(wl, "n_requests", 1) <= MAX_WORKLOAD
    rate = getattr(wl, "rate", None)
    assert rate is None or (rate > 0 and math.isfinite(rate))
    assert math.isfinite(cfg.c1) and cfg.c1 >= 0


def prop_cli_simulate(values, policy, ideal, scenario):
    TRIED["cli.simulate"] += 1
    argv = ["simulate", "--json"] + (["--ideal"] if ideal else []) + (["--policy", policy] if policy else [])
    argv += ["--scenario", scenario] if scenario else []
    argv += ["--steps", values.pop("--steps", "3"), "--requests", values.pop("--requests", "1")]
    for flag, v in values.items():
        argv += [flag, v]
    code, out, err = run_cli(argv)
    if code != 0:
        return check_refusal_line(code, out, err)
    res = strict_json(out)
    finite_leaves(res)
    assert res["speedup"] > 0 and res["tokens_per_s"] >= 0


OPTS_FLOAT = st.one_of(st.none(), UNIT, ANY_FLOAT)
SIM_OPTIONS = st.fixed_dictionaries({}, optional={
    "policy": st.sampled_from(["ar", "sd", "lr-sync", "lr-async", "lr-stage", "bogus", ""]),
    "alpha1": OPTS_FLOAT, "c1": OPTS_FLOAT, "alpha2": OPTS_FLOAT, "c2": OPTS_FLOAT,
    "k1": st.integers(-2, 2000), "depth": st.integers(-2, 2000), "width": st.integers(-2, 2000),
    "k2": st.integers(-2, 2000), "ideal": st.booleans(), "budget": OPTS_FLOAT,
    "requests": st.integers(-2, 10**20), "rate": OPTS_FLOAT, "steps": st.integers(-2, 10**20),
    "seed": st.integers(-2, 10**20),
    "scenario": st.sampled_from(["h100-paper", "cpu-2core", "h100-measured", "bogus", "../x.toml"]),
    "equal_resources": st.booleans()})

# name -> (property, strategies, CI examples). The benchmark scales the examples up.
PROPERTIES = {
    "theory.speedup_point": (prop_speedup_point, (PARAM, PARAM, PARAM, PARAM, MODE, DIM, DIM), 600),
    "theory.optimize": (prop_optimize, (PARAM, PARAM, PARAM, PARAM, MODE, BUDGET), 300),
    "cli.theory-speedup": (prop_cli_speedup, (
        st.fixed_dictionaries({}, optional={f: UNIT_TEXT for f in ("--alpha1", "--c1", "--alpha2", "--c2")}),
        number_text(st.integers(1, 64).map(str)), st.one_of(st.none(), number_text(st.integers(1, 64).map(str))),
        st.sampled_from([None, "sync", "async", "bogus"]), st.booleans()), 200),
    "cli.theory-optimize": (prop_cli_optimize, (
        st.fixed_dictionaries({}, optional={f: UNIT_TEXT for f in ("--alpha1", "--c1", "--alpha2", "--c2")}),
        number_text(st.integers(1, 128).map(str)), st.sampled_from([None, "sync", "async", "bogus"])), 150),
    "sim.build": (prop_sim_options, (SIM_OPTIONS,), 300),
    "cli.simulate": (prop_cli_simulate, (
        st.fixed_dictionaries({}, optional={**{f: UNIT_TEXT for f in ("--alpha1", "--c1", "--alpha2", "--c2")},
                                            **{f: int_text(*r) for f, r in SMALL.items()},
                                            "--budget": number_text(st.integers(1, 64).map(str)),
                                            "--rate": number_text(st.floats(1e-3, 1e3).map(repr))}),
        st.sampled_from([None, "ar", "sd", "lr-sync", "lr-async", "lr-stage", "bogus"]), st.booleans(),
        st.sampled_from([None, "cpu-2core", "h100-paper", "bogus"])), 60),
}


def hypothesis_test(name, max_examples, **extra):
    """The property `name` as a hypothesis test with a fixed seed (derandomize)."""
    fn, strategies, _ = PROPERTIES[name]
    kw = {"max_examples": max_examples, "deadline": None, "derandomize": True, "database": None,
          "suppress_health_check": list(HealthCheck)} | extra
    return settings(**kw)(given(*strategies)(fn))


test_speedup_point = hypothesis_test("theory.speedup_point", PROPERTIES["theory.speedup_point"][2])
test_optimize = hypothesis_test("theory.optimize", PROPERTIES["theory.optimize"][2])
test_cli_theory_speedup = hypothesis_test("cli.theory-speedup", PROPERTIES["cli.theory-speedup"][2])
test_cli_theory_optimize = hypothesis_test("cli.theory-optimize", PROPERTIES["cli.theory-optimize"][2])
test_sim_options = hypothesis_test("sim.build", PROPERTIES["sim.build"][2])
test_cli_simulate = hypothesis_test("cli.simulate", PROPERTIES["cli.simulate"][2])


def test_inputs_tried_reported():
    """Runs last in this module: prints how many inputs each property saw (pytest -s), and checks
    that every property that ran saw the examples it asked for (a strategy that hypothesis
    cannot draw from, or an early exit, would test far fewer inputs than the README claims)."""
    print("\nfuzz inputs tried:", dict(TRIED), "total", sum(TRIED.values()))
    if not TRIED:
        pytest.skip("run with this module's property tests")
    for name, n in TRIED.items():
        assert n >= PROPERTIES[name][2], (name, n, PROPERTIES[name][2])
