import copy

import pytest

MINIMAL = {
    "profile_version": 1,
    "name": "unit",
    "source": {"traces": [{"path": "x.jsonl", "sha256": "0" * 64, "records": 1}],
               "hardware": {"cpu_model": "test"}},
    "latency": {
        "target": {"kind": "roofline", "base_s": 0.4, "knee_tokens": 1, "per_token_s": 0.025,
                   "prefill_per_token_s": 0.02, "per_ctx_token_s": 0.0, "overhead_s": 0.0,
                   "fit": {"points": 10, "rmse_s": 0.01, "mape": 0.02, "source": "synthetic"}},
        "draft": {"kind": "table", "decode": [[1, 0, 100], [2, 0, 105], [4, 0, 120]],
                  "prefill": [[1, 100], [300, 1700]]},
    },
    "verifier": {"kind": "constant", "seconds": 0.01},
    "steps": {"mean_tokens": 35, "lognormal_sigma": 0.4, "steps_per_request": 6, "prompt_tokens": 120},
    "step_acceptance": {"rate": 0.5, "by_depth": {"1": [10, 6], "2": [6, 2]}},
    "sd": {"alpha2": 0.2, "k2": 7},
    "overheads": {"per_step_s": 0.02, "per_request_s": 0.1},
    "placement": {"shared": True, "device_kind": "2-core CPU", "defaults": {"depth": 2, "width": 1}},
}


@pytest.fixture
def minimal_doc():
    return copy.deepcopy(MINIMAL)
