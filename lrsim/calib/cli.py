"""The `lr calibrate` group with `lr calibrate fit`, and `lr replay` (registered by the top-level
cli.py).

    lr calibrate TRACES... -o profile.json [--configs ar,lr-d2] [--holdout F --seed N]
    lr replay --profile P TRACES... [--holdout F --seed N] [--json]
    lr replay TRACES... --calibrate-on ar,lr-d2      # predict every other configuration

The group's commands that run real engines live above the simulator and are added to `app` by
cli.py: `lr calibrate measure` (lrreal/calibrate_cli.py: latency curves on a real engine) and
`lr calibrate probe` (analysis/probe_cli.py: rescale a profile to this machine's speed now).
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperGroup

from lrcore import jsonout
from lrcore.cliopts import JSON
from lrcore.errors import UserError
from lrcore.tables import console, styled


class _DefaultFit(TyperGroup):
    """`lr calibrate TRACES...` runs the `fit` sub-command; `lr calibrate measure ...` measures."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["fit", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_DefaultFit, no_args_is_help=True,
                  help="Fit a simulator profile from real traces (TRACES... -o profile.json), "
                       "or measure latency curves on a real engine (measure).")


def _save_profile(profile, out: Path, flag: str) -> None:
    """Validate, then write atomically (lrcore/outputs.py): the file is whole or unchanged."""
    from .profile import save_profile

    save_profile(profile, out, flag)


def _traces(traces: list) -> list:
    """Trace arguments, each file once (the same file twice would count its records twice)."""
    from lrcore.outputs import distinct_inputs

    return distinct_inputs(traces, "TRACES")


def _fmt(x, spec=".3f", pct=False):
    if x is None:
        return "-"
    return f"{x:+.1f}%" if pct else format(x, spec)


def _labels(flag: str, text: str | None) -> set | None:
    if text is None:
        return None
    vals = {v.strip() for v in text.split(",") if v.strip()}
    if not vals:
        raise UserError(f"{flag}: name at least one configuration (e.g. ar,lr-d2)")
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
    configs: Optional[str] = typer.Option(None, "--configs", help="Calibrate on these configurations only (labels as `lr replay` prints them, e.g. ar,lr-d2)."),
    holdout: Optional[float] = typer.Option(None, "--holdout", help="Hold this fraction of problems out (validate them with `lr replay --holdout` and the same --seed)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the --holdout split."),
    latency_model: str = typer.Option("roofline", "--latency-model", help="roofline (least-squares fit) | table (binned forward passes)."),
    target_curve: Optional[Path] = typer.Option(None, "--target-curve", help="Measured curve (lr calibrate measure) to use for the target."),
    draft_curve: Optional[Path] = typer.Option(None, "--draft-curve", help="Measured curve to use for the draft."),
    target_batch_curve: Optional[Path] = typer.Option(None, "--target-batch-curve", help="Measured curve (lr calibrate measure --batch-sizes 1,...,24) whose shape in the batch size the target's fitted line takes: larger batches than the traces reached (the smaller ones are reshaped too)."),
    draft_batch_curve: Optional[Path] = typer.Option(None, "--draft-batch-curve", help="The same for the draft's line."),
    batch_curve_as_measured: bool = typer.Option(False, "--batch-curve-as-measured", help="Take the batch curves' points as measured, not smoothed by a rising fit (a CPU whose passes of 3-6 sequences beat 1-2 has a curve that dips)."),
    name: Optional[str] = typer.Option(None, "--name", help="Profile name (default: the first trace file's stem)."),
    batch_factors: bool = typer.Option(False, "--batch-factors", help="Also record the measured time over the line's per batch size of plain decode passes (CPUs whose passes of 3-6 sequences beat 1-2: docs/load.md, 'A fourth CPU')."),
    as_json: bool = JSON,
):
    """Fit forward-pass latency, verifier latency, step lengths, acceptance and overheads."""
    from lrcore.outputs import check_output
    from .calibrate import calibrate
    from .curve import curve_entry
    from .profile import Profile

    traces = _traces(traces)
    check_output(out, "--out", inputs=[*traces, target_curve, draft_curve, target_batch_curve,
                                       draft_batch_curve])
    for role, curve, shape in (("target", target_curve, target_batch_curve),
                               ("draft", draft_curve, draft_batch_curve)):
        if curve is not None and shape is not None:
            raise UserError(f"--{role}-curve replaces the {role}'s fitted line, which "
                            f"--{role}-batch-curve shapes: use one or the other")
        if shape is not None and not shape.is_file():
            raise UserError(f"--{role}-batch-curve {shape}: no such file")
    keep = _problems(problems, holdout, seed, traces)
    if configs is not None:
        from .calibrate import read_records
        from .physical import config_label

        have = {config_label(r) for t in traces for r in read_records(t)}
        missing = sorted(_labels("--configs", configs) - have)
        if missing:
            raise UserError(f"--configs: no records of configuration(s) {', '.join(missing)} in "
                            f"these traces (they hold {', '.join(sorted(have)) or 'none'})")
    doc = calibrate([str(t) for t in traces], problems=keep, name=name, latency_kind=latency_model,
                    configs=_labels("--configs", configs), batch_factors=batch_factors,
                    batch_curves={"target": target_batch_curve, "draft": draft_batch_curve},
                    smooth_curves=not batch_curve_as_measured)
    for role, curve in (("target", target_curve), ("draft", draft_curve)):
        if curve is not None:
            doc["latency"][role] = curve_entry(curve)
            for k in [k for k in doc["latency"] if k.startswith(role + "@")]:
                del doc["latency"][k]     # a measured curve replaces every fitted variant
    if holdout is not None:
        doc["source"]["holdout"] = {"fraction": holdout, "seed": seed}
    _save_profile(doc, out, "--out")
    prof = Profile(doc, str(out))
    summary = prof.summary() | {"out": str(out), "warnings": doc.get("warnings", [])}
    if as_json:
        print(jsonout.dumps(summary))
        return
    _print_profile(doc, out)


def _pm(v: dict, key: str, scale: float, spec: str) -> str:
    """value+-SE of a fitted parameter ("-" if fixed at 0 or absent)."""
    if key not in v:
        return "-"
    x = float(v[key]) * scale
    se = ((v.get("fit") or {}).get("stderr") or {}).get(key)
    if not x and se is None:
        return "0"
    return format(x, spec) + (f"±{format(se * scale, spec)}" if se is not None else "")


def _print_profile(doc: dict, out: Path) -> None:

    from lrcore.tables import kv_table, table

    c = console()
    t = table(f"latency per engine -> {out}",
              ("engine", "passes", "w ms", "+pos ms", "+seq ms", "pre ms/t", "busy +%", "MAPE"),
              text=("engine",), title_justify="left")
    for k, v in doc["latency"].items():
        f = v.get("fit", {})
        t.add_row(k, str(f.get("points", "-")), _pm(v, "base_s", 1e3, ".1f"),
                  _pm(v, "per_token_s", 1e3, ".1f"), _pm(v, "per_seq_s", 1e3, ".1f"),
                  _pm(v, "prefill_per_token_s", 1e3, ".1f"), _pm(v, "contention", 100, ".0f"),
                  f"{100 * f['mape']:.1f}%" if f.get("mape") is not None else "-")
    c.print(t)
    c.print("w: one decode pass, one sequence; +pos: each extra decode position (SD verify); "
            "+seq: and each extra sequence on top (batch); pre: each prefill token; busy: "
            "slowdown while the other engine runs; ±: standard error")
    for k, v in doc["latency"].items():
        for p, why in ((v.get("fit") or {}).get("fixed") or {}).items():
            c.print(f"  {k}.{p} = 0: {why}")
        if v.get("position_factors"):
            c.print(f"  {k} position factors (SD verification positions: measured / line): "
                    + ", ".join(f"{q:g}: {f:.3f}" for q, f in v["position_factors"]))
        if v.get("batch_factors"):
            src = (v.get("fit") or {}).get("batch_factors_from")
            c.print(f"  {k} batch factors (sequences in a plain decode pass: "
                    + (f"curve {src} / line, relative to the traces' batch sizes): " if src else "measured / line): ")
                    + ", ".join(f"{b:g}: {f:.3f}" for b, f in v["batch_factors"]))
    if doc.get("probe"):
        c.print("reference probe: " + ", ".join(
            f"{e} decode {1e3 * r['decode_s']:.0f} ms" for e, r in doc["probe"].items()))
    sa, st, sd, ov = doc["step_acceptance"], doc["steps"], doc["sd"], doc["overheads"]
    by_depth = ", ".join(f"d{d} {a}/{p}" for d, (p, a) in sa["by_depth"].items()) or "-"
    t2 = kv_table("workload and overheads", (
                 ("verifier s/judgement", _fmt(doc["verifier"]["seconds"], ".4f")),
                 ("step acceptance", _fmt(sa["rate"]) + (" (accept mode)" if sa.get("accept") else "")),
                 *_protocol_rows(sa),
                 ("by depth (accepted/judged)", by_depth),
                 ("SD token acceptance", _fmt(sd["alpha2"])),
                 ("step tokens mean / log-sigma", f"{st['mean_tokens']:.1f} / {st['lognormal_sigma']:.2f}"),
                 ("steps per request", _fmt(st["steps_per_request"], ".1f")),
                 ("per-step overhead s", _fmt(ov.get("per_step_s"), ".4f")),
                 ("per-request overhead s", _fmt(ov.get("per_request_s"), ".3f")),
                 ("draft/target shared device", str(doc["placement"]["shared"])),
                 *(("KV cache " + r, f"{e['capacity_tokens']:,} tokens")
                   for r, e in (doc.get("kv_cache") or {}).items())))
    c.print(t2)
    for w in doc.get("warnings", []):
        c.print(styled(("warning:", "yellow"), f" {w}"))


def _protocol_rows(sa: dict) -> list[tuple[str, str]]:
    """alpha1 of the acceptance protocol (accept-mode records) with its 95% Wilson interval,
    per (verifier, data set) when there are several, and the LR records' own pooled rate."""
    from lrcore.acceptance import format_estimate

    proto = sa.get("accept")
    if not proto:
        return []
    rows = [("alpha1 95% CI (Wilson)", format_estimate(proto))]
    groups = proto.get("groups") or []
    if len(groups) > 1:
        rows += [("  verifier, data set", f"{g['verifier']} {g['dataset']}: {format_estimate(g)}")
                 for g in groups]
    if sa.get("lr"):
        rows.append(("LR records' acceptance", _fmt(sa["lr"].get("rate"))))
    return rows


def replay_cmd(
    traces: List[Path] = typer.Argument(..., help="Trace files (JSONL) to replay."),
    profile: Optional[Path] = typer.Option(None, "--profile", help="Profile from `lr calibrate`."),
    holdout: Optional[float] = typer.Option(None, "--holdout", help="Validate on this fraction of problems; calibrate on the rest (unless --profile)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the --holdout split and of draws beyond the recorded verdicts."),
    calibrate_on: Optional[str] = typer.Option(None, "--calibrate-on", help="Calibrate on these configurations (e.g. ar,lr-d2) and predict every other one."),
    probe: str = typer.Option("both", "--probe", help="Correct each record for the machine speed: both (mean of the probes around it) | before (only the probe taken before it: known before the run) | none."),
    save_profile: Optional[Path] = typer.Option(None, "--save-profile", help="With --holdout or --calibrate-on: write the profile fitted on the calibration part."),
    per_record: bool = typer.Option(False, "--per-record", help="Also print one row per trace record."),
    adaptive_afresh: bool = typer.Option(False, "--adaptive-afresh", help="Adaptive records: let the simulator's lr-adaptive decide afresh, not replay the decisions each record's run made."),
    afresh_as_run: bool = typer.Option(False, "--afresh-as-run", help="With --adaptive-afresh: decide as the real backend does (one Estimator for the run, its price checked against the commits), from the estimates each record's run held at its first decision; off: from the neutral prior."),
    as_json: bool = JSON,
):
    """Simulate the traces' own workload and compare with what was measured (MAPE, Pearson r)."""
    from lrcore.outputs import check_output
    from .profile import load_profile
    from .replay import replay_files

    if probe not in ("before", "both", "none"):
        raise UserError(f"--probe {probe!r}: use before, both or none")
    if afresh_as_run and not adaptive_afresh:
        raise UserError("--afresh-as-run applies with --adaptive-afresh")
    traces = _traces(traces)
    if save_profile is not None:
        check_output(save_profile, "--save-profile", inputs=[*traces, profile])
    prof = load_profile(profile) if profile is not None else None
    out, prof = replay_files([str(t) for t in traces], prof, holdout, seed,
                             calibrate_on=_labels("--calibrate-on", calibrate_on), probe=probe,
                             recorded_decisions=not adaptive_afresh, afresh_as_run=afresh_as_run)
    if save_profile is not None:
        _save_profile(prof, save_profile, "--save-profile")
    if as_json:
        if not per_record:
            out.pop("per_record", None)
        print(jsonout.dumps(out))
        return
    _print_replay(out, per_record)


def _print_replay(out: dict, per_record: bool) -> None:

    title = f"simulated vs measured: {out['records']} records, profile {out['profile']}"
    ho = out.get("holdout") or {}
    if ho.get("validated_problems"):
        title += f"; {len(ho['validated_problems'])} held-out problems"
    if ho.get("calibrated_on"):
        title += f"; calibrated on {','.join(ho['calibrated_on'])} only"
    from lrcore.tables import table

    t = table(title, ("config", "n", "MAPE", "r", "tok/s", "pred", "x AR", "pred x"),
              text=("config",), title_justify="left")
    for cfg, e in (out.get("configs") or out["modes"]).items():
        sp = e["speedup"] or {}
        t.add_row(cfg, str(e["records"]), f"{100 * e['mape']:.1f}%", _fmt(e["pearson_r"], ".2f"),
                  _fmt(e["tokens_per_s"]["measured"], ".2f"), _fmt(e["tokens_per_s"]["predicted"], ".2f"),
                  _fmt(sp.get("measured"), ".2f"), _fmt(sp.get("predicted"), ".2f"))
    t.add_row("all", str(out["records"]), f"{100 * out['mape']:.1f}%", _fmt(out["pearson_r"], ".2f"),
              *[""] * 4)
    c = console()
    c.print(t)
    c.print("MAPE, r: per-record latency; tok/s and x AR (speedup over ar on the same problems): "
            "measured, then predicted")
    if per_record:
        t2 = table("per record", ("config", "problem", "tokens", "meas s", "pred s", "diff"),
                   text=("config", "problem"), title_justify="left")
        for r in out["per_record"]:
            t2.add_row(r.get("config", r["mode"]), f"{r['problem_id']}/{r['sample']}", str(r["tokens"]),
                       f"{r['measured_s']:.1f}", f"{r['predicted_s']:.1f}",
                       _fmt(100 * (r["predicted_s"] - r["measured_s"]) / r["measured_s"], pct=True))
        c.print(t2)
    for w in out.get("warnings", []):
        c.print(styled(("warning:", "yellow"), f" {w}"))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="calibrate")
    root.command("replay")(replay_cmd)
