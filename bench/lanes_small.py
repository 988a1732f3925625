#!/usr/bin/env python3
"""Small transposes that the chooser runs in the lanes kernel, on a seeded grid of random shapes:
the measurement behind the small-work lanes rule (csrc/choose.cpp, small_lanes).

    PYTHONPATH=python python3 bench/lanes_small.py [--seed 5] [--budget 120] [--out FILE.json]

Each shape: 1-, 2-, 4- or 8-byte elements, 2^8-2^20 of them, as a 2-D transpose with a short
side of 2-8 elements (either way round), a 2-D transpose of two longer sides, or a random
permute of three to five dims; the input contiguous, offset, stepped or broadcast along its
first dim. Only shapes the chooser gives the lanes kernel are kept. Each shape's permute (the
pick), ATen's copy, gather, lanes and stage by name and eager permute are checked bit-exactly
against torch, then timed beside clone (do_bench median, L2 flushed), round-robin, the best of
three rounds.
The summary: the lanes kernel's speed against ATen's copy (which ran these shapes before),
eager and gather, and the stage kernel's against lanes (both by name) where stage runs, by class
and element type.
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

from bench.cases import View, base_shape
from bench.harness import (Progress, apply_view, best_of_rounds, check_ops, do_bench_timer, ext, grid_script_main,
                           meta_input, permute_ops, random_input)
from bench.summary import geomean

DTYPES = (torch.uint8, torch.bfloat16, torch.float32, torch.float64)
# The inputs' layouts: contiguous, or offset, stepped or broadcast along dim 0 (the grid draws
# contiguous twice as often as each of the others).
VIEWS = {"contiguous": View(), "offset": View("offset", 0, 1), "step": View("step", 0, 2), "expand": View("expand", 0, 0)}


def input_of(shape: Sequence[int], dtype: torch.dtype, view: str, device) -> torch.Tensor:
    """Fresh random data of `shape`, laid out as VIEWS[view] says."""
    base = random_input(base_shape(tuple(shape), VIEWS[view]), dtype, device)
    return apply_view(base, tuple(shape), VIEWS[view])


def chosen(shape, dims, dtype, view) -> str:
    """The kernel the chooser picks for this cell on CUDA (explained from a meta tensor with the
    same strides)."""
    x = meta_input(tuple(shape), str(dtype).removeprefix("torch."), VIEWS[view])
    info = ext().explain(x, list(dims))
    return info.get("cuda", info)["kernel"]


def grid(seed: int, tries: int = 600) -> list[tuple[tuple[int, ...], tuple[int, ...], torch.dtype, str]]:
    """(shape, dims, dtype, view) of random small permutes that the chooser runs in lanes."""
    rng = random.Random(seed)
    cells = []
    for _ in range(tries):
        kind = rng.choice(["short", "short", "matrix", "dims"])
        dtype, view = rng.choice(DTYPES), rng.choice(("contiguous", *VIEWS))
        if kind == "short":
            C, N = rng.randint(2, 8), int(2 ** rng.uniform(7, 17.9))
            shape = (N, C) if rng.random() < 0.5 else (C, N)
            dims = (1, 0)
        elif kind == "matrix":
            shape, dims = (int(2 ** rng.uniform(3.2, 11)), int(2 ** rng.uniform(3.2, 11))), (1, 0)
        else:
            rank = rng.randint(3, 5)
            shape = tuple(int(2 ** rng.uniform(0.6, 20 / rank)) for _ in range(rank))
            dims = tuple(rng.sample(range(rank), rank))
        if not 2 ** 8 <= math.prod(shape) < 2 ** 20 or dims == tuple(range(len(shape))):
            continue
        if chosen(shape, dims, dtype, view) == "lanes":
            cells.append((shape, dims, dtype, view))
    return cells


def measure(seed: int, budget_s: float) -> list[dict]:
    device = torch.device("cuda")
    timer = do_bench_timer(5, 20)
    cells = grid(seed)
    rows, progress, start = [], Progress(len(cells)), time.time()
    for shape, dims, dtype, view in cells:
        if time.time() - start > budget_s:
            break
        progress.start(f"{shape} {dims} {dtype} {view}")
        x = input_of(shape, dtype, view, device)
        expected = x.permute(dims)
        ops = permute_ops(x, dims, ("aten", "gather", "lanes", "stage"))
        check_ops(ops, expected, lambda name: name in ("gather", "stage"),  # off the 16-byte grid; no short side
                  f"lanes_small.py, {shape} {dims} {dtype} {view}")
        us = best_of_rounds(ops, timer)
        rows.append({"shape": list(shape), "dims": list(dims), "dtype": str(dtype).removeprefix("torch."),
                     "view": view, "chosen": ext().explain(x, list(dims))["kernel"], "us": us})
        del x, expected
        progress.done()
    progress.close()
    return rows


def summary(rows: list[dict]) -> str:
    """On the shapes the chooser gives lanes: its speed against ATen's copy, eager and gather
    (geomean), how many ran more than 5% slower than ATen's copy, and the slowest; and the stage
    kernel's speed against lanes (both by name) where both ran, with how many it ran more than 5%
    faster."""
    picked = [r for r in rows if r["chosen"] == "lanes"]
    out = [f"{len(rows)} shapes, {len(picked)} run lanes by the chooser.", "",
           "| shapes | count | / ATen's copy | more than 5% slower | slowest | / eager | / gather | stage / lanes | stage 5% faster |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    groups = [("2-D", lambda r: len(r["shape"]) == 2), ("3-5 dims", lambda r: len(r["shape"]) > 2)]
    groups += [(d, lambda r, d=d: r["dtype"] == d) for d in sorted({r["dtype"] for r in picked})]
    for label, keep in groups + [("every", lambda r: True)]:
        some = [r for r in picked if keep(r)]
        speed = lambda other: [r["us"][other] / r["us"]["ours"] for r in some if other in r["us"]]  # noqa: E731
        aten = speed("aten")
        stage = [r["us"]["lanes"] / r["us"]["stage"] for r in some if "stage" in r["us"] and "lanes" in r["us"]]
        out.append(f"| {label} | {len(some)} | {geomean(aten) or math.nan:.3f} | {sum(v < 0.95 for v in aten)} | "
                   f"{min(aten, default=math.nan):.3f} | {geomean(speed('eager')) or math.nan:.3f} | "
                   f"{geomean(speed('gather')) or math.nan:.3f} | {geomean(stage) or math.nan:.3f} | "
                   f"{sum(v > 1.05 for v in stage)} of {len(stage)} |")
    return "\n".join(out)


def grid_lines(seed: int) -> list[str]:
    """The grid's shapes in words."""
    return [f"{shape} permuted {dims}, {str(dtype).removeprefix('torch.')}, {view}" for shape, dims, dtype, view in grid(seed)]


def main(argv: Optional[Sequence[str]] = None) -> int:
    return grid_script_main(argv, __doc__, 5, grid_lines, measure, summary)


if __name__ == "__main__":
    sys.exit(main())
