# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vaulted values the enabled components need, judged by preflight as their phases read them
(issue 43: "Inventory OK" means the run finishes; a missing vault used to surface only in the
management or apps phase, after the VMs and K3s existed).

A message names the variable and what to do, never its value.

Which components a run needs the secrets of (``secrets_needed``):
``True`` every component (``playbooks/preflight.yml``, ``site.yml``), ``False`` none (``render.yml``,
``schedule.yml`` and the phases that deliver none of them), or a list of :data:`COMPONENTS`.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import backups, cluster_model
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.management import INVENTORY_DEFAULTS, management_problems

# component -> the playbook that delivers it (the phase whose refusal preflight brings forward)
COMPONENTS = {"management": "playbooks/management.yml", "jupyterhub": "playbooks/apps.yml",
              "backups": "playbooks/storage.yml"}

# What the management settings read, as the management role's __management_check builds them.
_MANAGEMENT = ("gpu_cluster_management_enabled", "gpu_cluster_management_mode", "gpu_cluster_name",
               "gpu_cluster_rancher_hostname", "gpu_cluster_rancher_tls_source", "gpu_cluster_rancher_letsencrypt_email",
               "gpu_cluster_rancher_bootstrap_password", "gpu_cluster_rancher_tls_certificate",
               "gpu_cluster_rancher_tls_key", "gpu_cluster_fleet_repo", "gpu_cluster_fleet_branch",
               "gpu_cluster_fleet_gitrepo_name", "gpu_cluster_fleet_polling_interval", "gpu_cluster_fleet_git_username",
               "gpu_cluster_fleet_git_password", "gpu_cluster_fleet_git_ssh_private_key")
_HUB = ("gpu_cluster_jupyterhub_enabled", "gpu_cluster_jupyterhub_auth", "gpu_cluster_jupyterhub_oauth_client_secret",
        "gpu_cluster_delivery")

VAULT_HINT = "put it in the inventory's vault (docs/getting-started.md, section 4) and run with --ask-vault-pass"


def components(secrets_needed):
    """The components whose secrets a run needs: ``secrets_needed`` True (all), False/None (none) or
    a list of names of :data:`COMPONENTS`. Raises ValueError on anything else."""
    if secrets_needed is True:
        return list(COMPONENTS)
    if secrets_needed in (False, None):
        return []
    if isinstance(secrets_needed, (list, tuple)) and all(isinstance(name, str) for name in secrets_needed):
        unknown = [name for name in secrets_needed if name not in COMPONENTS]
        if unknown:
            raise ValueError("secrets_needed names %s; known: %s" % (", ".join(unknown), ", ".join(COMPONENTS)))
        return [name for name in COMPONENTS if name in secrets_needed]
    raise ValueError("secrets_needed must be true, false or a list of %s, got %s"
                     % (", ".join(COMPONENTS), type(secrets_needed).__name__))


def _text(value):
    """A secret's text as the role reads it (``| default('')``, ``| string``): None is empty."""
    return "" if value is None else str(value)


def _flag(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


def management_secret_problems(values):
    """The management role's own secret checks (management_problems with secrets_needed), on the
    inventory's values, minus what preflight refuses without secrets already."""
    def get(name, default=""):
        value = values.get(name)
        return default if value is None else value

    settings = {
        "enabled": _flag(values.get("gpu_cluster_management_enabled")),
        "mode": get("gpu_cluster_management_mode", INVENTORY_DEFAULTS["mode"]),
        "cluster": get("gpu_cluster_name"),
        "rancher_hostname": get("gpu_cluster_rancher_hostname"),
        "tls_source": get("gpu_cluster_rancher_tls_source", INVENTORY_DEFAULTS["tls_source"]),
        "letsencrypt_email": get("gpu_cluster_rancher_letsencrypt_email"),
        "bootstrap_password_length": len(_text(values.get("gpu_cluster_rancher_bootstrap_password"))),
        "tls_pair_set": bool(_text(values.get("gpu_cluster_rancher_tls_certificate"))
                             and _text(values.get("gpu_cluster_rancher_tls_key"))),
        "gitrepo_url": get("gpu_cluster_fleet_repo"),
        "gitrepo_branch": get("gpu_cluster_fleet_branch", INVENTORY_DEFAULTS["gitrepo_branch"]),
        "gitrepo_name": get("gpu_cluster_fleet_gitrepo_name", INVENTORY_DEFAULTS["gitrepo_name"]),
        "polling_interval": get("gpu_cluster_fleet_polling_interval", INVENTORY_DEFAULTS["polling_interval"]),
    }
    user, password = _text(values.get("gpu_cluster_fleet_git_username")), _text(values.get("gpu_cluster_fleet_git_password"))
    settings["git_basic_auth_set"] = bool(user or password)
    settings["git_basic_auth_complete"] = bool(user and password)
    settings["git_ssh_key_set"] = bool(_text(values.get("gpu_cluster_fleet_git_ssh_private_key")))
    if not settings["enabled"]:
        return []
    without = set(management_problems(settings, secrets_needed=False))
    return ["%s: %s needs it; %s" % (problem, COMPONENTS["management"], VAULT_HINT)
            for problem in management_problems(settings, secrets_needed=True) if problem not in without]


def jupyterhub_secret_problems(values):
    """The OAuth client secret of the github / generic-oauth authenticators, which direct delivery
    writes into a Secret (the jupyterhub role's preflight); the admin password is optional (generated)."""
    if not _flag(values.get("gpu_cluster_jupyterhub_enabled")):
        return []
    auth = values.get("gpu_cluster_jupyterhub_auth") or "native"
    delivery = values.get("gpu_cluster_delivery") or "direct"
    if auth in ("github", "generic-oauth") and delivery == "direct" \
            and not _text(values.get("gpu_cluster_jupyterhub_oauth_client_secret")):
        return ["gpu_cluster_jupyterhub_auth is %s: set gpu_cluster_jupyterhub_oauth_client_secret: %s writes it into "
                "a Secret; %s" % (auth, COMPONENTS["jupyterhub"], VAULT_HINT)]
    return []


def backup_secret_problems(inv):
    """The backup location's key pair: a key the inventory names but whose value is empty (a vault
    variable with ``| default('')`` and no vault loaded) would give Velero no credentials."""
    values = backups.inventory_values(inv)
    if values.get("enabled") is not True:
        return []
    location = values.get("s3") if isinstance(values.get("s3"), dict) and values.get("s3") else None
    name = "gpu_cluster_backup_s3"
    if location is None:
        location, name = values.get("etcd_s3") if isinstance(values.get("etcd_s3"), dict) else {}, "k3s_node_etcd_s3"
    empty = [key for key in ("access_key", "secret_key") if key in location and not _text(location[key])]
    if not empty:
        return []
    return ["%s.%s is empty (value not shown): %s writes the key pair into Velero's Secret; %s (or leave out "
            "both access_key and secret_key for an IAM role)" % (name, " and .".join(empty), COMPONENTS["backups"],
                                                                 VAULT_HINT)]


def secret_problems(inventory, hostvars=None, secrets_needed=True):
    """Every missing secret of the components a run needs (see the module's docstring).
    ``inventory``: a cluster_model.Inventory (or Ansible's groups, with ``hostvars``)."""
    inv = cluster_model.inventory(inventory, hostvars)
    wanted = components(secrets_needed)
    if not wanted:
        return []
    values = inv.values(_MANAGEMENT + _HUB)
    problems = []
    if "management" in wanted:
        problems.extend(management_secret_problems(values))
    if "jupyterhub" in wanted:
        problems.extend(jupyterhub_secret_problems(values))
    if "backups" in wanted:
        problems.extend(backup_secret_problems(inv))
    return problems
