"""Session fixture shared by the real end-to-end modules: the packaged models, prepared once."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def prepared_cache():
    pytest.importorskip("vllm")
    from lrreal import models

    cache = models.cache_dir()
    for name in (models.DEFAULT_DRAFT, models.DEFAULT_TARGET):
        models.prepare(name, cache)  # cold cache: converts once; warm: no-op
    return cache
