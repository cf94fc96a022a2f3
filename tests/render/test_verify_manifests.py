"""Render tier for roles/verify (playbooks/verify.yml): the Jobs, volumes, ConfigMap, Service and
namespace it would create.

Runs the real playbook on the homelab inventory with ``gpu_cluster_verify_render_dir`` (workers made
unreachable on purpose, no cluster), then validates every manifest with kubernetes-validate (strict:
unknown fields fail) and checks the plan: every GPU worker gets the nvidia-smi, vector-add and PyTorch
checks on its own node asking one unit of what its pool advertises, the GPU probe where its GPUs are
whole, the tolerations of its node's taints and the render tier's CUDA smoke pod's runtime class and
security context; one multi-GPU and one TensorFlow check; scratch
throughput on fast-scratch and nfs-client; a pod-network pod on every node; pinned, overridable
images; SKIPPED lines and a NOT VERIFIED (never PASS) lab report.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import components

REPO = Path(__file__).resolve().parents[2]
HOMELAB = REPO / "inventories" / "homelab"
K8S_VERSION = "1.36"
WORKERS = ["wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4"]
NODES = ["cp1", "cp2", "cp3", *WORKERS]


def render(out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_FORCE_COLOR="0")
    argv = ["ansible-playbook", str(REPO / "playbooks" / "verify.yml"), "-i", str(HOMELAB),
            # the workers are "unreachable" (port 1) and there is no kubeconfig: as a lab, every part
            # SKIPPED (outside a lab they are NOT VERIFIED: tests/integration/test_verify_playbook.py). Every
            # host at 127.0.0.1 is an inventory preflight refuses (shared node IPs), so preflight is skipped
            # here; the homelab itself passes preflight in tests/integration/test_preflight.py.
            "-e", "ansible_host=127.0.0.1", "-e", "ansible_port=1", "-e", '{"gpu_cluster_lab": true}',
            "-e", "gpu_cluster_preflight=false",
            "-e", f"gpu_cluster_kubeconfig={out}/absent-kubeconfig",
            "-e", f"gpu_cluster_verify_render_dir={out}/manifests",
            "-e", f"gpu_cluster_verify_report_dir={out}/reports", *extra]
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("verify_render")
    proc = render(out, "-e", '{"gpu_cluster_verify_images": {"busybox": "registry.lan/busybox:1.36.1"}}')
    docs = {}
    for path in sorted((out / "manifests").glob("*.yaml")):
        docs[path.stem] = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return {"docs": docs, "stdout": proc.stdout, "report": (out / "reports" / "homelab-verify.md").read_text()}


def test_every_manifest_is_valid_kubernetes(rendered):
    assert rendered["docs"], "nothing rendered"
    kinds = set()
    for name, docs in rendered["docs"].items():
        for doc in docs:
            kinds.add(doc["kind"])
            try:
                kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
            except kubernetes_validate.ValidationError as exc:
                pytest.fail(f"{name}: {doc['kind']} is invalid: {exc}")
    assert kinds == {"Namespace", "ResourceQuota", "ConfigMap", "Service", "PersistentVolumeClaim", "Job"}


def test_the_namespace_grants_itself_the_reserved_pool(rendered):
    """The inference pool (MIG) is reserved for llm; the API server admits its resource only where a
    quota lists it (limitedResources), so verify's namespace carries its own quota: as much as its
    Jobs on wk-gpu4 ask together (smi, vector-add, PyTorch: 3)."""
    quota = rendered["docs"]["gpu-cluster-verify"][0]
    assert quota["kind"] == "ResourceQuota" and quota["metadata"]["namespace"] == "gpu-cluster-verify"
    assert quota["spec"]["hard"] == {"requests.nvidia.com/mig-1g.10gb": "3"}


def jobs(rendered):
    return {doc["metadata"]["name"]: doc for docs in rendered["docs"].values() for doc in docs if doc["kind"] == "Job"}


# What each homelab worker advertises (its pool, inventories/homelab/group_vars/all/gpu_pools.yml):
# wk-gpu1/2 whole GPUs (training, exclusive), wk-gpu3 time-slices (notebooks, renamed), wk-gpu4 MIG
# 1g.10gb instances (inference). Before the cluster model, every Job asked nvidia.com/gpu and the
# ones on wk-gpu3 and wk-gpu4 could never start.
RESOURCE = {"wk-gpu1": "nvidia.com/gpu", "wk-gpu2": "nvidia.com/gpu", "wk-gpu3": "nvidia.com/gpu.shared",
            "wk-gpu4": "nvidia.com/mig-1g.10gb"}
GPU_TAINT_TOLERATION = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_gpu_checks_on_every_worker_follow_its_pool(rendered):
    smoke = components.cuda_smoke_pod()["spec"]
    all_jobs = jobs(rendered)
    for worker in WORKERS:
        whole = RESOURCE[worker] == "nvidia.com/gpu"
        checks = (("smi", 1), ("vectoradd", 1), ("pytorch", 1)) + ((("gpuprobe", 2),) if whole else ())
        assert (f"gpuprobe-{worker}" in all_jobs) is whole  # the probe measures whole GPUs
        for check, gpus in checks:
            job = all_jobs[f"{check}-{worker}"]
            pod = job["spec"]["template"]["spec"]
            assert pod["nodeSelector"] == {"kubernetes.io/hostname": worker}
            assert pod["containers"][0]["resources"]["limits"] == {RESOURCE[worker]: gpus}
            assert pod["restartPolicy"] == "Never" and job["spec"]["backoffLimit"] == 0
            # the node's taints, tolerated (the cluster model), and the smoke pod's runtime and security
            assert pod["tolerations"] == GPU_TAINT_TOLERATION
            assert pod["runtimeClassName"] == smoke["runtimeClassName"] == "nvidia"
            assert pod["securityContext"] == smoke["securityContext"]
    multi = all_jobs["multigpu-wk-gpu1"]["spec"]["template"]["spec"]["containers"][0]
    assert multi["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert "torch.cuda.device_count()" in multi["command"][-1]
    tf = all_jobs["tensorflow-wk-gpu1"]["spec"]["template"]["spec"]["containers"][0]
    assert tf["image"].startswith("nvcr.io/nvidia/tensorflow:") and "list_physical_devices('GPU')" in tf["command"][-1]


def test_probe_ships_in_a_configmap(rendered):
    configmap = rendered["docs"]["gpu-probe"][0]
    assert configmap["data"]["gpu_probe.py"] == (REPO / "roles" / "verify" / "files" / "gpu_probe.py").read_text()
    pod = jobs(rendered)["gpuprobe-wk-gpu1"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["command"] == ["python", "/probe/gpu_probe.py"]
    assert {"name": "probe", "configMap": {"name": "gpu-probe"}} in pod["volumes"]


def test_images_are_pinned_and_overridable(rendered):
    for name, job in jobs(rendered).items():
        image = job["spec"]["template"]["spec"]["containers"][0]["image"]
        assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), f"{name}: {image} is not pinned"
    assert jobs(rendered)["coredns"]["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "registry.lan/busybox:1.36.1"


def test_storage_and_scratch_throughput(rendered):
    default = rendered["docs"]["default-storage"]
    assert [d["kind"] for d in default] == ["PersistentVolumeClaim", "Job"]
    assert "storageClassName" not in default[0]["spec"]
    scratch = rendered["docs"]["throughput-fast-scratch"]
    assert scratch[0]["spec"]["storageClassName"] == "fast-scratch"
    assert scratch[1]["spec"]["template"]["spec"]["nodeSelector"] == {"gpu": "true"}
    nfs = rendered["docs"]["throughput-nfs-client"]
    assert nfs[0]["spec"]["storageClassName"] == "nfs-client"
    assert "count=1024" in nfs[1]["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    # CPU checks run without the nvidia runtime class (it exists on GPU nodes only)
    assert "runtimeClassName" not in nfs[1]["spec"]["template"]["spec"]


def test_pod_network_on_every_node(rendered):
    service = rendered["docs"]["verify-net"][0]
    assert service["spec"]["clusterIP"] == "None"
    for node in NODES:
        pod = jobs(rendered)[f"net-{node}"]["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"kubernetes.io/hostname": node}
        assert pod["subdomain"] == "verify-net" and pod["hostname"] == f"net-{node}"
        others = [f"net-{n}" for n in NODES if n != node]
        assert " ".join(others) in pod["containers"][0]["command"][-1]


def test_skipped_lines_and_report(rendered):
    lines = [line for line in rendered["stdout"].splitlines() if "SKIPPED verify:" in line]
    for part in ["GPUs on wk-gpu1", "capacity and nodes Ready", "etcd", "smoke tests and health Jobs"]:
        assert sum(f"SKIPPED verify: {part}" in line for line in lines) == 1, part
    report = rendered["report"]
    # a lab with nothing checked: SKIPPED rows, and NOT VERIFIED, never PASS
    assert "**Result: NOT VERIFIED**: capacity (kubeconfig" in report and "**Result: PASS**" not in report
    assert "| wk-gpu1 | 2 x NVIDIA A100 80GB PCIe | SKIPPED | SKIPPED | SKIPPED | SKIPPED |" in report
    assert "| guest view | wk-gpu1 | SKIPPED | host unreachable" in report
