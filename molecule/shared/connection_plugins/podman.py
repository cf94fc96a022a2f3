# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test plumbing, not collection content: containers.podman's podman connection with pipelining.

Molecule's podman driver connects with ``ansible_connection: podman``. The upstream plugin has no
pipelining, so every task costs a ``podman exec`` to make a temporary directory, a copy of the module
into the container, a ``podman exec`` to run it and one to remove the directory. Here the module goes
to the interpreter on the stdin of one ``podman exec --interactive`` (what pipelining is): the same
container, the same module, the same result, a third of the ``podman`` calls. The scenarios find this
plugin first through ANSIBLE_CONNECTION_PLUGINS (.config/molecule/config.yml) and turn pipelining on
with ANSIBLE_PIPELINING; without them the upstream plugin runs, unchanged."""

import shlex

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.connection import ConnectionBase, ensure_connect
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection

DOCUMENTATION = """
name: podman
short_description: containers.podman.podman with pipelining (molecule tests only)
description:
  - The upstream containers.podman.podman connection, with has_pipelining and stdin passed through
    C(podman exec --interactive) when a module is piped to the interpreter.
author: cps.gpu_cluster contributors
extends_documentation_fragment:
  - connection_pipelining
options:
  remote_addr:
    description: The ID of the container you want to access.
    default: inventory_hostname
    vars:
      - name: ansible_host
      - name: inventory_hostname
      - name: ansible_podman_host
  remote_user:
    description: User which runs the commands inside the container.
    ini:
      - section: defaults
        key: remote_user
    env:
      - name: ANSIBLE_REMOTE_USER
    vars:
      - name: ansible_user
  podman_extra_args:
    description: Extra arguments to pass to the podman command line.
    default: ''
    ini:
      - section: defaults
        key: podman_extra_args
    vars:
      - name: ansible_podman_extra_args
    env:
      - name: ANSIBLE_PODMAN_EXTRA_ARGS
  podman_executable:
    description: Executable for podman command.
    default: podman
    vars:
      - name: ansible_podman_executable
    env:
      - name: ANSIBLE_PODMAN_EXECUTABLE
"""


class Connection(PodmanConnection):
    """podman exec per command; module code on stdin when pipelining."""

    transport = "podman"
    has_pipelining = True

    @ensure_connect
    def exec_command(self, cmd, in_data=None, sudoable=False):
        if in_data is None or self.user:
            result = super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        else:
            # what the upstream exec_command does, with --interactive so that the piped module reaches the interpreter
            ConnectionBase.exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
            args = shlex.split(to_native(cmd, errors="surrogate_or_strict"))
            result = self._podman(["exec", "--interactive"], args, in_data)
        # A stopped container is a host that is down: unreachable, as ssh reports it (the upstream
        # plugin reports a module failure), so the day-2 cases see what a user with a dead server sees.
        if result[0] != 0 and b"container state improper" in to_bytes(result[2]):
            raise AnsibleConnectionFailure("container %s is not running" % self._container_id)
        return result
