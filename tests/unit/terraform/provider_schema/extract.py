"""Extract a Terraform provider's resource schemas from its Go source, as ``terraform providers schema -json``
shapes them (``block``: ``attributes`` and ``block_types``), for the resources terraform/proxmox uses.

No provider can be downloaded here, so the schema comes from the provider's published source at the pinned
tag. Regenerate after a pin change (versions.tf), from a checkout of each provider at its tag:

    git clone https://github.com/bpg/terraform-provider-proxmox && git -C terraform-provider-proxmox checkout v0.83.0
    git clone https://github.com/hashicorp/terraform-provider-local && git -C terraform-provider-local checkout v2.5.3
    python tests/unit/terraform/provider_schema/extract.py bpg terraform-provider-proxmox > \
        tests/unit/terraform/provider_schema/bpg-proxmox.json
    python tests/unit/terraform/provider_schema/extract.py local terraform-provider-local > \
        tests/unit/terraform/provider_schema/hashicorp-local.json

Two schema styles are read:
* terraform-plugin-sdk/v2 (bpg/proxmox's ``proxmox_virtual_environment_vm``, proxmoxtf/resource/vm/vm.go
  ``VM()``): ``map[string]*schema.Schema{key: {Type: ..., Optional: ..., Elem: ...}}``; a TypeList/TypeSet
  whose Elem is a ``*schema.Resource`` is a nested block (unless computed only or ConfigMode attr), as the
  SDK's core schema conversion (helper/schema/core_schema.go, ``coreConfigSchema``) makes it.
* terraform-plugin-framework (hashicorp/local's ``local_file``, internal/provider/resource_local_file.go):
  ``Attributes: map[string]schema.Attribute{"name": schema.StringAttribute{Required: true}}``.
The parser is a bracket-matching reader of Go composite literals, not a Go compiler: it fails loudly
(SystemExit) on anything it cannot resolve rather than guessing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

TOKEN = re.compile(
    r'(?P<ws>\s+)|(?P<lcomment>//[^\n]*)|(?P<bcomment>/\*.*?\*/)|(?P<str>"(?:\\.|[^"\\])*")|(?P<raw>`[^`]*`)'
    r"|(?P<ident>[A-Za-z_][\w.]*)|(?P<num>\d[\w.]*)|(?P<op>:=|[{}()\[\],:&*=!<>|+\-/.;])",
    re.S,
)
CLOSE = {"{": "}", "(": ")", "[": "]"}


def tokenize(text: str) -> list[str]:
    tokens, pos = [], 0
    while pos < len(text):
        match = TOKEN.match(text, pos)
        if not match:
            raise SystemExit(f"cannot read Go source at {text[pos:pos + 40]!r}")
        pos = match.end()
        if match.lastgroup not in ("ws", "lcomment", "bcomment"):
            tokens.append(match.group())
    return tokens


def group(tokens: list[str], start: int = 0, close: str | None = None) -> tuple[list, int]:
    """Nest bracketed runs: each ``{...}``/``(...)``/``[...]`` becomes a tuple (opener, items)."""
    items, i = [], start
    while i < len(tokens):
        token = tokens[i]
        if token == close:
            return items, i + 1
        if token in CLOSE:
            inner, i = group(tokens, i + 1, CLOSE[token])
            items.append((token, inner))
            continue
        if token in ")]}":
            raise SystemExit(f"unbalanced {token!r}")
        items.append(token)
        i += 1
    if close:
        raise SystemExit(f"missing {close!r}")
    return items, i


def elements(brace: tuple) -> list[tuple[list, list]]:
    """The ``key: value`` elements of a composite literal's brace group."""
    found, current = [], []
    for item in brace[1] + [","]:
        if item == ",":
            if current:
                split = current.index(":") if ":" in current else None
                found.append((current[:split], current[split + 1:]) if split is not None else ([], current))
            current = []
        else:
            current.append(item)
    return found


def literal(value: list, constants: dict[str, str]):
    """A Go constant expression of one token: string, bool, int or a named string constant."""
    if len(value) != 1 or isinstance(value[0], tuple):
        return None
    token = value[0]
    if token.startswith('"'):
        return json.loads(token)
    if token in ("true", "false"):
        return token == "true"
    if token.isdigit():
        return int(token)
    return constants.get(token.split(".")[-1])


def constants_of(directory: Path) -> dict[str, str]:
    """Every ``name = "value"`` string constant of the Go files in directory (test files left out)."""
    found: dict[str, str] = {}
    for path in sorted(directory.glob("*.go")):
        if path.name.endswith("_test.go"):
            continue
        for name, value in re.findall(r'^\s*(\w+)\s*(?:string\s*)?=\s*("(?:\\.|[^"\\])*")\s*(?://.*)?$', path.read_text(), re.M):
            found.setdefault(name, json.loads(value))
    return found


SDK_TYPES = {"schema.TypeString": "string", "schema.TypeBool": "bool", "schema.TypeInt": "number",
             "schema.TypeFloat": "number"}


def sdk_type(fields: dict[str, list], constants: dict[str, str]):
    kind = fields["Type"][0]
    if kind in SDK_TYPES:
        return SDK_TYPES[kind]
    collection = {"schema.TypeList": "list", "schema.TypeSet": "set", "schema.TypeMap": "map"}.get(kind)
    if not collection:
        raise SystemExit(f"unknown SDK type {kind}")
    elem = fields.get("Elem")
    if not elem:
        return [collection, "string"]
    inner = next(item for item in elem if isinstance(item, tuple) and item[0] == "{")
    return [collection, sdk_type(named(inner), constants)]


def named(brace: tuple) -> dict[str, list]:
    return {key[0]: value for key, value in elements(brace) if len(key) == 1 and isinstance(key[0], str)}


def sdk_block(brace: tuple, constants: dict[str, str]) -> dict:
    """A ``map[string]*schema.Schema{...}`` literal as a Terraform schema block."""
    block: dict = {"attributes": {}, "block_types": {}}
    for key, value in elements(brace):
        name = literal(key, constants)
        if not isinstance(name, str):
            raise SystemExit(f"cannot resolve schema key {key}")
        body = next(item for item in value if isinstance(item, tuple) and item[0] == "{")
        fields = named(body)
        flags = {flag.lower(): literal(fields[flag], constants) is True
                 for flag in ("Required", "Optional", "Computed") if flag in fields}
        elem = fields.get("Elem", [])
        resource = "schema.Resource" in elem
        attr_mode = "schema.SchemaConfigModeAttr" in fields.get("ConfigMode", [])
        if resource and (flags.get("required") or flags.get("optional")) and not attr_mode:
            inner = next(item for item in elem if isinstance(item, tuple) and item[0] == "{")
            schema_map = named(inner)["Schema"]
            nested = next(item for item in reversed(schema_map) if isinstance(item, tuple) and item[0] == "{")
            entry = {"nesting_mode": "set" if fields["Type"][0] == "schema.TypeSet" else "list",
                     "block": sdk_block(nested, constants)}
            for limit, out in (("MinItems", "min_items"), ("MaxItems", "max_items")):
                if limit in fields and literal(fields[limit], constants):
                    entry[out] = literal(fields[limit], constants)
            block["block_types"][name] = entry
        elif resource:
            block["attributes"][name] = {"type": ["list", "object"], **{k: v for k, v in flags.items() if v}}
        else:
            block["attributes"][name] = {"type": sdk_type(fields, constants), **{k: v for k, v in flags.items() if v}}
    return block


def schema_literal_after(tokens: list, marker: list[str]) -> tuple:
    """The brace group that follows the token sequence marker (e.g. ``s := map [string] * schema.Schema``)."""
    found = _find_after(tokens, marker)
    if found is None:
        raise SystemExit(f"no schema literal after {' '.join(marker)}")
    return found


def _find_after(tokens: list, marker: list[str]):
    """Depth-first: the first brace group right after marker, at any nesting level."""
    flat = [item if isinstance(item, str) else item[0] for item in tokens]
    for i in range(len(flat) - len(marker)):
        if flat[i:i + len(marker)] == marker:
            following = tokens[i + len(marker)]
            if isinstance(following, tuple) and following[0] == "{":
                return following
    for item in tokens:
        if isinstance(item, tuple):
            found = _find_after(item[1], marker)
            if found is not None:
                return found
    return None


def function_body(path: Path, name: str) -> list:
    tokens = group(tokenize(path.read_text()))[0]
    for i, item in enumerate(tokens):
        if item == "func" and tokens[i + 1] == name:
            return next(t for t in tokens[i + 2:] if isinstance(t, tuple) and t[0] == "{")[1]
    raise SystemExit(f"no func {name} in {path}")


def git_origin(checkout: Path) -> dict:
    def git(*args):
        return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    return {"commit": git("rev-parse", "HEAD"), "tag": git("describe", "--tags", "--exact-match")}


def bpg(checkout: Path) -> dict:
    vm_dir = checkout / "proxmoxtf" / "resource" / "vm"
    constants = constants_of(vm_dir)
    block = sdk_block(schema_literal_after(function_body(vm_dir / "vm.go", "VM"),
                                           ["s", ":=", "map", "[", "*", "schema.Schema"]), constants)
    merged = ["disk", "network"]  # VM(): structure.MergeSchema(s, disk.Schema()); ... network.Schema()
    for package in merged:
        package_constants = constants_of(vm_dir / package)
        part = sdk_block(schema_literal_after(function_body(vm_dir / package / "schema.go", "Schema"),
                                              ["return", "map", "[", "*", "schema.Schema"]), package_constants)
        for kind in ("attributes", "block_types"):
            block[kind].update(part[kind])
    return {
        "provider": "registry.terraform.io/bpg/proxmox",
        "origin": {"repository": "https://github.com/bpg/terraform-provider-proxmox", **git_origin(checkout),
                   "files": ["proxmoxtf/resource/vm/vm.go (VM)", "proxmoxtf/resource/vm/disk/schema.go (Schema)",
                             "proxmoxtf/resource/vm/network/schema.go (Schema)"],
                   "extracted_by": "tests/unit/terraform/provider_schema/extract.py"},
        "resource_schemas": {"proxmox_virtual_environment_vm": {"block": block}},
    }


FRAMEWORK_TYPES = {"schema.StringAttribute": "string", "schema.BoolAttribute": "bool",
                   "schema.Int64Attribute": "number", "schema.NumberAttribute": "number"}


def local(checkout: Path) -> dict:
    source = checkout / "internal" / "provider" / "resource_local_file.go"
    tokens = group(tokenize(source.read_text()))[0]
    body = None
    for i, item in enumerate(tokens):
        if item == "func" and isinstance(tokens[i + 1], tuple) and "Schema" in tokens[i + 2:i + 3]:
            body = next(t for t in tokens[i + 3:] if isinstance(t, tuple) and t[0] == "{")[1]
            break
    if body is None:
        raise SystemExit("no Schema method in resource_local_file.go")
    attributes = schema_literal_after(body, ["Attributes", ":", "map", "[", "schema.Attribute"])
    block: dict = {"attributes": {}, "block_types": {}}
    for key, value in elements(attributes):
        kind = value[0]
        if kind not in FRAMEWORK_TYPES:
            raise SystemExit(f"unknown attribute type {kind}")
        fields = named(value[1])
        flags = {flag.lower(): True for flag in ("Required", "Optional", "Computed")
                 if flag in fields and literal(fields[flag], {}) is True}
        block["attributes"][literal(key, {})] = {"type": FRAMEWORK_TYPES[kind], **flags}
    return {
        "provider": "registry.terraform.io/hashicorp/local",
        "origin": {"repository": "https://github.com/hashicorp/terraform-provider-local", **git_origin(checkout),
                   "files": ["internal/provider/resource_local_file.go (Schema)"],
                   "extracted_by": "tests/unit/terraform/provider_schema/extract.py"},
        "resource_schemas": {"local_file": {"block": block}},
    }


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("bpg", "local"):
        raise SystemExit("usage: extract.py bpg|local <provider checkout at the pinned tag>")
    extracted = {"bpg": bpg, "local": local}[sys.argv[1]](Path(sys.argv[2]))
    print(json.dumps(extracted, indent=1, sort_keys=True))
