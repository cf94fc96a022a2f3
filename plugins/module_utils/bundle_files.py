# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What writing one Fleet bundle directory changes: pure decisions for the bundle_files module.

A bundle directory holds fleet.yaml and one YAML file per manifest, nothing else of ours. The
module writes the files whose content or mode differs and removes the YAML files the bundle no
longer has; other files (a README a person put there) are left alone."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

YAML_NAME_RE = re.compile(r"[^/\\]+\.ya?ml")


def file_problems(files):
    """Problems with the wanted files: each a mapping with a plain YAML file name and text content."""
    problems = []
    seen = set()
    if not isinstance(files, list):
        return ["files must be a list of {path, content}, got %s" % type(files).__name__]
    for index, item in enumerate(files):
        if not isinstance(item, dict):
            problems.append("files[%d] must be a mapping with path and content" % index)
            continue
        name = item.get("path")
        if not isinstance(name, str) or not YAML_NAME_RE.fullmatch(name) or name.startswith("."):
            problems.append("files[%d].path %r must be a file name ending in .yaml or .yml, without a "
                            "directory or a leading dot" % (index, name))
        elif name in seen:
            problems.append("files[%d].path %r is given twice" % (index, name))
        else:
            seen.add(name)
        if not isinstance(item.get("content"), str):
            problems.append("files[%d].content must be text" % index)
    return problems


def bundle_plan(wanted, existing, mode, prune=True):
    """(write, chmod, remove): the names to write, only to re-mode, and to remove, each sorted.

    wanted: {name: text}. existing: {name: (bytes, mode)} of the YAML files now in the directory
    (a file that could not be read has content None, so it is rewritten). mode: the wanted mode."""
    write, chmod = [], []
    for name in sorted(wanted):
        now = existing.get(name)
        if now is None or now[0] != wanted[name].encode("utf-8"):
            write.append(name)
        elif now[1] != mode:
            chmod.append(name)
    remove = sorted(name for name in existing if name not in wanted) if prune else []
    return write, chmod, remove


def bundle_diff(directory, wanted, existing, write, remove):
    """Ansible's diff list for the files written and removed (--diff)."""
    diffs = []
    for name in write:
        before = existing.get(name, (None, None))[0]
        diffs.append({"before_header": "%s/%s" % (directory, name), "after_header": "%s/%s" % (directory, name),
                      "before": before.decode("utf-8", "replace") if before is not None else "",
                      "after": wanted[name]})
    for name in remove:
        before = existing[name][0]
        diffs.append({"before_header": "%s/%s" % (directory, name), "after_header": "%s/%s (removed)" % (directory, name),
                      "before": before.decode("utf-8", "replace") if before is not None else "", "after": ""})
    return diffs
