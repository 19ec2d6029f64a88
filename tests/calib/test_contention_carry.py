"""The machine's contention carried by a probe (lrreal/probe.side_by_side, lrsim/calib/rescale):
the side-by-side probe's summary on passes laid out by hand, the scale a probe puts on a
profile's contention, and a replay that applies it (docs/calibration.md, "Contention")."""
from __future__ import annotations

import asyncio
import copy
import math

import pytest

from lrcore.intervals import covered_fraction
from lrsim.calib.profile import Profile, validate_doc
from lrsim.calib.rescale import (CONTENTION_FLOOR, CONTENTION_SCALE_MAX, contention_scales,
                                 probe_contention)


def test_covered_fraction():
    assert covered_fraction([(0, 1), (1, 2), (2, 4)], [(0.5, 1.5), (3, 3.5)]) == [0.5, 0.5, 0.25]
    assert covered_fraction([(0, 1)], []) == [0.0]
    assert covered_fraction([(1, 1)], [(0, 2)]) == [0.0]     # an empty span covers nothing


class _Timed:
    """An engine whose probe passes are laid out on a virtual clock: `passes(n)` gives them."""

    def __init__(self, layout):
        self.layout, self.asked = layout, []

    async def probe_passes(self, salt, prompt_tokens=32, decode_tokens=4):
        self.asked.append(decode_tokens)
        out = self.layout(decode_tokens)
        return out, out[-1]["t_end"] - out[0]["start"]


def _pass(start, dur, prefill=0):
    return {"start": start, "t_end": start + dur, "duration_s": dur, "prefill_tokens": prefill,
            "tokens_scheduled": prefill or 1, "batch_size": 1}


def _run(durs, t0=0.0, prefill=None):
    """Back-to-back passes of the given durations from t0 (a prefill pass first when given)."""
    out, t = [], t0
    if prefill:
        out.append(_pass(t, prefill, 32))
        t += prefill
    for d in durs:
        out.append(_pass(t, d))
        t += d
    return out


def test_side_by_side_keeps_only_passes_wholly_beside_the_other_engine():
    from lrreal.probe import SIDE_SPAN, SIDE_TARGET_PASSES, side_by_side

    # target: prefill 0-0.6, then decodes of 0.30, 0.34, 0.40, 0.31 s (ending 0.90, 1.24, 1.64,
    # 1.95; the layout gives 4 whatever the probe asks); the draft: prefill 0-0.3, 16 decodes of
    # 0.100-0.115 s (0.3 to about 2.0), then one more pass at 2.2-2.4, after the target's last:
    # not beside it
    t_durs = [0.30, 0.34, 0.40, 0.31]
    d_durs = [0.1 + 0.001 * i for i in range(16)]
    target = _Timed(lambda n: _run(t_durs[:n], prefill=0.6))
    draft = _Timed(lambda n: _run(d_durs, prefill=0.3) + [_pass(2.2, 0.2)])
    alone = {"target": {"wall_s": 1.5, "decode_s": 0.25, "decode_passes": 4},
             "draft": {"decode_s": 0.08}}
    out = asyncio.run(side_by_side(target, draft, alone, salt=1))
    # the target decodes SIDE_TARGET_PASSES beside the draft, which decodes all along: for
    # SIDE_SPAN times the target's alone wall with the extra passes at its alone decode time
    assert SIDE_TARGET_PASSES >= 12 and target.asked == [SIDE_TARGET_PASSES]
    t_wall = 1.5 + (SIDE_TARGET_PASSES - 4) * 0.25
    assert draft.asked == [math.ceil(SIDE_SPAN * t_wall / 0.08)]
    # an alone target probe that timed no decode pass (decode_s None): its wall alone, no crash
    draft.asked.clear()
    lame = {"target": {"wall_s": 1.5, "decode_s": None, "decode_passes": 0}, "draft": {"decode_s": 0.08}}
    asyncio.run(side_by_side(target, draft, lame, salt=1))
    assert draft.asked == [math.ceil(SIDE_SPAN * 1.5 / 0.08)]
    end = 0.3 + sum(d_durs)                                      # the draft's 16th decode ends
    assert 1.95 < end < 2.2                                      # so all 4 target decodes are under
    assert out["target"] == {"contended_decode_s": 0.34, "contended_passes": 4}   # upper median
    # the draft's decodes: the 16th (to ~2.02) sticks out past the target's end at 1.95 by more
    # than 10%; the one at 2.2 is not beside anything
    last = d_durs[-1]
    assert (end - 1.95) / last > 0.1
    kept = sorted(d_durs[:15])
    assert out["draft"] == {"contended_decode_s": pytest.approx(kept[7]), "contended_passes": 15}
    assert asyncio.run(side_by_side(target, draft, {"target": {}, "draft": {}}, salt=1)) == {}


def test_a_pass_partly_beside_the_other_engine_does_not_count():
    from lrreal.probe import SIDE_COVERED, side_by_side

    # the draft stops at 1.0: the target's decode 0.9-1.2 is covered 1/3, 0.6-0.9 wholly
    target = _Timed(lambda n: [_pass(0.0, 0.6, 32)] + [_pass(0.6 + 0.3 * i, 0.3 + 0.01 * i)
                                                       for i in range(n)])
    draft = _Timed(lambda n: [_pass(0.0, 0.2, 32)] + [_pass(0.2 + 0.1 * i, 0.1) for i in range(8)])
    out = asyncio.run(side_by_side(target, draft, {"target": {"wall_s": 1.8}, "draft": {"decode_s": 0.1}}, 2))
    assert out["target"] == {"contended_decode_s": 0.3, "contended_passes": 1}
    # a pass covered 80% (between 1/3 and SIDE_COVERED) is left out too
    assert SIDE_COVERED > 0.8
    draft2 = _Timed(lambda n: [_pass(0.0, 0.2, 32)] + [_pass(0.2 + 0.1 * i, 0.1) for i in range(9)]
                    + [_pass(1.1, 0.0549)])       # 0.9-1.21 covered 0.2549 / 0.31 = 0.82
    out2 = asyncio.run(side_by_side(target, draft2, {"target": {"wall_s": 1.8}, "draft": {"decode_s": 0.1}}, 2))
    assert out2["target"]["contended_passes"] == 1


def test_probe_engines_adds_the_side_by_side_run_only_where_both_engines_can():
    from lrreal.probe import probe_engines

    class Both(_Timed):
        async def probe(self, salt):
            return {"prefill_tokens": 32, "prefill_s": 0.6, "decode_s": 0.25, "decode_passes": 4,
                    "wall_s": 1.6}

    lay = lambda n: [_pass(0.0, 0.6, 32)] + [_pass(0.6 + 0.3 * i, 0.3) for i in range(n)]  # noqa: E731
    rec = asyncio.run(probe_engines({"target": Both(lay), "draft": Both(lay)}, salt=3))
    assert rec["engines"]["target"]["contended_decode_s"] == 0.3
    assert rec["engines"]["target"]["decode_s"] == 0.25       # the alone probe is kept
    one = asyncio.run(probe_engines({"target": Both(lay)}, salt=3))
    assert "contended_decode_s" not in one["engines"]["target"]


def test_contention_scales():
    ref = {"target": {"decode_s": 0.2, "contended_decode_s": 0.24},      # c = 0.20
           "draft": {"decode_s": 0.1, "contended_decode_s": 0.1005}}     # c = 0.005: noise
    now = {"target": {"decode_s": 0.9, "contended_decode_s": 0.99},      # c = 0.10
           "draft": {"decode_s": 0.4, "contended_decode_s": 0.5}}
    assert probe_contention(now["target"]) == pytest.approx(0.10)
    assert probe_contention({"decode_s": 1.0, "contended_decode_s": 0.9}) == 0.0   # never below
    assert probe_contention({"decode_s": 1.0}) is None
    assert 0.005 < CONTENTION_FLOOR
    assert contention_scales(ref, [now]) == {"target": pytest.approx(0.5)}
    # several probes: their c averaged; a probe without the side-by-side run does not count
    later = {"target": {"decode_s": 0.9, "contended_decode_s": 1.17}}                # c = 0.30
    assert contention_scales(ref, [now, later, {"target": {"decode_s": 1}}]) == \
        {"target": pytest.approx(1.0)}
    assert contention_scales({"target": {"decode_s": 0.2}}, [now]) == {}   # an old reference
    # a reference's aggregate c (reference_probe's median of its probes' c) wins over its medians
    assert contention_scales({"target": {"decode_s": 0.2, "contended_decode_s": 0.3,
                                         "contention": 0.05}}, [now]) == {"target": pytest.approx(2.0)}
    # at most CONTENTION_SCALE_MAX; a probe with one pass beside the other engine does not count
    huge = {"target": {"decode_s": 0.9, "contended_decode_s": 9.0}}
    assert contention_scales(ref, [huge]) == {"target": CONTENTION_SCALE_MAX}
    thin = {"target": {"decode_s": 0.9, "contended_decode_s": 0.99, "contended_passes": 1}}
    assert contention_scales(ref, [thin]) == {}


def _physical(doc):
    doc = copy.deepcopy(doc)
    for role, (base, beta) in {"target": (0.4, 0.2), "draft": (0.1, 0.0)}.items():
        doc["latency"][role] = {"kind": "roofline", "base_s": base, "knee_tokens": 1,
                                "per_token_s": 0.02, "prefill_per_token_s": 0.02,
                                "per_ctx_token_s": 0.0, "overhead_s": 0.0, "contention": beta,
                                "fit": {"points": 10, "rmse_s": 0.01, "mape": 0.02, "source": "x"}}
    doc["probe"] = {"target": {"decode_s": 0.2, "prefill_s": 0.6, "contended_decode_s": 0.24},
                    "draft": {"decode_s": 0.1, "prefill_s": 0.2}}
    return doc


def test_rescaled_scales_contention_and_says_so(minimal_doc):
    prof = Profile(validate_doc(_physical(minimal_doc)))
    new = prof.rescaled({"target": (2.0, 2.0)}, "x", contention={"target": 0.5, "draft": 3.0})
    assert new.contention("target") == pytest.approx(0.1) and new.contention("draft") == 0.0
    assert new.doc["latency"]["target"]["base_s"] == pytest.approx(0.8)
    assert new.doc["rescaled"]["contention"] == {"target": 0.5, "draft": 3.0}
    assert prof.contention("target") == 0.2                       # the original is untouched
    assert "contention" not in prof.rescaled({"target": (2.0, 2.0)}).doc["rescaled"]
    # an old profile's per-mode entry (latency.<role>@<mode>) is scaled with its role
    doc = _physical(minimal_doc)
    doc["latency"]["target@lr"] = dict(doc["latency"]["target"], contention=0.4)
    old = Profile(validate_doc(doc)).rescaled({}, "x", contention={"target": 0.5})
    assert old.contention("target", "lr") == pytest.approx(0.2) and old.contention("target") == pytest.approx(0.1)
    # the record names only the roles whose contention it scaled
    assert prof.rescaled({}, "x", contention={"verifier": 2.0}).doc["rescaled"].get("contention") is None


def test_a_replay_carries_the_records_contention(minimal_doc):
    """probe_scaled (every replay and the load replay's blocks) scales contention by the probe
    before the record; a record whose probe has no side-by-side run keeps the fitted one."""
    from lrsim.calib.replay import probe_scaled

    prof = Profile(validate_doc(_physical(minimal_doc)))
    before = {"target": {"decode_s": 0.4, "prefill_s": 1.2, "contended_decode_s": 0.44},  # c 0.1
              "draft": {"decode_s": 0.2, "prefill_s": 0.4}}
    after = {"target": {"decode_s": 0.4, "prefill_s": 1.2, "contended_decode_s": 0.52},   # c 0.3
             "draft": {"decode_s": 0.2, "prefill_s": 0.4}}
    rec = {"problem_id": "p", "probe": {"before": {"t": 1.0, "engines": before},
                                        "after": {"t": 2.0, "engines": after}}}
    # a record's own probe: speed only (one probe's c is too noisy; the fit divides out speed only)
    own = probe_scaled(prof, rec, "before")
    assert own.contention("target") == 0.2 and own.doc["latency"]["target"]["base_s"] == pytest.approx(0.8)
    # an aggregate (a corpus's median probe, load_replay's `speed`): contention carried
    new = probe_scaled(prof, rec, "before", contention=True)
    assert new.contention("target") == pytest.approx(0.1)              # 0.2 * 0.1 / 0.2
    assert new.doc["latency"]["target"]["base_s"] == pytest.approx(0.8)
    assert probe_scaled(prof, rec, "both", contention=True).contention("target") == \
        pytest.approx(0.2 * 0.2 / 0.2)                                 # median of 0.1 and 0.3
    old = copy.deepcopy(rec)
    for side in ("before", "after"):
        del old["probe"][side]["engines"]["target"]["contended_decode_s"]
    assert probe_scaled(prof, old, "both", contention=True).contention("target") == pytest.approx(0.2)


def test_the_reference_probe_holds_the_median_contended_pass():
    from lrsim.calib.physical import reference_probe

    def rec(c):
        e = {"target": {"decode_s": 0.2, "prefill_s": 0.6} | ({"contended_decode_s": c} if c else {})}
        return {"probe": {"before": {"t": c or 0, "engines": e}, "after": {"t": c or 0, "engines": e}}}

    ref = reference_probe([rec(0.22), rec(0.24), rec(0.30), rec(None)])
    assert ref["target"]["contended_decode_s"] == pytest.approx(0.24)
    assert ref["target"]["contention"] == pytest.approx(0.2)          # median of 0.1, 0.2, 0.5
    assert ref["target"]["decode_s"] == pytest.approx(0.2)
    assert "contended_decode_s" not in reference_probe([rec(None)])["target"]


def test_the_reference_contention_counts_each_probe_once():
    """A block's one start probe is shared by its N records: counted per record, the 8 requests of
    one block would outvote every probe of the blocks of one (the x1.10 vs 1.64 of docs/load.md's
    side-by-side corpus). The speed medians keep counting per record, as the fit prices them."""
    from lrsim.calib.physical import reference_probe

    def eng(c):
        return {"target": {"decode_s": 0.2, "contended_decode_s": 0.2 * (1 + c), "contended_passes": 12}}

    block = {"t": 100.0, "engines": eng(0.5)}
    in_block = [{"run": {"probe_at_start": block}} for _ in range(8)]
    alone = [{"probe": {"before": {"t": t, "engines": eng(0.1)}, "after": {"t": t + 1, "engines": eng(0.1)}}}
             for t in (1.0, 3.0)]
    ref = reference_probe(in_block + alone)
    assert ref["target"]["contention"] == pytest.approx(0.1)      # probes 0.5, 0.1 x 4
    assert ref["target"]["contended_decode_s"] == pytest.approx(0.3)   # per record: 16 of 20 at 0.3
