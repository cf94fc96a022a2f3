"""plugin_utils/verify.py: every check's PASS, FAIL and SKIPPED / NOT VERIFIED as data tables, the GPU
performance verdict on the H100 reference numbers (tests/fixtures/gpu_probe/, origin in SOURCES.md),
the Job plan built from the render tier's smoke pod, and the report's result."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import components, verify

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "gpu_probe"
H100 = json.loads((FIXTURES / "h100-sxm-reference.json").read_text())
IMAGES = {"cuda": "c:1", "vectoradd": "v:1", "pytorch": "p:1", "busybox": "b:1", "tensorflow": "t:1"}
A100 = "NVIDIA A100 80GB PCIe"


def gpu(name=A100):
    return {"product_name": name}


def smi(gpus, rc=0, failed=False, msg=""):
    return {"nvidia_smi_found": True, "rc": rc, "failed": failed, "msg": msg,
            "ansible_facts": {"nvidia_gpus": gpus, "nvidia_driver_version": "580.1"}}


# ------------------------------------------------------------------------------------ worker GPUs
@pytest.mark.parametrize("pci, smi_result, unreachable, lab, status, reason", [
    ([{}, {}], smi([gpu(), gpu()]), None, False, "PASS", ""),
    ([{}, {}], {}, None, False, "PASS", ""),
    ([{}], {}, None, False, "FAIL", "PCI shows 1 NVIDIA GPU(s), the inventory declares 2"),
    ([{}], smi([gpu()]), None, False, "FAIL",
     "PCI shows 1 NVIDIA GPU(s), the inventory declares 2; nvidia-smi sees 1 GPU(s), the inventory declares 2"),
    ([{}, {}], smi([gpu()]), None, False, "FAIL", "nvidia-smi sees 1 GPU(s), the inventory declares 2"),
    ([{}, {}], smi([gpu("Tesla T4"), gpu("Tesla T4")]), None, False, "FAIL",
     "nvidia-smi reports Tesla T4, the inventory declares " + A100),
    ([{}, {}], smi([gpu(), gpu()], rc=1, msg="boom"), None, False, "FAIL", "nvidia-smi failed: boom"),
    ([], {}, "ssh: connection refused", True, "SKIPPED", "host unreachable: ssh: connection refused"),
    ([], {}, "ssh: connection refused", False, "NOT VERIFIED", "host unreachable: ssh: connection refused"),
    ([], {}, None, True, "SKIPPED", "no NVIDIA GPU on the PCI bus and no nvidia-smi (a lab worker)"),
    ([], {}, None, False, "FAIL", "PCI shows 0 NVIDIA GPU(s), the inventory declares 2"),
])
def test_worker_gpus(pci, smi_result, unreachable, lab, status, reason):  # noqa: PLR0917 - parametrized
    worker = verify.worker_gpus(2, A100, pci, smi_result, unreachable, lab)
    assert (worker["status"], worker["reason"]) == (status, reason)
    assert worker["checked"] == (status in ("PASS", "FAIL"))
    row = verify.worker_row("wk1", worker, lab)
    assert row["status"] == status and row["check"] == "GPUs" and row["target"] == "wk1"


@pytest.mark.parametrize("lab, status", [(True, "SKIPPED"), (False, "NOT VERIFIED")])
def test_worker_row_without_record(lab, status):
    assert verify.worker_row("wk1", {}, lab)["status"] == status


def test_worker_spec_from_hostvars():
    assert verify.worker_spec({"inventory_hostname": "wk_1", "gpu_cluster_node_name": "wk-1",
                               "gpu_cluster_gpu_count": "2", "gpu_cluster_gpu_model": A100}) == {
        "node": "wk-1", "gpu_count": 2, "model": A100, "expected": None}
    assert verify.worker_spec({"inventory_hostname": "wk2", "gpu_cluster_verify_expected": {"nvidia.com/mig-1g.10gb": 7}})[
        "expected"] == {"nvidia.com/mig-1g.10gb": 7}


# ------------------------------------------------------------------------------------- guest view
MEMINFO = "MemTotal:       65843212 kB\nHugePages_Total:      16\nHugepagesize:    1048576 kB\nHugetlb:        16777216 kB\n"


@pytest.mark.parametrize("text, count", [("0-7", 8), ("0-7,16-23", 16), ("0", 1), ("0,2,4", 3), ("", 0), ("0-15\n", 16)])
def test_cpu_list_count(text, count):
    assert verify.cpu_list_count(text) == count


def test_guest_view_and_rows():
    view = verify.guest_view("0-15\n", ["/sys/devices/system/node/node0", "/sys/devices/system/node/node1",
                                        "/sys/devices/system/node/possible"], MEMINFO)
    assert view == {"vcpus": 16, "numa_nodes": 2, "memory_mib": 64300, "hugepages": 16,
                    "hugepage_size_kb": 1048576, "hugetlb_mib": 16384}
    assert verify.guest_row("wk1", view, 16) == {
        "check": "guest view", "target": "wk1", "status": "PASS",
        "detail": "16 vCPUs, 2 NUMA node(s), 64300 MiB, hugepages 16 x 1048576 kB (hugetlb 16384 MiB)"}
    warn = verify.guest_row("wk1", view, 32)
    assert warn["status"] == "WARN" and "the inventory gives it 32 vCPUs" in warn["detail"]
    assert verify.guest_row("wk1", {}, 16, "host unreachable: x", lab=True)["status"] == "SKIPPED"
    assert verify.guest_row("wk1", {}, 16, "host unreachable: x", lab=False)["status"] == "NOT VERIFIED"
    # no node directories (a kernel without NUMA): one node
    assert verify.guest_view("0-3", [], "")["numa_nodes"] == 1


# --------------------------------------------------------------------------------- cluster, capacity
@pytest.mark.parametrize("kubeconfig, exists, info, reason", [
    ("", False, {}, "gpu_cluster_kubeconfig is not set"),
    ("/k", False, {}, "kubeconfig /k does not exist (run playbooks/k3s.yml first)"),
    ("/k", True, {"failed": True}, "no Kubernetes API server answers through /k"),
    ("/k", True, {}, "no Kubernetes API server answers through /k"),
    ("/k", True, {"version": {"server": {}}}, ""),
])
def test_cluster_skip_reason(kubeconfig, exists, info, reason):
    assert verify.cluster_skip_reason(kubeconfig, exists, info) == reason


def test_expected_capacity():
    workers = [{"node": "a", "gpu_count": 2}, {"node": "b", "gpu_count": 1},
               {"node": "c", "gpu_count": 4, "expected": {"nvidia.com/mig-1g.10gb": 7}}]
    assert verify.expected_capacity(workers) == {
        "per_node": {"a": {"nvidia.com/gpu": 2}, "b": {"nvidia.com/gpu": 1}, "c": {"nvidia.com/mig-1g.10gb": 7}},
        "nvidia.com/gpu": 3}
    assert verify.expected_capacity([]) == {"per_node": {}}


NODES = [{"name": "a", "ready": True, "allocatable": {"nvidia.com/gpu": "2"}}, {"name": "cp", "ready": True}]


@pytest.mark.parametrize("result, skip, lab, statuses, detail", [
    ({"nodes": NODES, "totals": {"nvidia.com/gpu": 2}}, "", False, ("PASS", "PASS"), "allocatable nvidia.com/gpu=2"),
    ({"nodes": NODES, "shortfalls": ["node a has 1 allocatable nvidia.com/gpu, expected 2"], "failed": True}, "", False,
     ("FAIL", "PASS"), "node a has 1 allocatable nvidia.com/gpu, expected 2"),
    ({"failed": True, "msg": "API said no"}, "", False, ("FAIL", "PASS"), "API said no"),
    ({"nodes": [*NODES, {"name": "b", "ready": False}]}, "", False, ("PASS", "FAIL"), "allocatable none"),
    ({}, "no kubeconfig", True, ("SKIPPED", "SKIPPED"), "no kubeconfig"),
    ({}, "no kubeconfig", False, ("NOT VERIFIED", "NOT VERIFIED"), "no kubeconfig"),
])
def test_capacity_rows(result, skip, lab, statuses, detail):
    rows = verify.capacity_rows(result, skip, lab)
    assert tuple(r["status"] for r in rows) == statuses
    assert rows[0]["detail"] == detail
    if statuses[1] == "FAIL":
        assert rows[1]["detail"] == "not Ready: b"


def test_allocatable_by_node():
    assert verify.allocatable_by_node({"nodes": NODES}) == {"a": "nvidia.com/gpu=2", "cp": "0"}


# --------------------------------------------------------------------------------------------- etcd
def members(*learners):
    return {"json": {"members": [{"name": f"m{i}", **({"isLearner": True} if learner else {})}
                                 for i, learner in enumerate(learners)]}}


HEALTHY = {"json": {"health": "true"}}


@pytest.mark.parametrize("servers, mem, health, skip, lab, status, detail", [
    (3, members(False, False, False), HEALTHY, "", False, "PASS", "3 voter(s) of 3 member(s), expected 3 voters; health true"),
    (3, members(False, False, True), HEALTHY, "", False, "FAIL", "2 voter(s) of 3 member(s), expected 3 voters; health true"),
    (3, members(False, False, False), {"json": {"health": "false"}}, "", False, "FAIL",
     "3 voter(s) of 3 member(s), expected 3 voters; health false"),
    (3, {"msg": "connection refused"}, {}, "", False, "FAIL",
     "0 voter(s) of 0 member(s), expected 3 voters; health false (connection refused)"),
    (1, {}, {}, "", False, "SKIPPED", "fewer than 3 k3s_servers: no embedded etcd quorum to check"),
    (3, {}, {}, "no kubeconfig", True, "SKIPPED", "no kubeconfig"),
    (3, {}, {}, "no kubeconfig", False, "NOT VERIFIED", "no kubeconfig"),
    (3, {"unreachable": True}, {}, "", True, "SKIPPED", "server cp1 unreachable"),
    (3, {"unreachable": True}, {}, "", False, "NOT VERIFIED", "server cp1 unreachable"),
])
def test_etcd_row(servers, mem, health, skip, lab, status, detail):  # noqa: PLR0917 - parametrized
    assert verify.etcd_row(servers, mem, health, skip, lab, "cp1") == {
        "check": "etcd", "target": "cluster", "status": status, "detail": detail}


# ------------------------------------------------------------------------------------- Job planning
WORKERS = [{"node": "wk-gpu1", "gpu_count": 2, "model": A100}, {"node": "WK_gpu2", "gpu_count": 1}]


def test_plan_every_check():
    jobs = verify.plan_jobs(WORKERS, ["cp1", "wk-gpu1", "WK_gpu2"], IMAGES)
    names = [j["name"] for j in jobs]
    assert names == ["smi-wk-gpu1", "vectoradd-wk-gpu1", "pytorch-wk-gpu1", "gpuprobe-wk-gpu1",
                     "smi-wk-gpu2", "vectoradd-wk-gpu2", "pytorch-wk-gpu2", "gpuprobe-wk-gpu2",
                     "multigpu-wk-gpu1", "tensorflow-wk-gpu1", "coredns", "default-storage",
                     "throughput-fast-scratch", "throughput-nfs-client",
                     "net-cp1", "net-wk-gpu1", "net-wk-gpu2"]
    by = {j["name"]: j for j in jobs}
    assert by["gpuprobe-wk-gpu1"]["gpus"] == 2 and by["gpuprobe-wk-gpu1"]["command"] == ["python", "/probe/gpu_probe.py"]
    assert by["multigpu-wk-gpu1"]["gpus"] == 2 and by["tensorflow-wk-gpu1"]["image"] == "t:1"
    assert "dd if=/dev/zero of=/data/verify.bin bs=1M count=1024" in by["throughput-nfs-client"]["command"][-1]
    assert by["throughput-nfs-client"]["storage_class"] == "nfs-client"
    assert by["throughput-fast-scratch"]["node_selector"] == {"gpu": "true"}
    assert "net-wk-gpu1 net-wk-gpu2" in by["net-cp1"]["command"][-1]


def test_plan_options():
    jobs = verify.plan_jobs(WORKERS, ["cp1"], IMAGES, {"smoke_tests": False, "nfs_class": "", "network": True})
    assert [j["name"] for j in jobs] == ["coredns", "default-storage", "throughput-fast-scratch"]
    burn = verify.plan_jobs(WORKERS[:1], [], IMAGES, {"probe_burn": 300, "tensorflow": False})
    assert next(j for j in burn if j["check"] == "gpu-probe")["command"][-2:] == ["--burn", "300"]
    assert not [j for j in burn if j["check"] == "tensorflow"]
    # no GPU workers: no GPU Jobs and no fast-scratch check
    assert [j["name"] for j in verify.plan_jobs([], [], IMAGES)] == ["coredns", "default-storage", "throughput-nfs-client"]


def test_job_manifests_come_from_the_smoke_pod():
    smoke = components.cuda_smoke_pod()["spec"]
    jobs = {j["name"]: j for j in verify.plan_jobs(WORKERS, ["cp1", "wk-gpu1"], IMAGES)}
    gpu_job = verify.job_manifests(jobs["gpuprobe-wk-gpu1"], "ns", 600)[-1]
    pod = gpu_job["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == smoke["runtimeClassName"] == "nvidia"
    assert pod["tolerations"] == smoke["tolerations"]
    assert pod["securityContext"] == smoke["securityContext"]
    assert pod["nodeSelector"] == {"kubernetes.io/hostname": "wk-gpu1"}
    container = pod["containers"][0]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/probe", "/dev/shm"}
    assert gpu_job["spec"]["activeDeadlineSeconds"] == 600 and gpu_job["spec"]["backoffLimit"] == 0
    shared = verify.job_manifests(jobs["smi-wk-gpu1"], "ns", resource="nvidia.com/gpu.shared")[-1]
    assert shared["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu.shared": 1}}
    pvc, job = verify.job_manifests(jobs["throughput-nfs-client"], "ns")
    assert pvc["spec"]["storageClassName"] == "nfs-client" and pvc["spec"]["resources"]["requests"]["storage"] == "1536Mi"
    cpu_pod = job["spec"]["template"]["spec"]
    assert "runtimeClassName" not in cpu_pod and "resources" not in cpu_pod["containers"][0]
    assert "nodeSelector" not in cpu_pod
    net = verify.job_manifests(jobs["net-cp1"], "ns")[-1]["spec"]["template"]
    assert net["metadata"]["labels"]["gpu-cluster-verify/network"] == "true"
    assert net["spec"]["subdomain"] == "verify-net" and net["spec"]["hostname"] == "net-cp1"
    default_pvc = verify.job_manifests(jobs["default-storage"], "ns")[0]
    assert "storageClassName" not in default_pvc["spec"]


def test_plan_manifests_order():
    jobs = verify.plan_jobs(WORKERS, ["cp1", "wk-gpu1"], IMAGES)
    manifests = verify.plan_manifests(jobs, "ns", probe_source="print(1)")
    assert [m["kind"] for m in manifests[:3]] == ["Namespace", "ConfigMap", "Service"]
    assert manifests[1]["data"] == {"gpu_probe.py": "print(1)"}
    assert manifests[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


# -------------------------------------------------------------------------------------- judging
LOG_JOB = {"check": "pytorch", "name": "pytorch-a", "node": "a", "expect": "cuda_available=True device_count=1",
           "judge": "log"}
OK = {"succeeded": 1}
BUSYBOX_DD = ("write:\n1024+0 records in\n1024+0 records out\n1073741824 bytes (1.0GB) copied, 2.000000 seconds, 512.0MB/s\n"
              "read:\n1024+0 records in\n1024+0 records out\n1073741824 bytes (1.0GB) copied, 0.5 seconds, 2.0GB/s\nverify-ok\n")
GNU_DD = ("write:\n1073741824 bytes (1.1 GB, 1.0 GiB) copied, 9.1 s, 118 MB/s\n"
          "read:\n1073741824 bytes (1.1 GB, 1.0 GiB) copied, 8.9 s, 121 MB/s\nverify-ok\n")


@pytest.mark.parametrize("job, status, log, expected, detail", [
    (LOG_JOB, OK, "cuda_available=True device_count=1\n", "PASS", "log matches cuda_available=True device_count=1"),
    (LOG_JOB, {"failed": 1, "conditions": [{"reason": "BackoffLimitExceeded"}]}, "", "FAIL",
     "Job did not succeed (BackoffLimitExceeded)"),
    (LOG_JOB, {}, "", "FAIL", "Job did not succeed (not finished in 1200 s)"),
    (LOG_JOB, OK, "cuda_available=False device_count=0\n", "FAIL",
     "log does not match cuda_available=True device_count=1"),
    ({"check": "scratch nfs-client", "name": "t", "expect": "^verify-ok$", "judge": "throughput",
      "storage_class": "nfs-client"}, OK, GNU_DD, "PASS", "write 118 MB/s, read 121 MB/s (nfs-client)"),
    ({"check": "scratch fast-scratch", "name": "t", "expect": "^verify-ok$", "judge": "throughput",
      "storage_class": "fast-scratch"}, OK, BUSYBOX_DD, "PASS", "write 512 MB/s, read 2000 MB/s (fast-scratch)"),
    ({"check": "scratch x", "name": "t", "expect": "^verify-ok$", "judge": "throughput", "storage_class": "x"},
     OK, "verify-ok\n", "FAIL", "dd did not report both rates"),
    ({"check": "pod network", "name": "net-a", "node": "a", "expect": "^net-ok$", "judge": "network"},
     OK, "reach net-b ok\nreach net-c ok\nnet-ok\n", "PASS", "reached 2 peer(s)"),
    ({"check": "pod network", "name": "net-a", "node": "a", "expect": "^net-ok$", "judge": "network"},
     {"failed": 1}, "reach net-b ok\nreach net-c FAIL\n", "FAIL", "Job did not succeed (failed): cannot reach net-c"),
    ({"check": "gpu-probe", "name": "p", "node": "a", "expect": '"probe": "gpu"', "judge": "probe"},
     OK, "warning\n" + json.dumps(H100) + "\n", "PASS", "1 GPU(s) measured"),
    ({"check": "gpu-probe", "name": "p", "node": "a", "expect": '"probe": "gpu"', "judge": "probe"},
     {"failed": 1}, "Traceback ...\n", "FAIL", "Job did not succeed (failed)"),
])
def test_judge_job(job, status, log, expected, detail):
    check = verify.judge_job(job, status, log)
    assert (check["status"], check["detail"]) == (expected, detail)


def test_parse_probe_log():
    log = json.dumps(dict(H100, index=1)) + "\n{broken\n" + json.dumps(H100) + "\n" + json.dumps(
        {"probe": "node", "gpus": 2, "allreduce_busbw_gbs": 20.5}) + "\n"
    parsed = verify.parse_probe_log(log)
    assert [g["index"] for g in parsed["gpus"]] == [0, 1]
    assert parsed["node"]["allreduce_busbw_gbs"] == 20.5 and len(parsed["errors"]) == 1


# ------------------------------------------------------------------------------ performance verdict
def metric(verdict, name):
    return next(m for m in verdict["metrics"] if m["metric"] == name)


def test_reference_h100_passes():
    verdict = verify.gpu_perf_verdict(H100)
    assert verdict["status"] == "PASS", verdict["summary"]
    assert verdict["model"] == "NVIDIA H100 80GB HBM3"
    assert metric(verdict, "matmul_bf16_tflops")["fraction"] == pytest.approx(0.8, abs=0.01)
    assert metric(verdict, "device_copy_gbs")["status"] == "PASS"
    assert metric(verdict, "h2d_pinned_gbs")["expected"] == 63.0
    # what the reference could not give is SKIPPED with the reason, not a pass
    assert metric(verdict, "sm_clock_mhz")["status"] == "SKIPPED"
    assert "idle snapshot" in metric(verdict, "sm_clock_mhz")["reason"]


@pytest.mark.parametrize("change, status, metric_name, words", [
    ({"pcie_width_current": 4}, "FAIL", "pcie_link", ["x4 of x16", "riser"]),
    ({"pcie_gen_current": 3, "pcie_gen_max": 3}, "FAIL", "pcie_link", ["Gen3 of Gen5", "passthrough", "pcie=1"]),
    ({"matmul_bf16_tflops": 989 * 0.4}, "FAIL", "matmul_bf16_tflops", ["40%", "below 45%"]),
    ({"matmul_bf16_tflops": 989 * 0.5}, "WARN", "matmul_bf16_tflops", ["50%", "below 60%"]),
    ({"device_copy_gbs": 1200}, "FAIL", "device_copy_gbs", ["1200 GB/s of 3350"]),
    ({"h2d_pinned_gbs": 12.0}, "FAIL", "h2d_pinned_gbs", ["NUMA"]),
    ({"ecc_uncorrected": 2}, "FAIL", "errors", ["2 uncorrected ECC"]),
    ({"ecc_corrected": 5}, "WARN", "errors", ["5 corrected ECC"]),
    ({"xid_recent": [79]}, "FAIL", "errors", ["Xid error(s) 79"]),
    ({"remapped_rows_pending": True}, "FAIL", "errors", ["row remapping pending"]),
    ({"remapped_rows_failure": "Yes"}, "FAIL", "errors", ["row remapping failed"]),
    ({"retired_pages_pending": True}, "FAIL", "errors", ["page retirement pending"]),
    ({"sm_clock_mhz": 900, "clock_event_reasons": ["hw_thermal_slowdown"]}, "FAIL", "sm_clock_mhz", ["hw_thermal_slowdown"]),
    ({"sm_clock_mhz": 1300}, "WARN", "sm_clock_mhz", ["1300 MHz of 1980"]),
    ({"sm_clock_mhz": 1900}, "PASS", "sm_clock_mhz", ["1900 MHz"]),
    ({"power_limit_w": 400.0}, "WARN", "power_limit_w", ["nvidia-smi -pl"]),
    ({"temperature_c": 88}, "WARN", "temperature_c", ["too hot"]),
    ({"temperature_c": 97}, "FAIL", "temperature_c", ["too hot"]),
])
def test_degraded_h100(change, status, metric_name, words):
    verdict = verify.gpu_perf_verdict(dict(H100, **change))
    assert verdict["status"] == status
    found = metric(verdict, metric_name)
    assert found["status"] == status
    for word in words:
        assert word in found["reason"], found["reason"]
    if status != "PASS":
        assert found["short"] in verdict["summary"]


def test_verdict_inputs_and_overrides():
    assert verify.gpu_perf_verdict(json.dumps(H100))["status"] == "PASS"
    with pytest.raises(ValueError, match="not JSON"):
        verify.gpu_perf_verdict("{nope")
    with pytest.raises(ValueError, match="one JSON object per GPU"):
        verify.gpu_perf_verdict([H100])
    with pytest.raises(ValueError, match="unknown threshold 'matmull'"):
        verify.gpu_perf_verdict(H100, thresholds={"matmull": {"pass": 0.9}})
    # a stricter threshold turns the reference into a WARN
    assert verify.gpu_perf_verdict(H100, thresholds={"matmul": {"pass": 0.9}})["status"] == "WARN"
    # a model override (a card the table lacks, or corrected figures)
    custom = verify.gpu_perf_verdict(dict(H100, name="Mystery GPU"), models={"Mystery GPU": {
        "bf16": 800, "fp16": 800, "fp32": 60, "mem_gbs": 3000, "pcie_gen": 5, "pcie_width": 16}})
    assert custom["status"] == "PASS" and custom["model"] == "Mystery GPU"
    unknown = verify.gpu_perf_verdict(dict(H100, name="Mystery GPU"))
    assert unknown["status"] == "WARN" and "verify_gpu_perf_models" in unknown["summary"]
    # model given explicitly, as a name or as figures
    assert verify.gpu_perf_verdict(H100, "nvidia h100 80gb hbm3")["model"] == "NVIDIA H100 80GB HBM3"
    assert verify.gpu_perf_verdict(H100, {"name": "x", "bf16": 2000})["status"] == "FAIL"
    nothing = {"probe": "gpu", "index": 0, "name": "NVIDIA H100 80GB HBM3"}
    assert verify.gpu_perf_verdict(nothing)["status"] == "FAIL"


def test_model_table_is_complete():
    wanted = ["NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 PCIe",
              "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA L40S", "NVIDIA L4", "NVIDIA A10", "NVIDIA A10G",
              "Tesla T4", "NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090",
              "NVIDIA RTX A6000", "NVIDIA RTX 6000 Ada Generation"]
    for name in wanted:
        figures = verify.GPU_MODELS[name]
        assert set(figures) == {"bf16", "fp16", "tf32", "fp32", "mem_gbs", "pcie_gen", "pcie_width"}, name
        assert figures["fp16"] and figures["fp32"] and figures["mem_gbs"] and figures["pcie_gen"] in (3, 4, 5)
    assert verify.model_figures("GeForce RTX 4090")[0] == "NVIDIA GeForce RTX 4090"
    # T4 has no bf16: that metric is SKIPPED, not a FAIL
    t4 = verify.gpu_perf_verdict({"probe": "gpu", "index": 0, "name": "Tesla T4", "matmul_fp16_tflops": 50,
                                  "matmul_bf16_tflops": 20})
    assert metric(t4, "matmul_bf16_tflops")["status"] == "SKIPPED" and t4["status"] == "PASS"


@pytest.mark.parametrize("gen, width, gbs", [(5, 16, 63.0), (4, 16, 31.5), (3, 16, 15.8), (4, 4, 7.9), (None, 16, None)])
def test_pcie_gbs(gen, width, gbs):
    assert verify.pcie_gbs(gen, width) == gbs


@pytest.mark.parametrize("node, status", [
    ({"allreduce_busbw_gbs": 20.0}, "PASS"),
    ({"allreduce_busbw_gbs": 5.0}, "WARN"),
    ({"allreduce_busbw_gbs": None, "unavailable": {"allreduce": "fewer than 2 GPUs in the pod"}}, "SKIPPED"),
])
def test_allreduce_verdict(node, status):
    assert verify.allreduce_verdict(node, verify.GPU_MODELS["NVIDIA H100 80GB HBM3"])["status"] == status


# ------------------------------------------------------------------------------------------ result
def r(check, status, target="cluster", detail="d"):
    return {"check": check, "target": target, "status": status, "detail": detail}


@pytest.mark.parametrize("rows, jobs_ran, result, failed", [
    ([r("capacity", "PASS"), r("pytorch", "PASS", "a")], True, "PASS", False),
    ([r("capacity", "PASS"), r("guest view", "WARN", "a")], True, "PASS", False),
    ([r("capacity", "PASS"), r("pytorch", "FAIL", "a")], True, "FAIL", True),
    ([r("capacity", "FAIL")], True, "FAIL", True),
    # outside a lab: the parts that could not run are NOT VERIFIED and the phase fails
    ([r("GPUs", "NOT VERIFIED", "a"), r("capacity", "NOT VERIFIED"), r("smoke Jobs", "NOT VERIFIED")], False,
     "NOT VERIFIED", True),
    # a lab: SKIPPED, the phase carries on, but the result is never PASS
    ([r("GPUs", "SKIPPED", "a"), r("capacity", "SKIPPED"), r("smoke Jobs", "SKIPPED")], False, "NOT VERIFIED", False),
    # check mode: capacity checked, Jobs not started (the user's choice)
    ([r("capacity", "PASS"), r("smoke Jobs", "SKIPPED")], False, "NOT VERIFIED", False),
    # nothing at all
    ([], False, "NOT VERIFIED", False),
    ([r("capacity", "PASS")], False, "NOT VERIFIED", False),
    # a FAIL wins over NOT VERIFIED
    ([r("GPUs", "FAIL", "a"), r("capacity", "NOT VERIFIED")], False, "FAIL", True),
])
def test_verify_result(rows, jobs_ran, result, failed):
    outcome = verify.verify_result(rows, jobs_ran)
    assert (outcome["result"], outcome["failed"]) == (result, failed)


def test_result_summary_names_what_was_not_verified():
    outcome = verify.verify_result([r("capacity", "NOT VERIFIED", detail="kubeconfig /k does not exist"),
                                    r("smoke Jobs", "NOT VERIFIED", detail="kubeconfig /k does not exist (3 Jobs)")], False)
    assert outcome["summary"] == ("capacity (kubeconfig /k does not exist); smoke Jobs (kubeconfig /k does not exist (3 Jobs))")
    assert verify.verify_result([r("GPUs", "FAIL", "wk1", "PCI shows 0")], True)["failures"] == ["GPUs on wk1"]


def test_rows_shape():
    assert verify.normalise_row({"check": "llm q GET /v1/models", "target": "", "status": "PASS", "detail": "ok  in 0.1 s"}) == {
        "check": "llm q GET /v1/models", "target": "", "status": "PASS", "detail": "ok in 0.1 s"}
    with pytest.raises(ValueError, match="lacks check"):  # one shape: the older {part, status, detail} is gone
        verify.normalise_row({"part": "llm q GET /v1/models", "status": "PASS", "detail": "ok"})
    with pytest.raises(ValueError, match="status 'OK' is not one of"):
        verify.row("x", "y", "OK", "")
    with pytest.raises(ValueError, match="lacks status"):
        verify.normalise_row({"check": "x"})
    with pytest.raises(ValueError, match="not a mapping"):
        verify.normalise_row("PASS")


# ------------------------------------------------------------------------------------------ report
def test_report_shows_the_slow_gpu_first():
    slow = dict(H100, index=1, pcie_width_current=4)
    checks = [verify.judge_job({"check": "gpu-probe", "name": "p", "node": "wk1", "expect": '"probe": "gpu"',
                                "judge": "probe"}, OK, json.dumps(H100) + "\n" + json.dumps(slow) + "\n"),
              verify.judge_job(LOG_JOB, OK, "cuda_available=True device_count=1")]
    worker = verify.worker_gpus(2, "NVIDIA H100 80GB HBM3", [{}, {}], {})
    report = verify.build_report("lab", [{"node": "wk1", "declared": 2, "model": "NVIDIA H100 80GB HBM3",
                                          "worker": worker, "guest": verify.guest_row("wk1", verify.guest_view("0-7", [], MEMINFO))}],
                                 [r("capacity", "PASS")], checks, True,
                                 capacity={"nodes": [{"name": "wk1", "ready": True, "allocatable": {"nvidia.com/gpu": "2"}}]})
    assert report["result"] == "FAIL"
    assert report["summary"] == ("GPU performance on wk1 GPU1: NVIDIA H100 80GB HBM3: "
                                 "PCIe Gen5 x4 of Gen5 x16 (slot, riser or bifurcation)")
    text = verify.report_markdown(report)
    lines = text.splitlines()
    assert lines[2].startswith("**Result: FAIL**: GPU performance on wk1 GPU1")
    assert "## GPU performance (measured / expected)" in text
    assert "| wk1 GPU0 | NVIDIA H100 80GB HBM3 | PASS | 791.7 / 989 | 51.4 / 67 | 2997 / 3350 | 42.1 / 63 | Gen5 x16 / Gen5 x16 |  |" in lines
    slow_line = next(line for line in lines if line.startswith("| wk1 GPU1 "))
    assert "Gen5 x4 / Gen5 x16 **FAIL**" in slow_line and slow_line.endswith("(slot, riser or bifurcation) |")
    assert "- FAIL wk1 GPU1: PCIe link trained at x4 of x16: the slot is wired narrower, a riser" in text
    assert "| wk1 | 2 x NVIDIA H100 80GB HBM3 | declared 2, PCI 2, nvidia-smi - | nvidia.com/gpu=2 | gpu-probe PASS | FAIL |" in lines
    assert "| guest view | wk1 | PASS | 8 vCPUs, 1 NUMA node(s), 64300 MiB, hugepages 16 x 1048576 kB (hugetlb 16384 MiB) |" in lines
    printed = verify.report_lines(report)
    assert printed[-1].startswith("FAIL verify: GPU performance on wk1 GPU1")
    assert any(line.startswith("wk1 GPU1") and "<- PCIe Gen5 x4 of Gen5 x16" in line for line in printed)


def test_report_without_anything():
    report = verify.build_report("c", [], [r("capacity", "SKIPPED", detail="no kubeconfig"),
                                           r("smoke Jobs", "SKIPPED", detail="no kubeconfig (3 Jobs not started)")],
                                 [], False, lab=True)
    assert report["result"] == "NOT VERIFIED" and not report["failed"]
    text = verify.report_markdown(report)
    assert "**Result: NOT VERIFIED**: capacity (no kubeconfig); smoke Jobs (no kubeconfig (3 Jobs not started))" in text
    assert "No Jobs ran: no kubeconfig (3 Jobs not started)." in text
    assert "| (no hosts in gpu_workers) |" in text
    assert copy.deepcopy(report) == report


# ---------------------------------------------------------------- GPU pools (issue 18) in verify
POOLS_CAPACITY = [
    {"name": "training", "allocation": "exclusive", "resource": "nvidia.com/gpu", "count": 4,
     "resources": {"nvidia.com/gpu": 4}, "per_node": {"wk-gpu1": {"nvidia.com/gpu": 2}, "wk-gpu2": {"nvidia.com/gpu": 2}},
     "nodes": ["wk-gpu1", "wk-gpu2"]},
    {"name": "notebooks", "allocation": "timeslice", "resource": "nvidia.com/gpu.shared", "count": 8,
     "resources": {"nvidia.com/gpu.shared": 8}, "per_node": {"wk-gpu3": {"nvidia.com/gpu.shared": 8}},
     "nodes": ["wk-gpu3"]},
    {"name": "inference", "allocation": "mig", "resource": "nvidia.com/mig-1g.10gb", "count": 14,
     "resources": {"nvidia.com/mig-1g.10gb": 14}, "per_node": {"wk-gpu4": {"nvidia.com/mig-1g.10gb": 14}},
     "nodes": ["wk-gpu4"]},
]
POOL_WORKERS = [{"node": f"wk-gpu{i}", "gpu_count": 2, "expected": None} for i in range(1, 6)]


def test_expected_capacity_takes_each_pool_members_offer():
    expected = verify.expected_capacity(POOL_WORKERS, "nvidia.com/gpu", POOLS_CAPACITY)
    assert expected["per_node"]["wk-gpu3"] == {"nvidia.com/gpu.shared": 8}
    assert expected["per_node"]["wk-gpu4"] == {"nvidia.com/mig-1g.10gb": 14}
    assert expected["per_node"]["wk-gpu5"] == {"nvidia.com/gpu": 2}  # in no pool: its GPUs
    # the cluster total of nvidia.com/gpu: the exclusive pool's 4 and wk-gpu5's 2, not the shared/MIG ones
    assert expected["nvidia.com/gpu"] == 6
    # an own gpu_cluster_verify_expected still wins over the pool
    own = [dict(POOL_WORKERS[2], expected={"nvidia.com/gpu.shared": 4})]
    assert verify.expected_capacity(own, "nvidia.com/gpu", POOLS_CAPACITY)["per_node"]["wk-gpu3"] == {"nvidia.com/gpu.shared": 4}
    # no pools: as before
    assert verify.expected_capacity(POOL_WORKERS[:1]) == {"per_node": {"wk-gpu1": {"nvidia.com/gpu": 2}}, "nvidia.com/gpu": 2}


def _nodes(**alloc):
    return {"nodes": [{"name": name.replace("_", "-"), "allocatable": a} for name, a in alloc.items()]}


@pytest.mark.parametrize("alloc, statuses", [
    ({"wk_gpu1": {"nvidia.com/gpu": "2"}, "wk_gpu2": {"nvidia.com/gpu": "2"}, "wk_gpu3": {"nvidia.com/gpu.shared": "8"},
      "wk_gpu4": {"nvidia.com/mig-1g.10gb": "14"}}, ["PASS", "PASS", "PASS"]),
    # a shared node advertising whole GPUs (device-plugin config not applied) and a MIG node short of slices
    ({"wk_gpu1": {"nvidia.com/gpu": "2"}, "wk_gpu2": {"nvidia.com/gpu": "1"}, "wk_gpu3": {"nvidia.com/gpu": "2"},
      "wk_gpu4": {"nvidia.com/mig-1g.10gb": "7"}}, ["FAIL", "FAIL", "FAIL"]),
])
def test_pool_rows_compare_allocatable_with_the_expected_capacity(alloc, statuses):
    rows = verify.pool_rows(POOLS_CAPACITY, _nodes(**alloc))
    assert [r["status"] for r in rows] == statuses
    assert [r["target"] for r in rows] == ["training", "notebooks", "inference"]
    if statuses[0] == "FAIL":
        assert rows[1]["detail"].startswith("short of nvidia.com/gpu.shared: nvidia.com/gpu.shared 0 of 8")
        assert "nvidia.com/mig-1g.10gb 7 of 14" in rows[2]["detail"]


def test_pool_rows_without_a_cluster():
    assert {r["status"] for r in verify.pool_rows(POOLS_CAPACITY, {}, "no kubeconfig", lab=True)} == {"SKIPPED"}
    assert {r["status"] for r in verify.pool_rows(POOLS_CAPACITY, {}, "no kubeconfig")} == {"NOT VERIFIED"}
    assert verify.pool_rows([], {"nodes": []}) == []
