"""`lr plot`'s engine: theory, simulation and measurement per section, every figure drawn
(analysis/figures.py, analysis/plots.py), one self-contained HTML report (images as base64, with
the tables of numbers behind each figure).

A report has one section per setup, and a setup's axes never show another setup's numbers:

- **this machine** (`machine_section`): a calibrated profile (given, or calibrated from the
  traces) drives theory (its alpha1, alpha2, c1) and simulation; the traces it was calibrated on
  are the measured points, one per configuration (lr-d1, lr-d2, lr-d3, lr-d2-w2, sd, ...), and
  the simulator replaying those very records is shown beside them;
- **a reference setup** (`reference_section`): a paper preset or a scenario, simulated; it never
  takes measured records (`_section` refuses), and a preset adds the Table 1 comparison.

Theory uses the source's own parameters: alpha1 and alpha2 of its workload, c1 = draft/target
time per token (Config.c1), c2 = 0 for n-gram SD. Simulation runs the source single-stream,
`samples` seeds pooled, speedup = summed AR latency / summed latency (paired: same steps and
draws); the load sweep uses the planner (same devices, replicas). Measurement comes from trace
files (analysis/measured.py).
"""
from __future__ import annotations

import base64
import html
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from lrcore.errors import UserError

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
class Section:
    """One setup of the report: its figures, and the numbers behind them."""
    key: str                    # "machine", "preset-r1-gsm8k", "scenario-h100-paper": PNG folder
    title: str
    intro: str
    figures: list[Figure] = field(default_factory=list)
    tables: list[tuple[str, list, list]] = field(default_factory=list)
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


def _section(source, records: list[dict], st: Settings, out_dir: Path, key: str, title: str,
             intro: str, replayed: dict | None = None, meta: dict | None = None) -> Section:
    """Simulate the source, draw every figure. Measured records only ever go with a calibrated
    profile (the machine they were measured on): a preset's or scenario's axes never carry them."""
    from lrsim.plan.parallel import map_points
    from lrsim.plan.sources import ProfileSource

    if records and not isinstance(source, ProfileSource):
        raise ValueError(f"{source.label}: measured records share axes only with the profile "
                         "calibrated on that machine")
    t0 = time.perf_counter()
    th = _theory_params(source, st.steps)
    m_speed = meas.speedups(records) if records else {}
    lr_depths = [v["depth"] for v in m_speed.values() if v["mode"] in ("lr", "lr+sd") and v["depth"]]
    depth_ref = sorted(lr_depths)[len(lr_depths) // 2] if lr_depths else 4   # the middle one measured
    knobs = {"steps": st.steps}
    points = [("ar", {}), ("lr-async", {"depth": depth_ref, "k2": 1})]
    points += [("lr-async", {"depth": d, "k2": 1}) for d in st.depths]
    points += [("lr-sync", {"k1": d + 1, "k2": 1}) for d in st.depths]
    sd_k2 = [k for k in st.k2s if k >= 2]
    points += [("sd", {"k2": k}) for k in sd_k2]
    points += [("lr-async", {"depth": depth_ref, "k2": k}) for k in sd_k2]
    for d in st.depths:
        for k in st.k2s:
            if (d + 1) * k <= st.budget:
                points.append(("lr-async", {"depth": d, "k2": k}))
    points = list({point_key(p, k): (p, k) for p, k in points}.values())
    res = map_points(_sim_point, [(source, p, k | knobs, st.samples, st.min_steps) for p, k in points], jobs=st.jobs)
    sims = {point_key(p, k): r for (p, k), r in zip(points, res)}
    out = Path(out_dir) / key
    sec = Section(key, title, intro, meta={
        "source": source.label, "theory": {k: v for k, v in th.items() if k != "workload"},
        "settings": dict(st.__dict__), "records": len(records), "measured_speedups": m_speed,
        "depth_ref": depth_ref, **(meta or {})})
    cx = Ctx(source, source.label, th, sims, records, m_speed, st, out, depth_ref, replayed)
    sec.figures = [build(cx) for build in BUILDERS]
    # a figure's "not measured" warnings join the section's (the load sweep's passes past the traces)
    notes = sec.meta.setdefault("notes", [])
    notes += [n for f in sec.figures for n in f.notes if n not in notes]
    sec.meta["elapsed_s"] = time.perf_counter() - t0
    return sec


def calibrated_source(traces: list[Path], out_dir: Path):
    """A profile of the machine the traces were measured on (`lr calibrate` in memory), saved
    beside the report as profile.json: the source of the "this machine" section when no
    --profile is given."""
    from lrsim.calib.calibrate import calibrate
    from lrsim.calib.profile import save_profile, validate_doc
    from lrsim.plan.sources import ProfileSource

    names = ", ".join(map(str, traces))
    try:
        doc = validate_doc(calibrate([str(t) for t in traces]))
    except UserError as e:
        raise UserError(f"--traces {names}: cannot calibrate this machine's profile from them "
                        f"({e}); give --profile") from None
    path = Path(out_dir) / "profile.json"
    save_profile(doc, path)
    return ProfileSource(str(path))


def machine_section(source, traces: list[Path], st: Settings, out_dir: Path) -> Section:
    """This machine: the calibrated profile's theory and simulation, the traces' measured
    configurations and their replay, on the same axes."""
    from dataclasses import replace

    from lrsim.calib.profile import load_profile
    from lrsim.calib.replay import replay

    records = meas.load(traces) if traces else []
    prof = load_profile(source.path)
    replayed, note = None, ""
    if records:
        try:
            # one request at a time: the replay simulates each record alone
            replayed = replay(prof, [r for r in records if meas.in_flight(r) == 1])["configs"]
        except UserError as e:
            note = f" The replay of the records failed: {e}."
        m = meas.speedups(records)
        depths = {v["depth"] for v in m.values() if v["mode"] in ("lr", "lr-sync") and v["depth"]}
        k2s = {v["k2"] for v in m.values() if v["mode"] in ("sd", "lr+sd")}
        st = replace(st, depths=tuple(sorted(set(st.depths) | depths)),
                     k2s=tuple(sorted(set(st.k2s) | k2s)))
    calibrated = {(t.get("path"), t.get("sha256")) for t in prof.doc.get("source", {}).get("traces", [])}
    if traces:
        from lrsim.calib.calibrate import sha256

        own = sum((str(t), sha256(t)) in calibrated for t in traces)
        note += (f" {own} of {len(traces)} trace files are, unchanged, this profile's calibration "
                 "data." if own < len(traces) else " The traces are this profile's calibration data.")
    # what the profile never measured and the curves price anyway (SD at alpha2 0, LR at alpha1 0.5)
    notes = source.unmeasured({"sd", "lr", "lr+sd"}, via="lr plan ") if hasattr(source, "unmeasured") else []
    note += "".join(f" Not measured: {n}." for n in notes)
    title = f"This machine: {source.label}" + (f" and {len(records)} measured records" if records else "")
    intro = ("Every curve in this section is computed from this one calibrated profile (theory with "
             "its alpha1, alpha2 and c1; simulation with its latency models); every measured point "
             "is a configuration of these traces, with AR on the same problems as the baseline." + note
             if records else "Theory and simulation of this calibrated profile (no traces given: "
             "no measured points)." + note)
    sec = _section(source, records, st, out_dir, "machine", title, intro, replayed,
                   {"traces": [str(t) for t in traces], "notes": notes})
    if replayed:
        sec.tables.append(replay_table(replayed))
    return sec


def replay_table(configs: dict) -> tuple[str, list, list]:
    rows = []
    for cfg, e in configs.items():
        sp = e.get("speedup") or {}
        rows.append([cfg, e["records"], f"{100 * e['mape']:.1f}%",
                     f"{e['tokens_per_s']['measured']:.2f}", f"{e['tokens_per_s']['predicted']:.2f}",
                     "" if sp.get("measured") is None else f"{sp['measured']:.3f}",
                     "" if sp.get("predicted") is None else f"{sp['predicted']:.3f}"])
    return ("Measured vs simulated per configuration (the simulator replaying each record: same "
            "steps, lengths and verdicts; each record at the machine speed of its probe)",
            ["config", "records", "latency MAPE", "measured tok/s", "simulated tok/s",
             "measured x AR", "simulated x AR"], rows)


def reference_section(source, st: Settings, out_dir: Path, paper: bool = True) -> Section:
    """A paper preset or a scenario: simulated only, its own axes, no measurement of this machine."""
    from lrsim.plan.sources import PresetSource

    if isinstance(source, PresetSource):
        key, title = f"preset-{source.name}", f"Paper setup: {source.label} (simulated)"
        intro = ("The paper's setup built from published facts (4x H100, the paper's models and "
                 "Table 1 step acceptance), simulated. No measurement from this machine is drawn on "
                 "these axes.")
    else:
        key = "scenario-" + "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in Path(source.name).stem)
        title = f"Reference setup: {source.label} (simulated)"
        intro = "A simulator scenario. No measurement is drawn on these axes."
    sec = _section(source, [], st, out_dir, key, title, intro)
    table = paper_table(source) if paper else None
    if table:
        sec.tables.append(table)
    return sec


# --- HTML ---------------------------------------------------------------------------------------
CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0 2em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}img{max-width:100%;border:1px solid #eee}.note{color:#555;font-size:13px}
code{background:#f6f6f6;padding:1px 4px}"""


def _table(header, rows) -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _theory_line(sec: Section) -> str:
    th = sec.meta["theory"]
    return (f"Theory parameters: alpha1 = {th['alpha1']:.3f}, c1 = {th['c1']:.3f}, alpha2 = "
            f"{th['alpha2']:.3f}, c2 = {th['c2']:.3f}.")


def write_html(sections: list[Section], out: Path, elapsed_s: float = 0.0) -> Path:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>Lookahead Reasoning report</title>"
             f"<style>{CSS}</style></head><body>",
             "<h1>Lookahead Reasoning: theory vs simulation vs measurement</h1>",
             f"<p>Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} in {elapsed_s:.1f} s. "
             "One section per setup; a section's figures use that setup only.</p><ul>"]
    parts += [f"<li><a href='#{s.key}'>{html.escape(s.title)}</a></li>" for s in sections]
    parts.append("</ul>")
    for sec in sections:
        parts.append(f"<h2 id='{sec.key}'>{html.escape(sec.title)}</h2>"
                     f"<p>{html.escape(sec.intro)} {html.escape(_theory_line(sec))}</p>")
        if sec.meta.get("traces"):
            parts.append(f"<p class='note'>Traces: {html.escape(', '.join(sec.meta['traces']))} "
                         f"({sec.meta['records']} records).</p>")
        for f in sec.figures:
            data = base64.b64encode(Path(f.path).read_bytes()).decode()
            parts.append(f"<h3 id='{sec.key}-{f.key}'>{html.escape(f.title)}</h3>"
                         f"<img alt='{html.escape(f.title)}' src='data:image/png;base64,{data}'>")
            if f.note:
                parts.append(f"<p class='note'>{html.escape(f.note)}</p>")
            parts.append(_table(f.header, f.rows))
        for title, header, rows in sec.tables:
            parts.append(f"<h3>{html.escape(title)}</h3>" + _table(header, rows))
    parts.append("</body></html>")
    from lrcore.outputs import write_atomic

    return write_atomic(out, "\n".join(parts), "--out")     # whole or not at all


def paper_table(source) -> tuple[str, list, list] | None:
    """Table 1 side by side with the presets' predictions (only when the source is a preset)."""
    from lrsim.plan.sources import PresetSource
    from lrsim.plan.table1 import TABLE_HEADER, compare_table1, format_rows

    if not isinstance(source, PresetSource):
        return None
    rows = compare_table1(seeds=1, jobs=0, latency_file=source.latency_file)
    return (f"Paper presets vs Table 1 (sim / paper; {rows[0]['latency']})", TABLE_HEADER, format_rows(rows))
