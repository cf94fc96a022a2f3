"""nvidia_gpu_facts end to end with stand-in nvidia-smi scripts: captured XML, a hung binary stopped by
the timeout option, non-UTF-8 output; never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes
from ansible_collections.cps.gpu_cluster.plugins.modules import nvidia_gpu_facts

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia-smi"


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


def run_module(monkeypatch, args):
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)

    def exit_json(self, **kwargs):
        raise ExitJson(kwargs)

    def fail_json(self, **kwargs):
        raise FailJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    with pytest.raises((ExitJson, FailJson)) as excinfo:
        nvidia_gpu_facts.main()
    return excinfo.type, excinfo.value.args[0]


def stand_in(tmp_path, body: str) -> Path:
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


def test_captured_xml(monkeypatch, tmp_path):
    xml = tmp_path / "t4.xml"
    shutil.copy(FIXTURES / "tesla-t4.xml", xml)
    script = stand_in(tmp_path, f'cat "{xml}"\n')
    kind, result = run_module(monkeypatch, {"nvidia_smi_path": str(script)})
    assert kind is ExitJson, result
    assert result["ansible_facts"]["nvidia_gpus"][0]["product_name"] == "Tesla T4"


@pytest.mark.skipif(shutil.which("timeout") is None, reason="coreutils timeout is not installed")
def test_hung_nvidia_smi_is_stopped_by_the_timeout(monkeypatch, tmp_path):
    pid_file = tmp_path / "pid"
    script = stand_in(tmp_path, f'echo $$ > "{pid_file}"\nexec sleep 60\n')
    kind, result = run_module(monkeypatch, {"nvidia_smi_path": str(script), "timeout": 1})
    # the module returned with the hung nvidia-smi stopped, not after it (no wall-clock bound: issue 45)
    assert not Path("/proc", pid_file.read_text().strip()).exists()
    assert kind is FailJson
    assert result["msg"] == (
        f"Could not read the GPUs with {script}: nvidia-smi -q -x did not answer within 1 seconds (timeout) and was "
        "stopped; the NVIDIA driver is probably hung (check dmesg for Xid errors), or raise the module's "
        "timeout option")
    assert result["cmd"][-3:] == [str(script), "-q", "-x"] and result["cmd"][2] == "1"


@pytest.mark.skipif(shutil.which("timeout") is None, reason="coreutils timeout is not installed")
def test_nvidia_smi_ignoring_sigterm_is_killed(monkeypatch, tmp_path):
    script = stand_in(tmp_path, "trap '' TERM\nwhile :; do sleep 1; done\n")
    kind, result = run_module(monkeypatch, {"nvidia_smi_path": str(script), "timeout": 1})
    assert kind is FailJson and "did not answer within 1 seconds" in result["msg"]
    assert result["rc"] in (137, -9)


def test_non_utf8_output_still_parses(monkeypatch, tmp_path):
    raw = (FIXTURES / "tesla-t4.xml").read_bytes().replace(b"<product_name>Tesla T4", b"<product_name>Tesla T4 \xe9")
    xml = tmp_path / "t4-latin1.xml"
    xml.write_bytes(raw)
    script = stand_in(tmp_path, f'cat "{xml}"\nprintf "\\377 stray byte\\n" >&2\n')
    kind, result = run_module(monkeypatch, {"nvidia_smi_path": str(script)})
    assert kind is ExitJson, result
    assert result["ansible_facts"]["nvidia_gpus"][0]["product_name"] == "Tesla T4 \ufffd"


def test_non_utf8_failure_message(monkeypatch, tmp_path):
    script = stand_in(tmp_path, 'printf "NVIDIA-SMI has failed \\351\\n" >&2\nexit 9\n')
    kind, result = run_module(monkeypatch, {"nvidia_smi_path": str(script)})
    assert kind is FailJson and "rc 9: NVIDIA-SMI has failed \ufffd" in result["msg"]


def test_negative_timeout_is_refused(monkeypatch, tmp_path):
    script = stand_in(tmp_path, "exit 0\n")
    kind, result = run_module(monkeypatch, {"nvidia_smi_path": str(script), "timeout": -1})
    assert kind is FailJson and "timeout must be 0" in result["msg"]


def test_missing_nvidia_smi(monkeypatch, tmp_path):
    kind, result = run_module(monkeypatch, {"nvidia_smi_path": str(tmp_path / "absent")})
    assert kind is ExitJson and result["nvidia_smi_found"] is False
