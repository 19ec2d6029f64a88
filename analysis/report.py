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

from lrsim.errors import UserError

from . import measured as meas
from .figures import BUILDERS, Ctx, Figure


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


def point_key(policy: str, knobs: dict) -> str:
    return json.dumps([policy, knobs], sort_keys=True)


def collect(source, traces: list[Path] | None, st: Settings, out_dir: Path) -> Report:
    from lrsim.plan.parallel import map_points

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
    points = list({point_key(p, k): (p, k) for p, k in points}.values())
    res = map_points(_sim_point, [(source, p, k | knobs, st.samples, st.min_steps) for p, k in points], jobs=st.jobs)
    sims = {point_key(p, k): r for (p, k), r in zip(points, res)}
    rep = Report(meta={"source": label, "theory": {k: v for k, v in th.items() if k != "workload"},
                       "settings": dict(st.__dict__), "traces": [str(t) for t in traces or []],
                       "records": len(recs), "measured_speedups": m_speed})
    cx = Ctx(source, label, th, sims, recs, m_speed, st, out_dir)
    rep.figures = [build(cx) for build in BUILDERS]
    rep.meta["elapsed_s"] = time.perf_counter() - t0
    return rep


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
