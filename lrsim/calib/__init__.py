"""Calibration and fidelity: fit a simulator profile from real traces, replay traces through the
simulator and measure how closely it predicts the real runs (docs/calibration.md).

    profile.py    the versioned JSON profile: schema, load/save, Profile.to_config(...)
    models.py     the latency model a fitted profile uses (roofline with its own prefill slope)
    fit.py        least-squares fits of forward-pass latency (from engine stats or step spans)
    overheads.py  verifier latency, launch gaps, step lengths, acceptance from traces
    acceptance.py alpha1 of the acceptance protocol (mode accept) with its 95% Wilson interval
    calibrate.py  traces -> profile
    replay.py     trace-driven simulation vs measurement (MAPE, Pearson r, held-out split)
    measure.py    direct latency curves on a real engine (synthetic batches)
    cli.py        `lr calibrate`, `lr calibrate measure`, `lr replay`
"""
