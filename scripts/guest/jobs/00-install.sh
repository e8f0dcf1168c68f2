#!/bin/bash
# Put the checkout under test (copied in by the host) on the image's venv's path: a .pth file
# naming ~/src and a `duet` launcher calling duet_bench.cli:main (pyproject.toml's
# [project.scripts]), as `pip install -e` would, without pip: under TCG pip alone took about
# 90 s. The cached image holds the dependencies; the guest has no network. The host's tests
# install duet with pip, pipx and the action (tests/install).
set -euo pipefail
rm -rf "$HOME/src"
cp -a /share/src "$HOME/src"
# The venv belongs to root, as a tool installed for the machine would.
venv=/opt/duet-venv
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$HOME/src" | sudo tee "$site/duet-checkout.pth" >/dev/null
printf '#!%s\nimport sys\nfrom duet_bench.cli import main\nsys.exit(main())\n' "$venv/bin/python" |
    sudo tee "$venv/bin/duet" >/dev/null
sudo chmod 0755 "$venv/bin/duet"
"$venv/bin/duet" --version
"$venv/bin/python" -c 'import duet_bench, sys; assert duet_bench.__file__.startswith(sys.argv[1]), duet_bench.__file__' "$HOME/src/"
echo "kernel $(uname -r), $(nproc) CPUs, $(systemctl --version | head -1)"
echo "cgroup: $(cat /proc/self/cgroup)"
# run-tier.sh boots with mitigations=off (under TCG page-table isolation alone would flush the
# emulated TLB at every system call): what the kernel says it would otherwise have done.
echo "command line: $(cat /proc/cmdline)"
echo "meltdown: $(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2>/dev/null || echo unknown)"
echo "root subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
lscpu --extended=CPU,CORE,SOCKET
