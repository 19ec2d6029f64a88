"""`lr calibrate`, `lr calibrate measure` and `lr replay` (registered by the top-level cli.py).

    lr calibrate TRACES... -o profile.json [--holdout F --seed N] [--target-curve C.json]
    lr calibrate measure --model PATH --batch-sizes 1,2,4 --context 256,1024 -o curve.json
    lr replay --profile P TRACES... [--holdout F --seed N] [--json]
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperGroup

from ..errors import UserError


class _DefaultFit(TyperGroup):
    """`lr calibrate TRACES...` runs the `fit` sub-command; `lr calibrate measure ...` measures."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["fit", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_DefaultFit, no_args_is_help=True,
                  help="Fit a simulator profile from real traces (TRACES... -o profile.json), "
                       "or measure latency curves on a real engine (measure).")

JSON = typer.Option(False, "--json", help="Print one JSON object instead of tables.")


def _console():
    from rich.console import Console

    return Console()


def _fmt(x, spec=".3f", pct=False):
    if x is None:
        return "-"
    return f"{x:+.1f}%" if pct else format(x, spec)


def _ints(flag: str, text: str) -> list[int]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UserError(f"{flag} must be a comma-separated list of integers, got {text!r}") from None
    if not vals or any(v < 1 for v in vals):
        raise UserError(f"{flag} must list integers >= 1, got {text!r}")
    return vals


def _problems(problems: str | None, holdout: float | None, seed: int, traces) -> set | None:
    from .calibrate import read_records, split_problems

    if problems and holdout is not None:
        raise UserError("--problems and --holdout are exclusive")
    if problems:
        return {p.strip() for p in problems.split(",") if p.strip()}
    if holdout is not None:
        ids = [r["problem_id"] for t in traces for r in read_records(t)]
        return split_problems(ids, holdout, seed)[0]
    return None


@app.command("fit")
def fit_cmd(
    traces: List[Path] = typer.Argument(..., help="Trace files (JSONL, schema v1) from `lr collect`."),
    out: Path = typer.Option(..., "--out", "-o", help="Profile to write (JSON)."),
    problems: Optional[str] = typer.Option(None, "--problems", help="Calibrate on these problem ids only (comma-separated)."),
    holdout: Optional[float] = typer.Option(None, "--holdout", help="Hold this fraction of problems out (validate them with `lr replay --holdout` and the same --seed)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the --holdout split."),
    latency_model: str = typer.Option("roofline", "--latency-model", help="roofline (least-squares fit) | table (binned forward passes)."),
    target_curve: Optional[Path] = typer.Option(None, "--target-curve", help="Measured curve (lr calibrate measure) to use for the target."),
    draft_curve: Optional[Path] = typer.Option(None, "--draft-curve", help="Measured curve to use for the draft."),
    name: Optional[str] = typer.Option(None, "--name", help="Profile name (default: the first trace file's stem)."),
    as_json: bool = JSON,
):
    """Fit forward-pass latency, verifier latency, step lengths, acceptance and overheads."""
    from .calibrate import calibrate
    from .measure import curve_entry
    from .profile import Profile, save_profile

    keep = _problems(problems, holdout, seed, traces)
    doc = calibrate([str(t) for t in traces], problems=keep, name=name, latency_kind=latency_model)
    for role, curve in (("target", target_curve), ("draft", draft_curve)):
        if curve is not None:
            doc["latency"][role] = curve_entry(curve)
            for k in [k for k in doc["latency"] if k.startswith(role + "@")]:
                del doc["latency"][k]     # a measured curve replaces every fitted variant
    if holdout is not None:
        doc["source"]["holdout"] = {"fraction": holdout, "seed": seed}
    save_profile(doc, out)
    prof = Profile(doc, str(out))
    summary = prof.summary() | {"out": str(out), "warnings": doc.get("warnings", [])}
    if as_json:
        print(json.dumps(summary))
        return
    _print_profile(doc, out)


def _print_profile(doc: dict, out: Path) -> None:
    from rich.table import Table

    c = _console()
    t = Table(title=f"latency fits -> {out}")
    for col in ("engine", "kind", "source", "points", "base ms", "slope ms/tok", "prefill ms/tok", "RMSE ms", "MAPE"):
        t.add_column(col, justify="right" if col not in ("engine", "kind", "source") else "left")
    for k, v in doc["latency"].items():
        f = v.get("fit", {})
        t.add_row(k, v["kind"], str(f.get("source", "-")), str(f.get("points", "-")),
                  _fmt(v.get("base_s", 0) * 1e3, ".1f") if "base_s" in v else "-",
                  _fmt(v.get("per_token_s", 0) * 1e3, ".2f") if "base_s" in v else "-",
                  _fmt(v.get("prefill_per_token_s", 0) * 1e3, ".2f") if "base_s" in v else "-",
                  _fmt((f.get("rmse_s") or 0) * 1e3, ".1f") if f else "-",
                  f"{100 * f['mape']:.1f}%" if f.get("mape") is not None else "-")
    c.print(t)
    sa, st, sd, ov = doc["step_acceptance"], doc["steps"], doc["sd"], doc["overheads"]
    t2 = Table(show_header=False, title="workload and overheads")
    t2.add_column(style="bold")
    t2.add_column(justify="right")
    for k, v in (("verifier s/judgement", _fmt(doc["verifier"]["seconds"], ".4f")),
                 ("step acceptance", _fmt(sa["rate"])),
                 ("by depth", json.dumps(sa["by_depth"])),
                 ("SD token acceptance", _fmt(sd["alpha2"])),
                 ("step tokens mean / log-sigma", f"{st['mean_tokens']:.1f} / {st['lognormal_sigma']:.2f}"),
                 ("steps per request", _fmt(st["steps_per_request"], ".1f")),
                 ("per-step overhead s", _fmt(ov.get("per_step_s"), ".4f")),
                 ("per-request overhead s", _fmt(ov.get("per_request_s"), ".3f")),
                 ("draft/target shared device", str(doc["placement"]["shared"]))):
        t2.add_row(k, v)
    c.print(t2)
    for w in doc.get("warnings", []):
        c.print(f"[yellow]warning:[/] {w}")


@app.command("measure")
def measure_cmd(
    model: str = typer.Option(..., "--model", help="HF model folder or a packaged model name (lr models list)."),
    out: Path = typer.Option(..., "--out", "-o", help="Curve to write (lrsim latency-measurement JSON)."),
    batch_sizes: str = typer.Option("1,2,4", "--batch-sizes", help="Concurrent sequences per decode pass."),
    context: str = typer.Option("128", "--context", help="Prompt (context) lengths in tokens."),
    decode_tokens: int = typer.Option(8, "--decode-tokens", min=2, max=65536, help="Tokens decoded per request."),
    dtype: str = typer.Option("float32", "--dtype", help="vLLM dtype."),
    cores: str = typer.Option("0-1", "--cores", help="VLLM_CPU_OMP_THREADS_BIND."),
    kv_cache_space: int = typer.Option(2, "--kv-cache-space", min=1, max=1024, help="GiB of KV cache (CPU)."),
    cache_dir: Optional[str] = typer.Option(None, "--cache-dir", help="Model cache of packaged models."),
    as_json: bool = JSON,
):
    """Time decode passes at each (batch, context) and prefill chunks on a real vLLM engine."""
    from .measure import MeasureSpec, measure

    from lrreal.engine import check_dtype
    check_dtype(dtype)
    spec = MeasureSpec(model=model, batch_sizes=_ints("--batch-sizes", batch_sizes),
                       contexts=_ints("--context", context), decode_tokens=decode_tokens, dtype=dtype,
                       cores=cores, kv_cache_space_gib=kv_cache_space, cache_dir=cache_dir)
    doc = measure(spec, out)
    if as_json:
        print(json.dumps(doc))
        return
    from rich.table import Table

    (name, m), = doc["models"].items()
    t = Table(title=f"{name} on {doc['device']} -> {out}")
    for col in ("batch", "context", "decode ms/pass", "passes"):
        t.add_column(col, justify="right")
    for r in m["decode"]:
        t.add_row(str(r["batch"]), str(r["context"]), f"{r['ms']:.1f}", str(r["passes"]))
    _console().print(t)
    if m["prefill"]:
        _console().print("prefill: " + ", ".join(f"{r['tokens']} tok {r['ms']:.0f} ms" for r in m["prefill"]))


def replay_cmd(
    traces: List[Path] = typer.Argument(..., help="Trace files (JSONL) to replay."),
    profile: Optional[Path] = typer.Option(None, "--profile", help="Profile from `lr calibrate`."),
    holdout: Optional[float] = typer.Option(None, "--holdout", help="Validate on this fraction of problems; calibrate on the rest (unless --profile)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the --holdout split and of draws beyond the recorded verdicts."),
    save_profile: Optional[Path] = typer.Option(None, "--save-profile", help="With --holdout: write the profile fitted on the calibration problems."),
    per_record: bool = typer.Option(False, "--per-record", help="Also print one row per trace record."),
    as_json: bool = JSON,
):
    """Simulate the traces' own workload and compare with what was measured (MAPE, Pearson r)."""
    from .profile import load_profile
    from .profile import save_profile as save
    from .replay import replay_files

    prof = load_profile(profile) if profile is not None else None
    out, prof = replay_files([str(t) for t in traces], prof, holdout, seed)
    if save_profile is not None:
        save(prof, save_profile)
    if as_json:
        if not per_record:
            out.pop("per_record", None)
        print(json.dumps(out))
        return
    _print_replay(out, per_record)


def _print_replay(out: dict, per_record: bool) -> None:
    from rich.table import Table

    title = f"fidelity: simulator vs measured ({out['records']} records, profile {out['profile']})"
    if out.get("holdout"):
        title += f", held out: {len(out['holdout']['validated_problems'])} problems"
    t = Table(title=title)
    for col in ("mode", "n", "MAPE", "Pearson r", "tok/s meas", "tok/s pred", "mean diff",
                "P50 diff", "P90 diff", "speedup meas", "speedup pred"):
        t.add_column(col, justify="left" if col == "mode" else "right")
    for mode, e in out["modes"].items():
        sp = e["speedup"] or {}
        t.add_row(mode, str(e["records"]), f"{100 * e['mape']:.1f}%", _fmt(e["pearson_r"]),
                  _fmt(e["tokens_per_s"]["measured"], ".2f"), _fmt(e["tokens_per_s"]["predicted"], ".2f"),
                  _fmt(e["latency"]["mean"]["diff_pct"], pct=True), _fmt(e["latency"]["p50"]["diff_pct"], pct=True),
                  _fmt(e["latency"]["p90"]["diff_pct"], pct=True), _fmt(sp.get("measured"), ".2f"),
                  _fmt(sp.get("predicted"), ".2f"))
    t.add_row("all", str(out["records"]), f"{100 * out['mape']:.1f}%", _fmt(out["pearson_r"]), *[""] * 7)
    c = _console()
    c.print(t)
    if per_record:
        t2 = Table(title="per record")
        for col in ("mode", "problem", "sample", "tokens", "measured s", "predicted s", "diff"):
            t2.add_column(col)
        for r in out["per_record"]:
            t2.add_row(r["mode"], r["problem_id"], str(r["sample"]), str(r["tokens"]),
                       f"{r['measured_s']:.2f}", f"{r['predicted_s']:.2f}",
                       _fmt(100 * (r["predicted_s"] - r["measured_s"]) / r["measured_s"], pct=True))
        c.print(t2)
    for w in out.get("warnings", []):
        c.print(f"[yellow]warning:[/] {w}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="calibrate")
    root.command("replay")(replay_cmd)
