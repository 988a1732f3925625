"""The synthetic shapes bench/tune.py measures: its own grid, separate from the sweep's cells
(another seed, another generator), so the chooser's table is not fitted to the benchmark.

The grid crosses these features; each combination (a "grid class") gets a few shapes:

- rank 2-5
- element size 1, 2, 4, 8, 16 bytes
- layout: 'keep' (the innermost dim stays innermost: whole rows move) or 'move'
- the innermost input dim short (1-16 elements), medium (48-1024 bytes) or long; for 'move' the
  innermost output dim too (so 2-D grids include tall-skinny and short-wide matrices)
- rows: 'aligned' (long dims a multiple of 16 bytes) or 'odd' (odd long dims, and one in four
  inputs a slice whose rows start unaligned)
- total: 'small' (2^21-2^23 elements) or 'big' (2^24-2^27 elements), at most 1 GiB; or, in a
  grid of its own (`tune.py --small`), 'micro' (2^14-2^20 elements: the chooser's small-work
  classes, marked ".s", which take a few microseconds)
- extra: 'plain'; 'tiny' (one dim that is innermost on neither side has 2-4 elements); or
  'view' (the input is an expanded, stepped or transposed view of its base); a grid of one
  view kind (`tune.py --view expand`) has the 'view' classes alone, all of that kind

The classes of the C++ chooser are whatever `cute_transpose.explain` says, and grid classes
reach them unevenly (a 16-byte-aligned float32 tile class gets hundreds of shapes, a rank-6-like
class with 128-byte output rows two): `by_chooser_class` draws several shapes per grid class and
keeps a few of every chooser class. Plain Python, no torch.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Callable

from bench.cases import GiB, Cell, Dims, Shape, View, base_nbytes, dims_text, permuted_is_contiguous
from bench.sweep_cases import ESIZE_DTYPE

TUNE_SEED = 4242
SIDES = ("short", "medium", "long")
TOTAL_BANDS = {"small": (21, 23), "big": (24, 27), "micro": (15, 20)}
MAIN_BANDS = ("small", "big")   # the main grid; ("micro",) is the small-work grid
MAX_BYTES = 1 * GiB
SHORT_RANGE = (1, 16)
LONG_LOG2 = (6, 13)             # long innermost dims: 64 to 8192 elements, as the total allows
MEDIUM_BYTES = (48, 1024)       # medium innermost dims, log-uniform in bytes (at least 2 elements)


@dataclass(frozen=True)
class GridClass:
    rank: int
    esize: int
    layout: str                 # keep | move
    inner_in: str               # short | medium | long
    inner_out: str              # short | medium | long ('keep': the same dim as inner_in)
    rows: str                   # aligned | odd
    total: str                  # small | big
    extra: str = "plain"        # plain | tiny | view

    def text(self) -> str:
        out = "" if self.layout == "keep" else f" out:{self.inner_out}"
        extra = "" if self.extra == "plain" else f" {self.extra}"
        return (f"r{self.rank} e{self.esize} {self.layout} in:{self.inner_in}{out} "
                f"{self.rows} {self.total}{extra}")


def grid_classes(bands: tuple[str, ...] = MAIN_BANDS) -> list[GridClass]:
    """Every feature combination that can exist (a matrix cannot keep its innermost dim, and
    needs a long side to reach the totals), in the total `bands`."""
    found = []
    for rank, esize, layout, inn, out, rows, total, extra in itertools.product(
            (2, 3, 4, 5), ESIZE_DTYPE, ("keep", "move"), SIDES, SIDES,
            ("aligned", "odd"), bands, ("plain", "tiny", "view")):
        if layout == "keep" and (rank == 2 or out != inn):
            continue
        if rank == 2 and ("long" not in (inn, out) or extra == "tiny"):
            continue
        found.append(GridClass(rank, esize, layout, inn, out, rows, total, extra))
    return found


def tune_cells(per_class: int = 2, seed: int = TUNE_SEED, bands: tuple[str, ...] = MAIN_BANDS,
               view: str = "") -> list[Cell]:
    """`per_class` shapes of every grid class, round-robin (every class's first shape, then
    every class's second, ...) in a seeded shuffled class order, so a run cut short by its time
    budget still covers the grid evenly. With `view` (a kind of draw_view), only the 'view'
    classes, every input a view of that kind."""
    classes = [gc for gc in grid_classes(bands) if not view or gc.extra == "view"]
    random.Random(seed).shuffle(classes)
    cells = []
    for k in range(per_class):
        for gc in classes:
            cell = draw_cell(gc, random.Random(f"{seed}/{gc.text()}/{k}"), view_kind=view)
            if cell is not None:
                cells.append(cell)
    return cells


def by_chooser_class(cells: list[Cell], class_of: Callable[[Cell], str], per_key: int,
                     limit: int) -> list[Cell]:
    """At most `per_key` cells of every chooser class (`class_of`), round-robin over the classes
    in the order they first appear (every class's first cell, then every second, ...), at most
    `limit` in all: a class the grid reaches rarely keeps all its cells, a common one `per_key`."""
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(class_of(cell), []).append(cell)
    picked = [group[k] for k in range(per_key) for group in groups.values() if k < len(group)]
    return picked[:limit]


def permutations(rank: int, layout: str) -> list[Dims]:
    """The non-identity permutations of the rank that keep (or move) the innermost dim."""
    keep = [p for p in itertools.permutations(range(rank)) if p[-1] == rank - 1]
    move = [p for p in itertools.permutations(range(rank)) if p[-1] != rank - 1]
    return [p for p in keep if p != tuple(range(rank))] if layout == "keep" else move


def draw_cell(gc: GridClass, rng: random.Random, attempts: int = 20, view_kind: str = ""):
    """One cell of the grid class (None if none fits after a few attempts); a 'view' class
    draws views of `view_kind`, or of any kind."""
    for _ in range(attempts):
        dims = rng.choice(permutations(gc.rank, gc.layout))
        shape = draw_shape(gc, dims, rng)
        view = View()
        if gc.rows == "odd" and rng.random() < 0.25:
            view = View("offset", gc.rank - 1, 1)
        if gc.extra == "tiny":
            others = [d for d in range(gc.rank) if d not in (gc.rank - 1, dims[-1])]
            if not others:
                return None
            kinds = kinds_of(gc, dims)
            shape = with_tiny_dim(shape, rng.choice(others), rng.randint(2, 4),
                                  shorts=[d for d, k in kinds.items() if k != "long"],
                                  rounded=lambda d, n: round_long(n, gc.rows, gc.esize) if d in kinds else n)
        elif gc.extra == "view":
            view = draw_view(shape, rng, view_kind)
        cell = Cell("tune", gc.text(), shape, dims, ESIZE_DTYPE[gc.esize], view, gc.text())
        if (cell.nbytes <= MAX_BYTES and base_nbytes(cell) <= 3 * MAX_BYTES
                and cell.numel >= 2 ** (TOTAL_BANDS[gc.total][0] - 1)
                and (gc.total != "micro" or cell.numel < 2 ** TOTAL_BANDS["micro"][1])
                and not permuted_is_contiguous(cell)):
            return cell
    return None


def kinds_of(gc: GridClass, dims: Dims) -> dict[int, str]:
    """'short', 'medium' or 'long' for the innermost input dim and the innermost output dim."""
    inner_in, inner_out = gc.rank - 1, dims[-1]
    return {inner_in: gc.inner_in, inner_out: gc.inner_out if gc.layout == "move" else gc.inner_in}


def with_tiny_dim(shape: Shape, tiny: int, size: int, shorts: list[int], rounded) -> Shape:
    """`shape` with dim `tiny` set to `size`, and the elements it loses given to the largest
    dim that is not short (`rounded(dim, size)` keeps an innermost dim's rounding), so the total
    stays in its band."""
    s = list(shape)
    lost = s[tiny] / size
    s[tiny] = size
    grow = max((d for d in range(len(s)) if d != tiny and d not in shorts), key=lambda d: s[d],
               default=None)
    if grow is not None:
        s[grow] = rounded(grow, max(1, round(s[grow] * lost)))
    return tuple(s)


VIEW_KINDS = ("expand", "step", "transposed")


def draw_view(shape: Shape, rng: random.Random, kind: str = "") -> View:
    """An expanded dim (stride 0), a stepped slice, or a base stored with the innermost dim
    swapped with another; `kind` picks one of them, else it is drawn."""
    rank = len(shape)
    kind = kind or rng.choice(VIEW_KINDS)
    if kind == "expand":
        return View("expand", rng.choice([d for d in range(rank) if shape[d] > 1] or [0]))
    if kind == "step":
        return View("step", rng.randrange(rank), rng.choice((2, 3)))
    return View("transposed", rank - 1, rng.randrange(rank - 1))


def draw_shape(gc: GridClass, dims: Dims, rng: random.Random) -> Shape:
    """Sizes for the class: the short innermost sides first, then the long sides and the other
    dims sharing the rest of a log-uniform total."""
    lo, hi = TOTAL_BANDS[gc.total]
    log_total = min(rng.uniform(lo, hi), math.log2(MAX_BYTES // gc.esize))
    kinds = kinds_of(gc, dims)
    shape = [0] * gc.rank
    for d, kind in kinds.items():
        if kind == "short":
            shape[d] = rng.randint(*SHORT_RANGE)
        elif kind == "medium":
            nbytes = 2 ** rng.uniform(*map(math.log2, MEDIUM_BYTES))
            shape[d] = round_long(max(2, round(nbytes / gc.esize)), gc.rows, gc.esize)
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
