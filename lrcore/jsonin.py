"""JSON from a user's file: every way `json.loads` refuses malformed text, as one UserError line.

    doc = parse(text, "profile.json", not_json="{where}:{line}: not JSON ({msg})",
                too_deep="{where}: JSON nested too deeply to be a profile",
                too_big="{where}: a number with more than 4300 digits; numbers must be in range")

Besides a syntax error (json.JSONDecodeError), Python refuses nesting deeper than its recursion
limit (RecursionError) and an integer of more than 4300 digits (ValueError: its int conversion
limit). Each caller words the three for its own file; `{where}` in a wording is the caller's
place, `{line}` and `{msg}` (syntax errors only) the decoder's line number and reason.

Part of lrcore: the simulator (lrsim) and the real backend (lrreal) both import it; it imports
neither.
"""
from __future__ import annotations

import json

from .errors import UserError


def parse(text: str | bytes, where: str, *, not_json: str, too_deep: str, too_big: str, **hooks):
    """`json.loads(text, **hooks)`, or a UserError in the caller's wording; a UserError that a
    hook raises (a duplicate key, a constant) passes through as it is."""
    try:
        return json.loads(text, **hooks)
    except json.JSONDecodeError as e:
        raise UserError(not_json.format(where=where, line=e.lineno, msg=e.msg)) from None
    except RecursionError:
        raise UserError(too_deep.format(where=where)) from None
    except ValueError:   # an integer of more than 4300 digits (Python's conversion limit)
        raise UserError(too_big.format(where=where)) from None
