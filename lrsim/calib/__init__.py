"""Calibration and fidelity: fit a simulator profile from real traces, replay traces through the
simulator and measure how closely it predicts the real runs (docs/calibration.md).

    profile.py    the versioned JSON profile: schema, load/save, Profile.to_config(...)
    models.py     the latency model a fitted profile uses (roofline with its own prefill slope)
    fit.py        least-squares fits of forward-pass latency (from engine stats or step spans)
    overheads.py  verifier latency, launch gaps, step lengths, acceptance from traces
    acceptance.py a profile's alpha1 from the acceptance protocol (mode accept; the estimate and
                  its 95% Wilson interval are lrcore/acceptance.py)
    calibrate.py  traces -> profile
    replay.py     trace-driven simulation vs measurement (MAPE, Pearson r, held-out split)
    curve.py      a measured latency curve (`lr calibrate measure`, lrreal/measure.py) -> profile
    rescale.py    a profile carried to another machine speed (probe factors)
    cli.py        `lr calibrate` (fit), `lr replay`; `measure` and `probe` run real engines and
                  are added to the group by the top-level cli.py (lrreal/calibrate_cli.py,
                  analysis/probe_cli.py)
"""
