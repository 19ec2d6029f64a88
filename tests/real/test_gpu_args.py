"""GPU-ready engine arguments: tensor parallelism, devices per engine and GPU memory
shares under vLLM's names, checked before start-up. Only the argument construction runs here: no
engine starts and no GPU is needed (the GPU count is passed in)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.fake_engine import fake_model_folder
from lrcore.errors import UserError
from lrreal import collect as collect_mod
from lrreal import models
from lrreal.collect import CollectSpec
from lrreal.engine import EngineArgs, check_gpu_layout, check_heads_divisible
from lrreal.judge_server import JudgeServer, JudgeServerConfig

# The paper's layout (arXiv 2506.19830): target TP=2 on GPUs 0,1, draft on GPU 2, judge on 3.
PAPER = dict(mode="lr", dtype="bfloat16", tensor_parallel_size=2, target_devices="0,1",
             draft_devices="2")


@pytest.fixture
def collector(tmp_path, monkeypatch):
    folder = fake_model_folder(tmp_path / "model")
    monkeypatch.setattr(models, "resolve", lambda name, cache=None, prepared=True: folder)

    def make(**kw):
        return collect_mod.Collector(CollectSpec(out=str(tmp_path / "t.jsonl"), **kw))
    return make


def test_cpu_arguments_are_unchanged():
    a = EngineArgs(model="m")
    kw = a.vllm_kwargs()
    assert kw["tensor_parallel_size"] == 1 and "gpu_memory_utilization" not in kw
    assert kw["enforce_eager"] is True and kw["dtype"] == "float32"
    assert a.environment() == {"VLLM_CPU_KVCACHE_SPACE": "2"} and not a.uses_gpu
    CollectSpec(mode="lr").check_gpus(gpus=0)          # CPU machine, CPU settings: nothing to check


def test_paper_layout_builds_one_engine_per_gpu_set(collector, monkeypatch):
    monkeypatch.setattr("lrreal.engine.gpu_count", lambda: 8)     # an 8-GPU machine, as in the paper
    col = collector(**PAPER, gpu_memory_utilization=0.9, draft_gpu_memory_utilization=0.8)
    col.spec.check_gpus(gpus=8)
    args = col.engine_args()
    t, d = args["target"], args["draft"]
    assert t.vllm_kwargs()["tensor_parallel_size"] == 2 and t.environment()["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert t.vllm_kwargs()["gpu_memory_utilization"] == 0.9 and t.vllm_kwargs()["dtype"] == "bfloat16"
    assert d.vllm_kwargs()["tensor_parallel_size"] == 1 and d.environment()["CUDA_VISIBLE_DEVICES"] == "2"
    assert d.vllm_kwargs()["gpu_memory_utilization"] == 0.8
    # CUDA graphs on GPUs; eager mode stays the CPU default
    assert t.enforce_eager is False and d.enforce_eager is False
    monkeypatch.setattr("lrreal.engine.gpu_count", lambda: 0)     # this CPU machine
    assert collector(mode="lr").engine_args()["target"].enforce_eager is True


@pytest.mark.parametrize("kw, gpus, match", [
    (dict(tensor_parallel_size=2, target_devices="0"), 8, r"--target-devices 0 lists 1 GPU\(s\) but --tensor-parallel-size is 2"),
    (dict(target_devices="0", draft_devices="0"), 8, r"GPU 0 is shared by 2 engines .* 1\.8 > 1"),
    (dict(), 8, r"GPU 0 is shared by 2 engines"),   # a GPU machine: both engines would take GPU 0
    (dict(draft_devices="9"), 8, r"--draft-devices: the draft engine needs GPU 9 but this machine has 8"),
    (dict(gpu_memory_utilization=1.5), 8, r"--gpu-memory-utilization must be in \(0, 1\]"),
    (dict(draft_gpu_memory_utilization=0.0), 8, r"--draft-gpu-memory-utilization must be in"),
    (dict(target_devices="a,b", tensor_parallel_size=2), 8, r"--target-devices 'a,b': use GPU indices"),
    (dict(target_devices="1,1", tensor_parallel_size=2), 8, r"each once"),
    (dict(tensor_parallel_size=2), 0, r"need NVIDIA GPUs .* this machine has none"),
])
def test_bad_gpu_settings_are_refused_before_start(kw, gpus, match):
    with pytest.raises(UserError, match=match):
        CollectSpec(mode="lr", **kw).check_gpus(gpus=gpus)


def test_shares_that_fit_may_share_a_gpu_and_ar_needs_no_draft_gpu():
    CollectSpec(mode="lr", target_devices="0", draft_devices="0", gpu_memory_utilization=0.6,
                draft_gpu_memory_utilization=0.3).check_gpus(gpus=1)
    CollectSpec(mode="ar", tensor_parallel_size=2, target_devices="0,1").check_gpus(gpus=2)
    CollectSpec(mode="lr", **{k: v for k, v in PAPER.items() if k != "mode"}).check_gpus(gpus=4)


def test_collect_cli_refuses_gpu_flags_on_this_cpu_machine(run_lr, tmp_path, monkeypatch):
    monkeypatch.setattr("lrreal.engine.gpu_count", lambda: 0)
    code, out, err = run_lr("collect", "--mode", "lr", "--tensor-parallel-size", "2",
                            "--target-devices", "0,1", "--out", str(tmp_path / "t.jsonl"))
    assert code == 2 and err.startswith("lr: error:") and "NVIDIA GPUs" in err and err.count("\n") == 1
    assert not (tmp_path / "t.jsonl").exists()


def test_heads_must_divide_the_tp_size():
    cfg = {"num_attention_heads": 40, "num_key_value_heads": 8}
    check_heads_divisible(cfg, 2, "target engine", "--tensor-parallel-size")
    check_heads_divisible(cfg, 8, "target engine", "--tensor-parallel-size")
    with pytest.raises(UserError, match="--tensor-parallel-size 3 does not divide the model's 40"):
        check_heads_divisible(cfg, 3, "target engine", "--tensor-parallel-size")


def test_judge_server_gets_its_own_gpu():
    cfg = JudgeServerConfig("target", tensor_parallel_size=2, gpu_memory_utilization=0.5, devices="3,4")
    srv = JudgeServer(cfg)
    srv.model_path, srv.port = Path("/models/judge"), 8000
    cmd = srv.command()
    i = cmd.index("--tensor-parallel-size")
    assert cmd[i + 1] == "2" and cmd[cmd.index("--gpu-memory-utilization") + 1] == "0.5"
    assert srv.environment()["CUDA_VISIBLE_DEVICES"] == "3,4"
    check_gpu_layout({"judge": (cfg.engine_args(), "--", "--devices")}, gpus=8)
    plain = JudgeServer(JudgeServerConfig("target"))
    plain.model_path, plain.port = Path("/models/judge"), 8000
    assert "--tensor-parallel-size" not in plain.command() and "--gpu-memory-utilization" not in plain.command()
    with pytest.raises(UserError, match="--devices 3 lists 1 GPU"):
        check_gpu_layout({"judge": (JudgeServerConfig("t", tensor_parallel_size=2, devices="3").engine_args(),
                                    "--", "--devices")}, gpus=8)
