"""`lr theory ...`: closed-form speedups and the optimal budget split.

`lr theory figure` (the blog figure) draws with matplotlib, which is `analysis`'s: it lives in
analysis/theory_cli.py and the top-level cli.py adds it to this group.
"""
from __future__ import annotations

import math
import time
from enum import Enum

import typer

from lrcore import jsonout
from lrcore.errors import UserError
from lrcore.tables import console, kv_table
from lrcore.cliopts import JSON

from .params import MAX_BUDGET, MAX_DIM, HybridParams, InvalidParameter

app = typer.Typer(help="The paper's closed forms: speedups, optimal (k1, k2) split, blog figure.",
                  no_args_is_help=True)


class Mode(str, Enum):
    sync = "sync"
    asynchronous = "async"


def _check_unit(value: float) -> float:
    """Refuse NaN and inf by name (a plain [0, 1] range check lets NaN through or blames the
    bound); click's message then names the flag."""
    if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise typer.BadParameter(f"must be a finite number in [0, 1], got {value}")
    return value


# Shared option declarations. Every message names the flag (click's "Invalid value for ...").
def _unit(flag: str, default, help: str):
    return typer.Option(default, flag, callback=_check_unit, help=help)


def _params(alpha1, c1, alpha2, c2, mode: str) -> HybridParams:
    """HybridParams or a one-line error naming the flag (the options already checked ranges)."""
    try:
        return HybridParams(alpha1, c1, alpha2, c2, mode)
    except InvalidParameter as e:
        raise UserError(f"--{e}") from None


ALPHA1 = _unit("--alpha1", ..., "Step acceptance probability alpha1 in [0, 1].")
C1 = _unit("--c1", ..., "Draft/target cost ratio per step c1 in [0, 1].")
ALPHA2 = _unit("--alpha2", 0.0, "Token acceptance probability alpha2 of token-level SD.")
C2 = _unit("--c2", 0.0, "Draft/target cost ratio per token c2 (0 = n-gram lookup).")
MODE = typer.Option(Mode.sync, "--mode", help="sync = Algorithm 1; async = pipelined (App. B Thm. 2).")


@app.command()
def speedup(
    alpha1: float = ALPHA1,
    c1: float = C1,
    k1: int = typer.Option(..., "--k1", min=1, max=MAX_DIM, help="Step-level parallel dimension (drafted steps + 1)."),
    alpha2: float = ALPHA2,
    c2: float = C2,
    k2: int = typer.Option(1, "--k2", min=1, max=MAX_DIM, help="Token-level parallel dimension (drafted tokens + 1)."),
    mode: Mode = MODE,
    as_json: bool = JSON,
):
    """Step-level f, token-level g and combined h = f * g for one (k1, k2)."""
    from .point import speedup_point

    p = _params(alpha1, c1, alpha2, c2, mode.value)
    out = speedup_point(p, k1, k2) | {"params": {"alpha1": alpha1, "c1": c1, "alpha2": alpha2, "c2": c2}}
    if as_json:
        print(jsonout.dumps(out))
        return
    f, g, ceiling = out["f"], out["g"], out["step_ceiling"]
    rows = [("f (step level)", f"{f:.4f}"), ("g (token level)", f"{g:.4f}"), ("h = f * g", f"{f * g:.4f}"),
            (f"step ceiling ({p.mode})", "unbounded" if ceiling is None else f"{ceiling:.4f}")]
    if p.mode == "async":
        rows.append(("depth limit ceil(1/c1)", str(out["depth_limit"] or "inf")))
    console().print(kv_table(f"Speedup at k1={k1}, k2={k2} ({p.mode})", rows))


@app.command()
def optimize(
    alpha1: float = ALPHA1,
    c1: float = C1,
    alpha2: float = ALPHA2,
    c2: float = C2,
    budget: int = typer.Option(..., "--budget", "-M", min=1, max=MAX_BUDGET, help="Budget M on k1 * k2 (parallel dims)."),
    mode: Mode = MODE,
    as_json: bool = JSON,
):
    """Exact optimal (k1, k2) under the budget, pure SD / pure LR, ties, and the paper's theorem."""
    from .optimize import optimize as run_optimize
    from .theorems import check_theorem

    p = _params(alpha1, c1, alpha2, c2, mode.value)
    t0 = time.perf_counter()
    opt = run_optimize(p, budget)
    th = check_theorem(opt)
    elapsed = time.perf_counter() - t0
    out = {
        "mode": p.mode, "budget": budget,
        "k1": opt.best.k1, "k2": opt.best.k2, "speedup": opt.best.speedup, "winner": opt.winner,
        "pure_sd": {"k2": opt.pure_sd.k2, "speedup": opt.pure_sd.speedup},
        "pure_lr": {"k1": opt.pure_lr.k1, "speedup": opt.pure_lr.speedup},
        "best_hybrid": opt.best_hybrid.as_dict() if opt.best_hybrid else None,
        "ties": [list(t) for t in opt.ties], "n_ties": opt.n_ties,
        "has_ties": opt.n_ties > 1 or opt.k1_plateau,
        "k1_plateau": opt.k1_plateau,
        "theorem": th.as_dict(),
        "params": {"alpha1": alpha1, "c1": c1, "alpha2": alpha2, "c2": c2},
        "elapsed_s": elapsed,
    }
    if as_json:
        print(jsonout.dumps(out))
        return
    rows = [
        ("optimum (k1, k2)", f"({opt.best.k1}, {opt.best.k2})"),
        ("speedup h", f"{opt.best.speedup:.4f}"),
        ("winner", opt.winner),
        ("pure SD (k1=1)", f"k2={opt.pure_sd.k2}  {opt.pure_sd.speedup:.4f}"),
        ("pure LR (k2=1)", f"k1={opt.pure_lr.k1}  {opt.pure_lr.speedup:.4f}"),
        ("best hybrid (k1,k2>=2)", "-" if not opt.best_hybrid else
         f"({opt.best_hybrid.k1}, {opt.best_hybrid.k2})  {opt.best_hybrid.speedup:.4f}"),
        ("ties", _ties_text(opt)),
        (th.name, _theorem_text(th)),
        ("time", f"{elapsed * 1e3:.1f} ms"),
    ]
    console().print(kv_table(f"Optimal split under M={budget} ({p.mode})", rows))


def _ties_text(opt) -> str:
    parts = []
    if opt.n_ties > 1:
        shown = ", ".join(f"({a}, {b})" for a, b in opt.ties[:6])
        parts.append(f"{opt.n_ties} splits tie: {shown}{' ...' if opt.n_ties > 6 else ''}")
    if opt.k1_plateau:
        parts.append(f"every k1 >= {opt.best.k1} ties (async plateau)")
    return "; ".join(parts) or "none"


def _theorem_text(th) -> str:
    if not th.applies:
        failed = [k for k, v in th.conditions.items() if v is False]
        return "does not apply (" + "; ".join(failed) + ")"
    verdict = "agrees with optimiser" if th.agrees else (
        "DISAGREES with optimiser" if th.agrees is False else "no check")
    return f"predicts {th.prediction}; {verdict}"


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="theory")
