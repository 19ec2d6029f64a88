"""The paper's analytical model: closed forms, exact optimiser, theorems, Monte Carlo checks."""
from .formulas import (async_s1, async_s2, depth_limit, f_async, f_step, f_sync, geometric_sum,
                       hybrid, parallel_dim, sd_ceiling, sd_speedup, sd_speedup_gamma, step_ceiling)
from .optimize import Optimum, Split, optimize, speedup_grid
from .params import HybridParams, InvalidParameter
from .theorems import TheoremCheck, check_theorem

__all__ = [
    "async_s1", "async_s2", "depth_limit", "f_async", "f_step", "f_sync", "geometric_sum",
    "hybrid", "parallel_dim", "sd_ceiling", "sd_speedup", "sd_speedup_gamma", "step_ceiling",
    "Optimum", "Split", "optimize", "speedup_grid", "HybridParams", "InvalidParameter",
    "TheoremCheck", "check_theorem",
]
