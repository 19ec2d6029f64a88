"""What traces say besides forward-pass latency: spans, concurrency, verifier latency, scheduling
gaps, step lengths, acceptance (the trace contract: traces/README.md, schema v1).

Context of a span: the prompt plus the tokens committed before its step (`cum[i]`); a span
speculating deeper (cancelled work at depth d) is approximated by the same context. Uncached
prefill of a span (prefix caching keeps everything an engine has seen): the prompt for the first
step; for a target step after a draft context, the previous step (the draft's text, which the
target has not read); for a draft after a committed target step, that step; AR continues one
request, so its later steps have none. A span that records its engine's prompt_tokens and
cached_tokens (vLLM's num_cached_tokens) uses those instead: its context and uncached prefill as
counted, which also sees evictions and template hits the rule above cannot.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lrcore.modes import LR_MODES
from lrcore.theory import geometric_sum

from ..sim.traces import draft_prompt_cached, prompt_cached, proposal_rate, span_cache, step_drafted
from .fit import Points

DEFAULT_PROMPT = 300     # when a record has no prompt_tokens (lrsim.sim.traces uses the same)


@dataclass
class Span:
    engine: str          # "draft" | "target"
    start: float
    end: float
    tokens: int
    ctx: float           # context tokens of this sequence at its start
    prefill: int         # uncached tokens read by its first iteration


def prompt_tokens(rec: dict) -> int:
    return int(rec.get("prompt_tokens") or DEFAULT_PROMPT)


def spans(rec: dict) -> list[Span]:
    """Every generation span of one record (committed and cancelled), in start order."""
    steps = rec.get("steps") or []
    pt = prompt_tokens(rec)
    cum = [0]
    for s in steps:
        cum.append(cum[-1] + int(s["tokens"]))
    out = []
    ar = rec.get("mode") in ("ar", "sd")
    for i, s in enumerate(steps):
        ctx = pt + cum[i]
        prev = steps[i - 1] if i else None
        for eng in ("target", "draft"):
            sp = s.get(eng)
            if not sp:
                continue
            if i == 0:
                pre = pt
            elif ar:
                pre = 0
            elif eng == "target":
                pre = int(prev["tokens"])                   # the draft step it has not read
            else:
                pre = int(prev["tokens"]) if prev.get("source") == "target" else 0
            measured = span_cache(sp)      # the engine's own count, where recorded: exact
            c_ctx, c_pre = (ctx, pre) if measured is None else (measured[0], measured[0] - measured[1])
            out.append(Span(eng, float(sp["start"]), float(sp["end"]), int(sp.get("tokens") or 0), c_ctx, c_pre))
        for c in s.get("cancelled") or []:
            out.append(Span(c["kind"], float(c["start"]), float(c["end"]), int(c.get("tokens") or 0),
                            ctx, int(prev["tokens"]) if prev else pt))
    out.sort(key=lambda x: x.start)
    return out


def mean_concurrency(sp: list[Span], i: int) -> float:
    """Time-weighted number of spans of the same engine overlapping span i (itself included)."""
    me = sp[i]
    dur = me.end - me.start
    if dur <= 0:
        return 1.0
    busy = sum(max(0.0, min(me.end, o.end) - max(me.start, o.start))
               for j, o in enumerate(sp) if j != i and o.engine == me.engine)
    return 1.0 + busy / dur


def span_points(records: list[dict], engine: str, min_tokens: int = 2) -> Points:
    """Generation spans of `engine` as fit points: batch = mean concurrency, ctx = batch context."""
    b, pre, ctx, sec, tok = [], [], [], [], []
    for rec in records:
        sp = spans(rec)
        for i, s in enumerate(sp):
            if s.engine != engine or s.tokens < min_tokens or s.end <= s.start:
                continue
            n = mean_concurrency(sp, i)
            b.append(n)
            pre.append(s.prefill)
            ctx.append(n * (s.ctx + s.tokens / 2))
            sec.append(s.end - s.start)
            tok.append(s.tokens)
    f = lambda v: np.asarray(v, float)  # noqa: E731
    return Points("spans", f(b), f(pre), f(ctx), f(sec), f(tok))


def _active_ctx(sp: list[Span], engine: str, t: float) -> float:
    tot = 0.0
    for s in sp:
        if s.engine == engine and s.start <= t <= s.end:
            frac = (t - s.start) / (s.end - s.start) if s.end > s.start else 1.0
            tot += s.ctx + frac * s.tokens
    return tot


def pass_points(records: list[dict], engine: str) -> Points:
    """vLLM forward passes of `engine` (engine_stats) as fit points; context from active spans."""
    dec, pre, ctx, sec = [], [], [], []
    for rec in records:
        fp = ((rec.get("engine_stats") or {}).get(engine) or {}).get("forward_passes")
        if not fp:
            continue
        sp = spans(rec)
        for p in fp:
            ptok = int(p.get("prefill_tokens", 0))
            d = int(p.get("tokens_scheduled", 0)) - ptok
            dec.append(max(d, 0))
            pre.append(ptok)
            end = float(p.get("start", 0.0)) + float(p["duration_s"])
            ctx.append(_active_ctx(sp, engine, end) if "start" in p else 0.0)
            sec.append(float(p["duration_s"]))
    f = lambda v: np.asarray(v, float)  # noqa: E731
    return Points("passes", f(dec), f(pre), f(ctx), f(sec))


def _stats(values) -> dict:
    a = np.asarray(values, float)
    if not len(a):
        return {"n": 0, "mean_s": None, "p50_s": None, "p90_s": None}
    return {"n": int(len(a)), "mean_s": float(a.mean()), "p50_s": float(np.percentile(a, 50)),
            "p90_s": float(np.percentile(a, 90))}


def verifier_latency(records: list[dict]) -> dict:
    """Verifier wall time per judgement by method (shortcut decisions separately)."""
    by: dict[str, list[float]] = {}
    for rec in records:
        for s in rec.get("steps") or []:
            v = s.get("verify")
            if not v or v.get("start") is None or v.get("end") is None:
                continue
            key = (v.get("method") or "unknown") + (" (shortcut)" if v.get("shortcut") else "")
            by.setdefault(key, []).append(float(v["end"]) - float(v["start"]))
    return {k: _stats(v) for k, v in sorted(by.items())}


def scheduling_gaps(records: list[dict]) -> dict:
    """Scheduling overheads of the LR loop, seconds (medians are what the profile uses):
    judge_wait   a step's both generations done -> its verifier starts (eager judging: ~0);
    relaunch     a rejected step's commit (its verdict and generation in, and every step before
                 it committed) -> the next step's target launch (the new root's target is only
                 sent once the corrected context exists);
    request      the record's wall time outside its first span start .. last span end."""
    judge, relaunch, req = [], [], []
    for rec in records:
        steps = rec.get("steps") or []
        committed = 0.0        # when the previous step was committed (steps commit in order)
        for i, s in enumerate(steps):
            v, t, d = s.get("verify"), s.get("target"), s.get("draft")
            if v and t and d and v.get("start") is not None:
                judge.append(max(0.0, float(v["start"]) - max(float(t["end"]), float(d["end"]))))
            # a step is committed once its verdict and (for a target step) its generation exist
            # and its parent is committed: an eager verdict on a deep node can come in long
            # before its parent's (counting from the verdict priced that wait as overhead)
            for span in (v, t if s.get("source") == "target" else None):
                if span and span.get("end") is not None:
                    committed = max(committed, float(span["end"]))
            if (s.get("source") == "target" and v and v.get("end") is not None and i + 1 < len(steps)
                    and steps[i + 1].get("target")):
                gap = float(steps[i + 1]["target"]["start"]) - committed
                if gap >= 0:
                    relaunch.append(gap)
        sp = spans(rec)
        if sp and rec.get("wall_time_s") is not None:
            first = min(x.start for x in sp)
            last = max(x.end for x in sp)
            req.append(max(0.0, float(rec["wall_time_s"]) - (last - first)))
    return {"judge_wait": _stats(judge), "relaunch": _stats(relaunch), "request": _stats(req)}


def step_lengths(records: list[dict]) -> dict:
    """Empirical step-length histograms (tokens) by source, and the lognormal fit of all steps."""
    hist: dict[str, dict[int, int]] = {"draft": {}, "target": {}, "all": {}}
    lens, per_req, prompts, cached, d_cached, first, budgets = [], [], [], [], [], [], []
    for rec in records:
        st = [s for s in rec.get("steps") or [] if s["tokens"] > 0]
        if not st:
            continue
        per_req.append(len(st))
        budgets.append(output_budget(rec))
        prompts.append(prompt_tokens(rec))
        c = prompt_cached(rec)
        if c is not None:
            cached.append(c)
        if rec.get("mode") in LR_MODES:
            first.append(1.0 if step_drafted(st[0]) else 0.0)
            d = draft_prompt_cached(rec)
            if d is not None and c is not None:
                d_cached.append(c - d)        # the target's hit less the drafter's, same record
        for s in st:
            n = int(s["tokens"])
            lens.append(n)
            for key in (s.get("source", "target"), "all"):
                h = hist.setdefault(key, {})
                h[n] = h.get(n, 0) + 1
    if not lens:
        return {"mean_tokens": 1.0, "lognormal_sigma": 0.0, "steps_per_request": 1.0,
                "prompt_tokens": float(DEFAULT_PROMPT), "length_hist": {}}
    logs = np.log(np.asarray(lens, float))
    return {"mean_tokens": float(np.mean(lens)), "lognormal_sigma": float(np.std(logs)),
            "steps_per_request": float(np.mean(per_req)), "prompt_tokens": float(np.mean(prompts)),
            # of them in the engines' prefix caches already (a template sent before)
            "prompt_cached_tokens": float(np.median(cached)) if cached else 0.0,
            # in the drafter's, where its spans record it (AR never fills the drafter's cache):
            # the target's less the median gap of the records that count both
            **({"draft_prompt_cached_tokens": float(max(0.0, (np.median(cached) if cached else 0.0)
                                                        - np.median(d_cached)))} if d_cached else {}),
            # share of the LR records whose first step was drafted (the boundary rule: a chat
            # prompt is no step boundary, so the real scheduler never drafts after it)
            "first_step_drafted": (float(np.mean(first)) if first else None),
            # the output budget (lr collect --max-tokens) where most records ran into it: the
            # length of a request is then the budget, not a number of steps (workload.py)
            **_budget(budgets),
            "length_hist": {k: {str(n): c for n, c in sorted(h.items())} for k, h in hist.items() if h}}


def output_budget(rec: dict) -> int | None:
    """The record's output budget (run.flags.max_tokens) if the record stopped on it, else None."""
    cap = ((rec.get("run") or {}).get("flags") or {}).get("max_tokens")
    if rec.get("finish_reason") != "budget" or not isinstance(cap, int) or cap < 1:
        return None
    return cap


def _budget(budgets: list[int | None]) -> dict:
    """budget_tokens (the median budget of the records that hit one) when more than half did."""
    hit = [b for b in budgets if b is not None]
    if not budgets or 2 * len(hit) <= len(budgets):
        return {}
    return {"budget_tokens": int(np.median(hit)), "budget_share": len(hit) / len(budgets)}


def step_acceptance(records: list[dict]) -> dict:
    """Pooled step acceptance (accepted / judged) and by depth, from step_acceptance counters."""
    by: dict[int, list[int]] = {}
    prop = acc = 0
    for rec in records:
        sa = rec.get("step_acceptance") or {}
        prop += int(sa.get("proposed", 0))
        acc += int(sa.get("accepted", 0))
        for d, (p, a) in (sa.get("by_depth") or {}).items():
            pa = by.setdefault(int(d), [0, 0])
            pa[0] += int(p)
            pa[1] += int(a)
    return {"rate": acc / prop if prop else None, "proposed": prop, "accepted": acc,
            "by_depth": {str(d): pa for d, pa in sorted(by.items())}}


def sd_acceptance(records: list[dict]) -> dict:
    """Token-level SD: acceptance rate and the accepted-length histogram (passes accepting k)."""
    drafted = accepted = 0
    hist: list[int] = []
    k2 = None
    for rec in records:
        sd = rec.get("sd")
        if not sd:
            continue
        drafted += int(sd.get("drafted", 0))
        accepted += int(sd.get("accepted", 0))
        for k, c in enumerate(sd.get("accepted_length_hist") or []):
            if k >= len(hist):
                hist.extend([0] * (k + 1 - len(hist)))
            hist[k] += int(c)
        n = (rec.get("run") or {}).get("flags", {}).get("num_speculative_tokens")
        if n:
            k2 = int(n) + 1
    passes = sum(hist)
    return {"alpha2": mean_alpha(hist) if passes else (accepted / drafted if drafted else None),
            # n-gram SD proposes only on a match: the share of decode passes that verified one
            "proposal_rate": proposal_rate(records),
            "acceptance_rate": accepted / drafted if drafted else None, "k2": k2 or 1,
            "drafted": drafted, "accepted": accepted, "accepted_length_hist": hist,
            "mean_accepted_length": (1 + accepted / passes) if passes else None}


def mean_alpha(hist: list[int]) -> float | None:
    """Per-token acceptance alpha2 whose truncated geometric accepts, per proposing pass, as many
    draft tokens on average as the histogram does: sum_{j=1..gamma} alpha^j = S / n (a method of
    moments; hist[k] = passes that accepted exactly k of gamma = len(hist) - 1). The simulator's
    tokens per target pass, which set SD's speed, depend on X only through that mean. The
    maximum-likelihood alpha (geometric_alpha) fits the ratio of accepted tokens to stopped passes
    instead; an n-gram drafter's lengths are bimodal (most proposals accept nothing, some accept
    all gamma), more full-length passes than a geometric has, so the MLE's mean is higher than the
    measured one (the load corpus's pooled histogram: 1.02 accepted tokens per proposal against
    0.98 measured)."""
    gamma, n = len(hist) - 1, sum(hist)
    if gamma < 1 or n <= 0:
        return None
    return alpha_for_mean(sum(k * c for k, c in enumerate(hist)) / n, gamma)


def alpha_for_mean(m: float, gamma: int) -> float:
    """alpha2 whose truncated geometric accepts `m` of `gamma` draft tokens per proposing pass on
    average (mean_alpha's root; 0 at m <= 0, 1 at m >= gamma)."""
    from scipy.optimize import brentq

    if m <= 0:
        return 0.0
    if m >= gamma:
        return 1.0
    # E[min(X, gamma)] = sum_{j=1..gamma} alpha^j = geometric_sum(alpha, gamma + 1) - 1
    return float(brentq(lambda a: float(geometric_sum(a, gamma + 1)) - 1.0 - m, 0.0, 1.0, xtol=1e-12))


def geometric_alpha(hist: list[int]) -> float | None:
    """Per-token acceptance alpha2 of the simulator's SD model (lrsim/sim/tokensd.py: a pass
    accepts min(X, gamma) tokens, P(X >= j) = alpha^j) from the accepted-length histogram
    (hist[k] = passes that accepted exactly k of gamma = len(hist) - 1 drafted tokens).
    Maximum likelihood of the truncated geometric: every accepted token is a success, every pass
    that stopped short of gamma ends in one failure, so alpha = S / (S + F). This is not
    accepted / drafted: the tokens drafted after the first rejection are never tested."""
    gamma = len(hist) - 1
    if gamma < 1:
        return None
    succ = sum(k * c for k, c in enumerate(hist))
    fail = sum(c for k, c in enumerate(hist) if k < gamma)
    return succ / (succ + fail) if succ + fail else None
