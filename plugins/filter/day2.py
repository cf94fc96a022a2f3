# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter day2: the decisions of the day-2 playbooks (etcd_snapshot.yml restore, the cluster identity,
add_node.yml, remove_node.yml, backup_restore.yml, gpu_driver_upgrade.yml, gpu_node_maintenance.yml), over the private Python of
plugins/plugin_utils/."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import deferred, phase_filter

backups = deferred("backups")
gpu_driver = deferred("gpu_driver")
k3s = deferred("k3s")
k3s_parity = deferred("k3s_parity")


def _restore_plan(registered, servers, first_server, snapshot, backups_dir=None, s3=False, off=None, token=True):  # noqa: PLR0917 - a filter: Jinja passes by position
    """Where and how an etcd snapshot restore runs, or why it may not (k3s.restore_plan)."""
    return k3s.restore_plan(servers, first_server, k3s.restore_probes_from_results(registered), snapshot, backups_dir,
                            bool(s3), off, bool(token))


def _remove_node_problem(node, cluster_hosts, servers, allow_small_quorum=False):
    """'' when playbooks/remove_node.yml may remove `node`, else why not."""
    return k3s_parity.remove_node_problem(node, cluster_hosts, servers, bool(allow_small_quorum))


def _reset_limit_problem(servers_in_run, servers, allow_small_quorum=False):
    """'' when playbooks/reset.yml may reset this run's servers, else why not (k3s_parity.reset_limit_problem)."""
    return k3s_parity.reset_limit_problem(servers_in_run, servers, bool(allow_small_quorum))


STEPS = {
    "etcd_restore_plan": _restore_plan,
    "identity_plan": k3s.identity_plan,
    "join_version_problem": k3s.join_version_problem,
    "agent_upgrade_problem": k3s.agent_upgrade_problem,
    "remove_node_problem": _remove_node_problem,
    "reset_limit_problem": _reset_limit_problem,
    "backup_restore": backups.restore,
    "backup_restore_existing_problem": backups.restore_existing_problem,
    "backup_restore_report": backups.restore_report,
    "driver_upgrade_progress": gpu_driver.upgrade_progress,
    "maintenance_drain_problem": gpu_driver.maintenance_drain_problem,
}


class FilterModule(object):
    """day2."""

    def filters(self):
        return {"day2": phase_filter("day2", STEPS)}
