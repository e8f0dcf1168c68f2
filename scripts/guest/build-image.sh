#!/bin/bash
# Builds the runner-like guest image: Debian bookworm with systemd (cgroup v2 only, systemd 252's
# default), a user `runner` (uid 1001) with passwordless sudo, runner-agent.service, and a venv at
# /opt/duet-venv holding duet's dependencies but NOT duet: the checkout under test is installed
# into it at every run (run-tier.sh), so a cached image never tests stale code.
#
# Usage: build-image.sh OUT_IMAGE KERNEL_VERSION WHEEL_DIR
#   WHEEL_DIR holds requirements.txt and the wheels it names (built on the host: the guest has
#   no network, and the host's pip already has its index and certificates set up).
# Needs root (mmdebstrap's root mode, mkfs.ext4 -d). Everything temporary goes away on exit.
# The hooks are expanded by mmdebstrap, which passes the root file system as $1:
# shellcheck disable=SC2016
set -euo pipefail
out=$1 kver=$2 wheels=$3
here=$(cd "$(dirname "$0")" && pwd)
packages=systemd,systemd-sysv,dbus,sudo,python3,python3-venv,git,procps,util-linux,kmod,udev,iproute2,ca-certificates,make,gcc,libc6-dev

work=$(mktemp -d "$(dirname "$out")/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs

# The kernel's modules go to usr/lib/modules (in the rootfs /lib is a symlink to usr/lib), into a
# directory that exists first: `cp -a` into a missing one would become it.
# Without a mirror argument mmdebstrap uses this machine's apt sources. The customize hooks run
# on the host with the chroot's /proc, /sys and /dev mounted by mmdebstrap (and unmounted by it).
# chroot commands run with a clean environment: the host's PIP_* settings must not leak in.
in_root='env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root chroot "$1"'
mmdebstrap --quiet --variant=minbase --include="$packages" \
    --customize-hook="mkdir -p \"\$1/usr/lib/modules\" && cp -a /usr/lib/modules/$kver \"\$1/usr/lib/modules/\"" \
    --customize-hook="$in_root useradd --create-home --uid 1001 --user-group --shell /bin/bash runner" \
    --customize-hook='echo "runner ALL=(ALL) NOPASSWD:ALL" > "$1/etc/sudoers.d/runner" && chmod 0440 "$1/etc/sudoers.d/runner"' \
    --customize-hook='echo duet-guest > "$1/etc/hostname"' \
    --customize-hook='printf "127.0.0.1 localhost\n127.0.1.1 duet-guest\n" > "$1/etc/hosts"' \
    --customize-hook='printf "/dev/vda / ext4 rw,errors=remount-ro 0 1\nshare /share 9p trans=virtio,version=9p2000.L,msize=262144,nofail 0 0\n" > "$1/etc/fstab" && mkdir -p "$1/share"' \
    --customize-hook="install -m 0755 $here/runner-agent.sh \"\$1/usr/local/bin/runner-agent\"" \
    --customize-hook="install -m 0644 $here/runner-agent.service \"\$1/etc/systemd/system/runner-agent.service\"" \
    --customize-hook="$in_root systemctl enable runner-agent.service" \
    --customize-hook="$in_root passwd --delete root" \
    --customize-hook="mkdir \"\$1/opt/wheels\" && cp $wheels/* \"\$1/opt/wheels/\"" \
    --customize-hook="$in_root python3 -m venv /opt/duet-venv" \
    --customize-hook="$in_root /opt/duet-venv/bin/pip install --quiet --no-index --find-links /opt/wheels -r /opt/wheels/requirements.txt" \
    --customize-hook='rm -rf "$1/opt/wheels"' \
    bookworm "$rootfs"

# 6 GiB sparse: the system tests' git repositories and results fit with room.
truncate -s 6G "$work/disk.img"
mkfs.ext4 -q -F -L duet-guest -d "$rootfs" "$work/disk.img"
mv "$work/disk.img" "$out"
