# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions for removing k3s from a node without touching data that k3s does not own.

A pod's volumes (NFS PVCs, local-path directories bind-mounted from elsewhere) are
mounted under the trees k3s owns (/var/lib/kubelet, /var/lib/rancher/k3s, /run/k3s).
Deleting those trees while a volume is mounted deletes the files on the share. So:
find every mount under the trees in /proc/self/mountinfo, unmount them deepest first,
and remove the trees with a walk that never descends into a directory on another
filesystem or into a mount point.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re
import stat

# Trees k3s owns on a node (what k3s-uninstall.sh / k3s-killall.sh remove or unmount).
K3S_TREES = ("/var/lib/kubelet", "/var/lib/rancher/k3s", "/run/k3s")

# A containerd shim that k3s started: its binary lives in k3s's data dir
# (k3s-killall.sh greps for k3s/data/[^/]*/bin/containerd-shim).
_SHIM = re.compile(r"(^|/)(var/lib/rancher/k3s|run/k3s)/.*containerd-shim")
_SHIM_NAME = re.compile(r"k3s/data/[^/]+/bin/containerd-shim")


def _unescape(field):
    """mountinfo escapes space, tab, newline and backslash as \\ooo."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text):
    """Parse /proc/self/mountinfo into a list of dicts (id, parent, mount_point, fstype, source)."""
    mounts = []
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) < 7 or "-" not in fields[6:]:
            continue
        sep = fields.index("-", 6)
        post = fields[sep + 1:]
        mounts.append({
            "id": int(fields[0]),
            "parent": int(fields[1]),
            "mount_point": _unescape(fields[4]),
            "fstype": post[0] if post else "",
            "source": _unescape(post[1]) if len(post) > 1 else "",
        })
    return mounts


def is_within(path, root):
    """True when `path` is `root` or below it (path components, not string prefixes)."""
    path = os.path.normpath(path)
    root = os.path.normpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def mounts_under(mounts, roots):
    """Mount points at or below any of `roots`, in the order to unmount them.

    Deepest first; among stacked mounts on the same point the newest (highest id) first,
    so each umount removes the top of the stack.
    """
    found = [m for m in mounts if any(is_within(m["mount_point"], root) for root in roots)]
    found.sort(key=lambda m: (-m["mount_point"].rstrip("/").count("/"), -m["id"]))
    return [m["mount_point"] for m in found]


def shim_pids(processes):
    """PIDs of containerd shims that k3s started, from {pid: argv list}."""
    pids = []
    for pid, argv in processes.items():
        if not argv:
            continue
        exe = argv[0]
        if _SHIM_NAME.search(exe) or _SHIM.search(exe):
            pids.append(pid)
    return sorted(pids)


def descendants(pids, parents):
    """`pids` and every process below them, from {pid: ppid}."""
    result = set(pids)
    changed = True
    while changed:
        changed = False
        for pid, ppid in parents.items():
            if ppid in result and pid not in result:
                result.add(pid)
                changed = True
    return sorted(result)


def remove_tree(path, mount_points, dry_run=False):
    """Remove `path` without leaving its filesystem or entering a mount point.

    Returns (removed, kept): paths removed (or that would be, with dry_run) and
    directories left alone because they are a mount point or on another device.
    Symlinks are removed as links, never followed. A directory that still holds
    something kept is kept too.
    """
    removed, kept = [], []
    mount_points = set(os.path.normpath(p) for p in mount_points)
    try:
        top = os.lstat(path)
    except FileNotFoundError:
        return removed, kept
    if not stat.S_ISDIR(top.st_mode):
        if not dry_run:
            os.unlink(path)
        return [path], kept
    if os.path.normpath(path) in mount_points:
        return removed, [path]

    def walk(directory):
        """Remove what is below `directory`; True when it is empty afterwards."""
        empty = True
        for entry in sorted(os.listdir(directory)):
            full = os.path.join(directory, entry)
            info = os.lstat(full)
            if stat.S_ISDIR(info.st_mode):
                if info.st_dev != top.st_dev or os.path.normpath(full) in mount_points:
                    kept.append(full)
                    empty = False
                    continue
                if walk(full):
                    if not dry_run:
                        os.rmdir(full)
                    removed.append(full)
                else:
                    empty = False
            else:
                if not dry_run:
                    os.unlink(full)
                removed.append(full)
        return empty

    if walk(path):
        if not dry_run:
            os.rmdir(path)
        removed.append(path)
    return removed, kept


# The directory local-path-provisioner (k3s's bundled local-storage) creates for a volume:
# <pv name>_<namespace>_<claim name> (its provisioner.go: fmt.Sprintf("%s_%s_%s", ...)), under
# its node path, /var/lib/rancher/k3s/storage by default on k3s.
_LOCAL_PATH_DIR = re.compile(r"^(pvc-[0-9a-f-]+)_([a-z0-9]([-a-z0-9]*[a-z0-9])?)_(.+)$")


def _holds_files(path, mount_points):
    """True when the tree at `path` holds a file (not only directories), without entering mounts."""
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in mount_points]
        if files:
            return True
    return False


def local_volumes(dirs, mount_points):
    """The local-path volumes whose data would be deleted with the k3s trees: every directory
    under `dirs` named as local-path-provisioner names a volume, holding at least one file and not
    a mount point (a mounted volume is unmounted and never entered). One dict each:
    {pv, namespace, claim, path}, sorted by path."""
    mount_points = set(os.path.normpath(m) for m in mount_points)
    found = []
    for base in dirs:
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue  # no such directory: nothing to lose
        for name in names:
            path = os.path.join(base, name)
            if path in mount_points or not os.path.isdir(path) or os.path.islink(path):
                continue
            match = _LOCAL_PATH_DIR.match(name)
            if not match or not _holds_files(path, mount_points):
                continue
            found.append({"pv": match.group(1), "namespace": match.group(2), "claim": match.group(4), "path": path})
    return found


def local_volumes_message(volumes, node):
    """Why a reset or removal of `node` is refused (``''`` when nothing would be lost)."""
    if not volumes:
        return ""
    names = ", ".join("%s (claim %s/%s, %s)" % (v["pv"], v["namespace"], v["claim"], v["path"]) for v in volumes)
    return ("%s holds the data of local-path PersistentVolumes that removing k3s would delete: %s. Nothing was "
            "changed. Move the data off the node (or delete the claims) and re-run, or set "
            "k3s_node_delete_local_volumes=true to delete it (docs/k3s.md, Local volumes)." % (node, names))
