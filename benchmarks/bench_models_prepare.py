"""The one-time cost of `lr models prepare` on a cold model cache: both packaged models assembled,
checked and converted into a fresh, temporary cache by a real `lr models prepare --json` process,
timed as a whole and per model (each prepared folder's lr-model.json records its `convert_s`).

    .venv/bin/python benchmarks/bench_models_prepare.py [--out benchmarks/results/models_prepare.json]
    .venv/bin/python benchmarks/bench_models_prepare.py --render   # the .md from the .json

Run it alone: the conversion is CPU-bound, and a second job beside it slows both. The temporary
cache (about 9 GB of float32 weights) is removed afterwards; the user's cache is not touched.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from write import bench_main  # noqa: E402

LR = [sys.executable, "-c", "import cli; cli.main()"]


def measure() -> dict:
    from lrreal.binding import hardware

    with tempfile.TemporaryDirectory(prefix="lr-prepare-bench-", dir=ROOT.parent) as cache:
        load_before = os.getloadavg()[0]
        t0 = time.monotonic()
        p = subprocess.run(LR + ["models", "prepare", "--cache-dir", cache, "--json"], cwd=ROOT,
                           capture_output=True, text=True, timeout=3600)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            raise SystemExit(f"bench_models_prepare: lr models prepare exited {p.returncode}: "
                             f"{p.stderr.strip()[-400:]}")
        models = []
        for m in json.loads(p.stdout)["models"]:
            marker = json.loads((Path(m["path"]) / "lr-model.json").read_text())
            models.append({"name": m["name"], "role": marker["role"], "convert_s": marker["convert_s"],
                           "was_ready": m["was_ready"]})
    if any(m["was_ready"] for m in models):
        raise SystemExit("bench_models_prepare: a model was already prepared in a fresh cache")
    return {"date": time.strftime("%Y-%m-%d"), "cpu_model": hardware().get("cpu_model", "unknown"),
            "cores": os.cpu_count(), "load_before": round(load_before, 2), "wall_s": round(wall, 1),
            "models": models}


def render(doc: dict) -> str:
    per = ", ".join(f"{m['role']} ({m['name']}) {m['convert_s']:.0f} s" for m in doc["models"])
    return (f"`lr models prepare` on a cold model cache ({doc['date']}, {doc['cpu_model']}, "
            f"{doc['cores']} cores; `benchmarks/bench_models_prepare.py`): {doc['wall_s'] / 60:.1f} "
            f"minutes for both models ({per}).\n")


def main() -> None:
    bench_main(__doc__, "models_prepare", measure, render, "conversion")


if __name__ == "__main__":
    main()
