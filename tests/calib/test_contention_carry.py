"""The machine's contention carried by a probe (lrreal/probe.side_by_side, lrsim/calib/rescale):
the side-by-side probe's summary on passes laid out by hand, the scale a probe puts on a
profile's contention, and a replay that applies it (docs/calibration.md, "Contention")."""
from __future__ import annotations

import asyncio
import copy

import pytest

from lrcore.intervals import covered_fraction
from lrsim.calib.profile import Profile, validate_doc
from lrsim.calib.rescale import CONTENTION_FLOOR, contention_scales, probe_contention


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


def test_side_by_side_keeps_only_passes_wholly_beside_the_other_engine():
    from lrreal.probe import SIDE_SPAN, side_by_side

    # target: prefill 0-0.6, decodes of 0.3 s; the draft's decodes of 0.1 s stop at 1.3 s, so the
    # target's last two decodes (1.2-1.5, 1.5-1.8) are not beside it
    target = _Timed(lambda n: [_pass(0.0, 0.6, 32)] + [_pass(0.6 + 0.3 * i, 0.3) for i in range(n)])
    draft = _Timed(lambda n: [_pass(0.0, 0.3, 32)] + [_pass(0.3 + 0.1 * i, 0.1) for i in range(10)])
    alone = {"target": {"wall_s": 1.5, "decode_s": 0.25}, "draft": {"decode_s": 0.08}}
    out = asyncio.run(side_by_side(target, draft, alone, salt=1))
    assert draft.asked == [int(-(-SIDE_SPAN * 1.5 // 0.08))]     # the draft decodes all along
    assert out["target"] == {"contended_decode_s": 0.3, "contended_passes": 2}
    # the draft's passes: 0.3-1.3 all under the target's passes (prefill, then decodes)
    assert out["draft"] == {"contended_decode_s": 0.1, "contended_passes": 10}
    assert asyncio.run(side_by_side(target, draft, {"target": {}, "draft": {}}, salt=1)) == {}


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


def test_a_replay_carries_the_records_contention(minimal_doc):
    """probe_scaled (every replay and the load replay's blocks) scales contention by the probe
    before the record; a record whose probe has no side-by-side run keeps the fitted one."""
    from lrsim.calib.replay import probe_scaled

    prof = Profile(validate_doc(_physical(minimal_doc)))
    eng = {"target": {"decode_s": 0.4, "prefill_s": 1.2, "contended_decode_s": 0.44},   # c = 0.1
           "draft": {"decode_s": 0.2, "prefill_s": 0.4}}
    rec = {"problem_id": "p", "probe": {"before": {"t": 1.0, "engines": eng},
                                        "after": {"t": 2.0, "engines": eng}}}
    new = probe_scaled(prof, rec, "before")
    assert new.contention("target") == pytest.approx(0.1)
    assert new.doc["latency"]["target"]["base_s"] == pytest.approx(0.8)
    old = copy.deepcopy(rec)
    del old["probe"]["before"]["engines"]["target"]["contended_decode_s"]   # one dict: both sides
    assert probe_scaled(prof, old, "both").contention("target") == pytest.approx(0.2)


def test_the_reference_probe_holds_the_median_contended_pass():
    from lrsim.calib.physical import reference_probe

    def rec(c):
        e = {"target": {"decode_s": 0.2, "prefill_s": 0.6} | ({"contended_decode_s": c} if c else {})}
        return {"probe": {"before": {"t": c or 0, "engines": e}, "after": {"t": c or 0, "engines": e}}}

    ref = reference_probe([rec(0.22), rec(0.24), rec(0.30), rec(None)])
    assert ref["target"]["contended_decode_s"] == pytest.approx(0.24)
    assert ref["target"]["decode_s"] == pytest.approx(0.2)
    assert "contended_decode_s" not in reference_probe([rec(None)])["target"]
