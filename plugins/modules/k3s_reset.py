#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: k3s_reset
short_description: Remove k3s's trees from a node without deleting data on mounted volumes
description:
  - Kills the containerd shims k3s started and every process below them (what C(k3s-killall.sh) does),
    so no pod holds a volume mounted.
  - Unmounts every mount at or below O(paths), read from C(/proc/self/mountinfo), deepest first.
    When a plain C(umount) fails and O(lazy_unmount) is true it detaches the mount lazily
    (C(umount -l)) and reports it in RV(lazy_unmounted).
  - Refuses to delete anything while a mount is left under O(paths).
  - Removes O(paths) with a walk that never enters a mount point or a directory on another
    filesystem (such a directory is kept and reported in RV(kept)).
  - Safe to re-run; what is already gone is skipped.
version_added: "1.0.0"
author:
  - cps.gpu_cluster contributors (@cps-gpu-cluster)
options:
  paths:
    description: Trees to unmount and remove.
    type: list
    elements: path
    default: [/var/lib/kubelet, /var/lib/rancher/k3s, /run/k3s]
  kill_shims:
    description: Kill the containerd shims under C(/var/lib/rancher/k3s) or C(/run/k3s) and their children first.
    type: bool
    default: true
  lazy_unmount:
    description: Detach a mount that a plain C(umount) cannot remove (C(umount -l)) instead of failing.
    type: bool
    default: true
  local_volume_dirs:
    description:
      - Directories where local-path-provisioner keeps volume data on this node. Before anything is
        killed, unmounted or removed, the module fails, naming every PersistentVolume (RV(local_volumes))
        whose directory there (C(<pv>_<namespace>_<claim>)) holds a file and is not a mount point.
      - Empty skips the check (the data is deleted with the trees).
    type: list
    elements: path
    default: []
  node_name:
    description: The node's name in the refusal message.
    type: str
    default: this node
notes:
  - Supports check mode (reports what would be killed, unmounted and removed).
extends_documentation_fragment:
  - cps.gpu_cluster.attributes
attributes:
  check_mode:
    support: full
    description: Reports the processes, mounts and trees it would act on without touching them.
  diff_mode:
    support: none
    description: No diff.
  platform:
    support: full
    platforms: linux
    description: Reads C(/proc/self/mountinfo) and C(/proc) of a Linux k3s node and unmounts with C(umount).
"""

EXAMPLES = r"""
- name: Remove k3s's data, never what is mounted into it
  cps.gpu_cluster.k3s_reset:
    paths: [/var/lib/kubelet, /var/lib/rancher/k3s, /run/k3s]

- name: Refuse (in check mode, before anything stops) when local-path volumes hold data here
  cps.gpu_cluster.k3s_reset:
    local_volume_dirs: [/var/lib/rancher/k3s/storage]
    node_name: wk-gpu1
  check_mode: true
"""

RETURN = r"""
killed:
  description: PIDs killed (shims and their children).
  returned: always
  type: list
  elements: int
  sample: [4211, 4250]
unmounted:
  description: Mount points unmounted, in order.
  returned: always
  type: list
  elements: str
  sample: [/var/lib/kubelet/pods/0b1c/volumes/kubernetes.io~nfs/pvc-1]
lazy_unmounted:
  description: Mount points only detached lazily (still busy; their filesystems were not touched).
  returned: always
  type: list
  elements: str
  sample: []
removed:
  description: Trees of O(paths) that were removed.
  returned: always
  type: list
  elements: str
  sample: [/var/lib/kubelet, /run/k3s]
kept:
  description: Directories left because they are on another filesystem (never entered).
  returned: always
  type: list
  elements: str
  sample: []
local_volumes:
  description: The local-path volumes found under O(local_volume_dirs) that would have been deleted (the module then failed).
  returned: always
  type: list
  elements: dict
  sample: [{pv: pvc-3f1c2a9e-0d5b-4f1e-9a43-7c2b1e6d5a10, namespace: ml, claim: scratch,
            path: /var/lib/rancher/k3s/storage/pvc-3f1c2a9e-0d5b-4f1e-9a43-7c2b1e6d5a10_ml_scratch}]
"""

import os
import signal

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.cps.gpu_cluster.plugins.module_utils.k3s_reset import (
    descendants, local_volumes, local_volumes_message, mounts_under, parse_mountinfo, remove_tree, shim_pids)

MOUNTINFO = "/proc/self/mountinfo"


def read_processes():
    """({pid: argv}, {pid: ppid}) from /proc."""
    argvs, parents = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                argvs[pid] = [part.decode("utf-8", "replace") for part in handle.read().split(b"\0") if part]
            with open("/proc/%d/stat" % pid) as handle:
                parents[pid] = int(handle.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # the process ended meanwhile
    return argvs, parents


def read_mounts():
    with open(MOUNTINFO) as handle:
        return parse_mountinfo(handle.read())


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type="list", elements="path", default=["/var/lib/kubelet", "/var/lib/rancher/k3s", "/run/k3s"]),
            kill_shims=dict(type="bool", default=True),
            lazy_unmount=dict(type="bool", default=True),
            local_volume_dirs=dict(type="list", elements="path", default=[]),
            node_name=dict(type="str", default="this node"),
        ),
        supports_check_mode=True,
    )
    paths = [os.path.normpath(p) for p in module.params["paths"]]
    result = dict(changed=False, killed=[], unmounted=[], lazy_unmounted=[], removed=[], kept=[], local_volumes=[])

    volumes = local_volumes([os.path.normpath(d) for d in module.params["local_volume_dirs"]],
                            [m["mount_point"] for m in read_mounts()])
    if volumes:
        result["local_volumes"] = volumes
        module.fail_json(msg=local_volumes_message(volumes, module.params["node_name"]), **result)

    if module.params["kill_shims"]:
        argvs, parents = read_processes()
        shims = shim_pids(argvs)
        victims = [pid for pid in descendants(shims, parents) if pid != os.getpid()] if shims else []
        result["killed"] = victims
        if victims:
            result["changed"] = True
            if not module.check_mode:
                for pid in victims:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass

    umount = module.get_bin_path("umount", required=True)
    for mount_point in mounts_under(read_mounts(), paths):
        result["changed"] = True
        if module.check_mode:
            result["unmounted"].append(mount_point)
            continue
        rc, out, err = module.run_command([umount, mount_point])
        if rc == 0:
            result["unmounted"].append(mount_point)
            continue
        if not module.params["lazy_unmount"]:
            module.fail_json(msg="Could not unmount %s (%s); nothing was deleted. Stop what uses it "
                                 "(fuser -vm %s) and re-run, or allow a lazy unmount." % (
                                     mount_point, (err or out).strip(), mount_point), **result)
        rc, out, err = module.run_command([umount, "-l", mount_point])
        if rc != 0:
            module.fail_json(msg="Could not unmount %s, not even lazily (%s); nothing was deleted."
                                 % (mount_point, (err or out).strip()), **result)
        result["lazy_unmounted"].append(mount_point)

    mounts = read_mounts()
    if not module.check_mode:
        left = mounts_under(mounts, paths)
        if left:
            module.fail_json(msg="Mounts are still under the k3s trees after unmounting: %s. Nothing "
                                 "was deleted; unmount them and re-run." % ", ".join(left), **result)
    mount_points = [m["mount_point"] for m in mounts]
    for path in paths:
        if not os.path.lexists(path):
            continue
        try:
            removed, kept = remove_tree(path, mount_points, dry_run=module.check_mode)
        except OSError as exc:
            module.fail_json(msg="Could not remove %s: %s. Re-run after fixing it; what is removed "
                                 "stays removed." % (path, exc), **result)
        if removed:
            result["changed"] = True
        if path in removed:
            result["removed"].append(path)
        result["kept"].extend(kept)
    if result["kept"] and not module.check_mode:
        module.fail_json(msg="Kept %s: on another filesystem (never entered). Unmount it and re-run."
                         % ", ".join(result["kept"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
