#!/usr/bin/env python3
# tests/peers/schemacheck.py: check JSON answers against the schemas of an
# OpenAPI spec (components.schemas), Python standard library only. For the
# conformance tests (tests/71xx-conformance-*.t); it keeps the behaviour of
# the checker inside tests/7000-conformance.t, with pattern, format
# (date-time), minItems/maxItems, oneOf branches picked by their
# discriminator, and JSON Lines answers added.
#
#   python3 schemacheck.py SPEC.json MANIFEST [DIR]
#
# MANIFEST: one answer a line, "NAME<TAB>SCHEMA<TAB>WANTED-STATUS<TAB>GOT-STATUS".
# The answer is DIR/NAME.json (one JSON value), or DIR/NAME.jsonl (JSON
# Lines: each line is checked against SCHEMA, and a path starts with
# "line N: "). DIR defaults to "ans". Prints, per answer,
#   PASS NAME SCHEMA          or   FAIL NAME SCHEMA
#   #   SCHEMA PATH: problem       (one line per problem, after a FAIL)
# and at the end "NOTE SCHEMA: ..." for null sent in optional fields that
# the spec types without null (lenient, as the real services do that).
# Supported: $ref (local), type (and OpenAPI 3.0 nullable), enum, const,
# required, properties, additionalProperties, items, minItems, maxItems,
# anyOf, oneOf (with discriminator.mapping when present), allOf, minimum,
# maximum, exclusiveMinimum/Maximum, minLength, maxLength, maxProperties,
# pattern (Python re), format date-time (RFC 3339).
# SPDX-License-Identifier: ISC
import json
import re
import sys

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")

TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def jtype(v):
    return next(t for t in ("null", "boolean", "integer", "number", "string", "array", "object") if TYPES[t](v))


class Checker:
    def __init__(self, spec):
        self.S = spec["components"]["schemas"]
        self.notes = {}

    def res(self, s):
        while isinstance(s, dict) and "$ref" in s:
            s = self.S[s["$ref"].rsplit("/", 1)[1]]
        return s

    def allows_null(self, s):
        s = self.res(s)
        if not isinstance(s, dict):
            return True
        if s.get("nullable") is True:
            return True
        t = s.get("type")
        if t == "null" or (isinstance(t, list) and "null" in t):
            return True
        if "enum" in s and None in s["enum"]:
            return True
        if "const" in s and s["const"] is None:
            return True
        if any(self.allows_null(b) for b in s.get("anyOf", []) + s.get("oneOf", [])):
            return True
        if "allOf" in s:
            return all(self.allows_null(b) for b in s["allOf"])
        return not any(k in s for k in ("type", "enum", "const", "anyOf", "oneOf", "properties"))

    def check(self, v, s, path, errs, where, optional=False):
        """Append (path, problem) to errs. where names the schema, for notes."""
        s = self.res(s)
        if not isinstance(s, dict):
            return
        if v is None and not self.allows_null(s):
            if optional:
                # The spec types many optional fields without null, yet the
                # real service, and the spec's own examples, send null there.
                self.notes.setdefault(where, set()).add(path)
            else:
                errs.append((path, "null, but the spec allows no null here (%s)" % brief(s)))
            return
        for b in s.get("allOf", []):
            self.check(v, b, path, errs, where)
        for key in ("anyOf", "oneOf"):
            if key not in s:
                continue
            d = s.get("discriminator")
            if d and isinstance(v, dict) and isinstance(v.get(d.get("propertyName")), str) \
                    and v[d["propertyName"]] in d.get("mapping", {}):
                # The discriminator names the branch: report its problems.
                self.check(v, {"$ref": d["mapping"][v[d["propertyName"]]]}, path, errs, where)
                continue
            tries = []
            for b in s[key]:
                e = []
                self.check(v, b, path, e, where)
                tries.append(e)
            good = sum(1 for e in tries if not e)
            if good == 0:
                best = min(tries, key=len)
                errs.append((path, "matches no branch of %s; nearest: %s" % (key, "; ".join("%s: %s" % x for x in best))))
            elif key == "oneOf" and good > 1 and v is not None:
                errs.append((path, "matches %d branches of oneOf" % good))
        t = s.get("type")
        if t is not None:
            ts = t if isinstance(t, list) else [t]
            if s.get("nullable") is True:
                ts = ts + ["null"]
            if not any(TYPES.get(x, lambda v: True)(v) for x in ts):
                errs.append((path, "%s %s, the spec wants %s" % (jtype(v), json.dumps(v)[:40], "|".join(ts))))
                return
        if "enum" in s and v not in s["enum"]:
            errs.append((path, "%s is not one of %s" % (json.dumps(v), ", ".join(map(json.dumps, s["enum"])))))
        if "const" in s and v != s["const"]:
            errs.append((path, "%s is not %s" % (json.dumps(v), json.dumps(s["const"]))))
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if "minimum" in s and v < s["minimum"]:
                errs.append((path, "%s is below the minimum %s" % (v, s["minimum"])))
            if "maximum" in s and v > s["maximum"]:
                errs.append((path, "%s is above the maximum %s" % (v, s["maximum"])))
            if isinstance(s.get("exclusiveMinimum"), (int, float)) and not isinstance(s["exclusiveMinimum"], bool) \
                    and v <= s["exclusiveMinimum"]:
                errs.append((path, "%s is not above %s" % (v, s["exclusiveMinimum"])))
            if isinstance(s.get("exclusiveMaximum"), (int, float)) and not isinstance(s["exclusiveMaximum"], bool) \
                    and v >= s["exclusiveMaximum"]:
                errs.append((path, "%s is not below %s" % (v, s["exclusiveMaximum"])))
        if isinstance(v, str):
            if "maxLength" in s and len(v) > s["maxLength"]:
                errs.append((path, "longer than %d" % s["maxLength"]))
            if "minLength" in s and len(v) < s["minLength"]:
                errs.append((path, "shorter than %d" % s["minLength"]))
            if "pattern" in s:
                try:
                    if not re.search(s["pattern"], v):
                        errs.append((path, "%s does not match the pattern %s" % (json.dumps(v)[:40], s["pattern"])))
                except re.error:
                    pass
            if s.get("format") == "date-time" and not RFC3339.match(v):
                errs.append((path, "%s is not an RFC 3339 date-time" % json.dumps(v)[:40]))
        if isinstance(v, dict):
            props = s.get("properties", {})
            req = s.get("required", [])
            for k in req:
                if k not in v:
                    errs.append((path + "." + k, "missing, but required"))
            if "maxProperties" in s and len(v) > s["maxProperties"]:
                errs.append((path, "more than %d properties" % s["maxProperties"]))
            for k, x in v.items():
                if k in props:
                    self.check(x, props[k], path + "." + k, errs, where, k not in req)
                elif s.get("additionalProperties") is False:
                    errs.append((path + "." + k, "not a property the spec allows"))
                elif isinstance(s.get("additionalProperties"), dict):
                    self.check(x, s["additionalProperties"], path + "." + k, errs, where)
        if isinstance(v, list):
            if "minItems" in s and len(v) < s["minItems"]:
                errs.append((path, "fewer than %d items" % s["minItems"]))
            if "maxItems" in s and len(v) > s["maxItems"]:
                errs.append((path, "more than %d items" % s["maxItems"]))
            if "items" in s:
                for i, x in enumerate(v):
                    self.check(x, s["items"], "%s[%d]" % (path, i), errs, where)


def brief(s):
    if "type" in s:
        return "type %s" % s["type"]
    if "$ref" in s:
        return s["$ref"]
    return "/".join(k for k in ("anyOf", "oneOf", "allOf", "enum") if k in s) or "schema"


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: schemacheck.py SPEC.json MANIFEST [DIR]\n")
        return 2
    c = Checker(json.load(open(argv[1])))
    d = argv[3] if len(argv) > 3 else "ans"
    for row in open(argv[2]):
        if not row.strip():
            continue
        name, schema, want, got = row.rstrip("\n").split("\t")
        errs = []
        if got != want:
            errs.append(("HTTP", "status %s, wanted %s" % (got, want)))
        if schema not in c.S:
            errs.append(("$", "the spec has no schema %s" % schema))
        else:
            try:
                with open("%s/%s.jsonl" % (d, name), "rb") as f:
                    lines = f.read().decode("utf-8").split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
                if not lines:
                    errs.append(("$", "no lines"))
                for i, ln in enumerate(lines, 1):
                    try:
                        v = json.loads(ln)
                    except ValueError as e:
                        errs.append(("line %d: $" % i, "not JSON: %s" % e))
                        continue
                    c.check(v, c.S[schema], "line %d: $" % i, errs, schema)
            except FileNotFoundError:
                try:
                    body = json.load(open("%s/%s.json" % (d, name)))
                except (OSError, ValueError) as e:
                    errs.append(("$", "not JSON: %s" % e))
                else:
                    c.check(body, c.S[schema], "$", errs, schema)
            except (OSError, UnicodeDecodeError) as e:
                errs.append(("$", "unreadable: %s" % e))
        print("%s %s %s" % ("FAIL" if errs else "PASS", name, schema))
        for p, m in errs:
            print("#   %s %s: %s" % (schema, p, m))
    for where, paths in sorted(c.notes.items()):
        paths = sorted(set(re.sub(r"\[\d+\]", "[]", re.sub(r"^line \d+: ", "", p)) for p in paths))
        print("NOTE %s: null in optional fields the spec types without null: %s" % (where, " ".join(paths)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
