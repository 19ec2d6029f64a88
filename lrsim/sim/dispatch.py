"""The event loop's body and the engines' bare timer event, apart from kernel.Environment so that
they can be compiled (lrsim/native.py: a compiled class cannot extend simpy.Environment, a plain
Python class; these two need nothing from it).

`drain(env)` is `Environment.run()` without `until`: it processes the same events in the same
order (time, priority, id) as SimPy's `Environment.step` would, taking the engines' cancellable
timers (`env._timers`, sorted) before the heap's head whenever they sort first. `timer`,
`cancel` and `retime` are the Environment's methods of those names (an engine calls `retime`
for every chunk end).
"""
from __future__ import annotations

from bisect import insort
from heapq import heappop
from typing import Any

NORMAL = 1                        # simpy.events.NORMAL: a Timeout's priority


class Wake:
    """A bare SimPy event (what `Environment.step` reads: callbacks, _ok) for an engine's own
    timers: lighter than a Timeout; `gen`/`k` carry what the engine's callback needs."""

    __slots__ = ("callbacks", "_ok", "gen", "k")

    def __init__(self, callbacks: Any, gen: int = 0, k: Any = 0) -> None:
        self.callbacks: Any = callbacks     # a tuple of callables; None once processed
        self._ok = True
        self.gen = gen                      # the engine's chunk generation
        self.k: Any = k                     # iterations run by the chunk's end (an int, maybe NumPy's)


def drain(env: Any) -> None:
    """Run `env` until no event is left (= simpy's `run()` with the timers merged in)."""
    q: list = env._queue
    t: list = env._timers
    while True:
        if t and (not q or t[0] < q[0]):
            now, _, _, event = t.pop(0)
        elif q:
            now, _, _, event = heappop(q)
        else:
            return
        env._now = now
        callbacks = event.callbacks
        event.callbacks = None
        for callback in callbacks:
            callback(event)
        if not event._ok and not hasattr(event, "_defused"):
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc


def timer(env: Any, delay: Any, event: Any) -> tuple:
    """Schedule `event` after `delay` (priority NORMAL, like a Timeout) so that it can be
    cancelled; returns the entry to pass to `cancel`."""
    entry = (env._now + delay, NORMAL, next(env._eid), event)
    insort(env._timers, entry)
    return entry


def cancel(env: Any, entry: Any) -> None:
    """Drop a timer that has not fired (a fired or unknown one is ignored)."""
    t: list = env._timers
    for i, e in enumerate(t):
        if e is entry:
            del t[i]
            env.cancelled += 1
            return


def retime(env: Any, old: Any, delay: Any, event: Any) -> tuple:
    """= cancel(old) (if not None), then timer(delay, event): an engine's chunk end replaced in
    one call (its hot path)."""
    if old is not None:
        cancel(env, old)
    return timer(env, delay, event)
