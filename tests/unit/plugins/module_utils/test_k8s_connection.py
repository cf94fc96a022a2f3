"""The Kubernetes modules' one connection argument spec and client (issue 28: gpu_capacity and
vllm_endpoint_check accepted different authentication options)."""

from __future__ import annotations

import json

import pytest
import yaml
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes
from ansible_collections.cps.gpu_cluster.plugins.module_utils import k8s_connection
from ansible_collections.cps.gpu_cluster.plugins.modules import gpu_capacity, vllm_endpoint_check
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import vllm
from kubernetes import client, config

CONNECTION = {"kubeconfig", "context", "host", "api_key", "validate_certs"}


def kubeconfig(tmp_path, insecure=False):
    """Two contexts, token users (no client certificate to parse)."""
    clusters = [{"name": name, "cluster": dict({"server": f"https://{address}:6443"},
                                               **({"insecure-skip-tls-verify": True} if insecure else {}))}
                for name, address in (("homelab", "10.10.0.100"), ("lab", "10.20.0.100"))]
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": clusters, "current-context": "homelab",
        "contexts": [{"name": c["name"], "context": {"cluster": c["name"], "user": c["name"]}} for c in clusters],
        "users": [{"name": c["name"], "user": {"token": f"token-of-{c['name']}"}} for c in clusters]}))
    return str(path)


def sent_token(configuration):
    """The Authorization header the client sends (what the API server sees)."""
    setting = configuration.auth_settings()["BearerToken"]
    assert setting["in"] == "header" and setting["key"] == "authorization"
    return setting["value"]


def params(**given):
    return dict({"kubeconfig": None, "context": None, "host": None, "api_key": None, "validate_certs": True}, **given)


def test_a_module_spec_is_its_own_options_and_a_copy_of_the_connection_options():
    spec = k8s_connection.argument_spec(spec=dict(type="dict", required=True))
    assert set(spec) == CONNECTION | {"spec"}
    spec["api_key"]["no_log"] = False
    assert k8s_connection.ARGUMENT_SPEC["api_key"]["no_log"] is True
    assert k8s_connection.ARGUMENT_SPEC["kubeconfig"]["fallback"][1] == ["K8S_AUTH_KUBECONFIG"]


def test_a_module_option_may_not_shadow_a_connection_option():
    with pytest.raises(ValueError, match="kubeconfig are connection options already"):
        k8s_connection.argument_spec(kubeconfig=dict(type="path", required=True))


def test_host_and_api_key_need_no_kubeconfig():
    api = k8s_connection.api_client(params(host="https://10.10.0.100:6443", api_key="abc", validate_certs=False),
                                    client, config)
    assert api.configuration.host == "https://10.10.0.100:6443"
    assert sent_token(api.configuration) == "Bearer abc"
    assert api.configuration.verify_ssl is False


def test_kubeconfig_and_context_choose_the_cluster(tmp_path):
    path = kubeconfig(tmp_path)
    assert k8s_connection.api_client(params(kubeconfig=path), client, config).configuration.host == "https://10.10.0.100:6443"
    chosen = k8s_connection.api_client(params(kubeconfig=path, context="lab"), client, config).configuration
    assert chosen.host == "https://10.20.0.100:6443" and sent_token(chosen) == "Bearer token-of-lab"
    assert chosen.verify_ssl is True


@pytest.mark.parametrize(("insecure", "validate_certs", "verified"), [
    (False, True, True), (False, False, False), (True, True, False), (True, False, False)])
def test_validate_certs_only_ever_turns_checks_off(tmp_path, insecure, validate_certs, verified):
    path = kubeconfig(tmp_path, insecure=insecure)
    api = k8s_connection.api_client(params(kubeconfig=path, validate_certs=validate_certs), client, config)
    assert api.configuration.verify_ssl is verified


def test_an_unknown_context_is_an_error_the_modules_report(tmp_path):
    with pytest.raises(config.ConfigException):
        k8s_connection.api_client(params(kubeconfig=kubeconfig(tmp_path), context="nope"), client, config)


class Done(Exception):
    pass


def run(monkeypatch, module, args):
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", lambda self, **kw: (item for item in ()).throw(Done("exit", kw)))
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", lambda self, **kw: (item for item in ()).throw(Done("fail", kw)))
    with pytest.raises(Done) as info:
        module.main()
    return info.value.args


@pytest.mark.parametrize("module, own", [
    (gpu_capacity, {"wait": False}),
    (vllm_endpoint_check, {"spec": vllm.vllm_spec({"name": "qwen", "model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 1}),
                           "wait_timeout": 0}),
], ids=["gpu_capacity", "vllm_endpoint_check"])
def test_both_kubernetes_modules_take_the_same_connection_options(monkeypatch, tmp_path, module, own):
    """The same kubeconfig and context reach both modules' client; an unknown context is reported by both."""
    seen = []

    def fake_client(given, client_module, config_module):
        seen.append({key: given[key] for key in CONNECTION})
        raise config.ConfigException("stop here")

    monkeypatch.setattr(module, "api_client", fake_client)
    connection = {"kubeconfig": kubeconfig(tmp_path), "context": "lab", "validate_certs": False}
    kind, result = run(monkeypatch, module, dict(own, **connection))
    assert kind == "fail" and "Could not configure the Kubernetes client" in result["msg"] and "stop here" in result["msg"]
    assert seen == [dict(connection, host=None, api_key=None)]
