"""What the day-2 tests of the k3s scenarios (k3s_reset, k3s_restore) share: ansible-playbook against the
scenario's containers (molecule's inventory), a command in a container, the k3s files they read, the
stand-in release server and the etcd restore (playbooks/etcd_snapshot.yml). Each tests/ directory's
conftest.py puts molecule/shared on sys.path."""

import json
import os
import subprocess
from pathlib import Path

import yaml

REPO = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).resolve().parents[2]))
# molecule's inventory directory: the connection (ansible_inventory.yml) and the groups (hosts)
INVENTORY = str(Path(os.environ["MOLECULE_INVENTORY_FILE"]).parent) if os.environ.get("MOLECULE_INVENTORY_FILE") else ""
EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))
# the scenario's state directory (gpu_cluster_state_dir in molecule.yml): identity, server token, pending restore
STATE = EPHEMERAL / "state"
DB = "/var/lib/rancher/k3s/server/db"
# Until systemd's boot is over (a container stopped and started again): `is-system-running --wait` returns
# then, and says "degraded" in these containers (run-rpc_pipefs.mount cannot mount there), which the
# old loop (`-q --wait && break`) took for "not yet" and waited out its 60 s each time.
BOOTED = ("for i in $(seq 60); do case \"$(systemctl is-system-running --wait 2>/dev/null)\" in running|degraded) break;; "
          "esac; sleep 1; done; true")
# The stand-in release server (prepare.yml, molecule/shared/tasks/standin_release.yml) is a transient unit:
# a container stopped and started again (podman stop/start) has lost it; k3s.yml reads the checksum from it.
SERVE_RELEASES = ("systemctl is-active -q fake-k3s-release || systemd-run --unit=fake-k3s-release "
                  "python3 -m http.server --bind 127.0.0.1 --directory /srv/k3s-release 18080 >/dev/null; "
                  "for i in $(seq 30); do python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:18080/\")' "
                  "2>/dev/null && break; sleep 1; done")


def playbook(name, *args, **extra):
    """(rc, output) of ansible-playbook playbooks/<name> on the scenario's inventory; extra as -e JSON."""
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_LOG_PATH=str(EPHEMERAL / "day2.log"))
    cmd = ["ansible-playbook", "-i", INVENTORY, str(REPO / "playbooks" / name), *args]
    if extra:
        cmd += ["-e", json.dumps(extra)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=3600, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def sh(host, command, check=True):
    proc = subprocess.run(["podman", "exec", host, "sh", "-c", command], capture_output=True, text=True,
                          check=False)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc.stdout


def config(host):
    return yaml.safe_load(sh(host, "cat /etc/rancher/k3s/config.yaml"))


def active(host):
    return sh(host, "systemctl is-active k3s || true").strip()


def ip(host):
    return sh(host, "ip -4 -o route get 1.1.1.1 | sed -n 's/.* src \\([0-9.]*\\).*/\\1/p'").strip()


def serve_releases(hosts):
    for host in hosts:
        sh(host, f"{BOOTED}; {SERVE_RELEASES}")


def start_servers(hosts):
    for host in hosts:
        sh(host, "systemctl start k3s")
        assert active(host) == "active", host


def restore(name, **extra):
    """playbooks/etcd_snapshot.yml restoring snapshot ``name`` (confirmed; a short wait for etcd's health)."""
    return playbook("etcd_snapshot.yml", k3s_snapshot_action="restore", k3s_snapshot_name=name,
                    k3s_snapshot_restore_confirm=True, k3s_snapshot_restore_wait_retries=3, **extra)


def snapshot_as(host, name):
    """A snapshot as k3s writes it, `k3s etcd-snapshot save` on a server whose etcd runs (the stand-in's
    file carries the key of the token the data was created with), renamed to `name`."""
    sh(host, f"/usr/local/bin/k3s etcd-snapshot save --name tmp-{name} >/dev/null && "
             f"mv \"$(ls -t {DB}/snapshots/tmp-{name}-* | head -1)\" {DB}/snapshots/{name}")
