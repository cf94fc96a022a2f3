#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: k3s_server_probe
short_description: Look at a k3s server's files and API in one run
description:
  - Reports whether each path of O(exists) exists (the path itself, as M(ansible.builtin.stat) without
    C(follow)), the text of each file of O(read) (as M(ansible.builtin.slurp), decoded; an empty string
    when the file is absent, not a regular file, unreadable or over 64 KiB), and the HTTP status O(api_url)
    answers with (any status; C(-1) when nothing answers within O(api_timeout)).
  - The k3s_node role's probe (etcd data, server token, API) and the etcd restore's (snapshot, restore
    markers, cluster token) ask each server every question in one module run, where a stat, slurp or uri
    task per question and server cost a module run each.
  - Changes nothing. The certificate of O(api_url) is not checked and no proxy is used (the URL is the
    server's own, C(https://127.0.0.1:6443/ping)).
version_added: "1.0.0"
author:
  - cps.gpu_cluster contributors (@cps-gpu-cluster)
options:
  exists:
    description: Paths to look for, by the name the result uses.
    type: dict
    default: {}
  read:
    description:
      - Files to read, by the name the result uses. Set C(no_log) on the task when one holds a secret.
    type: dict
    default: {}
  api_url:
    description: URL to ask; the result's RV(api_status) is its HTTP status. Not asked when empty.
    type: str
    default: ""
  api_timeout:
    description: Seconds to wait for O(api_url).
    type: int
    default: 5
notes:
  - Supports check mode (it only reads).
extends_documentation_fragment:
  - cps.gpu_cluster.attributes
attributes:
  check_mode:
    support: full
    description: Reads only; the same answer in check mode.
  diff_mode:
    support: none
    description: Nothing to change, nothing to show.
  platform:
    support: full
    platforms: posix
    description: Runs on the server it looks at.
"""

EXAMPLES = r"""
- name: Look at every server (etcd data, server token, API)
  cps.gpu_cluster.k3s_server_probe:
    exists:
      etcd: /var/lib/rancher/k3s/server/db/etcd
      token: /var/lib/rancher/k3s/server/token
    api_url: https://127.0.0.1:6443/ping
  delegate_to: "{{ item }}"
  loop: "{{ groups['k3s_servers'] }}"
  register: probe
"""

RETURN = r"""
exists:
  description: Whether each path of O(exists) exists, by name.
  returned: always
  type: dict
  sample: {"etcd": true, "token": false}
content:
  description: The text of each file of O(read), by name (empty when it could not be read).
  returned: always
  type: dict
  sample: {"restored": "snap-1\n"}
api_status:
  description: The HTTP status O(api_url) answered with, C(-1) when nothing answered.
  returned: when O(api_url) is set
  type: int
  sample: 401
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.cps.gpu_cluster.plugins.module_utils.k3s_server_probe import probe


def main():
    module = AnsibleModule(
        argument_spec=dict(
            exists=dict(type="dict", default={}),
            read=dict(type="dict", default={}),
            api_url=dict(type="str", default=""),
            api_timeout=dict(type="int", default=5),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["api_timeout"] < 1:
        module.fail_json(msg="api_timeout must be at least 1 second, not %d" % params["api_timeout"])
    for option in ("exists", "read"):
        bad = sorted(name for name, path in params[option].items() if not isinstance(path, str) or not path)
        if bad:
            module.fail_json(msg="%s: give each of %s a path" % (option, ", ".join(bad)))
    module.exit_json(changed=False, **probe(params["exists"], params["read"], params["api_url"], params["api_timeout"]))


if __name__ == "__main__":
    main()
