"""The mode vocabulary: the real backend's modes and the simulator policy each one runs as.

A *mode* is what `lr collect --mode` runs on real engines and what a trace record's `mode` field
holds; a *policy* is how the simulator schedules the same work. The real backend uses the mode
lists (which modes need a draft engine, which run n-gram SD on the target); the simulator maps a
recorded or requested mode to its policy (`MODE_POLICY`) when it calibrates, replays or plans.
One table, so the two sides cannot disagree about what "lr+sd" is.

Part of lrcore: the simulator (lrsim) and the real backend (lrreal) both import it; it imports
neither.
"""
from __future__ import annotations

# real mode -> (simulator policy, token-level SD on the target). The policies are the simulator's
# names (lrsim/sim/config.py POLICIES): "lr" is the asynchronous tree (lr-async), "lr-sync" the
# synchronous cycle of Algorithm 1.
MODE_POLICY = {
    "ar": ("ar", False),
    "sd": ("sd", True),
    "lr": ("lr-async", False),
    "lr+sd": ("lr-async", True),
    "lr-sync": ("lr-sync", False),
    # adaptive lookahead: the lr-async tree, its depth and width chosen before each
    # speculation by lrcore/adaptive/ (real: lrreal/scheduler/lr_adaptive.py)
    "lr-adaptive": ("lr-adaptive", False),
    "lr+sd-adaptive": ("lr-adaptive", True),
}

# The acceptance protocol (lrreal/scheduler/accept.py): both models write every step, the verifier
# judges the pair, the target's step is kept. A measurement of alpha1, never simulated.
ACCEPT_MODE = "accept"

# Adaptive lookahead (lrcore/adaptive/ decides depth, width and k2 before each
# speculation) -> the static mode whose engines, SD setting and measured latency it runs with.
ADAPTIVE_MODES = {"lr-adaptive": "lr", "lr+sd-adaptive": "lr+sd"}
# every mode the simulator runs (lr plan --modes, profiles): since the real backend runs the
# adaptive modes too, the same table as the real one (the name kept for its readers)
SIM_MODE_POLICY = MODE_POLICY

MODES = (*MODE_POLICY, ACCEPT_MODE)                                  # every real mode
SD_MODES = tuple(m for m, (_, sd) in MODE_POLICY.items() if sd)     # the target runs n-gram SD
LR_MODES = tuple(m for m, (p, _) in MODE_POLICY.items() if p.startswith("lr"))  # draft + verifier
DRAFT_MODES = (*LR_MODES, ACCEPT_MODE)                              # need the draft engine


def latency_mode(policy: str) -> str:
    """The mode whose measured latency a simulator policy given by its own name runs with: the
    first mode that maps to it (ar, sd, lr-sync; lr-async -> lr; lr-adaptive -> its static
    mode, lr), and "lr" for a policy no real mode runs (lr-stage)."""
    mode = next((m for m, (p, _) in MODE_POLICY.items() if p == policy), "lr")
    return ADAPTIVE_MODES.get(mode, mode)
