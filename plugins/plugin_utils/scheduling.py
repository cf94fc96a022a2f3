# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scheduling proof: every workload the collection would create, placed against the cluster
model's nodes the way kube-scheduler decides feasibility, before anything is deployed.

A pod fits a node when (kube-scheduler's filter plugins, in this order of report):
- NodeName / ``nodeSelector``: every key equals the node's label;
- NodeAffinity: ``requiredDuringSchedulingIgnoredDuringExecution`` (terms ORed, expressions ANDed;
  ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``; ``matchFields`` on ``metadata.name``);
- TaintToleration: every ``NoSchedule``/``NoExecute`` taint is tolerated (``Exists`` matches any value,
  an empty key with ``Exists`` every taint, an empty effect every effect);
- the device plugin's allocation: a container asks at most one unit of a resource the node shares
  (time-slices with ``failRequestsGreaterThanOne``, MIG instances: one CUDA process uses one);
- NodeResourcesFit: cpu, memory and every extended resource the pod requests (a container's
  requests, else its limits; the sum of the containers, at least the largest init container) is at
  most the node's allocatable.
The namespace's ResourceQuotas we render are then checked as the ResourceQuota admission plugin
does: the namespace's pods together within each ``hard`` entry, and a resource the API server
lists in ``limitedResources`` refused in a namespace without a quota that covers it.

Linear in nodes and workloads: nodes are grouped by shape (labels without the hostname, taints,
allocatable), a pod pinned by ``kubernetes.io/hostname`` is judged against its node only, and every
other pod once per shape.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.forms import QUANTITY

HOSTNAME_LABEL = "kubernetes.io/hostname"
HARD_EFFECTS = ("NoSchedule", "NoExecute")
_SUFFIX = {"": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}


def quantity(value):
    """A Kubernetes quantity as a number (``500m`` -> 0.5, ``16Gi`` -> 17179869184)."""
    if isinstance(value, bool):
        raise ValueError("%r is not a quantity" % (value,))
    if isinstance(value, (int, float)):
        return float(value)
    match = QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError("%r is not a quantity" % (value,))
    number, suffix = float(match.group("number")), match.group("suffix") or ""
    if suffix[:1] in ("e", "E"):
        return number * 10 ** int(suffix[1:])
    return number * _SUFFIX[suffix]


def _in_node_units(resource, amount):
    """cpu in millicores, every other resource as counted (memory in bytes)."""
    return amount * 1000 if resource == "cpu" else amount


def pod_requests(pod):
    """{resource: amount} a pod spec asks the scheduler for (cpu in millicores, memory in bytes)."""
    def container_requests(container):
        resources = (container or {}).get("resources") or {}
        limits = resources.get("limits") or {}
        requests = dict(limits)  # a resource with only a limit is requested at the limit
        requests.update(resources.get("requests") or {})
        return dict((name, _in_node_units(name, quantity(value))) for name, value in requests.items())

    total = {}
    for container in (pod or {}).get("containers") or []:
        for name, amount in container_requests(container).items():
            total[name] = total.get(name, 0) + amount
    for container in (pod or {}).get("initContainers") or []:
        for name, amount in container_requests(container).items():
            total[name] = max(total.get(name, 0), amount)
    return total


def tolerates(tolerations, taint):
    """Whether one of ``tolerations`` tolerates ``taint`` ({key, value, effect})."""
    for entry in tolerations or []:
        operator = entry.get("operator") or "Equal"
        key = entry.get("key") or ""
        if key and key != taint["key"]:
            continue
        if not key and operator != "Exists":
            continue
        if operator == "Equal" and str(entry.get("value") or "") != str(taint.get("value") or ""):
            continue
        if entry.get("effect") and entry["effect"] != taint["effect"]:
            continue
        return True
    return False


def _compare(operator, value, values):
    if len(values) != 1:
        return False
    try:
        left, right = int(value), int(values[0])
    except (TypeError, ValueError):
        return False
    return left > right if operator == "Gt" else left < right


_OPERATORS = {
    "In": lambda present, value, values: present and value in values,
    "NotIn": lambda present, value, values: not present or value not in values,
    "Exists": lambda present, value, values: present,
    "DoesNotExist": lambda present, value, values: not present,
    "Gt": lambda present, value, values: present and _compare("Gt", value, values),
    "Lt": lambda present, value, values: present and _compare("Lt", value, values),
}


def _expression(expr, labels, name=None):
    """One node selector requirement against a node's labels (or its name, for matchFields)."""
    key, values = expr.get("key"), [str(v) for v in expr.get("values") or []]
    present = name is not None or key in labels
    value = name if name is not None else labels.get(key)
    check = _OPERATORS.get(expr.get("operator"))
    return bool(check and check(present, value, values))


def _term(term, node):
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches no node
    return (all(_expression(e, node["labels"]) for e in expressions)
            and all(e.get("key") == "metadata.name" and _expression(e, {}, node["name"]) for e in fields))


def _required_terms(pod):
    affinity = ((pod or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    return None if required is None else (required.get("nodeSelectorTerms") or [])


def _asks(requests):
    return ", ".join("%s %s" % (name, _show(name, requests[name])) for name in sorted(requests) if requests[name])


def _show(name, amount):
    if name == "cpu":
        return "%gm" % amount if amount % 1000 else "%g" % (amount / 1000)
    if name in ("memory", "ephemeral-storage") and amount >= 2 ** 20:
        if not amount % 2 ** 30:
            return "%gGi" % (amount / 2 ** 30)
        if not amount % 10 ** 9:
            return "%gG" % (amount / 10 ** 9)
        return "%gMi" % (amount / 2 ** 20) if not amount % 2 ** 20 else "%gM" % (amount / 10 ** 6)
    return "%g" % amount


def _placement_refusal(pod, node):
    """nodeName, nodeSelector, required node affinity, taints: why the node is not a candidate."""
    if pod.get("nodeName") and pod["nodeName"] != node["name"]:
        return "nodeName is %s" % pod["nodeName"]
    selector = pod.get("nodeSelector") or {}
    wrong = sorted(key for key, value in selector.items() if node["labels"].get(key) != str(value))
    if wrong:
        return "nodeSelector %s does not match (the node has %s)" % (
            ", ".join("%s=%s" % (k, selector[k]) for k in wrong),
            ", ".join("%s=%s" % (k, node["labels"][k]) for k in wrong if k in node["labels"]) or "none of them")
    terms = _required_terms(pod)
    if terms is not None and not any(_term(term, node) for term in terms):
        return "required node affinity does not match"
    untolerated = [t for t in node.get("taints") or [] if t["effect"] in HARD_EFFECTS
                   and not tolerates(pod.get("tolerations"), t)]
    if untolerated:
        return "taint %s not tolerated" % ", ".join(
            "%s%s:%s" % (t["key"], ("=" + t["value"]) if t.get("value") else "", t["effect"]) for t in untolerated)
    return ""


def _resource_refusal(pod, node, requests):
    """Shared units a container asks more than one of, and what the node's allocatable lacks."""
    for container in pod.get("containers") or []:
        asks = pod_requests({"containers": [container]})
        many = sorted(name for name in node.get("shared") or [] if asks.get(name, 0) > 1)
        if many:
            return "%s: a unit is a time-slice or a MIG instance and a container may have one (the device plugin " \
                   "refuses more than one shared GPU; one CUDA process uses one MIG instance)" % ", ".join(
                       "asks %s %s" % (_show(name, asks[name]), name) for name in many)
    allocatable = node.get("allocatable") or {}
    short = []
    for name in sorted(requests):
        amount = requests[name]
        if amount <= 0 or (name not in allocatable and name in ("cpu", "memory", "ephemeral-storage")):
            continue  # nothing asked, or the inventory does not size this node: not judged
        if name not in allocatable:
            short.append("%s (asks %s, has none)" % (name, _show(name, amount)))
        elif amount > allocatable[name]:
            short.append("%s (asks %s, has %s)" % (name, _show(name, amount), _show(name, allocatable[name])))
    return ("insufficient " + ", ".join(short)) if short else ""


def refusal(pod, node, requests=None):
    """Why ``node`` refuses ``pod`` ('' when the pod fits), as kube-scheduler's filters decide."""
    pod = pod or {}
    return _placement_refusal(pod, node) or _resource_refusal(
        pod, node, pod_requests(pod) if requests is None else requests)


def node_shape(node):
    """What the scheduler sees of a node but its name: labels (but the hostname), taints, allocatable.
    In the order the node gives them (the cluster model builds every node in one order): nodes alike
    but for the order share no shape and are judged apart, which is slower, never wrong."""
    labels = tuple(node["labels"].items())
    if labels and labels[0][0] == HOSTNAME_LABEL:
        labels = labels[1:]
    elif any(key == HOSTNAME_LABEL for key, _value in labels):
        labels = tuple(item for item in labels if item[0] != HOSTNAME_LABEL)
    taints = tuple((t["key"], t.get("value") or "", t["effect"]) for t in node.get("taints") or ())
    return labels, taints, tuple((node.get("allocatable") or {}).items())


class Index(object):
    """The nodes of a model by name and by shape (built once, linear)."""

    def __init__(self, nodes):
        self.by_name = {}
        self.shapes = {}
        names = {}
        for node in nodes or []:
            self.by_name[node["name"]] = node
            shape = node_shape(node)
            if shape in self.shapes:
                names[shape].append(node["name"])
            else:
                self.shapes[shape] = node
                names[shape] = [node["name"]]
        # [(a node of the shape, the names of its nodes)]
        self.groups = [(node, names[shape]) for shape, node in self.shapes.items()]

    def place(self, pod, requests):
        """(fitting node names, {reason: [node names]}) for one pod."""
        pinned = ((pod or {}).get("nodeSelector") or {}).get(HOSTNAME_LABEL) or (pod or {}).get("nodeName")
        if pinned:
            node = self.by_name.get(str(pinned))
            if node is None:
                return [], {"no node is named %s" % pinned: []}
            reason = refusal(pod, node, requests)
            return ([], {reason: [node["name"]]}) if reason else ([node["name"]], {})
        fits, refused = [], {}
        for node, names in self.groups:
            reason = refusal(pod, node, requests)
            if reason:
                refused.setdefault(reason, []).extend(names)
            else:
                fits.extend(names)
        return fits, refused

    def selected(self, pod, requests):
        """A DaemonSet's pod: (fitting node names, {reason: [node names]} of the nodes its selector,
        affinity and tolerations admit but whose resources refuse it, whether any node is admitted)."""
        fits, refused, admitted = [], {}, False
        for node, names in self.groups:
            if _placement_refusal(pod, node):
                continue  # not one of the DaemonSet's nodes: kube's DaemonSet controller makes no pod there
            admitted = True
            reason = _resource_refusal(pod, node, requests)
            if reason:
                refused.setdefault(reason, []).extend(names)
            else:
                fits.extend(names)
        return fits, refused, admitted


_OBJECT_COUNTS = ("pods", "services", "persistentvolumeclaims", "secrets", "configmaps", "count")


def _quota_hard(quotas):
    """{namespace: {resource: amount}} from ResourceQuota objects (``requests.x`` and plain ``x``)."""
    result = {}
    for quota in quotas or []:
        namespace = ((quota or {}).get("metadata") or {}).get("namespace") or "default"
        hard = result.setdefault(namespace, {})
        for key, value in (((quota or {}).get("spec") or {}).get("hard") or {}).items():
            name = key[len("requests."):] if key.startswith("requests.") else key
            if key.startswith("limits.") or name in _OBJECT_COUNTS:
                continue
            amount = _in_node_units(name, quantity(value))
            hard[name] = min(hard.get(name, amount), amount)
    return result


def _limited(limited_resources):
    """The resources ``limitedResources`` names (``matchContains`` entries of the ResourceQuota plugin)."""
    names = []
    for entry in limited_resources or []:
        for item in (entry or {}).get("matchContains") or []:
            names.append(str(item))
    return names


def uncovered(requests, namespace, quotas=None, limited_resources=None):
    """The usage names the ResourceQuota admission plugin refuses for a pod of ``namespace`` asking
    ``requests`` (:func:`pod_requests`), sorted; [] when it admits the pod on these grounds.

    As k8s.io/apiserver pkg/admission/plugin/resourcequota decides (``limitedByDefault``, then
    ``CheckRequest``): a consumed usage name (``requests.<resource>`` for an extended resource) is
    limited when it contains a ``matchContains`` string of a ``limitedResources`` entry for pods, and
    a limited name that no ResourceQuota of the namespace lists in ``spec.hard`` ("covers") is
    refused with "insufficient quota to consume"."""
    limited = _limited(limited_resources)
    covered = set()
    for quota in quotas or []:
        if (((quota or {}).get("metadata") or {}).get("namespace") or "default") == namespace:
            covered.update((((quota or {}).get("spec") or {}).get("hard") or {}).keys())
    result = []
    for name in sorted(requests or {}):
        if not requests[name] or "/" not in name:
            continue
        usage = "requests." + name
        if any(item in usage for item in limited) and usage not in covered:
            result.append(usage)
    return result


def prove(workloads, nodes, quotas=None, limited_resources=None):
    """Place every workload: ``{rows, problems}``.

    ``workloads``: ``[{name, namespace, pod, replicas?, every_node?, daemon_set?, alone?, alike?}]`` (``pod`` a
    PodSpec; ``every_node``: one pod per node, each node must take it; ``daemon_set``: one pod on each
    node its selector, affinity and tolerations admit, each of those must have room, and one must exist; ``alike``: ``[(name, node)]``,
    the same pod pinned to each of these nodes, shaped like the one ``pod`` is pinned to
    (:func:`node_shape`): judged once, a row each;
    ``alone``: a choice of which one runs at a time, its quota judged alone, like a JupyterHub
    profile); ``nodes``: the cluster model's nodes; ``quotas``: the ResourceQuota objects we
    render; ``limited_resources``: the ResourceQuota admission plugin's ``limitedResources``. Each row is ``{workload, namespace, asks,
    nodes, refused}`` (``refused``: {reason: [node names]}); each problem names the workload, what it
    asks and why each node refuses it."""
    index = Index(nodes)
    hard = _quota_hard(quotas)
    limited = _limited(limited_resources)
    used = {}
    rows, problems = [], []
    for workload in workloads or []:
        pod = workload.get("pod") or {}
        namespace = workload.get("namespace") or "default"
        requests = pod_requests(pod)
        replicas = max(int(workload.get("replicas", 1) or 0), 0)
        if workload.get("daemon_set"):
            fits, refused, admitted = index.selected(pod, requests)
        else:
            fits, refused = index.place(pod, requests)
            admitted = True
        asks = _asks(requests) or "nothing"
        alike = [(str(name), str(node)) for name, node in workload.get("alike") or []]
        rows.append({"workload": workload["name"], "namespace": namespace, "asks": asks, "nodes": fits,
                     "refused": refused})
        for name, node in alike:  # the same pod pinned to a node shaped like the one judged
            rows.append({"workload": name, "namespace": namespace, "asks": asks, "nodes": [node] if fits else [],
                         "refused": {} if fits else dict((reason, [node]) for reason in refused)})
        title = workload["name"]
        if alike:
            title += " (and the same on the %d nodes alike: %s)" % (len(alike), _names(node for _name, node in alike))
            refused = dict((reason, names + [node for _name, node in alike]) for reason, names in refused.items())
        if workload.get("daemon_set") and not admitted:
            problems.append("%s (namespace %s) is a DaemonSet whose node selector and tolerations admit no node"
                            % (title, namespace))
        elif workload.get("daemon_set") and refused:
            why = "; ".join("%s: %s" % (_names(names), reason) for reason, names in sorted(refused.items()))
            problems.append("%s (namespace %s) is a DaemonSet asking %s, and nodes it selects refuse it: %s" % (
                title, namespace, asks, why))
        elif workload.get("every_node") and refused:
            why = "; ".join("%s: %s" % (_names(names), reason) for reason, names in sorted(refused.items()))
            problems.append("%s (namespace %s) puts a pod on every node, and some refuse it: %s" % (
                title, namespace, why))
        elif not fits and replicas > 0:
            why = "; ".join("%s: %s" % (_names(names), reason) for reason, names in sorted(refused.items()))
            problems.append("%s (namespace %s) asks %s and fits no node: %s"
                            % (title, namespace, asks, why or "the cluster has no nodes"))
        unadmitted = set(usage[len("requests."):] for usage in uncovered(requests, namespace, quotas, limited_resources)) if limited else ()
        for name in sorted(requests):
            if not requests[name]:
                continue
            if name in unadmitted:
                problems.append(
                    "%s (namespace %s) asks %s %s, which the API server's ResourceQuota admission limits "
                    "(limitedResources) to namespaces whose quota grants it, and %s has none: grant it in the "
                    "pool's namespaces or choose another pool"
                    % (title, namespace, name, _show(name, requests[name]), namespace))
            elif name in hard.get(namespace, {}):
                total = used.get((namespace, name), 0) + requests[name] * max(replicas, 1)
                if not workload.get("alone"):
                    used[(namespace, name)] = total
                if total > hard[namespace][name]:
                    problems.append(
                        "%s (namespace %s) asks %s %s, beyond the namespace's ResourceQuota (%s of %s in all): "
                        "the quota admission refuses its pod; grant the namespace the pool or ask less"
                        % (title, namespace, name, _show(name, requests[name] * replicas),
                           _show(name, total), _show(name, hard[namespace][name])))
    return {"rows": rows, "problems": problems}


def _names(names, most=6):
    names = list(names)
    if not names:
        return "(no node)"
    if len(names) <= most:
        return ", ".join(names)
    return "%s and %d more" % (", ".join(names[:most]), len(names) - most)


def table(result):
    """The proof as text lines: workload, namespace, what it asks, the nodes that fit it."""
    lines = []
    for row in (result or {}).get("rows") or []:
        lines.append("%s [%s] asks %s -> %s" % (row["workload"], row["namespace"], row["asks"],
                                                _names(row["nodes"]) if row["nodes"] else "NO NODE"))
    return lines
