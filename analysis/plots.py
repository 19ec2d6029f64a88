"""Figures of theory vs simulation vs measurement (matplotlib, lazily imported, Agg backend).

Every function takes plain numbers (collected by analysis/report.py) and writes one PNG. Styles
are consistent across figures: theory = lines, simulation = filled markers, measurement = open
black markers with their sample size in the legend.
"""
from __future__ import annotations

import math
from pathlib import Path

from .theory_plots import pyplot, save

THEORY = dict(lw=1.8, alpha=0.9)
SIM = dict(marker="o", ms=6, ls="--", lw=1)
MEAS = dict(ms=8, mfc="none", mec="k", mew=1.5, ls="none")
MEAS_MARKERS = "Ds^v<>PXph"     # one per measured configuration
REPLAY = dict(marker="x", ms=7, mew=1.5, ls="none", color="C3")


def _measured(ax, points, replayed=()):
    """Measured configurations (open black markers, one shape each) and, where given, the
    simulator replaying the same records (red crosses, one legend entry)."""
    for i, (x, y, label) in enumerate(points):
        ax.plot([x], [y], marker=MEAS_MARKERS[i % len(MEAS_MARKERS)], label=f"measured {label}", **MEAS)
    if replayed:
        xs, ys, _ = zip(*replayed)
        ax.plot(xs, ys, label="simulated on the measured records (replay)", **REPLAY)
COMPONENT_COLOURS = {"draft": "C2", "target": "C0", "verify": "C3", "target idle": "0.6"}


def _finish(ax, xlabel, ylabel, title, legend=True):
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if legend:
        ax.legend(fontsize=8, loc="best")


def plot_depth(d: dict, out: Path) -> Path:
    """Speedup vs k1 (= depth + 1 for the async tree): f_sync, f_async closed forms, simulated
    lr-sync and lr-async, measured LR."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    k1 = d["k1"]
    ax.plot(k1, d["theory_sync"], color="C0", label="theory f_sync(k1) (Alg. 1)", **THEORY)
    ax.plot(k1, d["theory_async"], color="C1", label="theory f_async(k1) (App. B Thm 2)", **THEORY)
    if d.get("sim_sync"):
        x, y = zip(*d["sim_sync"])
        ax.plot(x, y, color="C0", label="simulated lr-sync", **SIM)
    if d.get("sim_async"):
        x, y = zip(*d["sim_async"])
        ax.plot(x, y, color="C1", label="simulated lr-async (k1 = depth + 1)", **SIM)
    _measured(ax, d.get("measured", []), d.get("replayed", ()))
    ax.axhline(1.0, color="k", lw=0.8)
    _finish(ax, "k1 (target steps in parallel = drafted steps + 1)", "speedup vs AR",
            f"Step level: alpha1 = {d['alpha1']:.2f}, c1 = {d['c1']:.3f} ({d['source']})")
    return save(fig, out)


def plot_k2(d: dict, out: Path) -> Path:
    """Speedup vs k2: g(k2) closed form, simulated SD (and LR+SD), measured SD."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(d["k2"], d["theory"], color="C0", label="theory g(k2) (Sec. 3.3)", **THEORY)
    if d.get("theory_hybrid") is not None:
        ax.plot(d["k2"], d["theory_hybrid"], color="C1",
                label=f"theory f_async(k1={d['k1']}) g(k2)", **THEORY)
    ax.axhline(d["ceiling"], color="C0", lw=0.8, ls=":", label=f"SD ceiling 1/(1-alpha2) = {d['ceiling']:.2f}")
    if d.get("sim_sd"):
        x, y = zip(*d["sim_sd"])
        ax.plot(x, y, color="C0", label="simulated sd", **SIM)
    if d.get("sim_hybrid"):
        x, y = zip(*d["sim_hybrid"])
        ax.plot(x, y, color="C1", label=f"simulated lr+sd (depth {d['k1'] - 1})", **SIM)
    _measured(ax, d.get("measured", []), d.get("replayed", ()))
    ax.axhline(1.0, color="k", lw=0.8)
    _finish(ax, "k2 (positions per verify pass = drafted tokens + 1)", "speedup vs AR",
            f"Token level: alpha2 = {d['alpha2']:.2f}, c2 = {d['c2']:.3f} ({d['source']})")
    return save(fig, out)


def plot_heatmaps(theory: dict, sim: dict, out: Path) -> Path:
    """Left: h(k1, k2) = f_async g under budget M (closed form), optimum starred. Right: the
    simulated speedup on the (depth + 1, k2) grid under the same budget, its optimum starred."""
    import numpy as np

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.6))
    grid = np.asarray(theory["grid"], float)
    n = grid.shape[0]
    vmin = float(np.nanmin([np.nanmin(grid), min(sim["values"].values(), default=1.0)]))
    vmax = float(np.nanmax([np.nanmax(grid), max(sim["values"].values(), default=1.0)]))
    im = axes[0].imshow(grid.T, origin="lower", cmap="viridis", vmin=vmin, vmax=vmax,
                        extent=(0.5, n + 0.5, 0.5, n + 0.5), aspect="auto")
    b = theory["best"]
    axes[0].plot([b[0]], [b[1]], "r*", ms=14, label=f"optimum ({b[0]}, {b[1]}): {b[2]:.2f}x")
    axes[0].set_title(f"theory h = f_async(k1) g(k2), M = {theory['budget']}", fontsize=10)
    ks = sorted({k for k, _ in sim["values"]})
    k2s = sorted({k for _, k in sim["values"]})
    sgrid = np.full((max(ks), max(k2s)), np.nan)
    for (k1, k2), v in sim["values"].items():
        sgrid[k1 - 1, k2 - 1] = v
    axes[1].imshow(sgrid.T, origin="lower", cmap="viridis", vmin=vmin, vmax=vmax,
                   extent=(0.5, max(ks) + 0.5, 0.5, max(k2s) + 0.5), aspect="auto")
    for (k1, k2), v in sim["values"].items():
        axes[1].text(k1, k2 - 0.3, f"{v:.2f}", ha="center", va="center", fontsize=7, color="w")
    sb = sim["best"]
    axes[1].plot([sb[0]], [sb[1]], "r*", ms=14, label=f"optimum (depth {sb[0] - 1}, k2 {sb[1]}): {sb[2]:.2f}x")
    axes[1].set_title(f"simulated lr-async ({sim['source']}), same budget", fontsize=10)
    from matplotlib.ticker import MaxNLocator

    for ax, xl in zip(axes, ("k1 (step-level parallelism)", "k1 = depth + 1")):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(xl)
        ax.set_ylabel("k2 (token-level parallelism)")
        ax.legend(loc="upper right", fontsize=8)
    fig.colorbar(im, ax=axes, label="speedup vs AR", shrink=0.9)
    return save(fig, out)


def plot_acceptance(d: dict, out: Path) -> Path:
    """Step acceptance rate by speculation depth: theory (i.i.d. alpha1), simulated, measured."""
    import numpy as np

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    depths = sorted(set(d.get("sim", {})) | set(d.get("measured", {})))
    x = np.arange(len(depths))
    ax.axhline(d["alpha1"], color="C1", label=f"theory: i.i.d. alpha1 = {d['alpha1']:.2f}", **THEORY)
    w = 0.38
    for off, key, style in ((-w / 2, "sim", dict(color="C0", label="simulated")),
                            (w / 2, "measured", dict(color="none", edgecolor="k", hatch="//", label="measured"))):
        if not d.get(key):
            continue
        vals = [d[key].get(k, (math.nan, 0)) for k in depths]
        ax.bar(x + off, [v[0] for v in vals], w, **style)
        for xi, (rate, n) in zip(x, vals):
            if n:
                ax.text(xi + off, rate + 0.01, f"n={n}", ha="center", fontsize=7)
    ax.set_xticks(x, [str(k) for k in depths])
    ax.set_ylim(0, 1.22)
    _finish(ax, "depth (levels below the committed step)", "step acceptance rate (n = drafts judged)",
            f"Acceptance by depth ({d['source']})", legend=False)
    ax.legend(fontsize=8, loc="upper center", ncol=3)
    return save(fig, out)


def plot_breakdown(d: dict[str, dict[str, float]], out: Path) -> Path:
    """Share of wall time each component is busy (draft, target, verifier) and the target idles,
    one bar group per (source, mode). Components overlap in async modes: shares need not sum to 1."""
    import numpy as np

    from .measured import COMPONENTS

    plt = pyplot()
    labels = list(d)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.2 * len(labels) + 2), 4.2))
    x = np.arange(len(labels))
    w = 0.8 / len(COMPONENTS)
    for i, c in enumerate(COMPONENTS):
        ax.bar(x + (i - 1.5) * w, [d[lab].get(c, 0.0) for lab in labels], w, label=c,
               color=COMPONENT_COLOURS[c])
    ax.set_xticks(x, labels, rotation=15, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    _finish(ax, "", "share of wall time", "Latency breakdown: busy share per component "
            "(overlapping in async modes)")
    return save(fig, out)


def plot_load(d: dict, out: Path) -> Path:
    """Speedup vs load (concurrent requests) for each configuration, vs AR on the same devices."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (label, ys) in enumerate(d["series"].items()):
        style = dict(ls=":", marker="s") if "equal" in label else dict(ls="-", marker="o")
        ax.plot(d["concurrency"], ys, color=f"C{i}", label=label, ms=5, **style)
    _measured(ax, d.get("measured", []))
    for i, (label, pts) in enumerate(sorted(d.get("measured_series", {}).items())):
        xs, ys = zip(*pts)
        ax.plot(xs, ys, marker=MEAS_MARKERS[i % len(MEAS_MARKERS)], label=f"measured {label}",
                **(MEAS | {"ls": "--", "color": "0.3", "lw": 0.8}))
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(d["concurrency"], [str(c) for c in d["concurrency"]])
    _finish(ax, "concurrent requests", "speedup vs AR (mean request latency)",
            f"Speedup vs load on {d['hardware']} ({d['source']})")
    return save(fig, out)
