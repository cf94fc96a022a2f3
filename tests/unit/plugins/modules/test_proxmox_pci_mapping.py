"""proxmox_pci_mapping against recorded /cluster/mapping/pci responses (proxmoxer's HTTP session mocked)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import requests
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes
from ansible_collections.cps.gpu_cluster.plugins.module_utils import proxmox_mapping as pm
from ansible_collections.cps.gpu_cluster.plugins.modules import proxmox_pci_mapping
from proxmoxer.backends import https

API = Path(__file__).resolve().parents[3] / "fixtures" / "proxmox_api"
AUTH = {"api_host": "pve.example", "api_token_id": "terraform@pve!gpu-cluster", "api_token_secret": "s3cret"}
A100_0 = {"name": "a100-0", "node": "pve1", "path": "0000:17:00.0", "id": "10de:20b5", "iommu_group": 42,
          "subsystem_id": "10de:1533"}


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


def response(name, status=200):
    resp = requests.models.Response()
    resp.status_code = status
    resp.reason = "OK" if status == 200 else "Bad Request"
    resp._content = (API / name).read_bytes()
    return resp


class FakeApi:
    """Stands in for the server behind proxmoxer's requests session; records every call."""

    def __init__(self, routes):
        self.routes = routes
        self.calls = []

    def session_request(self):
        """A replacement for ProxmoxHttpSession.request (a method: gets the session first)."""

        def request(session, method, url, **kwargs):
            return self.request(session, method, url, **kwargs)

        return request

    def request(self, session, method, url, params=None, data=None, **kwargs):
        path = url.split("/api2/json", 1)[1]
        body = parse_qs(data) if isinstance(data, str) else data
        self.calls.append((method, path, body, session.auth))
        return response(*self.routes[(method, path)])


def run_module(monkeypatch, routes, args, check=False, diff=False):
    api = FakeApi(routes)
    monkeypatch.setattr(https.ProxmoxHttpSession, "request", api.session_request())
    module_args = dict(AUTH, **args, _ansible_check_mode=check, _ansible_diff=diff)
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": module_args})))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)

    def exit_json(self, **kwargs):
        raise ExitJson(kwargs)

    def fail_json(self, **kwargs):
        raise FailJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    with pytest.raises((ExitJson, FailJson)) as excinfo:
        proxmox_pci_mapping.main()
    return excinfo.type, excinfo.value.args[0], api.calls


LIST = {("GET", "/cluster/mapping/pci"): ("mapping_pci_list.json",),
        ("GET", "/cluster/mapping/pci/a100-0"): ("mapping_pci_get_a100-0.json",),
        ("GET", "/cluster/mapping/pci/a100-1"): ("mapping_pci_get_a100-1.json",)}
WRITE = ("mapping_pci_write.json",)


def test_unchanged_mapping_is_left_alone(monkeypatch):
    kind, result, calls = run_module(monkeypatch, LIST, dict(A100_0, description="NVIDIA A100 80GB PCIe"))
    assert kind is ExitJson, result
    assert result["changed"] is False and result["operation"] == "none"
    assert [c[:2] for c in calls] == [("GET", "/cluster/mapping/pci"), ("GET", "/cluster/mapping/pci/a100-0")]
    assert "s3cret" in calls[0][3].token_value  # token auth, secret only in the auth header object


def test_create_posts_id_and_map(monkeypatch):
    routes = {**LIST, ("POST", "/cluster/mapping/pci"): WRITE}
    args = dict(A100_0, name="a100-2", path="0000:4b:00.0", iommu_group=44)
    kind, result, calls = run_module(monkeypatch, routes, args, diff=True)
    assert kind is ExitJson, result
    assert result["changed"] is True and result["operation"] == "create"
    method, path, body, _auth = calls[-1]
    assert (method, path) == ("POST", "/cluster/mapping/pci")
    assert body == {"id": "a100-2",
                    "map": ["node=pve1,path=0000:4b:00.0,id=10de:20b5,iommugroup=44,subsystem-id=10de:1533"]}
    assert result["diff"]["before"] == {}
    assert result["diff"]["after"]["map"][0]["iommugroup"] == "44"


def test_check_mode_reads_only(monkeypatch):
    args = dict(A100_0, name="a100-2", path="0000:4b:00.0")
    kind, result, calls = run_module(monkeypatch, LIST, args, check=True)
    assert kind is ExitJson and result["changed"] is True and result["operation"] == "create"
    assert {c[0] for c in calls} == {"GET"}


def test_update_keeps_other_nodes_and_sends_digest(monkeypatch):
    routes = {**LIST, ("PUT", "/cluster/mapping/pci/a100-1"): WRITE}
    args = dict(A100_0, name="a100-1", path="0000:31:00.0", iommu_group=45)
    kind, result, calls = run_module(monkeypatch, routes, args, diff=True)
    assert kind is ExitJson, result
    assert result["operation"] == "update"
    method, path, body, _auth = calls[-1]
    assert (method, path) == ("PUT", "/cluster/mapping/pci/a100-1")
    assert body["map"] == ["node=pve1,path=0000:31:00.0,id=10de:20b5,iommugroup=45,subsystem-id=10de:1533",
                           "node=pve2,path=0000:31:00.0,id=10de:20b5,iommugroup=40,subsystem-id=10de:1533"]
    assert body["digest"] == "0c6b1f2d8f3e4a5b6c7d8e9f0a1b2c3d4e5f6a7b"
    assert result["diff"]["before"]["map"][0]["iommugroup"] == "43"


def test_absent_deletes(monkeypatch):
    routes = {**LIST, ("DELETE", "/cluster/mapping/pci/a100-0"): WRITE}
    kind, result, calls = run_module(monkeypatch, routes, {"name": "a100-0", "state": "absent"})
    assert kind is ExitJson and result["operation"] == "delete" and result["mapping"] is None
    assert calls[-1][:2] == ("DELETE", "/cluster/mapping/pci/a100-0")


def test_absent_when_missing_is_unchanged(monkeypatch):
    kind, result, calls = run_module(monkeypatch, LIST, {"name": "a100-9", "state": "absent"})
    assert kind is ExitJson and result["changed"] is False
    assert len(calls) == 1


def test_api_error_names_mapping_and_action(monkeypatch):
    routes = {**LIST, ("POST", "/cluster/mapping/pci"): ("errors_mapping_exists.json", 400)}
    kind, result, _calls = run_module(monkeypatch, routes, dict(A100_0, name="a100-5"))
    assert kind is FailJson
    assert "create of PCI mapping a100-5 failed" in result["msg"]


def test_bad_id_fails_before_any_call(monkeypatch):
    kind, result, calls = run_module(monkeypatch, LIST, dict(A100_0, id="10de-20b5"))
    assert kind is FailJson and "vendor:device" in result["msg"]
    assert calls == []


def test_secrets_are_no_log():
    spec = proxmox_pci_mapping.argument_spec()
    assert spec["api_token_secret"]["no_log"] and spec["api_password"]["no_log"]
    assert spec["validate_certs"]["default"] is True


def test_env_fallbacks(monkeypatch):
    monkeypatch.setenv("PROXMOX_HOST", "pve.env")
    monkeypatch.setenv("PROXMOX_TOKEN_ID", "root@pam!ci")
    monkeypatch.setenv("PROXMOX_TOKEN_SECRET", "envsecret")
    api = FakeApi(LIST)
    monkeypatch.setattr(https.ProxmoxHttpSession, "request", api.session_request())
    args = {"name": "a100-0", "state": "absent", "_ansible_check_mode": True}
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)

    def exit_json(self, **kwargs):
        raise ExitJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    with pytest.raises(ExitJson):
        proxmox_pci_mapping.main()
    assert api.calls[0][3].username == "root@pam" and api.calls[0][3].token_value == "envsecret"


@pytest.mark.parametrize(("text", "entry"), [
    ("node=pve1,path=0000:17:00.0,id=10de:20b5,iommugroup=42,subsystem-id=10de:1533",
     {"node": "pve1", "path": "0000:17:00.0", "id": "10de:20b5", "iommugroup": "42", "subsystem-id": "10de:1533"}),
    ("node=pve1,path=0000:01:00,id=10de:2204", {"node": "pve1", "path": "0000:01:00", "id": "10de:2204"}),
])
def test_map_entry_round_trip(text, entry):
    assert pm.parse_map_entry(text) == entry
    assert pm.format_map_entry(entry) == text


def test_plan_rejects_bad_names_and_paths():
    with pytest.raises(pm.MappingError, match="must start with a letter"):
        pm.plan("0gpu", None, "absent")
    with pytest.raises(pm.MappingError, match="full PCI address"):
        pm.desired_entry("pve1", "17:00.0", "10de:20b5")
    assert pm.split_token_id("terraform@pve!gpu-cluster") == ("terraform@pve", "gpu-cluster")
    assert pm.split_token_id("gpu-cluster", "terraform@pve") == ("terraform@pve", "gpu-cluster")
