"""Step segmentation: a step ends at a stop string or after max_step_tokens tokens.

The stop strings are `SchedulerConfig.step_stop` (`lr collect --step-stop`, repeatable; default
"\n\n", a blank line, as in the paper and the reference). The tokenizer fuses "\n\n" with the
punctuation before it (tokens like ".\n\n"), so boundaries are found in text, never as a single
token id. vLLM's stop strings do that for step requests; `StreamSegmenter` does it for one long
AR request, cutting its stream into steps as it arrives (at the earliest stop string; the longest
one where two start at the same place).
"""
from __future__ import annotations

import string
from dataclasses import dataclass, field

from lrcore.errors import UserError

from ..engine import STEP_STOP, Progress

DEFAULT_STEP_STOP = (STEP_STOP,)
MAX_STEP_STOPS = 16         # stop strings per run
MAX_STEP_STOP_CHARS = 256   # characters per stop string
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
ESCAPES_HELP = "\\n, \\t, \\r, \\\\, \\', \\\", \\xHH, \\uHHHH or \\UHHHHHHHH"


def decode_escapes(text: str, flag: str = "--step-stop") -> str:
    """Decode backslash escapes typed on a command line ("\\n\\n" -> a blank line), without eval:
    only the escapes in ESCAPES_HELP; anything else after a backslash is a UserError (a literal
    backslash is written \\\\). Text without backslashes (e.g. a real newline) is kept as it is."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 == len(text):
            raise UserError(f"{flag} {text!r}: ends in a lone backslash (a literal backslash is \\\\)")
        e = text[i + 1]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
            continue
        if e in _HEX_DIGITS:
            n = _HEX_DIGITS[e]
            digits = text[i + 2:i + 2 + n]
            if len(digits) != n or any(d not in string.hexdigits for d in digits):
                raise UserError(f"{flag} {text!r}: \\{e} needs {n} hex digits (e.g. \\x0a)")
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise UserError(f"{flag} {text!r}: \\{e}{digits} is not a Unicode character")
            out.append(chr(code))
            i += 2 + n
            continue
        raise UserError(f"{flag} {text!r}: unknown escape \\{e}; use {ESCAPES_HELP} "
                        "(a literal backslash is \\\\)")
    return "".join(out)


def check_step_stops(stops, flag: str = "--step-stop") -> tuple[str, ...]:
    """The stop strings as a tuple: one or more distinct, non-empty strings within the caps."""
    if isinstance(stops, str):
        stops = (stops,)
    try:
        stops = tuple(stops)
    except TypeError:
        raise UserError(f"{flag}: expected stop strings, got {type(stops).__name__}") from None
    if not stops:
        raise UserError(f"{flag}: give at least one stop string (default: a blank line, \\n\\n)")
    if len(stops) > MAX_STEP_STOPS:
        raise UserError(f"{flag}: {len(stops)} stop strings is over the cap of {MAX_STEP_STOPS}")
    seen = set()
    for s in stops:
        if not isinstance(s, str):
            raise UserError(f"{flag}: stop strings are text, got {type(s).__name__}")
        if not s:
            raise UserError(f"{flag} '': a stop string must not be empty (default: a blank line, \\n\\n)")
        if len(s) > MAX_STEP_STOP_CHARS:
            raise UserError(f"{flag} {s[:20]!r}...: a stop string of {len(s)} characters is over the "
                            f"cap of {MAX_STEP_STOP_CHARS}")
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise UserError(f"{flag} {s[:20]!r}: not valid Unicode text (an unpaired surrogate)") from None
        if s in seen:
            raise UserError(f"{flag} {s[:20]!r}: given twice")
        seen.add(s)
    return stops


def ends_on_boundary(text: str, stops: tuple[str, ...] = DEFAULT_STEP_STOP) -> bool:
    """Does a context (prompt + committed steps) end on a step boundary (one of `stops`)?"""
    return text.endswith(tuple(stops))


def find_stop(text: str, start: int, stops: tuple[str, ...]) -> tuple[int, int] | None:
    """(index, length) of the earliest stop string in text[start:] (the longest of those that
    start there), or None."""
    best = None
    for s in stops:
        i = text.find(s, start)
        if i >= 0 and (best is None or i < best[0] or (i == best[0] and len(s) > best[1])):
            best = (i, len(s))
    return best


@dataclass
class StreamSegmenter:
    """Cuts a streaming generation into steps at each stop string (AR/SD modes)."""
    start: float
    stops: tuple[str, ...] = DEFAULT_STEP_STOP
    cuts: list[dict] = field(default_factory=list)  # {text, tokens, start, end}
    _text_pos: int = 0
    _tokens: int = 0
    _t: float = 0.0

    def __post_init__(self):
        self._t = self.start

    def on_update(self, p: Progress, now: float) -> None:
        while True:
            hit = find_stop(p.text, self._text_pos, self.stops)
            if hit is None:
                return
            cut = hit[0] + hit[1]
            self.cuts.append({"text": p.text[self._text_pos:cut], "tokens": p.tokens - self._tokens,
                              "start": self._t, "end": now})
            self._text_pos, self._tokens, self._t = cut, p.tokens, now

    def finish(self, text: str, tokens: int, end: float) -> list[dict]:
        if tokens > self._tokens or text[self._text_pos:]:
            self.cuts.append({"text": text[self._text_pos:], "tokens": tokens - self._tokens,
                              "start": self._t, "end": end})
        # A cut whose tokens were all counted in an earlier cut (several stop strings in one
        # token) keeps 0 tokens: the token sum stays exact.
        return self.cuts
