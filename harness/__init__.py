"""Test and benchmark harnesses: fake engines, a fault-injecting judge server, the kill test.

Not part of the installed toolkit (pyproject's package list leaves `harness` out): tests/ and
benchmarks/ import it from the repository root (`python -m pytest` and the benchmarks' own
sys.path entry put the root on the path; `python -m harness.fault_judge` runs from the root).
Nothing in lrcore, lrsim, lrreal or analysis imports it (tests/test_layers.py checks).

    fake_engine.py  deterministic in-process engines, a stub tokenizer, a fake model folder
    fault_judge.py  an OpenAI-compatible judge server that is slow, wrong, failing or dies
    killtest.py     SIGKILL `lr collect` at random points, resume, check the trace file
"""
