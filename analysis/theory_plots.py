"""Plots of the analytical model (matplotlib imported lazily, headless Agg backend)."""
from __future__ import annotations

from pathlib import Path

from lrsim.errors import UserError


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, out: Path) -> Path:
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=120, bbox_inches="tight")
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
