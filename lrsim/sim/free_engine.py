"""The theory's free batching with an unlimited budget (--ideal, M = inf)."""
from __future__ import annotations

from .engine import Job


class FreeEngine:
    """The theory's free batching with an unlimited budget (--ideal, M = inf): every job runs at
    `unit` per iteration from the instant it is submitted, whatever else runs. Same API as
    Engine; no batch-boundary wait (the theory starts a target step the moment its prefix
    exists). Busy time is the union of the jobs' intervals."""

    prefix_block = 1                      # prefill costs nothing here: no block rounding

    def __init__(self, env, name: str, unit: float, devices: list, sd_k2: int = 1, sd_unit: float = 0.0):
        self.env = env
        self.name = name
        self.unit = unit
        self.devices = devices
        self.sd_k2 = sd_k2
        self.sd_unit = sd_unit
        self.busy_s = 0.0
        self.last_end = 0.0
        self.iterations = 0
        self.batch_hist: dict[int, int] = {}
        self._active = 0
        self._busy_since = 0.0

    def _per_iter(self, job: Job) -> float:
        return self.unit + ((self.sd_k2 - 1) * self.sd_unit if job.sd else 0.0)

    def submit(self, job: Job) -> Job:
        env = self.env
        job.started = env.now
        if self._active == 0:
            self._busy_since = env.now
        self._active += 1
        env.timeout(job.iters_left * self._per_iter(job)).callbacks.append(
            lambda _e, j=job: self._finish(j))
        return job

    def _idle_check(self):
        self._active -= 1
        if self._active == 0:
            spent = self.env.now - self._busy_since
            self.busy_s += spent
            self.last_end = self.env.now
            for d in self.devices:
                d.busy_s += spent

    def _finish(self, job: Job):
        if job.cancelled:
            return
        self.iterations += job.iters_left
        job.iters_left = 0
        job.finished = self.env.now
        self._idle_check()
        job.done.succeed()

    def cancel(self, job: Job) -> None:
        if job.finished is not None or job.cancelled:
            return
        job.cancelled = True
        job.done.callbacks.clear()        # it never fires (Engine.cancel)
        done = int((self.env.now - job.started) / self._per_iter(job) + 1e-9)
        job.iters_left = max(0, job.total - done)
        self.iterations += done
        self._idle_check()
