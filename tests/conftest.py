"""Fixtures shared by every test directory."""
import pytest

import cli


@pytest.fixture
def run_lr(capsys):
    """Run `lr ARGS...` in-process; returns (exit code, stdout, stderr)."""
    def run(*args):
        with pytest.raises(SystemExit) as exc:
            cli.main([str(a) for a in args])
        out, err = capsys.readouterr()
        return exc.value.code, out, err
    return run
