# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own variable names, and the refusal of a name of its prefixes that it does not read.

A misspelt or renamed setting (``gpu_cluster_jupyterhub_enable``, ``k3s_node_tokn``) is silently
ignored by Ansible: the role takes its default and the user never learns why. Preflight refuses every
variable of the collection's prefixes (``gpu_cluster_`` and each role's name followed by ``_``) that the
collection does not read, suggesting the closest known name, and tells an inventory written for an
earlier release the new name (``RENAMED``) (issue 43).

``GPU_CLUSTER_VARIABLES`` is every ``gpu_cluster_*`` name the roles, playbooks, plugins, inventories,
Terraform module and lab read; a unit test greps them and keeps this table equal to what it finds.
A role's variables are the options of its ``meta/argument_specs.yml`` (every entry point). Pure
functions, unit-tested.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import difflib

GPU_CLUSTER_PREFIX = "gpu_cluster_"

GPU_CLUSTER_VARIABLES = frozenset([
    "gpu_cluster_api_vip", "gpu_cluster_backup_dir", "gpu_cluster_backup_enabled", "gpu_cluster_backup_namespaces",
    "gpu_cluster_backup_s3", "gpu_cluster_backup_schedule", "gpu_cluster_backup_ttl", "gpu_cluster_cluster_cidr",
    "gpu_cluster_delivery", "gpu_cluster_dns_servers", "gpu_cluster_domain", "gpu_cluster_firewall_clients",
    "gpu_cluster_firewall_enabled", "gpu_cluster_firewall_nodeports", "gpu_cluster_firewall_ssh_clients",
    "gpu_cluster_fleet_branch",
    "gpu_cluster_fleet_dir", "gpu_cluster_fleet_git_known_hosts", "gpu_cluster_fleet_git_password",
    "gpu_cluster_fleet_git_ssh_private_key", "gpu_cluster_fleet_git_username", "gpu_cluster_fleet_gitrepo_name",
    "gpu_cluster_fleet_polling_interval", "gpu_cluster_fleet_repo", "gpu_cluster_gateway", "gpu_cluster_gpu_count",
    "gpu_cluster_gpu_device_id", "gpu_cluster_gpu_driver_enabled", "gpu_cluster_gpu_driver_max_parallel_upgrades",
    "gpu_cluster_gpu_driver_on_host", "gpu_cluster_gpu_driver_upgrade_timeout", "gpu_cluster_gpu_driver_version",
    "gpu_cluster_gpu_model", "gpu_cluster_gpu_operator_version", "gpu_cluster_gpu_pci_devices",
    "gpu_cluster_gpu_pci_ids", "gpu_cluster_gpu_pci_mappings", "gpu_cluster_gpu_pools", "gpu_cluster_gpu_taint",
    "gpu_cluster_host_failure_tolerance", "gpu_cluster_http_proxy", "gpu_cluster_https_proxy", "gpu_cluster_ingress_class",
    "gpu_cluster_jupyterhub_admin_password", "gpu_cluster_jupyterhub_admin_users",
    "gpu_cluster_jupyterhub_allowed_users", "gpu_cluster_jupyterhub_auth", "gpu_cluster_jupyterhub_cert_issuer",
    "gpu_cluster_jupyterhub_cull_timeout", "gpu_cluster_jupyterhub_drop_unsatisfiable_profiles",
    "gpu_cluster_jupyterhub_enabled", "gpu_cluster_jupyterhub_home_size", "gpu_cluster_jupyterhub_host",
    "gpu_cluster_jupyterhub_ingress_class", "gpu_cluster_jupyterhub_insecure_lab",
    "gpu_cluster_jupyterhub_named_servers", "gpu_cluster_jupyterhub_namespace", "gpu_cluster_jupyterhub_oauth",
    "gpu_cluster_jupyterhub_oauth_client_secret", "gpu_cluster_jupyterhub_prepull",
    "gpu_cluster_jupyterhub_profiles", "gpu_cluster_jupyterhub_quota", "gpu_cluster_jupyterhub_scratch_size",
    "gpu_cluster_jupyterhub_tls", "gpu_cluster_k3s_agent_batch", "gpu_cluster_k3s_cis_profile",
    "gpu_cluster_k3s_drain_timeout", "gpu_cluster_k3s_upgrade_snapshot_retention", "gpu_cluster_k3s_version",
    "gpu_cluster_kubeconfig", "gpu_cluster_lab", "gpu_cluster_llm_api_key", "gpu_cluster_llm_cert_issuer",
    "gpu_cluster_llm_client_namespaces", "gpu_cluster_llm_engine", "gpu_cluster_llm_ingress_class",
    "gpu_cluster_llm_models", "gpu_cluster_llm_monitoring_enabled", "gpu_cluster_llm_namespace", "gpu_cluster_llm_operator_install",
    "gpu_cluster_llm_queue_alert_threshold", "gpu_cluster_llm_tls", "gpu_cluster_logs_enabled",
    "gpu_cluster_logs_retention", "gpu_cluster_logs_storage_size", "gpu_cluster_maintenance_action",
    "gpu_cluster_maintenance_drain_timeout", "gpu_cluster_maintenance_force",
    "gpu_cluster_maintenance_node", "gpu_cluster_management_enabled",
    "gpu_cluster_management_mode", "gpu_cluster_monitoring_enabled", "gpu_cluster_monitoring_retention",
    "gpu_cluster_monitoring_storage_size", "gpu_cluster_name", "gpu_cluster_nfs_mount_options", "gpu_cluster_nfs_path",
    "gpu_cluster_nfs_server",
    "gpu_cluster_no_proxy", "gpu_cluster_node_feature_rules", "gpu_cluster_node_ip", "gpu_cluster_node_labels", "gpu_cluster_node_name",
    "gpu_cluster_node_network", "gpu_cluster_node_taints", "gpu_cluster_numa_allow_span",
    "gpu_cluster_numa_host_cores", "gpu_cluster_numa_host_memory_mb", "gpu_cluster_numa_hugepages",
    "gpu_cluster_numa_placement", "gpu_cluster_numa_topology_file", "gpu_cluster_pod_security_exempt_namespaces",
    "gpu_cluster_preflight", "gpu_cluster_provision_enabled", "gpu_cluster_provision_inventory_path",
    "gpu_cluster_provision_ssh_public_keys", "gpu_cluster_provision_ssh_timeout",
    "gpu_cluster_proxmox_api_token_id", "gpu_cluster_proxmox_api_token_secret", "gpu_cluster_proxmox_api_url",
    "gpu_cluster_proxmox_bridge", "gpu_cluster_proxmox_host", "gpu_cluster_proxmox_node", "gpu_cluster_proxmox_scratch_storage",
    "gpu_cluster_proxmox_storage", "gpu_cluster_proxmox_template_id", "gpu_cluster_proxmox_validate_certs",
    "gpu_cluster_rancher_bootstrap_password", "gpu_cluster_rancher_hostname",
    "gpu_cluster_rancher_letsencrypt_email", "gpu_cluster_rancher_tls_certificate", "gpu_cluster_rancher_tls_key",
    "gpu_cluster_rancher_tls_source", "gpu_cluster_render_manifests", "gpu_cluster_restore_backup",
    "gpu_cluster_restore_existing_pvcs", "gpu_cluster_restore_name", "gpu_cluster_restore_namespaces",
    "gpu_cluster_restore_render_dir", "gpu_cluster_restore_timeout", "gpu_cluster_routed_networks",
    "gpu_cluster_scratch_device", "gpu_cluster_scratch_disk_gb", "gpu_cluster_scratch_mount",
    "gpu_cluster_service_cidr", "gpu_cluster_state_dir", "gpu_cluster_state_storage_class",
    "gpu_cluster_terraform_binary", "gpu_cluster_terraform_dir", "gpu_cluster_terraform_plugin_paths",
    "gpu_cluster_verify_expected", "gpu_cluster_verify_fast_scratch_class",
    "gpu_cluster_verify_fast_scratch_node_selector", "gpu_cluster_verify_gpu_perf_models",
    "gpu_cluster_verify_gpu_inventory", "gpu_cluster_verify_gpu_perf_thresholds", "gpu_cluster_verify_gpu_probe", "gpu_cluster_verify_gpu_probe_burn",
    "gpu_cluster_verify_gpu_resource", "gpu_cluster_verify_images", "gpu_cluster_verify_job_timeout",
    "gpu_cluster_verify_llm_wait_timeout", "gpu_cluster_verify_namespace", "gpu_cluster_verify_network",
    "gpu_cluster_verify_nfs_class", "gpu_cluster_verify_render_dir", "gpu_cluster_verify_report_dir",
    "gpu_cluster_verify_scratch_mib", "gpu_cluster_verify_smoke_tests", "gpu_cluster_verify_tensorflow",
    "gpu_cluster_verify_wait_timeout", "gpu_cluster_vm_cores", "gpu_cluster_vm_disk_gb", "gpu_cluster_vm_memory_mb",
    "gpu_cluster_vm_preset",
])

# Settings an earlier release read, which this one does not: old name -> (new name, what changed).
RENAMED = {
    # commit dd5eb4e: the driver upgrade's wait is bounded in seconds, not in retries of 30 s
    "gpu_cluster_gpu_driver_upgrade_retries": (
        "gpu_cluster_gpu_driver_upgrade_timeout", "seconds, not retries: the old value times 30"),
}


def prefixes(role_names):
    """The collection's variable prefixes: ``gpu_cluster_`` and ``<role>_`` for each role."""
    return (GPU_CLUSTER_PREFIX, *sorted("%s_" % role for role in role_names))


def owner(name, role_names):
    """The role whose prefix ``name`` carries (the longest), ``""`` for ``gpu_cluster_`` names, None
    for a name of no prefix of the collection."""
    if not isinstance(name, str):
        return None
    if name.startswith(GPU_CLUSTER_PREFIX):
        return ""
    roles = [role for role in role_names if name.startswith(role + "_")]
    return max(roles, key=len) if roles else None


def unknown_variable_problems(names, role_options, where=None):
    """One message per variable of the collection's prefixes that it does not read.

    ``names``: {variable name: [hosts that set it]}; ``role_options``: {role: its options};
    ``where``: hosts -> text (the first host and how many more). The message names the variable,
    never its value; it suggests the renamed setting's new name, else the closest known name of
    that prefix (``difflib``), else lists where the names are documented."""
    role_options = role_options if isinstance(role_options, dict) else {}
    where = where or ", ".join
    problems = []
    for name in sorted(n for n in names if isinstance(n, str)):
        role = owner(name, role_options)
        if role is None:
            continue
        known = GPU_CLUSTER_VARIABLES if role == "" else frozenset(role_options.get(role) or ())
        if name in known:
            continue
        head = "%s: %s is not a setting of cps.gpu_cluster" % (where(list(names[name])), name)
        if name in RENAMED:
            new, change = RENAMED[name]
            problems.append("%s: it was renamed; set %s instead (%s)" % (head, new, change))
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        docs = "docs/inventory.md" if role == "" else "roles/%s/README.md" % role
        if close:
            problems.append("%s (a misspelt setting is ignored): did you mean %s? (%s lists the settings)"
                            % (head, close[0], docs))
        else:
            problems.append("%s (a misspelt setting is ignored); %s lists the settings" % (head, docs))
    return problems
