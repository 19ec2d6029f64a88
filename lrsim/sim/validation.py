"""Simulated speedups under --ideal against the closed forms (paper Sec. 3 and App. B): the tables
of docs/simulator.md, written by benchmarks/bench_validation.py to benchmarks/results/validation.md.

    python -m lrsim.sim.validation            # prints the markdown (a few CPU-minutes)

Every row is one seeded simulation of REQUESTS x STEPS steps (seed 1: the rows share it, so their
deviations are correlated) with a delta-method standard error over requests.
"""
from __future__ import annotations

import math

from ..theory import async_s1, async_s2, depth_limit, f_sync, sd_speedup
from .config import Config
from .runner import simulate

REQUESTS, STEPS, SEED = 16, 600, 1


def _sim(policy, alpha1, c1, **kw) -> tuple[float, float]:
    s = simulate(Config.ideal_setup(policy, alpha1, c1, steps=STEPS, requests=REQUESTS, seed=SEED, **kw))
    return s["latency_speedup"], s["latency_speedup_se"]


def exact_rows() -> list[dict]:
    """lr-sync against f_sync, lr-stage against S1/S2, sd against g, lr-sync + SD against f g."""
    out = []

    def row(label, params, form, exact, **kw):
        policy = label.split("+")[0]             # lr-sync+SD: lr-sync with SD inside (kw's k2)
        sim, se = _sim(policy, kw.pop("alpha1", 0.0), kw.pop("c1", 0.0), **kw)
        out.append({"policy": label, "params": params, "simulated": sim, "se": se, "form": form,
                    "exact": exact, "z": (sim - exact) / se})

    for a, c, k in [(0.4, 0.05, 2), (0.63, 0.1, 4), (0.8, 0.2, 4)]:
        row("lr-sync", f"a1={a} c1={c} k1={k}", "f_sync", float(f_sync(a, c, k)), alpha1=a, c1=c, k1=k)
    for a, c, k in [(0.63, 0.1, 6), (0.8, 0.2, 3), (0.8, 0.2, 8)]:
        s1 = k >= depth_limit(c)
        row("lr-stage", f"a1={a} c1={c} k1={k}", "S1" if s1 else "S2",
            float(async_s1(a, c) if s1 else async_s2(a, c, k)), alpha1=a, c1=c, k1=k)
    for a2, c2, k2 in [(0.3, 0.0, 3), (0.7, 0.05, 4)]:
        row("sd", f"a2={a2} c2={c2} k2={k2}", "g", float(sd_speedup(a2, c2, k2)), k2=k2, alpha2=a2, c2=c2)
    a, c, k, a2, c2, k2 = 0.63, 0.1, 3, 0.7, 0.05, 4
    row("lr-sync+SD", f"a1={a} c1={c} k1={k} a2={a2} c2={c2} k2={k2}", "f*g",
        float(f_sync(a, c, k) * sd_speedup(a2, c2, k2)), alpha1=a, c1=c, k1=k, k2=k2, alpha2=a2, c2=c2)
    return out


def async_rows() -> list[dict]:
    """lr-async (the event-level pipeline) against the stage model's S2(D), S2(D+1) and S1."""
    out = []
    for a, c, d in [(0.63, 0.1, 1), (0.63, 0.1, 2), (0.63, 0.1, 4), (0.63, 0.1, 8), (0.5, 0.2, 2),
                    (0.8, 0.05, 3), (0.7, 0.2, 8)]:
        sim, se = _sim("lr-async", a, c, depth=d)
        lo = float(async_s2(a, c, d)) if d < depth_limit(c) else float(async_s1(a, c))
        hi = float(async_s2(a, c, d + 1)) if d + 1 < depth_limit(c) else float(async_s1(a, c))
        out.append({"params": f"a1={a} c1={c} depth={d}", "depth": d, "simulated": sim, "se": se,
                    "s2_d": lo, "s2_d1": hi, "s1": float(async_s1(a, c)), "gap_vs_s2_d1": sim / hi - 1})
    return out


def product_rows() -> list[dict]:
    """LR + SD over the product of its parts: lr-sync + SD over f_sync g (exact, its k1 parallel
    steps share one SD draw), lr-async (depth 4) + SD over simulated lr-async x g."""
    a, c, k1, depth = 0.63, 0.1, 3, 4
    out = []
    for a2, c2, k2 in [(0.7, 0.05, 4), (0.3, 0.0, 3)]:
        g = float(sd_speedup(a2, c2, k2))
        sim, se = _sim("lr-sync", a, c, k1=k1, k2=k2, alpha2=a2, c2=c2)
        prod = float(f_sync(a, c, k1)) * g
        out.append({"policy": "lr-sync+SD", "params": f"a1={a} c1={c} k1={k1} a2={a2} c2={c2} k2={k2}",
                    "ratio": sim / prod, "se": se / prod})
        both, se_b = _sim("lr-async", a, c, depth=depth, k2=k2, alpha2=a2, c2=c2)
        lr, se_lr = _sim("lr-async", a, c, depth=depth)
        r = both / (lr * g)
        out.append({"policy": "lr-async+SD", "params": f"a1={a} c1={c} depth={depth} a2={a2} c2={c2} k2={k2}",
                    "ratio": r, "se": r * math.hypot(se_b / both, se_lr / lr)})
    return out


def measure() -> dict:
    return {"requests": REQUESTS, "steps": STEPS, "seed": SEED,
            "exact": exact_rows(), "async": async_rows(), "product": product_rows()}


def render(doc: dict) -> str:
    lines = [f"`--ideal`, {doc['requests']} requests x {doc['steps']} steps, seed {doc['seed']} "
             "(the rows share the seed, so their deviations are correlated).", "",
             "| policy | parameters | simulated | ± SE | form | exact | (sim-exact)/SE |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['policy']} | {r['params']} | {r['simulated']:.4f} | {r['se']:.4f} | {r['form']} | "
              f"{r['exact']:.4f} | {r['z']:+.2f} |" for r in doc["exact"]]
    lines += ["", "| lr-async | simulated ± SE | S2(D) | S2(D+1) | S1 | sim / S2(D+1) - 1 |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {r['params']} | {r['simulated']:.4f} ± {r['se']:.4f} | {r['s2_d']:.4f} | {r['s2_d1']:.4f} | "
              f"{r['s1']:.4f} | {100 * r['gap_vs_s2_d1']:+.2f}% |" for r in doc["async"]]
    lines += ["", "| LR + SD | parameters | over the product of its parts ± SE |", "|---|---|---|"]
    lines += [f"| {r['policy']} | {r['params']} | {r['ratio']:.4f} ± {r['se']:.4f} |" for r in doc["product"]]
    return "\n".join(lines) + "\n"


def main():
    print(render(measure()), end="")


if __name__ == "__main__":
    main()
