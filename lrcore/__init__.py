"""lrcore: what the simulator (lrsim) and the real backend (lrreal) share, and nothing else.

The trace contract (schema, validating reader, durable writer), the one user-facing error type,
the caps on work and input sizes, strict JSON output, the atomic output writer, the console and
table style, the acceptance-protocol statistics, the mode/policy vocabulary, the paper's closed
forms (theory.py) and the adaptive lookahead policy that decides with them (the adaptive/
package). lrreal writes traces and lrsim reads them; both import lrcore, lrcore imports neither,
and `analysis` sits on top of all three. The layering is checked by import-linter
(`[tool.importlinter]` in pyproject.toml; tests/test_layers.py).
"""
