#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: proxmox_pci_mapping
short_description: Manage a Proxmox VE cluster PCI resource mapping
version_added: 0.1.0
description:
  - Creates, updates or removes a cluster PCI resource mapping (C(/cluster/mapping/pci), Proxmox VE 8)
    so that VMs reference a GPU by a stable name (C(hostpci0 mapping=a100-0)) instead of a raw address.
  - Proxmox VE refuses C(hostpci) with a raw device to anyone but C(root@pam); automation with an API
    token needs mappings and the C(Mapping.Use) privilege on them.
  - With I(state=present) this node's entry of the mapping is set; entries for other nodes are kept.
  - Supports check mode and diff mode.
requirements:
  - proxmoxer >= 2.0
  - requests
options:
  api_host:
    description:
      - Proxmox VE host name or address. Falls back to the E(PROXMOX_HOST) environment variable.
    type: str
    required: true
  api_port:
    description:
      - API port. Falls back to E(PROXMOX_PORT); proxmoxer uses 8006 when unset.
    type: int
  api_user:
    description:
      - User, C(user@realm). Falls back to E(PROXMOX_USER). Not needed when I(api_token_id) is a full
        C(user@realm!token) id.
    type: str
  api_password:
    description:
      - Password of I(api_user). Falls back to E(PROXMOX_PASSWORD).
    type: str
  api_token_id:
    description:
      - API token id, C(token) or C(user@realm!token). Falls back to E(PROXMOX_TOKEN_ID).
    type: str
  api_token_secret:
    description:
      - API token secret. Falls back to E(PROXMOX_TOKEN_SECRET).
    type: str
  validate_certs:
    description:
      - Verify the API's TLS certificate. Falls back to E(PROXMOX_VALIDATE_CERTS).
    type: bool
    default: true
  name:
    description:
      - The mapping's id (the name VMs reference), for example C(a100-0).
    type: str
    required: true
  node:
    description:
      - Cluster node the device is in. Required with I(state=present).
    type: str
  path:
    description:
      - PCI address of the device, C(0000:17:00.0); a card without the function (C(0000:17:00)) maps all
        its functions. Required with I(state=present).
    type: str
  id:
    description:
      - vendor:device id of the device, C(10de:20b5). Required with I(state=present).
    type: str
  iommu_group:
    description:
      - IOMMU group of the device; Proxmox warns at VM start when it changed.
    type: int
    aliases: [iommugroup]
  subsystem_id:
    description:
      - Subsystem vendor:device id of the device, C(10de:1533).
    type: str
  description:
    description:
      - Description of the mapping. Left as it is when unset.
    type: str
  state:
    description:
      - C(present) creates or updates the mapping; C(absent) removes the whole mapping.
    type: str
    choices: [present, absent]
    default: present
author:
  - cps.gpu_cluster contributors (@cps-gpu-cluster)
seealso:
  - name: Proxmox VE API, /cluster/mapping/pci
    description: The API this module calls.
    link: https://pve.proxmox.com/pve-docs/api-viewer/#/cluster/mapping/pci
extends_documentation_fragment:
  - cps.gpu_cluster.attributes
attributes:
  check_mode:
    support: full
    description: Plans the create, update or delete against the API's current mapping and reports it without calling the API to change it.
  diff_mode:
    support: full
    description: Returns the mapping before and after as C(diff).
  platform:
    support: full
    platforms: posix
    description: Runs wherever C(proxmoxer) reaches the Proxmox VE API (usually the control node).
"""

EXAMPLES = r"""
- name: Map the first A100 as a100-0 (token auth, secret from the environment)
  cps.gpu_cluster.proxmox_pci_mapping:
    api_host: 10.0.0.2
    api_token_id: terraform@pve!gpu-cluster
    name: a100-0
    node: pve1
    path: "0000:17:00.0"
    id: "10de:20b5"
    iommu_group: 42
    subsystem_id: "10de:1533"
    description: NVIDIA A100 80GB PCIe
  delegate_to: localhost

- name: Remove a mapping
  cps.gpu_cluster.proxmox_pci_mapping:
    api_host: 10.0.0.2
    api_user: root@pam
    api_password: "{{ vault_proxmox_password }}"
    name: a100-7
    state: absent
"""

RETURN = r"""
mapping:
  description: The mapping after the run (null when absent), entries parsed into dicts.
  returned: always
  type: dict
  sample:
    id: a100-0
    description: NVIDIA A100 80GB PCIe
    map:
      - {node: pve1, path: "0000:17:00.0", id: "10de:20b5", iommugroup: "42", subsystem-id: "10de:1533"}
operation:
  description: What was (or in check mode would be) done, C(none), C(create), C(update) or C(delete).
  returned: always
  type: str
  sample: create
diff:
  description: The mapping before and after, in diff mode.
  returned: when diff mode is on
  type: dict
"""

import traceback

from ansible.module_utils.basic import AnsibleModule, env_fallback, missing_required_lib

from ansible_collections.cps.gpu_cluster.plugins.module_utils.proxmox_mapping import (
    MappingError,
    desired_entry,
    find_mapping,
    plan,
    split_token_id,
)

PROXMOXER_IMPORT_ERROR = None
try:
    from proxmoxer import ProxmoxAPI
    from proxmoxer.core import ResourceException
except ImportError:
    PROXMOXER_IMPORT_ERROR = traceback.format_exc()
    ProxmoxAPI = None
    ResourceException = Exception


def argument_spec():
    return dict(
        api_host=dict(type="str", required=True, fallback=(env_fallback, ["PROXMOX_HOST"])),
        api_port=dict(type="int", fallback=(env_fallback, ["PROXMOX_PORT"])),
        api_user=dict(type="str", fallback=(env_fallback, ["PROXMOX_USER"])),
        api_password=dict(type="str", no_log=True, fallback=(env_fallback, ["PROXMOX_PASSWORD"])),
        api_token_id=dict(type="str", no_log=False, fallback=(env_fallback, ["PROXMOX_TOKEN_ID"])),
        api_token_secret=dict(type="str", no_log=True, fallback=(env_fallback, ["PROXMOX_TOKEN_SECRET"])),
        validate_certs=dict(type="bool", default=True, fallback=(env_fallback, ["PROXMOX_VALIDATE_CERTS"])),
        name=dict(type="str", required=True),
        node=dict(type="str"),
        path=dict(type="str"),
        id=dict(type="str"),
        iommu_group=dict(type="int", aliases=["iommugroup"]),
        subsystem_id=dict(type="str"),
        description=dict(type="str"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
    )


def connect(params):
    """A ProxmoxAPI client from the auth options (token or password)."""
    user, token_name = split_token_id(params["api_token_id"], params["api_user"])
    if not user:
        raise MappingError("set api_user (user@realm) or a full api_token_id (user@realm!token)")
    kwargs = {"user": user, "verify_ssl": params["validate_certs"]}
    if params["api_port"]:
        kwargs["port"] = params["api_port"]
    if token_name:
        kwargs.update(token_name=token_name, token_value=params["api_token_secret"])
    else:
        kwargs["password"] = params["api_password"]
    return ProxmoxAPI(params["api_host"], **kwargs)


def run(module, api):
    """Read the mapping, plan, apply unless in check mode; returns the result dict."""
    params = module.params
    name = params["name"]
    entry = None
    if params["state"] == "present":
        entry = desired_entry(params["node"], params["path"], params["id"], params["iommu_group"], params["subsystem_id"])
    pci = api.cluster.mapping.pci
    try:
        existing = find_mapping(pci.get(), name)
        if existing is not None:
            existing = dict(existing, **(pci(name).get() or {}))
            existing.setdefault("id", name)
    except ResourceException as exc:
        raise MappingError("reading PCI mapping %s failed: %s" % (name, exc)) from exc
    action, call, before, after = plan(name, existing, params["state"], entry, params["description"])
    if action != "none" and not module.check_mode:
        try:
            if action == "create":
                pci.post(**call)
            elif action == "update":
                pci(name).put(**call)
            else:
                pci(name).delete()
        except ResourceException as exc:
            raise MappingError("%s of PCI mapping %s failed: %s" % (action, name, exc)) from exc
    result = {"changed": action != "none", "operation": action, "mapping": after}
    if module._diff:
        result["diff"] = {"before": before or {}, "after": after or {}}
    return result


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_one_of=[("api_password", "api_token_id")],
        required_together=[("api_token_id", "api_token_secret")],
        required_if=[("state", "present", ("node", "path", "id"))],
        supports_check_mode=True,
    )
    if PROXMOXER_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("proxmoxer"), exception=PROXMOXER_IMPORT_ERROR)
    result = None
    try:
        result = run(module, connect(module.params))
    except MappingError as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # connection or authentication errors from proxmoxer/requests
        module.fail_json(msg="Proxmox API at %s: %s" % (module.params["api_host"], exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
