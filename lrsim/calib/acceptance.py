"""How a calibration profile takes alpha1 from the acceptance protocol (`lr collect --mode accept`).

The protocol's estimate and its interval come from the trace records (lrcore/acceptance.py,
shared with `lr collect`'s summary); here they become the profile's `step_acceptance` beside the
LR records' own counts, with the warnings `lr calibrate` prints when the two may differ.
"""
from __future__ import annotations

from lrcore.acceptance import verifier_of
from lrcore.modes import ACCEPT_MODE


def profile_step_acceptance(lr: dict, proto: dict | None) -> dict:
    """A profile's `step_acceptance` from the LR records' pooled counts (`lr`: overheads.
    step_acceptance) and the protocol's estimate (`proto`: protocol_acceptance, or None).

    Without a judged accept-mode step it is exactly what calibration always wrote (rate and
    by_depth of the LR records). With one, alpha1 (`rate`, `proposed`, `accepted`) comes from the
    protocol (`source: "accept"`, the estimate and its interval under `accept`); `by_depth` stays
    the LR records' (what the tree measured at each depth, which the simulator's LR workload
    draws from) when there are any, else it is the protocol's depth 1; the LR records' pooled
    numbers are kept under `lr`."""
    out = {"rate": lr["rate"], "by_depth": lr["by_depth"], "proposed": lr["proposed"],
           "accepted": lr["accepted"]}
    if proto is None or not proto["judged"]:
        return out
    out = {"rate": proto["rate"],
           "by_depth": lr["by_depth"] if lr["proposed"] else {"1": [proto["judged"], proto["accepted"]]},
           "proposed": proto["judged"], "accepted": proto["accepted"], "source": ACCEPT_MODE,
           "accept": proto}
    if lr["proposed"]:
        out["lr"] = {"rate": lr["rate"], "proposed": lr["proposed"], "accepted": lr["accepted"]}
    return out


def acceptance_warnings(lr_records: list[dict], accept: list[dict]) -> list[str]:
    """Calibration warnings when alpha1 from accept-mode records may not be the LR runs' own:
    several verifiers pooled, or a verifier other than the LR records'. None without accept."""
    if not accept:
        return []
    out = []
    mine = sorted({verifier_of(r) for r in accept})
    if len(mine) > 1:
        out.append(f"accept-mode records of {len(mine)} verifiers ({', '.join(mine)}): alpha1 pools "
                   "them; calibrate on one of them (--configs) for that verifier's alpha1")
    theirs = sorted({verifier_of(r) for r in lr_records})
    if theirs and theirs != mine:
        out.append(f"alpha1 comes from accept-mode records judged with {', '.join(mine)}; the LR "
                   f"records were judged with {', '.join(theirs)} (their acceptance by depth is "
                   "kept for the simulated tree)")
    return out
