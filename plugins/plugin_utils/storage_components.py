# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic for the storage components: NFS default class, k3s local-path, fast-scratch."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def nfs_provisioner_values(server, path, *, storage_class="nfs-client", default=True, extra=None):
    """Values for nfs-subdir-external-provisioner: one StorageClass, the cluster default."""
    values = {
        "nfs": {"server": str(server), "path": str(path), "mountOptions": ["nfsvers=4.1"]},
        "storageClass": {
            "create": True,
            "name": storage_class,
            "defaultClass": bool(default),
            "reclaimPolicy": "Delete",
            "archiveOnDelete": True,
            "accessModes": "ReadWriteMany",
            "allowVolumeExpansion": True,
        },
    }
    for key, value in (extra or {}).items():
        values[key] = value
    return values


def local_path_not_default(name="local-path"):
    """k3s's bundled ``local-path`` StorageClass as k3s defines it, marked not default.

    Applied over k3s's object it changes only the annotation; every other field is
    k3s's own (StorageClass parameters are immutable).
    """
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": name,
            "annotations": {"defaultVolumeType": "local", DEFAULT_CLASS_ANNOTATION: "false"},
        },
        "provisioner": "rancher.io/local-path",
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
    }


def fast_scratch_config(path, nodes):
    """local-path-provisioner config.json: ``path`` on the listed nodes, nothing elsewhere.

    There is deliberately no ``DEFAULT_PATH_FOR_NON_LISTED_NODES`` entry, so a volume can
    never be provisioned on a node without the scratch disk.
    """
    return {"nodePathMap": [{"node": node, "paths": [str(path)]} for node in sorted(nodes)]}


def fast_scratch_manifests(path, nodes, *, namespace="fast-scratch", storage_class="fast-scratch",
                           image="docker.io/rancher/local-path-provisioner:v0.0.37",
                           helper_image="docker.io/library/busybox:1.37.0",
                           provisioner_name="cluster.local/fast-scratch",
                           node_label=None, gpu_tolerations=None):
    """A dedicated local-path-provisioner instance and its ``fast-scratch`` StorageClass.

    ``node_label`` (``{"gpu": "true"}``) restricts the class to those nodes through
    ``allowedTopologies`` as well; the nodePathMap already lists only ``nodes``. The helper pods run on
    those GPU workers: ``gpu_tolerations`` (the cluster model's; None: the contract's default).
    """
    name = "%s-provisioner" % storage_class
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "gpu-cluster"}
    helper_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "helper-pod"},
        "spec": {
            "priorityClassName": "system-node-critical",
            "tolerations": [
                {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
                *cluster_model.given_gpu_tolerations(gpu_tolerations),
            ],
            "containers": [{"name": "helper-pod", "image": helper_image, "imagePullPolicy": "IfNotPresent"}],
        },
    }
    storage_class_obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": storage_class, "annotations": {DEFAULT_CLASS_ANNOTATION: "false"}},
        "provisioner": provisioner_name,
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
    }
    if node_label:
        storage_class_obj["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": key, "values": [str(value)]} for key, value in sorted(node_label.items())]}]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": name, "namespace": namespace, "labels": labels}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": name, "namespace": namespace, "labels": labels},
         "rules": [{"apiGroups": [""], "resources": ["pods"],
                    "verbs": ["get", "list", "watch", "create", "patch", "update", "delete"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": name, "labels": labels},
         "rules": [
             {"apiGroups": [""], "resources": ["nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"],
              "verbs": ["get", "list", "watch"]},
             {"apiGroups": [""], "resources": ["persistentvolumes"],
              "verbs": ["get", "list", "watch", "create", "patch", "update", "delete"]},
             {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
             {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get", "list", "watch"]},
         ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": name, "namespace": namespace, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": name, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "%s-config" % storage_class, "namespace": namespace, "labels": labels},
         "data": {
             "config.json": json.dumps(fast_scratch_config(path, nodes), indent=2, sort_keys=True),
             "setup": "#!/bin/sh\nset -eu\nmkdir -m 0777 -p \"$VOL_DIR\"\n",
             "teardown": "#!/bin/sh\nset -eu\nrm -rf \"$VOL_DIR\"\n",
             "helperPod.yaml": json.dumps(helper_pod, indent=2, sort_keys=True),
         }},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": name, "namespace": namespace, "labels": labels},
         "spec": {
             "replicas": 1,
             "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
             "template": {
                 "metadata": {"labels": labels},
                 "spec": {
                     "serviceAccountName": name,
                     "containers": [{
                         "name": "local-path-provisioner",
                         "image": image,
                         "imagePullPolicy": "IfNotPresent",
                         "command": ["local-path-provisioner", "start",
                                     "--config", "/etc/config/config.json",
                                     "--provisioner-name", provisioner_name,
                                     "--configmap-name", "%s-config" % storage_class,
                                     "--service-account-name", name,
                                     "--helper-image", helper_image],
                         "env": [{"name": "POD_NAMESPACE",
                                  "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                                 {"name": "CONFIG_MOUNT_PATH", "value": "/etc/config/"}],
                         "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/config/"}],
                     }],
                     "volumes": [{"name": "config-volume",
                                  "configMap": {"name": "%s-config" % storage_class}}],
                 },
             },
         }},
        storage_class_obj,
    ]
