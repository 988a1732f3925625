"""Which kernel the chooser of this build picks for every cell of a saved benchmark run, beside
the kernel that ran when it was measured and how it did against eager: a new tuning table or
class rule can be checked against saved runs on any machine, without a GPU.

    python3 bench/rechoose.py bench/results/NVIDIA_H100_80GB_HBM3-sweep.json [--all]
    python3 bench/rechoose.py bench/results/NVIDIA_H100_80GB_HBM3.json  # matrix and permutation tables
    python3 bench/rechoose.py bench/results/NVIDIA_H100_80GB_HBM3-workloads.json

Prints one line per cell whose kernel changes (with --all: every cell), marked `+` where the
measured kernel trailed eager by more than 0.01 (a change there may help) and `-` where it beat
eager by more than 0.05 and the new pick is ATen's copy (a change there may cost). Where the run
has an `autotuned` column, whose first call timed every candidate kernel of the cell (explain()'s
reason lists the median launches), a changed cell also shows the new pick's ratio to clone
estimated from those timings: the measured ratio x (old kernel's time / new kernel's time). The
inputs are meta tensors: nothing is allocated or run. `arch` (default 90) picks the table, and
the GPU the run names (its meta's device_name, or --gpu) picks the rules of that model (an
H200's own, explain()'s `gpu=`).

    python3 bench/rechoose.py --gaps bench/results/NVIDIA_H100_80GB_HBM3-sweep*.json

--gaps: where the autotuner's fastest kernel beat this build's pick by more than 5% in the
autotuned column of the runs given (their timings, not a new measurement), counted by pick and
fastest kernel: the leads a new rule or kernel would take up.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import re
import sys
from pathlib import Path
from typing import Optional, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from bench.cases import View
from bench.harness import ext, meta_input


def chosen(x: torch.Tensor, dims: Sequence[int], arch: int, gpu: str = "") -> str:
    """The kernel the chooser picks for permute(x, dims) on a GPU of `arch` named `gpu` (as
    torch.cuda.get_device_name gives it; "" for the H100's rules), by the name that forces it:
    "rows/together" and "gather/together" where its blocks read neighbouring runs together."""
    return forced_name(json.loads(torch.ops.cute_transpose._explain(x, list(dims), arch, "", gpu)))


def forced_name(info: dict) -> str:
    """The name that forces the kernel an explain() dict describes: "rows/together" and
    "gather/together" where its blocks read neighbouring runs together. Runs saved before
    explain() said it (its "name") say it in their configuration."""
    if "name" in info:
        return info["name"]
    return info["kernel"] + ("/together" if "read together" in (info.get("config") or "") else "")


SECTIONS = ("results", "permute", "sweep", "workloads")  # a run's tables, by section
TIMINGS = "autotuned on this device (median launches, fastest first): "  # csrc/ops.cpp, explain()


def autotune_timings(row: Optional[dict]) -> dict[str, float]:
    """The microseconds per kernel that the autotuner measured for a cell (its `autotuned` row's
    reason), or {} where it did not run."""
    reason = ((row or {}).get("explain") or {}).get("reason", "")
    if not reason.startswith(TIMINGS):
        return {}
    return {k: float(us) for k, us in re.findall(r"([\w/]+) ([0-9.]+) us", reason[len(TIMINGS):])}


def estimate(row: dict) -> Optional[float]:
    """The new pick's ratio to clone, from the measured ratio and the autotuner's timings of the
    old and new kernels in the same run; None without both."""
    t = row["timings"]
    if row["ran"] not in t or row["now"] not in t or not t[row["now"]]:
        return None
    return row["ours"] * t[row["ran"]] / t[row["now"]]


def rechoose(saved: dict, arch: int = 90, gpu: Optional[str] = None) -> list[dict]:
    """One row per measured cell: its key, the kernel that ran, its and eager's ratio to clone,
    and the kernel this build picks on the GPU that measured the run (`gpu`, or else the one its
    meta names)."""
    ext()
    if gpu is None:
        gpu = (saved.get("meta") or {}).get("device_name") or ""
    ops = collections.defaultdict(dict)
    for r in (r for section in SECTIONS for r in saved.get(section, ())):
        key = (r["case"], tuple(r["shape"]), tuple(r["dims"]), r["dtype"], json.dumps(r["view"]), r.get("group", ""))
        ops[key][r["op"]] = r
    rows = []
    for (case, shape, dims, dtype, view, _), cell in ops.items():
        ours, eager = cell.get("permute") or cell.get("transpose"), cell.get("eager")
        if ours is None or ours.get("explain") is None:
            continue
        layout = View(**json.loads(view))
        rows.append({"case": case, "shape": shape, "dtype": dtype, "view": layout,
                     "ran": forced_name(ours["explain"]), "ours": ours.get("ratio") or 0.0,
                     "eager": (eager or {}).get("ratio") or 0.0,
                     "now": chosen(meta_input(shape, dtype, layout), dims, arch, gpu),
                     "timings": autotune_timings(cell.get("autotuned")),
                     "clone_us": 1e3 * ((cell.get("clone") or {}).get("ms") or 0.0)})
    return rows


GAP = 1.05  # a pick this much slower than the fastest kernel the autotuner timed is a gap
LONG_US = 20.0  # cells whose copy takes this long or more: their timings hide the host's time


def gaps(rows: Sequence[dict], margin: float = GAP) -> dict[tuple[str, str], list[dict]]:
    """(this build's pick, the fastest kernel the autotuner timed) -> the cells whose pick was
    timed there and ran more than `margin` x as long, each with its `gap` (the pick's time over
    the fastest's). The timings are of the kernels as they were when the run was measured."""
    out = collections.defaultdict(list)
    for r in rows:
        t = r["timings"]
        if r["now"] not in t:
            continue
        fastest = min(t, key=t.get)
        if t[r["now"]] > margin * t[fastest]:
            out[(r["now"], fastest)].append({**r, "gap": t[r["now"]] / t[fastest]})
    return dict(out)


def print_gaps(rows: Sequence[dict]) -> None:
    found = gaps(rows)
    timed = sum(r["now"] in r["timings"] for r in rows)
    print(f"{timed} of {len(rows)} cells have the autotuner's timings of this build's pick; on "
          f"{sum(map(len, found.values()))} of them a kernel it timed ran more than {GAP} x as fast:")

    def cost(cells: list[dict]) -> float:  # the time a pair leaves, summed in log terms over its cells
        return sum(math.log(c["gap"]) for c in cells)
    for (pick, fastest), cells in sorted(found.items(), key=lambda kv: -cost(kv[1])):
        long = sum(c["clone_us"] >= LONG_US for c in cells)
        print(f"  {pick:14s} -> {fastest:14s} {len(cells):4d} cells ({long} of {LONG_US:.0f} us of copy or more), "
              f"{math.exp(cost(cells) / len(cells)):.2f} x (geomean), up to {max(c['gap'] for c in cells):.2f} x")


def mark(row: dict) -> str:
    if row["ours"] < row["eager"] - 0.01:
        return "+"
    if row["now"] == "aten" and row["ours"] > row["eager"] + 0.05:
        return "-"
    return " "


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_json", type=Path, nargs="+", help="saved <gpu>-sweep.json or <gpu>.json runs")
    p.add_argument("--arch", type=int, default=90, help="the table to look up [90]")
    p.add_argument("--gpu", default=None,
                   help="the GPU model whose rules to replay, as torch.cuda.get_device_name names it [the run's own]")
    p.add_argument("--all", action="store_true", help="every cell, not only the changed ones")
    p.add_argument("--gaps", action="store_true",
                   help="where the autotuner's fastest kernel beat this build's pick (its timings in the runs)")
    args = p.parse_args(argv)
    rows = [r for path in args.run_json for r in rechoose(json.loads(path.read_text()), args.arch, args.gpu)]
    if args.gaps:
        print_gaps(rows)
        return 0
    changed = collections.Counter()
    for r in rows:
        if r["ran"] != r["now"]:
            changed[(r["ran"], r["now"])] += 1
        if args.all or r["ran"] != r["now"]:
            guess = estimate(r) if r["ran"] != r["now"] else None
            print(f"{mark(r)} {r['case']:22s} {'x'.join(map(str, r['shape'])):18s} {r['dtype']:10s} "
                  f"{r['view'].text():14s} ran {r['ran']:10s} ({r['ours']:.2f}, eager {r['eager']:.2f})"
                  f" -> {r['now']}" + (f" (about {guess:.2f}, from the autotuner's timings)" if guess else ""))
    print(f"{sum(changed.values())} of {len(rows)} cells change kernel: " +
          ", ".join(f"{a} -> {b} {n}" for (a, b), n in changed.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
