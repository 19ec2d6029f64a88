"""Measured speedup under load (analysis/measured.py load_speedups) and its points in `lr plot`'s
speedup-vs-load figure; single-stream speedups leave records made under load alone."""
import pytest

from analysis import measured as meas


def rec(cfg, mode, pid, n, latency, wall=None):
    r = {"mode": mode, "problem_id": pid, "sample": 0, "output_tokens": 10,
         "wall_time_s": wall if wall is not None else latency,
         "run": {"flags": {"load_config": cfg}}}
    if n is not None:
        r["load"] = {"concurrency": n, "latency_s": latency}
    return r


def test_load_speedups_pair_ar_at_the_same_concurrency():
    recs = [rec("ar", "ar", "p1", 2, 10.0), rec("ar", "ar", "p2", 2, 14.0),
            rec("lr-d2", "lr", "p1", 2, 8.0), rec("lr-d2", "lr", "p2", 2, 12.0),
            rec("ar", "ar", "p1", 4, 20.0), rec("lr-d2", "lr", "p1", 4, 25.0),
            rec("lr-d2", "lr", "p9", 4, 1.0),      # no AR for p9 at 4: not paired
            rec("sd", "sd", "p1", 8, 5.0)]         # no AR at 8 at all: no point
    out = meas.load_speedups(recs)
    assert set(out) == {"lr-d2"}
    assert out["lr-d2"][2] == {"speedup": pytest.approx(24.0 / 20.0), "pairs": 2}
    assert out["lr-d2"][4] == {"speedup": pytest.approx(20.0 / 25.0), "pairs": 1}


def test_single_stream_speedups_skip_records_under_load():
    recs = [rec("ar", "ar", "p1", None, 10.0), rec("lr-d2", "lr", "p1", None, 5.0),
            rec("ar", "ar", "p1", 4, 10.0), rec("lr-d2", "lr", "p1", 4, 20.0),
            rec("ar", "ar", "p2", 1, 10.0), rec("lr-d2", "lr", "p2", 1, 10.0)]
    s = meas.speedups(recs)
    assert s["lr-d2"]["pairs"] == 2                      # p1 alone and p2 at concurrency 1
    assert s["lr-d2"]["speedup"] == pytest.approx(20.0 / 15.0)
    assert meas.in_flight(recs[0]) == 1 and meas.in_flight(recs[2]) == 4


def test_the_load_figure_draws_measured_series(tmp_path):
    from analysis import plots

    def is_png(b):
        return b[:8] == b"\x89PNG\r\n\x1a\n"

    f = plots.plot_load({"concurrency": [1, 2, 4, 8], "series": {"lr": [1.3, 1.2, 1.0, 0.8]},
                         "measured_series": {"lr-d2": [(1, 1.25), (2, 1.1), (4, 0.95), (8, 0.7)],
                                             "sd": [(1, 1.1)]},
                         "hardware": "2x cpu", "source": "x"}, tmp_path / "load.png")
    assert is_png(f.read_bytes())
