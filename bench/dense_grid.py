"""Batches of small matrices, each whole in the input and in the output: (..., R, C) ->
(..., C, R) of a contiguous (or sliced) tensor, the shape class of the chooser's dense-batch
rule (csrc/choose.cpp, gather_takes_dense_batches). The grid the rule was checked on, drawn
apart from the shapes it was drawn from:

    PYTHONPATH=python python bench/tune.py --dense-batches 64 --seed 977 \\
        --report bench/results/<gpu>-dense-batches.md --out /tmp/dense.inc

Each shape: R and C log-uniform over 2-96 elements, one dtype of 1-16 bytes, 4-128 MiB in all,
the batch as one dim or two (B1, B2, R, C); one in four is a slice x[1:] of a tensor one matrix
longer (its start one matrix in).
"""

from __future__ import annotations

import math
import random

from bench.cases import ITEMSIZE, Cell, View

DTYPES = ("uint8", "bfloat16", "float16", "float32", "float64", "complex128")


def log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def dense_batch_cell(rng: random.Random) -> Cell:
    dtype = rng.choice(DTYPES)
    rows, cols = log_uniform(rng, 2, 96), log_uniform(rng, 2, 96)
    matrix = rows * cols * ITEMSIZE[dtype]
    batch = max(2, log_uniform(rng, 4 << 20, 128 << 20) // matrix)
    if rng.random() < 0.5 and batch >= 64:  # the batch over two dims
        outer = rng.randint(2, min(64, batch // 2))
        shape, dims = (outer, batch // outer, rows, cols), (0, 1, 3, 2)
    else:
        shape, dims = (batch, rows, cols), (0, 2, 1)
    view = View("offset", 0, 1) if rng.random() < 0.25 else View()
    return Cell("tune", "dense batch", shape, dims, dtype, view, "dense batch")


def dense_batch_cells(count: int, seed: int) -> list[Cell]:
    """`count` shapes of the grid, each from its own seeded draw."""
    return [dense_batch_cell(random.Random(f"{seed}/dense/{k}")) for k in range(count)]
