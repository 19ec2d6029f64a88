"""The toolkit's main job (`make demo`): theory, then a prediction of a real run on this machine
made before the run, and the run itself.

1-3. theory: the blog figure, exact optimal splits, the overheads the paper's numbers imply;
4. calibrate: one physical latency model per engine from the shipped GSM8K trace corpus
   (traces/corpus/gsm8k/*.jsonl; `lr calibrate`);
5. probe: time a reference pass on this machine now and rescale the profile to today's speed
   (`lr calibrate probe`);
6. predict: latency, tokens/s and speedup over AR of AR and LR (depth 2) on GSM8K problem 0,
   printed before anything is run (the simulator replaying the corpus record of that problem,
   analysis/predict_live.py);
7. measure: the same run for real (`lr collect`, greedy, the corpus's 384-token budget, target on
   core 0 and draft on core 1), the whole answer;
8. predicted vs measured side by side, and whether the answer was right;
9. plan: what to deploy here (calibrated profile) and on the paper's 4x H100 setup (`lr plan`);
10. report: theory vs simulation vs measurement for this machine (its profile and the corpus's
    configurations on the same axes), the paper preset in its own section (`lr plot`).

Every `lr` command is printed before it runs. Re-running resumes: live records already collected
are kept (the demo says so), never duplicated. `--quick` runs no model: today's profile is the
corpus's, and the "measured" column is the corpus records themselves. Everything goes under out/.
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lrcore.tables import console as make_console, styled
from lrsim.theory import HybridParams, optimize, speedup_grid
from lrsim.theory.figure import blog_curves
from lrsim.theory.inverse import implied_c1
from lrsim.theory.theorems import check_theorem

from .theory_plots import plot_blog_figure, plot_split_heatmap

# Illustrative parameter sets (step level from the paper's Table 1, R1-Distill 32B/1.5B on GSM8K:
# alpha1 = 0.63; c1 = 0.05 ~ the 1.5B/32B cost ratio). Token level: a draft model with alpha2 =
# 0.6 (inside Theorem 4's range) vs n-gram lookup (c2 = 0) with the low per-token acceptance
# measured on this CPU (~0.19-0.3).
SCENARIOS = {
    "draft-model SD": HybridParams(alpha1=0.63, c1=0.05, alpha2=0.6, c2=0.05),
    "n-gram SD": HybridParams(alpha1=0.63, c1=0.05, alpha2=0.3, c2=0.0),
}
BUDGETS = (4, 8, 16, 64, 1024)

# Paper Table 1: (pair / data, step acceptance alpha1, measured LR speedup).
PAPER_TABLE1 = [
    ("R1-Distill 32B/1.5B, GSM8K", 0.63, 1.71),
    ("R1-Distill 32B/1.5B, AIME24", 0.47, 1.36),
    ("Qwen3 32B/1.7B, GSM8K", 0.50, 1.32),
    ("Qwen3 32B/1.7B, AIME24", 0.43, 1.12),
]


def split_tables(console: Console) -> list[dict]:
    rows = []
    for name, base in SCENARIOS.items():
        for mode in ("sync", "async"):
            p = HybridParams(base.alpha1, base.c1, base.alpha2, base.c2, mode)
            t = Table(title=f"{name}: alpha1={p.alpha1} c1={p.c1} alpha2={p.alpha2} c2={p.c2} ({mode})")
            for col in ("M", "optimum (k1,k2)", "speedup", "pure SD", "pure LR", "winner", "theorem"):
                t.add_column(col, justify="right")
            for budget in BUDGETS:
                opt = optimize(p, budget)
                th = check_theorem(opt)
                verdict = "n/a" if not th.applies else f"{th.prediction} ({'ok' if th.agrees else 'MISMATCH'})"
                t.add_row(str(budget), f"({opt.best.k1}, {opt.best.k2})", f"{opt.best.speedup:.3f}",
                          f"{opt.pure_sd.speedup:.3f}", f"{opt.pure_lr.speedup:.3f}", opt.winner, verdict)
                rows.append({"scenario": name, "mode": mode, "budget": budget, "k1": opt.best.k1,
                             "k2": opt.best.k2, "speedup": opt.best.speedup, "winner": opt.winner,
                             "theorem": th.as_dict()})
            console.print(t)
    return rows


def implied_overheads(console: Console) -> list[dict]:
    t = Table(title="Effective c1 implied by the paper's measured LR speedups (async, S1 form)")
    for col in ("setup", "alpha1", "measured LR", "implied c1", "ceiling at c1=0.05"):
        t.add_column(col, justify="right")
    rows = []
    for name, a1, s in PAPER_TABLE1:
        c1 = implied_c1(a1, s)
        ceiling = 1.0 / (0.05 + 0.95 * (1 - a1))
        t.add_row(name, f"{a1:.2f}", f"{s:.2f}x", f"{c1:.3f}", f"{ceiling:.2f}x")
        rows.append({"setup": name, "alpha1": a1, "measured": s, "implied_c1": c1})
    console.print(t)
    console.print("The parameter ratio of a 1.5B draft to a 32B target is ~0.05; the measured speedups "
                  "imply 0.34-0.75: verifier latency, scheduling and batch cost dominate. The simulator "
                  "models those explicitly.")
    return rows


REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "traces" / "corpus"
LIVE_CONFIGS = ("ar", "lr-d2")
MAX_TOKENS = 384      # the corpus's GSM8K budget: answers finish (problem 0 needs ~265 tokens)


def heading(console: Console, text: str) -> None:
    console.rule(styled((text, "bold")))


def lr(console: Console, *args: str, shown: str | None = None, capture: bool = False) -> str:
    """Run one `lr` command as a user would (same interpreter), stop the demo if it fails.
    `shown`: how to print it (a glob instead of ten file names); `capture`: return stdout."""
    console.print(styled((f"$ lr {shown or shlex.join(args)}", "bold cyan")))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "cli", *args], text=True,
                       stdout=subprocess.PIPE if capture else None)
    if r.returncode != 0:
        console.print(styled((f"demo stopped: `lr {args[0]}` exited with {r.returncode}", "red")))
        sys.exit(r.returncode)
    console.print(styled((f"({time.perf_counter() - t0:.0f} s)", "dim")))
    return r.stdout or ""


def _rel(p: Path) -> Path:
    """p relative to the working directory when it lies under it (shorter commands to print)."""
    try:
        return p.resolve().relative_to(Path.cwd())
    except ValueError:
        return p


def _records(paths) -> list[dict]:
    from lrsim.calib.calibrate import read_records

    return [r for p in paths for r in read_records(str(p))]


def _live_keys(path: Path) -> set:
    if not path.is_file():
        return set()
    from lrsim.calib.physical import config_label

    return {(r["problem_id"], config_label(r)) for r in _records([path])}


def loop(console: Console, args) -> dict:
    """Steps 4-10: calibrate -> probe -> predict -> measure -> compare -> plan -> report."""
    from lrsim.calib.profile import load_profile

    from . import predict_live as pl

    out, quick = args.out, args.quick
    corpus_dir = _rel(args.corpus) / "gsm8k"
    corpus = sorted(corpus_dir.glob("*.jsonl"))
    if not corpus:
        console.print(styled((f"demo stopped: no GSM8K trace corpus in {corpus_dir} "
                              "(benchmarks/collect_corpus.py records it)", "red")))
        sys.exit(2)
    problem = f"gsm8k/{args.problem}"
    profile, today = out / "profile.json", out / "profile-today.json"
    res: dict = {"problem": problem, "corpus": [str(p) for p in corpus]}

    heading(console, "4. Calibrate: one latency model per engine from the shipped trace corpus")
    lr(console, "calibrate", *map(str, corpus), "-o", str(profile),
       shown=f"calibrate {corpus_dir}/*.jsonl -o {profile}")

    heading(console, "5. Probe: this machine's speed now vs the corpus's")
    if quick:
        today = profile
        console.print("(--quick) no engines: today's profile is the corpus profile as calibrated")
    else:
        lr(console, "models", "prepare")
        probe = json.loads(lr(console, "calibrate", "probe", "--profile", str(profile), "-o", str(today),
                              "--json", capture=True))
        console.print("slower (>1) or faster (<1) than the corpus now: " + ", ".join(
            f"{role} decode x{f['decode']:.2f}, prefill x{f['prefill']:.2f}"
            for role, f in probe["factors"].items()))
        res["probe_factors"] = probe["factors"]
        for w in probe["warnings"]:   # another machine model than the corpus's (rescale.py)
            console.print(styled(("warning:", "yellow"), f" {w}"))

    heading(console, f"6. Prediction for the live run ({problem}, greedy, {MAX_TOKENS}-token budget)")
    records = _records(corpus)
    pred = pl.predict(load_profile(today), records, problem, LIVE_CONFIGS, probe="none")
    console.print(f"Predicted with {today}, before running anything: the simulator replays the "
                  f"corpus record of {problem} for each configuration.")
    console.print(pl.prediction_table(pred, "prediction"))
    res["prediction"] = {c: {k: v for k, v in p.items() if k != "text"} for c, p in pred.items()}

    live_path = out / "live.jsonl"
    heading(console, "7. Measure: the same run for real on the packaged models")
    if quick:
        live = records
        console.print("(--quick) no live run: the 'measured' column is the corpus records the "
                      "prediction replayed (an in-sample check, not a prediction)")
    else:
        before = _live_keys(live_path)
        offset = ["--offset", str(args.problem)] if args.problem else []
        common = ["--dataset", "gsm8k", "--limit", "1", *offset, "--max-tokens", str(MAX_TOKENS),
                  "--target-cores", "0"]
        lr(console, "collect", "--mode", "ar", *common, "--out", str(live_path), "--resume")
        lr(console, "collect", "--mode", "lr", "--depth", "2", *common, "--draft-cores", "1",
           "--out", str(live_path), "--resume")
        kept = [c for c in LIVE_CONFIGS if (problem, c) in before]
        if kept:
            console.print(styled((f"{', '.join(kept)}: measured by an earlier run (kept by --resume); "
                                  f"delete {live_path} to measure again", "yellow")))
        live = _records([live_path])
        res["live"] = str(live_path)

    heading(console, "8. Predicted vs measured")
    rows = pl.compare(pred, live, problem)
    console.print(pl.comparison_table(rows, f"{problem}: predicted (step 6) vs measured (step 7)"))
    lrrow = next((r for r in rows if r["config"] == "lr-d2"), rows[-1])
    if lrrow["correct"] is not None:
        console.print(f"The answer was {'right' if lrrow['correct'] else 'wrong'}"
                      + ("" if lrrow["same_text"] is None else
                         f"; the text is {'the same as' if lrrow['same_text'] else 'not the same as'} "
                         "the corpus record's") + ".")
    res["comparison"] = rows

    heading(console, "9. Plan: this machine (calibrated) and the paper's 4x H100 setup")
    lr(console, "plan", "--profile", str(today), "--modes", "sd,lr", "--depth", "1-3", "--k2", "3")
    lr(console, "plan", "--preset", "r1-gsm8k")

    heading(console, "10. Report: this machine and its corpus; the paper preset apart")
    report = out / "report"
    lr(console, "plot", "--profile", str(profile), "--traces", str(corpus_dir), "--preset", "r1-gsm8k",
       "--out", str(report), "--quick")
    res["report"] = str(report / "report.html")
    return res


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=Path("out"), help="output directory")
    ap.add_argument("--theory-only", action="store_true", help="stop after the analytical part")
    ap.add_argument("--quick", action="store_true",
                    help="run no model: no probe, no live run; the corpus stands in for both")
    ap.add_argument("--corpus", type=Path, default=CORPUS, help="trace corpus (DIR/gsm8k/*.jsonl)")
    ap.add_argument("--problem", type=int, default=0, help="GSM8K problem of the live run (default 0)")
    args = ap.parse_args(argv)
    console = make_console()
    t0 = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    heading(console, "1. Token level vs step + token level (the paper's blog figure)")
    curves = blog_curves()
    fig = plot_blog_figure(curves, args.out / "blog_figure.png")
    (g1, s1), (g2, s2) = curves.peak("sd"), curves.peak("combined")
    console.print(f"SD alone peaks at {s1:.2f}x (gamma = {g1:.2f}); step + token at {s2:.2f}x "
                  f"(gamma = {g2:.2f}). Plot: {fig}")

    heading(console, "2. Optimal split of a parallelism budget M (exact, all integer splits)")
    splits = split_tables(console)
    p = HybridParams(0.63, 0.05, 0.6, 0.05, "async")
    heat = plot_split_heatmap(speedup_grid(p, 64), optimize(p, 64), args.out / "split_heatmap.png")
    console.print(f"Heatmap of h(k1, k2) under M = 64 (async): {heat}")

    heading(console, "3. What the paper's measurements say about overheads")
    overheads = implied_overheads(console)

    summary = {"blog_peaks": {"sd": [g1, s1], "combined": [g2, s2]}, "splits": splits,
               "implied_c1": overheads}
    if not args.theory_only:
        summary.update(loop(console, args))
    summary["elapsed_s"] = time.perf_counter() - t0
    (args.out / "demo_summary.json").write_text(json.dumps(summary, indent=1))
    console.print(f"\nDone in {summary['elapsed_s']:.1f} s; summary: {args.out / 'demo_summary.json'}"
                  + (f"; report: {summary['report']}" if "report" in summary else ""))
    return summary


if __name__ == "__main__":
    main()
