"""Decoding policies: each is a SimPy generator `run(world, req, rec)` that drives one request
from its arrival to its last committed step."""
from ...native import enable as _enable

_enable(__path__, __name__)   # the compiled lr_async, where built and fresh (lrsim/native.py)

from . import ar, lr_adaptive, lr_async, lr_stage, lr_sync  # noqa: E402

POLICIES = {
    "ar": ar.run,          # target alone
    "sd": ar.run,          # target alone + token-level SD (k2 > 1): the same driver
    "lr-sync": lr_sync.run,
    "lr-async": lr_async.run,
    "lr-stage": lr_stage.run,
    "lr-adaptive": lr_adaptive.run,   # lr-async with depth, width, k2 chosen before each speculation
}
NAMES = tuple(POLICIES)
