"""Simulated speedups under --ideal against the closed forms: the numbers in docs/simulator.md.

    python -m lrsim.sim.validation            # prints a markdown table (about a CPU-minute)
"""
from __future__ import annotations

from ..theory import async_s1, async_s2, depth_limit, f_sync, sd_speedup
from .config import Config
from .runner import simulate

REQUESTS, STEPS = 16, 600


def _sim(policy, alpha1, c1, seed=1, **kw):
    s = simulate(Config.ideal_setup(policy, alpha1, c1, steps=STEPS, requests=REQUESTS, seed=seed, **kw))
    return s["latency_speedup"], s["latency_speedup_se"]


def rows():
    out = []
    for a, c, k in [(0.4, 0.05, 2), (0.63, 0.1, 4), (0.8, 0.2, 4)]:
        out.append(("lr-sync", f"a1={a} c1={c} k1={k}", *_sim("lr-sync", a, c, k1=k), "f_sync", float(f_sync(a, c, k))))
    for a, c, k in [(0.63, 0.1, 6), (0.8, 0.2, 3), (0.8, 0.2, 8)]:
        exact = float(async_s1(a, c) if k >= depth_limit(c) else async_s2(a, c, k))
        out.append(("lr-stage", f"a1={a} c1={c} k1={k}", *_sim("lr-stage", a, c, k1=k),
                    "S1" if k >= depth_limit(c) else "S2", exact))
    for a2, c2, k2 in [(0.3, 0.0, 3), (0.7, 0.05, 4)]:
        out.append(("sd", f"a2={a2} c2={c2} k2={k2}", *_sim("sd", 0.0, 0.0, k2=k2, alpha2=a2, c2=c2),
                    "g", float(sd_speedup(a2, c2, k2))))
    a, c, k, a2, c2, k2 = 0.63, 0.1, 3, 0.7, 0.05, 4
    out.append(("lr-sync+SD", f"a1={a} c1={c} k1={k} a2={a2} c2={c2} k2={k2}",
                *_sim("lr-sync", a, c, k1=k, k2=k2, alpha2=a2, c2=c2), "f*g",
                float(f_sync(a, c, k) * sd_speedup(a2, c2, k2))))
    return out


def async_rows():
    out = []
    for a, c, d in [(0.63, 0.1, 1), (0.63, 0.1, 2), (0.63, 0.1, 4), (0.63, 0.1, 8), (0.5, 0.2, 2),
                    (0.8, 0.05, 3), (0.7, 0.2, 8)]:
        sim, se = _sim("lr-async", a, c, depth=d)
        lo = float(async_s2(a, c, d)) if d < depth_limit(c) else float(async_s1(a, c))
        hi = float(async_s2(a, c, d + 1)) if d + 1 < depth_limit(c) else float(async_s1(a, c))
        out.append((f"a1={a} c1={c} depth={d}", sim, se, lo, hi, float(async_s1(a, c))))
    return out


def main():
    print("| policy | parameters | simulated | ± SE | form | exact | (sim-exact)/SE |")
    print("|---|---|---|---|---|---|---|")
    for pol, p, sim, se, form, exact in rows():
        print(f"| {pol} | {p} | {sim:.4f} | {se:.4f} | {form} | {exact:.4f} | {(sim - exact) / se:+.2f} |")
    print()
    print("| lr-async | simulated ± SE | S2(D) | S2(D+1) | S1 | sim / S2(D+1) - 1 |")
    print("|---|---|---|---|---|---|")
    for p, sim, se, lo, hi, s1 in async_rows():
        print(f"| {p} | {sim:.4f} ± {se:.4f} | {lo:.4f} | {hi:.4f} | {s1:.4f} | {100 * (sim / hi - 1):+.2f}% |")


if __name__ == "__main__":
    main()
