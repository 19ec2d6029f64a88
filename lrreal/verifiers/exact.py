"""Exact match after removing whitespace and lower-casing (the reference's shortcut, alone)."""
from __future__ import annotations

from .base import Verifier, exact_match


class ExactVerifier(Verifier):
    method = "exact"
    shortcut = False  # the comparison is the shortcut itself

    async def _compare(self, target_step: str, draft_step: str):
        return exact_match(target_step, draft_step), None, None
