"""JSON Schema (2020-12) of a calibration profile, version 1 (docs/calibration.md): written by `lr
calibrate` (lrsim/calib/), read by the simulator; in lrcore with the other file contracts.

Sections the simulator reads are closed (`additionalProperties: false`): a misspelt optional
field in a hand-edited profile ("per_tokn_s") is an error naming it, not a silently ignored
value. Descriptive sections (source, fit, by_method, launch gaps) stay open."""
from __future__ import annotations

from .limits import MAX_NUM_SEQS

PROFILE_VERSION = 1

_NUM = {"type": "number", "minimum": 0}
_PROB = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
_FIT = {"type": "object", "properties": {
    "points": {"type": "integer", "minimum": 0}, "rmse_s": {"type": ["number", "null"]},
    "mape": {"type": ["number", "null"]}, "source": {"type": "string"},
    # what the fitted passes spanned; `sequences` [fewest, most] per pass (ProfileSource.beyond_measured)
    "ranges": {"type": "object", "properties": {"sequences": {
        "type": "array", "items": {"type": "number", "minimum": 0}, "minItems": 2, "maxItems": 2}}}}}

LATENCY = {
    "type": "object",
    "required": ["kind"],
    "unevaluatedProperties": False,  # the keys of the matching kind below, nothing else
    "properties": {"kind": {"enum": ["roofline", "table"]}, "fit": _FIT},
    "allOf": [
        {"if": {"required": ["kind"], "properties": {"kind": {"const": "roofline"}}},
         "then": {"required": ["base_s"], "properties": {
             # >= 1 ns: every speedup is a ratio to the target's step time (denormals overflow)
             "base_s": {"type": "number", "minimum": 1e-9},
             "knee_tokens": {"type": "number", "minimum": 1e-9},
             "per_token_s": _NUM, "prefill_per_token_s": _NUM, "per_ctx_token_s": _NUM,
             "overhead_s": _NUM, "per_seq_s": _NUM,
             # fractional slowdown of a pass while the other engine runs one (physical.py)
             "contention": _NUM,
             # [verification positions, measured / linear] in increasing v (physical.position_factors)
             "position_factors": {"type": "array", "items": {
                 "type": "array", "minItems": 2, "maxItems": 2,
                 "prefixItems": [_NUM, {"type": "number", "exclusiveMinimum": 0}]}},
             # [sequences in a plain decode pass, measured / linear] in increasing B
             # (physical.batch_factor_knots, lr calibrate --batch-factors; or a measured curve's,
             # physical.curve_batch_knots, lr calibrate --target-batch-curve)
             "batch_factors": {"type": "array", "items": {
                 "type": "array", "minItems": 2, "maxItems": 2,
                 "prefixItems": [{"type": "number", "minimum": 1},
                                 {"type": "number", "exclusiveMinimum": 0}]}}}}},
        {"if": {"required": ["kind"], "properties": {"kind": {"const": "table"}}},
         "then": {"required": ["decode"], "properties": {
             # [batch tokens, mean context per sequence, milliseconds]
             "decode": {"type": "array", "minItems": 1, "items": {
                 "type": "array", "minItems": 3, "maxItems": 3, "items": _NUM}},
             # [prefill tokens, milliseconds]
             "prefill": {"type": "array", "items": {
                 "type": "array", "minItems": 2, "maxItems": 2, "items": _NUM}}}}},
    ],
}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "lr calibration profile",
    "type": "object",
    "required": ["profile_version", "source", "latency", "verifier", "steps", "step_acceptance",
                 "sd", "overheads", "placement"],
    "additionalProperties": False,
    "properties": {
        "profile_version": {"const": PROFILE_VERSION},
        "name": {"type": "string"},
        "warnings": {"type": "array", "items": {"type": "string"}},
        # the reference machine speed: median probe per engine (lrreal/probe.py); a record's or
        # today's probe over it rescales the latency models (`lr calibrate probe`)
        "probe": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["decode_s"],
            # >= 1 microsecond: machine-speed factors divide by them
            "properties": {"decode_s": {"type": "number", "minimum": 1e-6},
                           "prefill_s": {"type": "number", "minimum": 1e-6},
                           "contended_decode_s": {"type": "number", "minimum": 1e-6},
                           "contention": {"type": "number", "minimum": 0},
                           "n": {"type": "integer", "minimum": 0}}}},
        "rescaled": {"type": "object"},
        "created": {"type": "string"},
        "source": {
            "type": "object", "required": ["traces", "hardware"],
            "properties": {
                "traces": {"type": "array", "items": {
                    "type": "object", "required": ["path", "sha256"],
                    "properties": {"path": {"type": "string"},
                                   "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                                   "records": {"type": "integer", "minimum": 0}}}},
                "hardware": {"type": "object"},
                "models": {"type": "object"},
                "problems": {"type": "array", "items": {"type": "string"}},
                "modes": {"type": "object"},
                "configs": {"type": "object"},
            },
        },
        # role ("target", "draft") -> the engine's physical latency model, shared by every mode.
        # Profiles of earlier versions may hold role@mode entries ("target@lr"); to_config still
        # prefers one for its mode.
        "latency": {"type": "object", "required": ["target"],
                    "additionalProperties": LATENCY},
        "verifier": {
            "type": "object", "required": ["kind", "seconds"], "additionalProperties": False,
            "properties": {"kind": {"enum": ["none", "constant", "per_token"]},
                           "seconds": _NUM, "by_method": {"type": "object"}},
        },
        "steps": {
            "type": "object",
            "required": ["mean_tokens", "lognormal_sigma", "steps_per_request", "prompt_tokens"],
            "additionalProperties": False,
            "properties": {"mean_tokens": {"type": "number", "minimum": 1},
                           "lognormal_sigma": _NUM,
                           # <= lrcore.limits.MAX_STEPS_PER_REQUEST (a simulated request's steps)
                           "steps_per_request": {"type": "number", "minimum": 1, "maximum": 100000},
                           "prompt_tokens": {"type": "number", "minimum": 0, "maximum": 10000000},
                           # of them already in the prefix caches (lrsim/sim/traces.prompt_cached)
                           "prompt_cached_tokens": {"type": "number", "minimum": 0, "maximum": 10000000},
                           # in the drafter's (traces.draft_prompt_cached); absent: the same
                           "draft_prompt_cached_tokens": {"type": "number", "minimum": 0, "maximum": 10000000},
                           "first_step_drafted": _PROB,
                           # the output budget most records stopped on (overheads.step_lengths);
                           # <= lrcore.limits.MAX_RECORD_TOKENS (a record's output)
                           "budget_tokens": {"type": "integer", "minimum": 1, "maximum": 1000000},
                           "budget_share": _PROB,
                           "length_hist": {"type": "object"}},
        },
        "step_acceptance": {
            "type": "object", "required": ["rate", "by_depth"], "additionalProperties": False,
            # by_depth: draft depth (1, 2, ...) -> [proposed, accepted]
            "properties": {"rate": _PROB, "by_depth": {
                "type": "object", "propertyNames": {"pattern": "^[1-9][0-9]*$"},
                "additionalProperties": {"type": "array", "minItems": 2, "maxItems": 2,
                                         "items": {"type": "integer", "minimum": 0}}},
                "proposed": {"type": "integer", "minimum": 0},
                "accepted": {"type": "integer", "minimum": 0},
                # present when alpha1 came from accept-mode records (lrsim/calib/acceptance.py):
                # the protocol's estimate with its 95% interval, and the LR records' pooled numbers
                "source": {"enum": ["accept"]},
                "accept": {"type": "object"},
                "lr": {"type": "object"}},
        },
        "sd": {
            "type": "object", "required": ["alpha2", "k2"], "additionalProperties": False,
            "properties": {"alpha2": _PROB, "k2": {"type": "integer", "minimum": 1, "maximum": 1024},
                           "acceptance_rate": _PROB,
                           # share of the target's decode passes that verified a proposal
                           # (n-gram SD proposes only on a match; absent: 1, always)
                           "proposal_rate": _PROB,
                           "accepted_length_hist": {"type": "array", "items": _NUM},
                           "mean_accepted_length": {"type": ["number", "null"], "minimum": 0}},
        },
        "overheads": {
            "type": "object", "additionalProperties": False,
            "properties": {"per_step_s": _NUM, "per_request_s": _NUM,
                           "per_request_s_by_mode": {"type": "object", "additionalProperties": _NUM},
                           "launch_gap_s": {"type": "object"}, "prefill_s_per_step": {"type": "object"}},
        },
        # role -> the engine's KV cache (lrsim/calib/kv.py); absent: unlimited
        "kv_cache": {
            "type": "object", "propertyNames": {"enum": ["target", "draft"]},
            "additionalProperties": {
                "type": "object", "required": ["capacity_tokens", "block_tokens"],
                "additionalProperties": False,
                "properties": {"capacity_tokens": {"type": "integer", "minimum": 1},
                               "block_tokens": {"type": "integer", "minimum": 1, "maximum": 65536},
                               "space_gib": _NUM, "bytes_per_token": _NUM,
                               "source": {"type": "string"}}}},
        "placement": {
            "type": "object", "required": ["shared"], "additionalProperties": False,
            "properties": {"shared": {"type": "boolean"}, "device_kind": {"type": "string"},
                           "defaults": {"type": "object", "properties": {
                               "depth": {"type": "integer", "minimum": 1, "maximum": 1024},
                               "width": {"type": "integer", "minimum": 1, "maximum": 1024},
                               "judge_timing": {"enum": ["eager", "deferred"]}}},
                           "selected_by": {"type": "object"},
                           # each engine's vLLM --max-num-seqs as the traces ran it (calib/seqs.py)
                           "max_num_seqs": {"type": "object", "propertyNames": {"enum": ["target", "draft"]},
                                            "additionalProperties": {"type": "integer", "minimum": 1,
                                                                     "maximum": MAX_NUM_SEQS}},
                           # AR on every core against AR on the target's (lrsim/calib/equal.py)
                           "equal_resources": {
                               "type": "object", "required": ["tp_efficiency"],
                               "properties": {"tp_efficiency": {**_NUM, "minimum": 0.01, "maximum": 1.0},
                                              "speedup": _NUM, "core_ratio": _NUM,
                                              "pairs": {"type": "integer", "minimum": 1},
                                              "by_concurrency": {"type": "object",
                                                                 "additionalProperties": _NUM}}}},
        },
    },
}
