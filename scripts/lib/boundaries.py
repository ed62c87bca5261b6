"""Boundary values for the schemathesis runs (scripts/schemathesis.sh, scripts/pushward-schemathesis.sh).

Two things schemathesis does with them, through its own options:
- The coverage phase (on by default) generates each numeric member's edges and one step past them from `minimum`,
  `maximum` and an integer's `format`. `document` gives every integer without a `format` the 64-bit range
  (`format: int64`), so that it tries 2**63 - 1, -2**63 and one past each where the documents say nothing.
- A fuzz dictionary (`generation.dictionaries` for parameters, `parameters."body.<path>"` for every member of every
  request body) mixes the values of `VALUES` into the generated requests: numbers no 64-bit integer holds, what
  JavaScript writes for non-finite numbers (as strings), negative zero, a long number, a long combining sequence and
  the empty string.

    python3 scripts/lib/boundaries.py document IN OUT.json    # IN: a path or an http(s) URL
    python3 scripts/lib/boundaries.py config OUT.json >> config.toml
"""
import json
import sys
import urllib.request

# What TOML can hold: integers of 64 bits, finite doubles and strings. A number longer than that goes as a string,
# which a query parameter or an integer member gets as the number it spells (4,000 digits: Python's int() takes up
# to 4,300).
VALUES = [
    9223372036854775807, -9223372036854775808, 1e300, -1e300, 9.3e18, -0.0,
    "9223372036854775808", "-9223372036854775809", "1e300", "-1e300", "NaN", "Infinity", "-Infinity", "-0",
    "9" * 4000, "a" + "\u0301" * 2000, "",
]
# The share of generated values replaced with one of VALUES, per parameter and per body member.
PROBABILITY = 0.1
# Operations that answer a notification too large for the push service with the official relay's 500
# (`PayloadTooLarge`, docs/homeassistant.md), not with a 4xx: their members get the long strings cut to 300
# characters, so that several of them together still fit a push.
RELAY_SHAPED = {"homeAssistantSend"}
SHORT_VALUES = [value[:300] if isinstance(value, str) else value for value in VALUES]


def load(source):
    if source.startswith(("http://", "https://")):
        text = urllib.request.urlopen(source, timeout=10).read().decode()
    else:
        text = open(source, encoding="utf-8").read()
    try:
        return json.loads(text)
    except ValueError:
        import yaml

        return yaml.safe_load(text)


def widen_integers(node):
    """Every integer schema without a `format` gets `format: int64` (Herald's integers are 64 bits)."""
    if isinstance(node, dict):
        types = node.get("type")
        types = types if isinstance(types, list) else [types]
        if "integer" in types and "format" not in node:
            node["format"] = "int64"
        for value in node.values():
            widen_integers(value)
    elif isinstance(node, list):
        for value in node:
            widen_integers(value)


def body_paths(document, operation_ids=None):
    """The dotted path of every leaf member of every JSON request body (`[*]` for array elements), through `$ref`,
    `oneOf`, `anyOf` and `allOf`; of the operations in `operation_ids` only, when given."""
    schemas = document.get("components", {}).get("schemas", {})
    paths = set()

    def walk(schema, prefix, seen):
        if not isinstance(schema, dict):
            return
        reference = schema.get("$ref")
        if isinstance(reference, str):
            name = reference.rsplit("/", 1)[-1]
            if name not in seen:
                walk(schemas.get(name), prefix, seen | {name})
            return
        for keyword in ("oneOf", "anyOf", "allOf"):
            for branch in schema.get(keyword) or []:
                walk(branch, prefix, seen)
        for name, member in (schema.get("properties") or {}).items():
            if not name or not all(c.isalnum() or c in "_-" for c in name):
                continue
            path = f"{prefix}.{name}" if prefix else name
            paths.add(path)
            walk(member, path, seen)
        if isinstance(schema.get("items"), dict) and prefix:
            walk(schema["items"], f"{prefix}.[*]", seen)

    for item in document.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            if operation_ids is not None and operation.get("operationId") not in operation_ids:
                continue
            content = (operation.get("requestBody") or {}).get("content") or {}
            for media, entry in content.items():
                if "json" in media:
                    walk(entry.get("schema"), "", frozenset())
    # Leaves only: a value put in place of an object hides every member below it.
    return sorted(path for path in paths if not any(other.startswith(path + ".") for other in paths))


def toml_string(value):
    return json.dumps(value, ensure_ascii=False)


def toml_value(value):
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def binding(path, dictionary):
    return f'{toml_string("body." + path)} = {{ dictionary = "{dictionary}", probability = {PROBABILITY} }}'


def config(document):
    lines = ["", "# Boundary values (scripts/lib/boundaries.py)."]
    for name, values in (("boundaries", VALUES), ("short-boundaries", SHORT_VALUES)):
        lines += [f"[dictionaries.{name}]", "values = [" + ", ".join(toml_value(value) for value in values) + "]"]
    lines += ["", "[generation.dictionaries]"]
    for kind in ("integer", "number"):
        lines.append(f'{kind} = {{ dictionary = "boundaries", probability = {PROBABILITY} }}')
    lines += ["", "[parameters]"]
    lines += [binding(path, "boundaries") for path in body_paths(document)]
    operations = {
        operation.get("operationId")
        for item in document.get("paths", {}).values()
        for operation in item.values()
        if isinstance(operation, dict)
    }
    for operation_id in sorted(RELAY_SHAPED & operations):
        lines += ["", "[[operations]]", f'include-operation-id = "{operation_id}"', "[operations.parameters]"]
        lines += [binding(path, "short-boundaries") for path in body_paths(document, {operation_id})]
    return "\n".join(lines) + "\n"


def main(arguments):
    if len(arguments) == 3 and arguments[0] == "document":
        document = load(arguments[1])
        widen_integers(document)
        with open(arguments[2], "w", encoding="utf-8") as output:
            json.dump(document, output)
    elif len(arguments) == 2 and arguments[0] == "config":
        sys.stdout.write(config(load(arguments[1])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
