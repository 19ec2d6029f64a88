"""Golden summaries: a seeded scenario per policy, committed under tests/golden/sim/ and diffed.

Regenerate after an intended change with  LRSIM_UPDATE_GOLDEN=1 pytest tests/sim/test_sim_golden.py
and review the diff (git diff tests/golden/sim) before committing it.
"""
import json
import os
from pathlib import Path

import pytest

from lrsim.sim import scenario
from lrsim.sim.runner import simulate

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "sim"
CASES = {
    "ar": ("h100-paper", dict(policy="ar")),
    "sd": ("h100-paper", dict(policy="sd", k2=4)),
    "lr-sync": ("h100-paper", dict(policy="lr-sync", k1=3)),
    "lr-async": ("h100-paper", dict(policy="lr-async", depth=3, width=2)),
    "lr-stage": ("h100-paper", dict(policy="lr-stage", k1=3)),
    "lr-async-sd": ("h100-paper", dict(policy="lr-async", depth=2, k2=3)),
    "lr-async-cpu": ("cpu-2core", dict(policy="lr-async", depth=2)),
}


def _round(x):
    if isinstance(x, float):
        return float(f"{x:.9g}")
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_round(v) for v in x]
    return x


def same(got, want, rel: float = 1e-8) -> bool:
    """The golden comparison: the same structure, integers and strings equal, floats equal to
    their 9 significant digits up to the last one. Two machines' floating point can differ in
    the last bits (a sum's order in numpy's SIMD kernels), which rounding to 9 digits turns into
    a last-digit flip when a value sits on a rounding boundary (0.0107673776 / ...777 on two
    machines for one estimate); a regression moves far more than 1e-8."""
    if isinstance(got, float) or isinstance(want, float):
        return (isinstance(got, (int, float)) and isinstance(want, (int, float))
                and abs(got - want) <= rel * max(abs(got), abs(want)))
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k], rel) for k in got)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(same(a, b, rel) for a, b in zip(got, want))
    return got == want


def _summary(name):
    scen, knobs = CASES[name]
    cfg = scenario.load(scen, seed=11)
    for k, v in knobs.items():
        setattr(cfg, k, v)
    cfg.workload.n_requests = 4
    cfg.workload.steps = 20
    cfg.workload.rate = 1.0 if scen == "h100-paper" else None
    return _round(simulate(cfg))


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_summary(name):
    path = GOLDEN / f"{name}.json"
    got = _summary(name)
    if os.environ.get("LRSIM_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    assert same(got, want), (got, want)
