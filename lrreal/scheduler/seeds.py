"""Per-request seeds derived from (run seed, problem, sample, node path, role).

The reference seeds every request with the current Unix second, so siblings share seeds and no
run can be reproduced. Here a request's seed is a hash of where it sits in the run: the same run
seed, problem, sample and tree position always give the same seed, and siblings differ.
"""
from __future__ import annotations

import hashlib

SEED_BITS = 31  # fits every sampler's seed type (vLLM takes any int; numpy wants < 2**32)


def derive_seed(run_seed: int, problem_id: str, sample: int, path: str, role: str) -> int:
    key = f"{run_seed}\x1f{problem_id}\x1f{sample}\x1f{path}\x1f{role}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") >> (64 - SEED_BITS)


class SeedSource:
    """Seeds for one (run, problem, sample); `path` names the tree position of a request."""

    def __init__(self, run_seed: int, problem_id: str, sample: int):
        self.run_seed, self.problem_id, self.sample = run_seed, problem_id, sample

    def __call__(self, path: str, role: str) -> int:
        return derive_seed(self.run_seed, self.problem_id, self.sample, path, role)

    def describe(self) -> dict:
        return {"run_seed": self.run_seed, "derivation":
                "sha256(run_seed, problem_id, sample, node path, role)[:8] >> 33"}
