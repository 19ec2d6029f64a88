"""Run independent simulation points in parallel: local processes, or a Ray cluster.

We do not schedule anything ourselves: local runs use `concurrent.futures.ProcessPoolExecutor`
(as the simulator's own sweep does), cluster runs hand every point to Ray as a task (Ray is the
distributed runtime vLLM already uses). `fn` must be a module-level function and its arguments
picklable. Results come back in input order.
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor

from lrcore.errors import UserError


def map_points(fn, args: list, jobs: int = 0, ray_address: str | None = None) -> list:
    if jobs < 0:
        raise UserError(f"--jobs must be >= 0, got {jobs}")
    if ray_address:
        return _map_ray(fn, args, ray_address)
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1 or len(args) <= 1:
        return [fn(a) for a in args]
    with ProcessPoolExecutor(max_workers=min(jobs, len(args))) as ex:
        return list(ex.map(fn, args, chunksize=max(1, len(args) // (4 * jobs))))


def _call(fn, arg):
    """The Ray task: any picklable callable (builtins included) applied to one point."""
    return fn(arg)


def _map_ray(fn, args: list, address: str) -> list:
    try:
        import ray
        from ray.exceptions import RayTaskError
    except ImportError:
        raise UserError("--ray-address needs Ray: pip install 'lookahead-reasoning-toolkit[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        try:
            # "local" starts a private single-node Ray (tests, laptops); anything else connects.
            ray.init(address=None if address == "local" else address, ignore_reinit_error=True,
                     log_to_driver=False, include_dashboard=False)
        except (ConnectionError, ValueError, RuntimeError) as e:
            raise UserError(f"--ray-address {address}: cannot connect to Ray ({e})") from None
    try:
        task = ray.remote(_call)
        try:
            return ray.get([task.remote(fn, a) for a in args])
        except RayTaskError as e:
            # a point's refusal (a UserError) as local processes give it: one line, not the
            # remote traceback Ray's wrapper prints
            if isinstance(e.cause, UserError):
                raise e.cause from None
            raise
    finally:
        if started_here and address == "local":
            ray.shutdown()
