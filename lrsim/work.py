"""Bounded simulation work: how many target positions a simulation or a command would run.

Simulation work is counted in *positions*: simulated reasoning steps x the target positions each
step keeps in flight (1 for ar/sd, k1 for lr-sync/lr-stage, 1 + W + ... + W^depth for lr-async).
`check_simulation` and `check_command` refuse, before any work starts, a simulation over
MAX_STEPS_PER_REQUEST or MAX_SIM_POSITIONS (a streaming run: MAX_STREAM_SIM_POSITIONS) and a command over MAX_COMMAND_POSITIONS; the caps and
why they are where they are live in lrcore/limits.py (read at call time, so a test may lower one).
"""
from __future__ import annotations

from lrcore import limits
from lrcore.errors import UserError


def _fmt(n: int | float) -> str:
    return f"{n:,.0f}" if n < 1e12 else f"{n:.3g}"


def positions_per_step(cfg) -> int:
    """Target positions one reasoning step keeps in flight under cfg's policy."""
    pol = getattr(cfg, "policy", "ar")
    if pol in ("lr-sync", "lr-stage"):
        return max(1, int(cfg.k1))
    if pol in ("lr-async", "lr-adaptive"):     # lr-adaptive: the largest tree it may choose
        w, d = max(1, int(cfg.width)), max(0, int(cfg.depth))
        own = getattr(cfg, "adaptive", None) if pol == "lr-adaptive" else None
        if own is not None:                      # its own bounds (policies/lr_adaptive.py)
            w, d = max(own.widths), own.max_depth
        return d + 1 if w == 1 else (w ** (d + 1) - 1) // (w - 1)
    return 1


def workload_shape(wl) -> tuple[int, int]:
    """(requests, total simulated steps) of a workload, without building it."""
    if hasattr(wl, "n_requests") and hasattr(wl, "steps"):
        return int(wl.n_requests), int(wl.n_requests) * int(wl.steps)
    recs = getattr(wl, "records", None)
    if recs is not None:
        return len(recs), sum(len(r.get("steps") or ()) for r in recs)
    return 1, 0


def sim_positions(cfg) -> int:
    return workload_shape(cfg.workload)[1] * positions_per_step(cfg)


def check_simulation(cfg, what: str = "this simulation", stream: bool | None = None) -> int:
    """Refuse one simulation over MAX_STEPS_PER_REQUEST or MAX_SIM_POSITIONS (a streaming run,
    stream=True: MAX_STREAM_SIM_POSITIONS); returns its work. stream=False: a full run that
    could stream, whose refusal names --stream where the streaming cap would admit it."""
    wl = cfg.workload
    steps = getattr(wl, "steps", None)
    if isinstance(steps, int) and steps > limits.MAX_STEPS_PER_REQUEST:
        raise UserError(f"{what}: {_fmt(steps)} steps per request is over the cap of "
                        f"{_fmt(limits.MAX_STEPS_PER_REQUEST)} (MAX_STEPS_PER_REQUEST): lower "
                        "--steps (or workload.steps)")
    n, total = workload_shape(wl)
    per = positions_per_step(cfg)
    work = total * per
    if stream:
        if work > limits.MAX_STREAM_SIM_POSITIONS:
            raise UserError(f"{what}: {_fmt(n)} request(s), {_fmt(total)} steps x {per} target "
                            f"position(s) per step = {_fmt(work)} positions, over the cap of "
                            f"{_fmt(limits.MAX_STREAM_SIM_POSITIONS)} per streaming simulation "
                            "(MAX_STREAM_SIM_POSITIONS, about an hour of CPU): lower --requests / "
                            "--steps or the tree size")
        return work
    if work > limits.MAX_SIM_POSITIONS:
        hint = (f", or stream it (--stream: no per-request records, up to "
                f"{_fmt(limits.MAX_STREAM_SIM_POSITIONS)} positions)"
                if stream is False and work <= limits.MAX_STREAM_SIM_POSITIONS else "")
        raise UserError(f"{what}: {_fmt(n)} request(s), {_fmt(total)} steps x {per} target "
                        f"position(s) per step = {_fmt(work)} positions, over the cap of "
                        f"{_fmt(limits.MAX_SIM_POSITIONS)} per simulation (MAX_SIM_POSITIONS, "
                        "minutes of CPU): lower --requests / --concurrency / --steps or the tree "
                        f"size{hint}")
    return work


def check_command(work: int, what: str) -> None:
    """Refuse a command whose simulations together exceed MAX_COMMAND_POSITIONS."""
    if work > limits.MAX_COMMAND_POSITIONS:
        raise UserError(f"{what}: {_fmt(work)} simulated positions in all, over the cap of "
                        f"{_fmt(limits.MAX_COMMAND_POSITIONS)} per command (MAX_COMMAND_POSITIONS, "
                        "about an hour of CPU): fewer points, samples, requests or steps")
