# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """The connection options of the collection's Kubernetes modules (plugins/module_utils/k8s_connection.py)."""

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path of a kubeconfig file. Defaults to C(K8S_AUTH_KUBECONFIG), then the client's default
        (C(KUBECONFIG), C(~/.kube/config)).
    type: path
  context:
    description: The kubeconfig context to use (C(K8S_AUTH_CONTEXT)).
    type: str
  host:
    description: URL of the API server, instead of a kubeconfig (C(K8S_AUTH_HOST)).
    type: str
  api_key:
    description: Bearer token for O(host) (C(K8S_AUTH_API_KEY)).
    type: str
  validate_certs:
    description:
      - Verify the API server's certificate (C(K8S_AUTH_VERIFY_SSL)). V(false) turns the check off; it never turns
        it on for a kubeconfig that says C(insecure-skip-tls-verify).
    type: bool
    default: true
"""
