#!/usr/bin/env bash
# ansible-test sanity on a copy of the collection placed under
# build/sanity/ansible_collections/cps/gpu_cluster (ansible-test needs that
# path). Works offline but for PyPI: ansible-test's pip bootstrap download is
# replaced by a local script that uses ensurepip (see tests/sanity/get_pip.py).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
dest=build/sanity/ansible_collections/cps/gpu_cluster
python_version=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')

cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
for v in 24_2 25_3; do
  cp tests/sanity/get_pip.py "$cache/get_pip_$v.py"
done

rm -rf build/sanity
mkdir -p "$dest"
# Tracked and untracked-but-not-ignored files: what a release would hold.
git ls-files -co --exclude-standard -z | while IFS= read -r -d '' f; do
  [ -e "$f" ] || continue
  mkdir -p "$dest/$(dirname "$f")"
  cp -P "$f" "$dest/$f"
done
cd "$dest"
# ansible-test lists files through git when the copy is a repository.
git init -q && git add -A && git -c user.email=ci@localhost -c user.name=ci commit -qm sanity
# Test plumbing, Terraform, the lab, upstream chart copies and the captured sysfs
# trees of the NUMA tests (PCI addresses hold ':', which ansible-test refuses in
# file names) and the upstream Fleet CRDs (several documents a file) are data, not
# collection content; so is the vLLM operator's install, vendored unchanged (several documents).
excludes=()
for d in .ci/ lab/ scripts/ terraform/ tests/container/ tests/fixtures/charts/ tests/fixtures/numa/ tests/fixtures/management/ \
         roles/llm_serving/files/production-stack-operator.yaml; do
  [ -e "$d" ] && excludes+=(--exclude "$d")
done
ansible-test sanity --venv --python "$python_version" --color no "${excludes[@]}" ${SANITY_ARGS:-}
echo "sanity passed for $repo"
