# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a cluster's state lives on the control node (pure functions).

Everything a run keeps between runs - the Terraform working directory and state, the inventory
Terraform generates, verify reports, k3s reset backups - goes under ``gpu_cluster_state_dir``.
Its default is ``.gpu-cluster`` inside the directory of the first inventory source: beside the
user's inventory, never inside the installed collection (``ansible-galaxy collection install
--force`` replaces the collection's directory, and everything in it). Ansible skips hidden
entries when it reads an inventory directory, so the generated inventory in there is never read
as part of the user's inventory.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

STATE_DIR_NAME = ".gpu-cluster"
# Sub-directories of the state directory, by what they hold.
STATE_SUBDIRS = {
    "terraform": "terraform",
    "inventory": "inventory",
    "reports": "reports",
    "backups": "backups",
    "facts": "facts",
}
# The collection's root: plugins/module_utils/ is two levels below it.
COLLECTION_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def default_state_dir(inventory_sources):
    """``<directory of the first inventory source>/.gpu-cluster``.

    A directory source is its own directory; a file source (``hosts.yml``) its parent; a source
    that is no path (``-i host1,host2,``) or none at all: ``./.gpu-cluster`` of the working
    directory. ``inventory_sources`` is ``ansible_inventory_sources`` (a list) or one string.
    """
    if isinstance(inventory_sources, str):
        inventory_sources = [inventory_sources]
    for source in inventory_sources or []:
        if not isinstance(source, str) or not source or "," in source:
            continue
        path = os.path.abspath(os.path.expanduser(source))
        base = path if os.path.isdir(path) else os.path.dirname(path)
        return os.path.join(base, STATE_DIR_NAME)
    return os.path.join(os.path.abspath(os.getcwd()), STATE_DIR_NAME)


def state_dir(inventory_sources, configured="", sub=""):
    """The state directory (``configured`` when set, ``~`` expanded, else the default), or one of
    its sub-directories (``sub``: a key of STATE_SUBDIRS)."""
    if configured is not None and not isinstance(configured, str):
        raise ValueError("gpu_cluster_state_dir must be a path (a string), not %r" % (configured,))
    base = os.path.abspath(os.path.expanduser(configured)) if configured else default_state_dir(inventory_sources)
    if not sub:
        return base
    if sub not in STATE_SUBDIRS:
        raise ValueError("no state sub-directory %r (known: %s)" % (sub, ", ".join(sorted(STATE_SUBDIRS))))
    return os.path.join(base, STATE_SUBDIRS[sub])


def collection_installed(root=None):
    """True when the collection runs from an installed copy (no ``.git`` in its root), false in a checkout."""
    root = COLLECTION_ROOT if root is None else root
    return not os.path.exists(os.path.join(root, ".git"))


def _inside(path, tree):
    path, tree = os.path.realpath(path), os.path.realpath(tree)
    return path == tree or path.startswith(tree.rstrip(os.sep) + os.sep)


def state_dir_problems(path, root=None, installed=None):
    """Problems of a state directory: inside an installed collection (replaced with it on the next
    ``collection install --force``), or an existing path that is not a writable directory."""
    root = COLLECTION_ROOT if root is None else root
    installed = collection_installed(root) if installed is None else installed
    problems = []
    if installed and _inside(path, root):
        problems.append(
            "gpu_cluster_state_dir %s is inside the installed collection (%s): the next `ansible-galaxy collection install "
            "--force` deletes it with the Terraform state; copy the inventory out of the collection "
            "(cp -r %s/inventories/homelab ~/homelab) and run with -i ~/homelab, or set gpu_cluster_state_dir "
            "to a directory outside the collection" % (path, root, root))
    elif os.path.exists(path) and not os.path.isdir(path):
        problems.append("gpu_cluster_state_dir %s exists and is not a directory; remove it or set gpu_cluster_state_dir elsewhere" % path)
    elif os.path.isdir(path) and not os.access(path, os.W_OK | os.X_OK):
        problems.append("gpu_cluster_state_dir %s is not writable by this user; fix its owner/mode or set gpu_cluster_state_dir elsewhere" % path)
    return problems
