"""Trace-driven workloads: replay the steps and verdicts of real traces (traces/README.md, v1).

Reading uses the trace contract's validating reader `lrcore.traces.read_traces` (one reader for
the whole toolkit; the real backend writes with the same module). This module is the only
simulator module that knows the trace format.

Mapping (one record -> one request):
    steps[i].tokens                   -> the length of step i (the simulated request's steps)
    prompt_tokens (optional)          -> prompt length (default DEFAULT_PROMPT_TOKENS)
    steps[i].verify.verdict / source  -> the verdict the first time position i is judged (replay);
                                         later re-drafts of the same position, and positions
                                         without a recorded verdict, draw from the record's
                                         step_acceptance.by_depth rate at that depth (pooled
                                         over the file when the record has none)
    sd.accepted / sd.drafted          -> per-token acceptance of token-level SD (pooled fallback)
    steps[i-1].text ends in a stop    -> can_draft(req, i): the real scheduler's boundary rule
      string (run.flags.step_stop,       (drafting only after a context on a step boundary); the
      default "\n\n"; run.flags.         context of 0 steps is the chat prompt, which is not in the
      boundary_rule)                     record: on a boundary only when the real run drafted step 0
                                         (steps[0] has a draft or a verdict; never for "\n\n" and a
                                         chat prompt ending in "assistant\n")
    steps[i].draft/target.tokens,     -> spec_tokens(req, kind, position, root_position): how long
      steps[q].cancelled/discarded       a draft or target job for `position` ran in the real run:
                                         on the committed path the judged draft's / the target
                                         step's own length; below the first rejected position q,
                                         the recorded discarded/cancelled job at that depth (in
                                         order for lr-sync, which records depth 0). None: unknown
                                         (the policy then uses the committed step's length)
    run.flags.judge_timing            -> judge_timing(req): when the real lr-async run judged a draft:
      (default "deferred")               "eager" as soon as it and its parent's target step existed,
                                         "deferred" once its parent was the root (records made
                                         before the option existed were deferred)
    steps[i].draft/target.            -> spec_prefill(req, kind, position, root_position, after_draft):
      prompt_tokens - cached_tokens      the tokens the engine computed for that job on the
                                         committed path (vLLM's prefix cache as it was: it can
                                         hold blocks an earlier run of the same
                                         problem left); the first step's draft spans ->
                                         draft_prompt_cached (the drafter's own prompt hits)
    steps[i].target start/end,        -> spec_rounds(req, position, root_position, tokens), opt-in
      engine_stats.target.               (recorded_sd_rounds): the target passes (token-level SD
      forward_passes                     rounds) the committed path's target job for step i ran
                                         in (_span_passes, its prefilling pass included), its own
                                         SD rate; None off that path (the SD stream draws)
"""
from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from lrcore.errors import UserError
from lrcore.traces import in_flight

from .tokensd import AcceptedLengths
from .workload import RequestSpec

DEFAULT_PROMPT_TOKENS = 300
DEFAULT_ALPHA = 0.5        # when a file has no step acceptance at all
DEFAULT_STEP_STOP = ("\n\n",)  # records without run.flags.step_stop were cut at a blank line
DEFAULT_JUDGE_TIMING = "deferred"  # records without run.flags.judge_timing judged only at the root


def _read(path: Path) -> list[dict]:
    from lrcore.traces import read_traces  # validates; imported here to keep `lr --help` light

    return read_traces(path, strict=True)  # a torn last line is an error here, not a warning


def _spec_lengths(steps: list[dict]) -> dict:
    """Per step: the committed draft/target job lengths, and the discarded or cancelled jobs
    recorded when it was decided, by (kind, depth) (the longest) and in order for depth 0; and
    the committed jobs' recorded prefill (spec_prefill), with whether their context ended in a
    draft (the previous step was drafted and accepted)."""
    committed, spec, prefill, off_path = [], [], [], []
    for i, s in enumerate(steps):
        committed.append({k: int(s[k]["tokens"]) for k in ("draft", "target")
                          if isinstance(s.get(k), dict) and s[k].get("tokens")})
        after_draft = i > 0 and steps[i - 1].get("source") == "draft"
        prefill.append({k: (c[0] - c[1], after_draft) for k in ("draft", "target")
                        if (c := span_cache(s.get(k))) is not None})
        by_depth: dict = {}
        ordered: dict = {}
        pre_by_depth: dict = {}           # the prefill of the job by_depth takes (opt-in: spec_prefill)
        for e in list(s.get("cancelled") or []) + list(s.get("discarded") or []):
            n, d = int(e.get("tokens") or 0), int(e.get("depth") or 0)
            if n <= 0:
                continue
            if d > 0:
                key = (e["kind"], d)
                if n > by_depth.get(key, 0):
                    by_depth[key] = n
                    c = span_cache(e)
                    pre_by_depth[key] = None if c is None else c[0] - c[1]
            else:
                ordered.setdefault(e["kind"], []).append(n)
        spec.append((by_depth, ordered))
        off_path.append(pre_by_depth)
    return {"committed": committed, "spec": spec, "prefill": prefill, "off_path_prefill": off_path}


def _past_rejection(req, position: int, root_position: int) -> int | None:
    """The first position from the root up to `position` whose verdict was not an acceptance
    (the rejection the job for `position` lies past), or None: the job is on the committed path."""
    v = req.verdicts
    return next((i for i in range(root_position, min(position, len(v))) if v[i] is not True), None)


def _depth_key(kind: str, position: int, q: int) -> tuple[str, int]:
    """The (kind, depth) under which the record keeps the job for `position` past the rejection at
    `q` (a draft's depth counts the step it drafts from: one more than a target's)."""
    return kind, position - q + (kind == "draft")


def _step_stops(rec: dict) -> tuple[str, ...]:
    """The stop strings the record's steps were cut at (run.flags.step_stop; default "\n\n")."""
    stops = ((rec.get("run") or {}).get("flags") or {}).get("step_stop")
    if isinstance(stops, str):
        stops = [stops]
    if isinstance(stops, (list, tuple)):
        stops = tuple(s for s in stops if isinstance(s, str) and s)
        if stops:
            return stops
    return DEFAULT_STEP_STOP


def _judge_timing(rec: dict) -> str:
    """When the record's run judged a draft (run.flags.judge_timing; default "deferred")."""
    t = ((rec.get("run") or {}).get("flags") or {}).get("judge_timing")
    return t if t in ("eager", "deferred") else DEFAULT_JUDGE_TIMING


def step_drafted(step: dict) -> bool:
    """Did the real run compare a draft at this step's position?"""
    return isinstance(step.get("draft"), dict) or isinstance(step.get("verify"), dict)


def _target_passes(rec: dict) -> list[dict]:
    return ((rec.get("engine_stats") or {}).get("target") or {}).get("forward_passes") or []


def proposal_counts(rec: dict) -> tuple[int, int] | None:
    """(SD passes that verified a proposal, target decode passes per sequence) over the record's
    window, both as the engine counted them (at N in flight: every request's); None without SD
    counters or passes. Their ratio is the proposal rate of an n-gram drafter (tokensd.py)."""
    sd = rec.get("sd") or {}
    drafts = sd.get("num_drafts")
    if drafts is None:
        drafts = sum(sd.get("accepted_length_hist") or [])
    seqs = sum(int(p.get("decode_requests") or 0) for p in _target_passes(rec))
    if not drafts or not seqs:
        return None
    return int(drafts), seqs


SPAN_END_SLACK_S = 1e-3    # a pass's end is logged just after its output: ends this late still count


def target_spans(rec: dict) -> list[tuple[str, dict]]:
    """(kind, span) of every timed target generation of the record, each an engine request of its
    own. Kinds: "first" (the committed step right after the prompt), "committed" (another step the
    target wrote), "verified" (its span of a step whose draft was judged), "off the path" (the
    cancelled and discarded ones)."""
    out = []
    for i, s in enumerate(rec.get("steps") or []):
        if isinstance(s.get("target"), dict):
            kind = ("first" if i == 0 else "committed") if s.get("source") == "target" else "verified"
            out.append((kind, s["target"]))
        out += [("off the path", e) for e in list(s.get("cancelled") or []) + list(s.get("discarded") or [])
                if e.get("kind") == "target"]
    return [(k, sp) for k, sp in out if sp.get("start") is not None and sp.get("end") is not None]


def _timed_passes(rec: dict) -> tuple[list[dict], list[float]]:
    """The record's timed target passes sorted by start, and their starts (_span_passes' input)."""
    passes = sorted((p for p in _target_passes(rec) if "start" in p), key=lambda p: p["start"])
    return passes, [float(p["start"]) for p in passes]


def _span_passes(passes: list[dict], starts: list[float], span: dict) -> list[dict]:
    """The engine passes one target request ran in (`passes` sorted by start, `starts` theirs):
    from its prefilling pass (the first pass at or after its start that prefills: a pass begun,
    or scheduled, before the engine had the request does not hold it) to the last one that ended
    by its end; a request runs in every pass between (continuous batching, no preemption)."""
    lo, end = float(span["start"]), float(span["end"]) + SPAN_END_SLACK_S
    mine = []
    for p in passes[bisect_left(starts, lo):]:
        if float(p["start"]) + float(p["duration_s"]) > end:
            break                 # the engine's passes run one after another: the rest end later
        if mine or p.get("prefill_requests"):
            mine.append(p)
    return mine


def committed_span_passes(rec: dict) -> list[tuple[int, int] | None]:
    """Per kept step (tokens > 0): (tokens, engine passes) of its committed-path target span, the
    target's job for that position from the root it was launched under (target_spans' "first",
    "committed" and "verified"), its prefilling pass included (_span_passes); None where the step
    has no timed span or it ran in no timed pass. The passes are the span's own SD rounds at its
    own rate, which differs by kind of span (benchmarks/results/sd_rate_by_span.md, per decode
    pass: the first step 1.11-1.31 tokens, all spans 1.58-1.68). As own_tokens_per_pass, it
    assumes a request enters the engine at the first prefilling pass after its span starts and
    stays in every pass to its end: at N in flight that pass may be another request's, and a
    request that waited for a batch slot counts its wait as passes (the replay's engine then
    queues it too)."""
    passes, starts = _timed_passes(rec)
    out: list[tuple[int, int] | None] = []
    for s in rec.get("steps") or []:
        if not s.get("tokens", 0) > 0:
            continue
        span, got = s.get("target"), None
        if isinstance(span, dict) and span.get("start") is not None and span.get("end") is not None:
            n, mine = int(span.get("tokens") or 0), _span_passes(passes, starts, span)
            got = (n, len(mine)) if n and mine else None
        out.append(got)
    return out


def _sd_k2(rec: dict) -> int | None:
    """Positions a proposing pass verified in the record's run (run.flags.num_speculative_tokens
    + 1); None without."""
    n = ((rec.get("run") or {}).get("flags") or {}).get("num_speculative_tokens")
    return int(n) + 1 if n else None


def own_tokens_per_pass(rec: dict) -> float | None:
    """The record's own token-level SD rate: its target requests' tokens per decode pass they ran
    in (_span_passes), each request's prefilling pass and the one token it samples left out, as
    proposal_counts counts decode passes only: the window rate's like (a block's pooled own rate is
    its longest record's window rate within 1% on traces/load-cold-epyc-f25m17-b36). At N in
    flight `sd` and proposal_counts are the engine's, every request's over the record's window;
    the requests' own rates differ (there, 6 in flight, lr+sd-d3-emb: 1.53-1.96 in a block whose
    window rates are 1.69-1.70). Assumes a request enters the engine at the first prefilling pass
    after its span starts and stays in every pass to its end (no queueing, no chunked prefill, no
    preemption): one that waited would read too low. None without SD, target spans or timed
    passes."""
    if not rec.get("sd"):
        return None
    tokens = decode = 0
    for _, n, m in span_decodes(rec):
        tokens += n
        decode += m
    return tokens / decode if decode > 0 else None


def span_decodes(rec: dict) -> list[tuple[str, int, int]]:
    """(kind, tokens, decode passes) of each target span (target_spans) that ran in a timed pass:
    its tokens and passes (_span_passes) less its prefilling pass and the one token it sampled."""
    passes, starts = _timed_passes(rec)
    out = []
    for kind, span in target_spans(rec):
        n, mine = int(span.get("tokens") or 0), _span_passes(passes, starts, span)
        if n and mine:            # mine[0] prefilled and sampled the first token
            out.append((kind, n - 1, len(mine) - 1))
    return out


def span_cache(span: dict | None) -> tuple[int, int] | None:
    """(prompt tokens, of them prefix-cache hits) of one generation as its engine counted them
    (vLLM's num_cached_tokens, recorded per span since schema v1's optional fields); None when the
    span does not carry them (older records, cancelled work)."""
    if not isinstance(span, dict) or span.get("prompt_tokens") is None or span.get("cached_tokens") is None:
        return None
    return int(span["prompt_tokens"]), int(span["cached_tokens"])


def prompt_cached(rec: dict) -> int | None:
    """Prompt tokens the target's prefix cache already held when the record started (its prompt
    seen before, or a shared template; vLLM caches whole blocks). Measured where the first step's
    target span records it; otherwise inferred: the prompt less the mean prefill of the engine's
    first passes, up to the N prompt prefills of its block (N requests in flight start together;
    1 alone). None when neither says."""
    steps = rec.get("steps") or []
    first = span_cache(steps[0].get("target")) if steps else None
    if first is not None:
        return first[1]
    prompt = int(rec.get("prompt_tokens") or 0)
    n = in_flight(rec)
    tokens = reqs = 0
    for p in _target_passes(rec):
        if not p.get("prefill_requests"):
            break                 # a pass without prefill before all N prompts: not a start
        tokens += int(p.get("prefill_tokens") or 0)
        reqs += int(p["prefill_requests"])
        if reqs >= n:
            return max(0, prompt - round(tokens / reqs))
    return None


def draft_prompt_cached(rec: dict) -> int | None:
    """Prompt tokens the drafter's prefix cache held when the record started, where a draft span
    of its first step records it: the drafter's first request reads the prompt alone (the
    prompt-only request the boundary rule leaves it, kept among the step's discarded work, or a
    draft of the first step). None when no such span says (older records, AR): the drafter is
    then taken to hold what the target does. The two differ where a corpus reruns its problems
    on the same engines: AR has put the prompt in the target's cache, never in the drafter's."""
    steps = rec.get("steps") or []
    if not steps:
        return None
    s = steps[0]
    prompt = rec.get("prompt_tokens")
    if prompt is None:
        first = span_cache(s.get("target"))
        prompt = first[0] if first is not None else None
    spans = [x for x in s.get("discarded") or () if x.get("kind") == "draft"] + [s.get("draft")]
    for span in spans:
        c = span_cache(span)
        if c is not None and prompt is not None and c[0] == int(prompt):
            return c[1]
    return None


def proposal_rate(records: list[dict]) -> float | None:
    """proposal_counts pooled over records: proposals over decode passes (None: nothing counted)."""
    counts = [c for c in map(proposal_counts, records) if c]
    seqs = sum(n for _, n in counts)
    return min(1.0, sum(d for d, _ in counts) / seqs) if seqs else None


def record_rng(seed: int, rec: dict, index: int) -> random.Random:
    """The replay's random stream for one record (SD's draws, verdicts the record does not hold):
    seeded by the record's identity, so every record draws its own numbers, the same in every
    workload it is replayed in. (Seeded by its index alone, every one-record block and every
    `lr replay` of a single record drew the same stream: the replay's SD luck was one draw
    repeated, not averaged over the blocks.)"""
    key = f"{seed}:{rec.get('mode')}:{rec.get('problem_id')}:{rec.get('sample', 0)}:{index}"
    return random.Random(key)       # a str seed is hashed with SHA-512: stable across processes


def _choices(rec: dict) -> tuple[list[int], list] | None:
    """An adaptive record's decisions by root position, (positions, Decisions) sorted; None for
    a record without them (a static mode's)."""
    decisions = [d for d in (rec.get("adaptive") or {}).get("decisions") or []
                 if isinstance(d, dict) and "position" in d]
    if not decisions:
        return None
    from lrcore.adaptive import Decision
    try:
        ordered = sorted(((int(d["position"]), i, Decision.from_dict(
            {k: v for k, v in d.items() if k != "position"})) for i, d in enumerate(decisions)),
            key=lambda t: t[:2])
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"trace record {rec.get('problem_id')}: an adaptive decision that cannot "
                        f"be read ({type(e).__name__}: {e})") from None
    return [p for p, _, _ in ordered], [d for _, _, d in ordered]


def _run_key(rec: dict) -> tuple:
    """Which run a record came from, as far as the record says: its block's round and the probe
    its run took at the start (each `lr collect` run of several requests takes one)."""
    run = rec.get("run") or {}
    return ((run.get("flags") or {}).get("load_round"), (run.get("probe_at_start") or {}).get("t"))


def _verdict(step: dict):
    if step.get("source") == "draft":
        return True
    v = step.get("verify")
    return v.get("verdict") if isinstance(v, dict) else None


@dataclass
class TraceWorkload:
    records: list[dict]
    source: str = "trace"
    rate: float | None = None
    seed: int = 0
    # draw SD's accepted lengths from each record's histogram (tokensd.AcceptedLengths) instead of
    # Geometric(token_alpha): opt-in, it moved the replay's SD speed by under 3%
    # (benchmarks/results/plan_gap_histogram.md against plan_gap.md)
    sd_lengths: bool = False
    # replay the records' own arrivals (load.arrival_s, from the earliest): an open-loop run's
    # Poisson arrivals; off, every record arrives at t = 0 (one request alone, or a closed block)
    arrivals: bool = False
    # an adaptive record (lr-adaptive, lr+sd-adaptive) replays the depth, width and k2 its run
    # chose at each root (its `adaptive.decisions`), as its verdicts and step lengths replay what
    # happened; off, the simulator's lr-adaptive decides afresh within the recorded bounds
    recorded_decisions: bool = True
    # deciding afresh: start the simulator's lr-adaptive from what the recorded run's Estimator
    # held at the first decision of the records (adaptive_prior), as the real backend carries
    # its estimates from problem to problem; off, from the neutral prior
    carried_prior: bool = False
    # price a job off the committed path (after a rejected draft) by the prefill the record counts
    # for the discarded or cancelled job of that depth, where it counts one, instead of the prefix
    # cache's blocks (kvcache.request_prefill), which miss what the engine's other requests left
    # there (the target's own step, begun with the draft's first tokens); opt-in, a diagnosis
    # (benchmarks/bench_load.py --off-path-prefill)
    off_path_prefill: bool = False
    # run a committed-path target job of an SD record in the passes its recorded span ran in
    # (spec_rounds: the span's own SD rate), not in rounds drawn at the record's one rate: the
    # rate differs by kind of span, the first step's the slowest, and the committed path sets
    # when a request ends (docs/load.md, "lr+sd's SD rate by kind of span"); opt-in
    # (benchmarks/bench_load.py --recorded-sd-rounds): "committed" every such job, "first" the
    # first step's only (the kind a profile can price apart), "" none
    recorded_sd_rounds: str = ""
    RECORDED_SD_ROUNDS = ("", "committed", "first")
    _pooled: dict = field(default_factory=dict, repr=False)
    _carried: dict = field(default_factory=dict, repr=False)    # _first_adaptive, once

    @classmethod
    def from_file(cls, path: str | Path, mode: str | None = None, seed: int = 0,
                  arrivals: bool = False) -> "TraceWorkload":
        p = Path(path)
        recs = [r for r in _read(p) if mode is None or r.get("mode") == mode]
        recs = [r for r in recs if any(s.get("tokens", 0) > 0 for s in r.get("steps", []))]
        if not recs:
            raise UserError(f"{p}: no trace record with steps" + (f" in mode {mode!r}" if mode else ""))
        return cls(recs, str(p), seed=seed, arrivals=arrivals)

    def __post_init__(self):
        if self.recorded_sd_rounds not in self.RECORDED_SD_ROUNDS:
            raise UserError(f"recorded_sd_rounds must be one of {', '.join(map(repr, self.RECORDED_SD_ROUNDS))}, "
                            f"got {self.recorded_sd_rounds!r}")
        prop: dict[int, list[int]] = {}
        hist: dict[int, int] = {}
        drafted = accepted = 0
        for r in self.records:
            for d, (pp, aa) in ((r.get("step_acceptance") or {}).get("by_depth") or {}).items():
                pa = prop.setdefault(int(d), [0, 0])
                pa[0] += pp
                pa[1] += aa
            sd = r.get("sd") or {}
            drafted += sd.get("drafted", 0)
            accepted += sd.get("accepted", 0)
            for k, c in enumerate(sd.get("accepted_length_hist") or []):
                hist[k] = hist.get(k, 0) + c
        self._pooled = {"by_depth": {d: a / p for d, (p, a) in prop.items() if p},
                        "alpha2": accepted / drafted if drafted else 0.0,
                        "lengths": AcceptedLengths.from_hist([hist.get(k, 0) for k in range(len(hist))]),
                        "hit": proposal_rate(self.records) or 1.0}

    def arrival_times(self) -> list[float]:
        """Each record's arrival (s): its recorded load.arrival_s less the earliest (`arrivals`),
        else 0. A record without one (collected one at a time) arrives at the earliest. The
        records must come from one run: each run's clock starts at 0, so the rounds of a corpus
        file (or a resumed run) would be stacked onto one another."""
        if not self.arrivals:
            return [0.0] * len(self.records)
        runs = {_run_key(r) for r in self.records if r.get("load")}
        if len(runs) > 1:
            raise UserError(f"{self.source}: arrivals replay one run's recorded arrivals, but these "
                            f"records come from {len(runs)} runs (load_round / probe_at_start); "
                            "select one run's records")
        t = [(r.get("load") or {}).get("arrival_s") for r in self.records]
        t0 = min((float(x) for x in t if x is not None), default=0.0)
        return [0.0 if x is None else float(x) - t0 for x in t]

    def requests(self) -> list[RequestSpec]:
        out = []
        for i, (r, t) in enumerate(zip(self.records, self.arrival_times())):
            steps = [s["tokens"] for s in r["steps"] if s.get("tokens", 0) > 0]
            req = RequestSpec(i, int(r.get("prompt_tokens") or DEFAULT_PROMPT_TOKENS), steps, t,
                              record_rng(self.seed, r, i), prompt_cached=prompt_cached(r) or 0,
                              draft_prompt_cached=draft_prompt_cached(r))
            req.trace = r                        # type: ignore[attr-defined]
            req.replayed = set()                 # type: ignore[attr-defined]
            kept = [s for s in r["steps"] if s.get("tokens", 0) > 0]
            req.verdicts = [_verdict(s) for s in kept]  # type: ignore[attr-defined]
            rule = ((r.get("run") or {}).get("flags") or {}).get("boundary_rule", True) is not False
            # boundary[i]: may a draft follow the context of the first i steps
            stops = _step_stops(r)
            req.boundary = ([bool(kept) and step_drafted(kept[0])]  # type: ignore[attr-defined]
                            + [str(s.get("text", "")).endswith(stops) for s in kept]
                            if rule and all("text" in s for s in kept) else None)
            req.spec = _spec_lengths(kept)  # type: ignore[attr-defined]
            req.judge_timing = _judge_timing(r)  # type: ignore[attr-defined]
            req.choices = _choices(r) if self.recorded_decisions else None  # type: ignore[attr-defined]
            req.sd_spans = (committed_span_passes(r)  # type: ignore[attr-defined]
                            if self.recorded_sd_rounds and r.get("sd") else None)
            req.sd_k2 = _sd_k2(r)  # type: ignore[attr-defined]
            out.append(req)
        # in arrival order (files are written in completion order): a streamed run admits
        # requests by one process walking the list
        return sorted(out, key=lambda q: q.arrival) if self.arrivals else out

    def recorded_choice(self, req, position: int):
        """The decision (lrcore.adaptive.Decision) the recorded run's adaptive policy made at a
        root of `position` committed steps: its last one at or before that position (a replay's
        roots are the recorded run's positions, each decided there); None without recorded
        decisions, where the simulator's policy decides."""
        ch = getattr(req, "choices", None)
        if not ch:
            return None
        i = bisect_right(ch[0], position) - 1
        return ch[1][i] if i >= 0 else None

    def adaptive_prior(self):
        """With `carried_prior` (and deciding afresh): the estimates (lrcore.adaptive.Estimates)
        the recorded run's Estimator held at its first decision for these records, that of the
        record admitted first (load.admitted_s, 0 for a record without one; then file order):
        the real backend shares one Estimator across the problems of a run, so a block's first
        decision starts from what the problems before it taught the run. A run's first problem
        (`adaptive.learned_from` 0) carries the run's prior as recorded (`adaptive.prior`: the
        neutral one rescaled at its first timed step, as the real run did, the simulator not
        rescaling; or the estimates `--adaptive-prior` carried in). None: the neutral prior."""
        first = self._first_adaptive()
        if first is None:
            return None
        rec, decision = first
        a = rec["adaptive"]
        if a.get("learned_from") == 0 and isinstance(a.get("prior"), dict):
            from lrcore.adaptive import Estimates
            try:
                return Estimates.from_dict(a["prior"])
            except (KeyError, TypeError, ValueError) as e:
                raise UserError(f"trace record {rec.get('problem_id')}: adaptive.prior cannot be "
                                f"read ({type(e).__name__}: {e})") from None
        return decision.estimates

    def adaptive_config(self):
        """With `carried_prior`: the knobs of the recorded run's decision rule
        (lrcore.adaptive.AdaptiveConfig from the first record's `adaptive.config`; a knob it does
        not name keeps today's default), so that a replay deciding afresh weighs as the run did.
        None: the simulator's own (policies/lr_adaptive.adaptive_config)."""
        first = self._first_adaptive()
        conf = (first[0]["adaptive"].get("config") if first is not None else None)
        if not isinstance(conf, dict):
            return None
        from dataclasses import fields

        from lrcore.adaptive import AdaptiveConfig
        known = {f.name for f in fields(AdaptiveConfig)}
        kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in conf.items() if k in known}
        try:
            return AdaptiveConfig(**kw)
        except (TypeError, ValueError) as e:
            raise UserError(f"trace record {first[0].get('problem_id')}: adaptive.config cannot "
                            f"be read ({type(e).__name__}: {e})") from None

    def _first_adaptive(self):
        """(record, its first Decision) of the adaptive record admitted first, with
        `carried_prior` while deciding afresh; None otherwise or without adaptive records."""
        if self.recorded_decisions or not self.carried_prior:
            return None
        if "first" not in self._carried:
            firsts = []
            for i, r in enumerate(self.records):
                ch = _choices(r)
                if ch:
                    firsts.append((float((r.get("load") or {}).get("admitted_s") or 0.0), i,
                                   (r, ch[1][0])))
            self._carried["first"] = min(firsts, key=lambda t: t[:2])[2] if firsts else None
        return self._carried["first"]

    def can_draft(self, req, position: int) -> bool:
        b = getattr(req, "boundary", None)
        return True if b is None or position >= len(b) else b[position]

    def judge_timing(self, req) -> str:
        return getattr(req, "judge_timing", DEFAULT_JUDGE_TIMING)

    def spec_tokens(self, req, kind: str, position: int, root_position: int) -> int | None:
        """Recorded length of the `kind` job ("draft" or "target") for step `position`, launched
        while the committed context held `root_position` steps (see the module docstring)."""
        spec = getattr(req, "spec", None)
        if spec is None or position >= len(spec["committed"]):
            return None
        q = _past_rejection(req, position, root_position)
        if q is None:
            return spec["committed"][position].get(kind)
        by_depth, ordered = spec["spec"][q]
        n = by_depth.get(_depth_key(kind, position, q))
        if n is None:
            seq = ordered.get(kind, [])
            k = position - q - 1
            n = seq[k] if 0 <= k < len(seq) else None
        return n

    def spec_prefill(self, req, kind: str, position: int, root_position: int,
                     after_draft: bool) -> int | None:
        """The prompt tokens the real engine computed for the `kind` job of step `position`
        (its span's prompt_tokens - cached_tokens: vLLM's prefix cache as it was), where the
        record counts them and the replay's job is the recorded one: on the committed path (no
        rejection between the root and `position`) and with a context that ends as the
        recorded one's did (`after_draft`: in a draft, not in a target step). None otherwise:
        the policy then prices the prefix cache (kvcache.request_prefill). The recorded count
        holds what no model of one request's tokens does: blocks another request put there -
        the same problem's contexts an earlier run left on the same engines,
        or a target step that began with the draft's own first tokens."""
        spec = getattr(req, "spec", None)
        if spec is None or position >= len(spec["prefill"]):
            return None
        q = _past_rejection(req, position, root_position)
        if q is not None:
            # off the committed path: the count of the job whose length spec_tokens takes, whose
            # context ended in the rejected draft or a deeper one (after_draft)
            if not self.off_path_prefill or not after_draft:
                return None
            return spec["off_path_prefill"][q].get(_depth_key(kind, position, q))
        got = spec["prefill"][position].get(kind)
        return got[0] if got is not None and got[1] == after_draft else None

    def spec_rounds(self, req, position: int, root_position: int, tokens: int, k2: int) -> int | None:
        """With recorded_sd_rounds: the target passes the recorded run's target job for step
        `position` ran in (committed_span_passes), where the replay's job is that one: on the
        committed path from a root of `root_position` steps ("first": step 0's only), at the
        record's SD length `k2`. Scaled to `tokens` if its length differs; at least 1. None
        otherwise (off the path, no SD, no timed span, another k2): the job's rounds are drawn
        at the record's rate."""
        spans = getattr(req, "sd_spans", None)
        if not spans or position >= len(spans) or spans[position] is None:
            return None
        if k2 != getattr(req, "sd_k2", None):
            return None
        if self.recorded_sd_rounds == "first" and position:
            return None
        if _past_rejection(req, position, root_position) is not None:
            return None
        n, passes = spans[position]
        return max(1, round(passes * tokens / n)) if tokens != n else passes

    def _rate(self, req, depth: int) -> float:
        by = {int(d): (a / p if p else None)
              for d, (p, a) in ((req.trace.get("step_acceptance") or {}).get("by_depth") or {}).items()}
        for table in (by, self._pooled["by_depth"]):
            if table:
                if table.get(depth) is not None:
                    return table[depth]
                near = max((d for d in table if d <= depth and table[d] is not None), default=None)
                if near is not None:
                    return table[near]
        return DEFAULT_ALPHA

    def step_accept(self, req, position: int, depth: int) -> bool:
        if position not in req.replayed and position < len(req.verdicts):
            req.replayed.add(position)
            v = req.verdicts[position]
            if v is not None:
                return bool(v)
        return req.rng.random() < self._rate(req, depth)

    def token_hit(self, req) -> float:
        """P(an SD round carries a proposal): the record's own rate, else the file's (1: always)."""
        return proposal_rate([req.trace]) or self._pooled["hit"]

    def token_alpha(self, req) -> float:
        sd = req.trace.get("sd") or {}
        if sd.get("drafted"):
            return sd["accepted"] / sd["drafted"]
        return self._pooled["alpha2"]

    def token_lengths(self, req) -> AcceptedLengths | None:
        """With sd_lengths, SD's accepted lengths per proposing pass: the record's own histogram,
        else the file's (tokensd.AcceptedLengths); None (Geometric(token_alpha)) without, or where
        none was recorded."""
        if not self.sd_lengths:
            return None
        own = AcceptedLengths.from_hist((req.trace.get("sd") or {}).get("accepted_length_hist"))
        return own or self._pooled["lengths"]
