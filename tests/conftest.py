"""Fixtures shared by every test directory."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A test marked `pure_python` patches methods of the simulator's classes, which the compiled
    modules (lrsim/native.py) call directly: where they are in use, it runs in a subprocess on
    the plain-Python modules (LRSIM_PURE=1) and passes if that run passes."""
    if pyfuncitem.get_closest_marker("pure_python") is None or os.environ.get("LRSIM_PURE"):
        return None
    from lrsim import native
    if not native.in_use():
        return None
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        pyfuncitem.nodeid], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "LRSIM_PURE": "1"})
    assert r.returncode == 0, f"{pyfuncitem.nodeid} on plain Python:\n{r.stdout[-4000:]}"
    return True


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


@pytest.fixture
def fake_collector(tmp_path, monkeypatch):
    """`lr collect`'s Collector on fake engines (harness/fake_engine.py), no vLLM and no lock:
    `patch(target_s, draft_s, wrong=None)` sets the engines' seconds per token and which drafted
    steps differ from the target's (`wrong(step, seed)`); returns the trace path to write."""
    import contextlib

    from harness.fake_engine import GSM8K_SCRIPT, FakeEngine, StubTokenizer, fake_model_folder
    from lrreal import collect as collect_mod
    from lrreal import models

    def patch(target_s: float, draft_s: float, wrong=None):
        folder = fake_model_folder(tmp_path / "model")
        monkeypatch.setattr(models, "resolve", lambda name, cache=None, prepared=True: folder)
        monkeypatch.setattr(collect_mod, "vllm_lock", lambda: contextlib.nullcontext())

        def start(self):
            self.engines["target"] = FakeEngine("target", GSM8K_SCRIPT, per_token_s=target_s)
            if self.draft_path is not None:
                self.engines["draft"] = FakeEngine("draft", GSM8K_SCRIPT, per_token_s=draft_s,
                                                   **({"wrong": wrong} if wrong else {}))

        monkeypatch.setattr(collect_mod.Collector, "start", start)
        monkeypatch.setattr(collect_mod.Collector, "tokenizer", lambda self: StubTokenizer())
        return tmp_path / "t.jsonl"
    return patch


@pytest.fixture
def fast_collect(fake_collector):
    """The trace path of an `lr collect` on fake engines that agree on every step (target 1 ms,
    draft 0.2 ms per token)."""
    return fake_collector(0.001, 0.0002)
