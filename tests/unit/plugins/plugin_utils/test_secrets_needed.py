"""secrets_needed: preflight judges the vaulted values of the components a run delivers, as their
phases read them (issue 43), and never prints a value.

What each phase refuses, and so what preflight must bring forward:
- management: roles/management/tasks/preflight.yml asserts management_problems(..., secrets_needed=True)
  on the values roles/management/vars/main.yml builds (bootstrap password length, the TLS pair, the
  Git user/password pair: ``| length > 0`` of each);
- jupyterhub: roles/jupyterhub/tasks/preflight.yml asserts ``jupyterhub_oauth_client_secret | length > 0``
  for github / generic-oauth under direct delivery;
- backups: roles/storage_components writes the key pair into Velero's Secret
  (backups.credentials_secret refuses a pair with an empty key).
The inventories are shaped as Ansible hands them: every host its own copy of each group_vars value.
"""

from __future__ import annotations

import copy

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import backups, inventory_checks, secrets_needed

HOSTS = ["cp1", "cp2", "cp3", "wk1"]
GROUPS = {"all": HOSTS, "k3s_cluster": HOSTS, "k3s_servers": HOSTS[:3], "k3s_agents": ["wk1"], "gpu_workers": ["wk1"]}

MANAGEMENT = {"gpu_cluster_name": "homelab", "gpu_cluster_management_enabled": True, "gpu_cluster_management_mode": "rancher",
              "gpu_cluster_rancher_hostname": "rancher.homelab.lan", "gpu_cluster_rancher_tls_source": "rancher",
              "gpu_cluster_rancher_bootstrap_password": "bootstrap-pw-0123",
              "gpu_cluster_fleet_repo": "https://git.homelab.lan/homelab/cluster-maintenance.git",
              "gpu_cluster_fleet_git_username": "fleet", "gpu_cluster_fleet_git_password": "fleet-token-0123"}


def hostvars(common):
    """Each host its own deep copy of the group_vars values (as ansible-core templates them per host)."""
    return {host: copy.deepcopy(common) for host in HOSTS}


def problems(common, needed=True):
    return secrets_needed.secret_problems(GROUPS, hostvars(common), needed)


def test_the_homelab_with_its_vault_needs_nothing_more():
    assert problems(MANAGEMENT) == []


@pytest.mark.parametrize("change, message", [
    # the homelab without its vault: `vault_... | default('')` gives empty strings
    ({"gpu_cluster_rancher_bootstrap_password": ""}, "gpu_cluster_rancher_bootstrap_password must be set"),
    ({"gpu_cluster_rancher_bootstrap_password": "eleven-char"}, "gpu_cluster_rancher_bootstrap_password must be set"),
    ({"gpu_cluster_rancher_bootstrap_password": None}, "gpu_cluster_rancher_bootstrap_password must be set"),
    ({"gpu_cluster_fleet_git_password": ""}, "gpu_cluster_fleet_git_username needs gpu_cluster_fleet_git_password"),
    ({"gpu_cluster_fleet_git_username": ""}, "gpu_cluster_fleet_git_username needs gpu_cluster_fleet_git_password"),
    ({"gpu_cluster_rancher_tls_source": "secret", "gpu_cluster_rancher_tls_certificate": "-----BEGIN CERTIFICATE-----"},
     "gpu_cluster_rancher_tls_source secret needs gpu_cluster_rancher_tls_certificate and gpu_cluster_rancher_tls_key"),
])
def test_a_missing_management_secret_is_refused_by_name(change, message):
    found = problems(dict(MANAGEMENT, **change))
    assert len(found) == 1 and found[0].startswith(message), found
    assert "playbooks/management.yml needs it" in found[0]
    for name, value in change.items():
        if value and name != "gpu_cluster_rancher_tls_source":  # a secret's value, never in a message
            assert value not in found[0]


def test_twelve_characters_are_enough_as_for_the_role():
    # roles/management: bootstrap_password_length is `| string | length`; management_problems wants >= 12
    assert problems(dict(MANAGEMENT, gpu_cluster_rancher_bootstrap_password="twelve-chars")) == []


def test_an_ssh_key_stands_for_the_git_password():
    common = dict(MANAGEMENT, gpu_cluster_fleet_git_username="", gpu_cluster_fleet_git_password="",
                  gpu_cluster_fleet_git_ssh_private_key="-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n")
    assert problems(common) == []


def test_management_off_or_another_mode_needs_no_rancher_password():
    assert problems(dict(MANAGEMENT, gpu_cluster_management_enabled=False, gpu_cluster_rancher_bootstrap_password="")) == []
    assert problems(dict(MANAGEMENT, gpu_cluster_management_mode="fleet", gpu_cluster_rancher_bootstrap_password="")) == []


HUB = {"gpu_cluster_jupyterhub_enabled": True, "gpu_cluster_jupyterhub_auth": "github"}


def test_the_hub_oauth_secret_is_needed_for_direct_delivery_only():
    found = problems(HUB)
    assert found == ["gpu_cluster_jupyterhub_auth is github: set gpu_cluster_jupyterhub_oauth_client_secret: "
                     "playbooks/apps.yml writes it into a Secret; " + secrets_needed.VAULT_HINT]
    assert problems(dict(HUB, gpu_cluster_jupyterhub_oauth_client_secret="s3cret-value")) == []
    assert problems(dict(HUB, gpu_cluster_delivery="fleet")) == []  # the user's Secret in the repository
    assert problems(dict(HUB, gpu_cluster_jupyterhub_auth="native")) == []  # the admin password is generated


BACKUP = {"gpu_cluster_backup_enabled": True,
          "gpu_cluster_backup_s3": {"endpoint": "minio.lan:9000", "bucket": "homelab", "folder": "velero",
                                    "access_key": "AKIAEXAMPLE", "secret_key": "wJalrEXAMPLEKEY"}}


def test_backup_keys_named_but_empty_are_refused_and_none_is_an_iam_role():
    assert problems(BACKUP) == []
    empty = copy.deepcopy(BACKUP)
    empty["gpu_cluster_backup_s3"]["secret_key"] = ""
    found = problems(empty)
    assert len(found) == 1 and found[0].startswith("gpu_cluster_backup_s3.secret_key is empty (value not shown)"), found
    assert "AKIAEXAMPLE" not in found[0]
    # what the phase would have done with it: velero's Secret refuses an empty key
    with pytest.raises(ValueError):
        backups.credentials_secret(empty["gpu_cluster_backup_s3"])
    iam = copy.deepcopy(BACKUP)
    del iam["gpu_cluster_backup_s3"]["access_key"], iam["gpu_cluster_backup_s3"]["secret_key"]
    assert problems(iam) == []


def test_each_phase_needs_only_its_own_secrets():
    common = dict(MANAGEMENT, gpu_cluster_rancher_bootstrap_password="", **HUB)
    assert len(problems(common, True)) == 2
    assert problems(common, False) == [] and problems(common, None) == []
    assert [p.split(":")[0] for p in problems(common, ["management"])] == [
        "gpu_cluster_rancher_bootstrap_password must be set (vaulted, at least 12 characters)"]
    assert [p.split(":")[0] for p in problems(common, ["jupyterhub"])] == ["gpu_cluster_jupyterhub_auth is github"]
    assert problems(common, ["backups"]) == []


@pytest.mark.parametrize("bad", ["yes", 1, ["rancher"], {"management": True}])
def test_secrets_needed_takes_a_bool_or_component_names(bad):
    with pytest.raises(ValueError):
        secrets_needed.components(bad)


def test_preflight_leaves_the_secrets_out_unless_asked():
    """inventory_problems (render.yml: secrets_needed false) accepts the inventory without its vault."""
    common = dict(MANAGEMENT, gpu_cluster_rancher_bootstrap_password="")
    without = [p for p in inventory_checks.inventory_problems(GROUPS, hostvars(common), schedule=False)
               if "bootstrap_password" in p]
    assert without == []
    asked = [p for p in inventory_checks.inventory_problems(GROUPS, hostvars(common), schedule=False, secrets_needed=True)
             if "bootstrap_password" in p]
    assert len(asked) == 1
