"""Plots of the analytical model (matplotlib imported lazily, headless Agg backend)."""
from __future__ import annotations

from pathlib import Path

from lrcore.errors import UserError


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, out: Path) -> Path:
    """Write the figure atomically (a temporary file beside `out`, then renamed over it)."""
    from lrcore.outputs import atomic_path

    out = Path(out)
    try:
        with atomic_path(out) as tmp:
            fig.savefig(tmp, dpi=120, bbox_inches="tight", format=out.suffix.lstrip(".") or "png")
    except OSError as e:
        raise UserError(f"--out {out}: cannot write ({e.strerror or e})") from None
    finally:
        pyplot().close(fig)
    return out


def plot_blog_figure(curves, out: Path) -> Path:
    """SD alone vs step+token speculation against the total parallel budget gamma."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(curves.gamma, curves.sd, "o-", ms=3, label="token-level SD: g(gamma)")
    ax.plot(curves.gamma, curves.combined, "s-", ms=3,
            label="step + token: g(sqrt(gamma))^2")
    for name, marker in (("sd", "C0"), ("combined", "C1")):
        g, s = curves.peak(name)
        ax.annotate(f"{s:.2f}x @ {g:.2f}", (g, s), textcoords="offset points", xytext=(6, 6),
                    color=marker)
        ax.plot([g], [s], "*", ms=12, color=marker)
    ax.set_xlabel("total parallelism gamma (drafted positions per target pass)")
    ax.set_ylabel("speedup vs autoregressive")
    ax.set_title("alpha = 0.5, c = 0.05 (paper blog figure)")
    ax.grid(alpha=0.3)
    ax.legend()
    return save(fig, out)


def plot_split_heatmap(grid, opt, out: Path, title: str = "") -> Path:
    """h(k1, k2) on the feasible grid under budget M, the exact optimum starred."""
    plt = pyplot()
    m = grid.shape[0]
    shown = min(m, 32)  # beyond ~32 the feasible region is a thin hyperbola: zoom on the useful part
    fig, ax = plt.subplots(figsize=(6.0, 5.0))
    im = ax.imshow(grid[:shown, :shown].T, origin="lower", cmap="viridis",
                   extent=(0.5, shown + 0.5, 0.5, shown + 0.5), aspect="auto")
    fig.colorbar(im, ax=ax, label="speedup h = f(k1) g(k2)")
    ax.plot([opt.best.k1], [opt.best.k2], "r*", ms=16, label=f"optimum ({opt.best.k1}, {opt.best.k2}): "
            f"{opt.best.speedup:.2f}x")
    ax.plot([opt.pure_sd.k1], [opt.pure_sd.k2], "w^", ms=8, mec="k", label=f"pure SD {opt.pure_sd.speedup:.2f}x")
    ax.plot([opt.pure_lr.k1], [opt.pure_lr.k2], "ws", ms=8, mec="k", label=f"pure LR {opt.pure_lr.speedup:.2f}x")
    ax.set_xlabel("k1 (step-level parallelism)")
    ax.set_ylabel("k2 (token-level parallelism)")
    ax.set_title(title or f"budget M = {opt.budget} ({opt.params.mode})")
    ax.legend(loc="upper right", fontsize=8)
    ax.set_xlim(0.5, shown + 0.5)
    ax.set_ylim(0.5, shown + 0.5)
    return save(fig, out)
