"""A stand-in Kubernetes API server on localhost for the playbooks that act on a running cluster
(issue 47: playbooks/gpu_node_maintenance.yml). It holds Node and Pod objects and answers the calls
the kubernetes Python client and kubernetes.core's modules make, refusing what the real API server
refuses:

- discovery (/version, /api, /apis, /api/v1, /apis/policy/v1) as the client reads it;
- Nodes: GET, list, PATCH. A patch is a JSON object in ``application/merge-patch+json`` or
  ``application/strategic-merge-patch+json`` (for a Node's labels and ``spec.unschedulable`` the
  strategic merge is the merge patch of RFC 7386: maps merge, ``null`` deletes); a JSON patch must be a
  list of operations and any other media type is refused with 415, as
  k8s.io/apiserver/pkg/endpoints/handlers/patch.go does;
- Pods: GET, list with ``fieldSelector=spec.nodeName=<node>`` (the one field selector pods support
  for a node, k8s.io/kubernetes/pkg/registry/core/pod/strategy.go ``PodToSelectableFields``; any other
  field selector is refused with 400), and the eviction subresource
  (POST .../pods/<name>/eviction, policy/v1 Eviction, whose name must be the pod's:
  pkg/registry/core/pod/storage/eviction.go; the kubernetes client sends it without a Content-Type and
  without kind and apiVersion, which the server reads as JSON and as the subresource's kind); an evicted
  pod is deleted (no PodDisruptionBudget here);
- ConfigMaps (issue 47: verify's GPU inventory): GET, create (POST) in a namespace that exists (else
  404 ``namespaces "<ns>" not found``, as the NamespaceLifecycle admission plugin answers), the name
  and namespace of the body matching the URL, every ``data`` value a string and every key a valid
  ConfigMap key (``[-._a-zA-Z0-9]+``, k8s.io/apimachinery validation IsConfigMapKey; 422 otherwise),
  a second create 409 AlreadyExists; PATCH as for Nodes; ``dryRun=All`` (check mode's server-side dry
  run) validates and answers without storing.

Every call is recorded in ``calls`` as (method, path, content type, body)."""

from __future__ import annotations

import copy
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import yaml
from test_preflight import merge_patch

# A real Node of a GPU Operator cluster (tests/fixtures/SOURCES.md, k8s-node/)
RECORDED_NODE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "k8s-node" /
                            "node__tesla-t4-x2__gpu-operator.json").read_text())


def recorded_node(name):
    """The recorded Node renamed ``name`` (its hostname label too)."""
    node = copy.deepcopy(RECORDED_NODE)
    node["metadata"]["name"] = name
    node["metadata"]["labels"]["kubernetes.io/hostname"] = name
    return node


CORE_RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": [
    {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["no"]},
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["po"]},
    {"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy", "version": "v1",
     "kind": "Eviction", "verbs": ["create"]},
    {"name": "configmaps", "singularName": "configmap", "namespaced": True, "kind": "ConfigMap",
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["cm"]},
    {"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace",
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["ns"]}]}
POLICY_GROUP = {"name": "policy", "versions": [{"groupVersion": "policy/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "policy/v1", "version": "v1"}}
POLICY_RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "policy/v1", "resources": [
    {"name": "poddisruptionbudgets", "singularName": "poddisruptionbudget", "namespaced": True,
     "kind": "PodDisruptionBudget", "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
     "shortNames": ["pdb"]}]}
NODES_PATH = "/".join(("", "api", "v1", "nodes", ""))
OBJECT_PATCHES = ("application/merge-patch+json", "application/strategic-merge-patch+json")
CONFIGMAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class KubeStandIn:
    """The API of ``nodes`` ({name: Node}) and ``pods`` ({(namespace, name): Pod})."""

    def __init__(self, nodes, pods=(), namespaces=("default", "kube-system")):
        self.nodes = dict(nodes)
        self.pods = dict(((pod["metadata"]["namespace"], pod["metadata"]["name"]), pod) for pod in pods)
        self.namespaces = set(namespaces)
        self.configmaps = {}
        self.calls = []
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def body(self):
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def handle_call(self, method):
                url = urlsplit(self.path)
                raw = self.body()
                content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                with api.lock:
                    api.calls.append((method, url.path.rstrip("/"), content_type, raw.decode() if raw else ""))
                    code, body = api.answer(method, url.path.rstrip("/"), parse_qs(url.query), content_type, raw)
                self.reply(code, body)

            def do_GET(self):
                self.handle_call("GET")

            def do_PATCH(self):
                self.handle_call("PATCH")

            def do_POST(self):
                self.handle_call("POST")

            def do_DELETE(self):
                self.handle_call("DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # -- the API ---------------------------------------------------------------------------------
    def answer(self, method, path, query, content_type, raw):
        parts = path.strip("/").split("/")
        if method == "GET":
            found = self.discovery(path)
            if found is not None:
                return 200, found
        if parts[:2] == ["api", "v1"] and len(parts) >= 3 and parts[2] == "nodes":
            return self.node_call(method, parts[3:], content_type, raw)
        if parts[:2] == ["api", "v1"] and parts[2:] == ["pods"] and method == "GET":
            return self.pod_list(query)
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) >= 6 and parts[4] == "pods":
            return self.pod_call(method, parts[3], parts[5], parts[6:], content_type, raw)
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) in (5, 6) and parts[4] == "configmaps":
            dry_run = query.get("dryRun") == ["All"]
            return self.configmap_call(method, parts[3], parts[5] if len(parts) == 6 else None, content_type, raw, dry_run)
        return 404, status(404, "NotFound", "the server could not find the requested resource")

    def discovery(self, path):
        if path == "/version":
            return {"major": "1", "minor": "36", "gitVersion": "v1.36.4+k3s1", "platform": "linux/amd64"}
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}
        if path == "/apis":
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [POLICY_GROUP]}
        if path == "/api/v1":
            return CORE_RESOURCES
        if path == "/apis/policy/v1":
            return POLICY_RESOURCES
        return None

    def node_call(self, method, rest, content_type, raw):  # noqa: PLR0911 -- one return per answer of the API
        if not rest:
            if method != "GET":
                return 405, status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            return 200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                         "items": [_item(node) for node in self.nodes.values()]}
        name = rest[0]
        if name not in self.nodes:
            return 404, status(404, "NotFound", f'nodes "{name}" not found')
        if method == "GET" and len(rest) == 1:
            return 200, self.nodes[name]
        if method == "PATCH" and len(rest) == 1:
            problem = _patch_problem(content_type, raw)
            if problem:
                return problem
            self.nodes[name] = merge_patch(self.nodes[name], json.loads(raw))
            return 200, self.nodes[name]
        return 405, status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def pod_list(self, query):
        selectors = query.get("fieldSelector", [])
        node = None
        for selector in selectors:
            key, _sep, value = selector.partition("=")
            if key != "spec.nodeName" or not value:
                return 400, status(400, "BadRequest", f"field label not supported: {key}")
            node = value
        items = [_item(pod) for pod in self.pods.values() if node is None or pod["spec"].get("nodeName") == node]
        return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}

    def pod_call(self, method, namespace, name, rest, content_type, raw):  # noqa: PLR0911, PLR0917
        pod = self.pods.get((namespace, name))
        if method == "GET" and not rest:
            if pod is None:
                return 404, status(404, "NotFound", f'pods "{name}" not found')
            return 200, pod
        if method == "POST" and rest == ["eviction"]:
            # no Content-Type is the first media type the server decodes, JSON
            # (k8s.io/apiserver/pkg/endpoints/handlers/negotiation, NegotiateInputSerializerForMediaType)
            if content_type not in ("", "application/json"):
                return 415, status(415, "UnsupportedMediaType", "the body of the request was in an unknown format")
            eviction = json.loads(raw or b"{}")
            # kind and apiVersion default to the subresource's own (the decoder's default GroupVersionKind)
            if eviction.get("kind", "Eviction") != "Eviction" or \
                    eviction.get("apiVersion", "policy/v1") not in ("policy/v1", "policy/v1beta1"):
                return 400, status(400, "BadRequest", "the body is no policy/v1 Eviction")
            if (eviction.get("metadata") or {}).get("name") != name:
                return 400, status(400, "BadRequest", "name in URL does not match name in Eviction object")
            if pod is None:
                return 404, status(404, "NotFound", f'pods "{name}" not found')
            del self.pods[(namespace, name)]
            return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
        return 405, status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def configmap_call(self, method, namespace, name, content_type, raw, dry_run=False):  # noqa: PLR0911, PLR0917 -- one return per answer
        key = (namespace, name)
        if method == "GET" and name is not None:
            if key not in self.configmaps:
                return 404, status(404, "NotFound", f'configmaps "{name}" not found')
            return 200, self.configmaps[key]
        if method == "POST" and name is None:
            if content_type not in ("", "application/json"):
                return 415, status(415, "UnsupportedMediaType", "the body of the request was in an unknown format")
            body = json.loads(raw or b"{}")
            meta = body.get("metadata") or {}
            if meta.get("namespace", namespace) != namespace:
                return 400, status(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
            data = body.get("data") or {}
            bad = [k for k, v in data.items() if not isinstance(v, str) or not CONFIGMAP_KEY.fullmatch(k)]
            if bad:
                return 422, status(422, "Invalid", f'ConfigMap "{meta.get("name")}" is invalid: data[{bad[0]}]')
            if namespace not in self.namespaces:
                return 404, status(404, "NotFound", f'namespaces "{namespace}" not found')
            if (namespace, meta.get("name")) in self.configmaps:
                return 409, status(409, "AlreadyExists", f'configmaps "{meta.get("name")}" already exists')
            stored = dict(body, kind="ConfigMap", apiVersion="v1")
            stored["metadata"] = dict(meta, namespace=namespace, resourceVersion="1", uid=f"uid-{meta.get('name')}")
            if not dry_run:  # dryRun=All: validated and admitted, never persisted (the API's server-side dry run)
                self.configmaps[(namespace, meta.get("name"))] = stored
            return 201, stored
        if method == "PATCH" and name is not None:
            if key not in self.configmaps:
                return 404, status(404, "NotFound", f'configmaps "{name}" not found')
            problem = _patch_problem(content_type, raw)
            if problem:
                return problem
            patched = merge_patch(self.configmaps[key], json.loads(raw))
            if not dry_run:
                self.configmaps[key] = patched
            return 200, patched
        return 405, status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def writes(self, resource):
        """(method, path) of every POST, PATCH, PUT or DELETE on ``resource`` (a plural name), in order."""
        return [(method, path) for method, path, _type, _body in self.calls
                if method in ("POST", "PATCH", "PUT", "DELETE") and f"/{resource}" in path]

    # -- the server ------------------------------------------------------------------------------
    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def kubeconfig(self, path):
        """A kubeconfig for this server written to ``path``."""
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "standin",
            "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
            "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "admin"}}],
            "users": [{"name": "admin", "user": {"token": "standin-admin-token"}}]}))
        return path

    def evicted(self):
        """(namespace, pod) of every eviction the server accepted or refused, in order."""
        return [(path.split("/")[4], path.split("/")[6]) for method, path, _type, _body in self.calls
                if method == "POST" and path.endswith("/eviction")]

    def patched_nodes(self):
        """The names of the Nodes a PATCH was sent for, sorted."""
        return sorted(set(path.rsplit("/", 1)[1] for method, path, _type, _body in self.calls
                          if method == "PATCH" and path.startswith(NODES_PATH)))

    def node_patches(self, name):
        return [json.loads(body) for method, path, _type, body in self.calls
                if method == "PATCH" and path == f"/api/v1/nodes/{name}"]


def _item(obj):
    """An object as a list holds it: without kind and apiVersion (the list's own say them)."""
    return dict((key, value) for key, value in obj.items() if key not in ("kind", "apiVersion"))


def _patch_problem(content_type, raw):
    if content_type == "application/json-patch+json":
        if not isinstance(json.loads(raw or b"null"), list):
            return 400, status(400, "BadRequest", "json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp")
        return 415, status(415, "UnsupportedMediaType", "the stand-in applies object patches only")
    if content_type not in OBJECT_PATCHES:
        message = ("the body of the request was in an unknown format - accepted media types include: "
                   "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, "
                   "application/strategic-merge-patch+json")
        return 415, status(415, "UnsupportedMediaType", message)
    if not isinstance(json.loads(raw or b"null"), dict):
        return 400, status(400, "BadRequest", "the patch is no JSON object")
    return None
