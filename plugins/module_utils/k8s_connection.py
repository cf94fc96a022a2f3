# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the collection's Kubernetes modules reach the API server: one argument spec (documented by the
doc fragment cps.gpu_cluster.kubernetes) and one way to build the client from it, so every module
accepts the same authentication options, with kubernetes.core's K8S_AUTH_* environment variables."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.module_utils.basic import env_fallback

ARGUMENT_SPEC = dict(
    kubeconfig=dict(type="path", fallback=(env_fallback, ["K8S_AUTH_KUBECONFIG"])),
    context=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_CONTEXT"])),
    host=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_HOST"])),
    api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_API_KEY"])),
    validate_certs=dict(type="bool", default=True, fallback=(env_fallback, ["K8S_AUTH_VERIFY_SSL"])),
)


def argument_spec(**own):
    """The module's own options merged with the connection options (a copy: modules may not share dicts)."""
    spec = dict((name, dict(option)) for name, option in ARGUMENT_SPEC.items())
    clash = sorted(set(spec) & set(own))
    if clash:
        raise ValueError("options %s are connection options already" % ", ".join(clash))
    spec.update(own)
    return spec


def api_client(params, client, config):
    """An ApiClient for the module's parameters; ``client`` and ``config`` are the kubernetes library's
    modules of those names (passed in, so that a module without the library can still say so).

    ``host`` (with ``api_key``) talks to that URL without a kubeconfig; otherwise the kubeconfig of
    ``kubeconfig`` (default: KUBECONFIG, then ~/.kube/config) and its ``context`` are read.
    ``validate_certs: false`` turns certificate checks off either way; it never turns them on for a
    kubeconfig that says insecure-skip-tls-verify.
    """
    configuration = client.Configuration()
    if params.get("host"):
        configuration.host = params["host"]
        configuration.verify_ssl = params["validate_certs"]
        if params.get("api_key"):
            configuration.api_key = {"authorization": "Bearer " + params["api_key"]}
    else:
        config.load_kube_config(config_file=params.get("kubeconfig"), context=params.get("context"),
                                client_configuration=configuration)
        configuration.verify_ssl = params["validate_certs"] and configuration.verify_ssl
    return client.ApiClient(configuration)
