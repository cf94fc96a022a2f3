"""Every resource block of terraform/proxmox/*.tf checked against its provider's schema at the pinned version.

The schemas are kept under tests/unit/terraform/provider_schema/ (``origin``: repository, tag, commit and
the Go files they were read from, by ``extract.py`` there): bpg/proxmox's ``proxmox_virtual_environment_vm``
(terraform-plugin-sdk/v2, proxmoxtf/resource/vm/vm.go ``VM()``) and hashicorp/local's ``local_file``
(internal/provider/resource_local_file.go). Terraform refuses at ``plan`` what this checks here: an
argument the schema does not have ("Unsupported argument"), a block it does not have ("Unsupported block
type"), a computed-only attribute set ("Invalid Configuration for Read-Only Attribute"), a required argument
or block missing ("Missing required argument", "Insufficient ... blocks"), more blocks than max_items ("Too
many ... blocks"), and a literal of the wrong type ("Incorrect attribute value type"); messages from
Terraform's configschema validation (internal/configs/configschema, decoder_spec.go and hcldec).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import hcl2
import pytest
from terraform_helpers import MODULE, load_module, unquote

SCHEMAS = Path(__file__).parent / "provider_schema"
META_ARGUMENTS = {"for_each", "count", "depends_on", "provider", "lifecycle"}
PROVIDERS = {"proxmox": "bpg-proxmox.json", "local": "hashicorp-local.json"}


def provider_schemas() -> dict[str, dict]:
    """resource type -> its schema block, from every kept provider schema."""
    found = {}
    for name in PROVIDERS.values():
        for resource, schema in json.loads((SCHEMAS / name).read_text())["resource_schemas"].items():
            found[resource] = schema["block"]
    return found


def literal_type(value):
    """The Terraform type of a literal as python-hcl2 gives it; None for an expression (known at plan)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        if value.startswith("${") and value.endswith("}") and value.count("${") == 1:
            return None  # a whole expression: its type is Terraform's to find
        return "string"  # a quoted literal or a string template
    return None


def type_accepts(schema_type, value) -> bool:
    """Whether a literal fits the attribute's type (Terraform converts number <-> string, bool -> string)."""
    found = literal_type(value)
    if found is None:
        return True
    if isinstance(schema_type, list):
        return found == "list" and all(type_accepts(schema_type[1], item) for item in value)
    if schema_type == "string":
        return found in ("string", "number", "bool")
    if schema_type == "number":
        return found == "number" or (found == "string" and re.fullmatch(r'"-?\d+(\.\d+)?"', value) is not None)
    if schema_type == "bool":
        return found == "bool" or value in ('"true"', '"false"')
    return False


def block_problems(where: str, body: dict, schema: dict, top: bool = False) -> list[str]:
    """What Terraform would refuse in one block body against its schema block."""
    problems = []
    attributes, block_types = schema["attributes"], schema["block_types"]
    counts: dict[str, int] = {}
    for key, value in body.items():
        if key in ("__is_block__", "__comments__") or (top and key in META_ARGUMENTS):
            continue
        if key == "dynamic":
            for dynamic in value:
                for label, spec in dynamic.items():
                    name = unquote(label)
                    if name not in block_types:
                        problems.append(f"{where}: dynamic block {name!r} is not a block of the provider's schema")
                        continue
                    for content in spec.get("content", []):
                        problems += block_problems(f"{where}.{name}", content, block_types[name]["block"])
                    counts.setdefault(name, 0)
            continue
        if isinstance(value, list) and value and all(isinstance(v, dict) and v.get("__is_block__") for v in value):
            if key not in block_types:
                problems.append(f"{where}: block {key!r} is not in the provider's schema (Unsupported block type)")
                continue
            counts[key] = counts.get(key, 0) + len(value)
            for nested in value:
                problems += block_problems(f"{where}.{key}", nested, block_types[key]["block"])
            continue
        if key not in attributes:
            hint = " (a block there, not an argument)" if key in block_types else ""
            problems.append(f"{where}: argument {key!r} is not in the provider's schema (Unsupported argument){hint}")
            continue
        attribute = attributes[key]
        if not (attribute.get("optional") or attribute.get("required")):
            problems.append(f"{where}: {key!r} is computed only and cannot be set")
        elif not type_accepts(attribute["type"], value):
            problems.append(f"{where}: {key!r} = {value!r} does not fit the schema's type {attribute['type']}")
    for key, attribute in attributes.items():
        if attribute.get("required") and key not in body:
            problems.append(f"{where}: required argument {key!r} is missing")
    for key, block_type in block_types.items():
        # counts: static blocks by type; a dynamic block's type is there with 0 (its count is known at plan)
        if block_type.get("min_items") and key not in counts:
            problems.append(f"{where}: at least {block_type['min_items']} {key!r} block(s) required")
        if block_type.get("max_items") and counts.get(key, 0) > block_type["max_items"]:
            problems.append(f"{where}: {counts[key]} {key!r} blocks, the schema allows {block_type['max_items']}")
    return problems


def module_problems(parsed: dict[str, dict], schemas: dict[str, dict]) -> list[str]:
    problems = []
    for file_name, document in parsed.items():
        for resource in document.get("resource", []):
            for kind, named in resource.items():
                for name, body in named.items():
                    where = f"{file_name}: {unquote(kind)}.{unquote(name)}"
                    schema = schemas.get(unquote(kind))
                    if schema is None:
                        problems.append(f"{where}: no provider schema kept for this resource type")
                        continue
                    problems += block_problems(where, body, schema, top=True)
    return problems


def parse_text(text: str) -> dict:
    return hcl2.loads(text)


def test_the_kept_schemas_are_for_the_pinned_provider_versions():
    """A pin change in versions.tf without a new schema extraction fails here."""
    versions = (MODULE / "versions.tf").read_text()
    for provider, file_name in PROVIDERS.items():
        kept = json.loads((SCHEMAS / file_name).read_text())
        source = kept["provider"].removeprefix("registry.terraform.io/")
        block = re.escape(provider) + r'\s*=\s*\{[^}]*source\s*=\s*"' + re.escape(source) + r'"[^}]*version\s*=\s*"=\s*([\d.]+)"'
        pin = re.search(block, versions, re.S)
        assert pin, f"versions.tf pins {source} exactly"
        assert kept["origin"]["tag"] == f"v{pin.group(1)}", (file_name, kept["origin"])
        assert re.fullmatch(r"[0-9a-f]{40}", kept["origin"]["commit"])
        assert kept["origin"]["repository"].startswith("https://github.com/")


def test_every_resource_of_the_module_fits_its_provider_schema():
    parsed = load_module()
    kinds = {unquote(kind) for doc in parsed.values() for res in doc.get("resource", []) for kind in res}
    assert kinds == {"proxmox_virtual_environment_vm", "local_file"}, kinds
    assert module_problems(parsed, provider_schemas()) == []


MAIN = (MODULE / "main.tf").read_text()


@pytest.mark.parametrize(("old", "new", "expected"), [
    # misspelt argument inside a nested block
    ("pre_enrolled_keys = false", "pre_enroled_keys = false", "argument 'pre_enroled_keys' is not in"),
    # an argument the provider renamed: hostpci's rom_bar is rombar in v0.83.0
    ("rombar  = true", "rom_bar = true", "argument 'rom_bar' is not in"),
    # a block misspelt
    ("operating_system {", "os {", "block 'os' is not in"),
    # a dynamic block misspelt
    ('dynamic "hostpci"', 'dynamic "host_pci"', "dynamic block 'host_pci'"),
    # the required node_name left out
    ("  node_name = var.proxmox_node\n  vm_id", "  vm_id", "required argument 'node_name' is missing"),
    # a literal of the wrong type
    ("on_boot   = true", 'on_boot   = "yes"', "'on_boot'"),
    # a computed-only attribute set
    ("  started   = true\n", '  started   = true\n  ipv4_addresses = []\n', "'ipv4_addresses' is computed only"),
])
def test_a_misspelt_or_wrong_argument_fails(old, new, expected):
    assert old in MAIN
    parsed = {"main.tf": parse_text(MAIN.replace(old, new, 1))}
    problems = module_problems(parsed, provider_schemas())
    assert any(expected in problem for problem in problems), problems


def test_an_argument_the_provider_removed_fails():
    """The same module against a schema without keep_hugepages (as a provider release removing it would be)."""
    schemas = copy.deepcopy(provider_schemas())
    del schemas["proxmox_virtual_environment_vm"]["block_types"]["memory"]["block"]["attributes"]["keep_hugepages"]
    problems = module_problems(load_module(), schemas)
    assert problems == ["main.tf: proxmox_virtual_environment_vm.gpu_worker.memory: argument 'keep_hugepages' "
                        "is not in the provider's schema (Unsupported argument)"]


def test_too_many_blocks_fail():
    schemas = copy.deepcopy(provider_schemas())
    assert schemas["proxmox_virtual_environment_vm"]["block_types"]["agent"]["max_items"] == 1
    doubled = MAIN.replace("  agent {\n    enabled = true\n  }\n", "  agent {\n    enabled = true\n  }\n" * 2, 1)
    problems = module_problems({"main.tf": parse_text(doubled)}, schemas)
    assert any("2 'agent' blocks, the schema allows 1" in p for p in problems), problems
