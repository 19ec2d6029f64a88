"""The paper's closed forms, re-exported from lrcore/theory.py, where they live so that the
adaptive lookahead policy (lrcore/adaptive/), shared by the simulator and the real backend,
decides with the same formulas the simulator's theory commands print. Every name that was
importable from here still is."""
from lrcore.theory import (_max_unimodal, alpha_one_limits, async_s1, async_s2, depth_limit,
                           f_async, f_step, f_sync, geometric_sum, hybrid, parallel_dim,
                           sd_ceiling, sd_speedup, sd_speedup_gamma, step_ceiling)

__all__ = [
    "alpha_one_limits", "async_s1", "async_s2", "depth_limit", "f_async", "f_step", "f_sync",
    "geometric_sum", "hybrid", "parallel_dim", "sd_ceiling", "sd_speedup", "sd_speedup_gamma",
    "step_ceiling", "_max_unimodal",
]
