# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU performance probe of the verify phase (roles/verify, docs/verify.md).

Runs in the PyTorch image on a GPU worker, one pod with all the node's GPUs, and prints one JSON object
per line: ``{"probe": "gpu", ...}`` per GPU, then ``{"probe": "node", ...}`` (NCCL all-reduce when the
pod sees 2 GPUs or more). Every field that cannot be measured is ``null`` with its reason under
``unavailable``; the probe never stops at the first missing piece.

Measures per GPU: dense matmul TFLOP/s (bf16, fp16, tf32, fp32; 8192x8192), device-to-device copy
GB/s (read+write), pinned host-to-device and device-to-host GB/s, and from ``nvidia-smi`` sampled
while the GPU is busy: PCIe link generation/width (current and max), SM and memory clocks, clock
event reasons, power limits, temperature, ECC counts, retired pages, remapped rows; recent Xid errors
from the kernel log when the pod may read it. Under a minute per GPU; ``--burn SECONDS`` runs the
matmul that long first (thermal and power behaviour under sustained load).

The parsing and arithmetic are pure functions above ``main()`` (unit-tested without a GPU).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

SMI_FIELDS = (
    "index", "name", "uuid", "pci.bus_id", "driver_version",
    "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
    "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem",
    "power.limit", "power.default_limit", "temperature.gpu",
    "ecc.errors.uncorrected.volatile.total", "ecc.errors.corrected.volatile.total",
    "retired_pages.pending", "retired_pages.sbe", "retired_pages.dbe",
    "remapped_rows.pending", "remapped_rows.failure",
    "clocks_event_reasons.active",
)
# nvidia-smi field -> probe key, converter
SMI_KEYS = {
    "name": ("name", str), "uuid": ("uuid", str), "pci.bus_id": ("pci_bus_id", str),
    "driver_version": ("driver_version", str),
    "pcie.link.gen.current": ("pcie_gen_current", int), "pcie.link.gen.max": ("pcie_gen_max", int),
    "pcie.link.width.current": ("pcie_width_current", int), "pcie.link.width.max": ("pcie_width_max", int),
    "clocks.sm": ("sm_clock_mhz", int), "clocks.mem": ("mem_clock_mhz", int),
    "clocks.max.sm": ("sm_clock_max_mhz", int), "clocks.max.mem": ("mem_clock_max_mhz", int),
    "power.limit": ("power_limit_w", float), "power.default_limit": ("power_default_limit_w", float),
    "temperature.gpu": ("temperature_c", int),
    "ecc.errors.uncorrected.volatile.total": ("ecc_uncorrected", int),
    "ecc.errors.corrected.volatile.total": ("ecc_corrected", int),
    "retired_pages.pending": ("retired_pages_pending", "yesno"),
    "remapped_rows.pending": ("remapped_rows_pending", "yesno"),
    "remapped_rows.failure": ("remapped_rows_failure", "yesno"),
}
# Bits of nvmlClocksEventReasons (clocks_event_reasons.active is their OR, in hex).
CLOCK_REASON_BITS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
NOT_AVAILABLE = ("", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "unknown error",
                 "[insufficient permissions]")
XID_RE = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+)")


# ------------------------------------------------------------------------------- pure helpers
def tflops(n, seconds, iterations=1):
    """TFLOP/s of ``iterations`` dense n x n x n matmuls (2 n^3 flops each) in ``seconds``."""
    if not seconds or seconds <= 0:
        return None
    return round(2.0 * n ** 3 * iterations / seconds / 1e12, 1)


def gbs(nbytes, seconds, iterations=1):
    """GB/s (10^9 bytes) of ``iterations`` transfers of ``nbytes`` in ``seconds``."""
    if not seconds or seconds <= 0:
        return None
    return round(float(nbytes) * iterations / seconds / 1e9, 1)


def smi_argv(fields):
    return ["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]


def smi_value(text, kind):
    """One nvidia-smi CSV cell as ``(value, reason)``; ``(None, reason)`` when not available."""
    cell = str(text).strip()
    if cell.lower() in NOT_AVAILABLE:
        return None, f"nvidia-smi reports {cell or 'nothing'}"
    try:
        if kind == "yesno":
            return cell.lower() in ("yes", "true", "1"), None
        if kind is int:
            return int(float(cell)), None
        if kind is float:
            return float(cell), None
    except ValueError:
        return None, f"nvidia-smi reports {cell!r}"
    return cell, None


def clock_reasons(mask_text):
    """Names of the set bits of ``clocks_event_reasons.active`` (``0x0000000000000004``)."""
    try:
        mask = int(str(mask_text).strip(), 16)
    except ValueError:
        return None
    return [name for bit, name in sorted(CLOCK_REASON_BITS.items()) if mask & bit]


def parse_smi_csv(fields, text):
    """``{index: {probe_key: value}, ...}, {index: {probe_key: reason}}`` from ``--format=csv,noheader,nounits``."""
    values, reasons = {}, {}
    for line in str(text or "").splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(fields):
            continue
        record = dict(zip(fields, cells))
        try:
            index = int(record.get("index", "0"))
        except ValueError:
            continue
        out, why = values.setdefault(index, {}), reasons.setdefault(index, {})
        for field, cell in record.items():
            if field == "index":
                continue
            if field == "clocks_event_reasons.active":
                names = clock_reasons(cell)
                out["clock_event_reasons"] = names
                if names is None:
                    why["clock_event_reasons"] = f"nvidia-smi reports {cell!r}"
                continue
            if field in ("retired_pages.sbe", "retired_pages.dbe"):
                value, reason = smi_value(cell, int)
                if value is not None:
                    out["retired_pages"] = (out.get("retired_pages") or 0) + value
                elif "retired_pages" not in out:
                    out["retired_pages"] = None
                    why["retired_pages"] = reason
                continue
            key, kind = SMI_KEYS[field]
            value, reason = smi_value(cell, kind)
            out[key] = value
            if reason:
                why[key] = reason
    return values, reasons


def _bus_device(address):
    """``bus:device`` of a PCI address (``00000000:00:06.0`` and the kernel's ``0000:00:06`` give ``00:06``)."""
    return re.sub(r"\.[0-7]$", "", str(address or "").strip().lower())[-5:]


def parse_xid(kernel_log, bus_id=None):
    """Xid codes in a kernel log, for one GPU (``bus_id`` like ``00000000:00:06.0``) or all."""
    wanted = _bus_device(bus_id) if bus_id else ""
    codes = []
    for match in XID_RE.finditer(str(kernel_log or "")):
        if not wanted or _bus_device(match.group(1)) == wanted:
            codes.append(int(match.group(2)))
    return codes


UNDER_LOAD = ("sm_clock_mhz", "mem_clock_mhz", "pcie_gen_current", "pcie_width_current", "clock_event_reasons",
              "temperature_c")


def apply_load_sample(idle, under_load):
    """The idle nvidia-smi values with those that change under load (clocks, the PCIe link, which
    trains down when idle, clock event reasons, temperature) taken from the sample under load."""
    values = dict(idle or {})
    for key in UNDER_LOAD:
        if (under_load or {}).get(key) is not None:
            values[key] = under_load[key]
    return values


def merge_record(index, measured, smi, smi_reasons, unavailable):
    """One GPU's JSON object: measured figures, the nvidia-smi sample, and why any field is null."""
    record = {"probe": "gpu", "version": 1, "index": index}
    record.update(smi or {})
    record.update(measured or {})
    why = dict(smi_reasons or {})
    why.update(unavailable or {})
    for key in ("matmul_bf16_tflops", "matmul_fp16_tflops", "matmul_tf32_tflops", "matmul_fp32_tflops",
                "device_copy_gbs", "h2d_pinned_gbs", "d2h_pinned_gbs", "pcie_gen_current", "pcie_gen_max",
                "pcie_width_current", "pcie_width_max", "sm_clock_mhz", "mem_clock_mhz", "sm_clock_max_mhz",
                "power_limit_w", "power_default_limit_w", "temperature_c", "ecc_uncorrected", "ecc_corrected",
                "retired_pages", "retired_pages_pending", "remapped_rows_pending", "remapped_rows_failure",
                "xid_recent"):
        if record.get(key) is None:
            record[key] = None
            why.setdefault(key, "not measured")
    record["unavailable"] = {k: v for k, v in why.items() if record.get(k) is None}
    return record


# ------------------------------------------------------------------------------- measurements
def run_smi(fields=SMI_FIELDS):
    """Query nvidia-smi; when a field is unknown to this driver, query the fields one by one."""
    def query(names):
        proc = subprocess.run(smi_argv(names), capture_output=True, text=True, timeout=30, check=False)
        return proc.returncode, proc.stdout, (proc.stderr or proc.stdout).strip()
    try:
        rc, out, _err = query(fields)
    except (OSError, subprocess.SubprocessError) as exc:
        return {}, {}, f"nvidia-smi not usable in this pod: {exc}"
    if rc == 0:
        values, reasons = parse_smi_csv(fields, out)
        return values, reasons, None
    values, reasons = {}, {}
    for field in fields:
        if field == "index":
            continue
        try:
            rc, out, _err = query(["index", field])
        except (OSError, subprocess.SubprocessError) as exc:
            return values, reasons, f"nvidia-smi not usable in this pod: {exc}"
        if rc != 0:
            key = SMI_KEYS.get(field, (field.replace(".", "_"), None))[0]
            for index in values or {0: None}:
                reasons.setdefault(index, {})[key] = f"this driver's nvidia-smi does not know {field}"
            continue
        part_values, part_reasons = parse_smi_csv(["index", field], out)
        for index, part in part_values.items():
            values.setdefault(index, {}).update(part)
            reasons.setdefault(index, {}).update(part_reasons.get(index, {}))
    return values, reasons, None


def kernel_log():
    for argv in (["dmesg"], ["journalctl", "-k", "-b", "--no-pager"]):
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        if proc.returncode == 0 and proc.stdout:
            return proc.stdout, None
    return None, "the kernel log is not readable inside the pod (read Xid errors on the worker: journalctl -k | grep Xid)"


def _timed(torch, dev, fn, iterations):
    """Seconds for ``iterations`` calls of ``fn`` on ``dev`` after one warm-up call."""
    fn()
    torch.cuda.synchronize(dev)
    start = time.perf_counter()
    for _round in range(iterations):
        fn()
    torch.cuda.synchronize(dev)
    return time.perf_counter() - start


def _matmul(torch, dev, dtype, n, iterations, *, smi_fields=None):
    """``(TFLOP/s, nvidia-smi sample)`` of dense n x n matmuls; with ``smi_fields``, nvidia-smi is
    sampled while batches of matmuls keep the GPU busy (until it has answered)."""
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    if not smi_fields:
        return tflops(n, _timed(torch, dev, lambda: a @ b, iterations), iterations), None
    a @ b
    torch.cuda.synchronize(dev)
    # not a with-block: the matmuls run while nvidia-smi does
    proc = subprocess.Popen(smi_argv(smi_fields), stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # pylint: disable=consider-using-with
                            text=True)
    done, start = 0, time.perf_counter()
    while done < iterations or (proc.poll() is None and time.perf_counter() - start < 30):
        for _round in range(iterations):
            a @ b
        torch.cuda.synchronize(dev)
        done += iterations
    seconds = time.perf_counter() - start
    stdout, _stderr = proc.communicate(timeout=30)
    sample = None
    if proc.returncode == 0:
        values, reasons = parse_smi_csv(smi_fields, stdout)
        sample = {"values": values, "reasons": reasons}
    return tflops(n, seconds, done), sample


def _copies(torch, dev, size=1 << 30):
    """Device-to-device (read+write), pinned host-to-device and device-to-host GB/s."""
    src = torch.empty(size, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    device_copy = gbs(2 * size, _timed(torch, dev, lambda: dst.copy_(src), 10), 10)
    host = torch.empty(size // 4, dtype=torch.uint8, pin_memory=True)
    small = torch.empty(size // 4, dtype=torch.uint8, device=dev)
    h2d = gbs(size // 4, _timed(torch, dev, lambda: small.copy_(host, non_blocking=True), 10), 10)
    d2h = gbs(size // 4, _timed(torch, dev, lambda: host.copy_(small, non_blocking=True), 10), 10)
    return {"device_copy_gbs": device_copy, "h2d_pinned_gbs": h2d, "d2h_pinned_gbs": d2h}


def _first_line(exc):
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def measure_gpu(torch, index, smi_fields, burn=0, n=8192):
    """Throughput figures of one GPU, with an nvidia-smi sample taken while it is busy."""
    dev = torch.device("cuda", index)
    torch.cuda.set_device(dev)
    out, why = {}, {}
    sample = {"values": {}, "reasons": {}}
    if burn:
        end = time.time() + burn
        while time.time() < end:
            _matmul(torch, dev, torch.bfloat16, n, 20)
    for label, dtype, tf32, iterations in (("bf16", torch.bfloat16, False, 20), ("fp16", torch.float16, False, 20),
                                           ("tf32", torch.float32, True, 20), ("fp32", torch.float32, False, 5)):
        key = f"matmul_{label}_tflops"
        try:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            out[key], under_load = _matmul(torch, dev, dtype, n, iterations,
                                           smi_fields=smi_fields if label == "bf16" else None)
            if under_load:
                sample = under_load
        except Exception as exc:  # pylint: disable=broad-except  # a failed measurement is a reason, not a crash
            out[key] = None
            why[key] = f"{label} matmul failed: {_first_line(exc)}"
        torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        out.update(_copies(torch, dev))
    except Exception as exc:  # pylint: disable=broad-except
        for key in ("device_copy_gbs", "h2d_pinned_gbs", "d2h_pinned_gbs"):
            out.setdefault(key, None)
            why.setdefault(key, f"copy failed: {_first_line(exc)}")
    torch.cuda.empty_cache()
    return out, why, sample


def _allreduce_worker(rank, world, port, result):
    import torch  # noqa: PLC0415  # pylint: disable=import-outside-toplevel  # PyTorch only in the pod
    import torch.distributed as dist  # noqa: PLC0415  # pylint: disable=import-outside-toplevel
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    tensor = torch.ones(64 << 20, dtype=torch.float32, device="cuda")  # 256 MiB
    for _round in range(3):
        dist.all_reduce(tensor)
    torch.cuda.synchronize()
    iterations = 10
    start = time.perf_counter()
    for _round in range(iterations):
        dist.all_reduce(tensor)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    if rank == 0:
        algbw = tensor.numel() * 4 * iterations / seconds / 1e9
        result.put(round(algbw * 2 * (world - 1) / world, 1))  # bus bandwidth, as nccl-tests reports it
    dist.destroy_process_group()


def allreduce(torch, count):
    if count < 2:
        return None, "fewer than 2 GPUs in the pod"
    try:
        import torch.multiprocessing as mp  # noqa: PLC0415  # pylint: disable=import-outside-toplevel
        ctx = mp.get_context("spawn")
        result = ctx.SimpleQueue()
        mp.start_processes(_allreduce_worker, args=(count, 29511, result), nprocs=count, start_method="spawn")
        return result.get(), None
    except Exception as exc:  # pylint: disable=broad-except
        return None, f"NCCL all-reduce failed: {_first_line(exc)}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burn", type=int, default=0, help="seconds of sustained matmul before measuring")
    parser.add_argument("--size", type=int, default=8192, help="matmul size n (n x n x n)")
    args = parser.parse_args(argv)
    started = time.time()
    smi_values, smi_reasons, smi_error = run_smi()
    log, log_error = kernel_log()
    # CUDA numbers GPUs fastest first by default; nvidia-smi by PCI bus: make the indices agree
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        import torch  # noqa: PLC0415  # pylint: disable=import-outside-toplevel  # tests run without it
    except ImportError as exc:
        print(json.dumps({"probe": "node", "version": 1, "gpus": 0, "error": f"PyTorch is missing: {exc}"}))
        return 2
    if not torch.cuda.is_available():
        print(json.dumps({"probe": "node", "version": 1, "gpus": 0, "error": "torch.cuda.is_available() is False"}))
        return 2
    count = torch.cuda.device_count()
    fields = SMI_FIELDS if not smi_error and smi_values else None
    for index in range(count):
        begun = time.time()
        measured, why, sample = measure_gpu(torch, index, fields, burn=args.burn, n=args.size)
        smi = apply_load_sample(smi_values.get(index, {}), sample["values"].get(index, {}))
        reasons = dict(smi_reasons.get(index, {}))
        if not sample["values"].get(index):
            reasons["sm_clock_mhz"] = "no nvidia-smi sample under load; the idle clock is not judged"
            smi["sm_clock_mhz"] = None
        if smi_error:
            reasons.update({k: smi_error for k in ("pcie_link", "sm_clock_mhz", "power_limit_w", "temperature_c", "ecc")})
        if log is not None:
            measured["xid_recent"] = parse_xid(log, smi.get("pci_bus_id"))
        else:
            why["xid_recent"] = log_error
        if not smi.get("name"):
            smi["name"] = torch.cuda.get_device_name(index)
        measured.update({"torch_version": torch.__version__, "cuda_version": torch.version.cuda,
                         "burn_seconds": args.burn, "seconds": round(time.time() - begun, 1)})
        print(json.dumps(merge_record(index, measured, smi, reasons, why), sort_keys=True), flush=True)
    busbw, reason = allreduce(torch, count)
    node = {"probe": "node", "version": 1, "gpus": count, "allreduce_busbw_gbs": busbw,
            "seconds": round(time.time() - started, 1), "unavailable": {"allreduce": reason} if reason else {}}
    print(json.dumps(node, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
