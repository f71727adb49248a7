#!/usr/bin/env bash
# Install the system packages gputop's tests need, on Debian or Ubuntu: the end-to-end tests
# start a real sshd, tmux, Prometheus, a one-node Slurm (munge), a headless Chromium, and build a
# C fake of libnvidia-ml with gcc; the virtual environment needs python3-venv.
#
# Idempotent: installs only what is missing, and nothing when all is there. Run it as root, or
# as a user who may sudo (it uses sudo only when not root). The README's test command and .ci/run
# both call it.
set -euo pipefail

need=()
{ command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ]; } || need+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
# The exporter tests run a real Prometheus server and its promtool.
{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || need+=(prometheus)
# A real single-node Slurm for the attribution tests (tests/support/slurm_lab.py).
[ -x /usr/sbin/slurmctld ] || need+=(slurmctld)
[ -x /usr/sbin/slurmd ] || need+=(slurmd)
command -v squeue >/dev/null 2>&1 || need+=(slurm-client)
[ -x /usr/sbin/munged ] || need+=(munge)
# The web view's tests drive a real headless Chromium (tests/support/browser.py).
{ command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; } \
  || need+=(chromium)
# The call-budget tests build ../shared/tools/fakenvml, the C fake of libnvidia-ml.so.1.
{ command -v gcc >/dev/null 2>&1 && [ -e /usr/include/stdio.h ]; } || need+=(gcc libc6-dev)
# `python3 -m venv` needs ensurepip, which Debian ships apart from Python.
python3 -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-test-deps: no apt-get here; install these yourself: ${need[*]}" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-test-deps: run as root, or install sudo, to install: ${need[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
echo "install-test-deps: installing ${need[*]}" >&2
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# Ubuntu names Debian's chromium package chromium-browser.
if [[ " ${need[*]} " == *" chromium "* ]] && ! apt-cache show chromium >/dev/null 2>&1; then
  need=("${need[@]/#chromium/chromium-browser}")
fi
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${need[@]}"
