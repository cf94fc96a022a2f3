#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: k3s_token
short_description: Keep the K3s cluster token in a 0600 file, generated once
description:
  - Ensures O(path) holds the cluster token, mode C(0600).
  - When the file already holds a token it is kept and never regenerated (an initialised
    cluster keeps its token through re-runs and upgrades), unless O(token) is given and differs.
  - When the file is absent, O(token) is written, or a new cryptographically random
    short token (64 hex characters, safe in systemd env files) is generated.
  - The token is never returned.
version_added: "1.0.0"
author:
  - cps.gpu_cluster contributors (@cps-gpu-cluster)
options:
  path:
    description: File that holds the token.
    type: path
    required: true
  token:
    description:
      - Token to use instead of a generated one (16-256 characters of C(A-Za-z0-9._-), no C(%)).
    type: str
  initialised:
    description:
      - Whether a server of the cluster already runs with a token (for example
        C(/var/lib/rancher/k3s/server/token) exists). When true and O(path) is absent and
        O(token) is not given, the module fails instead of generating a token the cluster
        would reject.
    type: bool
    default: false
notes:
  - Supports check mode.
attributes:
  check_mode:
    support: full
    description: Reports whether a token would be generated without writing it.
  diff_mode:
    support: none
    description: The token is a secret and is never shown in a diff.
"""

EXAMPLES = r"""
- name: Make sure the cluster token exists on the first server
  cps.gpu_cluster.k3s_token:
    path: /etc/rancher/k3s/cluster-token
  no_log: true
"""

RETURN = r"""
generated:
  description: Whether a new token was generated (false when kept or given).
  returned: always
  type: bool
  sample: true
path:
  description: The token file.
  returned: always
  type: str
  sample: /etc/rancher/k3s/cluster-token
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.cps.gpu_cluster.plugins.module_utils.k3s import generate_token, token_problem


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            token=dict(type="str", no_log=True),
            initialised=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    given = module.params["token"]
    if given is not None:
        problem = token_problem(given)
        if problem:
            module.fail_json(msg="%s: set k3s_token to a safe value or leave it unset" % problem)

    if os.path.isdir(path):
        module.fail_json(msg="%s is a directory: point path at the token file (for example %s/cluster-token)"
                             % (path, path.rstrip("/")))
    current = None
    if os.path.exists(path):
        try:
            with open(path) as handle:
                current = handle.read().strip() or None
        except OSError as exc:
            module.fail_json(msg="Cannot read the k3s token file %s: %s" % (path, exc.strerror or exc))
        except UnicodeDecodeError:
            module.fail_json(msg="The k3s token file %s is not text: remove it or set k3s_token" % path)

    generated = False
    if current and (given is None or given == current):
        wanted = current
    elif given is not None:
        wanted = given
    elif module.params["initialised"]:
        module.fail_json(msg="%s is missing but the cluster is already initialised: set k3s_token to the "
                             "cluster's token (sudo cat /var/lib/rancher/k3s/server/token) instead of "
                             "generating a new one" % path)
    else:
        wanted = generate_token()
        generated = True

    changed = wanted != current
    if changed and not module.check_mode:
        directory = os.path.dirname(path)
        if directory and not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        tmp = "%s.tmp" % path
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(wanted + "\n")
        os.rename(tmp, path)
    if not module.check_mode and os.path.exists(path):
        changed = module.set_mode_if_different(path, "0600", changed)
    module.exit_json(changed=changed, generated=generated, path=path)


if __name__ == "__main__":
    main()
