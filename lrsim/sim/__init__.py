"""lrsim.sim: a SimPy discrete-event simulator of Lookahead Reasoning on real-shaped hardware.

Layers (one module per concept):
    latency    forward-pass cost models (roofline-shaped, tabulated, ideal)
    engine     continuous batching of one model on a device pool (fluid chunks of iterations);
               free_engine: the theory's free batching (--ideal, M = inf)
    devices    device pools, time-sharing between models, busy-time accounting
    workload   requests made of reasoning steps (synthetic, or trace-driven via traces.py)
    tokensd    token-level speculative decoding inside a step (rounds of k2 positions)
    verifier   the judge's cost (constant, per token, or an LLM judge's prefill)
    policies/  ar, sd, lr-sync, lr-async, lr-stage (each drives one request)
    runner     builds a world from a Config, runs the load, returns a Summary
    scenario   TOML scenario files -> Config
    sweep      grids of (k1 | depth, k2, width) under a budget
"""
from ..native import enable as _enable

_enable(__path__, __name__)   # the compiled modules, where built and fresh (lrsim/native.py)

from .config import Config  # noqa: E402
from .runner import run, simulate  # noqa: E402

__all__ = ["Config", "run", "simulate"]
