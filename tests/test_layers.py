"""The package layers: analysis on top, lrsim and lrreal side by side and independent, lrcore below.

    analysis            may import lrsim, lrreal, lrcore
    lrsim | lrreal      may import lrcore (and themselves), never each other
    lrcore              imports none of them

The contracts are pyproject.toml's `[tool.importlinter]` (import-linter, run here as its
`lint-imports` command). A second check walks the source itself: every import statement,
including those inside functions, and every `importlib.import_module` / `__import__` of a
literal name, so a violation is reported as file:line with the rule it breaks. Neither the
packages nor cli.py may import the test harnesses (harness/) or tests/.
"""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# package -> top-level names it must not import
FORBIDDEN = {
    "lrcore": {"lrsim", "lrreal", "analysis", "cli", "harness", "tests"},
    "lrsim": {"lrreal", "analysis", "cli", "harness", "tests"},
    "lrreal": {"lrsim", "analysis", "cli", "harness", "tests"},
    "analysis": {"cli", "harness", "tests"},
}


def _lint_imports_command() -> list[str]:
    """`lint-imports` beside this interpreter (a venv's bin/), else on PATH, else the same
    check through import-linter's `lint_imports` function."""
    exe = Path(sys.executable).parent / "lint-imports"
    found = str(exe) if exe.is_file() else shutil.which("lint-imports")
    if found:
        return [found, "--config", "pyproject.toml"]
    return [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename=sys.argv[1]))", "pyproject.toml"]


def test_import_linter_contracts_hold():
    pytest.importorskip("importlinter", reason="import-linter is in the dev extra")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    r = subprocess.run(_lint_imports_command(), cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, f"import-linter contracts broken:\n{r.stdout[-6000:]}\n{r.stderr[-2000:]}"


def _imports(source: str, package_parts: list[str], filename: str = "<source>"):
    """(line, absolute module name) of every import in `source`, function-level ones included,
    sorted by line; `package_parts` is the package a relative import starts from (the module's
    own package, e.g. ["lrsim", "sim"] for lrsim/sim/runner.py)."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[:len(package_parts) - (node.level - 1)]
                found.append((node.lineno, ".".join(base + ([node.module] if node.module else []))))
            else:
                found.append((node.lineno, node.module or ""))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("import_module", "__import__"):
                found.append((node.lineno, node.args[0].value))
    return sorted(found)


def _violations() -> list[str]:
    toolkit = {"lrcore", "lrsim", "lrreal", "analysis"}
    out = []
    for package, banned in FORBIDDEN.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT)
            for line, module in _imports(path.read_text(), list(rel.parts[:-1]), str(rel)):
                if module.split(".")[0] in banned:
                    allowed = ", ".join(sorted(toolkit - banned - {package})) or "none of the others"
                    out.append(f"{rel}:{line}: imports {module} ({package} may import {allowed}, "
                               "and itself)")
    for line, module in _imports((ROOT / "cli.py").read_text(), [], "cli.py"):
        if module.split(".")[0] in ("harness", "tests"):
            out.append(f"cli.py:{line}: imports {module} (test code; the `lr` command may not)")
    return out


def test_no_forbidden_imports_anywhere_in_the_source():
    """Every import in lrcore/, lrsim/, lrreal/, analysis/ and cli.py, lazy ones inside functions
    too."""
    assert _violations() == []


def test_the_scan_sees_lazy_relative_and_dynamic_imports():
    src = ("def f():\n    from lrreal.engine import VllmEngine\n"
           "from .calib import profile\nimport importlib\nimportlib.import_module('analysis.cli')\n")
    assert [m for _, m in _imports(src, ["lrsim", "sim"])] == \
        ["lrreal.engine", "lrsim.sim.calib", "importlib", "analysis.cli"]


def test_the_packaging_and_the_contracts_say_the_same():
    """harness/ (test and benchmark code) is not installed; the layers contract is the one above."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = doc["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not any(p.startswith("harness") for p in include), include
    assert {"lrcore*", "lrsim*", "lrreal*", "analysis*"} <= set(include)
    contracts = {c["type"]: c for c in doc["tool"]["importlinter"]["contracts"]}
    assert contracts["layers"]["layers"] == ["analysis", "lrsim | lrreal", "lrcore"]
    assert sorted(contracts["independence"]["modules"]) == ["lrreal", "lrsim"]
