"""`lr`: the Lookahead Reasoning toolkit's command line (Typer).

Sub-commands live next to the code they drive and are registered here; a command of a simulator
group (`lr theory`, `lr calibrate`) whose code needs the real backend or `analysis` lives in that
package and is added to the group here, since lrsim imports neither (see `_register`). Heavy
libraries (vLLM, torch, matplotlib) are imported inside the commands that need them, so
`lr --help` and `lr theory ...` stay fast.

Every failure a user can cause ends as one line `lr: error: ...` on stderr with exit code 2:
click's usage errors (unknown flag, value out of range) and our own `UserError`.
"""
from __future__ import annotations

import sys

import typer

from lrcore.errors import UserError

app = typer.Typer(
    name="lr",
    help="Lookahead Reasoning: theory, simulation and real execution of step-level + "
         "token-level speculative decoding.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _module(name: str):
    """The command module `name`, or None when its package is not installed."""
    try:
        return __import__(name, fromlist=["register"])
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            return None
        raise


def _register() -> None:
    from lrsim.calib.cli import app as calibrate_app
    from lrsim.theory.cli import app as theory_app

    # Every command module registers itself: `register(parent)` adds its commands or its group.
    # Optional ones are skipped when their package is not installed.
    for module in ("lrsim.theory.cli", "lrsim.sim.cli", "lrreal.models_cli", "lrreal.judge_cli",
                   "lrreal.collect_cli", "lrsim.calib.cli", "lrsim.plan.cli", "analysis.cli"):
        mod = _module(module)
        if mod is not None:
            mod.register(app)
    # Commands of a simulator group whose code needs a package the simulator may not import
    # (lrsim imports neither lrreal nor analysis): added here, above every package, in the order
    # they are listed in `lr theory --help` / `lr calibrate --help`.
    for module, group in (("analysis.theory_cli", theory_app),      # lr theory figure
                          ("analysis.probe_cli", calibrate_app),    # lr calibrate probe
                          ("lrreal.calibrate_cli", calibrate_app)):  # lr calibrate measure
        mod = _module(module)
        if mod is not None:
            mod.register(group)


_register()


def _fail(message: str, code: int = 2) -> None:
    from lrcore.tables import plain

    # one line, whatever the message holds: whitespace runs (newlines too) become one space and
    # control characters from file content (ESC ...) are shown escaped, never sent to the terminal
    print(f"lr: error: {plain(' '.join(str(message).split()))}", file=sys.stderr)
    sys.exit(code)


def _click_exceptions():
    """Typer >= 0.2x vendors its own click (typer._click); older releases use click itself."""
    try:
        from typer._click import exceptions
    except ImportError:  # pragma: no cover - depends on the installed Typer
        from click import exceptions
    return exceptions


def main(argv: list[str] | None = None) -> None:
    click_exc = _click_exceptions()
    command = typer.main.get_command(app)
    try:
        rv = command.main(args=argv, prog_name="lr", standalone_mode=False)
    except click_exc.NoArgsIsHelpError as e:
        print(e.ctx.get_help() if e.ctx else e.format_message())
        sys.exit(0)
    except click_exc.UsageError as e:  # includes BadParameter / NoSuchOption
        _fail(e.format_message(), e.exit_code)
    except click_exc.ClickException as e:
        _fail(e.format_message(), 2)
    except UserError as e:
        _fail(str(e), e.exit_code)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _fail("interrupted", 130)
    except BrokenPipeError:  # `lr ... | head` closed our stdout: not an error worth a line
        sys.stderr.close()
        sys.exit(0)
    except OSError as e:  # the environment (a full disk, a vanished folder) where no reader or
        # writer caught it first: still one line naming the file, never a traceback
        where = f"{e.filename}: " if e.filename else ""
        _fail(f"{where}{e.strerror or e}", 2)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
