"""pci_gpu_facts: the module end to end on a captured-layout sysfs tree."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes
from ansible_collections.cps.gpu_cluster.plugins.modules import pci_gpu_facts

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
_spec = importlib.util.spec_from_file_location("sysfs_tree", FIXTURES / "sysfs" / "sysfs_tree.py")
sysfs_tree = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sysfs_tree)


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


def run_module(monkeypatch, args, run_command=None):
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)

    def exit_json(self, **kwargs):
        raise ExitJson(kwargs)

    def fail_json(self, **kwargs):
        raise FailJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    if run_command:
        monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False: "/usr/bin/" + name)
    with pytest.raises((ExitJson, FailJson)) as excinfo:
        pci_gpu_facts.main()
    return excinfo.type, excinfo.value.args[0]


def test_facts_from_sysfs_path(monkeypatch, tmp_path):
    root = sysfs_tree.build("host_2gpu_vfio", tmp_path / "sys")
    kind, result = run_module(monkeypatch, {"sysfs_path": str(root), "_ansible_check_mode": True})
    assert kind is ExitJson
    assert result["changed"] is False
    assert result["iommu_enabled"] is True
    gpus = result["ansible_facts"]["pci_gpus"]
    assert [g["driver"] for g in gpus] == ["vfio-pci", "vfio-pci"]
    assert result["ansible_facts"]["iommu_enabled"] is True


def test_use_lspci_runs_argv_and_merges(monkeypatch, tmp_path):
    root = sysfs_tree.build("vm_gpus_nvidia", tmp_path / "sys")
    calls = []
    text = "01:00.0 3D controller [0302]: NVIDIA Corporation GV100GL [Tesla V100 SXM2 16GB] [10de:1db1] (rev a1)\n"

    def run_command(self, argv, **kwargs):
        calls.append(argv)
        return 0, text, ""

    kind, result = run_module(monkeypatch, {"sysfs_path": str(root), "use_lspci": True}, run_command)
    assert kind is ExitJson
    assert calls == [["/usr/bin/lspci", "-nnk"]]
    gpus = result["ansible_facts"]["pci_gpus"]
    assert gpus[0]["name"] == "NVIDIA Corporation GV100GL [Tesla V100 SXM2 16GB]"
    assert result["iommu_enabled"] is False


def test_lspci_failure_fails(monkeypatch, tmp_path):
    root = sysfs_tree.build("host_no_nvidia", tmp_path / "sys")
    kind, result = run_module(
        monkeypatch, {"sysfs_path": str(root), "use_lspci": True}, lambda self, argv, **kw: (1, "", "boom")
    )
    assert kind is FailJson and "lspci -nnk failed" in result["msg"]


def test_missing_sysfs_path_fails_instead_of_zero_gpus(monkeypatch, tmp_path):
    kind, result = run_module(monkeypatch, {"sysfs_path": str(tmp_path / "no-such-sys")})
    assert kind is FailJson
    assert result["msg"] == ("Cannot read the PCI devices: sysfs_path %s does not exist (point sysfs_path at a "
                             "mounted sysfs, /sys by default)" % (tmp_path / "no-such-sys"))


def test_file_as_sysfs_path_fails(monkeypatch, tmp_path):
    (tmp_path / "sys").write_text("not a tree")
    kind, result = run_module(monkeypatch, {"sysfs_path": str(tmp_path / "sys")})
    assert kind is FailJson and "sysfs_path %s is not a directory" % (tmp_path / "sys") in result["msg"]


def test_devices_directory_that_is_a_file_fails(monkeypatch, tmp_path):
    root = sysfs_tree.build("host_no_nvidia", tmp_path / "sys")
    devices = root / "bus" / "pci" / "devices"
    shutil.rmtree(devices)
    devices.write_text("")
    kind, result = run_module(monkeypatch, {"sysfs_path": str(root)})
    assert kind is FailJson and "devices is not a directory" in result["msg"]


def test_tree_without_nvidia_is_zero_gpus_not_a_failure(monkeypatch, tmp_path):
    root = sysfs_tree.build("host_no_nvidia", tmp_path / "sys")
    kind, result = run_module(monkeypatch, {"sysfs_path": str(root)})
    assert kind is ExitJson and result["ansible_facts"]["pci_gpus"] == []
