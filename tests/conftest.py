"""Fixtures shared by every test directory."""
import pytest

import cli


@pytest.fixture(scope="session")
def prepared_cache():
    """The packaged draft and target models, prepared once per session (cold cache: converted
    once; warm: a no-op); real end-to-end tests take their --cache-dir from it."""
    pytest.importorskip("vllm")
    from lrreal import models

    cache = models.cache_dir()
    for name in (models.DEFAULT_DRAFT, models.DEFAULT_TARGET):
        models.prepare(name, cache)
    return cache


@pytest.fixture
def run_lr(capsys):
    """Run `lr ARGS...` in-process; returns (exit code, stdout, stderr)."""
    def run(*args):
        with pytest.raises(SystemExit) as exc:
            cli.main([str(a) for a in args])
        out, err = capsys.readouterr()
        return exc.value.code, out, err
    return run
