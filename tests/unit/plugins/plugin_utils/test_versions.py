"""module_utils.versions: the versions file parsed and checked (pinned, well formed, annotated, supported)."""

from __future__ import annotations

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import versions as v

GOOD = """---
# header comment
# renovate: datasource=github-releases depName=k3s-io/k3s
k3s_version: v1.36.4+k3s1
# renovate: datasource=helm depName=gpu-operator registryUrl=https://helm.ngc.nvidia.com/nvidia
gpu_operator_chart: v26.7.0
# renovate: datasource=docker depName=ghcr.io/kube-vip/kube-vip
kube_vip_image: "ghcr.io/kube-vip/kube-vip:v0.9.2"
# renovate: datasource=terraform-provider depName=bpg/proxmox
terraform_provider_proxmox_version: 0.83.0
"""
SUPPORTED = {"gpu_operator_chart": ["v25.10.1", "v26.7.0"]}


def problems(text):
    return [p for p in v.versions_problems(v.parse_versions(text), SUPPORTED) if "is not pinned; add it" not in p]


def test_parse_reads_value_and_annotation():
    entries = v.parse_versions(GOOD)
    assert entries["k3s_version"] == {"value": "v1.36.4+k3s1", "line": 4, "datasource": "github-releases",
                                      "depName": "k3s-io/k3s", "registryUrl": None, "versioning": None}
    assert entries["gpu_operator_chart"]["registryUrl"] == "https://helm.ngc.nvidia.com/nvidia"
    assert entries["kube_vip_image"]["value"] == "ghcr.io/kube-vip/kube-vip:v0.9.2"
    assert problems(GOOD) == []


def test_missing_required_keys_are_named():
    found = v.versions_problems(v.parse_versions(GOOD))
    assert "versions.yml: helm_version is not pinned; add it with its `# renovate:` comment (docs/versions.md)" in found
    assert not [p for p in found if "k3s_version is not pinned" in p]


@pytest.mark.parametrize(("old", "new", "message"), [
    ("k3s_version: v1.36.4+k3s1", "k3s_version: latest", "k3s_version is 'latest', a moving tag; pin a release"),
    ("k3s_version: v1.36.4+k3s1", "k3s_version: v1.36.4", "k3s_version is 'v1.36.4'; pin a K3s release tag like v1.36.4+k3s1"),
    ("k3s_version: v1.36.4+k3s1", "k3s_version: v1.33.5+k3s1",
     "k3s_version is v1.33.5+k3s1, a minor the roles do not support; pin a release of v1.34, v1.35, v1.36"),
    ("gpu_operator_chart: v26.7.0", "gpu_operator_chart: v26.8.0",
     "gpu_operator_chart is v26.8.0, which the roles do not support; pin one of v25.10.1, v26.7.0"),
    ("gpu_operator_chart: v26.7.0", "gpu_operator_chart: 26.7", "gpu_operator_chart is '26.7'; pin a release version like v1.2.3 or 1.2.3"),
    ('kube_vip_image: "ghcr.io/kube-vip/kube-vip:v0.9.2"', "kube_vip_image: ghcr.io/kube-vip/kube-vip:latest",
     "kube_vip_image is 'ghcr.io/kube-vip/kube-vip:latest', a moving tag; pin a release"),
    ('kube_vip_image: "ghcr.io/kube-vip/kube-vip:v0.9.2"', "kube_vip_image: ghcr.io/kube-vip/kube-vip",
     "kube_vip_image is 'ghcr.io/kube-vip/kube-vip'; pin a full image reference registry/repository:tag"),
    ('kube_vip_image: "ghcr.io/kube-vip/kube-vip:v0.9.2"', "kube_vip_image: ghcr.io/other/kube-vip:v0.9.2",
     "kube_vip_image: the renovate comment's depName ghcr.io/kube-vip/kube-vip is not the image's repository ghcr.io/other/kube-vip"),
    ("terraform_provider_proxmox_version: 0.83.0", "terraform_provider_proxmox_version: v0.83.0",
     "terraform_provider_proxmox_version is 'v0.83.0'; pin an exact provider version like 0.83.0"),
    ("# renovate: datasource=github-releases depName=k3s-io/k3s\n", "",
     "k3s_version has no `# renovate: datasource=... depName=...` comment on the line above"),
    ("# renovate: datasource=github-releases depName=k3s-io/k3s\n", "# renovate: depName=k3s-io/k3s\n",
     "k3s_version has a malformed renovate comment '# renovate: depName=k3s-io/k3s'"),
    ("datasource=github-releases depName=k3s-io/k3s", "datasource=github-tags depName=k3s-io/k3s",
     "k3s_version has datasource github-tags; use one of github-releases, helm, docker, terraform-provider"),
    (" registryUrl=https://helm.ngc.nvidia.com/nvidia", "",
     "gpu_operator_chart is a Helm chart without an https registryUrl in its renovate comment"),
    ("# renovate: datasource=github-releases depName=k3s-io/k3s\n", "# renovate: datasource=github-releases depName=k3s-io/k3s\n# note\n",
     "k3s_version has no `# renovate: datasource=... depName=...` comment on the line above"),
])
def test_problems(old, new, message):
    text = GOOD.replace(old, new)
    assert text != GOOD
    found = problems(text)
    assert len(found) == 1 and message in found[0], found
    assert found[0].startswith("versions.yml line ")


@pytest.mark.parametrize(("text", "message"), [
    (GOOD + "k3s_version: v1.36.5+k3s1\n", "k3s_version is pinned twice"),
    (GOOD + "  nested: 1\n", "is not `key: value` at the top level"),
    (GOOD + "- listed\n", "is not `key: value` at the top level"),
])
def test_malformed_file(text, message):
    with pytest.raises(ValueError, match=message):
        v.parse_versions(text)


def test_pinned_and_unknown_key():
    entries = v.parse_versions(GOOD)
    assert v.pinned("kube_vip_image", entries) == "ghcr.io/kube-vip/kube-vip:v0.9.2"
    with pytest.raises(ValueError, match=r"versions.yml pins no 'nope' \(pinned: gpu_operator_chart, k3s_version"):
        v.pinned("nope", entries)


def test_file_problems_of_an_unreadable_file(tmp_path):
    assert v.file_problems(str(tmp_path / "gone.yml"))[0].startswith("%s cannot be read: " % (tmp_path / "gone.yml"))
    bad = tmp_path / "bad.yml"
    bad.write_text("k3s_version: [v1]\n")
    assert "cannot be read" in v.file_problems(str(bad))[0]


def test_the_collection_file_has_no_problems():
    assert v.file_problems() == []


@pytest.mark.parametrize(("version", "warned"), [
    ("v1.33.5+k3s1", True), ("v1.36.4+k3s1", False), ("v1.34.1+k3s2", False), ("garbage", False), (None, False)])
def test_inventory_warning_for_an_untested_minor(version, warned):
    groups = {"k3s_servers": ["cp1"]}
    hostvars = {"cp1": {"gpu_cluster_k3s_version": version}}
    warnings = v.inventory_version_warnings(groups, hostvars)
    assert bool(warnings) is warned
    if warned:
        assert warnings[0].startswith("gpu_cluster_k3s_version is v1.33.5+k3s1; the roles are made for v1.34, v1.35, v1.36")


@pytest.mark.parametrize(("groups", "hostvars"), [(None, None), ({"k3s_servers": [["cp1"]]}, {}), ({"k3s_servers": "cp1"}, {"cp1": None})])
def test_inventory_warning_never_raises(groups, hostvars):
    assert v.inventory_version_warnings(groups, hostvars) == []
