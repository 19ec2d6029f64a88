"""The simulator's fast paths give the values of the code they replace, bit for bit: the pure-Python
interpolation of Tabulated latencies (np.interp on scalars was a hot spot) and the incremental
exact KV usage of an engine (KVCache.current / at / held_total / peek against KVCache.usage and
KVCache.tally over the running jobs)."""
import math
import random

import numpy as np
import pytest

from lrsim.sim.build import Options, build
from lrsim.sim.engine import Engine
from lrsim.sim.kvcache import held
from lrsim.sim.latency import Tabulated, _np_interp
from lrsim.sim.runner import simulate


def _reference_forward(t: Tabulated, decode_tokens, prefill_tokens, seqs, context):
    """Tabulated.forward as it was, numpy on scalars."""
    def interp(x, xs, ys):
        # written apart from latency.py's: proportional through one point; past the last point
        # the last segment's slope goes on (never downwards)
        xs, ys = np.asarray(xs, float), np.asarray(ys, float)
        if xs.size == 1:
            return float(ys[0] * (x / xs[0])) if xs[0] > 0 else float(ys[0])
        if x > xs[-1]:
            return float(ys[-1] + (x - xs[-1]) * max(0.0, (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])))
        return float(np.interp(x, xs, ys))

    n = decode_tokens + prefill_tokens
    if prefill_tokens and n > t._max_decode and len(t._pre[0]):
        return t.overhead_s + interp(n, *t._pre)
    vals = [interp(max(n, 1), xs, ys) for xs, ys in t._curves]
    if len(vals) == 1:
        return t.overhead_s + vals[0]
    return t.overhead_s + float(np.interp(context / max(seqs, 1), t._ctxs, vals))


def _same(a, b):
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b) or (a != a and b != b)


def test_scalar_interp_is_numpys_bit_for_bit():
    rng = random.Random(5)
    for _ in range(300):
        n = rng.randint(2, 12)
        xs = sorted(rng.choice([rng.uniform(-50, 5000), float(rng.randint(0, 20))]) for _ in range(n))
        ys = [rng.uniform(-1, 1) * 10 ** rng.randint(-4, 2) for _ in range(n)]
        if rng.random() < 0.2:
            ys[rng.randrange(n)] = ys[0]
        fx, fy = tuple(xs), tuple(ys)
        probes = xs + [x + d for x in xs for d in (-1e-9, 1e-9, 0.5)]
        probes += [rng.uniform(xs[0] - 10, xs[-1] + 10) for _ in range(50)]
        probes += [float("inf"), -float("inf"), float("nan"), rng.randint(-5, 6000)]
        for x in probes:
            assert _same(_np_interp(x, fx, fy), float(np.interp(x, xs, ys))), (x, xs, ys)


def test_tabulated_forward_is_the_numpy_one_bit_for_bit():
    rng = random.Random(7)
    for _ in range(40):
        ctxs = sorted(rng.sample([0, 128, 512, 1024, 2048, 4096, 8192], rng.randint(1, 4)))
        batches = sorted(rng.sample([1, 2, 4, 8, 16, 32, 64, 128, 256], rng.randint(1, 6)))
        dec = [(float(b), float(c), rng.uniform(0.005, 0.05) * (1 + b / 64) * (1 + c / 8192))
               for b in batches for c in ctxs for _ in range(rng.randint(1, 2))]
        pre = [(float(rng.randint(1, 4096)), rng.uniform(0.01, 0.5)) for _ in range(rng.randint(0, 5))]
        t = Tabulated(dec, pre, overhead_s=rng.choice([0.0, 0.004]))
        for _ in range(300):
            seqs = rng.randint(1, 300)
            d = rng.randint(0, 600)
            p = rng.choice([0, 0, rng.randint(1, 5000)])
            ctx = rng.uniform(0, 10000) * seqs
            assert _same(t.forward(d, p, seqs, ctx), _reference_forward(t, d, p, seqs, ctx))


def test_tabulated_odd_curves_keep_numpys_semantics():
    # a zero-width last prefill segment (numpy: inf slope, no ZeroDivisionError), one point
    t = Tabulated([(4.0, 0.0, 0.01)], [(100.0, 0.1), (100.0, 0.2)])
    with np.errstate(all="ignore"):
        for args in ((1, 0, 1, 0.0), (9, 0, 9, 0.0), (0, 100, 1, 0.0), (0, 150, 1, 0.0)):
            assert _same(t.forward(*args), _reference_forward(t, *args))


@pytest.mark.pure_python
@pytest.mark.parametrize("policy,knobs", [("ar", {}), ("sd", {"k2": 4}),
                                          ("lr-async", {"depth": 3, "width": 2, "k2": 3}),
                                          ("lr-sync", {"k1": 3})])
def test_incremental_kv_usage_is_the_exact_sum(monkeypatch, policy, knobs):
    o = Options(policy=policy, requests=12, steps=10, kv_cache_tokens=6000, **knobs)
    plain = simulate(build(o))
    real = Engine._admit_kv
    checks = []

    def checked(self):
        kv = self.kv
        assert kv.current(self.iter_no) == kv.usage(self._running())
        real(self)
        running = self._running()
        for ahead in (0, 1, 2, 3, 7, 16, 63):
            assert kv.at(self.iter_no, ahead) == kv.usage(running, ahead)
        usage = kv.tally(running)
        assert kv.held_total(self.iter_no) == usage.total
        for j in list(self.waiting)[:4]:
            assert kv.peek(j, held(j, 0)) == usage.peek(j, held(j, 0))
        checks.append(kv.preemptions)

    monkeypatch.setattr(Engine, "_admit_kv", checked)
    assert simulate(build(o)) == plain          # refreshing more often changes nothing
    assert len(checks) > 40
    if policy != "ar":
        assert max(checks) > 0                  # the cache was full enough to preempt


def _everything(cfg):
    """Every output of one run, floats bit for bit: the summary, each request's record, each
    engine's accounting, and the number of SimPy event ids taken."""
    import json

    from lrsim.sim.runner import run
    s, w = run(cfg)
    recs = [(r.rid, r.arrival, r.first_output, r.finish, r.tokens, tuple(r.steps)) for r in w.records]
    engines = [(e.busy_s, e.last_end, e.iterations, sorted(e.batch_hist.items()),
                e.kv.summary() if getattr(e, "kv", None) is not None else None)
               for e in (w.target, w.draft, w.judge) if e is not None]
    return json.dumps(s, sort_keys=True), recs, engines, repr(w.stats), repr(w.sd), next(w.env._eid)


def _kernel_cases():
    from dataclasses import replace

    from lrsim.sim import scenario
    from lrsim.sim.kvcache import KVSpec

    def load(name, policy, requests, steps, rate=None, seed=0, **knobs):
        cfg = scenario.load(name, seed=seed)
        cfg.policy = policy
        for k, v in knobs.items():
            setattr(cfg, k, v)
        cfg.workload.n_requests, cfg.workload.steps, cfg.workload.rate = requests, steps, rate
        return cfg

    yield load("h100-paper", "lr-async", 24, 20, rate=4.0, seed=1)
    yield load("h100-paper", "lr-async", 12, 20, seed=2, depth=2, k2=3)
    yield load("h100-paper", "lr-sync", 8, 12, seed=3, k1=3)
    yield load("cpu-2core", "lr-async", 4, 8, seed=4, depth=2)        # time-shared device
    kv = load("h100-paper", "lr-async", 16, 12, seed=5, depth=3, width=2)
    kv.target = replace(kv.target, kv=KVSpec(9000))                   # preemptions
    yield kv
    c = load("h100-paper", "lr-async", 6, 12, seed=6)                 # contention
    c.target = replace(c.target, devices=["gpu0"], contention=0.3)
    c.draft = replace(c.draft, devices=["gpu1"], contention=0.2)
    yield c
    # the theory's unit costs with a batch budget: iteration times on a grid, events at one
    # instant routine (a review found one cancel that planning moved past a job's end here)
    from lrsim.sim.config import Config
    yield Config.ideal_setup("lr-async", 0.7, 0.25, k1=2, steps=60, requests=3, seed=0, budget=4)


# the cases with an engine that plans prefills (no KV cache, time-sharing, contention or unit
# costs; case 4's draft has no KV cache): they take fewer event ids than SimPy's, the others as many
PLANNED = (0, 1, 2, 4)


@pytest.mark.parametrize("i", range(7))
def test_kernel_environment_is_simpys_event_for_event(monkeypatch, i):
    """kernel.Environment (stale chunk ends cancelled, not fired; an inlined run loop; a
    prefill iteration planned through, Engine._plan_decode) gives the outputs of a plain
    simpy.Environment, where the stale chunk ends fire and are ignored and every chunk end is an
    event: the same outputs; fewer event ids taken where engines plan (a planned prefill's one
    timer for two), as many where none can."""
    import simpy

    from lrsim.sim import runner
    fast = _everything(list(_kernel_cases())[i])
    monkeypatch.setattr(runner, "Environment", simpy.Environment)
    plain = _everything(list(_kernel_cases())[i])
    assert plain[:-1] == fast[:-1]
    assert fast[-1] < plain[-1] if i in PLANNED else fast[-1] == plain[-1]


@pytest.mark.parametrize("i", range(7))
def test_kernel_environment_run_until_is_its_drain(monkeypatch, i):
    """kernel.Environment stepped through SimPy's run(until=...) (its step and peek merge the
    heap, the timers and the now-queue, with SimPy's urgent stop event among them) gives every
    output of the drained run, in slices that end between and at events."""
    import math

    from lrsim.sim import kernel, runner

    drained = _everything(list(_kernel_cases())[i])
    _, w = runner.run(list(_kernel_cases())[i])
    end = w.env.now                               # the drained run's last event

    class Sliced(kernel.Environment):
        def run(self, until=None):
            if until is not None:
                return super().run(until)
            n = 0
            while self.peek() < end:
                n += 1
                # slices that end 0.37 s past the next event, every seventh at exactly its time
                # (there SimPy's urgent stop comes first: the event runs in the next slice)
                target = self.peek() if n % 7 == 0 else self.peek() + 0.37
                if target <= self.now:
                    target = math.nextafter(self.now, math.inf)
                super().run(until=target)
            return super().run()                  # the rest (a stopped run's event included)

    monkeypatch.setattr(runner, "Environment", Sliced)
    sliced = _everything(list(_kernel_cases())[i])
    assert sliced[:-1] == drained[:-1]          # (the stop events take ids of their own)
