"""The engines' sequence cap, from the traces: what the profile's `placement.max_num_seqs` holds.

vLLM runs at most `max_num_seqs` sequences in one engine pass; more requests wait for a slot (the
simulator's Placement.max_seqs: its engine queues them, FIFO). `lr collect --max-num-seqs`
records it as run.flags.max_num_seqs; records written before it was recorded ran at
lrreal.engine.EngineArgs' default, 32, which every engine `lr collect` has started took (its
value since that class's first commit). Under load the cap is reached (docs/load.md, "The
engines' sequence cap"), which the simulator's default of 256 never is.

    caps, warnings = engine_max_seqs(records)   # {"target": 32, "draft": 32}, []
"""
from __future__ import annotations

UNRECORDED_MAX_NUM_SEQS = 32   # lrreal.engine.EngineArgs.max_num_seqs before run.flags held it


def record_max_seqs(rec: dict) -> int:
    """The cap both engines of the record's run had (the trace schema types the flag)."""
    return int(((rec.get("run") or {}).get("flags") or {}).get("max_num_seqs", UNRECORDED_MAX_NUM_SEQS))


def engine_max_seqs(records: list[dict]) -> tuple[dict[str, int], list[str]]:
    """role -> the sequences one pass of that engine took at most, and warnings. Runs with
    different caps: the smallest (named in a warning), as the KV cache's (kv.engine_kv)."""
    found: dict[str, set[int]] = {}
    for r in records:
        run = r.get("run") or {}
        cap = record_max_seqs(r)
        for role in (run.get("models") or {}):
            if role in ("target", "draft"):
                found.setdefault(role, set()).add(cap)
    out = {role: min(caps) for role, caps in sorted(found.items())}
    warnings = [f"{role} engine's --max-num-seqs differed between the runs ({', '.join(map(str, sorted(caps)))}): "
                f"the profile keeps {min(caps)}" for role, caps in sorted(found.items()) if len(caps) > 1]
    return out, warnings
