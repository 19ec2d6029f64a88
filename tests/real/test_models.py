"""`lr models`: assembling parts, checks, atomic idempotent conversion, resolution (no real models)."""
from __future__ import annotations

import hashlib
import json
import sys
import types

import pytest

from lrcore.errors import UserError
from lrreal import models


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """A 3-part packaged 'model' whose part modules exist only in sys.modules."""
    chunks = [b"GGUF" + bytes(range(50)), b"x" * 1000, b"tail"]
    for i, data in enumerate(chunks, 1):
        f = tmp_path / f"part{i}.bin"
        f.write_bytes(data)
        mod = types.ModuleType(f"fakepart_mod{i}")
        mod.get_part_path = (lambda f=f: str(f))
        monkeypatch.setitem(sys.modules, f"fakepart_mod{i}", mod)
    blob = b"".join(chunks)
    m = models.PackagedModel("fake-model", "draft", "Org/Fake", "fakepart_mod", "fake-part", "1.0",
                             3, len(blob), hashlib.sha256(blob).hexdigest())
    monkeypatch.setitem(models.REGISTRY, m.name, m)
    calls = []

    def convert(gguf, out):
        calls.append(gguf.read_bytes())
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")

    monkeypatch.setattr(models, "convert_gguf_to_hf", convert)
    return m, calls, blob


def test_prepare_assembles_checks_and_is_idempotent(fake_model, tmp_path):
    m, calls, blob = fake_model
    cache = tmp_path / "cache"
    path = models.prepare(m.name, cache, log=lambda *_: None)
    assert calls == [blob]  # parts concatenated in numeric order
    assert models.is_ready(path)
    marker = json.loads((path / models.MARKER).read_text())
    assert marker["gguf_sha256"] == m.sha256
    assert models.prepare(m.name, cache, log=lambda *_: None) == path
    assert len(calls) == 1  # second run does nothing
    assert models.resolve(m.name, cache) == path
    assert [r["ready"] for r in models.status(cache) if r["name"] == m.name] == [True]


def test_interrupted_conversion_leaves_nothing_behind(fake_model, tmp_path, monkeypatch):
    m, _, _ = fake_model
    cache = tmp_path / "cache"

    def boom(gguf, out):
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")  # half-written folder
        raise KeyboardInterrupt

    monkeypatch.setattr(models, "convert_gguf_to_hf", boom)
    with pytest.raises(KeyboardInterrupt):
        models.prepare(m.name, cache, log=lambda *_: None)
    leftovers = [p for p in (cache / "models").iterdir() if p.is_dir()]
    assert leftovers == []
    with pytest.raises(UserError, match="lr models prepare"):
        models.resolve(m.name, cache)


def test_size_or_hash_mismatch_is_a_user_error(fake_model, tmp_path, monkeypatch):
    m, _, _ = fake_model
    bad = models.PackagedModel(**{**m.__dict__, "sha256": "0" * 64})
    monkeypatch.setitem(models.REGISTRY, m.name, bad)
    with pytest.raises(UserError, match="sha256"):
        models.prepare(m.name, tmp_path / "c", log=lambda *_: None)


def test_missing_part_package_names_what_to_install(monkeypatch, tmp_path):
    m = models.PackagedModel("ghost", "draft", "Org/Ghost", "no_such_part_module_", "ghost-part",
                             "0.1", 2, 1, "0" * 64)
    monkeypatch.setitem(models.REGISTRY, m.name, m)
    with pytest.raises(UserError, match=r"pip install ghost-part1==0\.1 ghost-part2==0\.1"):
        models.prepare("ghost", tmp_path, log=lambda *_: None)


def test_lookup_aliases_and_unknown_names():
    assert models.lookup("draft").name == "qwen2.5-coder-0.5b-instruct"
    assert models.lookup("target").name == "qwen2.5-coder-1.5b-instruct"
    with pytest.raises(UserError, match="unknown model"):
        models.lookup("gpt-17")


def test_resolve_local_folder_and_bad_paths(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert models.resolve(str(tmp_path)) == tmp_path.resolve()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="config.json"):
        models.resolve(str(empty))
    with pytest.raises(UserError, match="no such folder"):
        models.resolve("/nonexistent/model/dir")
    ident = models.model_identity(tmp_path)
    assert ident["path"] == str(tmp_path) and len(ident["sha256"]) == 64


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("LR_CACHE_DIR", str(tmp_path / "env"))
    assert models.cache_dir() == tmp_path / "env"
    assert models.cache_dir(tmp_path / "flag") == tmp_path / "flag"
    monkeypatch.delenv("LR_CACHE_DIR")
    assert models.cache_dir().name == "lr-toolkit"


def test_models_cli_list_json(tmp_path, capsys):
    from lrreal.models_cli import app

    with pytest.raises(SystemExit) as e:
        app(["list", "--cache-dir", str(tmp_path), "--json"])
    assert e.value.code == 0
    out = json.loads(capsys.readouterr().out)
    names = {r["name"] for r in out["models"]}
    assert {"qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"} <= names
    assert not any(r["ready"] for r in out["models"])
