"""Preflight's rules for classes of input (plugin_utils/input_checks.py, issue 27): each rule as a
data table, and each on the reference homelab through inventory_problems, where every one of these
bad values was accepted before (issue 27's held-out inventories: copied values, typos, values
pasted with a newline)."""

from __future__ import annotations

import copy
import sys
import unicodedata

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import input_checks as ic
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import inventory_checks
from test_cluster_model import HOMELAB, load_inventory


@pytest.mark.parametrize("value, found", [
    ("homelab", None),
    ("homelab\n", ("", "homelab\n")),
    ("a\tb", ("", "a\tb")),
    ("nul\x00", ("", "nul\x00")),
    ("del\x7f", ("", "del\x7f")),
    (["ok", "bad\r"], ("[1]", "bad\r")),
    ({"name": "qwen", "model": "x\n"}, (".model", "x\n")),
    ({"key\n": 1}, ("", "key\n")),
    ([{"a": [1, "é ü ok"]}], None),  # non-ASCII text is fine
    (42, None),
])
def test_first_control_character(value, found):
    assert ic._first_control(value) == found


def test_text_problems_hide_secrets_and_skip_pem():
    values = {"gpu_cluster_name": [("homelab\n", ["cp1", "cp2"])],
              "gpu_cluster_fleet_git_password": [("hunter2\n", ["cp1"])],
              "gpu_cluster_rancher_tls_certificate": [("-----BEGIN CERTIFICATE-----\nMII\n", ["cp1"])],
              "gpu_cluster_fleet_git_ssh_private_key": [("-----BEGIN OPENSSH PRIVATE KEY-----\n", ["cp1"])],
              "k3s_node_labels": [(["gpu=true\n"], ["wk1"])],
              "some_other_tool_var": [("x\n", ["cp1"])]}
    problems = ic.text_problems(values, ["k3s_node_labels"])
    assert len(problems) == 3, problems
    assert problems[0].startswith("cp1: gpu_cluster_fleet_git_password holds a newline")
    assert "hunter2" not in " ".join(problems)
    assert problems[1].startswith("cp1 (and 1 other host(s)): gpu_cluster_name is 'homelab\\n', with a newline")
    assert problems[2].startswith("wk1: k3s_node_labels[0] is 'gpu=true\\n'")


@pytest.mark.parametrize("value, refused", [(True, False), (False, False), ("true", True), ("no", True),
                                            (1, True), (None, True)])
def test_switches_are_yaml_booleans(value, refused):
    problems = ic.switch_problems({"gpu_cluster_jupyterhub_enabled": [(value, ["cp1"])],
                                   "ansible_become_enabled": [("yes", ["cp1"])]})
    assert bool(problems) is refused
    if refused:
        assert problems == [f"cp1: gpu_cluster_jupyterhub_enabled is {value!r}; use true or false (a YAML boolean: "
                            "a string such as \"false\" is true to Ansible; on the command line "
                            "-e '{\"gpu_cluster_jupyterhub_enabled\": false}', not -e gpu_cluster_jupyterhub_enabled=false)"]


@pytest.mark.parametrize("url, refused", [
    ("https://git.homelab.lan/homelab/cluster.git", None),
    ("ssh://git@git.homelab.lan:2222/homelab/cluster.git", None),
    ("git@github.com:homelab/cluster.git", None),
    ("http://git.homelab.lan/x.git", "use an https:// or ssh:// Git URL"),
    ("git://git.homelab.lan/x.git", "use an https:// or ssh:// Git URL"),
    ("file:///srv/git/x.git", "use an https:// or ssh:// Git URL"),
    ("/srv/git/x.git", "use an https:// or ssh:// Git URL"),
    ("https://user:ghp_token@github.com/x.git", "carries credentials in the URL"),
    ("https://ghp_token@github.com/x.git", "carries credentials in the URL"),
    ("ssh://git:pw@host/x.git", "carries credentials in the URL"),
    ("https://git.homelab.lan/x.git\n", "use an https:// or ssh:// Git URL"),
    ("https:///x.git", "names no host"),
    ("", "use an https:// or ssh:// Git URL"),
])
def test_git_urls(url, refused):
    problem = ic.git_url_problem("gpu_cluster_fleet_repo", url)
    if refused is None:
        assert problem is None
    else:
        assert refused in problem
        if "credentials" in refused:
            assert "token" not in problem and "pw" not in problem  # the URL is not shown


@pytest.mark.parametrize("ref, valid", [
    ("main", True), ("release/2026-11", True), ("feature/gpu.pools", True),
    ("main..x", False), ("my branch", False), ("main\n", False), ("-main", False), ("main/", False),
    ("main.", False), ("a//b", False), (".hidden", False), ("a/.b", False), ("main.lock", False), ("a@{1}", False),
    ("@", False), ("a~1", False), ("a^", False), ("a:b", False), ("a?", False), ("a*", False), ("a[b", False),
    ("a\\b", False), ("", False), (None, False),
])
def test_git_refs_as_git_check_ref_format_decides(ref, valid):
    assert (ic.ref_problem("gpu_cluster_fleet_branch", ref) is None) is valid


def test_two_hosts_one_node_name():
    hostvars = {"wk1": {}, "wk2": {"gpu_cluster_node_name": "WK1"}, "wk3": {"gpu_cluster_node_name": "gpu3"}}
    assert ic.node_name_problems(["wk1", "wk2", "wk3"], hostvars) == [
        "wk1, wk2: become the same Kubernetes node wk1 (gpu_cluster_node_name, else the host name); give each host "
        "its own node name"]


@pytest.mark.parametrize("ids, needles", [
    (["10de:20b5"], []),
    (["10de:20b5", "10de:1aef"], []),  # an id of no listed model (an audio function): not judged
    (["10DE:20B5"], []),
    (["10de:2236"], ["holds 10de:2236, the PCI id of NVIDIA A10", "lacks 10de:20b5, the PCI id of NVIDIA A100 80GB PCIe"]),
    (["10de:20b5", "10de:1eb8"], ["holds 10de:1eb8, the PCI id of Tesla T4"]),
])
def test_pci_ids_belong_to_the_declared_models(ids, needles):
    hostvars = {"pve1": {"gpu_cluster_gpu_pci_ids": ids},
                "wk1": {"gpu_cluster_gpu_model": "NVIDIA A100 80GB PCIe", "gpu_cluster_gpu_count": 2}}
    problems = ic.pci_model_problems(["pve1"], ["wk1"], hostvars)
    assert len(problems) == len(needles), problems
    for problem, needle in zip(problems, needles):
        assert problem.startswith("pve1: gpu_cluster_gpu_pci_ids ") and needle in problem


TWO_HOSTS = {
    "pve1": {"gpu_cluster_gpu_pci_ids": ["10de:20b5"],
             "gpu_cluster_gpu_pci_devices": [{"name": "a100-0", "address": "0000:17:00.0"}]},
    # the same PCI address on another host: its own card (a Proxmox mapping has one entry per node)
    "pve2": {"gpu_cluster_gpu_pci_ids": ["10de:2331"],
             "gpu_cluster_gpu_pci_devices": [{"name": "h100-0", "address": "0000:17:00.0"}]},
    "wk1": {"gpu_cluster_gpu_model": "NVIDIA A100 80GB PCIe", "gpu_cluster_gpu_count": 1, "gpu_cluster_gpu_pci_mappings": ["a100-0"]},
    "wk2": {"gpu_cluster_gpu_model": "NVIDIA H100 PCIe", "gpu_cluster_gpu_count": 1, "gpu_cluster_gpu_pci_mappings": ["h100-0"]},
}


def test_each_proxmox_host_claims_only_the_gpus_of_its_own_workers():
    """Issue 43: with two Proxmox hosts each host used to be asked for every worker's model id."""
    hostvars = copy.deepcopy(TWO_HOSTS)
    assert ic.gpu_hosts(["pve1", "pve2"], ["wk1", "wk2"], hostvars) == {"wk1": ["pve1"], "wk2": ["pve2"]}
    assert ic.pci_model_problems(["pve1", "pve2"], ["wk1", "wk2"], hostvars) == []
    # the H100's id on pve1, where no H100 worker is, and pve2 without it
    hostvars["pve1"]["gpu_cluster_gpu_pci_ids"] = ["10de:20b5", "10de:2331"]
    hostvars["pve2"]["gpu_cluster_gpu_pci_ids"] = ["10de:20b5"]
    assert ic.pci_model_problems(["pve1", "pve2"], ["wk1", "wk2"], hostvars) == [
        "pve1: gpu_cluster_gpu_pci_ids holds 10de:2331, the PCI id of NVIDIA H100 PCIe, but no GPU worker on this host "
        "declares that model (gpu_cluster_gpu_model: NVIDIA A100 80GB PCIe); list the ids of the GPUs the workers get",
        "pve2: gpu_cluster_gpu_pci_ids holds 10de:20b5, the PCI id of NVIDIA A100 80GB PCIe, but no GPU worker on this "
        "host declares that model (gpu_cluster_gpu_model: NVIDIA H100 PCIe); list the ids of the GPUs the workers get",
        "pve2: gpu_cluster_gpu_pci_ids lacks 10de:2331, the PCI id of NVIDIA H100 PCIe that wk2 declare "
        "(gpu_cluster_gpu_model); vfio-pci would not claim those GPUs: add it"]


def test_a_worker_whose_mappings_name_no_device_is_placed_nowhere_and_judged_nowhere():
    hostvars = copy.deepcopy(TWO_HOSTS)
    hostvars["wk2"]["gpu_cluster_gpu_pci_mappings"] = ["gone-0"]  # its own check names the mapping
    assert ic.gpu_hosts(["pve1", "pve2"], ["wk1", "wk2"], hostvars)["wk2"] == []
    assert ic.pci_model_problems(["pve1", "pve2"], ["wk1", "wk2"], hostvars) == []


def test_provision_refuses_a_worker_whose_gpus_are_on_another_host_than_the_first():
    """terraform/proxmox creates every VM on var.proxmox_node (the first Proxmox host): wk2's VM there
    would carry a PCI mapping with no entry for pve1, which Proxmox refuses when the VM starts."""
    hostvars = copy.deepcopy(TWO_HOSTS)
    assert ic.provision_placement_problems(["pve1", "pve2"], ["wk1", "wk2"], hostvars) == [
        "wk2: its GPUs are on pve2 (gpu_cluster_gpu_pci_mappings), but provision.yml creates every VM on pve1, the first "
        "host of proxmox_hosts (placing VMs on several Proxmox hosts is not built yet), and refuses it; create those VMs "
        "yourself (gpu_cluster_provision_enabled: false) or give them GPUs of pve1"]
    for name, value in (("gpu_cluster_provision_enabled", False), ("gpu_cluster_lab", True),
                        ("gpu_cluster_terraform_dir", "/srv/my-terraform")):
        assert ic.provision_placement_problems(["pve1", "pve2"], ["wk1", "wk2"], dict(hostvars, pve1=dict(hostvars["pve1"], **{name: value}))) == []
    assert ic.provision_placement_problems(["pve1"], ["wk1"], hostvars) == []


# ------------------------------------------------------------------------------ on the homelab
@pytest.fixture(scope="module")
def homelab():
    groups, hostvars = load_inventory(HOMELAB)
    for variables in hostvars.values():  # as Ansible templates it
        if "gpu_cluster_kubeconfig" in variables:
            variables["gpu_cluster_kubeconfig"] = "/home/me/.kube/homelab.yaml"
    assert inventory_checks.inventory_problems(groups, hostvars) == []
    return groups, hostvars


def _everywhere(name, value):
    def change(hostvars):
        for variables in hostvars.values():
            if name in variables:
                variables[name] = copy.deepcopy(value)
    return change


def _on(host, **values):
    def change(hostvars):
        hostvars[host].update(copy.deepcopy(values))
    return change


def _model(**fields):
    def change(hostvars):
        for variables in hostvars.values():
            if "gpu_cluster_llm_models" in variables:
                models = copy.deepcopy(variables["gpu_cluster_llm_models"])
                models[0].update(fields)
                variables["gpu_cluster_llm_models"] = models
    return change


# Each bad value preflight accepted before issue 27, and the message it now gets.
CASES = [
    ("a model name pasted with its newline", _model(name="qwen\n"),
     "gpu_cluster_llm_models[0].name is 'qwen\\n', with a newline or another control character"),
    ("a JupyterHub host with a newline", _everywhere("gpu_cluster_jupyterhub_host", "jupyter.lan\n"),
     "gpu_cluster_jupyterhub_host is 'jupyter.lan\\n', with a newline"),
    ("a Rancher hostname with a tab", _everywhere("gpu_cluster_rancher_hostname", "rancher.lan\t"),
     "gpu_cluster_rancher_hostname is 'rancher.lan\\t', with a newline"),
    ("a vaulted password with a newline", _everywhere("gpu_cluster_rancher_bootstrap_password", "s3cret-bootstrap\n"),
     "gpu_cluster_rancher_bootstrap_password holds a newline or another control character (the value is a secret"),
    ("a switch as a string", _everywhere("gpu_cluster_jupyterhub_enabled", "false"),
     "gpu_cluster_jupyterhub_enabled is 'false'; use true or false"),
    ("an IPv6 service network on IPv4 nodes", _everywhere("gpu_cluster_service_cidr", "fd00:43::/112"),
     "gpu_cluster_service_cidr fd00:43::/112 is IPv6 but the nodes are IPv4"),
    ("two hosts, one node name", _on("wk-gpu2", gpu_cluster_node_name="wk-gpu1"),
     "wk-gpu1, wk-gpu2: become the same Kubernetes node wk-gpu1"),
    ("the PCI id of another model", _everywhere("gpu_cluster_gpu_pci_ids", ["10de:2236"]),
     "pve1: gpu_cluster_gpu_pci_ids holds 10de:2236, the PCI id of NVIDIA A10"),
    ("a plain-http Git URL", _everywhere("gpu_cluster_fleet_repo", "http://git.homelab.lan/x.git"),
     "gpu_cluster_fleet_repo is 'http://git.homelab.lan/x.git'; use an https:// or ssh:// Git URL"),
    ("a Git URL with a token", _everywhere("gpu_cluster_fleet_repo", "https://bot:ghp_secret@git.lan/x.git"),
     "gpu_cluster_fleet_repo carries credentials in the URL"),
    ("an invalid Git ref", _everywhere("gpu_cluster_fleet_branch", "main..next"),
     "gpu_cluster_fleet_branch is 'main..next', not a valid Git branch name"),
    # issue 43: Unicode's other line breaks and invisible characters, in names, passwords and e-mail addresses
    ("a model name with U+0085 (NEL)", _model(name="qwen\u0085"),
     "gpu_cluster_llm_models[0].name is 'qwen\\x85', with a newline or another control character"),
    ("a Rancher hostname with U+2028 (line separator)", _everywhere("gpu_cluster_rancher_hostname", "rancher.lan\u2028"),
     "gpu_cluster_rancher_hostname is 'rancher.lan\\u2028', with a newline"),
    ("an e-mail address with a zero-width space", _on("cp1", gpu_cluster_rancher_letsencrypt_email="ops\u200b@lab.example"),
     "gpu_cluster_rancher_letsencrypt_email is 'ops\\u200b@lab.example', with a newline"),
    ("a vaulted password with U+2029 (paragraph separator)", _everywhere("gpu_cluster_rancher_bootstrap_password", "s3cret-bootstrap\u2029"),
     "gpu_cluster_rancher_bootstrap_password holds a newline or another control character (the value is a secret"),
    # issue 43: value forms the consumers refuse, judged on every host that sets them
    ("an ingress class that is not a DNS name", _everywhere("gpu_cluster_ingress_class", "Traefik!"),
     "gpu_cluster_ingress_class is 'Traefik!'; name an IngressClass"),
    ("an e-mail address without '@'", _on("cp1", gpu_cluster_rancher_letsencrypt_email="ops.lab.example"),
     "cp1: gpu_cluster_rancher_letsencrypt_email is 'ops.lab.example'; use an e-mail address"),
    ("a zero Prometheus retention", _on("cp2", gpu_cluster_monitoring_retention="0d"),
     "cp2: gpu_cluster_monitoring_retention is '0d'; use a Prometheus duration above zero"),
    ("a zero monitoring volume", _on("cp2", gpu_cluster_monitoring_storage_size="0Gi"),
     "gpu_cluster_monitoring_storage_size is '0Gi'; use a whole number of Gi or Ti above zero"),
    ("a home volume of zero", _everywhere("gpu_cluster_jupyterhub_home_size", "0Gi"),
     "gpu_cluster_jupyterhub_home_size is '0Gi'; use a size above zero"),
    ("a home volume in GB", _everywhere("gpu_cluster_jupyterhub_home_size", "512GB"),
     "gpu_cluster_jupyterhub_home_size is '512GB'; use a size above zero"),
    ("a hub quota of -1 GPUs", _everywhere("gpu_cluster_jupyterhub_quota", {"gpu": -1}),
     "gpu_cluster_jupyterhub_quota is {'gpu': -1}; use a mapping"),
    ("a hub quota of 512GB memory", _everywhere("gpu_cluster_jupyterhub_quota", {"gpu": 2, "memory": "512GB"}),
     "gpu_cluster_jupyterhub_quota is {'gpu': 2, 'memory': '512GB'}; use a mapping"),
    ("a model in kube-system", _model(namespace="kube-system"),
     "model qwen is served from namespace kube-system, which belongs to Kubernetes itself"),
    ("a model on JupyterHub's host", _model(ingress_host="jupyter.127.0.0.1.nip.io"),
     "model qwen has ingress_host jupyter.127.0.0.1.nip.io, which JupyterHub (gpu_cluster_jupyterhub_host) already serves"),
    ("a model on a pool reserved for another namespace", _model(pool="inference", namespace="team"),
     "model qwen: pool inference is reserved for namespace(s) llm, not team"),
]


@pytest.mark.parametrize("change, message", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_the_homelab_with_one_bad_value_is_refused(homelab, change, message):
    groups, hostvars = copy.deepcopy(homelab)
    change(hostvars)
    problems = inventory_checks.inventory_problems(groups, hostvars)
    assert any(message in problem for problem in problems), problems
    assert "s3cret-bootstrap" not in " ".join(problems) and "ghp_secret" not in " ".join(problems)


INVISIBLE = {0x061C, 0x200B, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2060, 0x2066, 0x2067, 0x2068,
             0x2069, 0xFEFF}


def test_control_class_is_unicodes_controls_separators_and_invisible_characters():
    """CONTROL_RE against Python's Unicode database: every character of the general categories Cc (controls),
    Zl and Zp (line and paragraph separators), and the bidirectional and zero-width characters INVISIBLE
    (all of category Cf); nothing else. The joiners U+200C/U+200D stay allowed (scripts, emoji)."""
    wanted = ("Cc", "Zl", "Zp")
    missed, extra = [], []
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        matched = ic.CONTROL_RE.match(char) is not None
        expected = unicodedata.category(char) in wanted or code in INVISIBLE
        if expected and not matched:
            missed.append(hex(code))
        elif matched and not expected:
            extra.append(hex(code))
    assert not missed and not extra, (missed[:10], extra[:10])
    assert all(unicodedata.category(chr(code)) == "Cf" for code in INVISIBLE)
    assert ic.CONTROL_RE.search("é ü 日本 ok \u200d") is None


def test_unique_keeps_the_first_of_each_in_order():
    assert ic.unique(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
    assert ic.unique(iter(())) == []
