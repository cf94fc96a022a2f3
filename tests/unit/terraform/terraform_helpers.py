"""Helpers for the terraform/proxmox tests, without a terraform binary.

* ``load_module()`` parses every ``.tf`` file with python-hcl2 (a real HCL2
  parser) and ``unquote()`` turns its quoted string literals back into values.
* ``resolve()`` is the Python mirror of ``locals.tf``: what Terraform computes
  from the variables (VM names, IPs, ids, preset sizes with per-worker
  overrides, GPU devices, the inventory template's variables). Where a
  terraform binary exists, tests/unit/terraform/test_terraform_console.py
  checks the mirror against ``terraform console`` on the same variables.
* ``render_template()`` is a faithful interpreter of the subset of Terraform's
  template language that ``inventory.yml.tftpl`` uses: ``${name}``,
  ``${jsonencode(name)}``, ``%{ for k, v in name ~}`` / ``%{ endfor ~}``.
  Anything else in a directive or interpolation raises, so the template cannot
  grow past what this renderer understands without the tests failing.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import hcl2
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.terraform_vars import terraform_vars

REPO = Path(__file__).resolve().parents[3]
MODULE = REPO / "terraform" / "proxmox"
TEMPLATE = MODULE / "inventory.yml.tftpl"
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBvBmS0ZtZQwZ7u0Xo0N9c0Gk2j3pNwqKp8Y3mJ1bQ9x test@ci"


# --------------------------------------------------------------------------- HCL
def load_module() -> dict[str, dict]:
    """Every .tf file of the module, parsed: file name -> python-hcl2 dict."""
    return {path.name: hcl2.load(path.open()) for path in sorted(MODULE.glob("*.tf"))}


def unquote(value):
    """python-hcl2 keeps string literals quoted ('"q35"'); return the plain value."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return json.loads(value)
    return value


def blocks(parsed: dict[str, dict], kind: str) -> dict:
    """All blocks of one kind across files: label (unquoted) -> body."""
    found = {}
    for document in parsed.values():
        for block in document.get(kind, []):
            for label, body in block.items():
                found[unquote(label)] = body
    return found


def resources(parsed: dict[str, dict]) -> dict[tuple[str, str], dict]:
    """(type, name) -> body of every resource."""
    found = {}
    for document in parsed.values():
        for block in document.get("resource", []):
            for rtype, named in block.items():
                for name, body in named.items():
                    found[(unquote(rtype), unquote(name))] = body
    return found


# ------------------------------------------------------------- locals.tf mirror
PRESETS = {  # variables.tf default, checked against the parsed default by a test
    "small": {"cores": 8, "memory_mb": 65536, "disk_gb": 200, "scratch_disk_gb": 512, "gpus": 1},
    "medium": {"cores": 16, "memory_mb": 131072, "disk_gb": 500, "scratch_disk_gb": 1024, "gpus": 1},
    "large": {"cores": 16, "memory_mb": 131072, "disk_gb": 500, "scratch_disk_gb": 1024, "gpus": 2},
}
DEFAULTS = {
    "proxmox_endpoint": "", "vm_storage": "local-lvm", "bridge": "vmbr0", "vm_id_base": 200, "domain": "",
    "ssh_user": "debian", "presets": PRESETS, "control_plane_size": {}, "control_plane_count": 3,
    "control_planes": {}, "gpu_worker_count": 4, "gpu_worker_preset": "large", "gpu_pci_mappings": [],
    "gpu_workers": {}, "scratch_disk_serial": "scratch", "gpu_model": "NVIDIA A100 80GB PCIe",
    "inventory_vars": {}, "placement": {}, "hugepages": "",
}
CONTROL_PLANE_SIZE = {"cores": 4, "memory_mb": 16384, "disk_gb": 100}


def coalesce(*values):
    return next(v for v in values if v is not None)


def _placed(var: dict, name: str) -> dict:
    """locals.tf's NUMA placement fields of one VM: pinned CPUs and host node, or None."""
    placed = var["placement"].get(name)
    return {"affinity": placed["affinity"] if placed else None, "host_node": placed["host_node"] if placed else None}


def resolve(tfvars: dict) -> dict:
    """What locals.tf computes from these variables (defaults filled in)."""
    var = dict(DEFAULTS, **tfvars)
    network = ipaddress.ip_network(var["node_network"])
    cp_size = dict(CONTROL_PLANE_SIZE, **var["control_plane_size"])

    cp_source = var["control_planes"] or {
        f"cp{i + 1}": {"ip": str(network[11 + i]), "vm_id": None} for i in range(var["control_plane_count"])
    }
    control_planes = {
        name: {"ip": cp_source[name]["ip"], "vm_id": coalesce(cp_source[name].get("vm_id"), var["vm_id_base"] + 1 + index),
               **cp_size, **_placed(var, name)}
        for index, name in enumerate(sorted(cp_source))
    }

    per_worker = var["presets"][var["gpu_worker_preset"]]["gpus"]
    pool = var["gpu_pci_mappings"]
    worker_source = var["gpu_workers"] or {
        f"wk-gpu{i + 1}": {"ip": str(network[21 + i]),
                           "gpu_mappings": [pool[i * per_worker + j] for j in range(per_worker) if i * per_worker + j < len(pool)]}
        for i in range(var["gpu_worker_count"])
    }
    gpu_workers = {}
    for index, name in enumerate(sorted(worker_source)):
        source = worker_source[name]
        preset_name = coalesce(source.get("preset"), var["gpu_worker_preset"])
        preset = var["presets"][preset_name]
        gpu_workers[name] = {
            "ip": source["ip"],
            "vm_id": coalesce(source.get("vm_id"), var["vm_id_base"] + 11 + index),
            "preset": preset_name,
            **{field: coalesce(source.get(field), preset[field]) for field in ("cores", "memory_mb", "disk_gb", "scratch_disk_gb", "gpus")},
            "gpu_model": coalesce(source.get("gpu_model"), var["gpu_model"]),
            "gpu_mappings": list(source.get("gpu_mappings") or []),
            "gpu_devices": [{"mapping": m, "id": None} for m in source.get("gpu_mappings") or []]
            + [{"mapping": None, "id": a} for a in source.get("gpu_addresses") or []],
            **_placed(var, name),
        }
        placed_pages = var["placement"].get(name, {}).get("hugepages", "")
        gpu_workers[name]["hugepages"] = placed_pages or var["hugepages"] or None

    extra = var["inventory_vars"]
    inventory_vars = {
        "all_vars": {
            "gpu_cluster_name": var["cluster_name"], "gpu_cluster_node_network": var["node_network"],
            "gpu_cluster_gateway": var["gateway"], "gpu_cluster_dns_servers": var["dns_servers"],
            "ansible_user": var["ssh_user"],
            **({"gpu_cluster_domain": var["domain"]} if var["domain"] else {}),
            **extra.get("all", {}),
        },
        "proxmox_vars": {
            "ansible_user": "root", "gpu_cluster_proxmox_node": var["proxmox_node"], "gpu_cluster_proxmox_storage": var["vm_storage"],
            "gpu_cluster_proxmox_scratch_storage": var["scratch_storage"],
            "gpu_cluster_proxmox_template_id": var["template_vm_id"], "gpu_cluster_proxmox_bridge": var["bridge"],
            **({"gpu_cluster_proxmox_api_url": var["proxmox_endpoint"]} if var["proxmox_endpoint"] else {}),
            **extra.get("proxmox_hosts", {}),
        },
        "proxmox_hosts": {var["proxmox_node"]: {"ansible_host": var["proxmox_host_address"]}},
        "k3s_cluster_vars": extra.get("k3s_cluster", {}),
        "k3s_server_vars": {
            "gpu_cluster_vm_cores": cp_size["cores"], "gpu_cluster_vm_memory_mb": cp_size["memory_mb"],
            "gpu_cluster_vm_disk_gb": cp_size["disk_gb"], **extra.get("k3s_servers", {}),
        },
        "k3s_servers": {name: {"ansible_host": vm["ip"]} for name, vm in control_planes.items()},
        "k3s_agent_vars": extra.get("k3s_agents", {}),
        "gpu_worker_vars": {
            "gpu_cluster_gpu_model": var["gpu_model"],
            "gpu_cluster_scratch_device": f"/dev/disk/by-id/virtio-{var['scratch_disk_serial']}",
            **extra.get("gpu_workers", {}),
        },
        "gpu_workers": {
            name: {
                "ansible_host": vm["ip"], "gpu_cluster_vm_preset": vm["preset"], "gpu_cluster_vm_cores": vm["cores"],
                "gpu_cluster_vm_memory_mb": vm["memory_mb"], "gpu_cluster_vm_disk_gb": vm["disk_gb"],
                "gpu_cluster_scratch_disk_gb": vm["scratch_disk_gb"], "gpu_cluster_gpu_count": vm["gpus"],
                "gpu_cluster_gpu_model": vm["gpu_model"],
                **({"gpu_cluster_gpu_pci_mappings": vm["gpu_mappings"]} if vm["gpu_mappings"] else {}),
            }
            for name, vm in gpu_workers.items()
        },
    }
    return {"control_planes": control_planes, "gpu_workers": gpu_workers, "inventory_vars": inventory_vars}


# ------------------------------------------------------------ template renderer
TOKEN = re.compile(r"\$\{(?P<interp>[^}]*)\}|%\{(?P<directive>[^}]*)\}")
NAME = r"[A-Za-z_][A-Za-z0-9_]*"


def jsonencode(value) -> str:
    """Terraform's jsonencode: compact, object keys sorted, <>& escaped as Go does."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _lookup(name: str, scope: dict):
    if not re.fullmatch(NAME, name):
        raise ValueError(f"unsupported template expression {name!r}")
    if name not in scope:
        raise KeyError(f"template variable {name!r} is not set")
    return scope[name]


def _interpolate(expression: str, scope: dict) -> str:
    expression = expression.strip()
    call = re.fullmatch(r"jsonencode\((" + NAME + r")\)", expression)
    if call:
        return jsonencode(_lookup(call.group(1), scope))
    value = _lookup(expression, scope)
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise TypeError(f"${{{expression}}} is not a primitive value")
    return str(value)


def _tokens(text: str):
    """Literal strings and ('interp'|'for'|'endfor', ...) tuples, with ~ strip markers applied."""
    out, position, strip_next = [], 0, False
    for match in TOKEN.finditer(text):
        literal = text[position:match.start()]
        if strip_next:
            literal = re.sub(r"^[ \t]*\r?\n?", "", literal)
        out.append(literal)
        strip_next = False
        if match.group("interp") is not None:
            out.append(("interp", match.group("interp")))
        else:
            body = match.group("directive")
            if body.startswith("~"):
                raise ValueError("left strip markers (%{~) are outside the supported subset")
            if body.endswith("~"):
                strip_next, body = True, body[:-1]
            words = body.split()
            loop = re.fullmatch(r"for\s+(" + NAME + r")\s*,\s*(" + NAME + r")\s+in\s+(" + NAME + r")", body.strip())
            if loop:
                out.append(("for", loop.group(1), loop.group(2), loop.group(3)))
            elif words == ["endfor"]:
                out.append(("endfor",))
            else:
                raise ValueError(f"unsupported directive %{{{body}}}")
        position = match.end()
    literal = text[position:]
    if strip_next:
        literal = re.sub(r"^[ \t]*\r?\n?", "", literal)
    out.append(literal)
    return out


def _render(tokens: list, scope: dict) -> str:
    result, index = [], 0
    while index < len(tokens):
        token = tokens[index]
        if isinstance(token, str):
            result.append(token)
        elif token[0] == "interp":
            result.append(_interpolate(token[1], scope))
        elif token[0] == "for":
            depth, end = 1, index + 1
            while depth:
                if isinstance(tokens[end], tuple) and tokens[end][0] == "for":
                    depth += 1
                elif isinstance(tokens[end], tuple) and tokens[end][0] == "endfor":
                    depth -= 1
                end += 1
            body = tokens[index + 1:end - 1]
            collection = _lookup(token[3], scope)
            items = sorted(collection.items()) if isinstance(collection, dict) else list(enumerate(collection))
            for key, value in items:
                result.append(_render(body, dict(scope, **{token[1]: key, token[2]: value})))
            index = end
            continue
        else:
            raise ValueError("%{ endfor } without %{ for }")
        index += 1
    return "".join(result)


def render_template(variables: dict, text: str | None = None) -> str:
    """Render inventory.yml.tftpl (or text) as templatefile() would."""
    return _render(_tokens(TEMPLATE.read_text() if text is None else text), variables)


# --------------------------------------------------------------- the homelab
def tfvars_from_inventory(inventory_json: dict) -> dict:
    """The variables playbooks/provision.yml passes, for an `ansible-inventory --list` dump."""
    return terraform_vars(groups_of(inventory_json), inventory_json["_meta"]["hostvars"], [SSH_KEY])


def groups_of(inventory_json: dict) -> dict[str, list[str]]:
    """group -> every host in it or its children (Ansible's `groups`)."""
    def hosts(group: str) -> list[str]:
        found = list(inventory_json.get(group, {}).get("hosts", []))
        for child in inventory_json.get(group, {}).get("children", []):
            found += [h for h in hosts(child) if h not in found]
        return found

    names = {"all"} | {g for g in inventory_json if g != "_meta"}
    for data in list(inventory_json.values()):
        if isinstance(data, dict):
            names |= set(data.get("children", []))
    return {name: hosts(name) for name in sorted(names)}


# ------------------------------------------------------------------ ansible
ANSIBLE_INVENTORY = shutil.which("ansible-inventory") or str(REPO / ".venv" / "bin" / "ansible-inventory")


def ansible_env() -> dict:
    return dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
                ANSIBLE_INJECT_FACT_VARS="false", ANSIBLE_NOCOLOR="1")


def inventory_list(source) -> dict:
    """`ansible-inventory --list` of an inventory file or directory."""
    out = subprocess.run([ANSIBLE_INVENTORY, "-i", str(source), "--list"], cwd=REPO, env=ansible_env(),
                         check=True, capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)
