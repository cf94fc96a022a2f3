# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lookup pinned: versions (or images) from the collection's versions file (plugin_utils.versions)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: pinned
author: cps.gpu_cluster contributors (@cps-gpu-cluster)
version_added: 0.2.0
short_description: Versions and images the collection pins in its versions file
description:
  - Returns the value of each named entry of C(versions.yml) at the collection's root, the one place every
    pinned version lives (K3s, charts, images, the Terraform provider, the helm and terraform CLIs;
    C(docs/versions.md)). Role defaults read their pins through it.
  - It reads a file of the collection on the control node, which is what a lookup is for; the filter of
    the same name, which did the same from a key piped into it, is deprecated.
  - Fails naming the pinned keys when a key is unknown.
options:
  _terms:
    description: The entries' keys, like C(k3s_version), C(gpu_operator_chart) or C(kube_vip_image).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: The K3s release the collection pins
  ansible.builtin.debug:
    msg: "{{ lookup('cps.gpu_cluster.pinned', 'k3s_version') }}"

- name: Several pins at once, as a list
  ansible.builtin.debug:
    msg: "{{ query('cps.gpu_cluster.pinned', 'gpu_operator_chart', 'gpu_operator_version') }}"
"""

RETURN = r"""
_raw:
  description: The pinned values, one per key, in the order of the keys (a version, or a full image
    reference registry/repository:tag).
  type: list
  elements: str
  sample: [v1.36.4+k3s1]
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import versions


class LookupModule(LookupBase):
    """pinned."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        try:
            return [versions.pinned(term) for term in terms]
        except (IOError, OSError, ValueError) as exc:
            raise AnsibleLookupError("cps.gpu_cluster.pinned: %s" % exc) from exc
