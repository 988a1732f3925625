"""The synthetic shapes bench/tune.py measures: its own grid, separate from the sweep's cells
(another seed, another generator), so the chooser's table is not fitted to the benchmark.

The grid crosses these features; each combination (a "grid class") gets a few shapes:

- rank 2-5
- element size 1, 2, 4, 8, 16 bytes
- layout: 'keep' (the innermost dim stays innermost: whole rows move) or 'move'
- the innermost input dim short (1-16 elements) or long; for 'move' the innermost output dim
  too (so 2-D grids include tall-skinny and short-wide matrices)
- rows: 'aligned' (long dims a multiple of 16 bytes) or 'odd' (odd long dims, and one in four
  inputs a slice whose rows start unaligned)
- total: 'small' (2^21-2^23 elements) or 'big' (2^24-2^27 elements), at most 1 GiB

The classes of the C++ chooser are whatever `cute_transpose.explain` says; this grid only has
to reach every one of them with several shapes. Plain Python, no torch.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass

from bench.cases import GiB, Cell, Dims, Shape, View, dims_text, permuted_is_contiguous
from bench.sweep_cases import ESIZE_DTYPE

TUNE_SEED = 4242
TOTAL_BANDS = {"small": (21, 23), "big": (24, 27)}
MAX_BYTES = 1 * GiB
SHORT_RANGE = (1, 16)
LONG_LOG2 = (6, 13)             # long innermost dims: 64 to 8192 elements, as the total allows


@dataclass(frozen=True)
class GridClass:
    rank: int
    esize: int
    layout: str                 # keep | move
    inner_in: str               # short | long
    inner_out: str              # short | long ('keep': the same dim as inner_in)
    rows: str                   # aligned | odd
    total: str                  # small | big

    def text(self) -> str:
        out = "" if self.layout == "keep" else f" out:{self.inner_out}"
        return (f"r{self.rank} e{self.esize} {self.layout} in:{self.inner_in}{out} "
                f"{self.rows} {self.total}")


def grid_classes() -> list[GridClass]:
    """Every feature combination that can exist (a matrix cannot keep its innermost dim, and
    cannot have both sides short within the totals)."""
    found = []
    for rank, esize, layout, inn, out, rows, total in itertools.product(
            (2, 3, 4, 5), ESIZE_DTYPE, ("keep", "move"), ("short", "long"), ("short", "long"),
            ("aligned", "odd"), TOTAL_BANDS):
        if layout == "keep" and (rank == 2 or out != inn):
            continue
        if rank == 2 and inn == out == "short":
            continue
        found.append(GridClass(rank, esize, layout, inn, out, rows, total))
    return found


def tune_cells(per_class: int = 2, seed: int = TUNE_SEED) -> list[Cell]:
    """`per_class` shapes of every grid class, round-robin (every class's first shape, then
    every class's second, ...) in a seeded shuffled class order, so a run cut short by its time
    budget still covers the grid evenly."""
    classes = grid_classes()
    random.Random(seed).shuffle(classes)
    cells = []
    for k in range(per_class):
        for gc in classes:
            cell = draw_cell(gc, random.Random(f"{seed}/{gc.text()}/{k}"))
            if cell is not None:
                cells.append(cell)
    return cells


def permutations(rank: int, layout: str) -> list[Dims]:
    """The non-identity permutations of the rank that keep (or move) the innermost dim."""
    keep = [p for p in itertools.permutations(range(rank)) if p[-1] == rank - 1]
    move = [p for p in itertools.permutations(range(rank)) if p[-1] != rank - 1]
    return [p for p in keep if p != tuple(range(rank))] if layout == "keep" else move


def draw_cell(gc: GridClass, rng: random.Random, attempts: int = 20):
    """One cell of the grid class (None if none fits after a few attempts)."""
    for _ in range(attempts):
        dims = rng.choice(permutations(gc.rank, gc.layout))
        shape = draw_shape(gc, dims, rng)
        view = View()
        if gc.rows == "odd" and rng.random() < 0.25:
            view = View("offset", gc.rank - 1, 1)
        cell = Cell("tune", gc.text(), shape, dims, ESIZE_DTYPE[gc.esize], view, gc.text())
        if cell.nbytes <= MAX_BYTES and not permuted_is_contiguous(cell):
            return cell
    return None


def draw_shape(gc: GridClass, dims: Dims, rng: random.Random) -> Shape:
    """Sizes for the class: the short innermost sides first, then the long sides and the other
    dims sharing the rest of a log-uniform total."""
    lo, hi = TOTAL_BANDS[gc.total]
    log_total = min(rng.uniform(lo, hi), math.log2(MAX_BYTES // gc.esize))
    inner_in, inner_out = gc.rank - 1, dims[-1]
    kinds = {inner_in: gc.inner_in, inner_out: gc.inner_out if gc.layout == "move" else gc.inner_in}
    shape = [0] * gc.rank
    for d, kind in kinds.items():
        if kind == "short":
            shape[d] = rng.randint(*SHORT_RANGE)
    budget = log_total - sum(math.log2(s) for s in shape if s)
    longs = [d for d, kind in kinds.items() if kind == "long"]
    others = [d for d in range(gc.rank) if d not in kinds]
    for i, d in enumerate(longs):
        if others:  # a long side takes a share of the budget, within LONG_LOG2
            e = min(LONG_LOG2[1], rng.uniform(0.6, 1.0) * budget / (len(longs) + len(others)))
        else:       # nothing else to hold the total: the long sides share all of it
            e = budget if i == len(longs) - 1 else rng.uniform(0.3, 0.7) * budget
        shape[d] = round_long(round(2 ** max(LONG_LOG2[0], e)), gc.rows, gc.esize)
        budget -= math.log2(shape[d])
    weights = [rng.uniform(0.5, 1.0) for _ in others]
    for d, w in zip(others, weights):
        shape[d] = max(2, round(2 ** (max(1.0, budget) * w / sum(weights))))
    return tuple(shape)


def round_long(size: int, rows: str, esize: int) -> int:
    """'aligned': a multiple of 16 bytes; 'odd': an odd number."""
    if rows == "aligned":
        step = max(1, 16 // esize)
        return max(step, size // step * step)
    return size | 1


def describe(cell: Cell) -> str:
    return f"{cell.name}: {'x'.join(map(str, cell.shape))} {dims_text(cell.dims)} {cell.dtype}"
