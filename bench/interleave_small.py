#!/usr/bin/env python3
"""Small work that the interleave kernel can move in 16-byte vectors, on a seeded grid of random
shapes: the measurement behind the small-work interleave rule (csrc/choose.cpp, small_interleave).

    PYTHONPATH=python python3 bench/interleave_small.py [--seed 3] [--budget 120] [--out FILE.json]

Each shape: uint8, bfloat16, float16 or float32 pixels of 2-8 channels, 2^10-2^20 elements, as
an image HWC <-> CHW, an image batch BHWC <-> BCHW, or a matrix (N, C) <-> (C, N) (N on the
16-byte grid half the time). Most are shapes that the interleave kernel runs in 16-byte vectors;
a few others ride along. Each shape's permute (whatever the chooser picks), ATen's copy, the
interleave kernel by name and eager permute are checked bit-exactly, then timed beside clone
(do_bench median, L2 flushed), round-robin, the best of three rounds. The summary: on the shapes
the chooser gives interleave, its speed against ATen's copy and against eager.
"""

from __future__ import annotations

import math
import random
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from bench.harness import (Progress, best_of_rounds, check_ops, do_bench_timer, ext, grid_script_main, permute_ops,
                           random_input)
from bench.summary import geomean

DTYPES = (torch.uint8, torch.uint8, torch.bfloat16, torch.float16, torch.float32)


def vector_interleave(x: torch.Tensor, dims: Sequence[int]) -> bool:
    """The interleave kernel would move x permuted by dims in 16-byte vectors."""
    try:
        info = ext().explain(x, list(dims), kernel="interleave")
    except RuntimeError:  # it cannot run this permute
        return False
    info = info.get("cuda", info)
    return info["kernel"] == "interleave" and info["config"].endswith("16-byte vectors")


def grid(seed: int, tries: int = 400) -> list[tuple[tuple[int, ...], tuple[int, ...], torch.dtype]]:
    """(shape, dims, dtype) of random small pixel permutes: every one in interleave's vector
    mode, and three in ten of the others."""
    rng = random.Random(seed)
    cells = []
    for _ in range(tries):
        kind = rng.choice(["image", "image", "batch", "matrix", "matrix", "tiny"])
        dtype, C = rng.choice(DTYPES), rng.randint(2, 8)
        if kind == "image":
            H, W = rng.randint(16, 640), rng.randint(16, 640)
            shape, dims = ((H, W, C), (2, 0, 1)) if rng.random() < 0.5 else ((C, H, W), (1, 2, 0))
        elif kind == "batch":
            B, H, W = rng.randint(2, 16), rng.randint(16, 256), rng.randint(16, 256)
            shape, dims = ((B, H, W, C), (0, 3, 1, 2)) if rng.random() < 0.5 else ((B, C, H, W), (0, 2, 3, 1))
        else:
            N = rng.randint(256, 400000 if kind == "matrix" else 4096)
            if rng.random() < 0.5:
                N -= N % 8
            shape, dims = ((N, C), (1, 0)) if rng.random() < 0.5 else ((C, N), (1, 0))
        if not 2 ** 10 <= math.prod(shape) < 2 ** 20:
            continue
        if vector_interleave(torch.empty(shape, dtype=dtype), dims) or rng.random() < 0.3:
            cells.append((shape, dims, dtype))
    return cells


def measure(seed: int, budget_s: float) -> list[dict]:
    cute_transpose = ext()
    device = torch.device("cuda")
    timer = do_bench_timer(5, 20)
    cells = grid(seed)
    rows, progress, start = [], Progress(len(cells)), time.time()
    for shape, dims, dtype in cells:
        if time.time() - start > budget_s:
            break
        progress.start(f"{shape} {dims} {dtype}")
        x = random_input(shape, dtype, device)
        expected = x.permute(dims)
        ops = permute_ops(x, dims, ("aten", "interleave"))
        check_ops(ops, expected, lambda name: name == "interleave" and not vector_interleave(x, dims),  # cannot run it
                  f"interleave_small.py, {shape} {dims} {dtype}")
        us = best_of_rounds(ops, timer)
        rows.append({"shape": list(shape), "dims": list(dims), "dtype": str(dtype).removeprefix("torch."),
                     "chosen": cute_transpose.explain(x, list(dims))["kernel"], "us": us})
        del x, expected
        progress.done()
    progress.close()
    return rows


def summary(rows: list[dict]) -> str:
    """On the shapes the chooser gives interleave: its speed against ATen's copy and eager's
    (geomean), how many ran more than 5% slower, and the slowest; by element type."""
    picked = [r for r in rows if r["chosen"] == "interleave"]
    out = [f"{len(rows)} shapes, {len(picked)} run interleave by the chooser.", "",
           "| dtype | shapes | / ATen's copy | more than 5% slower | slowest | / eager |", "|---|---:|---:|---:|---:|---:|"]
    for dtype in sorted({r["dtype"] for r in picked}) + ["every"]:
        some = [r for r in picked if dtype in ("every", r["dtype"])]
        aten = [r["us"]["aten"] / r["us"]["ours"] for r in some]
        eager = [r["us"]["eager"] / r["us"]["ours"] for r in some]
        out.append(f"| {dtype} | {len(some)} | {geomean(aten) or math.nan:.3f} | {sum(v < 0.95 for v in aten)} | "
                   f"{min(aten, default=math.nan):.3f} | {geomean(eager) or math.nan:.3f} |")
    return "\n".join(out)


def grid_lines(seed: int) -> list[str]:
    """The grid's shapes in words."""
    return [f"{shape} permuted {dims}, {str(dtype).removeprefix('torch.')}" for shape, dims, dtype in grid(seed)]


def main(argv: Optional[Sequence[str]] = None) -> int:
    return grid_script_main(argv, __doc__, 3, grid_lines, measure, summary)


if __name__ == "__main__":
    sys.exit(main())
