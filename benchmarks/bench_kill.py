"""Kill test, long run: SIGKILL `lr collect` N times at random points, resume, check exactly-once.

    .venv/bin/python benchmarks/bench_kill.py [--real-n 5] [--real-mode lr|ar] [--fake-n 200] [--seed 0] [--skip-real]

Two parts, one after the other:
  fake   the real `lr collect` code path on the deterministic fake engine in a subprocess
         (tests/reliability/kill_fake_collect.py): many kills (timed, on write, torn lines);
  real   the vLLM CPU engines (draft + target, LR mode, tiny budgets); the machine-wide vLLM lock
         is held for this part only (kill times would be skewed by waits for other runs).
Then one SIGTERM and one SIGINT (to the group, like Ctrl-C) on the real engines, unless
--skip-signals. Prints a table, writes benchmarks/results/kill.json, its table kill.md (quoted in
docs/reliability.md) and docs/figures/kill_test.png (records in the file after each run, kill times
marked). `--render` rewrites kill.md from kill.json alone (no kills).
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import parse_or_render, write_results  # noqa: E402
from harness.killtest import KillTestConfig, expected_keys, kill_test, signal_test  # noqa: E402

FAKE_LIMIT, FAKE_SAMPLES = 100, 4  # 400 records: more work than 200 kills let through
REAL_LIMIT = 3
REAL_ARGS = {  # lr: both engines (a first record takes minutes on 2 busy cores, so most kills land
               # in start-up); ar: one engine, kills cycled through start-up, mid-record, on write
    "lr": ["--mode", "lr", "--dataset", "gsm8k", "--limit", str(REAL_LIMIT), "--max-tokens", "24",
           "--max-step-tokens", "16", "--depth", "2"],
    "ar": ["--mode", "ar", "--dataset", "gsm8k", "--limit", str(REAL_LIMIT), "--max-tokens", "24"]}


def run_fake(n: int, seed: int, work: Path) -> dict:
    cfg = KillTestConfig(
        collect_args=["--mode", "lr", "--limit", str(FAKE_LIMIT), "--samples", str(FAKE_SAMPLES),
                      "--max-tokens", "200"],
        out=work / "fake.jsonl", n=n, seed=seed, min_s=0.3, max_s=3.5,
        kinds=("timed", "timed", "on-write", "torn"),
        command=[sys.executable, str(ROOT / "tests/reliability/kill_fake_collect.py")],
        env={"LR_FAKE_TOKEN_S": "0.012"}, tear_env="LR_FAKE_TEAR_AT", orphan_timeout_s=10)
    prog = lambda i, k: print(f"  fake kill {i}/{n}: {k['kind']:8s} t={k['t_s']:6.2f}s "
                              f"lines={k['lines_after']} orphans={k['orphans']}", flush=True)
    return kill_test(cfg, expected_keys("gsm8k", FAKE_LIMIT, "lr", samples=FAKE_SAMPLES), prog)


def run_real(n: int, seed: int, work: Path, signals: bool, mode: str = "lr") -> tuple[dict, list[dict]]:
    from lrreal import models
    from lrreal.lock import vllm_lock

    cache = models.cache_dir()
    for name in (models.DEFAULT_DRAFT, models.DEFAULT_TARGET):
        models.prepare(name, cache)
    args = [*REAL_ARGS[mode], "--cache-dir", str(cache)]
    if mode == "ar":
        cfg = KillTestConfig(collect_args=args, out=work / "real.jsonl", n=n, seed=seed, min_s=5,
                             max_s=50, kinds=("timed", "mid-record", "on-write"), cycle_kinds=True,
                             mid_s=10, orphan_timeout_s=30)
    else:
        cfg = KillTestConfig(collect_args=args, out=work / "real.jsonl", n=n, seed=seed, min_s=5,
                             max_s=150, kinds=("timed", "timed", "on-write"), orphan_timeout_s=30)
    prog = lambda i, k: print(f"  real kill {i}/{n}: {k['kind']:8s} t={k['t_s']:6.1f}s "
                              f"engines={k['engines_seen']} lines={k['lines_after']} "
                              f"orphans={k['orphans']} gone in {k['linger_s']}s", flush=True)
    sigs = []
    with vllm_lock():  # held per part: other users of the machine get a turn in between
        res = kill_test(cfg, expected_keys("gsm8k", REAL_LIMIT, mode), prog) | {"mode": mode}
    if signals:
        for sig, group, after in ((signal.SIGTERM, False, 0), (signal.SIGINT, True, 1)):
            scfg = KillTestConfig(collect_args=args, out=work / f"sig-{sig}.jsonl", n=0)
            with vllm_lock():
                sigs.append(signal_test(scfg, sig, after_lines=after, group=group))
                print(f"  {sigs[-1]['signal']}: rc={sigs[-1]['rc']} exit {sigs[-1]['exit_s']} s "
                      f"orphans={sigs[-1]['orphans']} kept={sigs[-1]['records_after']}", flush=True)
    return res, sigs


def plot(results: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = [(k, v) for k, v in results.items() if k in ("fake", "real") and v]
    fig, axes = plt.subplots(1, len(parts), figsize=(6 * len(parts), 3.6), squeeze=False)
    for ax, (name, r) in zip(axes[0], parts):
        lines = [k["lines_after"] for k in r["kills"]] + [r["expected"] - r["lost"]]
        xs = range(1, len(lines) + 1)
        ax.step(xs, lines, where="mid", color="tab:blue", label="records in the file")
        ax.axhline(r["expected"], color="gray", ls=":", label=f"expected {r['expected']}")
        for i, k in enumerate(r["kills"], start=1):
            ax.plot(i, k["lines_after"], "x", color="tab:red" if k["kind"] == "timed" else "tab:orange",
                    ms=4)
        ax2 = ax.twinx()
        ax2.plot(range(1, len(r["kills"]) + 1), r["kill_times"], ".", color="tab:green", ms=3)
        ax2.set_ylabel("kill time after start (s)", color="tab:green")
        ax.set_xlabel("run (last: final run without kill)")
        ax.set_ylabel("records")
        ax.set_title(f"{name}: N={r['N']} kills, lost {r['lost']}, duplicated {r['duplicated']}, "
                     f"orphans {r['orphans_after_kill']}", fontsize=9)
        ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


PART_LABEL = {"fake": "fake engine", "real": "real engines"}
REAL_MODE_LABEL = {"lr": "LR, draft + target", "ar": "AR, target alone"}


def render(results: dict) -> str:
    """kill.json as the Markdown table docs/reliability.md quotes."""
    lines = ["| part (`benchmarks/bench_kill.py`) | N | records expected | lost | duplicated | invalid | "
             "orphans | torn tails dropped | wall |", "|---|---|---|---|---|---|---|---|---|"]
    for part in ("fake", "real"):
        r = results.get(part)
        if r:
            # runs before "mode" was recorded were all LR (the --real-mode default)
            label = PART_LABEL[part] + (f" ({REAL_MODE_LABEL[r.get('mode', 'lr')]})" if part == "real" else "")
            lines.append(f"| {label} | {r['N']} | {r['expected']} | {r['lost']} | {r['duplicated']} | "
                         f"{r['invalid']} | {r['orphans_after_kill']} (gone within {r['max_linger_s']:.2f} s) | "
                         f"{r['torn_tails_dropped']} | {r['wall_s']:.0f} s |")
    for part in ("fake", "real"):
        r = results.get(part)
        if r and r.get("phases"):
            lines.append(f"\n{PART_LABEL[part].capitalize()}, where the {r['kills_that_hit']} kills "
                         "landed: " + "; ".join(f"{ph}: {n}" for ph, n in sorted(r["phases"].items())) + ".")
    sigs = results.get("signals") or []
    if sigs:
        lines.append("")
        for s in sigs:
            to = "its process group (as Ctrl-C)" if s["group"] else "the process"
            lines.append(f"- {s['signal']} to {to}, {s['signalled_at_s']:.0f} s in, {s['lines_before']} "
                         f"record(s) written: exit {s['rc']} after {s['exit_s']:.1f} s, {s['orphans']} "
                         f"orphans, {s['records_after']} of {s['lines_before']} record(s) kept")
    dates = [f"fake engine {results['fake_date']}" if results.get("fake_date") else None,
             f"run {results['date']}" if results.get("date") else None]
    lines += ["", f"(`benchmarks/results/kill.json`, seed {results.get('seed', 0)}; "
              f"{', '.join(d for d in dates if d)}.)"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fake-n", type=int, default=200)
    ap.add_argument("--real-n", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--real-mode", choices=sorted(REAL_ARGS), default="lr",
                    help="lr: draft + target engines; ar: one engine, kills cycled over phases")
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--skip-fake", action="store_true")
    ap.add_argument("--skip-signals", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/kill.json"))
    ap.add_argument("--figure", default=str(ROOT / "docs/figures/kill_test.png"))
    a = parse_or_render(ap, render, "kills")
    if a is None:
        return
    work = Path(tempfile.mkdtemp(prefix="lr-bench-kill-"))
    results: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seed": a.seed}
    if not a.skip_fake:
        print(f"fake engine: {a.fake_n} kills", flush=True)
        results["fake"] = run_fake(a.fake_n, a.seed, work)
    if not a.skip_real:
        print(f"real engines: {a.real_n} kills", flush=True)
        results["real"], sigs = run_real(a.real_n, a.seed, work, not a.skip_signals,
                                          a.real_mode)
        results["real"]["mode"] = a.real_mode
        if sigs:  # --skip-signals keeps the last measured ones
            results["signals"] = sigs
    print(f"\n{'part':6s} {'N':>4s} {'hit':>4s} {'expected':>8s} {'lost':>5s} {'dup':>4s} {'invalid':>7s} "
          f"{'orphans':>7s} {'torn':>4s} {'max gone s':>10s} {'wall s':>7s}")
    for part in ("fake", "real"):
        r = results.get(part)
        if r:
            print(f"{part:6s} {r['N']:4d} {r['kills_that_hit']:4d} {r['expected']:8d} {r['lost']:5d} "
                  f"{r['duplicated']:4d} {r['invalid']:7d} {r['orphans_after_kill']:7d} "
                  f"{r['torn_tails_dropped']:4d} {r['max_linger_s']:10.2f} {r['wall_s']:7.1f}")
    for s in results.get("signals", []):
        print(f"{s['signal']}: exit code {s['rc']} after {s['exit_s']} s, orphans {s['orphans']}, "
              f"records kept {s['records_after']}/{s['lines_before']}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():  # a part run on its own (--skip-...) keeps the other part's last figures
        results = {**json.loads(out.read_text()), **results}
    write_results(out, results, render)
    plot(results, Path(a.figure))
    print(f"wrote {a.out} and {a.figure}")


if __name__ == "__main__":
    main()
