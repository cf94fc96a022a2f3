# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters components (the steps of delivering a component: manifests, Fleet bundles, checks) and
cuda_smoke_pod, over the private Python of plugins/plugin_utils/components.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.plugins.filter.core import to_nice_yaml

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, phase_filter, wrap

components = deferred("components")
k3s_hardening = deferred("k3s_hardening")
management = deferred("management")


def bundle_file_texts(files, fleet, header, fleet_comment=""):
    """[{path, content: text}] of a Fleet bundle for module bundle_files: fleet.yaml first, then each
    manifest file of component_manifest_files, each text the header comment and the data as YAML."""
    if not isinstance(files, list) or not all(isinstance(item, dict) and "path" in item and "content" in item
                                              for item in files):
        raise ValueError("expects the list of {path, content} of component_manifest_files")
    if not isinstance(fleet, dict):
        raise ValueError("the fleet.yaml data must be a mapping (fleet_bundle's result)")
    head = str(header).rstrip("\n") + "\n"
    if fleet_comment:
        head_fleet = head + "".join("# %s\n" % line for line in str(fleet_comment).splitlines())
    else:
        head_fleet = head
    texts = [{"path": "fleet.yaml", "content": head_fleet + to_nice_yaml(fleet, indent=2, sort_keys=False)}]
    for item in files:
        texts.append({"path": item["path"], "content": head + to_nice_yaml(item["content"], indent=2, sort_keys=False)})
    return texts


STEPS = {
    "manifests": components.component_manifests,
    "manifest_files": components.manifest_files,
    "bundle_file_texts": bundle_file_texts,
    "problems": components.validate_component,
    "fleet_bundle": components.fleet_bundle,
    "fleet_ordered": management.ordered_component,
    "pod_security_labels": k3s_hardening.pod_security_labels,
}


class FilterModule(object):
    """components, cuda_smoke_pod."""

    def filters(self):
        return {
            "components": phase_filter("components", STEPS),
            "cuda_smoke_pod": wrap(components.cuda_smoke_pod, "cuda_smoke_pod"),
        }
