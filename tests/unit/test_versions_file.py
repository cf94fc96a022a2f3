"""versions.yml against everything else that carries a pin: the roles read it, the code constants,
Terraform's versions.tf and the reference inventory agree with it, renovate.json's custom managers
find every entry (their regexes applied here in Python; tests/integration/test_renovate.py runs
Renovate itself), and scripts/refresh-chart-fixtures.py keeps the render tier's chart fixtures in step."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import hcl2
import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import components, storage_components, versions, vllm

REPO = Path(__file__).resolve().parents[2]
ENTRIES = versions.load_versions(str(REPO / "versions.yml"))
VALUES = {key: entry["value"] for key, entry in ENTRIES.items()}
RENOVATE = json.loads((REPO / "renovate.json").read_text())
REFRESH = REPO / "scripts" / "refresh-chart-fixtures.py"


def test_yaml_and_parser_agree():
    assert yaml.safe_load((REPO / "versions.yml").read_text()) == VALUES


def test_every_required_pin_is_there_and_sound():
    assert versions.file_problems(str(REPO / "versions.yml")) == []


def test_code_constants_equal_the_versions_file():
    assert vllm.VLLM_IMAGE == VALUES["vllm_image"]
    assert vllm.OPERATOR_IMAGE == VALUES["vllm_operator_image"]
    assert vllm.OPERATOR_CONTROLLER_IMAGE == VALUES["production_stack_operator_image"]
    defaults = storage_components.fast_scratch_manifests.__kwdefaults__
    assert defaults["image"] == VALUES["local_path_provisioner_image"]
    assert defaults["helper_image"] == VALUES["local_path_provisioner_helper_image"]
    assert inspect.signature(components.cuda_smoke_pod).parameters["image"].default == VALUES["cuda_smoke_image"]
    assert VALUES["gpu_operator_chart"] in components.GPU_OPERATOR_SUPPORTED_VERSIONS


def test_terraform_providers_equal_the_versions_file():
    with open(REPO / "terraform" / "proxmox" / "versions.tf") as handle:
        providers = hcl2.load(handle)["terraform"][0]["required_providers"][0]

    def unquoted(value):  # python-hcl2 8 keeps the string's quotes
        return value.strip('"')
    assert unquoted(providers["proxmox"]["version"]) == "= " + VALUES["terraform_provider_proxmox_version"]
    assert unquoted(providers["local"]["version"]) == "= " + VALUES["terraform_provider_local_version"]
    assert unquoted(providers["proxmox"]["source"]) == ENTRIES["terraform_provider_proxmox_version"]["depName"]
    assert unquoted(providers["local"]["source"]) == ENTRIES["terraform_provider_local_version"]["depName"]


def test_reference_inventory_pins_what_the_versions_file_pins():
    main = yaml.safe_load((REPO / "inventories" / "homelab" / "group_vars" / "all" / "main.yml").read_text())
    assert main["gpu_cluster_k3s_version"] == VALUES["k3s_version"]
    assert main["gpu_cluster_gpu_operator_version"] == VALUES["gpu_operator_chart"]


@pytest.mark.parametrize(("path", "variable", "key"), [
    ("roles/k3s_install/defaults/main.yml", "k3s_install_version", "k3s_version"),
    ("roles/k3s_node/defaults/main.yml", "k3s_node_kube_vip_image", "kube_vip_image"),
    ("roles/gpu_operator/defaults/main.yml", "gpu_operator_version", "gpu_operator_chart"),
    ("roles/storage_components/defaults/main.yml", "storage_components_nfs_chart_version", "nfs_subdir_external_provisioner_chart"),
    ("roles/storage_components/defaults/main.yml", "storage_components_fast_scratch_image", "local_path_provisioner_image"),
    ("roles/storage_components/defaults/main.yml", "storage_components_fast_scratch_helper_image", "local_path_provisioner_helper_image"),
])
def test_roles_read_their_pins_from_the_versions_file(path, variable, key):
    value = yaml.safe_load((REPO / path).read_text())[variable]
    assert f"lookup('cps.gpu_cluster.pinned', '{key}')" in value


def test_verify_images_are_the_versions_file_pins():
    """roles/verify's image defaults (and their argument-spec defaults) are the pins of versions.yml."""
    pins = yaml.safe_load((REPO / "versions.yml").read_text())
    defaults = yaml.safe_load((REPO / "roles" / "verify" / "defaults" / "main.yml").read_text())
    spec = yaml.safe_load((REPO / "roles" / "verify" / "meta" / "argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    for name in ("cuda", "vectoradd", "pytorch", "busybox", "tensorflow"):
        assert defaults[f"verify_image_{name}"] == pins[f"verify_{name}_image"], name
        assert options[f"verify_image_{name}"]["default"] == pins[f"verify_{name}_image"], name


def _js_to_python(regex):
    return regex.replace("(?<", "(?P<").replace("(?P<=", "(?<=").replace("(?P<!", "(?<!")


def renovate_matches():
    """{(file, depName, currentValue, datasource)} the custom managers of renovate.json find."""
    found = set()
    files = [p for p in REPO.rglob("*") if p.is_file() and not any(
        part in (".git", ".venv", "collections", "node_modules", "fixtures", "molecule", ".gpu-cluster") for part in p.relative_to(REPO).parts)]
    for manager in RENOVATE["customManagers"]:
        patterns = [re.compile(p) for p in manager["fileMatch"]]
        for path in files:
            rel = str(path.relative_to(REPO))
            if not any(p.search(rel) for p in patterns):
                continue
            text = path.read_text()
            for match_string in manager["matchStrings"]:
                for match in re.finditer(_js_to_python(match_string), text):
                    groups = match.groupdict()
                    found.add((rel, groups["depName"], groups["currentValue"], groups.get("datasource") or manager.get("datasourceTemplate")))
    return found


def test_renovate_custom_managers_find_every_pin_of_the_versions_file():
    found = {(dep, value, source) for rel, dep, value, source in renovate_matches() if rel == "versions.yml"}
    expected = set()
    for entry in ENTRIES.values():
        value = entry["value"]
        if entry["datasource"] == "docker" and versions.image_parts(value):
            value = versions.image_parts(value)[1]  # an image's tag (a driver version is the tag's prefix itself)
        expected.add((entry["depName"], value, entry["datasource"]))
    assert expected - found == set(), "pins of versions.yml renovate.json does not find"
    assert len(found) == len(ENTRIES)


def test_renovate_finds_the_annotated_pins_of_role_defaults_and_the_inventory():
    """Pins still in a role's defaults (a new role, before its pins move to versions.yml) are found too."""
    found = renovate_matches()
    for path in [*REPO.glob("roles/*/defaults/main.yml"), *REPO.glob("inventories/homelab/group_vars/**/*.yml")]:
        rel = str(path.relative_to(REPO))
        annotated = len(re.findall(r"^\s*#\s*renovate:", path.read_text(), re.M))
        assert len([f for f in found if f[0] == rel]) == annotated, rel
    assert ("inventories/homelab/group_vars/all/main.yml", "k3s-io/k3s", VALUES["k3s_version"], "github-releases") in found


def test_renovate_groups_every_kind_of_pin():
    groups = {rule.get("groupName") for rule in RENOVATE["packageRules"]}
    assert {"k3s", "helm charts", "container images", "terraform and CLIs"} <= groups


# --- scripts/refresh-chart-fixtures.py

def run_refresh(*args):
    return subprocess.run([sys.executable, str(REFRESH), *args], capture_output=True, text=True, timeout=120, check=False)


def test_refresh_check_passes_for_the_pinned_charts():
    done = run_refresh("--check")
    assert done.returncode == 0, done.stdout + done.stderr


FAKE_HELM = r"""#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
open(os.environ["FAKE_HELM_LOG"], "a").write(json.dumps(args) + "\n")
out = args[args.index("--untardir") + 1]
chart = os.path.join(out, args[1])
os.makedirs(os.path.join(chart, "crds"))
open(os.path.join(chart, "Chart.yaml"), "w").write("name: %s\nversion: %s\n" % (args[1], args[args.index("--version") + 1]))
open(os.path.join(chart, "values.yaml"), "w").write("replicaCount: 1\n")
open(os.path.join(chart, "crds", "x.yaml"), "w").write("kind: CustomResourceDefinition\n")
open(os.path.join(chart, "templates.txt"), "w").write("not kept\n")
"""


def test_refresh_pulls_a_bumped_chart_and_drops_the_old_fixture(tmp_path, monkeypatch):
    bumped = (REPO / "versions.yml").read_text().replace("nfs_subdir_external_provisioner_chart: 4.0.18",
                                                         "nfs_subdir_external_provisioner_chart: 4.0.19")
    (tmp_path / "versions.yml").write_text(bumped)
    charts = tmp_path / "charts"
    (charts / "nfs-subdir-external-provisioner-4.0.18").mkdir(parents=True)
    (charts / ("gpu-operator-{}".format(VALUES["gpu_operator_chart"]))).mkdir()
    (charts / ("kube-prometheus-stack-{}".format(VALUES["kube_prometheus_stack_chart"]))).mkdir()
    (charts / ("zero-to-jupyterhub-{}".format(VALUES["jupyterhub_chart"]))).mkdir()
    for key, chart in (("velero_chart", "velero"), ("loki_chart", "loki"), ("alloy_chart", "alloy")):
        (charts / f"{chart}-{VALUES[key]}").mkdir()
    (tmp_path / "management").mkdir()
    for key, chart in (("cert_manager_chart", "cert-manager"), ("rancher_chart", "rancher"), ("fleet_chart", "fleet")):
        (tmp_path / "management" / "{}-v{}-values.yaml".format(chart, VALUES[key].lstrip("v"))).write_text("{}\n")
    sources = tmp_path / "SOURCES.md"
    sources.write_text("# sources\n")
    helm = tmp_path / "helm"
    helm.write_text(FAKE_HELM)
    helm.chmod(0o755)
    monkeypatch.setenv("FAKE_HELM_LOG", str(tmp_path / "helm.log"))
    common = ["--versions", str(tmp_path / "versions.yml"), "--charts-dir", str(charts), "--sources", str(sources), "--helm", str(helm)]

    check = run_refresh("--check", *common)
    assert check.returncode == 1
    assert "missing chart fixture %s" % (charts / "nfs-subdir-external-provisioner-4.0.19") in check.stdout
    assert ("helm pull nfs-subdir-external-provisioner --repo https://kubernetes-sigs.github.io/nfs-subdir-external-provisioner/"
            " --version 4.0.19") in check.stdout

    done = run_refresh(*common)
    assert done.returncode == 0, done.stdout + done.stderr
    new = charts / "nfs-subdir-external-provisioner-4.0.19"
    assert sorted(p.name for p in new.iterdir()) == ["Chart.yaml", "values.yaml", "x.yaml"]
    assert not (charts / "nfs-subdir-external-provisioner-4.0.18").exists()
    assert (charts / ("gpu-operator-{}".format(VALUES["gpu_operator_chart"]))).is_dir()
    calls = [json.loads(line) for line in (tmp_path / "helm.log").read_text().splitlines()]
    assert [c[:6] for c in calls] == [["pull", "nfs-subdir-external-provisioner", "--repo",
                                       "https://kubernetes-sigs.github.io/nfs-subdir-external-provisioner/", "--version", "4.0.19"]]
    assert "helm pull nfs-subdir-external-provisioner" in sources.read_text()
    assert run_refresh("--check", *common).returncode == 0


def test_refresh_of_a_management_chart_keeps_its_single_file_layout(tmp_path, monkeypatch):
    """cert-manager, Rancher and Fleet are rendered from values files in tests/fixtures/management."""
    assert run_refresh("--check").returncode == 0  # the real layout: every fixture where the script looks
    bumped = (REPO / "versions.yml").read_text().replace("rancher_chart: 2.14.4", "rancher_chart: 2.14.5")
    (tmp_path / "versions.yml").write_text(bumped)
    charts, management = tmp_path / "charts", tmp_path / "management"
    for name in ("nfs-subdir-external-provisioner-4.0.18", "gpu-operator-" + VALUES["gpu_operator_chart"],
                 "kube-prometheus-stack-" + VALUES["kube_prometheus_stack_chart"], "zero-to-jupyterhub-" + VALUES["jupyterhub_chart"]):
        (charts / name).mkdir(parents=True)
    management.mkdir()
    for name in ("cert-manager-v1.19.6-values.yaml", "fleet-v0.15.6-values.yaml", "rancher-v2.14.4-values.yaml",
                 "rancher-v2.14.4-values.schema.json", "fleet-crd-v0.15.6-crds.yaml"):
        (management / name).write_text("x: 1\n")
    helm = tmp_path / "helm"
    helm.write_text(FAKE_HELM)
    helm.chmod(0o755)
    monkeypatch.setenv("FAKE_HELM_LOG", str(tmp_path / "helm.log"))
    common = ["--versions", str(tmp_path / "versions.yml"), "--charts-dir", str(charts), "--sources", str(tmp_path / "S.md"),
              "--helm", str(helm)]
    check = run_refresh("--check", *common)
    assert check.returncode == 1 and "missing chart fixture %s" % (management / "rancher-v2.14.5-values.yaml") in check.stdout
    done = run_refresh(*common)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in management.iterdir()) == [
        "cert-manager-v1.19.6-values.yaml", "fleet-crd-v0.15.6-crds.yaml", "fleet-v0.15.6-values.yaml", "rancher-v2.14.5-values.yaml"]
    assert (management / "rancher-v2.14.5-values.yaml").read_text() == "replicaCount: 1\n"
    assert run_refresh("--check", *common).returncode == 0


def test_refresh_without_helm_says_what_to_install(tmp_path):
    bumped = (REPO / "versions.yml").read_text().replace("gpu_operator_chart: v26.7.0", "gpu_operator_chart: v26.8.0")
    (tmp_path / "versions.yml").write_text(bumped)
    done = run_refresh("--versions", str(tmp_path / "versions.yml"), "--charts-dir", str(tmp_path), "--helm", "no-such-helm-binary")
    assert done.returncode == 2
    assert "no helm binary (no-such-helm-binary) on PATH" in done.stderr
