"""`lr plot`'s engine: collect theory, simulation and measurement for one source, draw every
figure (analysis/plots.py) and write one self-contained HTML report (images as base64, with the
tables of numbers behind each figure).

Theory uses the source's own parameters: alpha1 and alpha2 of its workload, c1 = draft/target
time per token (Config.c1), c2 = 0 for n-gram SD. Simulation runs the source (preset, profile or
scenario) single-stream, `samples` seeds pooled, speedup = summed AR latency / summed latency
(paired: same steps and draws); the load sweep uses the planner (same devices, replicas).
Measurement comes from trace files (analysis/measured.py).
"""
from __future__ import annotations

import base64
import html
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lrsim.errors import UserError

from . import measured as meas
from . import plots


@dataclass
class Settings:
    budget: int = 16                # M for the heatmaps
    samples: int = 2                # workload seeds pooled per simulated point
    steps: int | None = None        # override the source's steps per request
    depths: tuple = (1, 2, 3, 4, 5, 6)
    k2s: tuple = (1, 2, 3, 4, 5, 6, 7, 9)
    loads: tuple = (1, 2, 4, 8, 16, 32)
    min_steps: int = 400            # single-stream points pool seeds until this many steps (noise)
    jobs: int = 0

    @classmethod
    def quick(cls, **kw) -> "Settings":
        """Few points and short requests: for tests and a first look (seconds, not minutes)."""
        return cls(**{"samples": 1, "steps": 8, "depths": (1, 2, 4), "k2s": (1, 3, 5),
                      "loads": (1, 4), "budget": 8, "min_steps": 0} | kw)


@dataclass
class Figure:
    key: str
    title: str
    path: Path
    header: list[str]
    rows: list[list]
    note: str = ""


@dataclass
class Report:
    figures: list[Figure] = field(default_factory=list)
    meta: dict = field(default_factory=dict)


# --- simulation points (module level: they run in worker processes) ------------------------------
def _sim_point(args) -> dict:
    from lrsim.sim.runner import run

    source, policy, knobs, samples, min_steps = args
    steps = getattr(source.to_config(policy, **knobs).workload, "steps", 0) or 0
    if steps and min_steps:
        samples = max(samples, -(-min_steps // steps))
    lat, busy, wall, prop, acc, by_depth = 0.0, {}, 0.0, 0, 0, {}
    verify = 0.0
    for seed in range(samples):
        cfg = source.to_config(policy, seed=seed, **knobs)
        s, world = run(cfg)
        lat += sum(r.latency for r in world.records)
        wall += s["wall_s"]
        roles = {p.name: role for role, p in (("target", cfg.target), ("draft", cfg.draft),
                                              ("judge", cfg.judge)) if p is not None}
        for k, v in s["engine_busy_s"].items():
            busy[roles.get(k, k)] = busy.get(roles.get(k, k), 0.0) + v
        prop += s["proposed_steps"]
        acc += s["accepted_steps"]
        for d, (p, a) in s["by_depth"].items():
            pa = by_depth.setdefault(int(d), [0, 0])
            pa[0] += p
            pa[1] += a
        if cfg.verifier.kind == "constant":
            verify += cfg.verifier.seconds * (s["proposed_steps"] - s["unready_drafts"]) / max(cfg.width, 1)
    if verify:
        busy["verify"] = verify
    return {"policy": policy, **knobs, "latency_sum": lat, "busy": busy, "wall": wall,
            "by_depth": by_depth, "acceptance": acc / prop if prop else None}


def _theory_params(source, steps):
    cfg = source.to_config("lr-async", steps=steps)
    wl = cfg.workload
    c2 = 0.0 if cfg.sd_draft is None else cfg.sd_draft.per_token() / cfg.target.latency.per_token()
    return {"alpha1": float(getattr(wl, "alpha1", 0.5)), "alpha2": float(getattr(wl, "alpha2", 0.0)),
            "c1": float(cfg.c1), "c2": float(c2), "name": cfg.name, "workload": wl}


def collect(source, traces: list[Path] | None, st: Settings, out_dir: Path) -> Report:
    from lrsim.plan.parallel import map_points
    from lrsim.theory import HybridParams, f_async, f_sync, optimize, sd_speedup, speedup_grid

    t0 = time.perf_counter()
    th = _theory_params(source, st.steps)
    label = source.label
    recs = meas.load(traces) if traces else []
    m_speed = meas.speedups(recs) if recs else {}
    knobs = {"steps": st.steps}
    points = [("ar", {}), ("lr-async", {"depth": 4, "k2": 1})]
    points += [("lr-async", {"depth": d, "k2": 1}) for d in st.depths]
    points += [("lr-sync", {"k1": d + 1, "k2": 1}) for d in st.depths]
    sd_k2 = [k for k in st.k2s if k >= 2]
    points += [("sd", {"k2": k}) for k in sd_k2]
    points += [("lr-async", {"depth": 4, "k2": k}) for k in sd_k2]
    for d in st.depths:
        for k in st.k2s:
            if (d + 1) * k <= st.budget:
                points.append(("lr-async", {"depth": d, "k2": k}))
    points = list({json.dumps([p, k], sort_keys=True): (p, k) for p, k in points}.values())
    res = map_points(_sim_point, [(source, p, k | knobs, st.samples, st.min_steps) for p, k in points], jobs=st.jobs)
    sims = {json.dumps([p, k], sort_keys=True): r for (p, k), r in zip(points, res)}

    def sim(policy, **kn):
        return sims[json.dumps([policy, kn], sort_keys=True)]

    ar = sim("ar")["latency_sum"]

    def speedup(policy, **kn):
        return ar / sim(policy, **kn)["latency_sum"]

    rep = Report(meta={"source": label, "theory": {k: v for k, v in th.items() if k != "workload"},
                       "settings": {k: v for k, v in st.__dict__.items()},
                       "traces": [str(t) for t in traces or []], "records": len(recs)})
    a1, c1, a2, c2 = th["alpha1"], th["c1"], th["alpha2"], th["c2"]

    # 1. speedup vs k1 / depth
    k1 = np.arange(1, max(st.depths) + 3)
    d1 = {"k1": k1, "theory_sync": f_sync(a1, c1, k1), "theory_async": f_async(a1, c1, k1),
          "sim_async": [(d + 1, speedup("lr-async", depth=d, k2=1)) for d in st.depths],
          "sim_sync": [(d + 1, speedup("lr-sync", k1=d + 1, k2=1)) for d in st.depths],
          "measured": [((v["depth"] or 1) + 1, v["speedup"], f"{m} (depth {v['depth']}, n={v['pairs']})")
                       for m, v in m_speed.items() if m in ("lr", "lr-sync")],
          "alpha1": a1, "c1": c1, "source": label}
    rows = [[int(k), f"{float(f_sync(a1, c1, k)):.3f}", f"{float(f_async(a1, c1, k)):.3f}",
             _fmt(dict(d1["sim_sync"]).get(int(k))), _fmt(dict(d1["sim_async"]).get(int(k)))] for k in k1]
    rows += [[f"measured: {lab}", "", "", "", f"{s:.3f}"] for _, s, lab in d1["measured"]]
    rep.figures.append(Figure("depth", "Speedup vs k1 / depth", plots.plot_depth(d1, out_dir / "speedup_vs_depth.png"),
                              ["k1", "theory f_sync", "theory f_async", "sim lr-sync", "sim lr-async (depth k1-1)"], rows))

    # 2. speedup vs k2
    k2 = np.arange(1, max(st.k2s) + 1)
    d2 = {"k2": k2, "theory": sd_speedup(a2, c2, k2), "ceiling": 1 / (1 - a2) if a2 < 1 else float("inf"),
          "theory_hybrid": f_async(a1, c1, 5) * sd_speedup(a2, c2, k2), "k1": 5,
          "sim_sd": [(k, speedup("sd", k2=k)) for k in sd_k2],
          "sim_hybrid": [(1, speedup("lr-async", depth=4, k2=1))] + [(k, speedup("lr-async", depth=4, k2=k)) for k in sd_k2],
          "measured": [(v["k2"], v["speedup"], f"{m} (k2 {v['k2']}, n={v['pairs']})")
                       for m, v in m_speed.items() if m in ("sd", "lr+sd")],
          "alpha2": a2, "c2": c2, "source": label}
    rows = [[int(k), f"{float(sd_speedup(a2, c2, k)):.3f}", _fmt(dict(d2["sim_sd"]).get(int(k))),
             f"{float(d2['theory_hybrid'][i]):.3f}", _fmt(dict(d2["sim_hybrid"]).get(int(k)))] for i, k in enumerate(k2)]
    rows += [[f"measured: {lab}", "", f"{s:.3f}", "", ""] for _, s, lab in d2["measured"]]
    rep.figures.append(Figure("k2", "Speedup vs k2", plots.plot_k2(d2, out_dir / "speedup_vs_k2.png"),
                              ["k2", "theory g", "sim sd", "theory f_async(5) g", "sim lr+sd depth 4"], rows))

    # 3. (k1, k2) heatmaps under the budget
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
    rep.figures.append(Figure("heatmap", f"(k1, k2) under budget M = {st.budget}",
                              plots.plot_heatmaps(theory, simd, out_dir / "split_heatmap.png"),
                              ["k1 = depth + 1", "k2", "theory h (async)", "simulated"], rows,
                              f"theory optimum (k1, k2) = ({opt.best.k1}, {opt.best.k2}) {opt.best.speedup:.3f}x "
                              f"({opt.winner}); simulated optimum depth {sb[0][0] - 1}, k2 {sb[0][1]}: {sb[1]:.3f}x. "
                              "The simulated tree's budget counts depth + 1 target positions per level x k2."))

    # 4. acceptance by depth
    sd4 = sim("lr-async", depth=4, k2=1)["by_depth"]
    m_acc = meas.acceptance_by_depth(recs) if recs else {}
    d4 = {"alpha1": a1, "source": label,
          "sim": {d: (a / p_, p_) for d, (p_, a) in sd4.items() if p_},
          "measured": {d: (a / p_, p_) for d, (p_, a) in m_acc.items() if p_}}
    depths = sorted(set(d4["sim"]) | set(d4["measured"]))
    rows = [[d, f"{a1:.3f}", _fmt(d4["sim"].get(d, (None,))[0]), d4["sim"].get(d, (0, 0))[1],
             _fmt(d4["measured"].get(d, (None,))[0]), d4["measured"].get(d, (0, 0))[1]] for d in depths]
    rep.figures.append(Figure("acceptance", "Step acceptance by depth",
                              plots.plot_acceptance(d4, out_dir / "acceptance_by_depth.png"),
                              ["depth", "theory", "sim rate", "sim judged", "measured rate", "measured judged"], rows,
                              "Simulated: lr-async depth 4; drafts not ready when their target step is count as "
                              "rejected (like the reference)."))

    # 5. latency breakdown (simulated single stream + measured per mode)
    bd = {}
    for name, (pol, kn) in {"sim ar": ("ar", {}), "sim lr (depth 4)": ("lr-async", {"depth": 4, "k2": 1}),
                            f"sim lr+sd (depth 4, k2 {max(sd_k2)})": ("lr-async", {"depth": 4, "k2": max(sd_k2)})}.items():
        r = sim(pol, **kn)
        w = r["wall"]
        bd[name] = {"draft": r["busy"].get("draft", 0.0) / w, "target": r["busy"].get("target", 0.0) / w,
                    "verify": (r["busy"].get("judge", 0.0) + r["busy"].get("verify", 0.0)) / w,
                    "target idle": max(0.0, 1 - r["busy"].get("target", 0.0) / w)}
    for mode, shares in (meas.breakdown(recs) if recs else {}).items():
        bd[f"measured {mode}"] = shares
    rows = [[k] + [f"{v[c]:.3f}" for c in meas.COMPONENTS] for k, v in bd.items()]
    rep.figures.append(Figure("breakdown", "Latency breakdown", plots.plot_breakdown(bd, out_dir / "latency_breakdown.png"),
                              ["run"] + [f"{c} share" for c in meas.COMPONENTS], rows,
                              "Busy share = union of the component's busy time / wall time (cancelled work "
                              "included); target idle = 1 - target share. Simulated verifier time for a constant-cost "
                              "judge = seconds x judged drafts."))

    # 6. speedup vs load (planner: same devices, replicas, reference AR and equal resources)
    d6, rows = _load_sweep(source, st, sd_k2, label)
    rep.figures.append(Figure("load", "Speedup vs load", plots.plot_load(d6, out_dir / "speedup_vs_load.png"),
                              ["concurrency"] + list(d6["series"]), rows,
                              "Speedup = reference AR's mean request latency / the configuration's, on "
                              f"{d6['hardware']} (replicas where a configuration needs fewer devices). No measured "
                              "points: the shipped traces are single-stream."))
    rep.meta["measured_speedups"] = m_speed
    rep.meta["elapsed_s"] = time.perf_counter() - t0
    return rep


def _load_sweep(source, st: Settings, sd_k2, label):
    from lrsim.plan import planner

    k2 = max(sd_k2)
    cands = [planner.Candidate("ar", role="reference"),
             planner.Candidate("ar", placement="equal-resources", role="equal-resources"),
             planner.Candidate("sd", k2=k2), planner.Candidate("lr", k1=5, depth=4),
             planner.Candidate("lr+sd", k1=5, depth=4, k2=k2)]
    series: dict[str, list[float]] = {c.label: [] for c in cands if c.role != "reference"}
    hardware = ""
    for c in st.loads:
        p = planner.plan(source, cands, planner.Hardware(), planner.Load(concurrency=c, steps=st.steps,
                                                                         samples=st.samples), jobs=st.jobs)
        hardware = f"{p.meta['hardware']['devices']}x {p.meta['hardware']['kind']}"
        for r in p.rows:
            if r["role"] == "reference":
                continue
            series[r["label"]].append(r["speedup"])
    rows = [[c] + [f"{series[k][i]:.3f}" for k in series] for i, c in enumerate(st.loads)]
    return {"concurrency": list(st.loads), "series": series, "hardware": hardware, "source": label}, rows


def _fmt(v, nd=3):
    return "" if v is None else f"{v:.{nd}f}"


# --- HTML ---------------------------------------------------------------------------------------
CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0 2em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}img{max-width:100%;border:1px solid #eee}.note{color:#555;font-size:13px}
code{background:#f6f6f6;padding:1px 4px}"""


def _table(header, rows) -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def write_html(rep: Report, out: Path, extra_tables: list[tuple[str, list, list]] = ()) -> Path:
    th = rep.meta["theory"]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>Lookahead Reasoning report</title>"
             f"<style>{CSS}</style></head><body>",
             "<h1>Lookahead Reasoning: theory vs simulation vs measurement</h1>",
             f"<p>Source: <code>{html.escape(rep.meta['source'])}</code>; theory parameters alpha1 = "
             f"{th['alpha1']:.3f}, c1 = {th['c1']:.3f}, alpha2 = {th['alpha2']:.3f}, c2 = {th['c2']:.3f}. "
             f"Traces: {html.escape(', '.join(rep.meta['traces']) or 'none')} ({rep.meta['records']} records). "
             f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} in {rep.meta['elapsed_s']:.1f} s.</p>"]
    for f in rep.figures:
        data = base64.b64encode(Path(f.path).read_bytes()).decode()
        parts.append(f"<h2 id='{f.key}'>{html.escape(f.title)}</h2>"
                     f"<img alt='{html.escape(f.title)}' src='data:image/png;base64,{data}'>")
        if f.note:
            parts.append(f"<p class='note'>{html.escape(f.note)}</p>")
        parts.append(_table(f.header, f.rows))
    for title, header, rows in extra_tables:
        parts.append(f"<h2>{html.escape(title)}</h2>" + _table(header, rows))
    parts.append("</body></html>")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(parts))
    except OSError as e:
        raise UserError(f"--out {out}: cannot write ({e.strerror or e})") from None
    return out


def paper_table(source) -> tuple[str, list, list] | None:
    """Table 1 side by side with the presets' predictions (only when the source is a preset)."""
    from lrsim.plan.sources import PresetSource
    from lrsim.plan.table1 import TABLE_HEADER, compare_table1, format_rows

    if not isinstance(source, PresetSource):
        return None
    rows = compare_table1(seeds=1, jobs=0, latency_file=source.latency_file)
    return (f"Paper presets vs Table 1 (sim / paper; {rows[0]['latency']})", TABLE_HEADER, format_rows(rows))
