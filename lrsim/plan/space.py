"""What `lr plan` searches: the candidate configurations (mode, k1 | depth, k2, width, placement),
the load they are priced under and the hardware they run on (planner.py simulates them)."""
from __future__ import annotations

from dataclasses import dataclass, field

from lrcore.errors import UserError
from lrcore.modes import ADAPTIVE_MODES, SIM_MODE_POLICY

from ..sim.sweep import parallel_dim
from . import hardware as hw
from . import stats

# plan mode -> simulator policy: every mode the simulator runs (lrcore/modes.py: the real ones and
# the adaptive ones), plus lr-sync with n-gram SD on the target, which the planner can price but
# `lr collect` does not run
MODES = {**{m: policy for m, (policy, _) in SIM_MODE_POLICY.items()}, "lr-sync+sd": "lr-sync"}
OBJECTIVES = ("speedup", "goodput", "throughput")
SLO_METRICS = ("tpot", "latency")
DEFAULT_RATE_REQUESTS = 64       # requests simulated per plan under --rate (whole fleet)


@dataclass(frozen=True)
class Candidate:
    mode: str
    k1: int = 1
    depth: int = 1
    width: int = 1
    k2: int = 1
    placement: str = "dedicated"     # dedicated | shared | equal-resources
    role: str = ""                   # "reference" | "equal-resources" | ""

    @property
    def policy(self) -> str:
        return MODES[self.mode]

    @property
    def parallel(self) -> int:
        return parallel_dim(self.policy, self.k1, self.depth, self.width, self.k2)

    @property
    def label(self) -> str:
        knobs = []
        if self.mode in ("lr", "lr+sd"):
            knobs.append(f"depth={self.depth}" + (f" width={self.width}" if self.width > 1 else ""))
        if self.mode in ADAPTIVE_MODES:       # bounds: it chooses within them
            knobs.append(f"depth<={self.depth}" + (f" width<={self.width}" if self.width > 1 else ""))
        if self.mode.startswith("lr-sync"):
            knobs.append(f"k1={self.k1}")
        if self.k2 > 1:
            knobs.append(f"k2={self.k2}")
        where = {"dedicated": "", "shared": " shared", "equal-resources": " equal-resources"}[self.placement]
        return f"{self.mode}{' ' if knobs else ''}{' '.join(knobs)}{where}"


@dataclass(frozen=True)
class Load:
    concurrency: int | None = None
    rate: float | None = None
    requests: int | None = None      # --rate only: requests simulated over the whole fleet
    steps: int | None = None         # override the source's steps per request
    seed: int = 0
    samples: int = 1                 # workload seed blocks per candidate (the first round's, with ci_target)
    slo_ms: float | None = None
    slo_metric: str = "tpot"
    ci_target: float | None = None   # relative half-width the speedup intervals must reach (None: fixed samples)
    max_samples: int = 64            # blocks per candidate at most, with ci_target
    confidence: float = stats.CONFIDENCE

    def seed_of(self, k: int) -> int:
        return self.seed + 7919 * k

    def describe(self) -> str:
        s = f"{self.rate:g} req/s" if self.rate else f"concurrency {self.concurrency or 1}"
        if self.slo_ms:
            s += f", SLO {self.slo_ms:g} ms {'per token' if self.slo_metric == 'tpot' else 'per request'}"
        return s


@dataclass(frozen=True)
class Hardware:
    devices: int | None = None       # None: what one dedicated LR replica occupies
    kind: str | None = None          # None: the source's device kind
    tp_efficiency: float | None = None   # equal resources: bandwidth kept per TP doubling (None: 0.9)


@dataclass
class Plan:
    rows: list[dict]
    meta: dict = field(default_factory=dict)


def candidates(modes: list[str], depths: list[int], k1s: list[int], k2s: list[int], widths: list[int],
               placements: list[str], budget: int | None) -> list[Candidate]:
    """The grid, budget-filtered, plus the reference and equal-resources baselines (always)."""
    for m in modes:
        if m not in MODES:
            raise UserError(f"--modes: unknown mode {m!r} (choose from {', '.join(MODES)})")
    for p in placements:
        if p not in hw.PLACEMENTS:
            raise UserError(f"--placement: unknown placement {p!r} (choose from {', '.join(hw.PLACEMENTS)})")
    sd_k2s = [k for k in k2s if k >= 2]
    if any(_uses_sd(m) for m in modes) and not sd_k2s:
        raise UserError("--k2: SD modes need at least one k2 >= 2 (k2 = drafted tokens + 1)")
    out = [Candidate("ar", role="reference")]
    out += [Candidate("ar", placement="equal-resources", role="equal-resources")]
    out += [Candidate("sd", k2=k, placement="equal-resources", role="equal-resources") for k in sd_k2s]
    for m in modes:
        k2_list = sd_k2s if _uses_sd(m) else [1]
        if m == "ar":
            continue
        if m == "sd":
            out += [Candidate("sd", k2=k) for k in k2_list]
            continue
        for place in placements:
            for k2 in k2_list:
                if m.startswith("lr-sync"):
                    out += [Candidate(m, k1=k, depth=max(1, k - 1), k2=k2, placement=place) for k in k1s]
                elif m in ADAPTIVE_MODES:     # one candidate: it chooses depth and width itself
                    d = max(depths)
                    out.append(Candidate(m, k1=d + 1, depth=d, width=max(widths), k2=k2, placement=place))
                else:
                    out += [Candidate(m, k1=d + 1, depth=d, width=w, k2=k2, placement=place)
                            for d in depths for w in widths]
    if budget is not None:
        if budget < 1:
            raise UserError(f"--budget must be >= 1, got {budget}")
        out = [c for c in out if c.role or c.parallel <= budget]
    return list(dict.fromkeys(out))


def _uses_sd(mode: str) -> bool:
    """The mode runs n-gram SD on the target (sd, lr+sd, lr-sync+sd, lr+sd-adaptive)."""
    return mode.endswith("sd") or SIM_MODE_POLICY.get(mode, ("", False))[1]
