"""What-if hardware transforms of a simulator Config: device kind, placement, equal resources.

    rescale(cfg, kind)   another device kind: decode is memory-bound, so every latency (and a
                         constant verifier's seconds) scales by the achieved-bandwidth ratio of
                         the kind it was measured on (Config.measured_on, default the config's
                         devices) to `kind` (catalog.py); what was measured on `kind` stays as
                         given. Presets do better: they rebuild on the kind (Preset.on_device).
    share(cfg)           draft and judge on the target's devices (time-sharing iteration by
                         iteration, devices.py) instead of dedicated devices; KV caches sized
                         from memory split what is left after the three models' weights
                         (kvcache.kv_shared)
    equal_resources(cfg) the target alone, given the draft's and judge's devices as extra TP
                         (Config.baseline with equal_resources)
    replica_devices(cfg) devices one replica of this configuration occupies
"""
from __future__ import annotations

from dataclasses import replace

from lrcore.errors import UserError

from ..sim.config import Config
from ..sim.kvcache import kv_shared
from ..sim.latency import Scaled
from ..sim.verifier import JUDGE_TEMPLATE_TOKENS, VerifierCost
from . import catalog

# Peak HBM bandwidth per device (TB/s): the catalogue's datasheet figures (catalog.py).
HBM_TB_S = {k: d.hbm_tb_s for k, d in catalog.CATALOGUE.items()}
PLACEMENTS = ("dedicated", "shared")
ROLES = ("target", "draft", "judge")


def device_kind(cfg: Config) -> str:
    kinds = sorted(set(cfg.devices.values()))
    return kinds[0] if len(kinds) == 1 else "/".join(kinds)


def rescale(cfg: Config, kind: str | None, device_file: str | None = None) -> Config:
    """Move the configuration to `kind` devices (same count). Each latency scales by the
    bandwidth ratio of the kind it was measured on to `kind`; one measured on `kind` is kept."""
    src = device_kind(cfg)
    kind = catalog.canonical(kind)
    if kind is None or (kind == src and all(v == kind for v in cfg.measured_on.values())):
        return cfg
    known = catalog.known(device_file)
    if kind not in known:
        raise UserError(f"--device-kind: unknown kind {kind!r} (known: {', '.join(known)})")

    def factor(role: str) -> float:
        origin = catalog.canonical(cfg.measured_on.get(role, src))
        if origin == kind:
            return 1.0
        if origin not in known:
            raise UserError(f"--device-kind: the source's devices are {origin!r}, whose bandwidth is "
                            f"not known; plan on the source's own devices (omit --device-kind) or add "
                            f"{origin!r} to a device file")
        return catalog.bandwidth_ratio(origin, kind, device_file)

    out = replace(cfg, devices={n: kind for n in cfg.devices})
    for role in ROLES:
        p = getattr(cfg, role)
        if p is not None and (f := factor(role)) != 1.0:
            setattr(out, role, replace(p, latency=Scaled(p.latency, f)))
    if cfg.sd_draft is not None and (f := factor("sd_draft")) != 1.0:
        out.sd_draft = Scaled(cfg.sd_draft, f)
    if cfg.verifier.kind in ("constant", "per_token") and (f := factor("verifier")) != 1.0:
        out.verifier = replace(cfg.verifier, seconds=cfg.verifier.seconds * f)
    out.measured_on = {r: kind for r in ROLES + ("sd_draft", "verifier")}
    return out


def share(cfg: Config) -> Config:
    """Draft and judge on the target's devices. A constant-cost verifier becomes a judge engine
    there whose single judgement costs the same seconds, so judging now takes device time."""
    if cfg.draft is None:
        return cfg
    tdev = list(cfg.target.devices)
    out = replace(cfg, draft=replace(cfg.draft, devices=tdev))
    if cfg.judge is not None:
        judge = replace(cfg.judge, devices=tdev)
        if cfg.verifier.kind == "constant" and cfg.verifier.seconds > 0:
            step = float(getattr(cfg.workload, "step_mean", 40.0))
            one = cfg.judge.latency.forward(1, JUDGE_TEMPLATE_TOKENS + int(2 * step), 1, 0.0)
            judge = replace(judge, latency=Scaled(cfg.judge.latency, cfg.verifier.seconds / one))
            out.verifier = VerifierCost("llm", 0.0, JUDGE_TEMPLATE_TOKENS)
        out.judge = judge
    roles = [r for r in ROLES if getattr(out, r) is not None]
    kvs = kv_shared([getattr(out, r).kv for r in roles], f"shared placement on {len(tdev)} device(s)")
    for role, kv in zip(roles, kvs):
        setattr(out, role, replace(getattr(out, role), kv=kv))
    used = set(tdev)
    out.devices = {n: k for n, k in cfg.devices.items() if n in used}
    return out


def equal_resources(cfg: Config, target_latency=None) -> Config:
    """AR with the draft's and judge's devices added to the target's TP (Config.baseline, which
    scales the whole iteration by TP with an all-reduce loss). `target_latency(tp)`, when the
    source can rebuild its target at another TP from hardware facts, replaces that scaling."""
    out = replace(cfg, equal_resources=True).baseline()
    better = target_latency(out.target.tp) if target_latency is not None else None
    if better is not None:
        out.target = replace(out.target, latency=better)
    used = set(out.target.devices)
    out.devices = {n: k for n, k in cfg.devices.items() if n in used}
    out.equal_resources = False
    return out


def replica_devices(cfg: Config) -> list[str]:
    roles = [cfg.target]
    if cfg.policy.startswith("lr"):
        roles += [cfg.draft, cfg.judge]
    return list(dict.fromkeys(d for p in roles if p is not None for d in p.devices))
