"""Started engines kept across runs: a collector asks for (role, EngineArgs) and gets the engine
already running with exactly those arguments, or a fresh one (the old one of that role stopped
first: two 1.5B float32 engines do not fit beside a draft in 24 GiB).

`lr collect` uses one pool per run; the trace corpus (lrreal/corpus.py) keeps one pool across
configurations, so switching from `lr` to `lr-sync` costs nothing and only a change of the
target's speculative config (ar/lr -> sd/lr+sd) restarts the target (about a minute on CPU).
"""
from __future__ import annotations

from .engine import EngineArgs, VllmEngine
from .probe import ProbeClock


class EnginePool:
    def __init__(self, factory=None):
        self._factory = factory or (lambda role, args: VllmEngine(role, args).start())
        self.engines: dict = {}
        self.args: dict[str, EngineArgs] = {}
        self.starts = 0                   # engine starts so far (restarts included)
        self.probes = ProbeClock()        # continuous across configurations of one engine set

    def get(self, role: str, args: EngineArgs):
        if role in self.engines and self.args[role] == args:
            return self.engines[role]
        self.stop(role)
        self.engines[role] = self._factory(role, args)
        self.args[role] = args
        self.starts += 1
        self.probes.invalidate()
        return self.engines[role]

    def describe(self) -> dict:
        """Which engines are loaded, with their bindings (recorded in each trace record)."""
        return {r: {"omp_threads_bind": a.omp_threads_bind,
                    "speculative": (a.speculative_config or {}).get("method")}
                for r, a in sorted(self.args.items())}

    def stop(self, role: str) -> None:
        eng = self.engines.pop(role, None)
        self.args.pop(role, None)
        if eng is not None:
            try:
                eng.shutdown()
            except Exception:
                pass

    def shutdown(self) -> None:
        for role in list(self.engines):
            self.stop(role)
