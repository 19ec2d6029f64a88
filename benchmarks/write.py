"""Where a benchmark leaves its output: `results/<name>.json` and, beside it, the Markdown the
README and docs quote (`benchmarks/quote.py`), each written atomically (lrcore/outputs.py: a
temporary file renamed over the old one), so a run killed halfway never leaves a torn figure."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable

from lrcore.outputs import write_atomic


def write_results(path: str | Path, doc: dict, render: Callable[[dict], str], **dump) -> Path:
    """`doc` as indented JSON at `path` and `render(doc)` at `path` with the suffix .md."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(doc, indent=1, **dump) + "\n")
    write_atomic(path.with_suffix(".md"), render(doc))
    return path


def table_head(caption: str, *columns: str) -> list[str]:
    """The opening lines of a rendered table: its caption, a blank line, the header row and the
    separator row."""
    return [caption, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def corpus_args(doc: str, name: str, corpora) -> argparse.Namespace:
    """The flags of a benchmark that reads load corpora: --corpus (repeatable; default `corpora`),
    --out (default benchmarks/results/<name>.json; the benchmark resolves it) and --json; the
    parsed flags, with `corpus` the list to read."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", action="append",
                    help=f"a load corpus folder (repeatable; default: {', '.join(corpora)})")
    ap.add_argument("--out", default=f"benchmarks/results/{name}.json")
    ap.add_argument("--json", action="store_true", help="print the results as JSON, not Markdown")
    args = ap.parse_args()
    args.corpus = args.corpus or list(corpora)
    return args


def parse_or_render(ap, render: Callable[[dict], str], skipped: str):
    """Parse a benchmark's flags, with the --render every benchmark with a rendered .md takes
    (`skipped`: what it then does not run). With --render: the .md rewritten (`rerender`) and None
    returned, the caller's cue to stop; otherwise the parsed flags."""
    ap.add_argument("--render", action="store_true",
                    help=f"rewrite the .md beside --out from its .json alone; no {skipped}")
    args = ap.parse_args()
    if args.render:
        rerender(args.out, render)
        return None
    return args


def rerender(path: str | Path, render: Callable[[dict], str]) -> Path:
    """--render: only the .md beside `path`, rendered anew from the committed JSON (a change of
    wording, never of figures); the JSON is left as it is."""
    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"{path}: no results to render (run the benchmark first)")
    write_atomic(path.with_suffix(".md"), render(json.loads(path.read_text())))
    return path


def run_and_write(path: str | Path, bench: Callable[[], dict], render: Callable[[dict], str]) -> None:
    """A benchmark's main with no arguments: run it, write its results, print the Markdown."""
    doc = bench()
    write_results(path, doc, render)
    print(render(doc), end="")


def bench_main(doc: str, name: str, measure: Callable[[], dict], render: Callable[[dict], str],
               skipped: str) -> None:
    """A benchmark's main whose only flags are --out (default results/<name>.json), --json and
    --render: measure, write the .json and its .md, print the .md (the JSON with --json)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / f"{name}.json"))
    ap.add_argument("--json", action="store_true", help="print the results as JSON, not Markdown")
    args = parse_or_render(ap, render, skipped)
    if args is None:
        return
    out = measure()
    write_results(args.out, out, render)
    print(json.dumps(out, indent=1) if args.json else render(out), end="" if not args.json else "\n")


def cpu_name() -> str:
    """This machine's CPU as the traces name it (lrreal.binding.cpu_identity: a virtual machine
    may call every generation "AMD EPYC", so its family and model too)."""
    from lrreal.binding import cpu_identity
    try:
        info = cpu_identity(Path("/proc/cpuinfo").read_text())
    except OSError:
        return "unknown CPU"
    return " ".join(x for x in (info.get("cpu_model"), info.get("cpu_id")) if x) or "unknown CPU"


def sim_modules() -> str:
    """Which simulator modules a run here uses: compiled (lrsim/native.py, where the build is
    fresh: every process that imports the simulator picks it up) or plain Python, and why."""
    from lrsim import native
    st = native.state()
    return "compiled (lrsim/native.py)" if st["active"] else f"plain Python: {st['reason']}"


def batch_curves(args: argparse.Namespace, root: Path, prefix: str) -> dict[str, str]:
    """{role: curve path as given} of a benchmark's --target-batch-curve/--draft-batch-curve
    flags, each checked to exist under `root` (else the one-line exit `prefix: --... no such
    file`)."""
    curves = {r: c for r, c in (("target", args.target_batch_curve), ("draft", args.draft_batch_curve)) if c}
    for r, c in curves.items():
        if not (root / c).is_file():
            raise SystemExit(f"{prefix}: --{r}-batch-curve {c}: no such file")
    return curves
