# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Proxmox VE cluster PCI resource mappings (``/cluster/mapping/pci``): pure planning logic.

A mapping has an ``id`` (its name), an optional ``description`` and a ``map``: a list of property
strings, one per node, such as ``node=pve1,path=0000:17:00.0,id=10de:20b5,iommugroup=42,subsystem-id=10de:1533``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

ENTRY_KEYS = ("node", "path", "id", "iommugroup", "subsystem-id")
PCI_ID_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{4}\Z")
PATH_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-7])?(?:;[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-7])?)*\Z")
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*\Z")


class MappingError(Exception):
    """A mapping request that cannot be fulfilled, with a message naming the mapping."""


def parse_map_entry(text):
    """``node=pve1,path=...,id=...`` -> dict (unknown keys kept)."""
    entry = {}
    for part in (text or "").split(","):
        if "=" in part:
            key, value = part.split("=", 1)
            entry[key.strip()] = value.strip()
    return entry


def format_map_entry(entry):
    """dict -> property string, known keys in the API's order, then any others sorted."""
    keys = [key for key in ENTRY_KEYS if entry.get(key) not in (None, "")]
    keys += sorted(key for key in entry if key not in ENTRY_KEYS and entry[key] not in (None, ""))
    return ",".join("%s=%s" % (key, entry[key]) for key in keys)


def desired_entry(node, path, pci_id, iommu_group=None, subsystem_id=None):
    """The map entry for one node, validated; raises MappingError naming what is wrong."""
    pci_id = (pci_id or "").lower()
    path = (path or "").lower()
    if not node:
        raise MappingError("node is required with state=present")
    if not PATH_RE.match(path):
        raise MappingError("path %r is not a full PCI address such as 0000:17:00.0" % (path,))
    if not PCI_ID_RE.match(pci_id):
        raise MappingError("id %r is not a vendor:device id such as 10de:20b5" % (pci_id,))
    if subsystem_id and not PCI_ID_RE.match(subsystem_id.lower()):
        raise MappingError("subsystem_id %r is not a vendor:device id such as 10de:1533" % (subsystem_id,))
    entry = {"node": node, "path": path, "id": pci_id}
    if iommu_group is not None:
        entry["iommugroup"] = str(int(iommu_group))
    if subsystem_id:
        entry["subsystem-id"] = subsystem_id.lower()
    return entry


def normalize(mapping):
    """A comparable view of an API mapping: ``{id, description, map: [sorted entry dicts]}``."""
    if mapping is None:
        return None
    entries = mapping.get("map") or []
    if isinstance(entries, str):
        entries = [entries]
    parsed = sorted((parse_map_entry(entry) for entry in entries), key=lambda entry: entry.get("node", ""))
    return {"id": mapping.get("id"), "description": mapping.get("description") or "", "map": parsed}


def plan(name, existing, state, entry=None, description=None):
    """What to do with mapping ``name``.

    ``existing`` is the API's mapping (None when absent). Returns ``(action, params, before, after)``
    where action is ``none``, ``create``, ``update`` or ``delete`` and params are the API call's
    parameters. Entries of other nodes are kept; this node's entry is replaced by ``entry``.
    """
    if not NAME_RE.match(name or ""):
        raise MappingError("mapping name %r must start with a letter and hold only letters, digits, - and _" % (name,))
    before = normalize(existing)
    if state == "absent":
        if before is None:
            return "none", {}, None, None
        return "delete", {}, before, None
    others = [item for item in (before or {}).get("map", []) if item.get("node") != entry["node"]]
    after = {
        "id": name,
        "description": (before or {}).get("description", "") if description is None else description,
        "map": sorted([*others, entry], key=lambda item: item.get("node", "")),
    }
    params = {"map": [format_map_entry(item) for item in after["map"]]}
    if after["description"]:
        params["description"] = after["description"]
    if before is None:
        params["id"] = name
        return "create", params, None, after
    if before == after:
        return "none", {}, before, after
    if existing.get("digest"):
        params["digest"] = existing["digest"]
    if not after["description"] and before["description"]:
        params["delete"] = "description"
    return "update", params, before, after


def find_mapping(listing, name):
    """The mapping called ``name`` in a ``GET /cluster/mapping/pci`` listing, or None."""
    for mapping in listing or []:
        if mapping.get("id") == name:
            return mapping
    return None


def split_token_id(token_id, user=None):
    """``user@realm!token`` -> (``user@realm``, ``token``); a bare token name needs ``user``."""
    if token_id and "!" in token_id:
        token_user, token_name = token_id.split("!", 1)
        return token_user, token_name
    return user, token_id
