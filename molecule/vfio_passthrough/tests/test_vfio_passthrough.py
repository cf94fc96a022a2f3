"""Every file vfio_passthrough writes, and its tools run exactly once (first converge only).

All files are read in one command per host: each testinfra call through the ansible
backend costs seconds on the shared CI machine.
"""

import os

import pytest
import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")
VENDOR = {"vfio-grub-intel": "intel", "vfio-grub-amd": "amd", "vfio-sdboot-amd": "amd", "vfio-sdboot-intel": "intel"}
# huge pages reserved per NUMA node (molecule.yml vfio_passthrough_hugepages); the stale
# "hugepagesz=1G hugepages=16" prepared on vfio-sdboot-amd is replaced, not kept.
HUGEPAGES = {"vfio-grub-intel": " hugepagesz=1G hugepages=0:4,1:4", "vfio-sdboot-amd": " hugepagesz=2M hugepages=0:512"}
FILES = [
    "/etc/default/grub",
    "/etc/kernel/cmdline",
    "/etc/modules-load.d/vfio.conf",
    "/etc/modprobe.d/vfio.conf",
    "/etc/modprobe.d/blacklist-gpu-passthrough.conf",
    "/etc/modprobe.d/vfio-unsafe-interrupts.conf",
    "/var/log/stub-commands.log",
]
SCRIPT = "; ".join(
    f"echo '=== {path}'; if [ -e {path} ]; then stat -c 'mode %a' {path}; cat {path}; echo '<EOF>'; fi"
    for path in FILES
)


@pytest.fixture
def state(host):
    """{path: (mode, text)} for the files that exist, plus the host name."""
    out = host.check_output(SCRIPT)
    files = {}
    for chunk in out.split("=== ")[1:]:
        path, _nl, rest = chunk.partition("\n")
        if rest:
            mode_line, _nl, body = rest.partition("\n")
            files[path] = (mode_line.split()[1], body.rsplit("<EOF>", 1)[0])
    return host.backend.get_hostname(), files


def calls(files):
    text = files.get("/var/log/stub-commands.log", ("", ""))[1]
    return [line for line in text.splitlines() if line != "proxmox-boot-tool status"]


def test_kernel_cmdline_for_the_boot_loader_in_use(state):
    name, files = state
    vendor = VENDOR[name]
    if "grub" in name:
        grub = files["/etc/default/grub"][1].splitlines()
        extra = " pcie_acs_override=downstream" if name == "vfio-grub-amd" else ""
        extra += HUGEPAGES.get(name, "")
        assert [line for line in grub if line.startswith("GRUB_CMDLINE_LINUX_DEFAULT=")] == [
            f'GRUB_CMDLINE_LINUX_DEFAULT="quiet {vendor}_iommu=on iommu=pt{extra}"']
        assert 'GRUB_CMDLINE_LINUX=""' in grub and 'GRUB_DISTRIBUTOR="Proxmox VE"' in grub
        assert "/etc/kernel/cmdline" not in files
        assert calls(files).count("update-grub ") == 1
        assert not [call for call in calls(files) if call.startswith("proxmox-boot-tool refresh")]
    else:
        assert files["/etc/kernel/cmdline"] == (
            "644", f"root=ZFS=rpool/ROOT/pve-1 boot=zfs {vendor}_iommu=on iommu=pt{HUGEPAGES.get(name, '')}\n")
        assert "/etc/default/grub" not in files
        assert calls(files).count("proxmox-boot-tool refresh") == 1
        assert not [call for call in calls(files) if call.startswith("update-grub")]


def test_initramfs_rebuilt_once(state):
    _name, files = state
    assert calls(files).count("update-initramfs -u -k all") == 1


def test_modules_and_vfio_pci_options(state):
    name, files = state
    mode, text = files["/etc/modules-load.d/vfio.conf"]
    assert mode == "644"
    assert [line for line in text.splitlines() if not line.startswith("#")] == ["vfio", "vfio_iommu_type1", "vfio_pci"]
    lines = files["/etc/modprobe.d/vfio.conf"][1].splitlines()
    assert "options vfio-pci ids=10de:15fc,10de:0fb1" in lines
    for module in ("nouveau", "nvidia", "nvidia_drm", "nvidiafb", "snd_hda_intel"):
        assert f"softdep {module} pre: vfio-pci" in lines
    blacklist = files["/etc/modprobe.d/blacklist-gpu-passthrough.conf"][1].splitlines()
    for module in ("nouveau", "nvidia", "nvidia_drm", "nvidia_modeset", "nvidiafb"):
        assert f"blacklist {module}" in blacklist
    unsafe = files.get("/etc/modprobe.d/vfio-unsafe-interrupts.conf")
    if name == "vfio-sdboot-intel":
        assert unsafe and "options vfio_iommu_type1 allow_unsafe_interrupts=1" in unsafe[1]
    else:
        assert unsafe is None
