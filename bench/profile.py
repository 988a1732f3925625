#!/usr/bin/env python3
"""What a profiler sees of each variant, beside what the seeds say it should see.

    PYTHONPATH=python python3 bench/profile.py [--size 8192] [--out bench/results]

Runs Nsight Compute (`ncu --clock-control none`) on one launch of every op on a size x size
float32 matrix and prints, per op: shared-memory bank conflicts (loads, stores, as a share of
the wavefronts), global sectors per request (loads, stores), DRAM throughput and achieved
GB/s, then a check mark for each expectation the seeds state. Writes the table to
<out>/<gpu-name>-profile.md.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
import cute_transpose  # noqa: E402

METRICS = {
    "time_ns": "gpu__time_duration.sum",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "smem_ld_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smem_st_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smem_ld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smem_st_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "ld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "st_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "st_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
}

# What the seeds expect of each variant (float32): per property, "none"/"high" bank conflicts,
# "coalesced"/"strided" global accesses; absent = no claim. Sectors per request of a coalesced
# access: 4 for 4-byte lanes, 16 for the 16-byte vectors of tma and transpose.
EXPECT = {
    "naive_coalesced_read": {"ld": "coalesced", "st": "strided"},
    "naive_coalesced_write": {"ld": "strided", "st": "coalesced"},
    "bank_conflict_read": {"smem_ld": "high", "smem_st": "none", "ld": "coalesced", "st": "coalesced"},
    "bank_conflict_write": {"smem_ld": "none", "smem_st": "high", "ld": "coalesced", "st": "coalesced"},
    "padded": {"smem_ld": "none", "smem_st": "none", "ld": "coalesced", "st": "coalesced"},
    "swizzled": {"smem_ld": "none", "smem_st": "none", "ld": "coalesced", "st": "coalesced"},
    "tma": {"smem_ld": "none", "smem_st": "none", "ld": "coalesced"},  # stores go through TMA
    "pipelined": {"smem_ld": "none", "smem_st": "none"},  # loads and (float32) stores go through TMA
    "transpose": {"smem_ld": "none", "smem_st": "none", "ld": "coalesced", "st": "coalesced"},
    "copy": {"ld": "coalesced", "st": "coalesced"},
}
VECTOR_OPS = {"tma", "pipelined", "transpose"}


def worker(size: int) -> None:
    """Runs every op once (the launches ncu profiles), in EXPECT's order."""
    x = torch.randn(size, size, device="cuda")
    for name in EXPECT:
        getattr(torch.ops.cute_transpose, name)(x)
    torch.cuda.synchronize()


def run_ncu(size: int) -> list[dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "ncu.csv"
        cmd = ["ncu", "--clock-control", "none", "--kernel-name-base", "demangled",
               "--kernel-name", "regex:cute_transpose::",
               "--metrics", ",".join(METRICS.values()), "--csv", "--page", "raw",
               "--log-file", str(log), sys.executable, __file__, "--worker", "--size", str(size)]
        subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": str(REPO / "python")})
        rows = list(csv.DictReader(line for line in log.read_text().splitlines()
                                   if line.startswith('"')))
    rows = [r for r in rows if r.get("ID", "").strip().isdigit()]  # drop the units row
    if len(rows) != len(EXPECT):
        raise SystemExit(f"profile.py: expected {len(EXPECT)} profiled launches, got {len(rows)}")

    def number(text: str) -> float:
        return float(re.sub(r"[^0-9.eE+-]", "", text) or 0)

    return [{key: number(row[metric]) for key, metric in METRICS.items()} for row in rows]


def judge(kind: str, value: float, vector: bool) -> bool:
    if kind == "none":
        return value < 0.05
    if kind == "high":
        return value > 0.5
    ideal = 16 if vector else 4
    return value <= 1.1 * ideal if kind == "coalesced" else value >= 16


def table(results: list[dict[str, float]], size: int) -> str:
    nbytes = size * size * 4
    lines = [f"| op | smem ld conflicts | smem st conflicts | global ld sectors/req | global st sectors/req "
             f"| DRAM % of peak | GB/s | seeds' expectations |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in zip(EXPECT, results):
        measured = {
            "smem_ld": r["smem_ld_conflicts"] / r["smem_ld_wavefronts"] if r["smem_ld_wavefronts"] else 0.0,
            "smem_st": r["smem_st_conflicts"] / r["smem_st_wavefronts"] if r["smem_st_wavefronts"] else 0.0,
            "ld": r["ld_sectors"] / r["ld_requests"] if r["ld_requests"] else 0.0,
            "st": r["st_sectors"] / r["st_requests"] if r["st_requests"] else 0.0,
        }
        checks = []
        for key, kind in EXPECT[name].items():
            label = {"smem_ld": "smem ld", "smem_st": "smem st", "ld": "ld", "st": "st"}[key]
            mark = "✓" if judge(kind, measured[key], name in VECTOR_OPS) else "✗"
            checks.append(f"{label} {kind} {mark}")
        gbps = 2 * nbytes / r["time_ns"]
        lines.append(f"| {name} | {measured['smem_ld']:.0%} | {measured['smem_st']:.0%} | {measured['ld']:.1f} "
                     f"| {measured['st']:.1f} | {r['dram_pct']:.0f} | {gbps:.0f} | {', '.join(checks)} |")
    lines.append("")
    lines.append("Bank conflicts as a share of shared-memory wavefronts; sectors per request: 4 is a fully "
                 "coalesced warp of 4-byte lanes, 16 of 16-byte lanes, 32 one sector per lane. "
                 "GB/s = 2 x bytes / kernel time under ncu (clocks not locked).")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.size)
        return 0
    if not torch.cuda.is_available():
        sys.exit("profile.py needs a CUDA GPU and ncu")
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", torch.cuda.get_device_name()).strip("_")
    text = (f"# Nsight Compute: {torch.cuda.get_device_name()}, {args.size}x{args.size} float32, "
            f"one launch per op\n\n" + table(run_ncu(args.size), args.size) + "\n")
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}-profile.md").write_text(text)
    return 1 if "✗" in text else 0


if __name__ == "__main__":
    sys.exit(main())
