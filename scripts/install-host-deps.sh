#!/usr/bin/env bash
# Install the Debian packages `make test` and `make lab` need on the machine
# that runs them (podman and what rootful podman uses, debootstrap for the
# test image, venv support for the control-node virtualenv, Node.js for the
# Renovate test). bindep.txt lists what the control node itself needs. Called by
# `make image` (so by `make test` and `make lab`) and by .ci/run; does
# nothing when everything is there. Needs root or sudo on a Debian-family host.
set -euo pipefail

need=()
for pkg in podman runc debootstrap uidmap slirp4netns fuse-overlayfs make git; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || need+=("$pkg")
done
# Node.js and npm only for the Renovate tier (tests/integration/test_renovate.py installs a
# pinned renovate with npm into ~/.cache/cps-gpu-cluster/renovate); checked by command, so a
# Node.js from elsewhere (NodeSource, nvm) is used as it is.
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
# promtool (Debian's prometheus package) for the alert rule tests: `promtool check rules` and
# `promtool test rules` evaluate the rendered PrometheusRules in Prometheus's own rule engine
# (tests/render/test_alert_rules_promtool.py). Checked by command, so a promtool from elsewhere is used.
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
# Debian's python3 needs python3-venv for `python3 -m venv` (pyenv and
# other self-built Pythons carry ensurepip already).
# The interpreter the venv is built from: PYTHON, as the Makefile sets it (scripts/python.sh).
if ! "${PYTHON:-$(bash "$(dirname "$0")/python.sh")}" -c 'import ensurepip' >/dev/null 2>&1; then
  need+=(python3-venv)
fi
# terraform (or OpenTofu's tofu) for the `terraform console` cross-check of the unit tier
# (tests/unit/terraform/test_terraform_console.py fails without one). Debian ships neither and
# no PyPI/npm package carries a current one: install it where an apt source offers it (the
# HashiCorp or OpenTofu apt repository), else say how.
if ! command -v terraform >/dev/null 2>&1 && ! command -v tofu >/dev/null 2>&1; then
  tf_pkg=""
  for pkg in terraform tofu; do
    if apt-cache policy "$pkg" 2>/dev/null | grep -q 'Candidate: [0-9]'; then tf_pkg=$pkg; break; fi
  done
  if [ -n "$tf_pkg" ]; then
    need+=("$tf_pkg")
  else
    echo "install-host-deps: no terraform/tofu binary and no apt source offers one: add the HashiCorp (or OpenTofu)" \
      "apt repository or put terraform >= 1.5 in /usr/local/bin, or the terraform console tests fail" \
      "(GPU_CLUSTER_TERRAFORM_CONSOLE=skip skips them on purpose)" >&2
  fi
fi
[ ${#need[@]} -gt 0 ] || exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-host-deps: missing ${need[*]} and no apt-get here: install them with your package manager" >&2
  exit 1
fi
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || {
    echo "install-host-deps: missing ${need[*]}; run as root or install sudo" >&2
    exit 1
  }
  sudo_cmd=(sudo)
fi
echo "install-host-deps: installing ${need[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}"
# The prometheus package enables and starts a Prometheus server (port 9090); the tests need only its
# promtool. Stop the server this run installed, so the test machine gains no listening service.
if [[ " ${need[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1 \
   && systemctl is-enabled -q prometheus 2>/dev/null; then
  "${sudo_cmd[@]}" systemctl disable --now prometheus || true
fi
