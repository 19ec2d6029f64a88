"""Simulated predictions of the paper's 14 presets side by side with the paper's Table 1.

Table 1 is single-stream (the authors' code, github.com/hao-ai-lab/LookaheadReasoning, runs one
question at a time), so each preset runs one request per seed; seed k gives AR and every mode the
same steps. A mode's speedup is the mean over seeds of AR latency / the mode's latency, with a
Student-t interval over seeds (stats.py, scipy). Seeds are added until every mode's interval is
within `ci_target` of its speedup (or `max_seeds`): the printed interval is the one asked for.
Modes as in the paper: LR = async tree, depth 4, width 1; SD = n-gram, 8 speculative tokens
(k2 = 9); LR+SD = both.

Rows whose Table 1 values are not filled in (lrsim/data/table1.json: null) are simulated
all the same, from the assumptions that file names; their paper columns are None.
"""
from __future__ import annotations

from lrcore.modes import MODE_POLICY

from . import stats
from .presets import LR_DEPTH, NGRAM_SPEC_TOKENS, Preset, build_presets, with_latency_file

KNOBS = {                      # column (a mode) -> the paper's knobs for it
    "ar": {},
    "lr": {"depth": LR_DEPTH, "k2": 1},
    "sd": {"k2": NGRAM_SPEC_TOKENS + 1},
    "lr+sd": {"depth": LR_DEPTH, "k2": NGRAM_SPEC_TOKENS + 1},
}
MODES = {m: (MODE_POLICY[m][0], knobs) for m, knobs in KNOBS.items()}   # column -> (policy, knobs)
SPEEDUPS = ("lr", "sd", "lr+sd")
MIN_STEPS = 500        # per preset and mode at least: short GSM8K answers get more seeds
CI_TARGET = 0.02       # default: every speedup known to +-2% (95% t-interval) ...
MAX_SEEDS = 128        # ... or this many seeds (a 36-step GSM8K answer needs ~100 for LR)


def _latencies(preset: Preset, seed: int, steps: int | None) -> dict[str, float]:
    from ..sim.runner import run

    out = {}
    for mode, (policy, knobs) in MODES.items():
        s, world = run(preset.to_config(policy, seed=seed, steps=steps, **knobs))
        out[mode] = sum(r.latency for r in world.records)
    return out


def predict(preset: Preset, seeds: int = 3, ci_target: float | None = CI_TARGET,
            max_seeds: int = MAX_SEEDS, steps: int | None = None, min_steps: int = MIN_STEPS) -> dict:
    """Speedups over AR of LR, SD and LR+SD with their intervals. `seeds` (and MIN_STEPS) is the
    first round; with ci_target, rounds add seeds until every interval is narrow enough."""
    n = max(seeds, -(-min_steps // (steps or preset.steps)))
    if ci_target:
        n = min(n, max(max_seeds, seeds))
    lats: list[dict] = []
    while True:
        lats += [_latencies(preset, k, steps) for k in range(len(lats), n)]
        cis = {m: stats.mean_ci([x["ar"] / x[m] for x in lats]) for m in SPEEDUPS}
        if not ci_target:
            break
        need = max(stats.blocks_needed(len(lats), stats.rel_halfwidth(*cis[m]), ci_target,
                                       max(max_seeds, seeds)) for m in SPEEDUPS)
        if need <= len(lats):
            break
        n = need
    cfg = preset.to_config("lr-async")
    paper = {"lr": preset.paper.lr, "sd": preset.paper.sd, "lr+sd": preset.paper.lr_sd}
    return {"preset": preset.name, "pair": preset.pair, "dataset": preset.dataset,
            "alpha1": preset.alpha1, "alpha1_source": preset.alpha1_source,
            "alpha2": preset.alpha2, "alpha2_source": preset.alpha2_source,
            "c1": cfg.c1, "verifier_s": cfg.verifier.seconds, "latency": preset.latency_source(),
            "seeds": len(lats), "ar_s_per_request": sum(x["ar"] for x in lats) / len(lats),
            "sim": {m: cis[m][0] for m in SPEEDUPS},
            "sim_ci": {m: (None if cis[m][1] is None else [cis[m][1], cis[m][2]]) for m in SPEEDUPS},
            "paper": paper, "paper_alpha1": preset.paper.alpha1}


def _one(args):
    name, seeds, latency_file, ci_target, max_seeds, table1, steps, min_steps = args
    return predict(with_latency_file(build_presets(table1)[name], latency_file), seeds, ci_target,
                   max_seeds, steps, min_steps)


def compare_table1(seeds: int = 3, jobs: int = 1, latency_file: str | None = None,
                   ci_target: float | None = None, max_seeds: int = MAX_SEEDS,
                   names: list[str] | None = None, table1: str | None = None,
                   steps: int | None = None, min_steps: int = MIN_STEPS) -> list[dict]:
    """One row per preset: simulated vs paper speedups, the ratio sim / paper per mode where the
    paper's value is known, and LR+SD / (LR x SD). ci_target None: `seeds` (at least MIN_STEPS
    steps per mode), intervals reported as they come; `lr plan --paper-table` asks CI_TARGET.
    latency_file: None = the shipped measured table
    where it applies, "roofline", or a table path. names: a subset of presets; steps, min_steps:
    shorter answers, fewer first-round seeds (tests)."""
    from .parallel import map_points

    names = names or list(build_presets(table1))
    rows = map_points(_one, [(n, seeds, latency_file, ci_target, max_seeds, table1, steps, min_steps)
                             for n in names], jobs=jobs)
    for r in rows:
        r["ratio"] = {m: (r["sim"][m] / r["paper"][m] if r["paper"][m] else None) for m in SPEEDUPS}
        r["product_ratio"] = r["sim"]["lr+sd"] / (r["sim"]["lr"] * r["sim"]["sd"])
    return rows


def _cell(sim: float, paper: float | None, sep: str) -> str:
    return f"{sim:.2f}{sep}{'-' if paper is None else f'{paper:.2f}'}"


def format_rows(rows: list[dict], sep: str = " / ") -> list[list[str]]:
    """Cells under TABLE_HEADER; sep joins simulated and paper speedup (the terminal uses "/").
    An assumed alpha1 (not published in the reference) carries a '*'."""
    out = []
    for r in rows:
        star = "" if r.get("paper_alpha1") is not None or "alpha1_source" not in r else "*"
        cells = [r["preset"], f"{r['alpha1']:.2f}{star}", f"{r.get('alpha2', 0):.2f}", f"{r['c1']:.3f}"]
        for m in SPEEDUPS:
            cells.append(_cell(r["sim"][m], r["paper"][m], sep))
        cells.append(f"{r['product_ratio']:.2f}")
        out.append(cells)
    return out


def max_halfwidth(rows: list[dict]) -> float | None:
    """The widest relative half-width of any simulated speedup's interval (None: no intervals)."""
    hw = [stats.rel_halfwidth(r["sim"][m], *r["sim_ci"][m]) for r in rows for m in SPEEDUPS
          if r.get("sim_ci", {}).get(m)]
    return max(hw) if hw else None


TABLE_HEADER = ["preset", "step accept per judged draft (alpha1)", "n-gram accept per drafted token (alpha2)",
                "c1", "LR sim/paper", "SD sim/paper", "LR+SD sim/paper", "LR+SD / (LR x SD)"]
