# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter pinned (deprecated: the lookup cps.gpu_cluster.pinned): a version (or image) from the collection's versions file."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: pinned
author: cps.gpu_cluster contributors
version_added: 0.2.0
deprecated:
  why: Reading a file of the collection is what a lookup is for.
  removed_in: 2.0.0
  alternative: The lookup C(cps.gpu_cluster.pinned).
short_description: A version or image the collection pins in its versions file
description:
  - Returns the value of one entry of C(versions.yml) at the collection's root, the one place every
    pinned version lives (K3s, charts, images, the Terraform provider, the helm and terraform CLIs;
    C(docs/versions.md)).
  - Deprecated, as reading a file of the collection is a lookup's job; use
    C(lookup('cps.gpu_cluster.pinned', 'k3s_version')), which the role defaults use.
  - Fails naming the pinned keys when the key is unknown.
options:
  _input:
    description: The entry's key, like C(k3s_version), C(gpu_operator_chart) or C(kube_vip_image).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The K3s release the collection pins
  ansible.builtin.debug:
    msg: "{{ 'k3s_version' | cps.gpu_cluster.pinned }}"
"""

RETURN = r"""
_value:
  description: The pinned value (a version, or a full image reference registry/repository:tag).
  type: str
  sample: v1.36.4+k3s1
"""

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, wrap

versions = deferred("versions")


class FilterModule(object):
    """pinned."""

    def filters(self):
        return {"pinned": wrap(versions.pinned, "cps.gpu_cluster.pinned", errors=(IOError, OSError, ValueError))}
