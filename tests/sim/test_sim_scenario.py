"""Scenario files: the shipped ones load and run; bad files give one-line errors naming the
file and the field."""
import pytest

from lrcore.errors import UserError
from lrsim.sim import scenario
from lrsim.sim.latency import Roofline, Tabulated

SHIPPED = ["h100-paper", "cpu-2core", "h100-llm-judge-aime", "h100-measured"]

GOOD = '''
name = "t"
[devices]
g0 = "gpu"
g1 = "gpu"
[models.target]
devices = ["g0"]
latency = { kind = "roofline", base_ms = 10, knee_tokens = 64 }
[models.draft]
devices = ["g1"]
latency = { kind = "table", decode = [[1, 2.0], [8, 3.0]] }
[workload]
steps = 10
alpha1 = 0.5
[policy]
name = "lr-sync"
k1 = 3
'''


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_scenarios_load(name):
    cfg = scenario.load(name)
    assert cfg.target is not None and cfg.draft is not None
    assert 0 < cfg.c1 < 1


def test_h100_paper_numbers_follow_from_bandwidth():
    cfg = scenario.load("h100-paper")
    t = cfg.target.latency
    assert isinstance(t, Roofline)
    # 32.76e9 params x 2 bytes / (2 GPUs x 3.35 TB/s x 0.8 x 0.9) + 2 ms overhead
    assert t.per_token() == pytest.approx(32.76e9 * 2 / (2 * 3.35e12 * 0.8 * 0.9) + 0.002, rel=1e-6)
    assert cfg.verifier.kind == "constant" and cfg.verifier.seconds == 0.013
    assert cfg.target.tp == 2 and len(cfg.target.devices) == 2
    assert 0.15 < cfg.c1 < 0.3


def test_cpu_scenario_is_one_shared_device():
    cfg = scenario.load("cpu-2core")
    assert cfg.target.devices == cfg.draft.devices == ["cpu0"]
    assert isinstance(cfg.target.latency, Tabulated)
    assert cfg.target.latency.forward(8, 0, 8, 0) == pytest.approx(0.572)


def test_custom_file(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(GOOD)
    cfg = scenario.load(str(p))
    assert cfg.policy == "lr-sync" and cfg.k1 == 3 and cfg.workload.steps == 10
    assert cfg.c1 == pytest.approx(0.2)


@pytest.mark.parametrize("edit,field", [
    (('base_ms = 10', 'base_ms = "x"'), "models.target.latency.base_ms"),
    (('kind = "roofline"', 'kind = "magic"'), "models.target.latency.kind"),
    (('devices = ["g1"]', 'devices = ["g9"]'), "models.draft.devices"),
    (('alpha1 = 0.5', 'alpha1 = 1.5'), "workload.alpha1"),
    (('name = "lr-sync"', 'name = "fast"'), "policy.name"),
    (('k1 = 3', 'k1 = 0'), "policy.k1"),
    (('steps = 10', 'stepz = 10'), "workload.stepz"),
    (('[models.target]', '[models.targett]'), "models.target"),
    (('decode = [[1, 2.0], [8, 3.0]]', 'decode = [[1]]'), "models.draft.latency.decode"),
])
def test_bad_file_names_file_and_field(tmp_path, edit, field):
    p = tmp_path / "bad.toml"
    p.write_text(GOOD.replace(*edit))
    with pytest.raises(UserError) as e:
        scenario.load(str(p))
    msg = str(e.value)
    assert "bad.toml" in msg and field in msg and "\n" not in msg


def test_invalid_toml_and_missing_file(tmp_path):
    p = tmp_path / "broken.toml"
    p.write_text("[devices\n")
    with pytest.raises(UserError, match="broken.toml: invalid TOML"):
        scenario.load(str(p))
    with pytest.raises(UserError, match="--scenario: no file"):
        scenario.load("no-such-scenario")
