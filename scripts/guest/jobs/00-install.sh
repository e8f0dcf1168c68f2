#!/bin/bash
# Install the checkout under test (copied in by the host) into the image's venv, without its
# dependencies (the cached image holds them) and without the network (the guest has none).

set -euo pipefail
rm -rf "$HOME/src"
cp -a /share/src "$HOME/src"
# The venv belongs to root, as a tool installed for the machine would.
sudo /opt/duet-venv/bin/pip install --quiet --no-deps --no-build-isolation --no-index -e "$HOME/src"
/opt/duet-venv/bin/duet --version
echo "kernel $(uname -r), $(nproc) CPUs, $(systemctl --version | head -1)"
echo "cgroup: $(cat /proc/self/cgroup)"
echo "root subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
lscpu --extended=CPU,CORE,SOCKET
