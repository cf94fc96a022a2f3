# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the K3s CIS profile (config.yaml keys, admission configuration, audit policy)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import k3s_hardening


def _wrap(func):
    def wrapped(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            raise AnsibleFilterError(str(exc)) from exc
    wrapped.__name__ = func.__name__
    wrapped.__doc__ = func.__doc__
    return wrapped


def _cis_config(role, settings):
    """config.yaml keys of the CIS profile for ``role`` from one dict (keys as in k3s_hardening.cis_config)."""
    return k3s_hardening.cis_config(role, **settings)


def _admission_config(exempt_namespaces, level="restricted", limited_resources=None, pod_security=True):
    """The AdmissionConfiguration: Pod Security with ``exempt_namespaces`` (kube-system always) unless
    ``pod_security`` is false, and the ResourceQuota plugin's ``limitedResources`` when
    ``limited_resources`` (the reserved GPU pools' resource names) is not empty."""
    if not pod_security:
        return k3s_hardening.admission_config(limited_resources)
    return k3s_hardening.pod_security_admission_config(level, exempt_namespaces, limited_resources=limited_resources)


class FilterModule(object):
    """k3s_cis_config, k3s_pod_security_admission_config, k3s_audit_policy, k3s_node_name_problem,
    pod_security_labels, node_names."""

    def filters(self):
        return {
            "k3s_cis_config": _wrap(_cis_config),
            "k3s_pod_security_admission_config": _wrap(_admission_config),
            "k3s_audit_policy": _wrap(k3s_hardening.audit_policy),
            "k3s_node_name_problem": _wrap(k3s_hardening.node_name_problem),
            "pod_security_labels": _wrap(k3s_hardening.pod_security_labels),
            "node_names": _wrap(k3s_hardening.node_names),
        }
