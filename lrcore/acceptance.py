"""Step acceptance measured by the acceptance protocol (`lr collect --mode accept`), with its
confidence interval.

The protocol (lrreal/scheduler/accept.py; arXiv 2506.19830, Table 1's "Apt."): at every step both
models write the next step from the same committed context, the verifier judges the pair, and
the target's step is committed whatever the verdict. Each judged draft is one trial of alpha1,
the step acceptance per judged draft at depth 1 (docs/metrics.md), so accepted / judged is a
binomial proportion: its 95% interval is Wilson's, computed by scipy
(`scipy.stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")`).

    est = protocol_acceptance(records)   # None without accept-mode records
    est["rate"], est["ci95"], est["groups"]  # pooled, and per (verifier, data set)

Trials are pooled over problems and steps as if independent (steps of one answer are not quite:
the interval is the i.i.d. one, as Table 1's numbers are). Used by `lr collect`'s summary and by
`lr calibrate` (the preferred source of a profile's alpha1 when present; how a profile takes it
is lrsim/calib/acceptance.py).

Part of lrcore: the real backend (lrreal, `lr collect`'s summary) and the simulator (lrsim,
`lr calibrate`) both import it; it imports neither.
"""
from __future__ import annotations

from .modes import ACCEPT_MODE

CONFIDENCE = 0.95
CI_METHOD = "wilson"


def binomial_ci(accepted: int, judged: int, confidence: float = CONFIDENCE,
                method: str = CI_METHOD) -> tuple[float, float] | None:
    """The two-sided `confidence` interval of accepted / judged (scipy; Wilson by default,
    "exact" for Clopper-Pearson); None when nothing was judged."""
    judged, accepted = int(judged), int(accepted)
    if judged <= 0:
        return None
    from scipy.stats import binomtest

    ci = binomtest(accepted, judged).proportion_ci(confidence_level=confidence, method=method)
    return float(ci.low), float(ci.high)


def estimate(judged: int, accepted: int) -> dict:
    """{"judged", "accepted", "rate", "ci95"}: rate and interval None when nothing was judged."""
    ci = binomial_ci(accepted, judged)
    return {"judged": int(judged), "accepted": int(accepted),
            "rate": accepted / judged if judged > 0 else None,
            "ci95": None if ci is None else [ci[0], ci[1]]}


def verifier_of(rec: dict) -> str:
    """The verifier a record was judged with: its --verifier flag (e.g. exact, embedding:0.9)."""
    run = rec.get("run") if isinstance(rec.get("run"), dict) else {}
    flags = run.get("flags") if isinstance(run.get("flags"), dict) else {}
    v = flags.get("verifier")
    if isinstance(v, str) and v:
        return v
    described = run.get("verifier") if isinstance(run.get("verifier"), dict) else {}
    method = described.get("method")
    return str(method) if method else "unknown"


def dataset_of(rec: dict) -> str:
    """The record's data set: its `dataset` field, else the problem id's prefix."""
    d = rec.get("dataset")
    if isinstance(d, str) and d:
        return d
    return str(rec.get("problem_id") or "").split("/", 1)[0] or "unknown"


def accept_records(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("mode") == ACCEPT_MODE]


def protocol_acceptance(records: list[dict]) -> dict | None:
    """Step acceptance of the accept-mode records among `records` (others are ignored): pooled,
    and per (verifier, data set) in `groups`, each with its 95% interval; None when there is no
    accept-mode record."""
    recs = accept_records(records)
    if not recs:
        return None
    groups: dict[tuple[str, str], list[int]] = {}
    for r in recs:
        sa = r.get("step_acceptance") or {}
        g = groups.setdefault((verifier_of(r), dataset_of(r)), [0, 0, 0])
        g[0] += int(sa.get("proposed", 0))
        g[1] += int(sa.get("accepted", 0))
        g[2] += 1
    judged = sum(g[0] for g in groups.values())
    accepted = sum(g[1] for g in groups.values())
    return {"records": len(recs), **estimate(judged, accepted),
            "confidence": CONFIDENCE, "ci_method": CI_METHOD,
            "groups": [{"verifier": v, "dataset": d, "records": g[2], **estimate(g[0], g[1])}
                       for (v, d), g in sorted(groups.items())]}


def format_estimate(e: dict, digits: int = 3) -> str:
    """"0.630 [0.551, 0.703], 63/100 judged" ("-" when nothing was judged)."""
    if not e.get("judged") or e.get("rate") is None:
        return "-"
    text = f"{e['rate']:.{digits}f}"
    if e.get("ci95"):
        lo, hi = e["ci95"]
        text += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
    return text + f", {e['accepted']}/{e['judged']} judged"
