"""What bench_open_loop.py reports besides its predictions: the machine speed around a block
(bracketed_speed), and where the replay's latency error sits: within a block by the requests in
flight at arrival (by_in_flight), in the engines' work and batches (engine_work), in the passes'
price (pass_pricing), in the jobs (job_time: measured_jobs against the replay's, jobs_recorded)
or between them (measured_cover, replayed_cover: the time a request had nothing on an engine).
Each forward pass counted once: a record's engine_stats hold every pass of its lifetime, shared
with the requests then in flight. open_loop_report.py writes these as results/load_open.md's
paragraphs."""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from benchmarks import bench_load as bl
from lrsim.calib.profile import Profile

# a block's speed is bracketed by its own probe and the next block's when that one was probed
# within this many seconds of the block's last request ending (the same engines, nothing between:
# a sitting's blocks run back to back, the next probe a few seconds after; between sittings the
# gap is minutes to hours). The probe is 4 decode passes of idle engines, a noisy speed (ar's
# round 5 block: probed at 0.36 s, its own-probe replay 23% short of the measured latency,
# results/load_open.json by_block); two probes around a block average it. A block a sitting ends
# on, or followed by a round left out (its probe ran beside other work), keeps its own probe
BRACKET_GAP_S = 120.0


def _probe(block: list[dict]) -> dict:
    return block[0]["run"]["probe_at_start"]


def _end(block: list[dict]) -> float:
    """The block's last request end on the wall clock (time.time()): its probe's start, the
    probe's passes, then the run (load.arrival_s + latency_s on the run's clock)."""
    p = _probe(block)
    return p["t"] + sum(e.get("wall_s", 0.0) for e in p["engines"].values()) \
        + max(r["load"]["arrival_s"] + r["load"]["latency_s"] for r in block)


def bracketed_speed(block: list[dict], level: dict[str, list[dict]],
                    left_out: set = frozenset()) -> tuple[dict, bool]:
    """{engine: {"decode_s", "prefill_s"}}: the mean of the block's own probe and the next probe
    taken in this level (any configuration or round) when that came within BRACKET_GAP_S of the
    block's end and its round is not `left_out`; else its own probe alone. Also whether it was
    bracketed."""
    own, end = _probe(block), _end(block)
    probes = {r["run"]["probe_at_start"]["t"]: (r["run"]["probe_at_start"], int(r["run"]["flags"]["load_round"]))
              for recs in level.values() for r in recs}
    nxt = min((v for t, v in probes.items() if t > own["t"]), key=lambda v: v[0]["t"], default=None)
    ok = nxt is not None and nxt[1] not in left_out and 0 <= nxt[0]["t"] - end <= BRACKET_GAP_S
    pair = [own] + ([nxt[0]] if ok else [])
    return {e: {k: float(np.mean([p["engines"][e][k] for p in pair if e in p["engines"]]))
                for k in ("decode_s", "prefill_s")} for e in own["engines"]}, ok


# requests grouped by how many others were in flight when each arrived (load.in_flight_at_admission)
IN_FLIGHT_BUCKETS = ((0, 1), (2, 3), (4, None))


def by_in_flight(bs: list[list[dict]], reps: list[dict]) -> dict:
    """{"0-1" | "2-3" | "4+": {"requests", "blocks", "mean_latency_s", "replayed_mean_latency_s"}}:
    requests grouped by the others in flight when each arrived, each block's replay first scaled
    to the block's measured mean latency (so a block's speed, which the probe misjudges by as
    much, drops out): which of a block's requests the replay makes short or long."""
    rows = []
    for i, (b, rp) in enumerate(zip(bs, reps)):
        recs = sorted(b, key=lambda r: r["load"]["arrival_s"])
        scale = np.mean([r["load"]["latency_s"] for r in recs]) / np.mean(rp["by_arrival"])
        rows += [(r["load"]["in_flight_at_admission"], r["load"]["latency_s"], x * scale, i)
                 for r, x in zip(recs, rp["by_arrival"])]
    out = {}
    for lo, hi in IN_FLIGHT_BUCKETS:
        sel = [row for row in rows if row[0] >= lo and (hi is None or row[0] <= hi)]
        if sel:
            out[f"{lo}-{hi}" if hi is not None else f"{lo}+"] = {
                "requests": len(sel), "blocks": len({row[3] for row in sel}),
                "mean_latency_s": float(np.mean([row[1] for row in sel])),
                "replayed_mean_latency_s": float(np.mean([row[2] for row in sel]))}
    return out


def pass_pricing(prof: Profile, bs: list[list[dict]]) -> dict:
    """Per engine: the blocks' forward passes, each counted once, as the profile's physical model
    prices them at each block's own probe, minus the measured time (%), all passes and those
    with a prompt's prefill in them: whether a latency error is the passes' price."""
    from lrsim.calib.physical import pass_data, price

    out = {}
    for role in ("target", "draft"):
        t, pred, pre = [], [], []
        for b in bs:
            # the open-loop records carry the run's probe (run.probe_at_start), not one per record
            d = pass_data(b, role, prof.doc.get("probe"), probe="before", probes=False)
            if not len(d):
                continue
            # a record holds every pass of its lifetime, shared with the requests then in flight:
            # one copy of each (a pass's duration, a float to the nanosecond, names it in a block)
            d = d.select(np.unique(d.t, return_index=True)[1])
            t.append(d.t), pred.append(price(prof.doc["latency"][role], d)), pre.append(d.P > 0)
        if not t:
            continue
        t, pred, pre = np.concatenate(t), np.concatenate(pred), np.concatenate(pre)
        out[role] = {k: {"passes": int(m.sum()), "measured_s": float(t[m].sum()),
                         "diff_pct": float(100 * (pred[m].sum() / t[m].sum() - 1))}
                     for k, m in (("all", t >= 0), ("with_prefill", pre)) if m.any()}
    return out


def block_passes(block: list[dict], role: str) -> dict[float, tuple[dict, dict]]:
    """One copy of each forward pass `role`'s engine ran in a block, with a record that holds it:
    a record's engine_stats hold every pass of its lifetime, shared with the requests then in
    flight, and a pass's duration (a float to the nanosecond) names it in a block."""
    return {p["duration_s"]: (p, r) for r in block
            for p in ((r.get("engine_stats") or {}).get(role) or {}).get("forward_passes") or []}


def engine_work(bs: list[list[dict]], owns: list[dict]) -> dict:
    """Per engine, over the blocks: forward passes, busy seconds and sequences run (a pass's
    batch, summed over passes) measured (each pass once) and replayed at each block's own probe,
    and the blocks' makespans: whether the replay does the blocks' work in their time, and in
    batches as large, whatever it does to each request's latency."""
    out = {"makespan_s": {"measured": float(sum(bl.makespan(b) for b in bs)),
                          "replayed": float(sum(o["makespan"] for o in owns))}}
    for role in ("target", "draft"):
        passes = [{d: p for d, (p, _) in block_passes(b, role).items()} for b in bs]
        if any(passes):
            out[role] = {"measured": {"passes": sum(len(x) for x in passes),
                                      "busy_s": float(sum(sum(x) for x in passes)),
                                      "sequences": sum(p["batch_size"] for x in passes for p in x.values())},
                         "replayed": {k: float(sum(o["engines"][role][k] for o in owns))
                                      for k in ("passes", "busy_s", "sequences")}}
    return out


@contextmanager
def jobs_recorded(tail: dict | None = None):
    """Every job the simulator's engines are given while inside, as [(engine name, job, its
    prefill at submission or None)], and {job: simulated time it was cancelled}: the replay's
    work job by job (engine_work's totals, by job). Patches Engine.submit / Engine.cancel for the
    block; the simulator itself keeps no job list (its hot path, docs/simulator.md). `tail` ({engine:
    iterations per job}): a what-if, not a model - each job of that engine, finished or
    cancelled, leaves a sequence in the batch for that many more iterations (a fraction carried
    from job to job), as a stopped or aborted request may stay in a real engine's batch until
    the abort reaches it (unrecorded: per finished and cancelled job); the job itself ends as
    before. The prefill (what the simulator's prefix cache of whole KV blocks leaves:
    kvcache.request_prefill) is kept for the step jobs of an LR tree (tagged with their node,
    each a new engine request whose context holds its prefill) and every draft job; None for
    the others (ar's stream goes on in one request); the engine zeroes a job's own once its
    first pass has run."""
    from lrsim.sim.engine import Engine, Job

    log, cancelled, carry = [], {}, {}
    submit, cancel = Engine.submit, Engine.cancel

    def leave_tail(engine, job, written):
        c = carry.get(engine.name, 0.0) + tail[engine.name]
        n = int(c)
        carry[engine.name] = c - n
        if n:
            submit(engine, Job(engine.env, n, ctx=job.kv_base + written))   # not logged: no job

    def submit_logged(self, job):
        step = getattr(job.tag, "position", None) is not None     # a node of the LR tree
        # a new engine request with its prompt: a tree node's job, or any draft (LR's prompt-
        # only draft too); ar's stream continues one request
        log.append((self.name, job, job.prefill if step or self.name == "draft" else None))
        if tail and tail.get(self.name):
            job.done.callbacks.append(lambda _e, eng=self, j=job: leave_tail(eng, j, j.total))
        return submit(self, job)

    def cancel_logged(self, job):
        live = job.finished is None and not job.cancelled
        if live:
            cancelled[job] = self.env.now
        out = cancel(self, job)
        if live and tail and tail.get(self.name) and job.started is not None:
            leave_tail(self, job, job.total - job.iters_left)    # an admitted job aborted
        return out

    Engine.submit, Engine.cancel = submit_logged, cancel_logged
    try:
        yield log, cancelled
    finally:
        Engine.submit, Engine.cancel = submit, cancel


def replayed_jobs(log: list, cancelled: dict, seeds: int) -> dict:
    """{engine: {"finished" | "cancelled": {"jobs", "tokens", "job_s", "prompted", "prefill"}}}
    of a replay's jobs (jobs_recorded), per replay seed: a job's seconds run from its submission
    to its last iteration (or its cancellation), its tokens are the iterations it ran; its
    prefill, where kept (`prompted` of the jobs), the prompt tokens it was submitted to compute."""
    out: dict = {}
    for name, job, prefill in log:
        if job.finished is not None:
            kind, span, toks = "finished", job.finished - job.submitted, job.total
        elif job in cancelled:
            kind, span = "cancelled", cancelled[job] - job.submitted
            toks = job.total - job.iters_left if job.started is not None else 0
        else:
            continue                      # still queued when the block's last request ended
        row = out.setdefault(name, {}).setdefault(kind, {"jobs": 0.0, "tokens": 0.0, "job_s": 0.0,
                                                          "prompted": 0.0, "prefill": 0.0})
        row["jobs"] += 1 / seeds
        row["tokens"] += toks / seeds
        row["job_s"] += span / seeds
        if prefill is not None:
            row["prompted"] += 1 / seeds
            row["prefill"] += prefill / seeds
    return out


def measured_jobs(block: list[dict]) -> dict:
    """replayed_jobs' figures for the block's records: each step's draft and target jobs and the
    jobs it discarded (finished, not used), and those it cancelled, from their recorded start
    (submission) to end. An ar record's steps are cuts of its one streamed request, so its
    measured "jobs" are steps (the replay's: its requests' jobs); tokens and seconds compare.
    `prefill`: the prompt tokens the engine's prefix cache did not hold (prompt_tokens -
    cached_tokens), over the `prompted` jobs whose span records both (not a cancelled one's)."""
    out: dict = {}
    for r in block:
        for s in r["steps"]:
            jobs = [(role, s[role], "finished") for role in ("draft", "target") if s.get(role)]
            jobs += [(x["kind"], x, "finished") for x in s.get("discarded") or ()]
            jobs += [(x["kind"], x, "cancelled") for x in s.get("cancelled") or ()]
            for role, j, kind in jobs:
                row = out.setdefault(role, {}).setdefault(kind, {"jobs": 0, "tokens": 0, "job_s": 0.0,
                                                                  "prompted": 0, "prefill": 0})
                row["jobs"] += 1
                row["tokens"] += j.get("tokens") or 0
                row["job_s"] += j["end"] - j["start"]
                if j.get("prompt_tokens") is not None and j.get("cached_tokens") is not None:
                    row["prompted"] += 1
                    row["prefill"] += j["prompt_tokens"] - j["cached_tokens"]
    return out


def job_time(measured: list[dict], replayed: list[dict]) -> dict:
    """Summed over blocks, per engine and kind of job: measured and replayed jobs, tokens and
    job-seconds (the time requests spent waiting on that engine, shared passes counted once per
    job): where the replay's shorter latencies come from when its passes and busy time match."""
    out: dict = {}
    for side, docs in (("measured", measured), ("replayed", replayed)):
        for doc in docs:
            for role, kinds in doc.items():
                for kind, row in kinds.items():
                    acc = out.setdefault(role, {}).setdefault(kind, {}).setdefault(
                        side, {"jobs": 0.0, "tokens": 0.0, "job_s": 0.0, "prompted": 0.0, "prefill": 0.0})
                    for k in acc:
                        acc[k] += row.get(k, 0.0)
    return out


def unrecorded(r: dict) -> dict:
    """{engine: (measured sequences - measured jobs' tokens) / measured jobs}: engine work no
    record's token count holds, per job (where the results hold both)."""
    out = {}
    for role, w in r["engine_work_own_probe"].items():
        jobs = r.get("job_time_own_probe", {}).get(role)
        if role == "makespan_s" or not jobs or w["measured"].get("sequences") is None:
            continue
        m = [v["measured"] for v in jobs.values() if v.get("measured")]
        out[role] = (w["measured"]["sequences"] - sum(x["tokens"] for x in m)) / sum(x["jobs"] for x in m)
    return out


def _union_s(spans) -> float:
    """Seconds covered by the union of (start, end) spans."""
    total, reach = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def _cover(latency: float, jobs: list[tuple[str, float, float]], before_run: float = 0.0) -> dict:
    return {"requests": 1, "latency_s": latency, "before_run_s": before_run,
            "any_job_s": _union_s([(a, b) for _, a, b in jobs]),
            "target_job_s": _union_s([(a, b) for role, a, b in jobs if role == "target"])}


def _add(acc: dict, row: dict, w: float = 1.0) -> dict:
    for k, v in row.items():
        acc[k] = acc.get(k, 0.0) + w * v
    return acc


def summed(docs) -> dict:
    """{key: the sum over docs}: blocks' covers (measured_cover, replayed_cover) added up."""
    out: dict = {}
    for d in docs:
        _add(out, d)
    return out


def measured_cover(block: list[dict]) -> dict:
    """Summed over the block's requests (s): latency from admission; the time one of its jobs was
    on an engine (any job, and a target job: submitted, not yet finished or cancelled); the rest
    is time the request had nothing on an engine (a verdict awaited, the scheduler's reaction)
    and, within it, `before_run_s`: from admission to the scheduler's start (the prompt built
    and tokenised; a block's first request also loads the tokenizer, lrreal/collect.py run_one).
    Spans are on the scheduler's clock (its start = 0)."""
    out: dict = {}
    for r in block:
        jobs = [(role, s[role]["start"], s[role]["end"]) for s in r["steps"]
                for role in ("draft", "target") if s.get(role)]
        jobs += [(x["kind"], x["start"], x["end"]) for s in r["steps"]
                 for x in (s.get("discarded") or []) + (s.get("cancelled") or [])]
        since_admission = r["load"]["latency_s"] - r["load"]["queue_s"]
        _add(out, _cover(since_admission, jobs, max(0.0, since_admission - r["wall_time_s"])))
    return out


def replayed_cover(worlds: list, log: list, cancelled: dict, over: float) -> dict:
    """measured_cover's figures for a replay (jobs_recorded's log), per replay seed; a request's
    latency holds the profile's per-request overhead `over`, which no job covers."""
    spans: dict = {}
    for name, job, _ in log:
        end = job.finished if job.finished is not None else cancelled.get(job)
        if end is not None and job.group is not None:
            spans.setdefault((id(job.done.env), job.group), []).append((name, job.submitted, end))
    out: dict = {}
    for w in worlds:
        for rec in w.records:
            _add(out, _cover(rec.finish - rec.arrival + over, spans.get((id(w.env), rec.rid), [])),
                 1 / len(worlds))
    return out


def collector_stalls(block: list[dict], slack_s: float = 1.0) -> list[tuple[float, int]]:
    """Seconds the target engine stood idle right after each request's end while another request
    was in flight (the gap between passes that the end falls in, from the end on; 0 where the
    engine ran on within `slack_s`): the collector's stall. Until lrreal/load_corpus.py opened one writer per
    block, each finished record reopened the trace file and re-validated every record in it
    inside the event loop, so no request could start a job meanwhile. Passes from the records'
    engine_stats (each once: its duration names it), on the block's clock (the records' t0 =
    arrival + latency - wall time). [(stall s, requests then in flight, each held that long)]."""
    def t0(r):   # the block's clock at the record's own start
        return r["load"]["arrival_s"] + r["load"]["latency_s"] - r["wall_time_s"]

    spans = sorted((t0(r) + p["start"], t0(r) + p["start"] + d)
                   for d, (p, r) in block_passes(block, "target").items())
    life = [(r["load"]["arrival_s"], r["load"]["arrival_s"] + r["load"]["latency_s"]) for r in block]
    out = []
    for e in sorted(end for _, end in life):
        others = [end for a, end in life if a < e < end]
        if not others:
            continue                  # nothing else in flight: the engine had nothing to do
        after = [s for s, _ in spans if s >= e - 1e-6]
        if not after:
            continue
        busy = max((x for s, x in spans if s < e - 1e-6), default=e)   # a pass running at e
        # idle from the end (or the pass running then) to the next pass, or to the end of what
        # was in flight (it may end without another pass)
        gap = min(after[0], max(others)) - max(e, busy)
        out.append((gap if gap > slack_s else 0.0, len(others)))
    return out


def stall_summary(bs: list[list[dict]]) -> dict:
    """collector_stalls over the blocks: request ends with another in flight, the mean and the
    largest stall, the mean by round, and the request-seconds the stalls held (each in-flight request for the stall)
    as a share of the blocks' summed latencies: roughly how much of the measured latency is the
    collector's, not the engines' or the scheduler's."""
    rows = {int(b[0]["run"]["flags"]["load_round"]): collector_stalls(b) for b in bs}
    flat = [x for v in rows.values() for x in v]
    held = sum(s * n for s, n in flat)
    lat = sum(r["load"]["latency_s"] for b in bs for r in b)
    return {"ends": len(flat), "mean_s": held and sum(s for s, _ in flat) / len(flat),
            "max_s": max((s for s, _ in flat), default=0.0),
            "by_round_mean_s": {str(k): (sum(s for s, _ in v) / len(v) if v else 0.0) for k, v in sorted(rows.items())},
            "held_request_s": held, "share_of_latency": held / lat if lat else 0.0}
