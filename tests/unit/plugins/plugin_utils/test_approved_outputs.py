"""Approved outputs of the module_utils that build objects: chart values, manifests, rules, Jobs.

The other unit tests check what each object must do (a key, a selector, a limit); the render tier
validates the same objects against the real schemas. Neither notices a changed value that is still
valid: a mount option, a reclaim policy, an alert's duration, a probe's path. Here each builder is
called with the homelab's inputs and its whole output is compared with the approved one in
``approved/<module>.json``; a difference fails with the path of the first changed value.

A deliberate change: look at the difference, then approve the new output with
``GPU_CLUSTER_APPROVE=1 pytest tests/unit/plugins/plugin_utils/test_approved_outputs.py`` and commit
the JSON with the change (the review sees both)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.module_utils import gpu_capacity as gc
from ansible_collections.cps.gpu_cluster.plugins.module_utils import k3s_reset, k3s_token, numa, nvidia_smi, pci_sysfs, vllm_endpoint
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import components as cm
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_monitoring as gm
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_pools as gp
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import inventory_checks as ic
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import jupyterhub as jh
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import k3s, k3s_hardening, verify, vllm
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import k3s_parity as kp
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import management as mg
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import state_dir as sd
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import storage_components as sc

# the inputs the module's own tests use (this directory is on sys.path: pytest's prepend import mode; the
# tests of the modules' code live beside, in ../module_utils)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "module_utils"))
import test_gpu_pools as tg  # isort: skip
import test_inventory_checks as ti  # isort: skip
import test_jupyterhub as tj  # isort: skip
import test_k3s as tk  # isort: skip
import test_k3s_reset as tkr  # isort: skip
import test_numa as tn  # isort: skip
import test_k3s_hardening as tkh  # isort: skip
import test_k3s_parity as tkp  # isort: skip
import test_management as tm  # isort: skip
import test_verify as tvf  # isort: skip
import test_vllm as tv  # isort: skip

HERE = Path(__file__).resolve().parent
APPROVED = HERE / "approved"
REPO = HERE.parents[3]
HOMELAB = REPO / "inventories" / "homelab"
A100_80 = "NVIDIA A100 80GB PCIe"


def homelab_var(name):
    for path in sorted((HOMELAB / "group_vars" / "all").glob("*.yml")):
        data = yaml.safe_load(path.read_text()) or {}
        if name in data:
            return data[name]
    raise KeyError(name)


POOLS = homelab_var("gpu_cluster_gpu_pools")
WORKERS = {f"wk-gpu{i}": {"gpu_cluster_gpu_count": 2, "gpu_cluster_gpu_model": A100_80} for i in range(1, 5)}
HUB_PROFILES = jh.resolve_profiles(None, tj.HOMELAB)["profiles"]
HUB_POOL_PROFILES = [{"name": "cpu", "gpu": 0}, {"name": "shared", "gpu": 1, "pool": "shared"},
                     {"name": "mig", "gpu": 1, "pool": "mig"}]
HUB_GITHUB = dict(tj.SETTINGS, auth="github", cert_issuer="letsencrypt",
                  oauth={"client_id": "abc", "allowed_organizations": ["cps"]})
CERT_MANAGER = tm.SETTINGS["cert_manager"]
VERIFY_JOBS = verify.plan_jobs(tvf.WORKERS, ["cp1", "wk-gpu1", "WK_gpu2"], tvf.IMAGES)
H100_SLOW = dict(tvf.H100, index=1, pcie_width_current=4)
POOL_SET = [{"name": "ts", "nodes": ["wk-4090"], "allocation": "timeslice", "replicas": 4, "renameByDefault": True,
             "namespaces": ["lab"]},
            {"name": "x", "nodes": ["wk-gpu1"], "allocation": "exclusive"},
            dict(tg.mig_pool("all-1g.10gb", ["wk-gpu2"]), namespaces=["llm", "lab"])]


def outcome(function, *args, **kwargs):
    """What ``function`` returns, or the message of the ValueError it raises."""
    try:
        return function(*args, **kwargs)
    except ValueError as error:
        return {"ValueError": str(error)}


VERSION_STEPS = [("", "v1.33.5+k3s1"), ("v1.33.5+k3s1", "v1.33.5+k3s1"), ("v1.33.5+k3s1", "v1.33.6+k3s1"),
                 ("v1.33.5+k3s1", "v1.34.1+k3s1"), ("v1.33.5+k3s1", "v1.35.0+k3s1"), ("v1.33.5+k3s1", "v1.32.9+k3s1"),
                 ("v1.33.5+k3s2", "v1.33.5+k3s1"), ("v1.33.5+k3s1", "v2.0.0+k3s1"), ("v1.34.0-rc1+k3s1", "v1.34.0+k3s1"),
                 ("v1.33.5+k3s1", "latest")]
SERVERS = ["cp1", "cp2", "cp3", "cp4", "cp5"]
BAD_REGISTRIES = {"mirrors": {"docker.io": {"endpoint": "https://x"}, "bad host!": {}, "q.io": {"rewrite": "x"}},
                  "configs": {"a.io": "x", "b.io": {"auth": "x", "tls": "y"}, "c.io": {},
                              "d.io": {"auth": {"username": "", "password": 3, "extra": 1},
                                       "tls": {"cert_file": "rel.pem", "ca_file": "/a\nb", "key_file": 4,
                                               "insecure_skip_verify": "yes", "other": 1}},
                              "e.io": {"auth": {"username": "u", "password": "p", "auth": "x"},
                                       "tls": {"cert_file": "/c.pem"}},
                              "f.io": {"auth": {}}, "g.io": {"tls": {"key_file": "/k.pem"}}},
                  "other": 1}


FIXTURES = REPO / "tests" / "fixtures"


def numa_plan(root, **options):
    """The planner's placement, table and Terraform variables for the homelab's VMs on a captured host."""
    topology, gpu_nodes = tn.layout(root)
    plan, problems = numa.plan_placement(topology, gpu_nodes, tn.homelab_workers(), tn.CONTROL_PLANES, **options)
    return {"plan": plan, "problems": problems, "table": numa.placement_table(plan, "pve1"),
            "tfvars": numa.placement_tfvars(plan)}


def vllm_judged():
    """Each endpoint check of a chat and an embedding model, judged on good, empty and broken answers."""
    answers = [
        (200, json.dumps({"data": [{"id": "Qwen/Qwen2.5-1.5B-Instruct"}, {"id": "BAAI/bge-base-en-v1.5"}]})),
        (200, json.dumps({"data": [{"id": "other/model"}]})), (200, json.dumps({"data": []})), (200, "<html>"),
        (200, json.dumps({"choices": [{"message": {"content": "ready"}}], "usage": {"completion_tokens": 2}})),
        (200, json.dumps({"choices": [{"message": {"content": None, "reasoning_content": "thinking"}}],
                          "usage": {"completion_tokens": 16}})),
        (200, json.dumps({"choices": [], "usage": {"completion_tokens": 0}})), (200, json.dumps({"choices": "x"})),
        (200, json.dumps({"data": [{"embedding": [0.1] * 8}]})), (200, json.dumps({"data": [{"embedding": []}]})),
        (200, json.dumps({"data": [{"embedding": "x"}]})), (200, json.dumps([1])),
        (500, "boom\n  trace"), (503, ""),
    ]
    out = []
    for model in (tv.QWEN, tv.EMBED):
        spec = vllm.vllm_spec(model)
        for check in vllm_endpoint.endpoint_checks(spec):
            out.append([model["name"], check["check"], [outcome(vllm_endpoint.judge, check, spec, status, text)
                                                        for status, text in answers]])
    return out


def hub_pod(node, gpus, resource="nvidia.com/gpu"):
    return {"spec": {"nodeName": node, "containers": [{"name": "notebook", "resources": {"limits": {resource: gpus}}}]}}


HUB_STEPS = [{"profile": "gpu-2", "gpu": 2, "resource": "nvidia.com/gpu"},
             {"profile": "m", "gpu": 1, "resource": "nvidia.com/mig-1g.10gb"},
             {"profile": "cpu", "gpu": 0, "resource": "nvidia.com/gpu"}]
SMI_OUTPUTS = ["GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-a)\nGPU 1: NVIDIA A100 80GB PCIe (UUID: GPU-b)\n",
               "GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-a)\n",
               "GPU 0: NVIDIA A100 (UUID: GPU-a)\n  MIG 1g.10gb     Device  0: (UUID: MIG-x)\n", "", "No devices were found"]
HUB_PODS = [hub_pod("wk-gpu1", "2"), hub_pod("cp1", "2"), hub_pod("wk-gpu1", "1"), hub_pod("wk-gpu1", "1", "nvidia.com/mig-1g.10gb"),
            {"spec": {"containers": []}}, {}]
ETCD_CASES = [(3, tvf.members(False, False, False), tvf.HEALTHY, "", False),
              (3, tvf.members(False, False, True), tvf.HEALTHY, "", False),
              (5, tvf.members(False, False, False), {"json": {"health": "false"}}, "", False),
              (3, {"msg": "connection refused"}, {}, "", False), (1, {}, {}, "", False), (3, {}, {}, "no kubeconfig", True),
              (3, {}, {}, "no kubeconfig", False), (3, {"unreachable": True}, {}, "", True),
              (3, {"unreachable": True}, {}, "", False)]
CAPACITY_CASES = [({"nodes": tvf.NODES, "totals": {"nvidia.com/gpu": 2}}, "", False),
                  ({"nodes": tvf.NODES, "shortfalls": ["node a has 1 allocatable nvidia.com/gpu, expected 2"],
                    "failed": True}, "", False),
                  ({"failed": True, "msg": "API said no"}, "", False),
                  ({"nodes": [*tvf.NODES, {"name": "b", "ready": False}]}, "", False),
                  ({}, "no kubeconfig", True), ({}, "no kubeconfig", False)]
POOL_ALLOCATIONS = [
    {"wk-gpu1": {"nvidia.com/gpu": "2"}, "wk-gpu2": {"nvidia.com/gpu": "2"}, "wk-gpu3": {"nvidia.com/gpu.shared": "8"},
     "wk-gpu4": {"nvidia.com/mig-1g.10gb": "14"}},
    {"wk-gpu1": {"nvidia.com/gpu": "2"}, "wk-gpu2": {"nvidia.com/gpu": "1"}, "wk-gpu3": {"nvidia.com/gpu": "2"},
     "wk-gpu4": {"nvidia.com/mig-1g.10gb": "7"}},
    {"wk-gpu1": {"nvidia.com/gpu": "0"}}, {}]
BOOT_PROBES = [{}, {"cp1": {"reachable": True}, "cp2": {"etcd": True, "token": True, "api": True},
                    "cp3": {"etcd": True, "token": True, "api": True}},
               {s: {"etcd": True, "token": True, "api": True} for s in ("cp1", "cp2", "cp3")},
               {"cp1": {"reachable": False}, "cp2": {"etcd": True, "token": True, "api": False},
                "cp3": {"etcd": True, "token": True, "api": True}},
               {"cp1": {"etcd": True, "token": True, "api": True}},
               {"cp1": {"reachable": False}, "cp2": {"reachable": False}, "cp3": {"etcd": True, "token": False}},
               {"cp1": {"reachable": True}, "cp2": {"reachable": False}, "cp3": {"reachable": False}}]


def inventory_with(value, names=(*ic.CLUSTER_VARIABLES, *ic.HOST_VARIABLES, *ic.POSITIVE_INT_VARIABLES)):
    """The problems of the homelab inventory with every variable of ``names`` set to ``value`` on every host:
    the message of each variable's check, in the order preflight prints them."""
    groups, hostvars = ti.homelab()
    for variables in hostvars.values():
        variables.update(dict.fromkeys(names, value))
    return ic.inventory_problems(groups, hostvars)


def verify_report():
    """The report of a worker with a GPU on a narrow PCIe link (test_verify's slow-GPU case)."""
    probe = {"check": "gpu-probe", "name": "p", "node": "wk1", "expect": '"probe": "gpu"', "judge": "probe"}
    checks = [verify.judge_job(probe, tvf.OK, json.dumps(tvf.H100) + "\n" + json.dumps(H100_SLOW) + "\n"),
              verify.judge_job(tvf.LOG_JOB, tvf.OK, "cuda_available=True device_count=1"),
              verify.judge_job(VERIFY_JOBS[-3], {"failed": 1}, "connect: no route to host")]
    worker = verify.worker_gpus(2, "NVIDIA H100 80GB HBM3", [{}, {}], {})
    guest = verify.guest_row("wk1", verify.guest_view("0-7", [], tvf.MEMINFO))
    return verify.build_report("lab", [{"node": "wk1", "declared": 2, "model": "NVIDIA H100 80GB HBM3",
                                        "worker": worker, "guest": guest}],
                               [verify.row("capacity", "cluster", "PASS", "2 of 2")], checks, True,
                               capacity={"nodes": [{"name": "wk1", "ready": True,
                                                    "allocatable": {"nvidia.com/gpu": "2"}}]})


# module -> case -> the call. Each case calls the builder as a role does, with the homelab's inputs.
CASES = {
    "components": {
        "gpu_operator_values": lambda: cm.gpu_operator_values("v1.33.5+k3s1", "v26.7.0"),
        "gpu_operator_values_legacy_host_driver": lambda: cm.gpu_operator_values(
            "v1.30.9+k3s1", "v25.10.1", driver_enabled=False, driver_version="570.1", mig_strategy="mixed",
            dcgm_exporter_enabled=False, extra_values={"dcgmExporter": {"serviceMonitor": {"enabled": True}}}),
        "gpu_operator_values_driver_version": lambda: cm.gpu_operator_values("v1.34.1+k3s1", "v26.7.0",
                                                                             driver_version="580.95.05"),
        "cuda_smoke_pod": cm.cuda_smoke_pod,
        "cuda_smoke_pod_two_gpus": lambda: cm.cuda_smoke_pod("smoke-2", "gpu-verify", "registry.lan/cuda:12", gpus=2),
    },
    "storage_components": {
        "nfs_values": lambda: sc.nfs_provisioner_values("10.0.0.30", "/export/k3s"),
        "nfs_values_not_default_extra": lambda: sc.nfs_provisioner_values(
            "nfs.lab", "/srv/k3s", storage_class="shared", default=False, extra={"replicaCount": 2}),
        "local_path_not_default": sc.local_path_not_default,
        "fast_scratch_manifests": lambda: sc.fast_scratch_manifests(
            "/mnt/fast-scratch", ["wk-gpu2", "wk-gpu1"], node_label={"gpu": "true"}),
        "fast_scratch_manifests_defaults": lambda: sc.fast_scratch_manifests("/mnt/x", ["n1"]),
    },
    "gpu_monitoring": {
        "stack_values": gm.stack_values,
        "stack_values_infra": lambda: gm.stack_values("30d", "100Gi", infra=True),
        "dcgm_service_monitor": gm.dcgm_service_monitor,
        "prometheus_rule": lambda: gm.prometheus_rule(POOLS, WORKERS),
        "prometheus_rule_no_pools": gm.prometheus_rule,
        "dashboard_configmap": lambda: gm.dashboard_configmap(POOLS),
    },
    "k3s": {
        "version_problem": lambda: [[c, w, outcome(k3s.version_problem, c, w), outcome(k3s.version_problem, c, w, True, True)]
                                    for c, w in VERSION_STEPS],
        "token_plan": lambda: [
            outcome(k3s_token.token_plan, "K10" + "a" * 64 + "::server:stored-secret-0123", "other-secret-0123456789"),
            outcome(k3s_token.token_plan, None, "short"),
            outcome(k3s_token.token_plan, None, None, None, True),
            outcome(k3s_token.token_plan, "stored-secret-0123456789 ", "K10" + "b" * 64 + "::server:stored-secret-0123456789"),
            outcome(k3s_token.token_plan, None, " given-secret-0123456789\n", None, True),
            outcome(k3s_token.token_plan, None, None, "running-secret-0123456789\n", True),
        ],
        "node_config_first_server_cis": lambda: k3s.node_config(
            "server", cluster_init=True, node_name="cp1", labels=["gpu-class=a100"], taints=["dedicated=infra:NoSchedule"],
            cis=k3s_hardening.cis_config("server", **tkh.PATHS), **tk.BASE),
        "node_config_joining_server": lambda: k3s.node_config("server", server_url="https://10.0.0.100:6443",
                                                              snapshot_retention=5, extra={"debug": True}, **tk.BASE),
        "node_config_agent": lambda: k3s.node_config(
            "agent", node_ip="10.0.0.21", flannel_iface="ens18", server_url="https://10.0.0.100:6443",
            labels=["gpu=true"], taints=["nvidia.com/gpu=true:NoSchedule"], cis=k3s_hardening.cis_config("agent", **tkh.PATHS)),
    },
    "k3s_parity": {
        "registries_problems": lambda: kp.registries_problems(BAD_REGISTRIES),
        "registries_not_a_mapping": lambda: [kp.registries_problems(v) for v in ("x", {"mirrors": "x", "configs": []})],
        "remove_node_problem": lambda: [
            [node, count, allow, kp.remove_node_problem(node, [*SERVERS[:count], "wk1"], SERVERS[:count], allow)]
            for node in ("", None, "cp1", "wk1", "nope") for count in (1, 2, 3, 4, 5) for allow in (False, True)],
        "good_registries": lambda: kp.registries_problems(tkp.GOOD_REGISTRIES),
    },
    "state_dir": {
        "inside_the_collection": lambda: sd.state_dir_problems("/opt/c/ansible_collections/cps/gpu_cluster/state",
                                                               root="/opt/c/ansible_collections/cps/gpu_cluster",
                                                               installed=True),
        "inside_a_checkout": lambda: sd.state_dir_problems("/src/gpu_cluster/state", root="/src/gpu_cluster",
                                                           installed=False),
        "a_file": lambda: sd.state_dir_problems("/etc/passwd", root="/nowhere", installed=True),
    },
    "parsers": {
        **{f"nvidia_smi_{path.stem}": (lambda path=path: nvidia_smi.parse_query_xml(path.read_text()))
           for path in sorted((FIXTURES / "nvidia-smi").glob("*.xml"))},
        **{f"lspci_{path.stem.split('__')[1]}": (lambda path=path: pci_sysfs.parse_lspci_nnk(path.read_text()))
           for path in sorted((FIXTURES / "lspci").glob("*.txt"))},
        **{f"lscpu_{path.parent.name}": (lambda path=path: numa.lscpu_layout(numa.parse_lscpu_p(path.read_text())))
           for path in sorted((FIXTURES / "numa").glob("*/lscpu-p.txt"))},
        **{f"numa_topology_{root.name}": (lambda root=root: numa.read_numa_topology(str(root / "sys")))
           for root in sorted((FIXTURES / "numa").glob("*/")) if (root / "sys").is_dir()},
        "mountinfo_k3s_agent": lambda: k3s_reset.parse_mountinfo(tkr.FIXTURE.read_text()),
        **{f"gpu_capacity_{path.stem.split('__', 1)[1]}": (lambda path=path: gc.evaluate(
            [json.loads(path.read_text())], expected={"nvidia.com/gpu": 4, "per_node": {"wk-gpu9": {"nvidia.com/gpu": 1}}}))
           for path in sorted((FIXTURES / "k8s-node").glob("*.json"))},
    },
    "judges": {
        "vllm_judge": vllm_judged,
        "vllm_verify_rows": lambda: vllm_endpoint.verify_rows(vllm.vllm_spec(tv.QWEN), [
            {"check": "models", "status": 200, "text": tv.MODELS_OK[1], "seconds": 0.25},
            {"check": "chat", "status": 0, "error": "POST /v1/chat/completions failed: refused", "seconds": 3.0}]),
        "vllm_verify_rows_not_run": lambda: vllm_endpoint.verify_rows(vllm.vllm_spec(tv.EMBED), [
            {"check": "models", "status": 503, "text": "loading", "seconds": 30.0}]),
        "hub_judge_pod": lambda: [[outcome(jh.judge_pod, step, pod, ["wk-gpu1"]) for pod in HUB_PODS] for step in HUB_STEPS],
        "hub_judge_nvidia_smi": lambda: [[outcome(jh.judge_nvidia_smi, step, out) for out in SMI_OUTPUTS] for step in HUB_STEPS],
        "verify_etcd_row": lambda: [verify.etcd_row(*case, "cp1") for case in ETCD_CASES],
        "verify_capacity_rows": lambda: [verify.capacity_rows(*case) for case in CAPACITY_CASES],
        "verify_pool_rows": lambda: [
            *(verify.pool_rows(tvf.POOLS_CAPACITY, {"nodes": [{"name": n, "allocatable": a} for n, a in alloc.items()]})
              for alloc in POOL_ALLOCATIONS),
            verify.pool_rows(tvf.POOLS_CAPACITY, {}, "no kubeconfig", lab=True),
            verify.pool_rows(tvf.POOLS_CAPACITY, {}, "no kubeconfig")],
        "verify_throughput": lambda: [verify.parse_throughput(log) for log in (tvf.BUSYBOX_DD, tvf.GNU_DD, "", "write:\nx\n")],
        "verify_worker_spec": lambda: [verify.worker_spec(h) for h in (
            None, {}, {"inventory_hostname": "wk_1", "gpu_cluster_node_name": "wk-1", "gpu_cluster_gpu_count": 2,
                       "gpu_cluster_gpu_model": A100_80},
            {"inventory_hostname": "wk2", "gpu_cluster_verify_expected": {"nvidia.com/mig-1g.10gb": 7}})],
        "k3s_bootstrap_plan": lambda: [outcome(k3s.bootstrap_plan, ["cp1", "cp2", "cp3"], "cp1", probes)
                                       for probes in BOOT_PROBES],
        "k3s_interface_for_ip": lambda: [outcome(k3s.interface_for_ip, tk.FACTS, a)
                                         for a in ("10.0.0.21", "127.0.0.1", "10.9.9.9", "", None)],
        "k3s_taint_dicts": lambda: [outcome(k3s.taint_dicts, t) for t in (
            ["nvidia.com/gpu=true:NoSchedule", "dedicated:NoExecute", "a=b:PreferNoSchedule"], ["gpu=true:Never"], ["x"], [])],
        "management_tls_secret": lambda: [outcome(mg.tls_secret, *pair) for pair in (
            ("cert", "key"), ("-----BEGIN CERTIFICATE-----\nA\n", "-----BEGIN PRIVATE KEY-----\nB\n"),
            ("-----BEGIN CERTIFICATE-----\n", "key"), ("", ""))],
        "management_git_credentials_refused": lambda: [outcome(mg.git_credentials_secret, "k", **kwargs) for kwargs in (
            {}, {"username": "u"}, {"password": "p"}, {"username": "u", "password": "p", "ssh_private_key": "k"},
            {"ssh_private_key": "not a key"}, {"known_hosts": "git.lan ssh-ed25519 AAAA"})],
    },
    "numa": {
        "two_socket_1g": lambda: numa_plan(tn.TWO, hugepages="1G"),
        "two_socket_smt_off": lambda: numa_plan(tn.TWO_NOSMT),
        "one_socket": lambda: numa_plan(tn.ONE),
        "one_socket_span": lambda: numa_plan(tn.ONE, allow_span=True, host_cores=1, hugepages="2M"),
    },
    "inventory_checks": {
        "every_variable_a_mapping": lambda: inventory_with({"a": 1}),
        "every_variable_a_number": lambda: inventory_with(-3),
        "every_variable_a_bad_string": lambda: inventory_with("Not Valid!"),
        "every_variable_empty": lambda: inventory_with(""),
        "every_variable_a_list_of_bad_strings": lambda: inventory_with(["Not Valid!", 7]),
        "cluster_variables_missing": lambda: inventory_with(None, tuple(ic.CLUSTER_VARIABLES)),
    },
    "jupyterhub": {
        "chart_values": lambda: jh.chart_values(tj.SETTINGS, HUB_PROFILES),
        "chart_values_github_tls_pools": lambda: jh.chart_values(HUB_GITHUB, HUB_POOL_PROFILES, tj.POOLS),
        "profile_list": lambda: jh.profile_list(HUB_PROFILES, images=tj.IMAGES, scratch=tj.SCRATCH,
                                                singleuser_package="jupyterhub==5.3.0"),
        "profile_list_pools": lambda: jh.profile_list(HUB_POOL_PROFILES, tj.POOLS, images=tj.IMAGES,
                                                      home={"size": "10Gi"}),
        "component": lambda: jh.jupyterhub_component(tj.SETTINGS, HUB_PROFILES, {
            "repo": "https://hub.jupyter.org/helm-chart/", "name": "jupyterhub", "version": "4.4.0",
            "release": "jupyterhub"}),
        "oauth_secret": lambda: jh.oauth_secret(HUB_GITHUB, "s3cr3t"),
        "resolve_profiles_mixed": lambda: jh.resolve_profiles(None, tj.MIXED, drop_unsatisfiable=True),
        "verify_plan": lambda: jh.verify_plan(HUB_POOL_PROFILES, tj.POOLS),
        "hub_api_command": lambda: jh.hub_api_command("POST", "/users/cps-verify/server", {"profile": "gpu-1"}),
    },
    "management": {
        "components_rancher": lambda: mg.management_components(tm.SETTINGS),
        "components_fleet": lambda: mg.management_components(dict(tm.SETTINGS, mode="fleet", servers=1)),
        "rancher_values_letsencrypt": lambda: mg.rancher_values(
            "rancher.homelab.lan", 3, tls_source="letsEncrypt", letsencrypt_email="ops@homelab.lan"),
        "cert_manager_values": lambda: mg.cert_manager_values(2, {"prometheus": {"enabled": False}}),
        "fleet_values": mg.fleet_values,
        "gitrepo": lambda: mg.gitrepo("https://git.lan/cm.git", "main", "homelab", polling_interval="5m",
                                      client_secret_name="cm-git-auth"),
        "git_credentials_basic": lambda: mg.git_credentials_secret("cm-git-auth", username="fleet", password="tok3n"),
        "git_credentials_ssh": lambda: mg.git_credentials_secret(
            "k", ssh_private_key="-----BEGIN OPENSSH PRIVATE KEY-----\nx", known_hosts="git.lan ssh-ed25519 AAAA"),
        "bootstrap_password_secret": lambda: mg.bootstrap_password_secret("correct-horse-battery"),
        "self_signed_issuer": mg.self_signed_issuer,
        "ca_certificate": mg.ca_certificate,
        "mask_secrets": lambda: mg.mask_secrets({"token": "t", "nested": [{"password": "p", "name": "n"}],
                                                 "k3s_token": "x", "plain": "kept"}),
    },
    "vllm": {
        "components_homelab": lambda: vllm.vllm_components([tv.QWEN, tv.EMBED], POOLS),
        "components_runtime_cache": lambda: vllm.vllm_components(
            [dict(tv.QWEN, cache={"size": "200Gi", "storage_class": "nfs-client"}, hf_token_secret="hf"),
             dict(tv.EMBED, namespace="embed", gpu=2)], POOLS, engine="operator", ingress_class="nginx",
            operator_install=False),  # the operator's own component: test_vllm.py test_operator_*
        "spec_kimi": lambda: vllm.vllm_spec(tv.KIMI),
        "endpoint_checks": lambda: [vllm_endpoint.endpoint_checks(vllm.vllm_spec(m)) for m in (tv.QWEN, tv.EMBED)],
    },
    "verify": {
        "plan_jobs": lambda: VERIFY_JOBS,
        "plan_jobs_options": lambda: verify.plan_jobs(tvf.WORKERS[:1], [], tvf.IMAGES,
                                                      {"probe_burn": 300, "tensorflow": False, "network": False}),
        "plan_manifests": lambda: verify.plan_manifests(VERIFY_JOBS, "gpu-verify", 900, probe_source="print(1)"),
        "plan_manifests_shared": lambda: verify.plan_manifests(VERIFY_JOBS[:2], "v", resource="nvidia.com/gpu.shared"),
        "perf_verdict_h100": lambda: verify.gpu_perf_verdict(tvf.H100),
        "perf_verdict_h100_narrow_link": lambda: verify.gpu_perf_verdict(H100_SLOW),
        "perf_verdict_slow_compute": lambda: verify.gpu_perf_verdict(
            dict(tvf.H100, matmul_bf16_tflops=300, hbm_gbs=1200, ecc_errors_uncorrected=2)),
        "report": verify_report,
        "report_markdown": lambda: verify.report_markdown(verify_report()),
        "report_lines": lambda: verify.report_lines(verify_report()),
    },
    "gpu_pools": {
        "device_plugin_configmap": lambda: gp.device_plugin_configmap(POOL_SET, tg.HOSTS),
        "operator_values": lambda: gp.operator_values(POOL_SET),
        "resource_quotas": lambda: gp.resource_quotas(POOL_SET, tg.HOSTS),
        "quota_components": lambda: gp.quota_components(POOL_SET, tg.HOSTS),
        "pool_capacity": lambda: gp.pool_capacity(POOL_SET, tg.HOSTS),
        "node_labels": lambda: gp.node_labels(POOL_SET, tg.HOSTS),
        "capacity_report_real_mig_node": lambda: gp.capacity_report(
            [tg.mig_pool("all-1g.10gb", ["wk-gpu1"])], tg.HOSTS, [tg.a100_node()]),
    },
}


_MISSING = object()


def plain(value):
    """The output as JSON would hold it (tuples as lists); types are kept: "0" is not 0."""
    return json.loads(json.dumps(value, sort_keys=True))


def first_difference(got, want, path="$"):
    """Where ``got`` first differs from ``want`` (a path and both values), None when they are the same."""
    if got is _MISSING or want is _MISSING:
        return f"{path}: " + ("added" if want is _MISSING else "removed")
    if type(got) is not type(want):
        return f"{path}: {type(want).__name__} {want!r} became {type(got).__name__} {got!r}"
    if isinstance(want, dict):
        pairs = [(f"{path}.{key}", got.get(key, _MISSING), want.get(key, _MISSING))
                 for key in sorted(set(got) | set(want))]
    elif isinstance(want, list):
        pairs = [(f"{path}[{index}]", g, w) for index, (g, w) in enumerate(zip(got, want))]
        pairs.append((f"{path} length", len(got), len(want)))
    else:
        return None if got == want else f"{path}: {want!r} became {got!r}"
    return next(filter(None, (first_difference(g, w, where) for where, g, w in pairs)), None)


@pytest.mark.parametrize(("module", "case"), [(m, c) for m, cases in CASES.items() for c in cases])
def test_output_is_the_approved_one(module, case):
    got = plain(CASES[module][case]())
    path = APPROVED / f"{module}.json"
    approved = json.loads(path.read_text()) if path.exists() else {}
    if os.environ.get("GPU_CLUSTER_APPROVE") == "1":
        approved[case] = got
        APPROVED.mkdir(exist_ok=True)
        path.write_text(json.dumps(approved, indent=1, sort_keys=True) + "\n")
    assert case in approved, f"{module}.{case} has no approved output: approve it (GPU_CLUSTER_APPROVE=1, see above)"
    difference = first_difference(got, approved[case])  # not ==: True == 1 in Python
    assert difference is None, f"{module}.{case}: {difference}"


def test_every_approved_output_has_its_case():
    for path in APPROVED.glob("*.json"):
        assert set(json.loads(path.read_text())) <= set(CASES.get(path.stem, {})), f"{path.name}: outputs no case makes"


@pytest.mark.parametrize(("got", "want", "message"), [
    ({"a": {"b": [1, "0"]}}, {"a": {"b": [1, 0]}}, "$.a.b[1]: int 0 became str '0'"),
    ({"a": 1}, {"a": 1, "b": 2}, "$.b: removed"),
    ([1], [1, 2], "$ length: 2 became 1"),
    ({"a": "x"}, {"a": "y"}, "$.a: 'y' became 'x'"),
    ({"a": 1}, {"a": True}, "$.a: bool True became int 1"),
])
def test_a_difference_is_named(got, want, message):
    assert first_difference(got, want) == message
    assert first_difference(want, want) is None
