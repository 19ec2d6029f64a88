"""The six figures of `lr plot`: each builder turns the collected numbers (a `Ctx`: theory
parameters, simulated points, measured records) into the data of one plot, draws it
(analysis/plots.py) and returns it with the table of numbers behind it (analysis/report.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lrsim.theory import HybridParams, f_async, f_sync, optimize, sd_speedup, speedup_grid

from . import measured as meas
from . import plots


@dataclass
class Figure:
    key: str
    title: str
    path: Path
    header: list[str]
    rows: list[list]
    note: str = ""
    notes: list[str] = field(default_factory=list)   # "not measured" warnings (the section gathers them)


@dataclass
class Ctx:
    source: object
    label: str
    theory: dict                # alpha1, c1, alpha2, c2 of the source
    sims: dict                  # canonical point key -> _sim_point result
    records: list[dict]         # measured trace records
    measured_speedups: dict     # analysis.measured.speedups: per configuration
    st: object                  # report.Settings
    out_dir: Path
    depth_ref: int = 4          # the LR depth of the breakdown and LR+SD points (the measured one)
    replayed: dict | None = None   # config -> lrsim.calib.replay entry (simulated on the records)

    @property
    def sd_k2(self) -> list[int]:
        return [k for k in self.st.k2s if k >= 2]

    def sim(self, policy, **kn) -> dict:
        from .report import point_key

        return self.sims[point_key(policy, kn)]

    def speedup(self, policy, **kn) -> float:
        """Summed AR latency / summed latency of the point (paired seeds)."""
        return self.sim("ar")["latency_sum"] / self.sim(policy, **kn)["latency_sum"]


def _fmt(v, nd=3):
    return "" if v is None else f"{v:.{nd}f}"


def _measured_points(cx: Ctx, modes: tuple, x_of) -> list[tuple]:
    """(x, measured speedup, label) per measured configuration of these modes."""
    return [(x_of(v), v["speedup"], f"{cfg} (n={v['pairs']})")
            for cfg, v in cx.measured_speedups.items() if v["mode"] in modes]


def _replayed_points(cx: Ctx, modes: tuple, x_of) -> list[tuple]:
    """The simulator on the measured records' own workloads (same steps, lengths, verdicts)."""
    out = []
    for cfg, v in cx.measured_speedups.items():
        sp = ((cx.replayed or {}).get(cfg) or {}).get("speedup") or {}
        if v["mode"] in modes and sp.get("predicted") is not None:
            out.append((x_of(v), sp["predicted"], cfg))
    return out


def _measured_rows(cx: Ctx, modes: tuple, x_of, width: int) -> list[list]:
    """Table rows "x: measured CONFIG (n=...)" with the measured and replayed speedups last."""
    rows = []
    for cfg, v in cx.measured_speedups.items():
        if v["mode"] in modes:
            rep = (((cx.replayed or {}).get(cfg) or {}).get("speedup") or {}).get("predicted")
            rows.append([f"{x_of(v)}: measured {cfg} (n={v['pairs']})"] + [""] * (width - 3)
                        + [f"{v['speedup']:.3f}", _fmt(rep)])
    return rows


def fig_depth(cx: Ctx) -> Figure:
    st, label, out_dir, speedup = cx.st, cx.label, cx.out_dir, cx.speedup
    a1, c1 = cx.theory["alpha1"], cx.theory["c1"]
    k1 = np.arange(1, max(st.depths) + 3)
    x_of = lambda v: (v["depth"] or 1) + 1  # noqa: E731
    d1 = {"k1": k1, "theory_sync": f_sync(a1, c1, k1), "theory_async": f_async(a1, c1, k1),
          "sim_async": [(d + 1, speedup("lr-async", depth=d, k2=1)) for d in st.depths],
          "sim_sync": [(d + 1, speedup("lr-sync", k1=d + 1, k2=1)) for d in st.depths],
          "measured": _measured_points(cx, ("lr", "lr-sync"), x_of),
          "replayed": _replayed_points(cx, ("lr", "lr-sync"), x_of),
          "alpha1": a1, "c1": c1, "source": label}
    rows = [[int(k), f"{float(f_sync(a1, c1, k)):.3f}", f"{float(f_async(a1, c1, k)):.3f}",
             _fmt(dict(d1["sim_sync"]).get(int(k))), _fmt(dict(d1["sim_async"]).get(int(k))), "", ""]
            for k in k1]
    rows += _measured_rows(cx, ("lr", "lr-sync"), x_of, 7)
    return Figure("depth", "Speedup vs k1 / depth", plots.plot_depth(d1, out_dir / "speedup_vs_depth.png"),
                  ["k1", "theory f_sync", "theory f_async", "sim lr-sync", "sim lr-async (depth k1-1)",
                   "measured", "replayed"], rows,
                  "Theory and simulation use this source's alpha1 and c1; measured points are the "
                  "configurations in the traces (AR on the same problems as the baseline); replayed = "
                  "the simulator on each measured record's own steps and verdicts." if d1["measured"] else "")


def fig_k2(cx: Ctx) -> Figure:
    st, label, out_dir = cx.st, cx.label, cx.out_dir
    sd_k2, speedup, dref = cx.sd_k2, cx.speedup, cx.depth_ref
    a1, c1, a2, c2 = (cx.theory[k] for k in ("alpha1", "c1", "alpha2", "c2"))
    k2 = np.arange(1, max(st.k2s) + 1)
    x_of = lambda v: v["k2"]  # noqa: E731
    d2 = {"k2": k2, "theory": sd_speedup(a2, c2, k2), "ceiling": 1 / (1 - a2) if a2 < 1 else float("inf"),
          "theory_hybrid": f_async(a1, c1, dref + 1) * sd_speedup(a2, c2, k2), "k1": dref + 1,
          "sim_sd": [(k, speedup("sd", k2=k)) for k in sd_k2],
          "sim_hybrid": [(1, speedup("lr-async", depth=dref, k2=1))]
          + [(k, speedup("lr-async", depth=dref, k2=k)) for k in sd_k2],
          "measured": _measured_points(cx, ("sd", "lr+sd"), x_of),
          "replayed": _replayed_points(cx, ("sd", "lr+sd"), x_of),
          "alpha2": a2, "c2": c2, "source": label}
    rows = [[int(k), f"{float(sd_speedup(a2, c2, k)):.3f}", _fmt(dict(d2["sim_sd"]).get(int(k))),
             f"{float(d2['theory_hybrid'][i]):.3f}", _fmt(dict(d2["sim_hybrid"]).get(int(k))), "", ""]
            for i, k in enumerate(k2)]
    rows += _measured_rows(cx, ("sd", "lr+sd"), x_of, 7)
    return Figure("k2", "Speedup vs k2", plots.plot_k2(d2, out_dir / "speedup_vs_k2.png"),
                  ["k2", "theory g", "sim sd", f"theory f_async({dref + 1}) g", f"sim lr+sd depth {dref}",
                   "measured", "replayed"], rows)


def fig_heatmap(cx: Ctx) -> Figure:
    st, label, out_dir, speedup = cx.st, cx.label, cx.out_dir, cx.speedup
    a1, c1, a2, c2 = (cx.theory[k] for k in ("alpha1", "c1", "alpha2", "c2"))
    p = HybridParams(a1, min(max(c1, 1e-6), 1.0), a2, min(c2, 1.0), "async")
    opt = optimize(p, st.budget)
    grid = speedup_grid(p, st.budget)
    shown = min(st.budget, 16)
    sim_vals = {(d + 1, k): speedup("lr-async", depth=d, k2=k)
                for d in st.depths for k in st.k2s if (d + 1) * k <= st.budget}
    sb = max(sim_vals.items(), key=lambda kv: kv[1])
    theory = {"grid": grid[:shown, :shown], "best": (opt.best.k1, opt.best.k2, opt.best.speedup), "budget": st.budget}
    simd = {"values": sim_vals, "best": (sb[0][0], sb[0][1], sb[1]), "source": label}
    rows = [[k1_, k2_, f"{float(grid[k1_ - 1, k2_ - 1]):.3f}", f"{v:.3f}"] for (k1_, k2_), v in sorted(sim_vals.items())]
    return Figure("heatmap", f"(k1, k2) under budget M = {st.budget}",
                  plots.plot_heatmaps(theory, simd, out_dir / "split_heatmap.png"),
                  ["k1 = depth + 1", "k2", "theory h (async)", "simulated"], rows,
                  f"theory optimum (k1, k2) = ({opt.best.k1}, {opt.best.k2}) {opt.best.speedup:.3f}x "
                  f"({opt.winner}); simulated optimum depth {sb[0][0] - 1}, k2 {sb[0][1]}: {sb[1]:.3f}x. "
                  "The simulated tree's budget counts depth + 1 target positions per level x k2.")


def fig_acceptance(cx: Ctx) -> Figure:
    label, out_dir, recs, sim = cx.label, cx.out_dir, cx.records, cx.sim
    a1 = cx.theory["alpha1"]
    sd4 = sim("lr-async", depth=4, k2=1)["by_depth"]
    m_acc = meas.acceptance_by_depth(recs) if recs else {}
    d4 = {"alpha1": a1, "source": label,
          "sim": {d: (a / p_, p_) for d, (p_, a) in sd4.items() if p_},
          "measured": {d: (a / p_, p_) for d, (p_, a) in m_acc.items() if p_}}
    depths = sorted(set(d4["sim"]) | set(d4["measured"]))
    rows = [[d, f"{a1:.3f}", _fmt(d4["sim"].get(d, (None,))[0]), d4["sim"].get(d, (0, 0))[1],
             _fmt(d4["measured"].get(d, (None,))[0]), d4["measured"].get(d, (0, 0))[1]] for d in depths]
    return Figure("acceptance", "Step acceptance by depth",
                  plots.plot_acceptance(d4, out_dir / "acceptance_by_depth.png"),
                  ["depth", "theory", "sim rate", "sim judged", "measured rate", "measured judged"], rows,
                  "Simulated: lr-async depth 4; drafts not ready when their target step is count as "
                  "rejected (like the reference).")


def fig_breakdown(cx: Ctx) -> Figure:
    out_dir, sd_k2, recs, sim, dref = cx.out_dir, cx.sd_k2, cx.records, cx.sim, cx.depth_ref
    bd = {}
    for name, (pol, kn) in {"sim ar": ("ar", {}), f"sim lr (depth {dref})": ("lr-async", {"depth": dref, "k2": 1}),
                            f"sim lr+sd (depth {dref}, k2 {max(sd_k2)})":
                                ("lr-async", {"depth": dref, "k2": max(sd_k2)})}.items():
        r = sim(pol, **kn)
        w = r["wall"]
        bd[name] = {"draft": r["busy"].get("draft", 0.0) / w, "target": r["busy"].get("target", 0.0) / w,
                    "verify": (r["busy"].get("judge", 0.0) + r["busy"].get("verify", 0.0)) / w,
                    "target idle": max(0.0, 1 - r["busy"].get("target", 0.0) / w)}
    for cfg, shares in (meas.breakdown(recs) if recs else {}).items():
        bd[f"measured {cfg}"] = shares
    rows = [[k] + [f"{v[c]:.3f}" for c in meas.COMPONENTS] for k, v in bd.items()]
    return Figure("breakdown", "Latency breakdown", plots.plot_breakdown(bd, out_dir / "latency_breakdown.png"),
                  ["run"] + [f"{c} share" for c in meas.COMPONENTS], rows,
                  "Busy share = union of the component's busy time / wall time (cancelled work "
                  "included); target idle = 1 - target share. Simulated verifier time for a constant-cost "
                  "judge = seconds x judged drafts.")


def fig_load(cx: Ctx) -> Figure:
    d6, rows = _load_sweep(cx.source, cx.st, cx.sd_k2, cx.label)
    measured = meas.load_speedups(cx.records) if cx.records else {}
    d6["measured_series"] = {cfg: sorted((n, v["speedup"]) for n, v in by_n.items())
                             for cfg, by_n in measured.items()}
    out_dir = cx.out_dir
    what = ("Measured points: the traces' records made under load (AR at the same concurrency on "
            "the same problems)." if measured else
            "No measured points: the traces given have no records made under load "
            "(lr collect --concurrency, benchmarks/collect_load.py).")
    return Figure("load", "Speedup vs load", plots.plot_load(d6, out_dir / "speedup_vs_load.png"),
                  ["concurrency"] + list(d6["series"]), rows,
                  "Speedup = reference AR's mean request latency / the configuration's, on "
                  f"{d6['hardware']} (replicas where a configuration needs fewer devices). " + what
                  + "".join(f" Not measured: {n}." for n in d6["notes"]), d6["notes"])


def _load_sweep(source, st, sd_k2, label):
    from lrsim.plan import planner

    k2 = max(sd_k2)
    cands = [planner.Candidate("ar", role="reference"),
             planner.Candidate("ar", placement="equal-resources", role="equal-resources"),
             planner.Candidate("sd", k2=k2), planner.Candidate("lr", k1=5, depth=4),
             planner.Candidate("lr+sd", k1=5, depth=4, k2=k2)]
    series: dict[str, list[float]] = {c.label: [] for c in cands if c.role != "reference"}
    hardware, every = "", []
    for c in st.loads:
        p = planner.plan(source, cands, planner.Hardware(), planner.Load(concurrency=c, steps=st.steps,
                                                                         samples=st.samples), jobs=st.jobs)
        hardware = f"{p.meta['hardware']['devices']}x {p.meta['hardware']['kind']}"
        every += p.rows
        for r in p.rows:
            if r["role"] == "reference":
                continue
            series[r["label"]].append(r["speedup"])
    rows = [[c] + [f"{series[k][i]:.3f}" for k in series] for i, c in enumerate(st.loads)]
    # lr plan's warning over the whole sweep: engines whose simulated passes outgrew the profile's
    # traces (ProfileSource.beyond_measured; presets and scenarios measured nothing, so say nothing)
    notes = source.beyond_measured(every) if hasattr(source, "beyond_measured") else []
    return {"concurrency": list(st.loads), "series": series, "hardware": hardware, "source": label,
            "notes": notes}, rows


BUILDERS = (fig_depth, fig_k2, fig_heatmap, fig_acceptance, fig_breakdown, fig_load)
