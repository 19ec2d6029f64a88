"""The jobs a simulation submits to its engines, logged for a test to read (Engine.submit
wrapped for the block and put back after it)."""
from contextlib import contextmanager

from lrsim.sim.engine import Engine


@contextmanager
def submitted():
    """Yields a list that fills with (engine, job, prefill) for every job submitted inside the
    block; the prefill as submitted (the engine zeroes a job's once it has prefilled)."""
    log = []
    submit = Engine.submit

    def logged(engine, job):
        log.append((engine, job, job.prefill))
        return submit(engine, job)
    Engine.submit = logged
    try:
        yield log
    finally:
        Engine.submit = submit
