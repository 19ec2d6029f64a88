"""Deciding afresh as the real backend does (Config.adaptive_scope "run", TraceWorkload's
carried prior): one Estimator for every request, acceptance included, its price checked against
the commits, starting from what the recorded run's Estimator held at its first decision. On the
committed real corpus traces/load-adaptive-f26m2-3 (no engine)."""
import json
from pathlib import Path

import pytest

from lrcore.adaptive import Estimates
from lrcore.errors import UserError
from lrsim.calib.calibrate import calibrate
from lrsim.calib.profile import Profile
from lrsim.calib.replay import ReplayWorkload, _knobs, as_the_run
from lrsim.sim import scenario
from lrsim.sim.config import Config
from lrsim.sim.runner import run

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "traces/load-adaptive-f26m2-3/gsm8k"


def _records(level: int, config: str) -> list[dict]:
    path = CORPUS / f"c{level}" / f"{config}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _block(level: int, config: str, rnd: int) -> list[dict]:
    return [r for r in _records(level, config) if r["run"]["flags"]["load_round"] == rnd]


@pytest.fixture(scope="module")
def profile():
    return Profile(calibrate([str(CORPUS / "c1" / "ar.jsonl"), str(CORPUS / "c1" / "lr-d2.jsonl")]))


def _replay(prof, block, as_run: bool):
    """As predict_record and bench_load's replay_worlds do (as_the_run: the run's scope and
    recorded knobs)."""
    wl = ReplayWorkload(block, source="test", recorded_decisions=False, carried_prior=as_run)
    cfg = prof.to_config(block[0]["mode"], workload=wl, **_knobs(block[0], prof))
    if as_run:
        as_the_run(cfg, wl)
        assert cfg.adaptive_scope == "run" and cfg.adaptive == wl.adaptive_config()
    return run(cfg)


def test_the_carried_prior_is_the_first_admitted_records_first_decision():
    block = _block(2, "lr-adaptive-d2", 3)
    assert len(block) == 2
    first = min(block, key=lambda r: r["load"]["admitted_s"])
    want = Estimates.from_dict(first["adaptive"]["decisions"][0]["estimates"])
    got = ReplayWorkload(block, recorded_decisions=False, carried_prior=True).adaptive_prior()
    assert got == want
    other = max(block, key=lambda r: r["load"]["admitted_s"])
    assert Estimates.from_dict(other["adaptive"]["decisions"][0]["estimates"]) != want
    # the run's first problem carries the run's prior as recorded (rescaled at its first timed
    # step), not its first decision's snapshot (the neutral prior before the rescale)
    r0 = _block(1, "lr-adaptive-d2", 0)
    assert r0[0]["adaptive"]["learned_from"] == 0
    got0 = ReplayWorkload(r0, recorded_decisions=False, carried_prior=True).adaptive_prior()
    assert got0 == Estimates.from_dict(r0[0]["adaptive"]["prior"])
    assert got0.target_step_s > 5 * r0[0]["adaptive"]["decisions"][0]["estimates"]["target_step_s"]
    # the run's knobs as recorded
    conf = ReplayWorkload(block, recorded_decisions=False, carried_prior=True).adaptive_config()
    assert conf.max_depth == 2 and conf.widths == (1,) and conf.k2s == (1,)
    assert conf.__dict__ == {**first["adaptive"]["config"], "widths": (1,), "k2s": (1,)}
    # replaying the recorded decisions, or deciding from the neutral prior: no carried prior
    assert ReplayWorkload(block, carried_prior=True).adaptive_prior() is None
    assert ReplayWorkload(block, recorded_decisions=False).adaptive_prior() is None


def test_as_run_starts_where_the_real_run_was(profile):
    """Round 2 at 1 in flight: the real run had learned (acceptance 0.24, speculation paid 0.78
    of its price) and decided depth 0 at every root. Deciding afresh from the neutral prior the
    simulator speculates at its first root; as the real backend, from the run's estimates, it
    decides depth 0 there too, and its replayed speedup is AR's, as measured."""
    block = _block(1, "lr-adaptive-d2", 2)
    rec = block[0]
    assert {d["depth"] for d in rec["adaptive"]["decisions"]} == {0}
    assert rec["adaptive"]["decisions"][0]["estimates"]["alpha_by_depth"][0] < 0.3
    _, neutral = _replay(profile, block, as_run=False)
    s_run, as_run = _replay(profile, block, as_run=True)
    first = lambda w: w.decisions.summary()["log"][0]["depth"]  # noqa: E731
    assert first(neutral) > 0
    assert first(as_run) == 0
    assert as_run.decisions.summary()["by_depth"] == {"0": as_run.decisions.decisions}
    assert as_run.stats.proposed == 0 < neutral.stats.proposed
    # one Estimator for the run, its price checked as the real backend's _observe_paid: four
    # decisions at depth 0; the first interval (the prompt's prefill) is never steady, the last
    # ends with no decision: the 2nd-3rd and 3rd-4th intervals, one decay apart
    n = len(rec["steps"])
    assert as_run.decisions.decisions == n == 4
    assert as_run.adaptive_costs.paid[False].n == pytest.approx(1 + 0.95)
    assert as_run.adaptive_costs.paid[True].n == 0
    ar = _block(1, "ar", 2)
    ar_cfg = profile.to_config("ar", workload=ReplayWorkload(ar, source="ar"), **_knobs(ar[0], profile))
    s_ar, _ = run(ar_cfg)
    assert s_run["wall_s"] == pytest.approx(s_ar["wall_s"], rel=0.05)


def test_run_scope_shares_one_estimator_and_checks_the_price():
    """Synthetic: in scope "run" every request observes into the run's Estimator (its depth-1
    acceptance has the verdicts; the price check has the commits); in scope "request" (the
    default) the run's Estimator holds step costs only."""
    seen = {}
    for scope in ("request", "run"):
        cfg = scenario.load("h100-paper")
        cfg.policy, cfg.adaptive_scope = "lr-adaptive", scope
        cfg.workload.n_requests, cfg.workload.steps = 4, 40
        _, world = run(cfg)
        est = world.adaptive_costs
        seen[scope] = (est.alpha[0].weight, est.paid[True].n + est.paid[False].n)
    assert seen["request"] == (0.0, 0.0)
    assert seen["run"][0] > 0 and seen["run"][1] > 0


def test_a_bad_scope_is_a_one_line_error(tmp_path, run_lr):
    with pytest.raises(UserError, match="adaptive_scope must be one of request, run"):
        Config(adaptive_scope="all", target=scenario.load("h100-paper").target).validate()
    src = (ROOT / "lrsim/scenarios/h100-paper.toml").read_text()
    assert "[policy]" in src
    bad = tmp_path / "bad.toml"
    bad.write_text(src.replace("[policy]", "[policy]\nadaptive_scope = \"everything\""))
    with pytest.raises(UserError, match="adaptive_scope") as e:
        scenario.load(str(bad))
    assert "\n" not in str(e.value)
    code, _, err = run_lr("replay", CORPUS / "c1" / "lr-adaptive-d2.jsonl", "--holdout", "0.5",
                          "--afresh-as-run")
    assert code != 0 and "--afresh-as-run applies with --adaptive-afresh" in err
    assert "Traceback" not in err


def test_lr_simulate_takes_the_scope(run_lr):
    """`lr simulate --adaptive-scope run`: the run's one Estimator decides (at acceptance 0.2 the
    first request, alone, tries depth 0 for a while; sharing the others' verdicts, it does not);
    a bad scope is Typer's one-line error."""
    outs = {}
    for scope in ("request", "run"):
        code, out, err = run_lr("simulate", "--policy", "lr-adaptive", "--requests", "4",
                                "--steps", "40", "--alpha1", "0.2", "--adaptive-scope", scope,
                                "--json")
        assert code == 0, err
        outs[scope] = json.loads(out)
    assert outs["request"]["adaptive"]["by_request"] != outs["run"]["adaptive"]["by_request"]
    code, _, err = run_lr("simulate", "--policy", "lr-adaptive", "--adaptive-scope", "all")
    assert code != 0 and "--adaptive-scope" in err and "Traceback" not in err
    # only lr-adaptive has an Estimator to scope
    code, _, err = run_lr("simulate", "--policy", "lr-async", "--adaptive-scope", "run")
    assert code != 0 and "--adaptive-scope applies to --policy lr-adaptive, not lr-async" in err
    assert len(err.strip().splitlines()) == 1


def test_the_committed_scope_figures():
    """benchmarks/results/adaptive_scope.{json,md} (benchmarks/adaptive_scope.py) and what
    docs/adaptive.md says of them: on the 200-request ramp lr+sd-adaptive in the run's scope
    (1.232) beats the best static (SD alone, 1.201; the request scope 1.152); on the smaller ramp
    (best static lr+sd depth 2 k2 3, 1.456) it does not (1.418; request scope 1.448), nor at 64
    and 128 requests (1.121, 1.026 against 1.224, 1.049)."""
    import sys
    sys.path.insert(0, str(ROOT))
    from benchmarks.adaptive_scope import render

    results = ROOT / "benchmarks" / "results"
    d = json.loads((results / "adaptive_scope.json").read_text())
    assert (results / "adaptive_scope.md").read_text() == render(d)
    c = d["cases"]
    big, small = c["ramp, 200 requests"], c["ramp, 120 requests of 20 steps"]
    f = lambda x: f"{x:.3f}"  # noqa: E731
    assert (big["seeds"], big["best_static"]["label"], f(big["best_static"]["speedup"])) == (8, "sd k2=3", "1.201")
    assert [f(big["adaptive"][k]) for k in ("lr+sd-adaptive run", "lr+sd-adaptive request")] == ["1.232", "1.152"]
    assert max(big["adaptive"], key=big["adaptive"].get) == "lr+sd-adaptive run"
    assert (small["best_static"]["label"], f(small["best_static"]["speedup"])) == ("lr+sd depth=2 k2=3", "1.456")
    assert [f(small["adaptive"][k]) for k in ("lr+sd-adaptive run", "lr+sd-adaptive request")] == ["1.418", "1.448"]
    assert all(v < small["best_static"]["speedup"] for v in small["adaptive"].values())
    for n, run_scope, best in ((64, "1.121", "1.224"), (128, "1.026", "1.049")):
        row = c[f"{n} requests at t = 0"]
        assert (f(row["adaptive"]["lr+sd-adaptive run"]), f(row["best_static"]["speedup"])) == (run_scope, best)
        assert row["best_static"]["label"] == "sd k2=3"
        assert all(v < row["best_static"]["speedup"] for v in row["adaptive"].values())
