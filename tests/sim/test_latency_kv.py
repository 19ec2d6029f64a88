"""sim/latency_kv.py: a measured table as the positions' cost plus the KV cache's (TabulatedKV),
where the table's points separate the two; Tabulated's interpolation elsewhere."""
import pytest

from lrsim.plan import modelspec
from lrsim.sim.latency import Tabulated
from lrsim.sim.latency_kv import TabulatedKV, identifiable, measured_model

W = {1: 10.0, 2: 10.5, 4: 11.0, 8: 12.0, 16: 14.0, 32: 18.0}     # ms by positions in the step
K = 0.002                                                         # ms per cached token read


def step_ms(b, q, ctx):
    return W[b * q] + K * b * ctx


def grid(batches=(1, 2, 4, 8, 16, 32), queries=(1, 4), contexts=(512, 2048)):
    return [(b, q, c, step_ms(b, q, c) / 1e3) for b in batches for q in queries for c in contexts
            if b * q in W]


def test_the_fit_recovers_a_table_made_of_positions_plus_kv_reads_and_predicts_off_its_grid():
    m = TabulatedKV(grid(), [(1024, 0.5), (4096, 2.0)])
    assert m.kv_s == pytest.approx(K / 1e3, rel=1e-6) and m.fit_max_rel_error < 1e-6
    # a step the grid never held: 4 sequences x 2 positions at context 1000 (8 positions)
    assert m.forward(8, 0, 4, 4 * 1000.0) * 1e3 == pytest.approx(step_ms(4, 2, 1000), rel=1e-6)
    # same 16 positions, 8x the KV cache read: Tabulated's mean-context key cannot tell them apart
    wide, deep = m.forward(16, 0, 16, 16 * 2048.0), m.forward(16, 0, 4, 4 * 2048.0)
    assert (wide - deep) * 1e3 == pytest.approx(K * 12 * 2048, rel=1e-6)
    # a prefill past the decode measurements comes from the prefill curve; overhead on top
    m.overhead_s = 0.001
    assert m.forward(0, 2048, 1, 0.0) == pytest.approx(0.001 + 0.5 + (2048 - 1024) / 3072 * 1.5)


def test_points_that_cannot_separate_the_kv_term_keep_tabulated():
    one_context = [(b, 1, 512, step_ms(b, 1, 512) / 1e3) for b in (1, 2, 4, 8)]
    assert not identifiable(one_context)
    assert isinstance(measured_model(one_context, [], "cpu"), Tabulated)
    assert isinstance(measured_model(grid(), [], "gpu"), TabulatedKV)
    # a non-finite or non-positive time is no measurement to fit: Tabulated's semantics stay
    bad = grid()[:-1] + [(32, 1, 2048, float("nan"))]
    assert isinstance(measured_model(bad, [], "gpu"), Tabulated)


def test_the_shipped_h100_tables_load_as_fitted_models():
    for name in ("r1-distill-qwen-32b", "r1-distill-qwen-1.5b", "qwen2.5-7b-instruct"):
        m = modelspec.measured(modelspec.load(name), 1, modelspec.shipped_table("H100"), overhead_ms=0.0)
        assert isinstance(m, TabulatedKV) and m.kv_s > 0
        # the fit stays close to the measured grid (the 1.5B's small steps are the noisiest)
        assert m.fit_max_rel_error < 0.15, name
