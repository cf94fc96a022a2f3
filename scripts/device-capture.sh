#!/usr/bin/env bash
# Capture, on a machine with an NVIDIA GPU, what the collection's GPU fact modules and the verify
# phase's probe read and measure, for the fixtures under tests/fixtures/ (tests/fixtures/SOURCES.md
# names the run behind each file). Needs nvidia-smi and, for the probe, PyTorch with CUDA.
#   OUT=/tmp/capture bash scripts/device-capture.sh
# Writes into $OUT: nvidia-smi-q-x.xml (what nvidia_gpu_facts parses), query-gpu.csv (the probe's
# nvidia-smi query), gpu-probe.jsonl (roles/verify/files/gpu_probe.py as the verify Job runs it),
# pci-gpu-facts.json (plugins/module_utils/pci_sysfs.gpu_facts on this machine's /sys), lspci-nnk.txt,
# env.txt (kernel, driver, torch) and errors.txt.
set -u
out=${OUT:?set OUT to the directory to write into}
mkdir -p "$out"
: >"$out/errors.txt"
nvidia-smi -q -x >"$out/nvidia-smi-q-x.xml" 2>>"$out/errors.txt"
fields=$(python3 -c 'import sys; sys.path.insert(0, "roles/verify/files"); import gpu_probe; print(",".join(gpu_probe.SMI_FIELDS))')
nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits >"$out/query-gpu.csv" 2>>"$out/errors.txt"
lspci -nnk >"$out/lspci-nnk.txt" 2>>"$out/errors.txt" || echo "lspci: not available" >>"$out/errors.txt"
{
  uname -srm
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
} >"$out/env.txt"
timeout 420 python3 roles/verify/files/gpu_probe.py >"$out/gpu-probe.jsonl" 2>>"$out/errors.txt"
echo "probe exit $?" >>"$out/env.txt"
python3 - >"$out/pci-gpu-facts.json" 2>>"$out/errors.txt" <<'PY'
import importlib.util, json
spec = importlib.util.spec_from_file_location("pci_sysfs", "plugins/module_utils/pci_sysfs.py")
pci = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pci)
gpus, iommu = pci.gpu_facts("/sys")
print(json.dumps({"pci_gpus": gpus, "iommu_enabled": iommu}, indent=2, sort_keys=True))
PY
ls -l "$out"
