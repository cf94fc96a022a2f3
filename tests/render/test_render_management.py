"""The GitOps loop rendered: management bundles, bundle order, the GitRepo, the review output.

* fleet.yaml of every bundle against Fleet's Bundle CRD (the spec fleet.yaml carries, plus the
  FleetYAML keys ``name``/``labels``/``targetCustomizations``/...), strict;
* the GitRepo against Fleet's GitRepo CRD, cert-manager's Certificate/ClusterIssuer against theirs,
  strict (tests/fixtures/management, origins in tests/fixtures/SOURCES.md);
* Rancher and cert-manager values against the charts' values.yaml (and cert-manager's schema);
* every dependsOn selects an existing bundle, and is what plugin_utils/management.py derives from
  every rendered bundle's content (so no dependency was rendered after its dependent);
* the layout ``<cluster>/<component>/fleet.yaml``, and a second render gives no diff;
* no Secret, and none of the vaulted values, in any rendered file.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import management as m
from conftest import start_render

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "management"
HOMELAB = REPO / "inventories" / "homelab"
PASSWORD = "SENTINEL-bootstrap-password-4711"
TOKEN = "SENTINEL-git-token-0815"
SECRETS = (f"vault_gpu_cluster_rancher_bootstrap_password={PASSWORD}", f"vault_gpu_cluster_fleet_git_password={TOKEN}")
# the review render's helm: answers version and template (the real one renders the charts in test_render_charts.py)
REVIEW_HELM = REPO / "tests" / "fixtures" / "tools" / "helm-template" / "helm"
# The plain homelab is the render tier's shared one (conftest.py; the same arguments as test_render_gpu_pools.py),
# rendered without its vault as render.yml allows; the review render gets the vaulted values, so that no
# rendered file may hold them.
PLAIN = (HOMELAB,)
REVIEW = (HOMELAB, *SECRETS, "gpu_cluster_render_manifests=true", f"management_helm_binary={REVIEW_HELM}")
RENDERS_USED = [PLAIN, REVIEW]  # started with the session (conftest.py)


def render(out, *extra):
    """Start render.yml of the homelab into ``out`` (conftest.py's start_render)."""
    return start_render(out, HOMELAB, *extra)


def finish(proc, what):
    output = proc.communicate(timeout=900)[0]
    assert proc.returncode == 0, f"render of {what} failed:\n{output[-6000:]}"
    return output


def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def renders(renders_cache, tmp_path_factory):
    """{'plain': dir, 'first': snapshot of the first render, 'review': dir with the review output}. The
    second render of the plain homelab goes into a copy of the first one's directory, and must leave it as
    it was (test_rendering_twice_gives_no_diff)."""
    shared, review = renders_cache.get(*PLAIN)[0], renders_cache.get(*REVIEW)[0]
    plain = tmp_path_factory.mktemp("plain") / "render"
    shutil.copytree(shared, plain, symlinks=True)  # the shared render stays as the other files read it
    first = snapshot(plain)
    finish(render(plain), "plain, second time")
    return {"plain": plain, "first": first, "review": review}


@pytest.fixture(scope="module")
def cluster(renders):
    return renders["plain"] / "homelab"


def bundles(cluster_dir):
    return {d.name: yaml.safe_load((d / "fleet.yaml").read_text()) for d in sorted(cluster_dir.iterdir())}


def docs(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def crd_schema(path, kind):
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc["spec"]["names"]["kind"] == kind:
            return doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    raise AssertionError(f"no {kind} in {path.name}")


def strict(schema):
    """The schema with additionalProperties: false wherever it lists properties (what the API server
    prunes, or a typo in a key, fails), keeping x-kubernetes-preserve-unknown-fields objects open."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node \
                    and not node.get("x-kubernetes-preserve-unknown-fields"):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(schema)
    return schema


def fleet_yaml_schema():
    """Fleet's FleetYAML (pkg/apis/fleet.cattle.io/v1alpha1/fleetyaml.go): the Bundle spec plus
    name, labels, targetCustomizations, imageScans and overrideTargets."""
    bundle = crd_schema(FIXTURES / "fleet-crd-v0.15.6-crds.yaml", "Bundle")["properties"]["spec"]
    gitrepo = crd_schema(FIXTURES / "fleet-crd-v0.15.6-crds.yaml", "GitRepo")["properties"]["spec"]
    schema = copy.deepcopy(bundle)
    schema["properties"].update({
        "name": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "targetCustomizations": bundle["properties"]["targets"],
        "imageScans": {"type": "array", "items": {"type": "object"}},
        "overrideTargets": gitrepo["properties"]["targets"],
    })
    return strict(schema)


def validate(instance, schema, what):
    try:
        jsonschema.Draft7Validator(schema).validate(instance)
    except jsonschema.ValidationError as exc:
        pytest.fail(f"{what}: {exc.message} at {list(exc.absolute_path)}")


def test_layout_is_one_directory_with_fleet_yaml_per_component(cluster):
    assert sorted(p.name for p in cluster.iterdir() if not p.is_dir()) == []
    for bundle in cluster.iterdir():
        assert (bundle / "fleet.yaml").is_file(), bundle.name
        assert m.DNS_LABEL.match(bundle.name)
        assert not [p for p in bundle.iterdir() if p.is_dir()], f"{bundle.name} has subdirectories"
    assert {"cert-manager", "cluster-ca", "rancher", "gpu-operator", "nfs-subdir-external-provisioner"} <= set(bundles(cluster))


def test_the_gitrepo_paths_select_exactly_the_bundles(renders, cluster):
    gitrepo = yaml.safe_load((renders["plain"] / "_management" / "homelab" / "gitrepo.yaml").read_text())
    assert gitrepo["spec"]["paths"] == ["homelab/*"]
    matched = {p.name for p in renders["plain"].glob(gitrepo["spec"]["paths"][0]) if p.is_dir()}
    assert matched == set(bundles(cluster))


def test_rendering_twice_gives_no_diff(renders):
    assert snapshot(renders["plain"]) == renders["first"]


def test_every_fleet_yaml_is_valid_against_fleets_schema(cluster):
    schema = fleet_yaml_schema()
    for name, fleet in bundles(cluster).items():
        validate(fleet, schema, f"{name}/fleet.yaml")


def test_strict_fleet_schema_catches_a_typo():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(fleet_yaml_schema()).validate({"defaultNamespace": "x", "dependOn": []})


def test_gitrepo_is_valid_against_fleets_crd(renders):
    gitrepo = yaml.safe_load((renders["plain"] / "_management" / "homelab" / "gitrepo.yaml").read_text())
    schema = strict(crd_schema(FIXTURES / "fleet-crd-v0.15.6-crds.yaml", "GitRepo"))
    validate(gitrepo, schema, "gitrepo.yaml")
    kubernetes_validate.validate({"apiVersion": "v1", "kind": "ConfigMap", "metadata": gitrepo["metadata"]}, "1.33", strict=True)
    assert gitrepo["spec"]["clientSecretName"] == "cluster-maintenance-git-auth"
    assert gitrepo["spec"]["targets"] == [{"name": "local", "clusterName": "local"}]


def test_cert_manager_objects_are_valid_against_their_crds(cluster):
    schemas = {"Certificate": strict(crd_schema(FIXTURES / "cert-manager-v1.19.6-certificates.crd.yaml", "Certificate")),
               "ClusterIssuer": strict(crd_schema(FIXTURES / "cert-manager-v1.19.6-clusterissuers.crd.yaml", "ClusterIssuer"))}
    seen = []
    for path in sorted(cluster.rglob("*.yaml")):
        for doc in docs(path):
            if str(doc.get("apiVersion", "")).startswith("cert-manager.io/"):
                validate(doc, schemas[doc["kind"]], path.name)
                seen.append(doc["kind"])
    assert sorted(seen) == ["Certificate", "ClusterIssuer", "ClusterIssuer"]


def test_plain_objects_are_strict_valid(cluster):
    for name in ("cert-manager", "cluster-ca", "rancher"):
        for path in sorted((cluster / name).glob("[0-9]*.yaml")):
            for doc in docs(path):
                if doc["apiVersion"].startswith("cert-manager.io/"):
                    continue  # CRD objects: validated above
                kubernetes_validate.validate(doc, "1.33", strict=True)


def documented_keys(values_text):
    """Top-level keys a chart documents commented out in values.yaml (``# hostname: rancher.my.org``)."""
    return set(re.findall(r"^# ?([A-Za-z][A-Za-z0-9]*):", values_text, re.M))


def unknown_keys(ours, chart, documented=(), prefix=""):
    missing = []
    for key, value in ours.items():
        path = f"{prefix}{key}"
        if not isinstance(chart, dict) or key not in chart:
            if not (prefix == "" and key in documented):
                missing.append(path)
        elif isinstance(value, dict) and isinstance(chart[key], dict) and chart[key]:
            missing += unknown_keys(value, chart[key], (), path + ".")
    return missing


@pytest.mark.parametrize(("bundle", "values_file", "schema_file"), [
    ("rancher", "rancher-v2.14.4-values.yaml", None),
    ("cert-manager", "cert-manager-v1.19.6-values.yaml", "cert-manager-v1.19.6-values.schema.json"),
])
def test_chart_values_exist_in_the_charts(cluster, bundle, values_file, schema_file):
    helm = bundles(cluster)[bundle]["helm"]
    text = (FIXTURES / values_file).read_text()
    assert unknown_keys(helm["values"], yaml.safe_load(text), documented_keys(text)) == []
    if schema_file:
        jsonschema.validate(helm["values"], json.loads((FIXTURES / schema_file).read_text()))


def test_unknown_chart_keys_would_be_caught():
    text = (FIXTURES / "rancher-v2.14.4-values.yaml").read_text()
    assert "hostname" in documented_keys(text)
    assert unknown_keys({"hostname": "x", "ingress": {"tls": {"sorce": "x"}}, "replica": 3},
                        yaml.safe_load(text), documented_keys(text)) == ["ingress.tls.sorce", "replica"]


def test_rancher_on_the_ha_homelab(cluster):
    values = bundles(cluster)["rancher"]["helm"]["values"]
    assert values["replicas"] == 3
    assert values["hostname"] == "rancher.homelab.lan"
    assert values["ingress"]["ingressClassName"] == "traefik"
    assert values["ingress"]["tls"]["source"] == "rancher"


def test_every_depends_on_selects_an_existing_bundle(cluster):
    assert m.bundle_order_problems(bundles(cluster)) == []


def as_component(bundle_dir):
    fleet = yaml.safe_load((bundle_dir / "fleet.yaml").read_text())
    manifests = [d for p in sorted(bundle_dir.glob("[0-9]*.yaml")) for d in docs(p)]
    return {"name": bundle_dir.name, "manifests": manifests, "chart": {"values": (fleet.get("helm") or {}).get("values") or {}}}


def test_depends_on_is_complete_whatever_the_render_order(cluster):
    """Each bundle's dependsOn holds what the rules derive from all rendered bundles: a dependency
    rendered after its dependent (render.yml's order) would be missing here."""
    every = [as_component(d) for d in sorted(cluster.iterdir())]
    for component in every:
        expected = [m.bundle_selector(n, "homelab") for n in m.bundle_dependencies(component, every)]
        written = bundles(cluster)[component["name"]].get("dependsOn") or []
        ours = [d for d in written if m.BUNDLE_LABEL in (d.get("selector") or {}).get("matchLabels", {})]
        assert ours == expected, component["name"]


def test_the_required_order(cluster):
    order = m.install_order(bundles(cluster))
    for before, after in (("cert-manager", "rancher"), ("cert-manager", "cluster-ca"),
                          ("gpu-operator", "qwen"), ("gpu-operator", "embed")):
        assert order.index(before) < order.index(after), (before, after)


def test_no_secret_in_any_rendered_file(renders):
    for root in (renders["plain"], renders["review"]):
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            text = path.read_text()
            assert PASSWORD not in text and TOKEN not in text, path
            if path.suffix == ".yaml" and "_helm" not in path.parts:
                assert all(d.get("kind") != "Secret" for d in docs(path) if isinstance(d, dict)), path
    rancher = bundles(renders["review"] / "homelab")["rancher"]["helm"]["values"]  # the render with the vault
    assert "bootstrapPassword" not in rancher


def test_review_output_each_in_its_own_directory(renders):
    review = renders["review"]
    helm = sorted(p.stem for p in (review / "_helm" / "homelab").glob("*.yaml"))
    charted = sorted(n for n, f in bundles(review / "homelab").items() if "helm" in f)
    assert helm == charted
    nodes = review / "_nodes" / "homelab"
    hosts = yaml.safe_load((HOMELAB / "hosts.yml").read_text())
    servers = hosts["all"]["children"]["k3s_cluster"]["children"]["k3s_servers"]["hosts"]
    for node in nodes.iterdir():
        config = yaml.safe_load((node / "config.yaml").read_text())
        assert config["node-name"] == node.name
        assert (node / "kube-vip.yaml").is_file() == (node.name in servers)
    first = yaml.safe_load((nodes / sorted(servers)[0] / "config.yaml").read_text())
    assert first["cluster-init"] is True
    for doc in docs(nodes / sorted(servers)[0] / "kube-vip.yaml"):
        kubernetes_validate.validate(doc, "1.33", strict=True)
    tfvars = json.loads((review / "_terraform" / "homelab" / "terraform.tfvars.json").read_text())
    assert tfvars["cluster_name"] == "homelab"
    assert set(tfvars["control_planes"]) == set(servers)


def test_render_manifests_without_helm_fails_naming_the_fix(tmp_path):
    proc = render(tmp_path, "gpu_cluster_render_manifests=true", "management_helm_binary=/nonexistent/helm")
    output = proc.communicate(timeout=900)[0]
    assert proc.returncode != 0
    assert "install the helm" in output and "https://helm.sh/docs/intro/install/" in output
    assert not (tmp_path / "homelab").exists(), "nothing is rendered before the check"
