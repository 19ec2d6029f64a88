"""Workloads: requests made of reasoning steps, and the acceptance outcomes of drafts.

A workload gives (1) the requests: prompt length, the token length of every step, the arrival
time; (2) acceptance: whether a draft step at a given position and depth is accepted by the
verifier, and the per-token acceptance of token-level SD. Synthetic workloads draw these from
seeded distributions; trace-driven ones (`traces.py`) replay recorded steps and verdicts. Any
object with the `Workload` methods plugs in.

Randomness: every request owns a `random.Random` seeded from (workload seed, request id), and
policies draw from it in simulation order, which SimPy makes deterministic: a seeded run repeats
exactly. Step lengths come from a separate stream, so AR and LR see the same steps.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Iterator, Protocol

import numpy as np

from lrcore.errors import UserError
from lrcore.limits import MAX_STEPS_PER_REQUEST

from .tokensd import AcceptedLengths

# the authors' code (github.com/hao-ai-lab/LookaheadReasoning) cuts a step at 100 tokens
STEP_TOKEN_CAP = 100


@dataclass
class RequestSpec:
    rid: int
    prompt_tokens: int
    step_tokens: list[int]           # length of each reasoning step the request must emit
    arrival: float = 0.0
    rng: random.Random = field(default_factory=random.Random, repr=False)
    # prompt tokens already in the engines' prefix caches when it arrives (a chat template or
    # few-shot prefix that earlier requests sent): context, but not prefilled again
    prompt_cached: int = 0
    # of them in the drafter's prefix cache, when it differs from the target's (None: the same):
    # a corpus that reruns its problems on the same engines has the target's cache hold prompts
    # that AR sent before, while the drafter, which AR never uses, prefills them whole
    draft_prompt_cached: int | None = None

    @property
    def prompt_uncached(self) -> int:
        return max(0, self.prompt_tokens - self.prompt_cached)

    @property
    def draft_cached(self) -> int:
        """Prompt tokens in the drafter's prefix cache when the request arrives."""
        return self.prompt_cached if self.draft_prompt_cached is None else self.draft_prompt_cached

    @property
    def draft_prompt_uncached(self) -> int:
        return max(0, self.prompt_tokens - self.draft_cached)

    @property
    def steps(self) -> int:
        return len(self.step_tokens)

    @property
    def output_tokens(self) -> int:
        return int(sum(self.step_tokens))


class Workload(Protocol):
    def requests(self) -> list[RequestSpec]: ...
    def step_accept(self, req: RequestSpec, position: int, depth: int) -> bool: ...
    def token_alpha(self, req: RequestSpec) -> float: ...


@dataclass
class Synthetic:
    """Seeded synthetic workload.

    alpha1 is the step acceptance probability; `alpha_by_depth[d-1]` overrides it for a draft d
    levels ahead of the committed context (acceptance often falls with depth). Step lengths are
    lognormal with the given mean (GSM8K steps of the CPU model pair, measured on this project's
    2-core CPU machine: 22-72 tokens, mean 34-40), capped at STEP_TOKEN_CAP; `step_sigma = 0`
    gives equal steps (the theory's assumption).
    """
    n_requests: int = 1
    steps: int = 200
    alpha1: float = 0.6
    alpha2: float = 0.0
    alpha_by_depth: list[float] | None = None
    step_mean: float = 40.0
    step_sigma: float = 0.5          # lognormal shape; 0 = every step exactly step_mean tokens
    prompt_tokens: int = 300
    prompt_cached: int = 0           # of them already in the prefix caches (RequestSpec)
    draft_prompt_cached: int | None = None   # in the drafter's, if not the same (RequestSpec)
    rate: float | None = None        # Poisson arrivals per second; None = all arrive at t = 0
    # a load ramp: the arrival rate rises (or falls) linearly with the request's index from `rate`
    # (the first) to `rate_end` (the last), so the requests meet every load between the two
    # (adaptive lookahead past the static optimum's break-even); None = `rate` throughout
    rate_end: float | None = None
    seed: int = 0
    # P(a step that no draft can match): correlates sibling drafts (width > 1). The paper saw
    # acceptance rise only 0.63 -> 0.83 from width 1 to 8 (its width ablation): sibling_hard ~ 0.15
    # reproduces that; 0 = independent siblings. The marginal acceptance per draft stays alpha1.
    sibling_hard: float = 0.0
    # P(an SD round carries a proposal): an n-gram drafter finds no match for some (tokensd.py);
    # 1 = a draft model, which always proposes (the paper's model)
    sd_hit: float = 1.0
    # may a draft follow the prompt itself? The real scheduler drafts only after a step boundary,
    # and a chat prompt is none (the traces: never); True = every context, the theory's model
    draft_first: bool = True
    # a phase change (for adaptive lookahead): from step `phase_at` x steps of every request on,
    # the step acceptance is `phase_alpha1` instead of alpha1 / alpha_by_depth; None = one phase
    phase_alpha1: float | None = None
    phase_at: float = 0.5
    # an output budget (tokens; `lr collect --max-tokens`): each request draws steps until it
    # reaches it and its last step is cut to fit, as a real run that stops on the budget does;
    # `steps` is then ignored. None = `steps` steps (their total varies with their lengths)
    max_tokens: int | None = None
    # SD's accepted draft tokens per proposing pass, as measured (hist[k] = passes that accepted
    # k): an n-gram drafter is all-or-nothing, which no Geometric(alpha2) reproduces (tokensd.py);
    # None = Geometric(alpha2), the paper's model
    accepted_length_hist: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.accepted_length_hist is not None:
            h = self.accepted_length_hist
            if len(h) < 2 or any(c < 0 for c in h) or sum(h) <= 0:
                raise UserError("workload.accepted_length_hist must count passes by accepted "
                                f"tokens 0..gamma (gamma >= 1, some passes), got {list(h)}")
            self._lengths_model = AcceptedLengths.from_hist(h)
        if not 0.0 < self.sd_hit <= 1.0:
            raise UserError(f"workload.sd_hit must be in (0, 1], got {self.sd_hit}")
        for name in ("alpha1", "alpha2"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise UserError(f"workload.{name} must be in [0, 1], got {v}")
        if self.phase_alpha1 is not None and not 0.0 <= self.phase_alpha1 <= 1.0:
            raise UserError(f"workload.phase_alpha1 must be in [0, 1], got {self.phase_alpha1}")
        if not 0.0 <= self.phase_at <= 1.0:
            raise UserError(f"workload.phase_at must be in [0, 1] (a fraction of the steps), "
                            f"got {self.phase_at}")
        for v in self.alpha_by_depth or []:
            if not 0.0 <= v <= 1.0:
                raise UserError(f"workload.alpha_by_depth values must be in [0, 1], got {v}")
        if self.n_requests < 1 or self.steps < 1:
            raise UserError("workload: requests and steps must be >= 1")
        if self.max_tokens is not None and not 1 <= self.max_tokens <= MAX_STEPS_PER_REQUEST:
            raise UserError(f"workload.max_tokens must be in [1, {MAX_STEPS_PER_REQUEST}], got {self.max_tokens}")
        if self.step_mean < 1:
            raise UserError(f"workload.step_mean must be >= 1, got {self.step_mean}")
        if self.rate is not None and self.rate <= 0:
            raise UserError(f"workload.rate must be > 0, got {self.rate}")
        if self.rate_end is not None and (self.rate is None or not self.rate_end > 0):
            raise UserError(f"workload.rate_end must be > 0 and needs a rate, got "
                            f"{self.rate_end} with rate {self.rate}")
        if not 0.0 <= self.sibling_hard < 1.0:
            raise UserError(f"workload.sibling_hard must be in [0, 1), got {self.sibling_hard}")
        top = max([self.alpha1] + list(self.alpha_by_depth or [])
                  + ([self.phase_alpha1] if self.phase_alpha1 is not None else []))
        if top > 1.0 - self.sibling_hard + 1e-12:
            raise UserError(f"workload.sibling_hard = {self.sibling_hard} leaves at most "
                            f"{1 - self.sibling_hard:.3f} acceptance, but alpha is {top}")

    def _draft_cached(self) -> int | None:
        d = self.draft_prompt_cached
        return None if d is None else min(d, self.prompt_tokens)

    def requests(self) -> list[RequestSpec]:
        g = np.random.default_rng([self.seed, 0x5EED])
        if self.max_tokens is not None:
            lens = [self._budgeted(g) for _ in range(self.n_requests)]
        else:
            lens = self._lengths(g, (self.n_requests, self.steps))
        if self.rate:
            arrivals = np.cumsum(self._ramped(g.exponential(1.0 / self.rate, self.n_requests), 0))
            arrivals -= arrivals[0]
        else:
            arrivals = np.zeros(self.n_requests)
        return [RequestSpec(i, self.prompt_tokens, list(map(int, lens[i])), float(arrivals[i]),
                            random.Random(self.seed * 1_000_003 + i),
                            prompt_cached=min(self.prompt_cached, self.prompt_tokens),
                            draft_prompt_cached=self._draft_cached())
                for i in range(self.n_requests)]

    def iter_requests(self, chunk: int = 1024) -> Iterator[RequestSpec]:
        """The requests of `requests()`, one at a time and equal to them field by field (the same
        step lengths, arrival times and rng seeds), holding one chunk of lengths at a time instead
        of the whole list (streaming runs, lrsim/sim/stream.py). requests() draws every step
        length and then every arrival from one generator, so the arrivals' generator is found by
        a first pass that draws the lengths and discards them (numpy's draws are the same in
        chunks as in one call); the cumulative sum is carried across chunks in the same order."""
        if chunk < 1:
            raise ValueError("chunk must be >= 1")
        arr_g = None
        if self.rate:
            arr_g = np.random.default_rng([self.seed, 0x5EED])
            for _ in self._length_chunks(arr_g, chunk):
                pass                                  # arr_g is now where requests() draws arrivals
        carry, first, rid = 0.0, None, 0
        cached, d_cached = min(self.prompt_cached, self.prompt_tokens), self._draft_cached()
        for rows in self._length_chunks(np.random.default_rng([self.seed, 0x5EED]), chunk):
            m = len(rows)
            if arr_g is not None:
                x = self._ramped(arr_g.exponential(1.0 / self.rate, m), rid)
                x[0] += carry                         # = the running sum of requests()' cumsum
                cum = np.cumsum(x)
                carry = cum[-1]
                if first is None:
                    first = cum[0]
                arrivals = (cum - first).tolist()
            else:
                arrivals = [0.0] * m
            for lens, a in zip(rows, arrivals):
                yield RequestSpec(rid, self.prompt_tokens, list(map(int, lens)), float(a),
                                  random.Random(self.seed * 1_000_003 + rid), prompt_cached=cached,
                                  draft_prompt_cached=d_cached)
                rid += 1

    def _ramped(self, gaps: np.ndarray, first: int) -> np.ndarray:
        """Inter-arrival gaps of requests first, first + 1, ... drawn at `rate`, rescaled to the
        ramp's rate at each one's index (rate_end); unchanged without a ramp."""
        if self.rate_end is None:
            return gaps
        i = np.arange(first, first + len(gaps), dtype=float)
        at = self.rate + (self.rate_end - self.rate) * i / max(self.n_requests - 1, 1)
        return gaps * (self.rate / at)

    def _length_chunks(self, g: np.random.Generator, chunk: int):
        """requests()' step lengths, `chunk` requests at a time, drawn from g in the same order."""
        left = self.n_requests
        while left > 0:
            m = min(chunk, left)
            if self.max_tokens is not None:
                yield [self._budgeted(g) for _ in range(m)]
            else:
                yield self._lengths(g, (m, self.steps)).tolist()
            left -= m

    def _lengths(self, g: np.random.Generator, shape) -> np.ndarray:
        """Step lengths: lognormal with mean step_mean (sigma 0: all equal), 1..STEP_TOKEN_CAP."""
        if self.step_sigma > 0:
            mu = math.log(self.step_mean) - self.step_sigma ** 2 / 2
            return np.clip(np.rint(g.lognormal(mu, self.step_sigma, shape)), 1, STEP_TOKEN_CAP).astype(int)
        return np.full(shape, int(round(self.step_mean)))

    def _budgeted(self, g: np.random.Generator) -> list[int]:
        """One request's step lengths up to the output budget, the last one cut to fit."""
        out, left = [], self.max_tokens
        chunk = max(1, math.ceil(self.max_tokens / self.step_mean)) + 1
        while left > 0:
            for n in self._lengths(g, chunk).tolist():
                out.append(min(n, left))
                left -= out[-1]
                if left == 0:
                    break
        return out

    def _alpha(self, depth: int, position: int = 0) -> float:
        if self.phase_alpha1 is not None and position >= self.phase_at * self.steps:
            return self.phase_alpha1
        if self.alpha_by_depth:
            return self.alpha_by_depth[min(depth, len(self.alpha_by_depth)) - 1]
        return self.alpha1

    def step_accept(self, req: RequestSpec, position: int, depth: int) -> bool:
        return req.rng.random() < self._alpha(depth, position)

    def judge_siblings(self, req: RequestSpec, position: int, depths: list[int]) -> int | None:
        """Sibling drafts of one position: with probability sibling_hard none can match; else
        each is accepted independently with alpha / (1 - sibling_hard). First accepted index."""
        h = self.sibling_hard
        if h == 0.0:
            for i, d in enumerate(depths):
                if req.rng.random() < self._alpha(d, position):
                    return i
            return None
        if req.rng.random() < h:
            return None
        for i, d in enumerate(depths):
            if req.rng.random() < self._alpha(d, position) / (1.0 - h):
                return i
        return None

    def token_alpha(self, req: RequestSpec) -> float:
        return self.alpha2

    def token_lengths(self, req: RequestSpec) -> AcceptedLengths | None:
        return getattr(self, "_lengths_model", None)

    def token_hit(self, req: RequestSpec) -> float:
        return self.sd_hit

    def can_draft(self, req: RequestSpec, position: int) -> bool:
        """The boundary rule (lrsim/sim/traces.py has the recorded one): every context but,
        without draft_first, the prompt."""
        return position > 0 or self.draft_first
