"""No figure in the README is typed by hand: every number in its prose (outside code blocks, code
spans and the blocks benchmarks/quote.py keeps verbatim) is one a committed benchmark rendered into
benchmarks/results/*.md, one a claims test asserts (its code, not its docstring: those tests
recompute the figure from the committed results or traces), or a parameter named below with what
it is. A measurement typed into the prose, or left stale when its benchmark was rerun, fails here.

The check is by value, not by place (a stale figure that happens to equal some other rendered
figure passes); the sections with most prose figures have their own, stricter tests by section
(tests/calib/test_open_loop_figures.py, test_load_figures.py)."""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "calib"))

import test_block_speed  # noqa: E402
import test_load_cold  # noqa: E402
import test_load_figures  # noqa: E402
import test_open_loop_figures  # noqa: E402
import test_prefix_hits  # noqa: E402

from tests.figures import NUMBER, prose, rendered_or_asserted, untraced  # noqa: E402

# Numbers in the README that are not measurements, each with what it is.
PARAMETERS = {
    "2025": "the paper's venue (NeurIPS 2025) and the AIME 2025 data set",
    "2506.19830": "the paper's arXiv id",
    "3.11": "the Python version of the machines",
    "1.157": "App. B Theorem 3's constant (arXiv 2506.19830)",
    "10,000": "--stream's automatic threshold (lrsim/sim/runner.py STREAM_AUTO_REQUESTS)",
    "127.0.0.1": "the loopback address lr judge serve binds",
    "0.013": "the paper's 7B-judge latency per step (arXiv 2506.19830)",
    "339,840": "the 32B target's KV capacity on 2 H100s, tests/plan/test_plan_kv.py",
    "37,440": "the corpus target's KV capacity (2 GiB in 32-token blocks), tests/calib/test_calib_kv.py",
    "413": "the HTTP status a judge endpoint answers an oversized body with",
    "275": "the bad-file matrix's files, tests/reliability/test_bad_files.py::test_the_docs_quote_the_matrix",
    "1,010": "the bad-file matrix's runs, same test",
    "1,644": "the bad-CLI matrix's cases, tests/reliability/test_bad_cli.py::test_the_docs_quote_the_case_count",
}
CLAIMS = (test_load_cold.test_the_readme_claims, test_load_cold.test_the_epyc_claims,
          test_load_figures.test_the_held_out_claims, test_load_figures.test_the_transfer_claims,
          test_load_figures.test_the_cold_all_configuration_claims,
          test_open_loop_figures.test_the_open_loop_claims, test_open_loop_figures.test_the_clean_open_loop_claims,
          test_open_loop_figures.test_the_xeon_open_loop_claims,
          test_open_loop_figures.test_the_cold_epyc_open_loop_claims, test_prefix_hits.test_the_readme_claims,
          test_block_speed.test_the_readme_claims, test_load_figures.test_the_slow_host_claims,
          test_load_figures.test_the_slow_host_second_sitting_claims,
          test_load_figures.test_the_contention_probe_claims,
          test_load_figures.test_the_side_by_side_corpus_claims, test_load_figures.test_the_another_machine_claims,
          test_load_figures.test_the_second_xeon_sitting_claims, test_load_figures.test_the_third_cpu_claims,
          test_load_figures.test_the_family_26_claims, test_load_figures.test_the_profile_terms_claims,
          test_load_figures.test_the_warm_sixth_cpu_claims, test_load_figures.test_the_batch_curve_claims,
          test_load_figures.test_the_preregistered_claims,
          test_load_figures.test_the_transfer_preregistered_claims,
          test_load_figures.test_the_pass_contents_claims,
          test_load_figures.test_the_off_path_prefill_claims,
          test_load_figures.test_the_ten_in_flight_preregistered_claims,
          test_load_figures.test_the_other_boot_preregistered_claims,
          test_load_figures.test_the_sd_first_pass_claims,
          test_load_figures.test_the_fourth_cpu_transfer_preregistered_claims,
          test_load_figures.test_every_load_of_a_corpus_of_other_depths_claims,
          test_load_figures.test_between_the_swept_loads_preregistered_claims,
          test_load_figures.test_past_the_swept_loads_preregistered_claims,
          test_load_figures.test_the_sd_rate_by_span_claims,
          test_load_figures.test_twice_the_swept_loads_preregistered_claims,
          test_load_figures.test_the_recorded_sd_rounds_claims,
          test_load_figures.test_three_times_the_swept_loads_preregistered_claims,
          test_load_figures.test_the_engine_cap_claims)


def known_numbers() -> set[str]:
    return rendered_or_asserted(*CLAIMS) | set(PARAMETERS)


def test_every_readme_number_is_rendered_pinned_or_a_parameter():
    text = prose((ROOT / "README.md").read_text())
    assert len(re.findall(NUMBER, text)) > 500
    assert untraced(text, known_numbers()) == []


def test_every_number_of_the_load_evidence_is_rendered_pinned_or_a_parameter():
    """docs/load.md, the README's "Under load" corpus by corpus (its sections have stricter tests
    too: test_load_figures, test_open_loop_figures)."""
    from test_load_figures import PARAMETERS as STARTS

    text = prose((ROOT / "docs" / "load.md").read_text())
    assert len(re.findall(NUMBER, text)) > 500
    assert untraced(text, known_numbers() | set(STARTS)) == []


def test_a_typed_figure_is_caught():
    text = "Measured: 0.8137x AR (`lr collect`), see\n<!-- quote: x.md -->\n9.87654\n<!-- /quote -->\n"
    assert untraced(prose(text), known_numbers()) == ["0.8137"]
