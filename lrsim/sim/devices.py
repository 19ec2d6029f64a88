"""Devices (GPUs, CPU sockets) and their busy-time accounting.

A model runs on a pool of devices (tensor parallel: every iteration occupies all of them). Two
models whose pools overlap time-share: each device is a `simpy.Resource` of capacity 1, and an
engine holds all of its devices for the duration of the iterations it runs (FIFO: the engines
alternate iteration by iteration when both have work, as two vLLM engines bound to the same cores
do when used one after the other).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import simpy


@dataclass
class Device:
    name: str
    kind: str = "gpu"
    resource: simpy.Resource | None = None
    busy_s: float = 0.0
    users: list[str] = field(default_factory=list)   # engines placed on this device

    @property
    def shared(self) -> bool:
        return len(self.users) > 1


class DevicePool:
    """The named devices of one simulation (created per run: resources belong to one env)."""

    def __init__(self, env: simpy.Environment, names: dict[str, str]):
        self.env = env
        self.devices = {n: Device(n, kind, simpy.Resource(env, capacity=1)) for n, kind in names.items()}

    def place(self, engine_name: str, device_names: list[str]) -> list[Device]:
        out = []
        for n in device_names:
            d = self.devices[n]
            d.users.append(engine_name)
            out.append(d)
        return out

    def utilisation(self, wall_s: float) -> dict[str, float]:
        return {n: (d.busy_s / wall_s if wall_s > 0 else 0.0) for n, d in self.devices.items()
                if d.users}
