#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: bundle_files
short_description: Write a Fleet bundle directory's YAML files in one step
description:
  - Makes the directory O(path) hold exactly the YAML files of O(files) (C(fleet.yaml) and one file
    per manifest), with mode O(mode). Files whose content and mode already match are not touched.
  - With O(prune), YAML files (C(*.yaml), C(*.yml)) in O(path) that O(files) does not name are
    removed, so a manifest a component no longer has leaves the bundle. Other files, hidden files
    and subdirectories are left alone.
  - Each file is written to a temporary file in O(path) and renamed over the old one, so a reader
    (Fleet, git) never sees half a file and an interrupted run is completed by the next.
  - Role C(component_delivery) uses it in fleet mode; one module run per bundle instead of a
    template task per file.
version_added: "1.1.0"
author:
  - cps.gpu_cluster contributors (@cps-gpu-cluster)
options:
  path:
    description: The bundle directory; created (mode C(0755)) with its parents when absent.
    type: path
    required: true
  files:
    description: The bundle's files.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: A file name in O(path) ending in C(.yaml) or C(.yml), without a directory.
        type: str
        required: true
      content:
        description: The file's text.
        type: str
        required: true
  mode:
    description: Mode of the files written.
    type: raw
    default: "0644"
  prune:
    description: Remove the YAML files in O(path) that O(files) does not name.
    type: bool
    default: true
notes:
  - Supports check mode and diff mode.
extends_documentation_fragment:
  - cps.gpu_cluster.attributes
attributes:
  check_mode:
    support: full
    description: Reports the files it would write and remove without touching the directory.
  diff_mode:
    support: full
    description: Shows each written file's old and new text and each removed file's old text.
  platform:
    support: full
    platforms: posix
    description: Writes to the local filesystem of the host it runs on (the control node for Fleet bundles).
"""

EXAMPLES = r"""
- name: Write the bundle of component demo
  cps.gpu_cluster.bundle_files:
    path: /srv/fleet/homelab/demo
    files:
      - path: fleet.yaml
        content: "defaultNamespace: demo\n"
      - path: 00-namespace-demo.yaml
        content: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n"
"""

RETURN = r"""
written:
  description: The files written (new or changed content), by name.
  returned: always
  type: list
  elements: str
  sample: [fleet.yaml, 00-namespace-demo.yaml]
removed:
  description: The YAML files removed because O(files) no longer names them.
  returned: always
  type: list
  elements: str
  sample: [03-configmap-old.yaml]
path:
  description: The bundle directory.
  returned: always
  type: str
  sample: /srv/fleet/homelab/demo
"""

import os
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.cps.gpu_cluster.plugins.module_utils.bundle_files import (
    YAML_NAME_RE, bundle_diff, bundle_plan, file_problems)


def existing_files(directory):
    """{name: (bytes or None, mode)} of the regular YAML files now in the directory."""
    found = {}
    if not os.path.isdir(directory):
        return found
    for name in os.listdir(directory):
        full = os.path.join(directory, name)
        if name.startswith(".") or not YAML_NAME_RE.fullmatch(name) or not os.path.isfile(full) or os.path.islink(full):
            continue
        try:
            with open(full, "rb") as handle:
                content = handle.read()
        except OSError:
            content = None
        found[name] = (content, stat.S_IMODE(os.stat(full).st_mode))
    return found


def parse_mode(module, value):
    try:
        return int(str(value), 8) if not isinstance(value, int) else value
    except ValueError:
        module.fail_json(msg="mode %r is not an octal file mode such as '0644'" % (value,))
    return None


def write_file(directory, name, text, mode):
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".%s." % name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, os.path.join(directory, name))
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            files=dict(type="list", elements="dict", required=True, options=dict(
                path=dict(type="str", required=True),
                content=dict(type="str", required=True),
            )),
            mode=dict(type="raw", default="0644"),
            prune=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    directory = module.params["path"]
    problems = file_problems(module.params["files"])
    if problems:
        module.fail_json(msg="Fix the bundle's files: " + "; ".join(problems))
    if os.path.exists(directory) and not os.path.isdir(directory):
        module.fail_json(msg="%s exists and is not a directory: a Fleet bundle is a directory; move the file away" % directory)
    mode = parse_mode(module, module.params["mode"])
    wanted = dict((item["path"], item["content"]) for item in module.params["files"])
    existing = existing_files(directory)
    write, chmod, remove = bundle_plan(wanted, existing, mode, module.params["prune"])
    changed = bool(write or chmod or remove) or not os.path.isdir(directory)

    if changed and not module.check_mode:
        try:
            if not os.path.isdir(directory):
                os.makedirs(directory, 0o755)
            for name in write:
                write_file(directory, name, wanted[name], mode)
            for name in chmod:
                os.chmod(os.path.join(directory, name), mode)
            for name in remove:
                os.unlink(os.path.join(directory, name))
        except OSError as exc:
            module.fail_json(msg="Could not write the bundle in %s: %s" % (directory, exc))

    result = dict(changed=changed, written=write, removed=remove, path=directory)
    if module._diff:
        result["diff"] = bundle_diff(directory, wanted, existing, write, remove)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
