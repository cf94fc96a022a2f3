"""Storage components: NFS default class, local-path not default, fast-scratch."""

from __future__ import annotations

import json

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import storage_components as s


def test_nfs_values_make_nfs_client_the_default():
    values = s.nfs_provisioner_values("10.0.0.30", "/export/k3s")
    assert values["nfs"]["server"] == "10.0.0.30"
    assert values["nfs"]["path"] == "/export/k3s"
    assert values["storageClass"]["name"] == "nfs-client"
    assert values["storageClass"]["defaultClass"] is True


def test_local_path_is_not_default():
    sc = s.local_path_not_default()
    assert sc["metadata"]["name"] == "local-path"
    assert sc["metadata"]["annotations"][s.DEFAULT_CLASS_ANNOTATION] == "false"
    assert sc["provisioner"] == "rancher.io/local-path"


def _by_kind(manifests):
    return {(m["kind"], m["metadata"]["name"]): m for m in manifests}


def test_fast_scratch_only_on_listed_nodes():
    manifests = _by_kind(s.fast_scratch_manifests("/mnt/fast-scratch", ["wk-gpu2", "wk-gpu1"],
                                                  node_label={"gpu": "true"}))
    config = json.loads(manifests[("ConfigMap", "fast-scratch-config")]["data"]["config.json"])
    assert config == {"nodePathMap": [{"node": "wk-gpu1", "paths": ["/mnt/fast-scratch"]},
                                      {"node": "wk-gpu2", "paths": ["/mnt/fast-scratch"]}]}
    assert "DEFAULT_PATH_FOR_NON_LISTED_NODES" not in json.dumps(config)
    sc = manifests[("StorageClass", "fast-scratch")]
    assert sc["volumeBindingMode"] == "WaitForFirstConsumer"
    assert sc["reclaimPolicy"] == "Delete"
    assert sc["metadata"]["annotations"][s.DEFAULT_CLASS_ANNOTATION] == "false"
    assert sc["allowedTopologies"] == [{"matchLabelExpressions": [{"key": "gpu", "values": ["true"]}]}]
    deployment = manifests[("Deployment", "fast-scratch-provisioner")]
    command = deployment["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--provisioner-name") + 1] == sc["provisioner"]
    assert command[command.index("--configmap-name") + 1] == "fast-scratch-config"


def test_fast_scratch_helper_tolerates_the_gpu_taint():
    manifests = _by_kind(s.fast_scratch_manifests("/mnt/x", ["n1"]))
    helper = json.loads(manifests[("ConfigMap", "fast-scratch-config")]["data"]["helperPod.yaml"])
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in helper["spec"]["tolerations"]
    assert "allowedTopologies" not in manifests[("StorageClass", "fast-scratch")]
