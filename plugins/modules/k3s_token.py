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
  - Once a cluster is initialised its token is immutable here. The file is kept and never
    regenerated; a O(token) whose secret differs from the cluster's (O(server_token_path), else
    O(path)) fails with a message saying how to rotate the token (C(k3s token rotate)) and nothing
    is written.
  - Tokens are accepted in the short form (16-256 characters of C(A-Za-z0-9._-)) and in the full
    form C(K10<ca-hash>::server:<secret>) k3s writes to C(/var/lib/rancher/k3s/server/token); the
    two match when their secrets are equal. Surrounding whitespace is ignored.
  - When the file is absent, O(token) is written, else the running server's token, else a new
    cryptographically random short token (64 hex characters, safe in systemd env files).
  - A directory or an unreadable file at O(path) or O(server_token_path) fails with a clear
    message. The token is never returned.
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
      - Token to use instead of a generated one (short or full form, see the description).
    type: str
  initialised:
    description:
      - Whether a server of the cluster already runs with a token (for example
        C(/var/lib/rancher/k3s/server/db/etcd) exists). When true and neither O(path),
        O(server_token_path) nor O(token) holds a token, the module fails instead of generating
        a token the cluster would reject.
    type: bool
    default: false
  recorded_token:
    description:
      - The token the control node keeps for this cluster (the state directory's C(server-token), else
        the newest reset or restore backup). When no server holds a token (every server was rebuilt)
        it is the token written, so the cluster's etcd snapshots still restore; a O(token) that
        differs from it is refused.
    type: str
  identity_recorded:
    description:
      - Whether the state directory records this cluster's identity. When true and no token is
        stored, given, running or recorded, the module fails instead of generating a new token.
    type: bool
    default: false
  server_token_path:
    description:
      - The token file of a running k3s server on this host; when it exists it is the cluster's
        token that O(token) is checked against.
    type: path
    default: /var/lib/rancher/k3s/server/token
notes:
  - Supports check mode.
extends_documentation_fragment:
  - cps.gpu_cluster.attributes
attributes:
  check_mode:
    support: full
    description: Reports whether a token would be generated without writing it.
  diff_mode:
    support: none
    description: The token is a secret and is never shown in a diff.
  platform:
    support: full
    platforms: posix
    description: Writes the token file on the node (mode 0600).
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

from ansible_collections.cps.gpu_cluster.plugins.module_utils.k3s_token import token_plan


def read_token(module, path, setting):
    """Content of the token file at `path` (None when absent); a clean failure otherwise."""
    if not os.path.lexists(path):
        return None
    if os.path.isdir(path):
        module.fail_json(msg="%s is a directory, not a token file: set %s to a file path" % (path, setting))
    try:
        with open(path) as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        module.fail_json(msg="Could not read the token file %s (%s): fix its permissions or set %s "
                             "to a readable file" % (path, exc.__class__.__name__, setting))
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            token=dict(type="str", no_log=True),
            initialised=dict(type="bool", default=False),
            server_token_path=dict(type="path", default="/var/lib/rancher/k3s/server/token"),
            recorded_token=dict(type="str", no_log=True),
            identity_recorded=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    stored = read_token(module, path, "k3s_node_token_file")
    running = read_token(module, module.params["server_token_path"], "server_token_path")
    try:
        wanted, generated = token_plan(stored, module.params["token"], running, module.params["initialised"],
                                       module.params["recorded_token"], module.params["identity_recorded"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    changed = wanted != (stored or "").strip()
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
