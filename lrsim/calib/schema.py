"""JSON Schema (2020-12) of a calibration profile, version 1 (docs/calibration.md)."""
from __future__ import annotations

PROFILE_VERSION = 1

_NUM = {"type": "number", "minimum": 0}
_PROB = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
_FIT = {"type": "object", "properties": {
    "points": {"type": "integer", "minimum": 0}, "rmse_s": {"type": ["number", "null"]},
    "mape": {"type": ["number", "null"]}, "source": {"type": "string"}}}

LATENCY = {
    "type": "object",
    "required": ["kind"],
    "properties": {"kind": {"enum": ["roofline", "table"]}, "fit": _FIT},
    "allOf": [
        {"if": {"properties": {"kind": {"const": "roofline"}}},
         "then": {"required": ["base_s"], "properties": {
             "base_s": {"type": "number", "exclusiveMinimum": 0},
             "knee_tokens": {"type": "number", "exclusiveMinimum": 0},
             "per_token_s": _NUM, "prefill_per_token_s": _NUM, "per_ctx_token_s": _NUM,
             "overhead_s": _NUM}}},
        {"if": {"properties": {"kind": {"const": "table"}}},
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
    "properties": {
        "profile_version": {"const": PROFILE_VERSION},
        "name": {"type": "string"},
        "warnings": {"type": "array", "items": {"type": "string"}},
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
            },
        },
        # role ("target", "draft") or role@mode ("target@lr": the target measured beside a draft
        # engine) -> latency model; to_config prefers role@mode for the simulated mode.
        "latency": {"type": "object", "required": ["target"],
                    "additionalProperties": LATENCY},
        "verifier": {
            "type": "object", "required": ["kind", "seconds"],
            "properties": {"kind": {"enum": ["none", "constant", "per_token"]},
                           "seconds": _NUM, "by_method": {"type": "object"}},
        },
        "steps": {
            "type": "object",
            "required": ["mean_tokens", "lognormal_sigma", "steps_per_request", "prompt_tokens"],
            "properties": {"mean_tokens": {"type": "number", "minimum": 1},
                           "lognormal_sigma": _NUM,
                           "steps_per_request": {"type": "number", "minimum": 1},
                           "prompt_tokens": _NUM,
                           "length_hist": {"type": "object"}},
        },
        "step_acceptance": {
            "type": "object", "required": ["rate", "by_depth"],
            "properties": {"rate": _PROB, "by_depth": {"type": "object", "additionalProperties": {
                "type": "array", "minItems": 2, "maxItems": 2,
                "items": {"type": "integer", "minimum": 0}}}},
        },
        "sd": {
            "type": "object", "required": ["alpha2", "k2"],
            "properties": {"alpha2": _PROB, "k2": {"type": "integer", "minimum": 1},
                           "accepted_length_hist": {"type": "array", "items": _NUM}},
        },
        "overheads": {
            "type": "object",
            "properties": {"per_step_s": _NUM, "per_request_s": _NUM, "launch_gap_s": {"type": "object"},
                           "prefill_s_per_step": {"type": "object"}},
        },
        "placement": {
            "type": "object", "required": ["shared"],
            "properties": {"shared": {"type": "boolean"}, "device_kind": {"type": "string"},
                           "defaults": {"type": "object"}},
        },
    },
}
