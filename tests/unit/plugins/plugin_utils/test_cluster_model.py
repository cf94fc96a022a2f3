"""The cluster model (plugin_utils/cluster_model.py) and the scheduling proof (scheduling.py,
cluster_workloads.py) on the reference homelab as ansible-inventory loads it, and on variants where
a model, a profile or a Job does not fit; the judgement's rules as data tables."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.filter.k3s_setup import FilterModule as K3sFilters
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model as cmod
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_workloads as cw
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import gpu_pools, inventory_checks, jupyterhub, vllm
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import scheduling as sch
from jinja2 import StrictUndefined

REPO = Path(__file__).resolve().parents[4]
HOMELAB = REPO / "inventories" / "homelab"


def load_inventory(path):
    """(groups, hostvars) as Ansible gives them to a filter on the control node (values untemplated)."""
    exe = shutil.which("ansible-inventory") or str(Path(os.sys.executable).parent / "ansible-inventory")
    data = json.loads(subprocess.run([exe, "-i", str(path), "--list"], capture_output=True, text=True, check=True,
                                     env=dict(os.environ, ANSIBLE_INVENTORY_ENABLED="ansible.builtin.yaml")).stdout)
    hostvars = data.pop("_meta")["hostvars"]
    groups = {}

    def hosts_of(name):
        entry = data.get(name) or {}
        hosts = list(entry.get("hosts") or [])
        for child in entry.get("children") or []:
            hosts += [h for h in hosts_of(child) if h not in hosts]
        groups[name] = hosts
        return hosts

    hosts_of("all")
    return groups, hostvars


@pytest.fixture(scope="module")
def homelab():
    return load_inventory(HOMELAB)


def variant(homelab, **changes):
    groups, hostvars = copy.deepcopy(homelab)
    for host in hostvars:
        for name, value in changes.items():
            listed = name in ("gpu_cluster_llm_models", "gpu_cluster_jupyterhub_profiles")
            if (name.startswith("gpu_cluster_") and name in hostvars[host]) or listed:
                hostvars[host][name] = copy.deepcopy(value)
    return groups, hostvars


# ------------------------------------------------------------------------------ the model
def test_homelab_nodes_with_their_pools_labels_taints_and_allocatable(homelab):
    model = cmod.build(*homelab)
    nodes = cmod.by_name(model)
    assert list(nodes) == ["cp1", "cp2", "cp3", "wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4"]
    cp1, wk1, wk3, wk4 = nodes["cp1"], nodes["wk-gpu1"], nodes["wk-gpu3"], nodes["wk-gpu4"]
    assert (cp1["role"], cp1["address"], cp1["vcpus"], cp1["taints"], cp1["gpu_count"]) == ("server", "10.0.0.11", 4, [], 0)
    assert cp1["labels"]["node-role.kubernetes.io/control-plane"] == "true"
    assert cp1["allocatable"] == {"pods": 110, "cpu": 4000, "memory": 16384 * 2 ** 20 - 100 * 2 ** 20}
    assert wk1["pool"] == "training" and wk1["allocatable"]["nvidia.com/gpu"] == 2
    assert wk1["gpu_model"] == "NVIDIA A100 80GB PCIe" and wk1["gpu_pci_mappings"] == ["a100-0", "a100-1"]
    assert wk1["labels"]["gpu"] == "true" and wk1["labels"]["gpu-cluster.cps/gpu-pool"] == "training"
    assert wk1["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert wk3["pool"] == "notebooks" and wk3["allocatable"]["nvidia.com/gpu.shared"] == 8
    assert "nvidia.com/gpu" not in wk3["allocatable"]
    assert wk4["pool"] == "inference" and wk4["allocatable"]["nvidia.com/mig-1g.10gb"] == 14
    assert cmod.gpu_resource_of(wk4) == ("nvidia.com/mig-1g.10gb", 14) and cmod.shares_gpus(wk4)
    assert cmod.gpu_resource_of(wk1) == ("nvidia.com/gpu", 2) and not cmod.shares_gpus(wk1)


def test_the_inventory_overrides_labels_taints_and_names(homelab):
    groups, hostvars = copy.deepcopy(homelab)
    hostvars["wk-gpu1"]["k3s_node_taints"] = ["gpu=a100:NoSchedule", "nvidia.com/gpu=true:NoExecute"]
    hostvars["wk-gpu2"]["gpu_cluster_node_taints"] = ["dedicated=ml:NoSchedule"]
    hostvars["wk-gpu2"]["gpu_cluster_node_name"] = "gpu-two"
    nodes = cmod.by_name(cmod.build(groups, hostvars))
    assert [t["key"] for t in nodes["wk-gpu1"]["taints"]] == ["gpu", "nvidia.com/gpu"]
    assert [t["key"] for t in nodes["gpu-two"]["taints"]] == ["nvidia.com/gpu", "dedicated"]
    assert nodes["gpu-two"]["labels"]["kubernetes.io/hostname"] == "gpu-two" and nodes["gpu-two"]["host"] == "wk-gpu2"
    assert cmod.tolerations(nodes["gpu-two"]["taints"]) == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]


@pytest.mark.parametrize(("value", "expected"), [
    (2, 2), ("2", 2), (" 3 ", 3), (True, 0), (False, 0), (None, 0), ("two", 0), (2.5, 0), ("-1", 0), ([], 0)])
def test_as_int_is_the_one_count_converter(value, expected):
    assert cmod.as_int(value) == expected


@pytest.mark.parametrize(("text", "taint"), [
    ("nvidia.com/gpu=true:NoSchedule", {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}),
    ("dedicated:NoExecute", {"key": "dedicated", "value": "", "effect": "NoExecute"}),
    ("a=b:PreferNoSchedule", {"key": "a", "value": "b", "effect": "PreferNoSchedule"}),
    ("a=b:Never", None), ("no-effect", None), (":NoSchedule", None), (3, None)])
def test_parse_taint(text, taint):
    assert cmod.parse_taint(text) == taint


def test_unsound_pools_leave_every_worker_unpooled(homelab):
    groups, hostvars = variant(homelab, gpu_cluster_gpu_pools=[{"name": "x", "nodes": ["wk-gpu1"], "allocation": "bogus"}])
    nodes = cmod.by_name(cmod.build(groups, hostvars))
    assert all(nodes[f"wk-gpu{i}"]["allocatable"]["nvidia.com/gpu"] == 2 and not nodes[f"wk-gpu{i}"]["pool"]
               for i in range(1, 5))


# ------------------------------------------------------------------------------ feasibility rules
NODE = {"name": "n1", "shared": [], "labels": {"kubernetes.io/hostname": "n1", "gpu": "true", "zone": "a", "rank": "3"},
        "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                   {"key": "soft", "value": "", "effect": "PreferNoSchedule"}],
        "allocatable": {"cpu": 4000, "memory": 8 * 2 ** 30, "nvidia.com/gpu": 2, "pods": 110}}
GPU_TOL = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def pod(**spec):
    base = {"containers": [{"name": "c", "resources": spec.pop("resources", {})}], "tolerations": GPU_TOL}
    base.update(spec)
    return base


@pytest.mark.parametrize(("spec", "reason"), [
    (pod(), ""),
    (pod(nodeSelector={"gpu": "true"}), ""),
    (pod(nodeSelector={"gpu": "false"}), "nodeSelector gpu=false does not match (the node has gpu=true)"),
    (pod(nodeSelector={"pool": "x"}), "nodeSelector pool=x does not match (the node has none of them)"),
    (pod(tolerations=[]), "taint nvidia.com/gpu=true:NoSchedule not tolerated"),
    (pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]), ""),
    (pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "yes"}]),
     "taint nvidia.com/gpu=true:NoSchedule not tolerated"),
    (pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]),
     "taint nvidia.com/gpu=true:NoSchedule not tolerated"),
    (pod(tolerations=[{"operator": "Exists"}]), ""),  # tolerates everything
    (pod(tolerations=[{"key": "nvidia.com/gpu"}]), "taint nvidia.com/gpu=true:NoSchedule not tolerated"),  # Equal ''
    (pod(resources={"limits": {"nvidia.com/gpu": 2}}), ""),
    (pod(resources={"limits": {"nvidia.com/gpu": 3}}), "insufficient nvidia.com/gpu (asks 3, has 2)"),
    (pod(resources={"limits": {"nvidia.com/gpu.shared": 1}}), "insufficient nvidia.com/gpu.shared (asks 1, has none)"),
    (pod(resources={"requests": {"cpu": "4", "memory": "8Gi"}}), ""),
    (pod(resources={"requests": {"cpu": "4500m"}}), "insufficient cpu (asks 4500m, has 4)"),
    (pod(resources={"limits": {"memory": "9Gi"}}), "insufficient memory (asks 9Gi, has 8Gi)"),  # limit = request
    (pod(resources={"requests": {"memory": "1Gi"}, "limits": {"memory": "9Gi"}}), ""),
    (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
        {"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["2"]}]}]}}}), ""),
    (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]}}}),
     "required node affinity does not match"),
    (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}), ""),
    (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "missing", "operator": "DoesNotExist"},
                              {"key": "rank", "operator": "Lt", "values": ["3"]}]}]}}}),
     "required node affinity does not match"),
    (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}),
     "required node affinity does not match"),  # an empty term matches no node
])
def test_refusal_as_kube_scheduler_filters_decide(spec, reason):
    assert sch.refusal(spec, NODE) == reason


@pytest.mark.parametrize(("value", "number"), [("500m", 0.5), ("2", 2), ("16Gi", 16 * 2 ** 30), ("1e3", 1000),
                                               ("1.5G", 1.5e9), (3, 3), ("100Mi", 100 * 2 ** 20)])
def test_quantity(value, number):
    assert sch.quantity(value) == number


def test_quantity_refuses_what_the_api_refuses():
    for bad in ("", "1 Gi", "Gi", True, "1.2.3"):
        with pytest.raises(ValueError):
            sch.quantity(bad)


def test_init_containers_count_as_their_largest():
    spec = {"containers": [{"resources": {"requests": {"cpu": "1"}}}, {"resources": {"requests": {"cpu": "500m"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]}
    assert sch.pod_requests(spec) == {"cpu": 2000, "memory": 2 ** 30}


# ------------------------------------------------------------------------------ quotas
def quota(namespace, hard):
    return {"kind": "ResourceQuota", "metadata": {"namespace": namespace}, "spec": {"hard": hard}}


MIG = {"name": "m", "labels": {"kubernetes.io/hostname": "m"}, "taints": [], "shared": ["nvidia.com/mig-1g.10gb"],
       "allocatable": {"nvidia.com/mig-1g.10gb": 14}}
MIG_POD = {"containers": [{"resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}}]}
LIMITED = [{"apiGroup": "", "resource": "pods", "matchContains": ["nvidia.com/mig-1g.10gb"]}]


def test_a_namespace_without_a_grant_is_refused_by_limited_resources():
    result = sch.prove([{"name": "job", "namespace": "team-b", "pod": MIG_POD}], [MIG],
                       [quota("llm", {"requests.nvidia.com/mig-1g.10gb": "14"})], LIMITED)
    assert len(result["problems"]) == 1 and "limitedResources" in result["problems"][0] and "team-b" in result["problems"][0]
    ok = sch.prove([{"name": "job", "namespace": "llm", "pod": MIG_POD}], [MIG],
                   [quota("llm", {"requests.nvidia.com/mig-1g.10gb": "14"})], LIMITED)
    assert ok["problems"] == [] and ok["rows"][0]["nodes"] == ["m"]


@pytest.mark.parametrize("requests, namespace, limited, quotas, refused", [
    # a limited resource in a namespace whose quota lists it: admitted (whatever the amount; the
    # quota's own check judges that)
    ({"nvidia.com/mig-1g.10gb": 1}, "llm", ["nvidia.com/mig-1g.10gb"], [quota("llm", {"requests.nvidia.com/mig-1g.10gb": "0"})], []),
    # no quota in the namespace, or a quota of another namespace or resource: refused
    ({"nvidia.com/mig-1g.10gb": 1}, "team-b", ["nvidia.com/mig-1g.10gb"], [], ["requests.nvidia.com/mig-1g.10gb"]),
    ({"nvidia.com/mig-1g.10gb": 1}, "team-b", ["nvidia.com/mig-1g.10gb"],
     [quota("llm", {"requests.nvidia.com/mig-1g.10gb": "7"}), quota("team-b", {"requests.cpu": "4"})],
     ["requests.nvidia.com/mig-1g.10gb"]),
    # matchContains is a substring rule: nvidia.com/gpu also limits nvidia.com/gpu.shared
    ({"nvidia.com/gpu.shared": 1}, "x", ["nvidia.com/gpu"], [quota("x", {"requests.nvidia.com/gpu": "2"})],
     ["requests.nvidia.com/gpu.shared"]),
    # what is not consumed, and what is not limited, is not looked at
    ({"nvidia.com/gpu": 0, "cpu": 500}, "x", ["nvidia.com/gpu"], [], []),
    ({"nvidia.com/gpu": 1}, "x", ["nvidia.com/mig-1g.10gb"], [], []),
])
def test_uncovered_as_the_quota_admission_plugin_decides(requests, namespace, limited, quotas, refused):
    config = [{"apiGroup": "", "resource": "pods", "matchContains": limited}]
    assert sch.uncovered(requests, namespace, quotas, config) == refused


def test_the_homelab_admission_configuration_refuses_a_namespace_without_a_grant(homelab):
    """The servers' rendered admission configuration and the rendered quotas, judged offline: the
    inference pool (MIG, reserved for llm) is refused in any other namespace, including one created
    later; llm and verify's own namespace are admitted."""
    groups, hostvars = homelab
    model = cmod.build(groups, hostvars)
    assert model["limited"] == ["nvidia.com/mig-1g.10gb"]
    admission = K3sFilters().filters()["k3s_setup"]([], "admission_config", "restricted", model["limited"])
    admission = yaml.safe_load(yaml.safe_dump(admission))  # as the server reads the file
    limited = next(p for p in admission["plugins"] if p["name"] == "ResourceQuota")["configuration"]["limitedResources"]
    workers = dict((h, hostvars[h]) for h in groups["gpu_workers"])
    quotas = gpu_pools.resource_quotas(hostvars["wk-gpu4"]["gpu_cluster_gpu_pools"], workers)
    plan = cw._verify_plan(model)
    quotas += cw.verify_quotas(model, plan)
    mig = sch.pod_requests(MIG_POD)
    assert sch.uncovered(mig, "llm", quotas, limited) == []
    assert sch.uncovered(mig, "gpu-cluster-verify", quotas, limited) == []
    for namespace in ("jupyterhub", "team-b-created-later"):
        assert sch.uncovered(mig, namespace, quotas, limited) == ["requests.nvidia.com/mig-1g.10gb"], namespace
    # the time-sliced and exclusive pools are open to every namespace
    assert sch.uncovered({"nvidia.com/gpu.shared": 1, "nvidia.com/gpu": 1}, "team-b", quotas, limited) == []


def test_a_quota_of_zero_refuses_and_replicas_add_up():
    zero = sch.prove([{"name": "job", "namespace": "default", "pod": MIG_POD}], [MIG],
                     [quota("default", {"requests.nvidia.com/mig-1g.10gb": "0"})])
    assert "beyond the namespace's ResourceQuota" in zero["problems"][0]
    many = sch.prove([{"name": "a", "namespace": "llm", "pod": MIG_POD, "replicas": 10},
                      {"name": "b", "namespace": "llm", "pod": MIG_POD, "replicas": 5}], [MIG],
                     [quota("llm", {"requests.nvidia.com/mig-1g.10gb": "14"})])
    assert len(many["problems"]) == 1 and many["problems"][0].startswith("b (namespace llm)")


def test_a_daemon_set_is_judged_on_every_node_it_selects():
    """A DaemonSet puts a pod on each node its selector and tolerations admit: every one of those must
    have room; the others do not matter; admitting none is a problem of its own."""
    gpu = dict(NODE, name="g1")
    small = dict(NODE, name="g2", allocatable=dict(NODE["allocatable"], cpu=5))  # millicores
    other = dict(NODE, name="c1", labels={"zone": "b"}, taints=[])
    puller = pod(nodeSelector={"gpu": "true"}, resources={"requests": {"cpu": "10m", "memory": "16Mi"}})
    fine = sch.prove([{"name": "puller", "namespace": "hub", "pod": puller, "daemon_set": True}], [gpu, other])
    assert fine["problems"] == [] and fine["rows"][0]["nodes"] == ["g1"]
    short = sch.prove([{"name": "puller", "namespace": "hub", "pod": puller, "daemon_set": True}], [gpu, small, other])
    assert short["problems"] == ["puller (namespace hub) is a DaemonSet asking cpu 10m, memory 16Mi, and nodes it "
                                 "selects refuse it: g2: insufficient cpu (asks 10m, has 5m)"]
    none = sch.prove([{"name": "puller", "namespace": "hub", "pod": puller, "daemon_set": True}], [other])
    assert none["problems"] == ["puller (namespace hub) is a DaemonSet whose node selector and tolerations admit no node"]


# ------------------------------------------------------------------------------ the proof on inventories
def prove(groups, hostvars):
    return cw.proof(groups, hostvars)


def test_the_homelab_schedules_completely(homelab):
    result = prove(*homelab)
    assert result["problems"] == []
    rows = {row["workload"]: row for row in result["rows"]}
    assert rows["verify Job smi-wk-gpu3"]["asks"] == "nvidia.com/gpu.shared 1"
    assert rows["verify Job smi-wk-gpu4"]["asks"] == "nvidia.com/mig-1g.10gb 1"
    assert rows["verify Job smi-wk-gpu4"]["nodes"] == ["wk-gpu4"]
    assert "verify Job gpuprobe-wk-gpu4" not in rows and "verify Job gpuprobe-wk-gpu1" in rows
    assert rows["JupyterHub profile gpu-2"]["nodes"] == ["wk-gpu1", "wk-gpu2"]
    # the notebook image puller runs on every GPU worker, pooled or not (a DaemonSet, judged on each)
    assert rows["JupyterHub notebook image puller (DaemonSet jupyterhub/notebook-image-puller)"]["nodes"] == [
        "wk-gpu1", "wk-gpu2", "wk-gpu3", "wk-gpu4"]
    assert any(name.startswith("vLLM model Qwen") for name in rows)
    assert all(row["nodes"] for row in result["rows"])


def test_a_two_gpu_model_on_the_mig_pool_fails_naming_the_model(homelab):
    """Refused twice over: by the model checks (a MIG or time-sliced pool gives a container one unit)
    and, were it deployed anyway, by the proof (data table above: a unit is a time-slice or a MIG instance)."""
    groups, hostvars = variant(homelab, gpu_cluster_llm_models=[
        {"name": "big", "model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu": 2, "pool": "inference", "namespace": "llm"}])
    problems = vllm.llm_problems(groups, hostvars)
    assert len(problems) == 1 and problems[0].startswith("gpu_cluster_llm_models: model big: gpu is 2 but pool inference hands out mig")
    # the proof judges the pod the model would make: 2 MIG instances fit no node, and why each refuses
    pod = {"containers": [{"resources": {"limits": {"nvidia.com/mig-1g.10gb": 2}}}],
           "nodeSelector": {"gpu-cluster.cps/gpu-pool": "inference"},
           "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    result = sch.prove([{"name": "vLLM model big", "namespace": "llm", "pod": pod}], cmod.build(groups, hostvars)["nodes"])
    assert len(result["problems"]) == 1
    problem = result["problems"][0]
    assert problem.startswith("vLLM model big (namespace llm) asks")
    assert "fits no node" in problem and "wk-gpu4: asks 2 nvidia.com/mig-1g.10gb: a unit is a time-slice or a MIG instance" in problem
    assert "wk-gpu1, wk-gpu2: nodeSelector gpu-cluster.cps/gpu-pool=inference does not match (the node has " \
           "gpu-cluster.cps/gpu-pool=training)" in problem
    assert "cp1, cp2, cp3: nodeSelector gpu-cluster.cps/gpu-pool=inference does not match" in problem


def test_a_profile_on_a_pool_reserved_for_another_namespace_is_refused_naming_it(homelab):
    profiles = [{"name": "cpu", "gpu": 0}, {"name": "mig", "gpu": 1, "pool": "inference"}]
    groups, hostvars = variant(homelab, gpu_cluster_jupyterhub_profiles=profiles)
    problems = jupyterhub.jupyterhub_problems(groups, hostvars)
    assert problems == ["gpu_cluster_jupyterhub_profiles: profile mig: pool inference is reserved for namespace(s) llm, "
                        "not jupyterhub; add jupyterhub to the pool's namespaces"]


def test_changed_gpu_taints_are_followed_by_verify_and_refused_for_the_others(homelab):
    groups, hostvars = copy.deepcopy(homelab)
    for i in range(1, 5):
        hostvars[f"wk-gpu{i}"]["gpu_cluster_node_taints"] = ["dedicated=ml:NoSchedule"]
    result = prove(groups, hostvars)
    verify_problems = [p for p in result["problems"] if p.startswith("verify Job")]
    assert verify_problems == []  # the Jobs pinned to a node tolerate all of its taints
    refused = " ".join(result["problems"])
    assert "vLLM model" in refused and "taint dedicated=ml:NoSchedule not tolerated" in refused
    assert "CUDA smoke pod" in refused and "JupyterHub profile gpu-1" in refused


def with_gpu_worker_vars(homelab, **values):
    """The homelab with values set on each GPU worker (its own copy, as Ansible's hostvars give it)."""
    groups, hostvars = copy.deepcopy(homelab)
    for host in groups["gpu_workers"]:
        hostvars[host].update(copy.deepcopy(values))
    return groups, hostvars


def with_cluster_vars(homelab, **values):
    groups, hostvars = copy.deepcopy(homelab)
    for host in hostvars:
        hostvars[host].update(copy.deepcopy(values))
    return groups, hostvars


DEFAULT_GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def test_the_gpu_tolerations_follow_the_contract_s_taint_by_default(homelab):
    assert cmod.build(*homelab)["gpu_tolerations"] == [DEFAULT_GPU_TOLERATION]
    assert cmod.build({}, {})["gpu_tolerations"] == [DEFAULT_GPU_TOLERATION]  # no GPU worker: the default


@pytest.mark.parametrize("changed", [
    # NVIDIA's and GKE's spelling: same key, value present (the CUDA smoke pod's Equal "true" refused it)
    {"gpu_cluster_gpu_taint": "nvidia.com/gpu=present:NoSchedule"},
    {"gpu_cluster_gpu_taint": "example.com/accelerator=nvidia:NoSchedule"},
    {"gpu_cluster_gpu_taint": "example.com/accelerator:NoExecute"},
], ids=["present", "other-key", "no-value-noexecute"])
def test_a_changed_gpu_taint_is_carried_by_the_workers_and_tolerated_by_every_gpu_workload(homelab, changed):
    """Issue 44: the taint the inventory configures, value and key, is what the GPU workers carry and
    what every workload bound for them tolerates; the homelab's proof stays at 0 problems."""
    groups, hostvars = with_cluster_vars(homelab, **changed)
    model = cmod.build(groups, hostvars)
    taint = cmod.parse_taint(changed["gpu_cluster_gpu_taint"])
    for node in cmod.gpu_nodes(model):
        assert taint in node["taints"] and not any(t["key"] == "nvidia.com/gpu" and t["value"] == "true"
                                                   for t in node["taints"] if taint["key"] != "nvidia.com/gpu")
    assert model["gpu_tolerations"] == [{"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}]
    result = prove(groups, hostvars)
    assert result["problems"] == [], "\n".join(result["problems"])
    names = {row["workload"] for row in result["rows"]}
    assert {"CUDA smoke pod", "JupyterHub notebook image puller (DaemonSet jupyterhub/notebook-image-puller)"} <= names


@pytest.mark.parametrize("taints", [["nvidia.com/gpu=present:NoSchedule"], ["example.com/accelerator=nvidia:NoSchedule"]],
                         ids=["present", "other-key"])
def test_a_gpu_taint_set_with_k3s_node_taints_on_the_workers_is_followed(homelab, taints):
    """k3s_node_taints replaces the contract on a node (docs/inventory.md): set on every GPU worker, its
    taint is the GPU taint, and the proof places every workload."""
    groups, hostvars = with_gpu_worker_vars(homelab, k3s_node_taints=taints)
    model = cmod.build(groups, hostvars)
    taint = cmod.parse_taint(taints[0])
    assert model["gpu_tolerations"] == [{"key": taint["key"], "operator": "Exists", "effect": "NoSchedule"}]
    result = prove(groups, hostvars)
    assert result["problems"] == [], "\n".join(result["problems"])


def test_a_taint_only_some_gpu_workers_carry_is_not_tolerated():
    """The tolerations are the GPU taints every GPU worker shares: one worker with another key leaves
    only what they all carry."""
    worker = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    other = {"key": "example.com/accelerator", "value": "", "effect": "NoSchedule"}
    assert cmod.gpu_tolerations([[worker, other], [worker]]) == [DEFAULT_GPU_TOLERATION]
    assert cmod.gpu_tolerations([[other], [worker]]) == []
    # soft taints need no toleration
    assert cmod.gpu_tolerations([[dict(worker, effect="PreferNoSchedule")]]) == []


# ------------------------------------------------------------------------------ nodes alike, judged once
def test_gpu_workers_alike_are_judged_once_and_reported_each(homelab):
    """wk-gpu1 and wk-gpu2 (training pool, same model, count, labels and taints) share one judgement
    of each per-node verify Job; the rows still name every Job verify.yml creates, each on its node."""
    groups, hostvars = homelab
    model = cmod.build(groups, hostvars)
    plan = cw._verify_plan(model)
    jobs, _namespace, alike = plan
    assert alike == {"wk-gpu1": ["wk-gpu2"], "wk-gpu3": [], "wk-gpu4": []}
    assert "smi-wk-gpu2" not in [job["name"] for job in jobs]
    workloads = {w["name"]: w for w in cw.verify_workloads(model, plan)}
    assert workloads["verify Job smi-wk-gpu1"]["alike"] == [("verify Job smi-wk-gpu2", "wk-gpu2")]
    assert workloads["verify Job smi-wk-gpu1"]["replicas"] == 2
    assert "alike" not in workloads["verify Job multigpu-wk-gpu1"]  # a once-only Job stays once
    rows = {row["workload"]: row for row in cw.proof(groups, hostvars, model)["rows"]}
    for check in ("smi", "vectoradd", "pytorch", "gpuprobe"):
        assert rows[f"verify Job {check}-wk-gpu1"]["nodes"] == ["wk-gpu1"]
        assert rows[f"verify Job {check}-wk-gpu2"]["nodes"] == ["wk-gpu2"]


def test_the_operator_engine_proves_the_operators_own_pod(homelab):
    """With engine operator the collection installs the production-stack operator (issue 47): its
    controller pod (the vendored install's Deployment) is in the proof and schedules on the homelab; the
    homelab stays at 0 problems. The user's own operator (gpu_cluster_llm_operator_install: false) is not ours to prove."""
    groups, hostvars = copy.deepcopy(homelab)
    for variables in hostvars.values():
        variables.update(gpu_cluster_llm_engine="operator", gpu_cluster_llm_api_key=False)
    result = cw.proof(groups, hostvars)
    assert result["problems"] == []
    rows = {row["workload"]: row for row in result["rows"]}
    name = "vLLM production-stack operator (Deployment production-stack-system/production-stack-production-stack-controller-manager)"
    assert rows[name]["nodes"], rows[name]
    assert not set(rows[name]["nodes"]) & {node["name"] for node in cmod.build(groups, hostvars)["nodes"] if node["gpu_count"]}
    for variables in hostvars.values():
        variables["gpu_cluster_llm_operator_install"] = False
    assert name not in {row["workload"] for row in cw.proof(groups, hostvars)["rows"]}
    assert name not in {row["workload"] for row in prove(*homelab)["rows"]}  # the homelab's engine is deployment


def test_a_refused_pod_on_nodes_alike_names_every_node():
    nodes = [dict(MIG, name=n, labels={"kubernetes.io/hostname": n}) for n in ("m1", "m2", "m3")]
    pod = {"containers": [{"resources": {"limits": {"nvidia.com/mig-1g.10gb": 20}}}],
           "nodeSelector": {"kubernetes.io/hostname": "m1"}}
    result = sch.prove([{"name": "job-m1", "namespace": "default", "pod": pod,
                         "alike": [("job-m2", "m2"), ("job-m3", "m3")], "replicas": 3}], nodes)
    assert [row["workload"] for row in result["rows"]] == ["job-m1", "job-m2", "job-m3"]
    assert [list(row["refused"].values()) for row in result["rows"]] == [[["m1"]], [["m2"]], [["m3"]]]
    assert len(result["problems"]) == 1
    assert result["problems"][0].startswith("job-m1 (and the same on the 2 nodes alike: m2, m3) (namespace default) asks")
    assert "m1, m2, m3: " in result["problems"][0]


def test_the_verify_quota_counts_every_node_alike(homelab):
    """A reserved MIG pool of three alike nodes: verify's grant covers the Jobs of all three."""
    groups, hostvars = copy.deepcopy(homelab)
    pools = copy.deepcopy(hostvars["wk-gpu4"]["gpu_cluster_gpu_pools"])
    for pool in pools:
        if pool["name"] == "inference":
            pool["nodes"] = ["wk-gpu3", "wk-gpu4"]
        elif pool.get("nodes") and "wk-gpu3" in pool["nodes"]:
            pool["nodes"] = [n for n in pool["nodes"] if n != "wk-gpu3"]
    pools = [pool for pool in pools if pool.get("nodes") != []]
    for host in hostvars:
        if "gpu_cluster_gpu_pools" in hostvars[host]:
            hostvars[host]["gpu_cluster_gpu_pools"] = pools
    hostvars["wk-gpu3"].update({k: hostvars["wk-gpu4"][k] for k in ("gpu_cluster_gpu_model", "gpu_cluster_gpu_count")
                                if k in hostvars["wk-gpu4"]})
    model = cmod.build(groups, hostvars)
    plan = cw._verify_plan(model)
    assert plan[2]["wk-gpu3"] == ["wk-gpu4"]
    quota = cw.verify_quotas(model, plan)[0]
    assert quota["spec"]["hard"] == {"requests.nvidia.com/mig-1g.10gb": "6"}  # 3 Jobs of one unit on each node
    assert cw.proof(groups, hostvars, model)["problems"] == []


def test_first_values_reads_every_name_in_one_pass():
    groups = {"all": ["a", "b", "c"]}
    hostvars = {"a": {"x": 1}, "b": {"x": 2, "y": 3}, "c": {"z": 4}}
    assert cmod.inventory(groups, hostvars).values(("x", "y", "z", "missing")) == {"x": 1, "y": 3, "z": 4}
    assert cmod.inventory({}, hostvars).values(("x",)) == {"x": 1}  # sorted hostvars without groups['all']
    assert cmod.inventory(groups, hostvars).value("missing") is None


def test_switched_on_decides_for_an_optional_feature():
    """cluster_model.switched_on: problems first, then off (None), else the settings, nodes and placement."""
    def problems(values):
        return [f"bad {k}" for k in sorted(values) if k.startswith("bad")]

    def settings(values):
        return {"enabled": bool(values.get("on"))}
    model = {"nodes": [{"name": "cp1", "groups": ["k3s_servers"]}, {"name": "infra1", "groups": ["infra_nodes"]}]}
    with pytest.raises(ValueError, match=r"^bad bad1; bad bad2$"):
        cmod.switched_on({"on": True, "bad1": 1, "bad2": 2}, model, problems, settings)
    assert cmod.switched_on({"on": False}, model, problems, settings) is None
    assert cmod.switched_on({"on": True}, model, problems, settings) == ({"enabled": True}, model["nodes"], True)
    assert cmod.switched_on({"on": True}, model, problems, settings, infra=False)[2] is False
    assert cmod.switched_on({"on": True}, None, problems, settings) == ({"enabled": True}, [], False)


# --- every GPU pool of the reference homelab serves a workload (issue 43): the time-sliced pool a notebook
# profile, the MIG pool a model; a pool that serves nothing is a preflight warning

def test_every_pool_of_the_homelab_serves_an_application(homelab):
    groups, hostvars = homelab
    assert cw.idle_pools(cmod.build(groups, hostvars)) == []
    assert not [w for w in inventory_checks.inventory_warnings(groups, hostvars) if "serves no workload" in w]
    # and the proof places each pool's application there
    proof = cw.proof(groups, hostvars)
    rows = dict((row["workload"], row) for row in proof["rows"])
    assert rows["JupyterHub profile shared-1"]["nodes"] == ["wk-gpu3"]
    assert rows["vLLM model BAAI/bge-base-en-v1.5 (Deployment llm/embed)"]["nodes"] == ["wk-gpu4"]


def test_the_homelab_quotas_grant_no_more_gpus_than_their_pools_have(homelab):
    groups, hostvars = homelab
    model = cmod.build(groups, hostvars)
    capacity = {}
    for node in model["nodes"]:
        for resource, amount in (node.get("allocatable") or {}).items():
            if resource.startswith("nvidia.com/"):
                capacity[resource] = capacity.get(resource, 0) + int(amount)
    quota = hostvars["cp1"]["gpu_cluster_jupyterhub_quota"]
    profiles = hostvars["cp1"]["gpu_cluster_jupyterhub_profiles"]
    pools = hostvars["cp1"]["gpu_cluster_gpu_pools"]
    hard = jupyterhub.namespace_objects({"quota": quota, "pools": pools}, profiles)[0]["spec"]["hard"]
    gpu_hard = dict((name[len("requests."):], int(value)) for name, value in hard.items() if name.startswith("requests.nvidia.com/"))
    assert gpu_hard and all(value <= capacity[resource] for resource, value in gpu_hard.items()), (gpu_hard, capacity)
    for quota_object in cw.pool_quotas(model):
        for name, value in quota_object["spec"]["hard"].items():
            resource = name[len("requests."):]
            if resource in capacity:
                assert int(value) <= capacity[resource], (quota_object, capacity)


@pytest.mark.parametrize("change, pool, resource", [
    # the notebook profile on the time-sliced pool taken out: nothing asks nvidia.com/gpu.shared
    ("hub", "notebooks", "nvidia.com/gpu.shared"),
    # the embedding model back on whole GPUs: nothing asks a MIG slice
    ("llm", "inference", "nvidia.com/mig-1g.10gb"),
])
def test_a_pool_that_serves_nothing_is_a_preflight_warning(homelab, change, pool, resource):
    if change == "hub":
        profiles = [p for p in homelab[1]["cp1"]["gpu_cluster_jupyterhub_profiles"] if p.get("pool") != "notebooks"]
        groups, hostvars = variant(homelab, gpu_cluster_jupyterhub_profiles=profiles)
    else:
        models = [dict((k, v) for k, v in m.items() if k != "pool") for m in homelab[1]["cp1"]["gpu_cluster_llm_models"]]
        groups, hostvars = variant(homelab, gpu_cluster_llm_models=models)
    assert [(p["name"], r) for p, r in cw.idle_pools(cmod.build(groups, hostvars))] == [(pool, resource)]
    warnings = [w for w in inventory_checks.inventory_warnings(groups, hostvars) if "serves no workload" in w]
    assert len(warnings) == 1 and warnings[0].startswith(f"gpu_cluster_gpu_pools: pool {pool} ({resource} on ")
    assert f"pool: {pool}" in warnings[0]
    # a warning, never a problem
    assert not [p for p in inventory_checks.inventory_problems(groups, hostvars) if "serves no workload" in p]


def test_a_model_the_pools_quota_keeps_out_does_not_serve_the_pool(homelab):
    # the MIG pool is reserved for namespace llm: its resource is in the API server's limitedResources, so
    # a namespace without a quota granting it cannot use it (k8s.io/apiserver resourcequota admission,
    # scheduling.uncovered): the embedding model in another namespace does not serve the pool
    models = [dict(m, namespace="search") if m.get("pool") == "inference" else m
              for m in homelab[1]["cp1"]["gpu_cluster_llm_models"]]
    groups, hostvars = variant(homelab, gpu_cluster_llm_models=models)
    assert "inference" in [p["name"] for p, _r in cw.idle_pools(cmod.build(groups, hostvars))]


def test_shared_copies_makes_every_hosts_copy_of_a_group_variable_one_object():
    """Issue 45: Ansible hands each host its own copy of a group variable's list or dict; the model's
    readers get one object for equal copies (judged once, grouped by identity), a host's own value stays
    its own, and the input is left as it was."""
    pools = [{"name": "training", "nodes": ["wk1"], "allocation": "exclusive"}]
    hostvars = {"cp1": {"gpu_cluster_gpu_pools": copy.deepcopy(pools), "gpu_cluster_gpu_pci_mappings": ["a"], "x": 1},
                "wk1": {"gpu_cluster_gpu_pools": copy.deepcopy(pools), "gpu_cluster_gpu_pci_mappings": ["b"]},
                "wk2": {"gpu_cluster_gpu_pools": [dict(pools[0], nodes=["wk2"])]}}
    before = copy.deepcopy(hostvars)
    shared = cmod.shared_copies(hostvars)
    assert shared == hostvars == before
    assert shared["cp1"]["gpu_cluster_gpu_pools"] is shared["wk1"]["gpu_cluster_gpu_pools"]
    assert shared["wk2"]["gpu_cluster_gpu_pools"] is not shared["cp1"]["gpu_cluster_gpu_pools"]
    assert hostvars["wk1"]["gpu_cluster_gpu_pools"] is not hostvars["cp1"]["gpu_cluster_gpu_pools"]
    assert cmod.same_value([1], [(1,), [2]]) is None and cmod.same_value("a", ["a"]) is None


def test_same_value_never_takes_an_undefined_part_for_a_value():
    defined = [1, 2]
    assert cmod.same_value([1, 2], [defined]) is defined
    assert cmod.same_value([1, StrictUndefined(hint="no fact")], [defined]) is None


def test_inventory_value_reads_the_first_host_that_sets_it():
    """groups['all'] order first (Ansible's own), then hosts only hostvars knows, sorted; None when unset."""
    hostvars = {"b": {"x": "from b"}, "a": {"x": "from a", "y": 1}, "z-outside": {"z": "outside"}, "c-outside": {"z": "c"}}
    groups = {"all": ["b", "a"]}
    assert cmod.inventory(groups, hostvars).value("x") == "from b"
    assert cmod.inventory(groups, hostvars).value("y") == 1
    assert cmod.inventory(groups, hostvars).value("z") == "c"
    assert cmod.inventory(groups, hostvars).value("unset") is None
    assert cmod.inventory({}, hostvars).value("x") == "from a" and cmod.inventory(None, None).value("x") is None
    # a host only hostvars knows is read even when `all` names more hosts than hostvars holds
    assert cmod.inventory({"all": ["b", "gone1", "gone2"]}, {"b": {}, "extra": {"z": 1}}).value("z") == 1
