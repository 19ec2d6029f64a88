"""Step segmentation: a step ends at "\n\n" (a stop string) or after max_step_tokens tokens.

The tokenizer fuses "\n\n" with the punctuation before it (tokens like ".\n\n"), so boundaries
are found in text, never as a single token id. vLLM's stop strings do that for step requests;
`StreamSegmenter` does it for one long AR request, cutting its stream into steps as it arrives.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..engine import STEP_STOP, Progress


def ends_on_boundary(text: str) -> bool:
    """Does a context (prompt + committed steps) end on a step boundary?"""
    return text.endswith(STEP_STOP)


@dataclass
class StreamSegmenter:
    """Cuts a streaming generation into steps at each "\n\n" (AR/SD modes)."""
    start: float
    cuts: list[dict] = field(default_factory=list)  # {text, tokens, start, end}
    _text_pos: int = 0
    _tokens: int = 0
    _t: float = 0.0

    def __post_init__(self):
        self._t = self.start

    def on_update(self, p: Progress, now: float) -> None:
        while True:
            i = p.text.find(STEP_STOP, self._text_pos)
            if i < 0:
                return
            cut = i + len(STEP_STOP)
            self.cuts.append({"text": p.text[self._text_pos:cut], "tokens": p.tokens - self._tokens,
                              "start": self._t, "end": now})
            self._text_pos, self._tokens, self._t = cut, p.tokens, now

    def finish(self, text: str, tokens: int, end: float) -> list[dict]:
        if tokens > self._tokens or text[self._text_pos:]:
            self.cuts.append({"text": text[self._text_pos:], "tokens": tokens - self._tokens,
                              "start": self._t, "end": end})
        # A cut whose tokens were all counted in an earlier cut (several "\n\n" in one token)
        # keeps 0 tokens: the token sum stays exact.
        return self.cuts
