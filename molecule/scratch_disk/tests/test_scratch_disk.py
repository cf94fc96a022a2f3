"""The scratch disk is partitioned, formatted and mounted persistently."""

DEVICE = "/dev/disk/by-id/virtio-scratch"
MOUNT = "/mnt/fast-scratch"


def test_mounted_ext4(host):
    mount = host.mount_point(MOUNT)
    assert mount.exists
    assert mount.filesystem == "ext4"
    assert "noatime" in mount.options


def test_one_gpt_partition_named_fast_scratch(host):
    disk = host.file(DEVICE).linked_to
    out = host.check_output("parted -s -m %s unit MiB print", disk)
    assert "gpt" in out.splitlines()[1]
    partitions = [line for line in out.splitlines()[2:] if line]
    assert len(partitions) == 1
    assert partitions[0].startswith("1:1.00MiB:")
    assert "fast-scratch" in partitions[0]


def test_filesystem_label(host):
    disk = host.file(DEVICE).linked_to
    assert host.check_output("blkid -s LABEL -o value %sp1", disk) == "fast-scratch"


def test_fstab_entry(host):
    fstab = host.file("/etc/fstab").content_string
    entries = [line.split() for line in fstab.splitlines() if line.strip() and not line.startswith("#")]
    scratch = [entry for entry in entries if entry[1] == MOUNT]
    assert len(scratch) == 1
    assert scratch[0][2] == "ext4"
    assert "nofail" in scratch[0][3]


def test_writable(host):
    assert host.run("touch %s/probe && rm %s/probe", MOUNT, MOUNT).rc == 0
