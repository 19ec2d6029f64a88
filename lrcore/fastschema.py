"""The trace schema compiled to Python code (fastjsonschema), the fast check before jsonschema.

Why: jsonschema walks a record node by node, about 0.12 CPU-s for an open-loop record (its
engine_stats hold hundreds of forward passes) - 95% of reading a trace file, and the pause after
each request's end while the collector validates its record. fastjsonschema compiles the same
schema to a Python function that does the work in a fraction of that. jsonschema stays the
authority: a record the fast check refuses is checked again by jsonschema, which also writes the
error message (lrcore/traces.py, validate_record), so the fast check can only skip work, never
change a verdict - provided it is at least as strict, which tests/reliability/test_fastschema.py
checks keyword by keyword and on every committed trace.

fastjsonschema speaks drafts 4, 6 and 7; our schema is draft 2020-12. The keywords it uses mean
the same in draft 7 but two: 2020-12's `prefixItems` is draft 7's array form of `items` (and
2020-12's `items` beside it is draft 7's `additionalItems`), and draft 7 ignores the keywords
beside a `$ref` where 2020-12 applies them (so a node with both becomes an `allOf` of the two).
`$defs` needs no translation: `$ref` is a JSON pointer into the document either way. A keyword
outside DRAFT7_SAME is refused, so a schema edit that uses one fails loudly instead of passing
unchecked.
"""
from __future__ import annotations

from typing import Any, Callable

# keywords that validate the same way in draft 2020-12 (jsonschema) and draft 7 (fastjsonschema),
# plus the annotations neither checks
DRAFT7_SAME = frozenset({
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "pattern", "minItems", "maxItems", "required", "properties",
    "additionalProperties", "propertyNames", "$ref", "$defs",
    "$schema", "title", "description"})
DRAFT7 = "http://json-schema.org/draft-07/schema#"


def to_draft7(node: Any) -> Any:
    """A copy of a draft 2020-12 schema written in draft 7's words (see the module docstring)."""
    if isinstance(node, list):
        return [to_draft7(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in ("properties", "$defs"):        # names, not keywords
            out[k] = {name: to_draft7(s) for name, s in v.items()}
        elif k == "prefixItems":
            out["items"] = to_draft7(v)
            if "items" in node:
                out["additionalItems"] = to_draft7(node["items"])
        elif k == "items":
            if "prefixItems" not in node:
                out["items"] = to_draft7(v)
        elif k in DRAFT7_SAME:
            out[k] = DRAFT7 if k == "$schema" else to_draft7(v)
        else:
            raise ValueError(f"schema keyword {k!r} has no checked draft 7 equivalent (lrcore/fastschema.py)")
    if "$ref" in out:   # draft 7 ignores a $ref's sibling keywords, 2020-12 applies them: allOf
        rest = {k: v for k, v in out.items() if k not in ("$ref", "$schema", "$defs")}
        if rest:
            out = {k: v for k, v in out.items() if k in ("$schema", "$defs")}
            out["allOf"] = [{"$ref": node["$ref"]}, rest]
    return out


def compiled(schema: dict) -> Callable[[Any], Any]:
    """The fast check of a draft 2020-12 schema (compiling takes a moment: keep the result);
    the check raises fastjsonschema.JsonSchemaException."""
    import fastjsonschema

    return fastjsonschema.compile(to_draft7(schema), use_default=False)
