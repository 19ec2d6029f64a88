"""No figure in docs/*.md is typed by hand (the docs' side of tests/test_readme_figures.py): every
number in a doc's prose (outside code blocks, code spans and the blocks benchmarks/quote.py keeps
verbatim) is one a committed benchmark rendered into benchmarks/results/*.md, one a claims test
asserts (the README's, and the planning claims below), or a parameter named below for that doc with
what it is; a parameter with a source file must appear there (commas and underscores dropped), so
it cannot drift from the code or test that holds it.

The check is by value, not by place: a stale figure that happens to equal another rendered figure
passes (small integers always do), so a doc quotes a results file or a test where it can."""
import functools
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_readme_figures import CLAIMS  # noqa: E402

from tests.figures import numbers, prose, rendered_or_asserted, untraced  # noqa: E402

DOCS = ROOT / "docs"
JUDGE = "the paper's 7B-judge latency per step (arXiv 2506.19830)"
LOOPBACK = "the loopback address lr judge serve binds"
# doc -> {number: (what it is, a repository file that holds it, or None)}
PARAMETERS = {
    "TEAM-BRIEF.md": {"2.13.0": ("the pinned CPU torch", "pyproject.toml")},
    "adaptive.md": {"0.045": ("the permanent prior's floor 2 x 0.5 / (2 + 20), derived in the text",
                              "tests/sim/test_adaptive_policy.py"),
                    "0.013": (JUDGE, None)},
    "calibration.md": {
        "57,344": ("the 1.5B target's KV bytes per token in float32", "tests/calib/test_calib_kv.py"),
        "1,170": ("2 GiB of KV in 32-token blocks of the target", "tests/calib/test_calib_kv.py"),
        "37,440": ("the target's KV capacity", "tests/calib/test_calib_kv.py"),
        "87,360": ("the draft's KV capacity", "tests/calib/test_calib_kv.py"),
        "4,096": ("a bound on the corpus's request lengths (prompt + 384-token budget)", None),
        "2025": ("the AIME 2025 data set", None)},
    "load.md": {n: ("a GSM8K row where a fourth-CPU corpus's round starts or ends (its --first-problem)",
                    "tests/calib/test_load_figures.py") for n in ("1239", "1247", "1248", "1249", "1255", "1263")},
    "metrics.md": {"10,000": ("--stream's automatic threshold", "lrsim/sim/runner.py")},
    "planning.md": {
        "2506.19830": ("the paper's arXiv id", None),
        "0.013": (JUDGE, None),
        "0.8.3": ("the paper's vLLM version (arXiv 2506.19830; the authors' code, "
                  "github.com/hao-ai-lab/LookaheadReasoning)", None),
        "2.60": ("the Ray version of the manual check", None),
        "339,840": ("the 32B target's KV capacity on 2 H100s", "tests/plan/test_plan_kv.py"),
        "2,572,368": ("the 1.5B draft's KV capacity on one H100", "tests/plan/test_plan_kv.py"),
        "929,664": ("the target's KV capacity at TP=4", "tests/plan/test_plan_kv.py"),
        "201,920": ("each engine's KV capacity in a shared placement", "tests/plan/test_plan_kv.py")},
    "real-backend.md": {"491,400,064": ("the draft GGUF's size", "lrreal/models.py"),
                        "1,117,320,768": ("the target GGUF's size", "lrreal/models.py")},
    "reliability.md": {
        # the two matrices compare these with their own sizes (test_bad_files.py::
        # test_the_docs_quote_the_matrix, test_bad_cli.py::test_the_docs_quote_the_case_count)
        "275": ("the bad-file matrix's files", None),
        "1,010": ("the bad-file matrix's runs", None),
        "1,644": ("the bad-CLI matrix's cases", None),
        "1,638": ("the bad-CLI matrix's in-process cases", None),
        "4300": ("Python's integer-string conversion limit in digits", "lrsim/calib/profile.py"),
        "413": ("the HTTP status for an oversized body", None),
        "401": ("the HTTP status for a missing or wrong API key", None),
        "127.0.0.1": (LOOPBACK, None),
        "1.1.1.1": ("a public address the sandbox must not reach", "tests/reliability/test_untrusted_code.py"),
        "10,000,000": ("MAX_SIM_POSITIONS", "lrcore/limits.py"),
        "100,000,000": ("MAX_COMMAND_POSITIONS", "lrcore/limits.py"),
        "100,000": ("MAX_STEPS_PER_REQUEST", "lrcore/limits.py"),
        "324": ("the exponent of the smallest denormal, 5e-324", None)},
    "simulator.md": {
        "0.013": (JUDGE, None),
        "2023": ("the vLLM paper's year (Kwon et al., SOSP 2023)", None),
        "295": ("the roofline's knee in batch tokens, derived in the text", None),
        "262": ("KV bytes per context token of the 32B target, in KB", "lrsim/scenarios/h100-paper.toml"),
        "10,000": ("--stream's automatic threshold", "lrsim/sim/runner.py")},
    "verifiers-and-data.md": {
        "0.013": (JUDGE, None),
        "127.0.0.1": (LOOPBACK, None),
        "429": ("the HTTP status for too many requests", None),
        "1319": ("GSM8K's test rows", "lrreal/datasets.py"),
        "198": ("GPQA diamond's rows", "lrreal/datasets.py"),
        "164": ("HumanEval's rows", "lrreal/datasets.py")},
}


def test_the_planning_claims():
    """docs/planning.md: the preset table is the presets' (alpha1, steps x tokens per step); the
    measured H100 table prices the R1 pair at 18.6 / 4.9 ms per token (c1 0.26, Qwen3's 0.27); the
    target's KV cache on 2 H100s holds 209 GSM8K answers of 1,620 tokens and 31 AIME24 ones."""
    from lrsim.plan import presets

    text = (DOCS / "planning.md").read_text()
    rows = re.findall(r"^\| `([\w-]+)` \| [^|]+ \| ([\d.]+) \| (\d+) x (\d+)(?: \(([\d,]+)(?: tokens)?\))? \|$",
                      text, flags=re.M)
    assert [r[0] for r in rows] == ["r1-gsm8k", "r1-aime24", "qwen3-gsm8k", "qwen3-aime24"]
    for name, alpha1, steps, mean, tokens in rows:
        p = presets.get(name)
        assert (f"{p.alpha1:.2f}", p.steps, round(p.step_mean)) == (alpha1, int(steps), int(mean)), name
        assert not tokens or int(tokens.replace(",", "")) == p.steps * round(p.step_mean), name
    ps = [presets.get(r[0]) for r in rows]
    assert [p.steps for p in ps] == [36, 240, 36, 280]
    assert [f"{p.steps * round(p.step_mean):,}" for p in ps] == ["1,620", "10,800", "1,620", "12,600"]
    r1, qwen = (presets.get(n).to_config("lr-async") for n in ("r1-gsm8k", "qwen3-gsm8k"))
    ms = [round(1000 * x.latency.per_token(), 1) for x in (r1.target, r1.draft)]
    assert ms == [18.6, 4.9]
    assert [round(c.c1, 2) for c in (r1, qwen)] == [0.26, 0.27]
    kv = r1.target.kv.capacity_tokens
    gsm, aime = (presets.get(n) for n in ("r1-gsm8k", "r1-aime24"))
    answers = [kv // (p.steps * round(p.step_mean)) for p in (gsm, aime)]
    assert (kv, answers) == (339_840, [209, 31])


@functools.cache
def known() -> frozenset[str]:
    """The numbers results and claims hold, read once for all the docs."""
    return frozenset(rendered_or_asserted(*CLAIMS, test_the_planning_claims))


@pytest.mark.parametrize("doc", sorted(p.name for p in DOCS.glob("*.md")))
def test_every_docs_number_is_rendered_pinned_or_a_parameter(doc):
    text = prose((DOCS / doc).read_text())
    assert untraced(text, known() | set(PARAMETERS.get(doc, {}))) == []


@pytest.mark.parametrize("doc", sorted(PARAMETERS))
def test_every_parameter_is_stated_and_held_by_its_source(doc):
    stated = numbers(prose((DOCS / doc).read_text()))
    for value, (why, source) in PARAMETERS[doc].items():
        assert value in stated, (doc, value, "no longer stated: drop it here")
        if source:
            held = re.sub(r"(?<=\d)[,_](?=\d)", "", (ROOT / source).read_text())
            assert value.replace(",", "") in held, (doc, value, source)

