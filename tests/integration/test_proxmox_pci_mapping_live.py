"""proxmox_pci_mapping against a real Proxmox VE 8 API: check -> create -> check again ->
create again (unchanged) -> delete. Runs only when the environment names an API and a device:

    PROXMOX_URL=https://pve:8006  PROXMOX_TOKEN_ID=user@realm!token  PROXMOX_TOKEN_SECRET=...
    PROXMOX_NODE=pve1  PROXMOX_TEST_PCI_PATH=0000:17:00.0  PROXMOX_TEST_PCI_ID=10de:20b5
    [PROXMOX_VALIDATE_CERTS=false]

The mapping it creates is called ``cps-gpu-cluster-test`` and is removed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSIBLE = shutil.which("ansible") or str(REPO / ".venv" / "bin" / "ansible")
NEEDED = ("PROXMOX_URL", "PROXMOX_TOKEN_ID", "PROXMOX_TOKEN_SECRET", "PROXMOX_NODE",
          "PROXMOX_TEST_PCI_PATH", "PROXMOX_TEST_PCI_ID")
MISSING = [name for name in NEEDED if not os.environ.get(name)]

pytestmark = pytest.mark.skipif(
    bool(MISSING), reason="live Proxmox tier: set " + ", ".join(MISSING) + " to run it against a real API")


def module(args, check=False):
    url = urlsplit(os.environ["PROXMOX_URL"])
    params = dict(api_host=url.hostname, name="cps-gpu-cluster-test", **args)
    if url.port:
        params["api_port"] = url.port
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    argv = [ANSIBLE, "localhost", "-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
            "-m", "cps.gpu_cluster.proxmox_pci_mapping", "-a", json.dumps(params)]
    if check:
        argv.append("--check")
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_mapping_lifecycle():
    present = {"node": os.environ["PROXMOX_NODE"], "path": os.environ["PROXMOX_TEST_PCI_PATH"],
               "id": os.environ["PROXMOX_TEST_PCI_ID"], "description": "cps.gpu_cluster live test"}
    try:
        assert module(present, check=True)["changed"] is True
        created = module(present)
        assert created["changed"] is True and created["operation"] == "create"
        assert module(present, check=True)["changed"] is False
        assert module(present)["changed"] is False
    finally:
        removed = module({"state": "absent"})
    assert removed["operation"] in ("delete", "none")
    assert module({"state": "absent"})["changed"] is False
