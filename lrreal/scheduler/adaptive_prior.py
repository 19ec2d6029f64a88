"""Where a real lr-adaptive run's Estimator starts (`lr collect --adaptive-prior PATH`).

Without it the Estimator starts from lrcore's neutral Estimates(), told nothing about this
machine, and its first problem pays for learning (measured: results/adaptive_real.md, the first
problem of each collection process, 0.88x AR alone). A serving process would keep what it
learned; a collection process ends after each block set, so the estimates are carried in the
trace records instead: every lr-adaptive record ends with `adaptive.final`, the Estimator's
snapshot when the problem finished, and the next run may start from it.

PATH is one of
  - a JSON file holding one Estimates object (`adaptive.prior`/`final`, or a decision's
    `estimates`, as the traces write them): that prior, as given;
  - a trace file (.jsonl): its last adaptive record with the same bounds (`adaptive.config`)
    and models; none there is an error;
  - a directory of trace files (a corpus directory, as `collect_load.py --set adaptive` passes):
    the last such record of its most recently written file; none there: the neutral prior
    (a corpus's first run).
A record of an older toolkit without `final` gives its last decision's estimates (what it believed
before its last decision). The prior is used once, when the run's Estimator is built; the record
says where it came from (`adaptive.prior_from`).
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from lrcore.adaptive import AdaptiveConfig, Estimates
from lrcore.errors import UserError
from lrcore.modes import ADAPTIVE_MODES

NEUTRAL = "neutral"


def _record_estimates(rec: dict) -> dict | None:
    a = rec.get("adaptive")
    if not isinstance(a, dict):
        return None
    if isinstance(a.get("final"), dict):
        return a["final"]
    decisions = a.get("decisions") or []
    return decisions[-1].get("estimates") if decisions and isinstance(decisions[-1], dict) else None


@lru_cache(maxsize=1)
def _defaults() -> dict:
    """AdaptiveConfig's defaults as the records hold them (once: read for every record)."""
    from dataclasses import asdict
    return json.loads(json.dumps(asdict(AdaptiveConfig())))


def _matches(rec: dict, config: dict, models: dict | None) -> bool:
    """Same mode family, bounds and knobs (a knob the record predates counts at its default:
    the record's behaviour before the knob existed), same models."""
    a = rec.get("adaptive")
    if rec.get("mode") not in ADAPTIVE_MODES or not isinstance(a, dict) \
            or not isinstance(a.get("config"), dict) or {**_defaults(), **a["config"]} != config:
        return False
    if models is None:
        return True
    theirs = ((rec.get("run") or {}).get("models") or {})
    return all((theirs.get(role) or {}).get("name") == name for role, name in models.items())


def last_in_file(path: Path, config: dict, models: dict | None) -> tuple[dict, str] | None:
    """The estimates of the file's last matching adaptive record, and "path:line"."""
    found = None
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            try:
                rec = json.loads(line)
            except ValueError:
                continue              # a torn last line is the collector's to report, not ours
            if isinstance(rec, dict) and _matches(rec, config, models) \
                    and (est := _record_estimates(rec)) is not None:
                found = (est, f"{path}:{i}")
    return found


def _estimates(d: dict, where: str) -> Estimates:
    try:
        return Estimates.from_dict(d)
    except (KeyError, TypeError, ValueError, UserError) as e:
        raise UserError(f"--adaptive-prior {where}: not a set of adaptive estimates ({e})") from None


def load_prior(path: str | Path, acfg: AdaptiveConfig,
               models: dict | None = None) -> tuple[Estimates | None, str]:
    """(the prior, where it came from) for an Estimator with bounds `acfg` on the models
    {"target": name, "draft": name}; (None, "neutral") where a directory holds no match."""
    from dataclasses import asdict

    p = Path(path)
    config = json.loads(json.dumps(asdict(acfg)))       # as the records hold it (tuples: lists)
    if p.is_dir():
        files = sorted(p.rglob("*.jsonl"), key=lambda f: f.stat().st_mtime, reverse=True)
        for f in files:
            if (hit := last_in_file(f, config, models)) is not None:
                return _estimates(hit[0], hit[1]), hit[1]
        return None, NEUTRAL
    if not p.is_file():
        raise UserError(f"--adaptive-prior {p}: no such file or directory")
    if p.suffix == ".jsonl":
        hit = last_in_file(p, config, models)
        if hit is None:
            raise UserError(f"--adaptive-prior {p}: no lr-adaptive record with these bounds "
                            f"(--depth, --width, k2) and models")
        return _estimates(hit[0], hit[1]), hit[1]
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UserError(f"--adaptive-prior {p}: not JSON ({e})") from None
    if not isinstance(d, dict):
        raise UserError(f"--adaptive-prior {p}: expected a JSON object of estimates")
    return _estimates(d, str(p)), str(p)
