"""Bad-input matrix for the whole `lr` command line: unknown and misspelt flags, missing
arguments and values, wrong types, NaN/inf, out-of-range numbers, unknown names (mode, policy,
verifier, preset, scenario, data set ...) and extra positional arguments.

Every command and sub-command is enumerated from the Typer app itself, so a new command or
option is covered without editing this file. Each case must end as exactly one stderr line
`lr: error: ...` with exit code 2, naming the flag (or the bad value) at fault, and never a
traceback. Nothing slow may start: engine, judge server, model preparation and latency
measurement entry points are replaced by tripwires that fail the test if reached.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import typer

import cli

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "data" / "calib" / "fake-scheduler.jsonl"
PROFILE = ROOT / "tests" / "data" / "calib" / "cpu-gsm8k-profile.json"
PROBED_PROFILE = ROOT / "tests" / "data" / "calib" / "corpus-profile.json"   # has a reference probe
CASE_TIMEOUT_S = 15      # a case that passes validation by mistake and starts real work

# Minimal valid invocations: every bad case below changes exactly one thing in these, so the
# failure can only come from that change. The values keep any accidental run tiny.
BASE = {
    "simulate": ["--policy", "lr-sync", "--ideal", "--alpha1", "0.5", "--c1", "0.1",
                 "--steps", "4", "--requests", "1"],
    "sweep": ["--policy", "lr-sync", "--ideal", "--alpha1", "0.5", "--c1", "0.1",
              "--steps", "4", "--requests", "1", "--k1", "2", "--jobs", "1"],
    "collect": ["--limit", "1", "--max-tokens", "8"],
    "replay": [str(TRACE), "--profile", str(PROFILE)],
    "plan": ["--preset", "r1-gsm8k", "--modes", "lr", "--depth", "1", "--steps", "4",
             "--samples", "1", "--jobs", "1", "--placement", "dedicated"],
    "plot": ["--quick", "--steps", "4", "--samples", "1", "--jobs", "1", "--no-paper-table"],
    "theory speedup": ["--alpha1", "0.5", "--c1", "0.1", "--k1", "2"],
    "theory optimize": ["--alpha1", "0.5", "--c1", "0.1", "--budget", "8"],
    "theory figure": [],
    "models prepare": ["draft"],
    "models list": [],
    "judge serve": ["--model", "draft"],
    "judge ask": ["--target", "a", "--draft", "b", "--judge-url", "http://127.0.0.1:9",
                  "--verifier", "exact"],
    "calibrate fit": [str(TRACE), "--out", "profile.json"],
    "calibrate measure": ["--model", "draft", "--out", "curve.json"],
    "calibrate probe": ["--profile", str(PROBED_PROFILE), "--out", "today.json"],
}

# Unknown names for options that take one from a fixed set (typer enums are covered
# automatically; these are free-form strings checked by our code).
UNKNOWN_NAMES = {
    ("collect", "--mode"), ("collect", "--dataset"), ("collect", "--verifier"),
    ("collect", "--target"), ("collect", "--draft"), ("collect", "--dtype"),
    ("collect", "--target-cores"), ("collect", "--draft-cores"),
    ("plan", "--preset"), ("plan", "--scenario"), ("plan", "--latency"), ("plan", "--device-kind"),
    ("plan", "--placement"), ("plan", "--slo-metric"), ("plan", "--modes"), ("plan", "--objective"),
    ("plan", "--depth"), ("plan", "--k1"), ("plan", "--k2"), ("plan", "--width"),
    ("plot", "--preset"), ("plot", "--scenario"), ("plot", "--latency"),
    ("simulate", "--scenario"), ("sweep", "--scenario"),
    ("sweep", "--k1"), ("sweep", "--depth"), ("sweep", "--width"), ("sweep", "--k2"),
    ("collect", "--judge-prompt"), ("judge ask", "--judge-prompt"), ("collect", "--judge-timing"),
    ("judge ask", "--verifier"), ("judge serve", "--model"), ("judge serve", "--dtype"),
    ("calibrate fit", "--latency-model"), ("calibrate measure", "--model"),
    ("calibrate measure", "--batch-sizes"), ("calibrate measure", "--context"),
    ("calibrate measure", "--dtype"),
    ("calibrate fit", "--configs"), ("replay", "--calibrate-on"), ("replay", "--probe"),
    ("calibrate probe", "--target"), ("calibrate probe", "--draft"),
    ("calibrate probe", "--target-cores"), ("calibrate probe", "--draft-cores"),
}
# Positional names: `lr models prepare NAME`.
UNKNOWN_POSITIONAL = {"models prepare"}

# Numeric options where a negative number or zero is meaningful, so only the other bad
# values are tried (seed 0, offset 0, top-k 0 = off, jobs 0 = all cores, port 0 = any).
ZERO_OK = {"--seed", "--offset", "--top-k", "--jobs", "--port", "--temperature", "--judge-retries",
           "--alpha1", "--alpha2", "--c1", "--c2", "--top-p", "--holdout",
           "--verifier-seconds", "--ci-target"}  # a free verifier; intervals off (documented)


# Values that look bad but mean something there: --budget inf = unlimited batching (the
# simulator's default); collect's run seed only feeds sha256, so any integer is a seed.
HUGE = "99999999999999999999"   # 1e20: past every limit, and past int64
MEANINGFUL = {("simulate", "--budget"): {"inf", "1e999"},
              **{(path, flag): {HUGE} for path in ("simulate", "sweep", "plan", "collect", "replay",
                                                   "calibrate fit") for flag in ("--seed", "--jobs")},
              ("plan", "--top"): {HUGE}, ("collect", "--limit"): {HUGE}, ("plot", "--jobs"): {HUGE},
              ("plan", "--budget"): {HUGE}, ("sweep", "--budget"): {HUGE}}  # budget: no limit
MEANINGFUL[("collect", "--seed")] |= {"-1"}


# (command, output option, "file" | "dir", an input of that command the output must not be)
OUTPUTS = [
    ("calibrate fit", "--out", "file", str(TRACE)),
    ("calibrate measure", "--out", "file", None),
    ("calibrate probe", "--out", "file", str(PROBED_PROFILE)),
    ("replay", "--save-profile", "file", str(PROFILE)),
    ("sweep", "--out", "file", None),
    ("collect", "--out", "file", None),
    ("theory figure", "--out", "file", None),
    ("plot", "--out", "dir", None),
]
_IDEAL = ["--ideal", "--alpha1", "0.5", "--c1", "0.1"]
ABSURD = [
    ("simulate", ["--requests", "1000000"]),
    ("simulate", ["--policy", "lr-async", *_IDEAL, "--requests", "1000000"]),
    ("simulate", ["--policy", "lr-async", *_IDEAL, "--steps", "1000000"]),
    ("simulate", ["--policy", "lr-async", *_IDEAL, "--depth", "200", "--steps", "100000"]),
    ("sweep", ["--policy", "lr-async", "--depth", "1-10", "--k2", "1-10", "--requests", "3000",
               "--steps", "1000", "--jobs", "1"]),
    ("plan", ["--concurrency", "1000000", "--jobs", "1"]),
    ("plan", ["--rate", "1", "--requests", "1000000", "--jobs", "1"]),
    ("plan", ["--steps", "1000000", "--modes", "lr", "--depth", "1-4", "--jobs", "1"]),
]


def _leaf_commands():
    """(path, click command) for every runnable command of `lr`, walking the groups."""
    out = []

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, path + [name])
        else:
            out.append((" ".join(path), cmd))

    walk(typer.main.get_command(cli.app), [])
    return out


COMMANDS = _leaf_commands()


def _long(p):
    return next((o for o in p.opts if o.startswith("--")), None)


def _annotation(p):
    ann = p.type_descriptor.annotation
    return getattr(ann, "__origin__", None) or ann


def _without(argv, flag):
    """argv with `flag VALUE` (or a boolean flag) removed."""
    out, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a == flag:
            skip = i + 1 < len(argv) and not argv[i + 1].startswith("--")
            continue
        out.append(a)
    return out


def _with(argv, flag, value):
    return _without(argv, flag) + [flag, value]


def _cases():
    cases = []

    def add(family, path, argv, expect):
        cases.append(pytest.param(path.split() + argv, expect,
                                  id=f"{path}|{family}|{' '.join(argv[-2:])}"))

    for path, cmd in COMMANDS:
        if path not in BASE:
            raise AssertionError(f"new command `lr {path}`: add a minimal valid invocation to BASE")
        base = BASE[path]
        add("unknown-flag", path, base + ["--no-such-flag"], ["--no-such-flag"])
        add("extra-positional", path, base + ["stray-arg"], ["stray-arg"])
        for p in cmd.params:
            flag = _long(p)
            if p.param_type_name == "argument":
                if p.required:
                    add("missing-argument", path, [a for a in base if a != str(TRACE)],
                        [p.name.upper()])
                continue
            if flag is None:
                continue
            add("misspelt-flag", path, base + [flag + flag[-1]], [flag + flag[-1], flag])
            if p.required:
                add("missing-option", path, _without(base, flag), [flag])
            if getattr(p, "is_flag", False):
                add("flag-with-value", path, base + [f"{flag}=yes"], [flag])
                continue
            add("missing-value", path, base + [flag], [flag])
            ann = _annotation(p)
            if ann in (int, float):
                bad = ["abc", "nan", "inf", "-inf", "1e999", ""]
                if ann is int:
                    bad += ["1.5", "0x10", HUGE]
                if flag not in ZERO_OK:
                    bad += ["-1", "0"] if flag not in ("--budget", "-M") or path != "plot" else ["-1", "1"]
                elif flag in ("--seed",):
                    bad += ["-1"]
                elif flag in ("--alpha1", "--alpha2", "--c1", "--c2", "--top-p", "--holdout"):
                    bad += ["-0.1", "1.5"]
                for v in bad:
                    if v in MEANINGFUL.get((path, flag), ()):
                        continue
                    add(f"bad-{ann.__name__}", path, _with(base, flag, v), [flag])
            if p.type_descriptor.choices:
                add("unknown-choice", path, _with(base, flag, "bogus"), [flag, "bogus"])
            if (path, flag) in UNKNOWN_NAMES:
                add("unknown-name", path, _with(base, flag, "bogus"), [flag, "bogus"])
        if path in UNKNOWN_POSITIONAL:
            add("unknown-name", path, ["bogus"], ["bogus"])
    # Combinations the option parser cannot see.
    add("exclusive", "simulate", BASE["simulate"] + ["--scenario", "cpu-2core"], ["--ideal", "--scenario"])
    add("exclusive", "simulate", BASE["simulate"] + ["--depth", "2"], ["--k1", "--depth"]) \
        if "--k1" in BASE["simulate"] else None
    # --step-stop is free text, so it has no unknown name: an empty string, a bad
    # escape, a lone surrogate or the same string twice is refused.
    for value in ("", "\\q", "ab\\", "\\x4", "\\ud800"):
        add("bad-step-stop", "collect", _with(BASE["collect"], "--step-stop", value), ["--step-stop"])
    add("bad-step-stop", "collect", BASE["collect"] + ["--step-stop", "\\n\\n", "--step-stop", "\n\n"],
        ["--step-stop"])
    # --judge-prompt FILE: a folder, a device, a JSONL file, a JSON object of another shape
    for path in ("collect", "judge ask"):
        for value in (".", "/dev/null", str(TRACE), str(PROFILE)):
            add("bad-judge-prompt", path, _with(BASE[path], "--judge-prompt", value), ["--judge-prompt"])
    # Output paths: every option that names a file or folder to write refuses a
    # device, a directory where a file goes (a file where a folder goes), a path under a regular
    # file, `/`, and (where the command has one) its own input.
    for path, flag, kind, own_input in OUTPUTS:
        bad = {"device": "/dev/null", "under-a-file": f"{TRACE}/x.json"}
        bad |= {"directory": "."} if kind == "file" else {"a-file": str(TRACE), "root": "/"}
        if own_input:
            bad["its-input"] = own_input
        for name, value in bad.items():
            add(f"output-{name}", path, _with(BASE[path], flag, value), [flag])
    # Absurd but well-formed values: each under its flag's own range, refused by the work caps
    # (lrcore/limits.py, lrsim/work.py) before anything runs, naming the cap.
    for path, argv in ABSURD:
        add("absurd-value", path, argv, ["over the cap"])
    add("unknown-command", "bogus-command", [], ["bogus-command"])
    add("unknown-command", "theory bogus", [], ["bogus"])
    add("unknown-command", "calibrate", ["fit-bogus", "--out", "x.json"], ["fit-bogus"])
    return cases


CASES = _cases()


@pytest.fixture(autouse=True)
def tripwires(monkeypatch, tmp_path):
    """Fail the case if anything slow or engine-related starts; run in an empty directory."""
    def trip(what):
        def f(*a, **k):
            raise AssertionError(f"bad input reached {what} (validate before starting it)")
        return f

    import lrreal.collect
    import lrreal.engine
    import lrreal.lock
    import lrreal.models

    # Model names are resolved (and refused) before these, so the tripwires sit at the point
    # where real work would start: the machine-wide vLLM lock and the engine/server launch.
    monkeypatch.setattr(lrreal.engine.VllmEngine, "start", trip("VllmEngine.start"))
    monkeypatch.setattr(lrreal.lock, "vllm_lock", trip("the vLLM lock"))
    monkeypatch.setattr(lrreal.collect, "vllm_lock", trip("the vLLM lock"))
    monkeypatch.setattr(lrreal.lock.VllmLock, "acquire", trip("the judge's vLLM lock"))
    monkeypatch.setattr(lrreal.models, "prepare", trip("models.prepare"))
    monkeypatch.chdir(tmp_path)

    def on_alarm(signum, frame):
        raise AssertionError(f"case ran longer than {CASE_TIMEOUT_S} s: bad input not refused early")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(CASE_TIMEOUT_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def check_one_line(code, out, err, expect):
    assert "Traceback" not in err and "Traceback" not in out
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, f"exit {code}, stderr {err!r}, stdout {out[-300:]!r}"
    assert len(lines) == 1, f"expected one line, got {lines!r}"
    line = lines[0]
    assert line.startswith("lr: error: "), line
    assert len(line) > len("lr: error: ") + 5
    assert any(e.lower() in line.lower() for e in expect), f"{line!r} names none of {expect}"


@pytest.mark.parametrize("argv,expect", CASES)
def test_bad_cli(run_lr, argv, expect):
    code, out, err = run_lr(*argv)
    check_one_line(code, out, err, expect)


def test_matrix_covers_every_command():
    """The case list reaches every leaf command and every case family at least once."""
    paths = {p for p, _ in COMMANDS}
    assert paths == set(BASE), "BASE and the app's commands differ"
    seen = {c.values[0][0] if c.values[0][0] not in ("theory", "models", "judge", "calibrate")
            else " ".join(c.values[0][:2]) for c in CASES}
    assert paths <= seen
    families = {c.id.split("|")[1] for c in CASES}
    assert {"unknown-flag", "misspelt-flag", "missing-option", "missing-argument", "missing-value",
            "bad-int", "bad-float", "unknown-choice", "unknown-name", "extra-positional"} <= families


def test_misspelt_flag_suggests_the_real_one(run_lr):
    code, _, err = run_lr("theory", "speedup", "--alpah1", "0.5", "--c1", "0.1", "--k1", "2")
    # click lists the close matches: "No such option: --alpah1 (Possible options: --alpha1, --alpha2)"
    assert code == 2 and "--alpah1" in err and "--alpha1" in err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
@pytest.mark.parametrize("flag", ["--alpha1", "--c1", "--alpha2", "--c2"])
def test_theory_refuses_non_finite(run_lr, flag, value):
    argv = _with(["speedup", "--alpha1", "0.5", "--c1", "0.1", "--k1", "2"], flag, value)
    code, out, err = run_lr("theory", *argv, "--json")
    assert out == "" and "nan" not in out.lower()
    check_one_line(code, out, err, [flag])


# A few through a real interpreter: stderr carries exactly the one line, nothing else (no
# warnings, no Rich markup, no traceback), outside pytest's capture.
SUBPROCESS_CASES = [
    (["theory", "speedup", "--alpha1", "nan", "--c1", "0.1", "--k1", "2"], "--alpha1"),
    (["theory", "optimize", "--alpha1", "0.5", "--c1", "0.1", "--budget", "abc"], "--budget"),
    (["simulate", "--policy", "bogus"], "--policy"),
    (["plan", "--preset", "bogus"], "--preset"),
    (["collect", "--mode", "bogus"], "--mode"),
    (["theory", "speedup", "--alpah1", "0.5"], "--alpah1"),
]


@pytest.mark.parametrize("argv,flag", SUBPROCESS_CASES, ids=[" ".join(a) for a, _ in SUBPROCESS_CASES])
def test_bad_cli_subprocess(argv, flag, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "cli", *argv], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("lr: error: "), r.stderr
    assert flag in r.stderr and "Traceback" not in r.stderr


def test_the_docs_quote_the_case_count():
    """docs/reliability.md and the README quote this matrix's size as the cases above build it:
    adding or removing a case without updating them fails here."""
    total, n = len(CASES) + len(SUBPROCESS_CASES), len(COMMANDS)
    doc = (ROOT / "docs" / "reliability.md").read_text()
    for text in (f"{total:,} cases over all {n} commands ({len(CASES):,} in-process, {len(SUBPROCESS_CASES)} subprocess)",
                 f"**{total:,} cases over {n} commands** ({len(CASES):,} in-process, {len(SUBPROCESS_CASES)} subprocess)"):
        assert text in doc
    assert f"{total:,} bad-flag cases over all {n} commands" in (ROOT / "README.md").read_text()
