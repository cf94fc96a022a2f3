#!/usr/bin/env bash
# Prints the Python the venv is built from (Makefile PYTHON, scripts/install-host-deps.sh) when the
# caller did not set PYTHON: the distribution's /usr/bin/python3 when it is 3.11 or newer
# (ansible-core 2.19's controller minimum), else the first python3 on PATH.
# Why the distribution's first: it is what a fresh Debian machine has (README), and Debian builds it
# with profile-guided and link-time optimisation, which a self-built Python (pyenv's default build)
# lacks: on the 2-core test machine the same ansible-core ran a 40-task localhost playbook in 11.0 CPU-s
# on Debian's 3.11.2 and 14.5 on a pyenv 3.11.7, and tests/integration/test_k3s_install.py took 46.3
# CPU-s against 52.3 (docs/development.md). A pyenv (or any other) Python on PATH before it would
# otherwise be taken for the whole suite. PYTHON=/path/to/python3 make ... chooses another.
set -u
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo /usr/bin/python3
else
  echo python3
fi
