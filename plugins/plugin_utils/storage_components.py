# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic for the storage components: NFS default class, k3s local-path, fast-scratch."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import cluster_model

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def nfs_provisioner_values(server, path, *, storage_class="nfs-client", default=True, extra=None, mount_options=None):
    """Values for nfs-subdir-external-provisioner: one StorageClass, the cluster default, whose
    ``mountOptions`` are ``mount_options`` (None: NFS_MOUNT_OPTIONS)."""
    values = {
        "nfs": {"server": str(server), "path": str(path), "mountOptions": nfs_mount_options(mount_options)},
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


# ---- NFS mount options (issue 47) -----------------------------------------------------------------
# One setting, gpu_cluster_nfs_mount_options, feeds the nfs-client StorageClass's mountOptions (the
# kubelet hands them to mount.nfs for every volume) and the nfs_client role's fstab entries. The
# default tunes for large sequential reads and writes (datasets, checkpoints): 1 MiB transfers, the
# largest the Linux client negotiates (nfs(5): "values larger than 1048576 are replaced with
# 1048576"); a hard mount, so an interrupted server makes I/O wait, never return errors into a training
# run; timeo=600/retrans=2, nfs(5)'s TCP defaults written out; noatime, no write per read.
NFS_MOUNT_OPTIONS = ("nfsvers=4.1", "rsize=1048576", "wsize=1048576", "hard", "timeo=600", "retrans=2", "noatime")

# Options mount.nfs passes on (nfs(5), and the generic ones of mount(8) the kernel takes for NFS):
# name -> None for a flag, or a function that judges the value. Anything else reaches the kernel,
# which refuses the mount ("mount.nfs: an incorrect mount option was specified"), and the kubelet
# would only say so when a pod first mounts a volume.
_NFS_NUMBER = re.compile(r"0|[1-9][0-9]{0,9}")


def _number(low, high, step=1):
    def judge(value):
        if not _NFS_NUMBER.fullmatch(value):
            return "a whole number"
        number = int(value)
        if not low <= number <= high or number % step:
            return "from %d to %d%s" % (low, high, " in steps of %d" % step if step > 1 else "")
        return None
    return judge


def _one_of(*choices):
    return lambda value: None if value in choices else "one of %s" % ", ".join(choices)


_NFS_VALUED = {
    "nfsvers": _one_of("3", "4", "4.0", "4.1", "4.2"),
    "vers": _one_of("3", "4", "4.0", "4.1", "4.2"),
    # nfs(5): rsize/wsize are multiples of 1024 from 1024 to 1048576
    "rsize": _number(1024, 1048576, 1024),
    "wsize": _number(1024, 1048576, 1024),
    "timeo": _number(1, 6000),  # tenths of a second
    "retrans": _number(0, 100),
    "acregmin": _number(0, 3600),
    "acregmax": _number(0, 3600),
    "acdirmin": _number(0, 3600),
    "acdirmax": _number(0, 3600),
    "actimeo": _number(0, 3600),
    "nconnect": _number(1, 16),  # nfs(5): at most 16 connections
    "max_connect": _number(1, 16),
    "port": _number(0, 65535),
    "proto": _one_of("tcp", "tcp6", "rdma", "rdma6"),
    "sec": _one_of("sys", "krb5", "krb5i", "krb5p"),
    "lookupcache": _one_of("all", "none", "pos", "positive"),
    "local_lock": _one_of("none", "all", "flock", "posix"),
}
_NFS_FLAGS = frozenset(("hard", "soft", "ac", "noac", "cto", "nocto", "lock", "nolock", "sharecache", "nosharecache",
                        "resvport", "noresvport", "fsc", "nofsc", "rdirplus", "nordirplus", "noatime", "relatime",
                        "nodiratime", "nosuid", "nodev", "noexec"))
# pairs that contradict each other (nfs(5): "hard" and "soft" ...); a later one would silently win
_NFS_OPPOSITES = (("hard", "soft"), ("ac", "noac"), ("cto", "nocto"), ("lock", "nolock"), ("sharecache", "nosharecache"),
                  ("resvport", "noresvport"), ("fsc", "nofsc"), ("rdirplus", "nordirplus"), ("noatime", "relatime"),
                  ("nfsvers", "vers"))
_NFS_OPTION_RE = re.compile(r"([a-z_]+)(?:=(.*))?", re.DOTALL)
NFS_MOUNT_OPTIONS_ADVICE = ("use a list of nfs(5) mount options, one per item, like [%s]" % ", ".join(NFS_MOUNT_OPTIONS))


def nfs_mount_options(value=None):
    """The NFS mount options: ``value`` (gpu_cluster_nfs_mount_options) when set, else NFS_MOUNT_OPTIONS."""
    return list(NFS_MOUNT_OPTIONS) if value is None else list(value)


def _nfs_option_problem(item):
    """Why one item is not an NFS mount option mount.nfs accepts, or None."""
    problem = None
    match = _NFS_OPTION_RE.fullmatch(item) if item and not re.search(r"[\s,]", item) else None
    name, argument = match.groups() if match else (None, None)
    if not item or re.search(r"[\s,]", item):
        problem = "%r is not one mount option (no comma or whitespace; one option per item); %s" % (item, NFS_MOUNT_OPTIONS_ADVICE)
    elif name in ("ro", "rw"):
        problem = "%r: the storage class's volumes are read and written; leave ro/rw out" % item
    elif name in _NFS_FLAGS:
        problem = "%r: %s takes no value (nfs(5))" % (item, name) if argument is not None else None
    elif name in _NFS_VALUED:
        wrong = "needs a value, %s=..." % name if argument is None else _NFS_VALUED[name](argument)
        problem = "%r: %s %s (nfs(5))" % (item, name, wrong if argument is None else "is %s" % wrong) if wrong else None
    else:
        problem = "%r is not an NFS mount option mount.nfs accepts (nfs(5)); %s" % (item, NFS_MOUNT_OPTIONS_ADVICE)
    return problem


def nfs_mount_options_problem(value):
    """Why ``value`` is not a list of NFS mount options mount.nfs accepts, or None.

    Each item is one option, ``name`` or ``name=value``, of nfs(5) (or a generic one the kernel
    takes for NFS, like noatime); no item holds a comma or whitespace (a comma would add an option to
    the fstab field and the StorageClass, whitespace would end the fstab field); no option appears
    twice and no two contradict each other (hard and soft). ``ro`` is refused: the volumes are written.
    """
    if not isinstance(value, (list, tuple)) or any(not isinstance(item, str) for item in value):
        return NFS_MOUNT_OPTIONS_ADVICE
    seen = {}
    for item in value:
        problem = _nfs_option_problem(item)
        if problem:
            return problem
        name = item.split("=", 1)[0]
        if name in seen:
            return "%s is given twice (%r and %r); keep one" % (name, seen[name], item)
        seen[name] = item
    for one, other in _NFS_OPPOSITES:
        if one in seen and other in seen:
            return "%r and %r contradict each other; keep one" % (seen[one], seen[other])
    return None


def fstab_options(options):
    """The fourth field of an fstab(5) line: the options joined by commas, ``defaults`` when none."""
    return ",".join(options) if options else "defaults"


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
