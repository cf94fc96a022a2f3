# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test plumbing, not collection content: molecule's podman connection, entering the container with nsenter.

Molecule's podman driver connects with ``ansible_connection: podman``. The upstream plugin
(containers.podman.podman) has no pipelining and spends a ``podman mount`` and a ``podman exec`` (or
three) on every task and host: each ``podman`` call starts the podman binary, conmon and runc, about
0.15 s of a busy 2-core machine, which made most of the molecule tier's time. Here a command enters the
container's namespaces (mount, UTS, IPC, network, PID) with ``nsenter``, as ``podman exec`` does, with
the environment the container's init has (``podman exec`` gives the container's configured
environment), and the module goes to the interpreter on stdin (pipelining): the same container, the
same interpreter, the same result, no podman process per task. What differs from ``podman exec``: the
process stays in the caller's cgroup (the containers here share the host's cgroup namespace), and it
ends with the container all the same (the PID namespace's init takes every process with it).

The container's PID comes from ``podman inspect`` once and is kept in a small file per container,
checked against the process's start time, so a container stopped and started again (the day-2 cases do
that) is looked up again. A container that is not running is unreachable, as ssh reports a dead host,
so the day-2 cases see what a user with a dead server sees.

The scenarios find this plugin first through ANSIBLE_CONNECTION_PLUGINS (.config/molecule/config.yml)
and turn pipelining on with ANSIBLE_PIPELINING; without them the upstream plugin runs, unchanged."""

import json
import os
import shlex
import subprocess
import tempfile

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text
from ansible.plugins.connection import ConnectionBase, ensure_connect
from ansible.utils.display import Display

display = Display()

DOCUMENTATION = """
name: podman
short_description: a podman container entered with nsenter, with pipelining (molecule tests only)
description:
  - Runs commands in a running podman container by entering its namespaces with nsenter, the module
    piped to the interpreter. Needs root on the host (rootful podman), as the scenarios run.
author: cps.gpu_cluster contributors
extends_documentation_fragment:
  - connection_pipelining
options:
  remote_addr:
    description: The name or ID of the container.
    default: inventory_hostname
    vars:
      - name: ansible_host
      - name: inventory_hostname
      - name: ansible_podman_host
  podman_executable:
    description: Executable for podman command (to find the container's PID).
    default: podman
    vars:
      - name: ansible_podman_executable
    env:
      - name: ANSIBLE_PODMAN_EXECUTABLE
"""

# What podman exec enters (the containers here keep the host's cgroup namespace).
NAMESPACES = ["--mount", "--uts", "--ipc", "--net", "--pid"]
CACHE_DIR = os.path.join(tempfile.gettempdir(), "cps-gpu-cluster-molecule-pids")


def _start_time(pid):
    """Field 22 of /proc/<pid>/stat (clock ticks since boot): a PID reused by another process differs."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError, ValueError):
        return None


class Connection(ConnectionBase):
    """nsenter into a running podman container; module code on stdin when pipelining."""

    transport = "podman"
    has_pipelining = True

    def __init__(self, play_context, new_stdin, *args, **kwargs):
        super().__init__(play_context, new_stdin, *args, **kwargs)
        self._container = self._play_context.remote_addr
        self._pid = None
        self._env = None

    def _cache_path(self):
        return os.path.join(CACHE_DIR, "".join(c if c.isalnum() or c in "-_." else "_" for c in self._container))

    def _cached_pid(self):
        try:
            with open(self._cache_path(), encoding="utf-8") as cache:
                record = json.load(cache)
        except (OSError, ValueError):
            return None
        if record.get("start") and _start_time(record.get("pid", 0)) == record["start"]:
            return record["pid"]
        return None

    def _inspect_pid(self):
        podman = self.get_option("podman_executable")
        proc = subprocess.run([podman, "inspect", "--type", "container", "--format", "{{.State.Running}} {{.State.Pid}}",
                               self._container], capture_output=True, check=False)
        fields = proc.stdout.split()
        if proc.returncode != 0 or len(fields) != 2 or fields[0] != b"true" or fields[1] == b"0":
            raise AnsibleConnectionFailure("container %s is not running" % self._container)
        pid = int(fields[1])
        os.makedirs(CACHE_DIR, mode=0o700, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=CACHE_DIR)
        with os.fdopen(handle, "w", encoding="utf-8") as cache:
            json.dump({"pid": pid, "start": _start_time(pid)}, cache)
        os.replace(tmp, self._cache_path())
        return pid

    def _connect(self):
        super()._connect()
        self._pid = self._cached_pid() or self._inspect_pid()
        try:  # the environment podman exec gives: the container's, as its init has it
            with open("/proc/%d/environ" % self._pid, "rb") as environ:
                self._env = [item for item in environ.read().split(b"\0") if b"=" in item]
        except OSError:
            raise AnsibleConnectionFailure("container %s is not running" % self._container) from None
        self._connected = True
        return self

    def _run(self, args, in_data=None):
        cmd = ["nsenter", "--target", str(self._pid), *NAMESPACES, "--", "/usr/bin/env", "-i", *self._env, *args]
        display.vvv("EXEC %s" % to_text(b" ".join(to_bytes(arg) for arg in args)), host=self._container)
        proc = subprocess.run([to_bytes(arg, errors="surrogate_or_strict") for arg in cmd], input=in_data,
                              capture_output=True, check=False, cwd="/")
        if proc.returncode != 0 and _start_time(self._pid) is None:  # the container stopped under us
            raise AnsibleConnectionFailure("container %s is not running" % self._container)
        return proc.returncode, proc.stdout, proc.stderr

    @ensure_connect
    def exec_command(self, cmd, in_data=None, sudoable=False):
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        return self._run(shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data)

    @ensure_connect
    def put_file(self, in_path, out_path):
        super().put_file(in_path, out_path)
        display.vvv("PUT %s TO %s" % (in_path, out_path), host=self._container)
        with open(to_bytes(in_path, errors="surrogate_or_strict"), "rb") as source:
            data = source.read()
        rc, _out, err = self._run(["/bin/sh", "-c", "cat > %s" % shlex.quote(out_path)], data)
        if rc != 0:
            raise AnsibleError("failed to copy %s to %s in container %s: %s" % (in_path, out_path, self._container,
                                                                                to_native(err)))

    @ensure_connect
    def fetch_file(self, in_path, out_path):
        super().fetch_file(in_path, out_path)
        display.vvv("FETCH %s TO %s" % (in_path, out_path), host=self._container)
        rc, out, err = self._run(["cat", in_path])
        if rc != 0:
            raise AnsibleError("failed to fetch %s from container %s: %s" % (in_path, self._container, to_native(err)))
        with open(to_bytes(out_path, errors="surrogate_or_strict"), "wb") as target:
            target.write(out)

    def close(self):
        self._connected = False
