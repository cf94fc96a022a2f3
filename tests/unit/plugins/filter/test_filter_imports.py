"""Resolving one of our filters loads the collection's filter files, not plugins/plugin_utils/.

To resolve ``cps.gpu_cluster.<name>``, ansible-core's Jinja2Loader (ansible/plugins/loader.py,
``Jinja2Loader.get_with_context``) imports the collection's filter files one after another until one
has the name, in every worker process (a fresh fork per task and host), and its collection loader
compiles collection Python from source each time (``_AnsibleCollectionPkgLoaderBase.get_code``: no
bytecode cache). A filter file that imported its plugin_utils modules at the top made every task using
any of our filters compile most of plugin_utils (docs/development.md, "Suite time"). Here the real
loader resolves the filter that comes last, in a fresh interpreter: of plugin_utils and module_utils,
only filter_errors may be imported until a filter is called; calling it imports what it needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
COLLECTIONS = REPO / "collections"

PROBE = r"""
import json, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader
init_plugin_loader([sys.argv[1]])
ours = "ansible_collections.cps.gpu_cluster.plugins."
def loaded(kind):
    return sorted(name[len(ours):] for name in sys.modules if name.startswith(ours + kind + "."))
vllm_spec = filter_loader.get("cps.gpu_cluster.vllm_spec")
result = {"filter_files": loaded("filter"), "plugin_utils": loaded("plugin_utils") + loaded("module_utils")}
spec = vllm_spec.j2_function({"name": "qwen", "model": "Qwen/Qwen2.5-7B-Instruct", "gpu": 1})
result["after_call"] = loaded("plugin_utils")
result["spec_name"] = spec.get("name")
print(json.dumps(result))
"""


def test_resolving_a_filter_imports_no_plugin_utils_until_it_is_called():
    files = sorted(str(p) for p in (REPO / "plugins" / "filter").glob("*.py"))
    proc = subprocess.run([sys.executable, "-c", PROBE, str(COLLECTIONS), *files],
                          capture_output=True, text=True, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    # the loader went through the files before vllm_spec.py (alphabetical), so the check covers them
    assert len(result["filter_files"]) >= len(files) - 1, result["filter_files"]
    assert result["plugin_utils"] == ["plugin_utils.filter_errors"], result["plugin_utils"]
    # the call imports the module it needs (vllm) and works
    assert "plugin_utils.vllm" in result["after_call"]
    assert result["spec_name"] == "qwen"
