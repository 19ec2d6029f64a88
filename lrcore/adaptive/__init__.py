"""Adaptive lookahead: running estimates, the decision rule, hysteresis, the record.

Before each new speculation a scheduler asks a Controller which depth (0 = no speculation: plain
AR, or SD alone, for that step), width and SD length k2 to run. The Controller takes the choice
that maximises the expected committed tokens per second of the paper's closed forms
(lrcore/theory.py) extended with the measured overheads (`expected_rate`), over a bounded
candidate set - or the deepest depth on that choice's plateau (`preferred`) - and moves away
from its current choice only when the gain clears a margin, or a smaller gain has lasted `dwell`
decisions. The
simulator (lrsim) and the real backend (lrreal) both import this module, so the decision is the
same code in both worlds; it imports nothing but lrcore and the standard library, and holds no
randomness: the same observations give the same decisions.

    cfg = AdaptiveConfig()
    est = Estimator(cfg, prior=Estimates())     # neutral prior; or Estimates(...) of a profile
    ctl = Controller(cfg)
    d = ctl.decide(est.snapshot())              # Decision: d.depth, d.width, d.k2, d.reason
    ...run that speculation, then feed back what happened:
    est.observe_verdict(depth=1, accepted=True); est.observe_target_step(0.8, batch=3)
    record["adaptive"].append(d.to_dict())      # JSON for the trace; Decision.from_dict reads it

Memory is bounded: a fixed number of decayed sums per quantity (exponential forgetting, one decay
per observation), whatever the length of the run.
"""
from .config import MIN_STEP_S, MODES, AdaptiveConfig, Estimates
from .controller import Controller, Decision
from .estimator import MAX_BATCH_BIN, BatchCost, DecayedMean, Estimator
from .rule import AR, TIE_RTOL, Choice, best_choice, candidates, expected_rate, on_plateau, preferred, ranked

__all__ = ["AR", "MAX_BATCH_BIN", "MIN_STEP_S", "MODES", "TIE_RTOL", "AdaptiveConfig", "BatchCost", "Choice",
           "Controller", "DecayedMean", "Decision", "Estimates", "Estimator", "best_choice", "candidates",
           "expected_rate", "on_plateau", "preferred", "ranked"]
