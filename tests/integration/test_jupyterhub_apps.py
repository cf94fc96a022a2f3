"""JupyterHub in the apps phase without a cluster: SKIPPED with its reason in a lab, the Fleet bundle
written idempotently with no secret in it, the verify entry point's SKIPPED row, and the preflight
warning of the insecure-lab dummy authenticator."""

from __future__ import annotations

import json
import re

import yaml
from test_llm_apps import HOMELAB, REPO, playbook, unreachable_kubeconfig

SECRET = "integration-oauth-secret-42"


def test_apps_phase_skips_jupyterhub_without_a_reachable_api_in_a_lab(tmp_path):
    rc, out = playbook(REPO / "playbooks" / "apps.yml", "-i", HOMELAB,
                       "-e", f"gpu_cluster_kubeconfig={unreachable_kubeconfig(tmp_path / 'kubeconfig')}",
                       "-e", '{"gpu_cluster_lab": true}')
    assert rc == 0, out
    assert "SKIPPED apps: JupyterHub: no Kubernetes API server answers at 127.0.0.1:1" in out, out


def test_apps_phase_says_jupyterhub_is_switched_off():
    rc, out = playbook(REPO / "playbooks" / "apps.yml", "-i", HOMELAB,
                       "-e", '{"gpu_cluster_llm_models": [], "gpu_cluster_jupyterhub_enabled": false}')
    assert rc == 0, out
    assert "SKIPPED apps: JupyterHub: gpu_cluster_jupyterhub_enabled is false" in out


def test_fleet_bundle_idempotent_and_without_the_oauth_secret(tmp_path):
    extra = {"gpu_cluster_llm_models": [], "gpu_cluster_jupyterhub_auth": "github",
             "gpu_cluster_jupyterhub_oauth": {"client_id": "abc"},
             "gpu_cluster_jupyterhub_oauth_client_secret": SECRET}
    args = (REPO / "playbooks" / "apps.yml", "-i", HOMELAB, "-e", "gpu_cluster_delivery=fleet",
            "-e", f"gpu_cluster_fleet_dir={tmp_path}", "-e", json.dumps(extra))
    rc, out = playbook(*args)
    assert rc == 0, out
    bundle = tmp_path / "homelab" / "jupyterhub"
    assert sorted(p.name for p in bundle.iterdir()) == [
        "00-namespace-jupyterhub.yaml", "01-resourcequota-jupyterhub.yaml", "02-limitrange-jupyterhub.yaml",
        "03-daemonset-notebook-image-puller.yaml", "fleet.yaml"]
    for path in bundle.iterdir():
        assert SECRET not in path.read_text(), path
    assert SECRET not in out
    values = yaml.safe_load((bundle / "fleet.yaml").read_text())["helm"]["values"]
    assert values["hub"]["extraEnv"]["OAUTH_CLIENT_SECRET"]["valueFrom"]["secretKeyRef"]["key"] == "client-secret"
    rc, out = playbook(*args)
    assert rc == 0, out
    assert re.search(r"localhost\s*:\s*ok=\d+\s+changed=0\b", out), out


def verify_rows(tmp_path, *extra):
    play = tmp_path / "verify.yml"
    play.write_text(yaml.safe_dump([{
        "name": "Verify JupyterHub", "hosts": "localhost", "gather_facts": False,
        "tasks": [
            {"name": "Run the verify entry point", "ansible.builtin.include_role": {
                "name": "cps.gpu_cluster.jupyterhub", "tasks_from": "verify.yml"}},
            {"name": "Show the rows", "ansible.builtin.debug": {"msg": "ROWS={{ jupyterhub_verify_rows | to_json }}"}},
        ]}]))
    rc, out = playbook(play, "-i", HOMELAB, *extra)
    assert rc == 0, out
    match = re.search(r'"ROWS=(\[.*\])"', out)
    assert match, out
    return json.loads(match.group(1).replace('\\"', '"'))


def test_verify_is_skipped_with_its_reason_under_fleet(tmp_path):
    rows = verify_rows(tmp_path, "-e", "gpu_cluster_delivery=fleet")
    assert rows == [{"check": "jupyterhub", "target": "jupyterhub", "status": "SKIPPED",
                     "detail": "gpu_cluster_delivery is fleet: Fleet applies the bundle, verify it after Fleet has"}]


def test_verify_is_skipped_with_the_callers_reason(tmp_path):
    rows = verify_rows(tmp_path, "-e", "jupyterhub_verify_skip_reason='no Kubernetes API server answers'")
    assert rows == [{"check": "jupyterhub", "target": "jupyterhub", "status": "SKIPPED",
                     "detail": "no Kubernetes API server answers"}]


def test_preflight_warns_loudly_about_the_dummy_authenticator():
    rc, out = playbook(REPO / "playbooks" / "preflight.yml", "-i", HOMELAB, "-e", "@" + str(REPO / "tests" / "fixtures" / "homelab-vault.yml"),
                       "-e", json.dumps({"gpu_cluster_jupyterhub_auth": "dummy", "gpu_cluster_jupyterhub_insecure_lab": True}))
    assert rc == 0, out
    assert "!!! INSECURE: JupyterHub uses the dummy authenticator" in out
