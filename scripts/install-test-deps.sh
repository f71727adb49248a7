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

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi

install_system() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-test-deps: no apt-get here; install these yourself: ${need[*]}" >&2
    exit 1
  fi
  if [ ${#sudo[@]} -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
    echo "install-test-deps: run as root, or install sudo, to install: ${need[*]}" >&2
    exit 1
  fi
  echo "install-test-deps: installing ${need[*]}" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # Ubuntu names Debian's chromium package chromium-browser.
  if [[ " ${need[*]} " == *" chromium "* ]] && ! apt-cache show chromium >/dev/null 2>&1; then
    need=("${need[@]/#chromium/chromium-browser}")
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${need[@]}"
}

if [ ${#need[@]} -ne 0 ]; then
  install_system
fi

# Real programs that shell out to nvidia-smi, for the personality's tests (tests/e2e/smi/):
# pure-Python clients in a virtual environment of their own (nvgpu's declared dependencies
# would bring the deprecated pynvml, which shadows nvidia-ml-py, so each is installed alone),
# and Debian's netdata python.d collector, unpacked without the daemon it would pull in.
clients="$(cd "$(dirname "$0")/.." && pwd)/tests/.clients"
if [ ! -f "$clients/venv/.complete" ]; then
  rm -rf "$clients/venv"
  python3 -m venv "$clients/venv"
  # aidockermon's own pins (2019) do not build on a current Python: its imports, pinned here.
  "$clients/venv/bin/pip" install -q --no-deps nvidia-htop==1.2.0 termcolor==3.3.0 \
    gpuinfo==1.0.0a7 nvgpu==0.10.0 six==1.17.0 nagios-nvidia-smi-plugin==0.4.0 \
    nagiosplugin==1.4.0 aidockermon==0.10.3 docker==7.2.0 requests==2.34.2 urllib3==2.8.0 \
    idna==3.20 certifi==2026.10.19.post1 charset-normalizer==3.5.3 psutil==7.2.2 \
    pyyaml==6.0.4 rfc5424-logging-handler==1.4.3 pytz==2026.6 tzlocal==5.4.5
  touch "$clients/venv/.complete"
fi
if [ ! -f "$clients/netdata/.complete" ]; then
  rm -rf "$clients/netdata"
  mkdir -p "$clients/netdata"
  download="$(mktemp -d)"
  chmod 777 "$download"  # apt's download user writes there
  if ! (cd "$download" && apt-get download -qq netdata-plugins-python 2>/dev/null); then
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    (cd "$download" && apt-get download -qq netdata-plugins-python)
  fi
  dpkg-deb -x "$download"/netdata-plugins-python_*.deb "$clients/netdata"
  rm -rf "$download"
  touch "$clients/netdata/.complete"
fi
