"""Render the real charts (issue 19): every Helm component of a rendered Fleet bundle goes through
Helm's own template engine with the values we render, and every resulting manifest is validated
strictly: built-in kinds against the cluster's Kubernetes OpenAPI schema (kubernetes-validate,
unknown fields fail), custom resources against the openAPIV3Schema of the chart's CRDs (made
strict the way the API server prunes: undeclared fields fail). A values key of the wrong type
(a chart's values.schema.json, a CRD field type) or a template that fails is a test failure.

The charts are vendored under tests/fixtures/charts/helm/<chart>-<version>/ with their subcharts
and licence (origins in tests/fixtures/SOURCES.md). Helm is the Helm v4 Go SDK shipped in the
helm-python-sdk wheel (``helm_python``, pinned in requirements-dev.txt): the same engine as
``helm template``, offline (``lookup`` returns nothing), without a helm executable.

A component is one row of CHARTS, and a rendered Helm bundle without a row fails the suite; the
components installed directly, never as a bundle (Fleet alone), are rows of DIRECT.
The kube-vip manifest the k3s servers apply is rendered from its role template and validated too.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import helm_python  # helm-python-sdk (requirements-dev.txt): no silent skip without it
import helm_python.errors
import jsonschema
import kubernetes_validate
import pytest
import yaml
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import (
    cluster_model,
    cluster_workloads,
    gpu_monitoring,
    gpu_pools,
    jupyterhub,
    management,
    scheduling,
    versions,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
HELM_CHARTS = FIXTURES / "charts" / "helm"
HOMELAB = REPO / "inventories" / "homelab"

# The Kubernetes minor the homelab runs: the one of the k3s version versions.yml pins (the homelab
# inventory pins the same, tests/unit/test_versions_file.py), so the schemas follow a k3s bump.
HOMELAB_K8S = ".".join(yaml.safe_load((REPO / "versions.yml").read_text())["k3s_version"].lstrip("v").split(".")[:2])

# The renders the rows take their values from: inventory, extra vars, Kubernetes schema version.
RENDERS = {
    "homelab": ((HOMELAB,), HOMELAB_K8S),
    # the legacy toolkit settings: the seed's operator on a k3s older than containerd 2
    # (the arguments of test_render_components' legacy render: renders_cache runs it once for both)
    "legacy": ((HOMELAB, "gpu_cluster_gpu_operator_version=v25.10.1", "gpu_cluster_k3s_version=v1.30.9+k3s1",
                "gpu_cluster_preflight=false",
                json.dumps({"gpu_cluster_pod_security_exempt_namespaces": ["jupyterhub", "kube-system"]})), "1.30"),
}

RENDERS_USED = [args for args, _version in RENDERS.values()]  # started with the session (conftest.py)

# (render, bundle) -> (chart dir under tests/fixtures/charts/helm, namespace the bundle deploys to)
CHARTS = {
    ("homelab", "gpu-operator"): ("gpu-operator-v26.7.0", "gpu-operator"),
    ("homelab", "nfs-subdir-external-provisioner"): ("nfs-subdir-external-provisioner-4.0.18", "nfs-provisioner"),
    ("legacy", "gpu-operator"): ("gpu-operator-v25.10.1", "gpu-operator"),
    ("legacy", "nfs-subdir-external-provisioner"): ("nfs-subdir-external-provisioner-4.0.18", "nfs-provisioner"),
    ("homelab", "jupyterhub"): ("jupyterhub-4.4.0", "jupyterhub"),
    ("homelab", "monitoring"): ("kube-prometheus-stack-88.5.3", "monitoring"),
    ("legacy", "jupyterhub"): ("jupyterhub-4.4.0", "jupyterhub"),
    ("legacy", "monitoring"): ("kube-prometheus-stack-88.5.3", "monitoring"),
    # the management phase (issue 14; the homelab switches it on), vendored at its pins
    ("homelab", "cert-manager"): ("cert-manager-v1.19.6", "cert-manager"),
    ("homelab", "rancher"): ("rancher-2.14.4", "cattle-system"),
    ("legacy", "cert-manager"): ("cert-manager-v1.19.6", "cert-manager"),
    ("legacy", "rancher"): ("rancher-2.14.4", "cattle-system"),
}
# Components delivered directly, never as a Fleet bundle: Fleet alone (gpu_cluster_management_mode
# fleet) installs fleet-crd and fleet with Helm, since a bundle cannot upgrade the agent that applies
# it (management.fleet_bundled_components). They are rendered with the values the management role
# gives them (management.management_components, the function its vars call) at the pinned version.
# component -> (chart dir, namespace)
DIRECT = {
    "fleet-crd": ("fleet-crd-0.15.6", "cattle-fleet-system"),
    "fleet": ("fleet-0.15.6", "cattle-fleet-system"),
}


@pytest.fixture(scope="module")
def rendered(renders_cache):
    """{render name: {bundle: fleet.yaml dict}} of playbooks/render.yml for each of RENDERS."""
    result = {}
    for name, (args, _version) in RENDERS.items():
        out = renders_cache.get(*args)[0]
        result[name] = {path.parent.name: yaml.safe_load(path.read_text()) for path in sorted(out.glob("*/*/fleet.yaml"))}
        assert result[name], f"render {name} produced no Fleet bundle"
    return result


# ---- strict CRD validation --------------------------------------------------------------------

def strict_schema(schema):
    """An openAPIV3Schema as a JSON Schema the way the API server reads it: an object that declares
    properties accepts no other field (they would be pruned, i.e. silently lost) unless it says
    x-kubernetes-preserve-unknown-fields; ``nullable`` allows null; int-or-string has no type."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        for value in node.values():
            walk(value)
        if node.get("nullable") and "type" in node:
            node["type"] = [node["type"], "null"]
        if node.get("x-kubernetes-int-or-string") and "anyOf" not in node:
            node.pop("type", None)
        if ("properties" in node and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")):
            node["additionalProperties"] = False
    walk(schema)
    return schema


def crd_schemas(documents):
    """{(apiVersion, kind): strict JSON Schema} of the CustomResourceDefinitions among documents."""
    schemas = {}
    for doc in documents:
        if not doc or doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc["spec"]
        for version in spec["versions"]:
            openapi = (version.get("schema") or {}).get("openAPIV3Schema")
            assert openapi, f"CRD {doc['metadata']['name']} {version['name']} has no schema"
            schemas[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = strict_schema(openapi)
    return schemas


def as_stored(value, schema):
    """A custom resource as the API server validates it: null fields the schema does not declare
    nullable are dropped, and missing fields with a schema ``default`` are defaulted (a chart's
    ``name: null`` or an omitted ``defaultRuntime`` that has a default is no error there)."""
    if isinstance(value, dict):
        properties = (schema or {}).get("properties") or {}
        extra = (schema or {}).get("additionalProperties")
        result = {}
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else {})
            if item is None and not (sub or {}).get("nullable"):
                continue
            result[key] = as_stored(item, sub)
        for key, sub in properties.items():
            if key not in result and "default" in sub:
                result[key] = copy.deepcopy(sub["default"])
        return result
    if isinstance(value, list):
        return [as_stored(item, (schema or {}).get("items") or {}) for item in value]
    return value


def validate_custom(doc, schema):
    doc = as_stored(doc, schema)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    return [f"{error.message} at {'/'.join(str(p) for p in error.path)}" for error in errors]


# ---- Helm ----------------------------------------------------------------------------------------

class ManifestLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML as the API server reads it: PyYAML's YAML 1.1 resolver tags a plain ``=`` as the
    ``!!value`` type it cannot construct, while Go's YAML reads it as the string "=" (the Prometheus
    operator CRDs' relabel action enum lists ``=``). libyaml for speed: the CRDs are megabytes."""


ManifestLoader.add_constructor("tag:yaml.org,2002:value", ManifestLoader.construct_yaml_str)


# How Helm splits a rendered template into manifests (releaseutil.SplitManifests): a ``---`` at a
# line start ends a document even without a blank after it (cert-manager's ``---# comment``).
HELM_SEPARATOR = re.compile(r"(?:^|\s*\n)---\s*")


def load_all(text):
    return [doc for part in HELM_SEPARATOR.split(text) for doc in yaml.load_all(part, Loader=ManifestLoader) if doc]


def load_chart(chart_dir):
    path = HELM_CHARTS / chart_dir
    assert (path / "Chart.yaml").is_file(), f"chart {chart_dir} is not vendored under {HELM_CHARTS}"
    return helm_python.Chart.load(str(path))


def helm_template(chart_dir, values, release, namespace):
    """[(template path, document)] of the chart rendered like ``helm template`` (hooks included),
    and the chart's CRDs (crds/ of the chart and its subcharts)."""
    chart = load_chart(chart_dir)
    rendered = chart.render(values, name=release, namespace=namespace, is_install=True)
    docs = []
    for path, text in sorted(rendered.items()):
        if not path.endswith((".yaml", ".yml")):
            continue  # NOTES.txt
        docs += [(path, doc) for doc in load_all(text)]
    crds = [doc for crd in chart.crds for doc in load_all(crd["data"])]
    return docs, crds


# Custom resources a chart renders whose CRDs another chart installs: chart dir -> (chart dir, values)
# whose rendered CustomResourceDefinitions validate them (the cluster has them before this chart).
CRDS_FROM = {
    "rancher-2.14.4": ("cert-manager-v1.19.6", {"crds": {"enabled": True}}),
}


def crds_from_other_charts(chart_dir):
    if chart_dir not in CRDS_FROM:
        return []
    other, values = CRDS_FROM[chart_dir]
    docs, crds = helm_template(other, values, other.split("-v")[0], "default")
    return crds + [doc for _path, doc in docs if doc["kind"] == "CustomResourceDefinition"]


def validation_problems(docs, crds, k8s_version):
    schemas = crd_schemas(crds + [doc for _path, doc in docs])
    problems = []
    for path, doc in docs + [("crds/", crd) for crd in crds]:
        key = (doc.get("apiVersion"), doc.get("kind"))
        where = f"{path}: {key[1]} {doc.get('metadata', {}).get('name')}"
        if key in schemas:
            problems += [f"{where}: {p}" for p in validate_custom(doc, schemas[key])]
            continue
        try:
            kubernetes_validate.validate(doc, k8s_version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            problems.append(f"{where}: {exc.message} at {list(exc.path)}")
        except kubernetes_validate.SchemaNotFoundError:
            problems.append(f"{where}: no schema for {key[0]} {key[1]} in Kubernetes {k8s_version} nor in the chart's CRDs")
    return problems


# Defects of a pinned upstream chart that the strict validation finds: (chart dir, words of the
# problem) -> why it is accepted. Each must still be found (else remove it), nothing else passes.
NFD_PRUNE_DEFECT = ("Job gpu-operator-node-feature-discovery-prune: Additional properties are not allowed "
                    "('resources' was unexpected) at ['spec', 'template', 'spec']")
KNOWN_UPSTREAM_DEFECTS = {
    ("gpu-operator-v25.10.1", NFD_PRUNE_DEFECT): (
        "node-feature-discovery v0.18.2's post-delete-job.yaml puts the container's resources at the pod spec level "
        "(fixed in 0.19.0, the subchart of v26.7.0); the API server drops the unknown field with a warning. Only the "
        "legacy render (the seed's operator) has it."),
}


def without_known_defects(chart_dir, problems):
    known = [words for (chart, words) in KNOWN_UPSTREAM_DEFECTS if chart == chart_dir]
    for words in known:
        assert any(words in problem for problem in problems), (
            f"{chart_dir} no longer has the known defect {words!r}: remove it from KNOWN_UPSTREAM_DEFECTS")
    return [problem for problem in problems if not any(words in problem for words in known)]


def render_row(rendered, render, bundle):
    chart_dir, namespace = CHARTS[(render, bundle)]
    fleet = rendered[render][bundle]
    helm = fleet["helm"]
    chart = yaml.safe_load((HELM_CHARTS / chart_dir / "Chart.yaml").read_text())
    assert (chart["name"], str(chart["version"])) == (helm["chart"], str(helm["version"])), (
        f"{bundle} pins {helm['chart']} {helm['version']} but the row renders {chart_dir}: vendor the pinned chart")
    assert fleet["defaultNamespace"] == namespace
    return helm_template(chart_dir, helm.get("values") or {}, helm.get("releaseName", bundle), namespace)


# ---- tests ---------------------------------------------------------------------------------------

def test_every_helm_bundle_has_a_row(rendered):
    helm_bundles = {(render, bundle) for render, fleets in rendered.items()
                    for bundle, fleet in fleets.items() if "helm" in fleet and fleet["helm"].get("chart")}
    assert not helm_bundles - set(CHARTS), (
        f"Helm bundles without a row in CHARTS (vendor its chart): {sorted(helm_bundles - set(CHARTS))}")
    assert not set(CHARTS) - helm_bundles, f"rows whose bundle is not rendered: {sorted(set(CHARTS) - helm_bundles)}"


@pytest.mark.parametrize(("render", "bundle"), sorted(CHARTS), ids=lambda v: v)
def test_chart_renders_strict_valid(rendered, render, bundle):
    docs, crds = render_row(rendered, render, bundle)
    assert docs, f"{bundle}: the chart rendered nothing"
    chart_dir = CHARTS[(render, bundle)][0]
    problems = validation_problems(docs, crds + crds_from_other_charts(chart_dir), RENDERS[render][1])
    assert without_known_defects(chart_dir, problems) == []


def test_gpu_operator_clusterpolicy_is_checked_against_the_full_crd(rendered):
    """The ClusterPolicy the chart renders from our values (the CDI and the legacy toolkit settings
    alike) passes the full ClusterPolicy schema, nested fields included."""
    for render, env_name in (("homelab", "CONTAINERD_SOCKET"), ("legacy", "CONTAINERD_CONFIG")):
        docs, crds = render_row(rendered, render, "gpu-operator")
        policies = [doc for _path, doc in docs if doc["kind"] == "ClusterPolicy"]
        assert len(policies) == 1, render
        policy = policies[0]
        assert env_name in {e["name"] for e in policy["spec"]["toolkit"]["env"]}, render
        schema = crd_schemas(crds)[("nvidia.com/v1", "ClusterPolicy")]
        assert validate_custom(policy, schema) == [], render
        # the driver of versions.yml, upgraded node by node with the GPU pods stopped first (issue 30)
        driver = policy["spec"]["driver"]
        assert driver["version"] == str(yaml.safe_load((REPO / "versions.yml").read_text())["gpu_driver_version"]), render
        assert driver["upgradePolicy"]["autoUpgrade"] is True and driver["upgradePolicy"]["maxParallelUpgrades"] == 1
        assert driver["upgradePolicy"]["podDeletion"]["force"] is False and driver["upgradePolicy"]["drain"]["enable"] is False


def test_gpu_operator_node_feature_rule_is_checked_against_the_nfd_crd(rendered):
    """gpu_cluster_node_feature_rules (on in the homelab, the default in the legacy render) makes the
    chart render its NodeFeatureRule; it passes the NodeFeatureRule schema of the NFD CRD the chart
    vendors (charts/node-feature-discovery/crds/nfd-api-crds.yaml), and a rule that NFD's schema refuses
    would fail."""
    # each chart's own rule: v26.7.0 labels GPUDirect/GDRCopy capability from the loaded kernel modules,
    # v25.10.1 (the legacy render) confidential-computing support and the GPU family
    expected = {"homelab": ("nvidia-kernel-modules", {"nvidia.com/gds.capable", "nvidia.com/peermem.capable"}),
                "legacy": ("nvidia-nfd-nodefeaturerules", {"nvidia.com/gpu.family"})}
    for render, (name, some_labels) in expected.items():
        docs, crds = render_row(rendered, render, "gpu-operator")
        rules = [doc for _path, doc in docs if doc["kind"] == "NodeFeatureRule"]
        assert [r["metadata"]["name"] for r in rules] == [name], render
        schema = crd_schemas(crds)[("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule")]
        assert validate_custom(rules[0], schema) == [], render
        labels = {key for rule in rules[0]["spec"]["rules"] for key in rule.get("labels", {})}
        assert some_labels <= labels, render
        broken = copy.deepcopy(rules[0])
        broken["spec"]["rules"][0]["matchFeatures"][0]["matchExpressions"] = "Sometimes"
        assert validate_custom(broken, schema), render
    off = wrong(rendered["homelab"]["gpu-operator"]["helm"]["values"], ("nfd", "nodefeaturerules"), False)
    docs, _crds = helm_template("gpu-operator-v26.7.0", off, "gpu-operator", "gpu-operator")
    assert not [doc for _path, doc in docs if doc["kind"] == "NodeFeatureRule"]


def test_strict_crd_validation_catches_nested_unknown_fields_and_wrong_types(rendered):
    docs, crds = render_row(rendered, "homelab", "gpu-operator")
    policy = copy.deepcopy(next(doc for _path, doc in docs if doc["kind"] == "ClusterPolicy"))
    schema = crd_schemas(crds)[("nvidia.com/v1", "ClusterPolicy")]
    policy["spec"]["toolkit"]["envv"] = []
    policy["spec"]["driver"]["enabled"] = "yes"
    problems = validate_custom(policy, schema)
    assert any("'envv' was unexpected" in p and p.endswith("spec/toolkit") for p in problems), problems
    assert any("'yes' is not of type 'boolean'" in p for p in problems), problems


def wrong(values, path, value):
    values = copy.deepcopy(values)
    node = values
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return values


@pytest.mark.parametrize(("bundle", "path", "value", "words"), [
    # a ClusterPolicy field of the wrong type: the CRD schema catches it in the rendered object
    ("gpu-operator", ("driver", "enabled"), "enabled", "'enabled' is not of type 'boolean'"),
    ("gpu-operator", ("toolkit", "env"), [{"name": "CONTAINERD_SOCKET", "value": 1}], "1 is not of type 'string'"),
    # the node-feature-discovery subchart's values.schema.json (Helm refuses the values)
    ("gpu-operator", ("node-feature-discovery", "worker", "tolerations"), "oops", "want array"),
    # a template that fails on a wrong type (the chart ranges over a map)
    ("nfs-subdir-external-provisioner", ("nfs", "mountOptions"), 7, "range can't iterate over 7"),
    # an object of the wrong shape in the Deployment: kubernetes-validate rejects it
    ("nfs-subdir-external-provisioner", ("resources",), {"limit": {"cpu": "1"}}, "Additional properties"),
    # the JupyterHub chart's values.schema.json: an unknown key and a storage type it does not know
    ("jupyterhub", ("singleuser", "storage", "capacityy"), "10Gi", "additional properties 'capacityy' not allowed"),
    ("jupyterhub", ("singleuser", "storage", "type"), "nfs", "value must be one of"),
    # an Ingress of the wrong shape: kubernetes-validate rejects the rendered object
    ("jupyterhub", ("ingress", "tls"), [{"hosts": ["jupyter.example"], "secretName": 7}], "7 is not of type 'string'"),
    # kube-prometheus-stack: a Prometheus CR field of the wrong form (the operator's CRD schema)
    ("monitoring", ("prometheus", "prometheusSpec", "retentionSize"), "42 GiB", "'42 GiB' does not match"),
    ("monitoring", ("prometheus", "prometheusSpec", "storageSpec", "volumeClaimTemplate", "spec", "accessModes"),
     "ReadWriteOnce", "is not of type 'array'"),
    # a subchart (grafana) value that lands in a built-in object of the wrong shape
    ("monitoring", ("grafana", "resources"), {"limit": {"cpu": "1"}}, "Additional properties"),
])
def test_wrong_values_fail(rendered, bundle, path, value, words):
    chart_dir, namespace = CHARTS[("homelab", bundle)]
    helm = rendered["homelab"][bundle]["helm"]
    try:
        docs, crds = helm_template(chart_dir, wrong(helm.get("values") or {}, path, value), helm["releaseName"], namespace)
    except helm_python.errors.HelmError as exc:
        assert words in str(exc), str(exc)
        return
    problems = validation_problems(docs, crds, HOMELAB_K8S)
    assert any(words in p for p in problems), problems


def test_kube_vip_manifest_is_strict_valid(tmp_path):
    """The kube-vip manifest the k3s servers apply, rendered from the role's template."""
    defaults = yaml.safe_load((REPO / "roles" / "k3s_node" / "defaults" / "main.yml").read_text())
    out = tmp_path / "kube-vip.yaml"
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [{
        "ansible.builtin.template": {
            "src": str(REPO / "roles/k3s_node/templates/var/lib/rancher/k3s/server/manifests/kube-vip.yaml.j2"),
            "dest": str(out), "mode": "0600"}}]}]))
    extra = {"ansible_python_interpreter": sys.executable, "k3s_node_kube_vip_image": defaults["k3s_node_kube_vip_image"],
             "__k3s_node_iface": "eth0", "k3s_node_api_vip": "10.0.0.100"}
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="false")
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(play), "-e", json.dumps(extra)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    docs = [doc for doc in yaml.safe_load_all(out.read_text()) if doc]
    assert [doc["kind"] for doc in docs] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet"]
    assert validation_problems([("kube-vip.yaml", doc) for doc in docs], [], HOMELAB_K8S) == []
    daemonset = docs[-1]
    env_vars = {e["name"]: e["value"] for e in daemonset["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env_vars["address"] == "10.0.0.100" and env_vars["vip_interface"] == "eth0"


# Kubernetes schema version of the direct renders: the homelab's
DIRECT_K8S = RENDERS["homelab"][1]


def direct_components(extra_values=None):
    """{name: component} of Fleet alone's management components with the role's defaults (the pin
    of versions.yml, ``management_fleet_values`` = ``extra_values``), as roles/management/vars/main.yml
    builds them."""
    settings = {"mode": "fleet", "servers": 3,
                "fleet": {"version": versions.pinned("fleet_chart"), "namespace": "cattle-fleet-system",
                          "values": extra_values or {}}}
    return {c["name"]: c for c in management.management_components(settings)}


def test_every_direct_component_has_a_row():
    """Fleet alone's components are the ones no Fleet bundle carries: each has a DIRECT row."""
    components = direct_components()
    bundled = {c["name"] for c in management.fleet_bundled_components(list(components.values()))}
    assert set(components) - bundled == set(DIRECT)


@pytest.mark.parametrize("name", sorted(DIRECT))
def test_direct_chart_renders_strict_valid(name):
    """fleet-crd and fleet, rendered with the values and namespace the management role installs
    them with, are strict-valid (fleet-crd's CRDs against the CRD schema, fleet's manifests against
    the Kubernetes schema)."""
    chart_dir, namespace = DIRECT[name]
    component = direct_components()[name]
    chart = yaml.safe_load((HELM_CHARTS / chart_dir / "Chart.yaml").read_text())
    assert (chart["name"], str(chart["version"])) == (component["chart"]["name"], component["chart"]["version"]), (
        f"{name} pins {component['chart']['version']} but the row renders {chart_dir}: vendor the pinned chart")
    assert component["namespace"] == namespace
    docs, crds = helm_template(chart_dir, component["chart"]["values"], component["chart"]["release"], namespace)
    assert docs or crds, f"{name}: the chart rendered nothing"
    assert validation_problems(docs, crds + crds_from_other_charts(chart_dir), DIRECT_K8S) == []


def test_direct_chart_values_of_the_wrong_type_fail():
    """A user's management_fleet_values of the wrong type (the fleet chart has no values schema)
    reaches the rendered manifests and fails the tier: here the chart indents a list where it
    expects a map, so the manifest no longer parses."""
    chart_dir, namespace = DIRECT["fleet"]
    component = direct_components({"nodeSelector": ["gpu=true"]})["fleet"]
    with pytest.raises(yaml.YAMLError):
        helm_template(chart_dir, component["chart"]["values"], "fleet", namespace)
    component = direct_components({"nodeSelector": {"gpu": "true"}})["fleet"]
    docs, crds = helm_template(chart_dir, component["chart"]["values"], "fleet", namespace)
    assert validation_problems(docs, crds, DIRECT_K8S) == []


def spawner_bytes(value):
    """KubeSpawner's ByteSpecification: K/M/G/T are powers of 1024; the Pod gets the bytes."""
    units = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}
    text = str(value)
    return str(int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(float(text)))


def spawner_pod(singleuser, profile, choice=None):
    """The user Pod KubeSpawner makes of a profile of our ``singleuser.profileList`` (the chart
    passes the list to the hub unchecked): the profile's ``kubespawner_override`` (and the chosen
    image option's) over the chart's singleuser settings, with KubeSpawner's own expansions of
    ``{user_server}`` and ``{pvc_name}``; KubeSpawner's ``cmd`` is the container's args."""
    override = dict(profile["kubespawner_override"])
    if choice:
        override.update(profile["profile_options"]["image"]["choices"][choice]["kubespawner_override"])
    expand = json.loads(json.dumps(override).replace("{user_server}", "alice").replace("{pvc_name}", "claim-alice"))
    image = expand.get("image") or f"{singleuser['image']['name']}:{singleuser['image']['tag']}"
    requests = {"cpu": str(expand["cpu_guarantee"]), "memory": spawner_bytes(expand["mem_guarantee"]),
                **expand.get("extra_resource_guarantees", {})}
    limits = {"cpu": str(expand["cpu_limit"]), "memory": spawner_bytes(expand["mem_limit"]),
              **expand.get("extra_resource_limits", {})}
    container = {"name": "notebook", "image": image, "args": expand.get("cmd", ["jupyterhub-singleuser"]),
                 "env": [{"name": k, "value": v} for k, v in expand.get("environment", {}).items()],
                 "volumeMounts": expand["volume_mounts"], "resources": {"requests": requests, "limits": limits}}
    spec = {"containers": [container], "volumes": expand["volumes"], **expand.get("extra_pod_config", {})}
    if expand.get("tolerations"):
        spec["tolerations"] = expand["tolerations"]
    if expand.get("node_selector"):
        spec["nodeSelector"] = expand["node_selector"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "jupyter-alice", "namespace": "jupyterhub"},
            "spec": spec}


def test_jupyterhub_profiles_make_strict_valid_pods(rendered):
    """Every profile (and image choice) of the rendered JupyterHub values becomes a user Pod the
    API server accepts: the volumes, mounts, tolerations and resources we write are only read by
    KubeSpawner at spawn time, so the chart's render cannot catch a wrong shape there."""
    singleuser = rendered["homelab"]["jupyterhub"]["helm"]["values"]["singleuser"]
    pods = []
    for profile in singleuser["profileList"]:
        choices = list((profile.get("profile_options") or {}).get("image", {}).get("choices", {})) or [None]
        pods += [(profile["slug"], choice, spawner_pod(singleuser, profile, choice)) for choice in choices]
    assert {slug for slug, _c, _p in pods} >= {"cpu", "gpu-1"}, [slug for slug, _c, _p in pods]
    for slug, choice, pod in pods:
        assert validation_problems([(f"profile {slug} {choice}", pod)], [], HOMELAB_K8S) == []
        if slug != "cpu":
            assert pod["spec"]["runtimeClassName"] == "nvidia"
            assert {"dshm", "scratch"} <= {v["name"] for v in pod["spec"]["volumes"]}
    broken = copy.deepcopy(singleuser["profileList"][-1])
    broken["kubespawner_override"]["volumes"].append({"name": "scratch2", "ephemeral": {"claimTemplate": {}}})
    assert any("'claimTemplate' was unexpected" in p
               for p in validation_problems([("broken", spawner_pod(singleuser, broken, None))], [], HOMELAB_K8S))


def pod_specs(docs):
    """{(kind, name): pod spec} of the workloads and the Prometheus operator's own custom resources."""
    specs = {}
    for _path, doc in docs:
        kind, spec = doc["kind"], doc.get("spec") or {}
        if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            specs[(kind, doc["metadata"]["name"])] = spec["template"]["spec"]
        elif kind in ("Prometheus", "Alertmanager"):
            specs[(kind, doc["metadata"]["name"])] = spec
    return specs


def test_monitoring_infra_placement_reaches_every_component(rendered):
    """gpu_monitoring_infra_nodes: the chart has no values schema, so a placement key under a wrong
    name would be ignored silently; every long-running component but node-exporter (on every node)
    must carry the infra nodeSelector and toleration, and the result stays strict-valid."""
    chart_dir, namespace = CHARTS[("homelab", "monitoring")]
    helm = rendered["homelab"]["monitoring"]["helm"]
    values = gpu_monitoring.stack_values(infra=True)
    docs, crds = helm_template(chart_dir, values, helm["releaseName"], namespace)
    assert validation_problems(docs, crds, HOMELAB_K8S) == []
    specs = pod_specs(docs)
    placed = {key for key, spec in specs.items()
              if spec.get("nodeSelector") == {gpu_monitoring.INFRA_LABEL: "true"}
              and gpu_monitoring.INFRA_TOLERATION in (spec.get("tolerations") or [])}
    long_running = {key for key in specs if key[0] != "Job" and "node-exporter" not in key[1]}
    assert long_running, sorted(specs)
    assert long_running - placed == set()
    assert {kind for kind, _name in long_running} >= {"Deployment", "Prometheus", "Alertmanager"}
    # the homelab (no infra nodes) places nothing
    homelab = pod_specs(render_row(rendered, "homelab", "monitoring")[0])
    assert not any(spec.get("nodeSelector") == {gpu_monitoring.INFRA_LABEL: "true"} for spec in homelab.values())


def test_nfs_class_mounts_with_the_inventory_options(rendered):
    """Helm's engine turns the rendered values into the nfs-client StorageClass: its mountOptions (what
    the kubelet hands mount.nfs for every volume) are the homelab's gpu_cluster_nfs_mount_options."""
    homelab_vars = yaml.safe_load((HOMELAB / "group_vars" / "all" / "main.yml").read_text())
    docs = render_row(rendered, "homelab", "nfs-subdir-external-provisioner")[0]
    classes = [d for _path, d in docs if d.get("kind") == "StorageClass"]
    assert [c["metadata"]["name"] for c in classes] == ["nfs-client"]
    assert classes[0]["mountOptions"] == homelab_vars["gpu_cluster_nfs_mount_options"]
    assert "rsize=1048576" in classes[0]["mountOptions"]


def test_monitoring_state_is_on_local_volumes_on_the_servers(rendered):
    """Prometheus' TSDB and Grafana's SQLite need file locks NFS does not give: the homelab (no infra
    nodes) keeps them on k3s's local-path volumes, on a server; the stateless pods are not pinned."""
    docs = render_row(rendered, "homelab", "monitoring")[0]
    specs = pod_specs(docs)
    server = {"node-role.kubernetes.io/control-plane": "true"}
    pinned = {key for key, spec in specs.items() if spec.get("nodeSelector") == server}
    assert {kind for kind, _name in pinned} == {"Prometheus", "Deployment"}
    assert any("grafana" in name for kind, name in pinned if kind == "Deployment")
    prometheus = next(d for _path, d in docs if d.get("kind") == "Prometheus")
    assert prometheus["spec"]["storage"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "local-path"
    claims = [d for _path, d in docs if d.get("kind") == "PersistentVolumeClaim"]
    assert claims and all(c["spec"]["storageClassName"] == "local-path" for c in claims)
    assert not any("nfs" in yaml.safe_dump(d) for d in [*claims, prometheus])
    # switching monitoring off uninstalls the release: Helm keeps the claims it made (Grafana's database)
    assert all(c["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep" for c in claims)


@pytest.mark.parametrize("auth", ["github", "generic-oauth", "dummy"])
def test_jupyterhub_other_settings_render_strict_valid(auth):
    """The values branches the homelab does not take (OAuth with its client secret from a Secret,
    an Ingress with cert-manager TLS, named servers, a 4-GPU profile from a pool, custom images)
    render strict-valid too, and the settings reach the objects."""
    settings = {"namespace": "jupyterhub", "host": "hub.example.org", "ingress_class": "traefik",
                "cert_issuer": "letsencrypt", "auth": auth, "admin_users": ["ada"], "allowed_users": ["ada", "bob"],
                "oauth": {"client_id": "cid", "allowed_organizations": ["lab"], "authorize_url": "https://sso/authorize",
                          "token_url": "https://sso/token", "userdata_url": "https://sso/userinfo"},
                "named_servers": True, "named_server_limit": 3, "cull_timeout": 7200, "internet_egress": False,
                "llm_namespaces": ["llm", "team-a"], "singleuser_package": "jupyterhub==5.3.0",
                "images": {"cpu": "quay.io/jupyter/scipy-notebook:2025-03-14", "pytorch": "nvcr.io/nvidia/pytorch:25.01-py3",
                           "tensorflow": "nvcr.io/nvidia/tensorflow:25.01-tf2-py3"}}
    pools = [{"name": "big", "allocation": "exclusive", "nodes": ["wk-gpu1"]}]
    entries = [{"name": "cpu", "gpu": 0}, {"name": "gpu-4", "gpu": 4, "pool": "big"},
               {"name": "custom", "gpu": 1, "image": "registry.lab/notebook@sha256:" + "a" * 64}]
    values = jupyterhub.chart_values(settings, entries, pools)
    docs, crds = helm_template("jupyterhub-4.4.0", values, "jupyterhub", "jupyterhub")
    assert validation_problems(docs, crds, HOMELAB_K8S) == []
    kinds = {(doc["kind"], doc["metadata"]["name"]): doc for _path, doc in docs}
    ingress = kinds[("Ingress", "jupyterhub")]
    assert ingress["spec"]["tls"] == [{"hosts": ["hub.example.org"], "secretName": "jupyterhub-tls"}]
    assert ingress["metadata"]["annotations"]["cert-manager.io/cluster-issuer"] == "letsencrypt"
    hub_env = {e["name"]: e for e in kinds[("Deployment", "hub")]["spec"]["template"]["spec"]["containers"][0]["env"]}
    if auth == "dummy":
        assert jupyterhub.OAUTH_SECRET_ENV not in hub_env
    else:
        assert hub_env[jupyterhub.OAUTH_SECRET_ENV]["valueFrom"]["secretKeyRef"] == {
            "name": "jupyterhub-oauth", "key": jupyterhub.OAUTH_SECRET_KEY}
    egress = kinds[("NetworkPolicy", "singleuser")]["spec"]["egress"]
    llm_rules = [rule["to"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] for rule in egress
                 if "namespaceSelector" in rule.get("to", [{}])[0]]
    assert llm_rules == ["llm", "team-a"], egress
    for profile in values["singleuser"]["profileList"]:
        for choice in list((profile.get("profile_options") or {}).get("image", {}).get("choices", {})) or [None]:
            pod = spawner_pod(values["singleuser"], profile, choice)
            assert validation_problems([(profile["slug"], pod)], [], HOMELAB_K8S) == []


# ---- the scheduling proof of the charts' pods ------------------------------------------------------
# The pods the charts create (Deployments, StatefulSets, Jobs and CronJobs, hooks included), as Helm's
# engine renders them from our values, placed against the homelab's cluster model the way
# kube-scheduler decides feasibility (plugin_utils/scheduling.py, the proof preflight runs on our own
# workloads). DaemonSets are left out: they place a pod on each node they select and tolerate, and
# the GPU Operator's select labels its own node-feature discovery adds at run time.
POD_OWNERS = ("Deployment", "StatefulSet", "Job", "CronJob")


def _load_homelab():
    spec = importlib.util.spec_from_file_location(
        "cluster_model_tests", REPO / "tests" / "unit" / "plugins" / "plugin_utils" / "test_cluster_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load_inventory(HOMELAB)


def chart_workloads(docs, namespace):
    result = []
    for path, doc in docs:
        if doc.get("kind") not in POD_OWNERS:
            continue
        spec = doc.get("spec") or {}
        if doc["kind"] == "CronJob":
            spec = (spec.get("jobTemplate") or {}).get("spec") or {}
        pod = ((spec.get("template") or {}).get("spec")) or {}
        replicas = spec.get("replicas", 1) if doc["kind"] in ("Deployment", "StatefulSet") else 1
        result.append({"name": f"{doc['kind']} {doc['metadata']['name']} ({path})",
                       "namespace": doc["metadata"].get("namespace") or namespace, "pod": pod, "replicas": replicas})
    return result


def test_every_chart_pod_of_the_homelab_schedules(rendered):
    groups, hostvars = _load_homelab()
    model = cluster_model.build(groups, hostvars)
    quotas = cluster_workloads.pool_quotas(model)
    workloads = []
    for (render, bundle), (_chart_dir, namespace) in sorted(CHARTS.items()):
        if render == "homelab":
            docs, _crds = render_row(rendered, render, bundle)
            workloads += chart_workloads(docs, namespace)
    assert len(workloads) > 10, [w["name"] for w in workloads]
    result = scheduling.prove(workloads, model["nodes"], quotas, cluster_workloads.admission_limits(model))
    assert result["problems"] == [], "\n".join(result["problems"])
    # the proof can fail: the same pods on a cluster of tainted nodes only fit nowhere
    tainted = [dict(node, taints=node["taints"] + [{"key": "maintenance", "value": "", "effect": "NoSchedule"}])
               for node in model["nodes"]]
    refused = scheduling.prove(workloads[:3], tainted)["problems"]
    assert len(refused) == 3 and all("taint maintenance:NoSchedule not tolerated" in p for p in refused)


def test_a_custom_mig_layout_reaches_the_mig_manager(rendered):
    """Issue 30, item 3: the homelab's GPU Operator values with its MIG pool given a mixed layout
    (gpu_pools.operator_values, the function the role's values call) render with the pinned chart
    into the mig-parted ConfigMap the chart creates and the ClusterPolicy that points the MIG manager
    at it, strict-valid; mig-parted's reading of that ConfigMap gives the layout on the A100 80GB."""
    pools = yaml.safe_load((HOMELAB / "group_vars" / "all" / "gpu_pools.yml").read_text())["gpu_cluster_gpu_pools"]
    for pool in pools:
        if pool["allocation"] == "mig":
            pool.pop("mig_profile")
            pool["mig_layout"] = {"3g.40gb": 1, "2g.20gb": 2}
    fleet = rendered["homelab"]["gpu-operator"]
    values = copy.deepcopy(fleet["helm"]["values"])
    assert "create" not in (values.get("migManager") or {}).get("config", {})  # the homelab keeps the defaults
    extra = gpu_pools.operator_values(pools)
    values.setdefault("migManager", {}).setdefault("config", {}).update(extra["migManager"]["config"])
    docs, crds = helm_template("gpu-operator-v26.7.0", values, fleet["helm"].get("releaseName", "gpu-operator"),
                               "gpu-operator")
    assert validation_problems(docs, crds, RENDERS["homelab"][1]) == []
    (configmap,) = [doc for _path, doc in docs if doc["kind"] == "ConfigMap"
                    and doc["metadata"]["name"] == gpu_pools.MIG_PARTED_CONFIGMAP]
    parsed = gpu_pools.load_mig_configs(configmap["data"]["config.yaml"])
    assert gpu_pools.mig_slices(gpu_pools.MODEL_DEVICE_IDS["NVIDIA A100 80GB PCIe"], "custom-inference", parsed) == {
        "3g.40gb": 1, "2g.20gb": 2}
    (policy,) = [doc for _path, doc in docs if doc["kind"] == "ClusterPolicy"]
    assert policy["spec"]["migManager"]["config"] == {"name": gpu_pools.MIG_PARTED_CONFIGMAP, "default": "all-disabled"}


def test_dcgm_exporter_is_scraped_once_with_its_node(rendered, renders_cache):
    """Issue 44: the pinned GPU Operator chart creates its own DCGM ServiceMonitor by default (its
    values.yaml, dcgmExporter.serviceMonitor.enabled: true) with no node relabelling, and Prometheus
    selects every ServiceMonitor: each DCGM series was scraped twice and every GPU temperature or XID
    alert fired twice. Helm's engine renders the ClusterPolicy with the operator's monitor off, and the
    only ServiceMonitor of the exporter is the gpu-alerts bundle's, which adds the node."""
    chart_values = yaml.safe_load((HELM_CHARTS / "gpu-operator-v26.7.0" / "values.yaml").read_text())
    assert chart_values["dcgmExporter"]["serviceMonitor"]["enabled"] is True  # the chart's default we switch off
    docs, _crds = render_row(rendered, "homelab", "gpu-operator")
    (policy,) = [doc for _path, doc in docs if doc["kind"] == "ClusterPolicy"]
    assert policy["spec"]["dcgmExporter"]["enabled"] is True
    assert policy["spec"]["dcgmExporter"]["serviceMonitor"]["enabled"] is False
    monitors = [doc for _path, doc in docs if doc["kind"] == "ServiceMonitor"]
    assert monitors == []
    alerts = renders_cache.get(*RENDERS["homelab"][0])[0] / "homelab" / "gpu-alerts"
    ours = [doc for path in sorted(alerts.glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc and doc.get("kind") == "ServiceMonitor"]
    assert len(ours) == 1 and ours[0]["spec"]["selector"]["matchLabels"] == {"app": "nvidia-dcgm-exporter"}
    assert ours[0]["spec"]["endpoints"][0]["relabelings"] == [
        {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}]
