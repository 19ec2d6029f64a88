"""The demo's prediction of a live run, made before the run, and its side-by-side with the run.

    pred = predict(profile, corpus_records, "gsm8k/0", ("ar", "lr-d2"))   # before the live run
    rows = compare(pred, live_records)                                     # after it
    rows = predicted_vs_measured(profile, corpus_records, live_records)    # both in one call

The prediction replays the corpus record of the same problem and configuration (greedy decoding:
the live run writes the same text, so the same steps) through the simulator under `profile`
(lrsim.calib.replay.predict_record). `probe="none"` because the demo's profile is already
rescaled to this machine's speed now (`lr calibrate probe`). Speedups are tokens/s over AR's,
predicted over predicted and measured over measured.
"""
from __future__ import annotations

from lrcore.errors import UserError

CONFIGS = ("ar", "lr-d2")


def _label(rec: dict) -> str:
    from lrsim.calib.physical import config_label

    return config_label(rec)


def _pick(records: list[dict], problem_id: str, config: str, sample: int = 0) -> dict | None:
    found = [r for r in records if r["problem_id"] == problem_id and r["sample"] == sample
             and _label(r) == config and r.get("steps") and r.get("wall_time_s")]
    return found[-1] if found else None


def predict(profile, corpus: list[dict], problem_id: str, configs=CONFIGS, probe: str = "none",
            sample: int = 0) -> dict[str, dict]:
    """{config: {"latency_s", "tokens", "tokens_per_s", "speedup", "text", "correct"}}, from the
    corpus records of `problem_id` alone (nothing measured today)."""
    from lrsim.calib.replay import predict_record

    out = {}
    for cfg in configs:
        rec = _pick(corpus, problem_id, cfg, sample)
        if rec is None:
            have = sorted({_label(r) for r in corpus if r["problem_id"] == problem_id})
            raise UserError(f"corpus: no {cfg} record of {problem_id} to predict from "
                            f"(it has {', '.join(have) or 'no record of that problem'})")
        p = predict_record(profile, rec, probe=probe)
        tokens = int(rec["output_tokens"])
        out[cfg] = {"latency_s": float(p["latency_s"]), "tokens": tokens,
                    "tokens_per_s": tokens / p["latency_s"], "text": rec.get("output_text"),
                    "correct": rec.get("correct"), "speedup": None}
    if "ar" in out:
        for e in out.values():
            e["speedup"] = e["tokens_per_s"] / out["ar"]["tokens_per_s"]
    return out


def compare(pred: dict[str, dict], live: list[dict], problem_id: str | None = None,
            sample: int = 0) -> list[dict]:
    """One row per predicted configuration: predicted and measured latency, tokens/s and speedup
    over AR, whether the live answer was right and its text equals the corpus record's."""
    problem_id = problem_id or next((r["problem_id"] for r in live), None)
    rows = []
    for cfg, p in pred.items():
        rec = _pick(live, problem_id, cfg, sample) if problem_id else None
        row = {"config": cfg, "predicted_s": p["latency_s"], "pred_tokens_per_s": p["tokens_per_s"],
               "pred_speedup": p["speedup"], "measured_s": None, "meas_tokens_per_s": None,
               "meas_speedup": None, "diff_pct": None, "correct": None, "same_text": None,
               "tokens": None}
        if rec is not None:
            wall = float(rec["wall_time_s"])
            row |= {"measured_s": wall, "meas_tokens_per_s": rec["output_tokens"] / wall,
                    "diff_pct": 100.0 * (p["latency_s"] - wall) / wall, "correct": rec.get("correct"),
                    "tokens": int(rec["output_tokens"]),
                    "same_text": (None if p.get("text") is None or rec.get("output_text") is None
                                  else p["text"] == rec["output_text"])}
        rows.append(row)
    ar = next((r for r in rows if r["config"] == "ar" and r["meas_tokens_per_s"]), None)
    for r in rows:
        if ar and r["meas_tokens_per_s"]:
            r["meas_speedup"] = r["meas_tokens_per_s"] / ar["meas_tokens_per_s"]
    return rows


def predicted_vs_measured(profile, corpus: list[dict], live: list[dict], problem_id: str = "gsm8k/0",
                          configs=CONFIGS, probe: str = "none") -> list[dict]:
    return compare(predict(profile, corpus, problem_id, configs, probe), live, problem_id)


def _f(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def prediction_table(pred: dict[str, dict], title: str):
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for col in ("config", "tokens", "latency s", "tok/s", "x AR"):
        t.add_column(col, justify="left" if col == "config" else "right", no_wrap=True)
    for cfg, p in pred.items():
        t.add_row(cfg, str(p["tokens"]), f"{p['latency_s']:.1f}", f"{p['tokens_per_s']:.2f}",
                  _f(p["speedup"], ".2f"))
    return t


def comparison_table(rows: list[dict], title: str):
    """Predicted | measured side by side, 80 columns at most."""
    from rich import box
    from rich.table import Table

    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("config", "pred s", "meas s", "diff", "pred\ntok/s", "meas\ntok/s", "pred\nx AR",
                "meas\nx AR", "answer"):
        t.add_column(col, justify="left" if col in ("config", "answer") else "right", no_wrap=True)
    for r in rows:
        answer = {True: "right", False: "wrong", None: "-"}[r["correct"]]
        t.add_row(r["config"], f"{r['predicted_s']:.1f}", _f(r["measured_s"], ".1f"),
                  "-" if r["diff_pct"] is None else f"{r['diff_pct']:+.1f}%",
                  f"{r['pred_tokens_per_s']:.2f}", _f(r["meas_tokens_per_s"], ".2f"),
                  _f(r["pred_speedup"], ".2f"), _f(r["meas_speedup"], ".2f"), answer)
    return t
