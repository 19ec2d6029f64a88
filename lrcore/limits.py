"""Bounded work: every cap that keeps one `lr` command from hanging or exhausting the machine.

Each limit is checked *before* the work starts, from the flags, scenario, profile or traces, and a
refusal is one line naming the cap, the estimate and what to change. The caps are far above every
documented use (README, docs/, benchmarks/*.py) and low enough that a typo cannot run for hours
or allocate gigabytes. Raise a constant here (and nowhere else) when a real use needs more.
Fleet-scale simulations (1e6 requests) stream (MAX_STREAM_SIM_POSITIONS below): bounded memory,
but CPU time still grows with the positions.

Part of lrcore: the simulator (lrsim) and the real backend (lrreal) both import it; it imports
neither. The caps are here, with `read_capped`, the capped reader of input files; the checks of
simulation work against MAX_SIM_POSITIONS and MAX_COMMAND_POSITIONS are the simulator's
(lrsim/work.py), since counting positions needs its policies.

Simulation work is counted in *positions*: simulated reasoning steps x the target positions each
step keeps in flight (1 for ar/sd, k1 for lr-sync/lr-stage, 1 + W + ... + W^depth for lr-async).
The event simulator runs ~6-11k steps per CPU-second at lr-async depth 4 (5 positions per step,
docs/simulator.md), i.e. ~30-55k positions per CPU-second.

    MAX_SIM_POSITIONS      one simulation (one policy, one workload): 10,000,000 positions, about
                           3-6 CPU-minutes. Documented uses: bench_sim's 1,000-request point
                           (1000 x 60 steps x 5 = 300k), bench_plan (1000 x 8 x <=5 = 40k per
                           candidate), `lr simulate` defaults (a few thousand).
    MAX_STREAM_SIM_POSITIONS  one streaming simulation (an explicit `lr simulate --stream`,
                           lrsim/sim/stream.py: no per-request records, so memory stays bounded
                           and only CPU time grows): 400,000,000 positions. A fleet-hour of
                           lr-async depth 4 (1M requests x 60 steps x 5) is 300M: 30-100
                           CPU-minutes at today's speed (benchmarks/results/fleet.md); a full run,
                           automatic streaming included, keeps MAX_SIM_POSITIONS.
    MAX_COMMAND_POSITIONS  all simulations of one command together (sweep points + baseline,
                           plan candidates x samples): 100,000,000 positions, ~30-60 CPU-minutes
                           spread over the worker processes. bench_sim's 100-point sweep
                           (depth 1-10 x k2 1-10, 1000 requests x 60 steps) needs ~40M.
    MAX_STEPS_PER_REQUEST  100,000 reasoning steps in one simulated request (a real reasoning
                           trace has tens to a few thousand; 100k x 40 tokens = 4M tokens).
    MAX_TRACE_BYTES        one trace file: 1 GiB (the 10-configuration GSM8K corpus is a few MB
                           per configuration); a larger file, /dev/zero or a FIFO that never ends
                           is refused after reading at most this many bytes.
    MAX_TEXT_FILE_BYTES    a scenario, profile, data set or latency table: 256 MiB.
    MAX_RECORD_STEPS       steps in one trace record: 65,536 (`lr collect` writes one step per
                           blank line or --max-step-tokens tokens; a 64k-step record is already
                           far beyond any reasoning budget in the docs).
    MAX_RECORD_TOKENS      output tokens of one record or one step: 1,000,000 (= `lr collect
                           --max-tokens`'s own cap).
    MAX_PROFILE_DEPTH      draft depths in a profile's acceptance table: 1,024 (= the simulator's
                           --depth cap, MAX_KNOB).
    MAX_JUDGE_PROMPT_BYTES a judge prompt template (`--judge-prompt FILE`): 64 KiB (the shipped
                           ones are about 1 KiB; the judge is sent the template plus two steps).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import UserError

MAX_SIM_POSITIONS = 10_000_000
MAX_STREAM_SIM_POSITIONS = 400_000_000
MAX_COMMAND_POSITIONS = 100_000_000
MAX_STEPS_PER_REQUEST = 100_000
MAX_TRACE_BYTES = 1 << 30
MAX_TEXT_FILE_BYTES = 256 << 20
MAX_RECORD_STEPS = 65_536
MAX_RECORD_TOKENS = 1_000_000
MAX_PROFILE_DEPTH = 1024
MAX_NUM_SEQS = 4096          # --max-num-seqs (collect, simulate, plan; a profile's placement.max_num_seqs)
MAX_JUDGE_PROMPT_BYTES = 64 << 10


def _size(n: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:g} {unit}"
    return f"{n} B"


# --- files ------------------------------------------------------------------------------------
def read_capped(path: str | os.PathLike, cap: int, what: str) -> bytes:
    """The bytes of a file, reading at most `cap` (+1 to notice more): a file from /dev/zero, a
    FIFO or a huge file is a one-line error naming the cap instead of memory growing without end.
    OSError propagates (callers word "cannot read")."""
    p = Path(path)
    with open(p, "rb") as f:
        try:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > cap:
                raise UserError(f"{p}: {what} of {_size(st.st_size)} is over the {_size(cap)} cap "
                                f"on one {what}; split it into smaller files")
        except OSError:
            pass
        data = f.read(cap + 1)
    if len(data) > cap:
        raise UserError(f"{p}: {what} is larger than the {_size(cap)} cap on one {what} (read "
                        f"stopped there); split it into smaller files")
    return data
