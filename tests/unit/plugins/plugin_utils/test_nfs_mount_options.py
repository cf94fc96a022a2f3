"""NFS mount options (issue 47): gpu_cluster_nfs_mount_options feeds the nfs-client StorageClass's
mountOptions and the nfs_client role's fstab lines, and preflight refuses what mount.nfs refuses.

The expectations come from the manuals the mount reads them by, vendored from Debian bookworm
(tests/fixtures/man/, origins in tests/fixtures/SOURCES.md): nfs(5) of nfs-utils 2.6.2 (the NFS
options, their values and limits), mount(8) of util-linux 2.38.1 (the filesystem-independent options
like noatime) and fstab(5) (the options field)."""

from __future__ import annotations

import copy
import gzip
import re
from pathlib import Path

import pytest
from ansible_collections.cps.gpu_cluster.plugins.filter.inventory_problems import role_specs
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import inventory_checks as ic
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import storage_components as sc
from test_inventory_checks import homelab, one

MAN = Path(__file__).resolve().parents[3] / "fixtures" / "man"


def man(name):
    return gzip.decompress((MAN / name).read_bytes()).decode()


def nfs5_options():
    """{option name: takes a value} of nfs(5)'s option headings (the line after each .TP)."""
    lines = man("nfs.5.gz").splitlines()
    options = {}
    for before, line in zip(lines, lines[1:]):
        if before.startswith(".TP") and re.match(r"\.B[IR]? ", line):
            for name, equals in re.findall(r"\b([a-z_]+)(=?)", line.split(" ", 1)[1]):
                if name not in ("n", "netid", "flavors", "mode", "port", "host"):
                    options[name] = bool(equals)
                elif name == "port" and equals:
                    options[name] = True
    return options


def mount8_generic_options():
    """The filesystem-independent options of mount(8) (its FILESYSTEM-INDEPENDENT MOUNT OPTIONS section)."""
    text = man("mount.8.gz")
    section = text.split('.SH "FILESYSTEM\\-INDEPENDENT MOUNT OPTIONS"', 1)[1].split(".SH ", 1)[0]
    return set(re.findall(r"^\\fB([a-z_]+)\\fP$", section, re.MULTILINE))


def test_the_manuals_are_read():
    nfs = nfs5_options()
    assert {"hard", "soft", "rsize", "wsize", "nconnect", "nfsvers", "lookupcache"} <= set(nfs)
    assert nfs["rsize"] is True and nfs["hard"] is False
    assert {"noatime", "relatime", "nosuid", "nodev"} <= mount8_generic_options()


def test_every_accepted_option_is_one_the_manuals_name():
    """An option the kernel does not know fails the mount ("an incorrect mount option was specified"):
    every name the check accepts is an nfs(5) option (with or without a value, as nfs(5) writes it)
    or a filesystem-independent option of mount(8)."""
    nfs, generic = nfs5_options(), mount8_generic_options()
    for name in sc._NFS_FLAGS:
        assert (name in nfs and nfs[name] is False) or name in generic, name
    for name in sc._NFS_VALUED:
        assert nfs.get(name) is True, name


def limit(text, words):
    """The first number after ``words`` in text (nfs(5)'s limits)."""
    return int(re.search(re.escape(words) + r"\D*([0-9][0-9,]*)", text).group(1).replace(",", ""))


def test_rsize_wsize_and_nconnect_limits_are_nfs5s():
    text = man("nfs.5.gz").replace("\n", " ")
    largest = limit(text, "values larger than")  # "values larger than 1048576 are replaced with 1048576"
    assert largest == 1048576
    connections = limit(text, "up to a limit of")  # nconnect: "up to a limit of 16"
    for name in ("rsize", "wsize"):
        assert sc.nfs_mount_options_problem([f"{name}={largest}"]) is None
        # nfs(5): larger values are silently replaced, values not a multiple of 1024 rounded down
        assert "from 1024 to 1048576 in steps of 1024" in sc.nfs_mount_options_problem([f"{name}={largest * 2}"])
        assert sc.nfs_mount_options_problem([f"{name}=1536"]) is not None
        assert sc.nfs_mount_options_problem([f"{name}=512"]) is not None
    assert sc.nfs_mount_options_problem([f"nconnect={connections}"]) is None
    assert sc.nfs_mount_options_problem([f"nconnect={connections + 1}"]) is not None


def test_the_default_options_are_valid_and_tuned():
    assert sc.nfs_mount_options_problem(list(sc.NFS_MOUNT_OPTIONS)) is None
    assert sc.nfs_mount_options() == list(sc.NFS_MOUNT_OPTIONS)
    assert sc.nfs_mount_options(["nfsvers=4.2"]) == ["nfsvers=4.2"]
    assert {"rsize=1048576", "wsize=1048576", "hard"} <= set(sc.NFS_MOUNT_OPTIONS)
    assert sc.nfs_provisioner_values("10.0.0.30", "/export/k3s")["nfs"]["mountOptions"] == list(sc.NFS_MOUNT_OPTIONS)
    assert sc.nfs_provisioner_values("s", "/e", mount_options=["hard"])["nfs"]["mountOptions"] == ["hard"]


@pytest.mark.parametrize(("value", "words"), [
    ("hard", "use a list of nfs(5) mount options"),
    ([7], "use a list of nfs(5) mount options"),
    (["hard,noatime"], "not one mount option"),   # fstab(5): the options field is comma-separated
    (["hard noatime"], "not one mount option"),   # fstab(5): fields are separated by blanks
    ([""], "not one mount option"),
    (["HARD"], "not an NFS mount option"),
    (["nfsvers=5"], "nfsvers is one of 3, 4, 4.0, 4.1, 4.2"),
    (["rsize"], "rsize needs a value"),
    (["rsize=1M"], "rsize is a whole number"),
    (["hard=1"], "hard takes no value"),
    (["ro"], "leave ro/rw out"),
    (["bogus"], "not an NFS mount option"),
    (["hard", "hard"], "hard is given twice"),
    (["rsize=4096", "rsize=8192"], "rsize is given twice"),
    (["hard", "soft"], "'hard' and 'soft' contradict each other"),
    (["nfsvers=4.1", "vers=4.2"], "contradict each other"),
    (["timeo=0"], "timeo is from 1 to 6000"),
    (["proto=udp"], "proto is one of tcp"),
])
def test_refused_options(value, words):
    assert words in sc.nfs_mount_options_problem(value)


def test_fstab_options_field():
    """fstab(5): the fourth field lists the options comma-separated; 'defaults' when there are none."""
    assert "defaults" in man("fstab.5.gz")
    assert sc.fstab_options(["nfsvers=4.1", "hard"]) == "nfsvers=4.1,hard"
    assert sc.fstab_options([]) == "defaults"


# ---- preflight ---------------------------------------------------------------------------------

def test_preflight_refuses_bad_cluster_mount_options():
    groups, hostvars = homelab()
    each_host(hostvars, "gpu_cluster_nfs_mount_options", ["hard", "soft"])
    problems = ic.inventory_problems(groups, hostvars, schedule=False)
    one(problems, "gpu_cluster_nfs_mount_options is ['hard', 'soft']; 'hard' and 'soft' contradict each other")


def test_preflight_accepts_the_homelab_options_and_none():
    groups, hostvars = homelab()
    assert ic.inventory_problems(groups, hostvars, role_specs=role_specs(), schedule=False) == []
    each_host(hostvars, "gpu_cluster_nfs_mount_options", [*sc.NFS_MOUNT_OPTIONS, "nconnect=4"])
    for name, value in (("nfs_client_mounts", [{"src": "10.0.0.30:/export/datasets", "path": "/mnt/datasets"},
                                               {"src": "nas.lan:/models", "path": "/mnt/models"}]),
                        ("nfs_client_mount_options", ["nfsvers=4.2", "soft"])):
        for variables in hostvars.values():
            variables[name] = [dict(item) if isinstance(item, dict) else item for item in value]  # a copy per host
    assert ic.inventory_problems(groups, hostvars, role_specs=role_specs(), schedule=False) == []


@pytest.mark.parametrize(("name", "value", "words"), [
    ("nfs_client_mount_options", ["rsize=2M"], "nfs_client_mount_options: 'rsize=2M': rsize is a whole number"),
    ("storage_components_nfs_mount_options", ["hard,intr"], "storage_components_nfs_mount_options: 'hard,intr' is not one"),
    ("nfs_client_mounts", [{"src": "/export/datasets", "path": "/mnt/datasets"}], "src '/export/datasets' is not server:/export"),
    ("nfs_client_mounts", [{"src": "10.0.0.30:/export/datasets", "path": "/var"}], "path '/var': /var is a system directory"),
    ("nfs_client_mounts", [{"src": "a:/x", "path": "/mnt/d"}, {"src": "b:/y", "path": "/mnt/d"}],
     "path /mnt/d is the mount point of two mounts"),
    ("nfs_client_mounts", [{"path": "/mnt/d"}], "role nfs_client: missing required arguments: src"),
])
def test_preflight_refuses_bad_nfs_client_settings(name, value, words):
    groups, hostvars = homelab()
    for host in groups["k3s_cluster"]:
        hostvars[host][name] = [dict(item) if isinstance(item, dict) else item for item in value]
    one(ic.inventory_problems(groups, hostvars, role_specs=role_specs(), schedule=False), words)


def each_host(hostvars, name, value):
    """``name`` on every host, each its own copy (as Ansible hands each host its variables)."""
    for variables in hostvars.values():
        variables[name] = copy.deepcopy(value)
