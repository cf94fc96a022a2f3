# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TLS of the Ingresses the collection writes (JupyterHub, the vLLM models): one rule for all.

TLS is on by default, and with Traefik the Ingress is served on the HTTPS entrypoint (``websecure``)
only, so nothing secret travels over plain HTTP. The certificate comes from the ClusterIssuer the
inventory names, else from the cluster's own CA (``gpu-cluster-ca``, the management phase's
cluster-ca component); with neither, the ingress controller serves its own self-signed default
certificate (still encrypted; browsers warn, and preflight says so).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

CLUSTER_CA_ISSUER = "gpu-cluster-ca"
ISSUER_ANNOTATION = "cert-manager.io/cluster-issuer"
TRAEFIK_ENTRYPOINTS = "traefik.ingress.kubernetes.io/router.entrypoints"


def flag(value, default):
    """A switch as given (None: ``default``); strings as Ansible reads them."""
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


def issuer(cert_issuer="", tls=None, management=None):
    """The ClusterIssuer of an Ingress certificate: ``cert_issuer`` when set, else the cluster CA when
    ``tls`` (default on) and the management phase installs it; '' for none."""
    if cert_issuer:
        return cert_issuer
    if flag(tls, True) and flag(management, False):
        return CLUSTER_CA_ISSUER
    return ""


def annotations(tls, issuer_name, ingress_class):
    """The Ingress annotations for TLS ({} with TLS off): HTTPS only with Traefik, the issuer's when set."""
    if not flag(tls, True):
        return {}
    result = {}
    if issuer_name:
        result[ISSUER_ANNOTATION] = issuer_name
    if ingress_class == "traefik":
        result[TRAEFIK_ENTRYPOINTS] = "websecure"
    return result


def tls_section(tls, issuer_name, host, secret_name):
    """The Ingress ``tls`` list (None with TLS off): the issued certificate's Secret, or none (the
    ingress controller's default certificate) when nothing issues one."""
    if not flag(tls, True):
        return None
    entry = {"hosts": [host]}
    if issuer_name:
        entry["secretName"] = secret_name
    return [entry]


def warning(host_variable, tls_variable, issuer_variable):
    """Preflight's warning for a host with TLS on and nothing to issue its certificate."""
    return ("%s is served over HTTPS with the ingress controller's self-signed default certificate (browsers warn): "
            "nothing issues one; enable the management phase (gpu_cluster_management_enabled: true installs "
            "cert-manager and the cluster CA) or name a ClusterIssuer in %s (%s: false serves plain HTTP, for a "
            "closed lab only)" % (host_variable, issuer_variable, tls_variable))
