"""`lr theory figure`: the blog figure (alpha = 0.5, c = 0.05), SD alone vs step + token speculation.

The curves are the simulator's closed forms (lrsim/theory/figure.py); drawing them is analysis's
(theory_plots.py, matplotlib). The `lr theory` group is lrsim's (lrsim/theory/cli.py), which
imports no analysis code, so the top-level cli.py adds this command to it (`register`): same name,
options, help and output as when it was defined there.
"""
from __future__ import annotations

from pathlib import Path

import typer

from lrcore import jsonout
from lrcore.cliopts import JSON


# Formats matplotlib writes without extra packages, chosen by the file extension.
IMAGE_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif", ".tiff",
                  ".webp")


def figure(
    out: Path = typer.Option(Path("blog_figure.png"), "--out", help="Where to write the PNG."),
    as_json: bool = JSON,
):
    """The blog figure (alpha = 0.5, c = 0.05): SD alone vs step + token speculation."""
    from lrcore.outputs import check_output
    from lrsim.theory.figure import blog_curves

    from .theory_plots import plot_blog_figure

    check_output(out, "--out", suffixes=IMAGE_SUFFIXES, what="image file")

    curves = blog_curves()
    path = plot_blog_figure(curves, out)
    (g_sd, s_sd), (g_c, s_c) = curves.peak("sd"), curves.peak("combined")
    res = {"out": str(path), "sd_peak": {"gamma": g_sd, "speedup": s_sd},
           "combined_peak": {"gamma": g_c, "speedup": s_c}}
    if as_json:
        print(jsonout.dumps(res))
        return
    print(f"SD peak: {s_sd:.2f}x at gamma = {g_sd:.2f}")
    print(f"step+token peak: {s_c:.2f}x at gamma = {g_c:.2f}")
    print(f"wrote {path}")


def register(theory: typer.Typer) -> None:
    """Add `figure` to the `lr theory` group (called by the top-level cli.py)."""
    theory.command("figure")(figure)
