"""Shared by every molecule scenario's testinfra tests (pytest loads conftest.py files from the
rootdir down to each test directory).

Molecule runs testinfra with ``--connection=ansible``. testinfra's ansible backend turns the hosts
of known connection types into a direct backend, but not ``podman``: for those it starts a whole
``ansible`` ad-hoc run per command (about 4 s each; the k3s_ha verify step took 5 minutes). Here a
host whose inventory connection is podman gets testinfra's own ``podman://`` backend: ``podman exec``
per command, the same container, the same commands, a fraction of the time. The tests themselves
still see the ansible backend (host names, ``host.backend.ansible_inventory``)."""

from __future__ import annotations

import testinfra
from testinfra.utils import ansible_runner

PODMAN_CONNECTIONS = ("podman", "containers.podman.podman")
_ansible_host = ansible_runner.get_ansible_host


def _podman_aware_host(config, inventory, host, *args, **kwargs):
    hostvars = inventory.get("_meta", {}).get("hostvars", {}).get(host, {})
    if hostvars.get("ansible_connection") in PODMAN_CONNECTIONS:
        return testinfra.get_host(f"podman://{hostvars.get('ansible_host', host)}")
    return _ansible_host(config, inventory, host, *args, **kwargs)


ansible_runner.get_ansible_host = _podman_aware_host
