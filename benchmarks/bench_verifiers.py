"""What the verifiers cost and how they score on this machine (docs/verifiers-and-data.md): the
MiniLM embedding verifier's load time (a fresh process: its imports included), seconds per
comparison and its similarity for a paraphrase of a step, the next step and an unrelated
sentence; a real `lr judge serve` of each packaged model (the 0.5B draft, then the 1.5B target;
float32, 1 GiB of KV cache): start-up time and resident memory, and seconds per `judge` and
`judge-logprob` call with their verdicts and P(aligned) on the same pairs.

    .venv/bin/python benchmarks/bench_verifiers.py [--out benchmarks/results/verifiers.json]
    .venv/bin/python benchmarks/bench_verifiers.py --render   # the .md from the .json

Run it alone (it starts vLLM judge servers, one at a time). Each pair is asked REPEATS times; the judge's
first calls after start-up are its warm-up and are timed like the others (the prompt prefix
cache makes later calls of the same template faster).
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from write import bench_main  # noqa: E402

LR = [sys.executable, "-c", "import cli; cli.main()"]
REPEATS = 3                 # each pair asked this many times per verifier
STARTUP_TIMEOUT_S = 900     # vLLM CPU start-up; far more than it takes on an idle machine
# (target step, a paraphrase of it, the step after it, an unrelated sentence): GSM8K problems 0-2
TRIPLES = [
    ("Natalia sold 48/2 = 24 clips in May.",
     "In May, Natalia sold half of 48, which is 24 clips.",
     "Altogether she sold 48 + 24 = 72 clips in April and May.",
     "The weather in Paris is rainy today."),
    ("Weng earns 12/60 = $0.2 per minute.",
     "Per minute, Weng makes 12 divided by 60, which is $0.2.",
     "Working 50 minutes, she earned 0.2 x 50 = $10.",
     "The library opens at nine on Sundays."),
    ("Betty has only 100 / 2 = $50.",
     "Half of the $100 wallet is $50, which is what Betty has.",
     "Her grandparents gave her 15 x 2 = $30.",
     "Penguins live mostly in the Southern Hemisphere."),
]
KINDS = ("paraphrase", "next step", "unrelated")
JUDGES = ("judge", "judge-logprob:0.5")
JUDGE_MODELS = ("draft", "target")   # the packaged 0.5B and 1.5B as judges


def pairs() -> list[tuple[str, str, str]]:
    """(kind, target step, drafted step) for every triple, REPEATS times, kinds interleaved."""
    return [(kind, t[0], t[1 + i]) for _ in range(REPEATS) for t in TRIPLES for i, kind in enumerate(KINDS)]


def group_rss_gib(pgid: int) -> float:
    """Resident memory of a process group (a server and its engine core; shared library pages
    counted in each process)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                total += int((stat.parent / "statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            pass
    return total / 2**30


async def ask(verifier, todo) -> list[dict]:
    """Each (kind, target, draft) verified in turn: kind, accepted, score, seconds."""
    rows = []
    for kind, target, draft in todo:
        v = await verifier.verify(target, draft)
        if v.error:
            raise SystemExit(f"bench_verifiers: {kind}: {v.error}")
        rows.append({"kind": kind, "accepted": v.accepted, "score": v.score, "seconds": v.end - v.start})
    return rows


def embedding() -> dict:
    t0 = time.perf_counter()
    from lrreal.verifiers import EmbeddingVerifier      # its imports are part of the load time
    v = EmbeddingVerifier(threshold=0.9)
    asyncio.run(v.warm_up())
    load_s = time.perf_counter() - t0
    return {"spec": "embedding:0.9", "load_s": load_s, "calls": asyncio.run(ask(v, pairs()))}


def judge_model(role: str = "draft") -> Path:
    """The packaged model of `role` (draft: the 0.5B, target: the 1.5B) as an HF folder,
    prepared once if needed."""
    from lrcore.errors import UserError
    from lrreal import models
    try:
        return models.resolve(role)
    except UserError:
        return models.prepare(role, models.cache_dir())


def judge(role: str) -> dict:
    """A real `lr judge serve` of the packaged `role` model: start-up, memory, then every pair
    per judge spec; the server stopped (SIGTERM) and its group gone before returning."""
    from bench_engine_faults import read_line
    from lrreal.judge_server import _group_alive
    from lrreal.verifiers import make_verifier

    argv = LR + ["judge", "serve", "--model", str(judge_model(role)), "--kv-cache-space", "1",
                 "--max-model-len", "1024", "--max-num-seqs", "4", "--json"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        line = read_line(proc, proc.stdout, STARTUP_TIMEOUT_S)
        if not line:
            raise SystemExit(f"bench_verifiers: lr judge serve ({role}) did not come up (exit {proc.poll()})")
        info = json.loads(line)
        out = {"model": Path(info["model"]).name, "startup_s": time.perf_counter() - t0,
               "rss_gib": group_rss_gib(info["pid"]), "specs": {}}
        for spec in JUDGES:
            v = make_verifier(spec, judge_url=info["url"], judge_timeout_s=120, judge_retries=1)

            async def go():
                try:
                    return await ask(v, pairs())
                finally:
                    await v.aclose()
            out["specs"][spec] = asyncio.run(go())
        return out
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)


def measure() -> dict:
    load = os.getloadavg()[0]
    emb = embedding()           # first: its load time is a fresh process's
    return {"repeats": REPEATS, "pairs_per_kind": len(TRIPLES) * REPEATS, "embedding": emb,
            "judges": {role: judge(role) for role in JUDGE_MODELS},
            "cpu_model": next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                               if ln.startswith("model name")), "?"),
            "load_average": load}


def _span(xs: list[float], fmt: str) -> str:
    lo, hi = min(xs), max(xs)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)} to {fmt.format(hi)}"


def by_kind(calls: list[dict]) -> dict:
    """kind -> accepted, asked and the (min, max) score (None for verdicts without one)."""
    out = {}
    for kind in KINDS:
        rows = [c for c in calls if c["kind"] == kind]
        scores = [c["score"] for c in rows if c["score"] is not None]
        out[kind] = {"accepted": sum(c["accepted"] for c in rows), "asked": len(rows),
                     "score": (min(scores), max(scores)) if scores else None}
    return out


def seconds(calls: list[dict]) -> dict:
    s = [c["seconds"] for c in calls]
    return {"median": statistics.median(s), "min": min(s), "max": max(s)}


def render(doc: dict) -> str:
    lines = [f"`benchmarks/bench_verifiers.py` on {doc['cpu_model']} (load average {doc['load_average']:.2f} "
             f"before the run): {len(TRIPLES)} GSM8K steps, each against a paraphrase, the next step and an "
             f"unrelated sentence, asked {doc['repeats']} times per verifier.", "",
             "| verifier | seconds per call, median (min-max) | paraphrase | next step | unrelated |",
             "|---|---|---|---|---|"]
    rows = [("embedding:0.9 (similarity)", doc["embedding"]["calls"])] + [
        (f"{spec} on the {j['model']} ({'P(aligned)' if 'logprob' in spec else 'verdict'})", calls)
        for j in doc["judges"].values() for spec, calls in j["specs"].items()]
    for name, calls in rows:
        sec, kinds = seconds(calls), by_kind(calls)
        cells = []
        for kind in KINDS:
            k = kinds[kind]
            score = "" if k["score"] is None else _span(list(k["score"]), "{:.2f}") + ", "
            cells.append(f"{score}{k['accepted']}/{k['asked']} accepted")
        lines.append(f"| {name} | {sec['median']:.2f} ({sec['min']:.2f}-{sec['max']:.2f}) | " + " | ".join(cells) + " |")
    lines += ["", f"The embedding verifier loaded in {doc['embedding']['load_s']:.1f} s (a fresh process: "
              "sentence-transformers and torch imported, MiniLM read). `lr judge serve` (float32, 1 GiB of KV "
              "cache): " + "; ".join(f"the {j['model']} answered after {j['startup_s']:.0f} s and its processes "
                                     f"then held {j['rss_gib']:.1f} GiB resident" for j in doc["judges"].values())
              + " (sum of RSS; shared library pages counted in each process)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    bench_main(__doc__, "verifiers", measure, render, "verifier loaded, no judge server started")


if __name__ == "__main__":
    main()
