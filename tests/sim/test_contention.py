"""Contention between two engines on separate devices of one machine (Placement.contention):
an iteration that starts while the peer engine is running one costs (1 + contention) x its time
alone; the peer's start/stop makes a running engine recompose at its next iteration boundary.
Hand-derived finish times, the no-op cases (idle peer, contention 0, no peer: identical times and
event counts), fluid chunks = per-iteration stepping, and the runner's wiring."""
from dataclasses import replace

import pytest
import simpy

from lrcore.errors import UserError
from lrsim.sim import scenario
from lrsim.sim.devices import DevicePool
from lrsim.sim.engine import Engine, Job
from lrsim.sim.latency import Roofline
from lrsim.sim.runner import run


def _pair(ca=0.0, cb=0.0, link=True, max_chunk=64):
    """Engine a (1 s per iteration) on d0 and b (0.5 s) on d1: constant costs (knee far away,
    no context term)."""
    env = simpy.Environment()
    pool = DevicePool(env, {"d0": "cpu", "d1": "cpu"})
    a = Engine(env, "a", Roofline(base_s=1.0, knee_tokens=1e6), pool.place("a", ["d0"]),
               context_term=False)
    b = Engine(env, "b", Roofline(base_s=0.5, knee_tokens=1e6), pool.place("b", ["d1"]),
               context_term=False)
    a.max_chunk = b.max_chunk = max_chunk
    if link:
        a.peer, b.peer = b, a
        a.contention, b.contention = ca, cb
    return env, a, b


def _jobs(env, a, b, plan):
    """plan: (engine name, submit time, iterations, label) -> finish time per label."""
    out = {}
    eng = {"a": a, "b": b}

    def go(e, t, n, label):
        yield env.timeout(t)
        j = e.submit(Job(env, n))
        yield j.done
        out[label] = env.now

    for name, t, n, label in plan:
        env.process(go(eng[name], t, n, label))
    env.run(until=1000)
    return out


OVERLAP = [("a", 0.0, 4, "a"), ("b", 1.5, 3, "b")]


def test_contention_on_one_engine_hand_computed():
    env, a, b = _pair(ca=0.5)
    t = _jobs(env, a, b, OVERLAP)
    # a: [0,1] [1,2] alone; b starts at 1.5 (a's iteration in progress is not preempted), so a's
    # third iteration [2,3.5] costs 1.5; b (no contention of its own) runs 1.5..3.0 and stops
    # during it; a's fourth iteration starts at 3.5 with b idle: [3.5,4.5]
    assert t["b"] == pytest.approx(3.0)
    assert t["a"] == pytest.approx(4.5)
    assert a.busy_s == pytest.approx(4.5) and b.busy_s == pytest.approx(1.5)
    assert a.iterations == 4 and b.iterations == 3


def test_contention_on_both_engines_hand_computed():
    env, a, b = _pair(ca=0.5, cb=0.5)
    t = _jobs(env, a, b, OVERLAP)
    # b starts at 1.5 while a runs: 3 x 0.75 -> 3.75; a: [0,2] alone, then two iterations that
    # start while b runs: [2,3.5] [3.5,5.0] (b stops at 3.75, inside a's last iteration)
    assert t["b"] == pytest.approx(3.75)
    assert t["a"] == pytest.approx(5.0)


def test_peer_starting_at_the_same_instant_slows_both_from_the_start():
    env, a, b = _pair(ca=0.5, cb=1.0)
    t = _jobs(env, a, b, [("a", 0.0, 2, "a"), ("b", 0.0, 2, "b")])
    # b: 2 x 1.0 (0.5 doubled) -> 2.0; a: 2 x 1.5 -> 3.0 (its second iteration starts at 1.5
    # while b still runs)
    assert t["b"] == pytest.approx(2.0)
    assert t["a"] == pytest.approx(3.0)
    # the same in the other submission order
    env, a, b = _pair(ca=0.5, cb=1.0)
    t = _jobs(env, a, b, [("b", 0.0, 2, "b"), ("a", 0.0, 2, "a")])
    assert t == {"a": pytest.approx(3.0), "b": pytest.approx(2.0)}


def test_peer_stopping_as_an_iteration_starts_is_not_charged():
    env, a, b = _pair(ca=0.5)
    # b runs 0..1.0 (2 x 0.5); a is submitted at 1.0, the instant b stops: no contention
    t = _jobs(env, a, b, [("b", 0.0, 2, "b"), ("a", 1.0, 3, "a")])
    assert t == {"b": pytest.approx(1.0), "a": pytest.approx(4.0)}


def test_idle_or_disjoint_peer_changes_nothing():
    env, a, b = _pair(ca=0.5, cb=0.5)
    assert _jobs(env, a, b, [("a", 0.0, 4, "a")]) == {"a": pytest.approx(4.0)}
    env, a, b = _pair(ca=0.5, cb=0.5)
    t = _jobs(env, a, b, [("a", 0.0, 4, "a"), ("b", 4.0, 3, "b"), ("a", 10.0, 2, "a2")])
    assert t == {"a": pytest.approx(4.0), "b": pytest.approx(5.5), "a2": pytest.approx(12.0)}


PLAN = [("a", 0.0, 10, "a1"), ("b", 0.3, 3, "b1"), ("a", 0.5, 3, "a2"), ("b", 2.2, 7, "b2"),
        ("b", 2.2, 1, "b3"), ("a", 4.1, 4, "a3"), ("b", 9.1, 4, "b4"), ("a", 20.0, 2, "a4")]


def test_zero_contention_is_identical_to_no_peer_including_event_count():
    env1, a1, b1 = _pair(link=False)
    env2, a2, b2 = _pair(ca=0.0, cb=0.0)
    assert _jobs(env1, a1, b1, PLAN) == _jobs(env2, a2, b2, PLAN)
    assert repr(env1._eid) == repr(env2._eid)       # same number of events scheduled
    # contention on only one side: the other engine is never notified
    env3, a3, b3 = _pair(ca=0.5)
    t3 = _jobs(env3, a3, b3, PLAN)
    assert [t3[k] for k in ("b1", "b2", "b3", "b4")] == [
        pytest.approx(v) for v in (_jobs(*_pair(link=False), PLAN)[k] for k in ("b1", "b2", "b3", "b4"))]


@pytest.mark.parametrize("ca,cb", [(0.5, 0.0), (0.3, 0.7), (0.0, 1.0)])
def test_fluid_chunks_equal_per_iteration_stepping_with_contention(ca, cb):
    env1, a1, b1 = _pair(ca, cb)
    env2, a2, b2 = _pair(ca, cb, max_chunk=1)
    t1, t2 = _jobs(env1, a1, b1, PLAN), _jobs(env2, a2, b2, PLAN)
    assert t1.keys() == t2.keys()
    for k in t1:
        assert t1[k] == pytest.approx(t2[k], abs=1e-9), k
    assert (a1.iterations, b1.iterations) == (a2.iterations, b2.iterations)
    assert a1.busy_s == pytest.approx(a2.busy_s) and b1.busy_s == pytest.approx(b2.busy_s)
    base = _jobs(*_pair(link=False), PLAN)
    assert sum(t1.values()) > sum(base.values())   # contention slows the overlapping work


# --- config and runner ------------------------------------------------------------------------
def _two_core(contention_t, contention_d, shared=False):
    cfg = scenario.load("cpu-2core", seed=3)
    cfg.policy, cfg.depth = "lr-async", 2
    if not shared:
        cfg.devices = dict(cfg.devices, cpu1=cfg.devices["cpu0"])
    cfg.target = replace(cfg.target, contention=contention_t)
    cfg.draft = replace(cfg.draft, devices=["cpu0" if shared else "cpu1"], contention=contention_d)
    cfg.workload.n_requests = 3
    cfg.workload.steps = 6
    return cfg


def test_run_lr_async_contention_slows_and_zero_is_unchanged():
    base, wb = run(_two_core(0.0, 0.0))
    again, _ = run(_two_core(0.0, 0.0))
    slow, ws = run(_two_core(0.1, 0.25))
    assert again == base
    assert wb.target.peer is None and wb.draft.peer is None
    assert ws.target.peer is ws.draft and ws.draft.peer is ws.target
    assert (ws.target.contention, ws.draft.contention) == (0.1, 0.25)
    assert slow["wall_s"] > base["wall_s"]
    assert ws.target.busy_s > wb.target.busy_s


def test_run_time_shared_engines_are_not_linked():
    a, wa = run(_two_core(0.0, 0.0, shared=True))
    b, wb = run(_two_core(0.3, 0.3, shared=True))
    assert wb.target.peer is None and wb.draft.peer is None
    assert a == b


def test_ideal_world_never_gets_peers():
    from lrsim.sim.config import Config
    cfg = Config.ideal_setup("lr-async", 0.6, 0.1, steps=20)
    cfg.target = replace(cfg.target, contention=0.5)
    summary, w = run(cfg)
    assert not hasattr(w.target, "peer")    # FreeEngine
    assert summary == run(Config.ideal_setup("lr-async", 0.6, 0.1, steps=20))[0]


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "0.2", True])
def test_contention_is_validated(bad):
    cfg = _two_core(0.0, 0.0)
    cfg.draft = replace(cfg.draft, contention=bad)
    with pytest.raises(UserError, match="contention must be a finite number >= 0"):
        cfg.validate()
