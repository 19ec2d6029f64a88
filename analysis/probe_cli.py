"""`lr calibrate probe`: rescale a profile to this machine's speed now.

It takes a reference probe on real engines (lrreal/probe.py) and rescales a simulator profile
with it (lrsim/calib/profile.py, rescale.py). A command that needs both the real backend and the
simulator sits above both, here; the top-level cli.py adds it to the simulator's `lr calibrate`
group (`register`): same name, options, help and output as when it was defined beside `fit`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from lrcore import jsonout
from lrcore.errors import UserError
from lrcore.cliopts import JSON


def probe_cmd(
    profile: Path = typer.Option(..., "--profile", help="Profile from `lr calibrate` (with a reference probe: traces collected with probes)."),
    out: Path = typer.Option(..., "--out", "-o", help="Rescaled profile to write."),
    repeats: int = typer.Option(3, "--repeats", min=1, max=100, help="Probes per engine (the median is used)."),
    target: str = typer.Option("target", "--target", help="Target model: packaged name or HF folder."),
    draft: str = typer.Option("draft", "--draft", help="Draft model: packaged name or HF folder."),
    target_cores: Optional[str] = typer.Option(None, "--target-cores", help="Default: the cores the profile's traces used."),
    draft_cores: Optional[str] = typer.Option(None, "--draft-cores", help="Default: the cores the profile's traces used."),
    cache_dir: Optional[str] = typer.Option(None, "--cache-dir", help="Model cache of packaged models."),
    carry_contention: bool = typer.Option(
        False, "--carry-contention",
        help="Also scale each engine's fitted contention by the side-by-side probe's c now over the "
             "profile's (off by default: across sittings of one host it brought fewer replayed "
             "points within 10%, docs/load.md)."),
    as_json: bool = JSON,
):
    """Measure this machine's speed now (a fixed reference pass per engine) and rescale a profile
    to it, so a profile recorded on another day or machine predicts runs here."""
    from lrcore.outputs import check_output
    from lrreal.binding import check_cores
    from lrsim.calib.profile import load_profile, save_profile
    from lrsim.calib.rescale import contention_scales, factors_from_probe, machine, machine_warning

    check_output(out, "--out", inputs=[profile])   # never the input profile, a device, a folder
    prof = load_profile(profile)
    if not prof.doc.get("probe"):
        raise UserError(f"--profile {profile}: has no reference probe (its traces carry no "
                        "`probe`; collect with probes, the default of `lr collect`)")
    cores = (prof.doc["source"].get("hardware") or {}).get("cores") or {}
    t_cores = target_cores or cores.get("target") or "0"
    d_cores = draft_cores or cores.get("draft") or "1"
    for flag, v in (("--target-cores", t_cores), ("--draft-cores", d_cores)):
        check_cores(flag, v)
    from lrreal.probe import probe_machine

    today = probe_machine(target, draft if prof.has("draft") else None, t_cores, d_cores,
                          repeats, cache_dir)
    factors = factors_from_probe(prof.doc["probe"], today)
    # measured always (reported), applied only when asked: docs/calibration.md, "Contention"
    measured = contention_scales(prof.doc["probe"], [today["engines"]])
    scales = measured if carry_contention else {}
    new = prof.rescaled(factors, "lr calibrate probe", contention=scales)
    new.doc["rescaled"]["probe"] = today
    save_profile(new, out, "--out")   # validated, then written atomically
    foreign = machine_warning(prof.doc, {machine(today.get("hardware")): None}, "this machine is")
    res = {"out": str(out), "factors": {r: {"decode": f[0], "prefill": f[1]} for r, f in factors.items()},
           "contention": scales, "contention_measured": measured,
           "probe": today, "reference": prof.doc["probe"], "warnings": [foreign] if foreign else []}
    if as_json:
        print(jsonout.dumps(res))
        return

    from lrcore.tables import console, styled, table

    t = table(f"machine speed now vs {profile.name} -> {out}",
              ("engine", "ref ms", "now ms", "decode x", "prefill x"), text=("engine",),
              title_justify="left")
    for r, (fd, fp) in factors.items():
        t.add_row(r, f"{1e3 * prof.doc['probe'][r]['decode_s']:.0f}",
                  f"{1e3 * today['engines'][r]['decode_s']:.0f}", f"{fd:.3f}", f"{fp:.3f}")
    console().print(t)
    for r, f in measured.items():
        if r in scales:
            console().print(f"{r}: contention beside the other engine x{f:.2f} "
                            f"({100 * prof.contention(r):.0f}% -> {100 * new.contention(r):.0f}%)")
        else:
            console().print(f"{r}: contention beside the other engine measured x{f:.2f}, not "
                            f"carried ({100 * prof.contention(r):.0f}% as fitted; --carry-contention)")
    for w in res["warnings"]:
        console().print(styled(("warning:", "yellow"), f" {w}"))


def register(calibrate: typer.Typer) -> None:
    """Add `probe` to the `lr calibrate` group (called by the top-level cli.py)."""
    calibrate.command("probe")(probe_cmd)
