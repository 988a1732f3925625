"""The sweep's cells: the TTC suite, image batches, model layouts, and a seeded random sweep of
awkward shapes.

The random sweep is deterministic (fixed seed, one random stream per family). It is built from
families: a family fixes the rank, the permutation (from a small fixed pool per rank), the dtype,
the input view and which dims are tiny; its cells differ only in size. torch.compile compiles one
graph per family (with dynamic shapes) and reuses it for every size, which keeps the sweep's
compile time bounded.

Coverage, by construction: ranks 2-6; element sizes 1, 2, 4, 8 and 16 bytes; dims of 1-4
elements anywhere, including the innermost input dim and the innermost output dim; tall-skinny
and short-wide matrices (2-8 on the short side); sizes rounded to multiples of 16, odd or prime;
strided inputs (a slice with a storage offset, a stepped slice, a transposed base, an expanded
dim); totals from 2^16 to 2^28 elements, at most 2 GiB per tensor. Cells whose permuted view is
already contiguous are dropped (eager returns its input there, without copying). Not jointly:
a family takes its element size and its view from one index into both cycles, so with the
full sweep's 27 families every expanded view is bfloat16 (whatever the seed).

Plain Python, no torch.
"""

from __future__ import annotations

import math
import random
from typing import Optional
from dataclasses import dataclass

from bench.cases import (GiB, ITEMSIZE, Cell, Dims, Shape, View, dims_text, image_cells,
                         model_cells, permuted_is_contiguous, base_nbytes, ttc_cells)

SWEEP_SEED = 20261122
ESIZE_DTYPE = {1: "uint8", 2: "bfloat16", 4: "float32", 8: "float64", 16: "complex128"}

# The permutations the random sweep draws from: fixed, so the number of compiled graphs is.
PERM_POOL: dict[int, tuple[Dims, ...]] = {
    2: ((1, 0),),
    3: ((0, 2, 1), (2, 1, 0), (1, 2, 0), (2, 0, 1), (1, 0, 2)),
    4: ((0, 2, 3, 1), (0, 3, 1, 2), (3, 2, 1, 0), (0, 2, 1, 3), (2, 0, 3, 1), (1, 3, 0, 2)),
    5: ((0, 3, 1, 4, 2), (4, 2, 0, 3, 1), (0, 1, 4, 2, 3), (2, 4, 1, 0, 3)),
    6: ((5, 4, 3, 2, 1, 0), (0, 2, 4, 1, 3, 5), (1, 5, 0, 4, 2, 3)),
}
# Family i has rank RANK_CYCLE[i % 8]; the k-th family of a rank takes the other values from
# their cycles at k (see make_family).
RANK_CYCLE = (2, 3, 4, 5, 6, 2, 3, 4)
ESIZE_CYCLE = (1, 2, 4, 8, 16)
TINY_CYCLE = ("in", "out", "none", "both", "any", "in", "out")  # where the tiny dims go
VIEW_CYCLE = ("contiguous", "offset", "contiguous", "step", "transposed", "contiguous", "expand",
              "offset", "contiguous")
ROUNDINGS = ("aligned", "odd", "prime", "any")

MIN_LOG2_NUMEL, MAX_LOG2_NUMEL = 16, 28
MAX_TENSOR_BYTES = 2 * GiB      # per tensor (input view, output)
MAX_BASE_BYTES = 4 * GiB        # the storage a strided view is taken from


@dataclass(frozen=True)
class Family:
    """What a family's cells share. `kinds[i]` sizes dim i: 'one' (1), 'tiny' (2-4), 'skinny'
    (2-8, the short side of a matrix) or 'free' (whatever the total asks)."""

    index: int
    dims: Dims
    dtype: str
    view: View
    kinds: tuple[str, ...]
    rounding: str

    @property
    def rank(self) -> int:
        return len(self.dims)


@dataclass(frozen=True)
class SweepPlan:
    """How many cells of each kind a sweep has."""

    random_cells: int
    cells_per_family: int
    ttc_pick: slice | tuple[int, ...]   # which of the 57 TTC cells (perm-major, 3 sizes each)
    image_batches: tuple[tuple[int, int, int], ...]
    image_channels: tuple[int, ...]
    image_dtypes: tuple[str, ...] = ("uint8", "float32")
    log2_numel: tuple[int, int] = (MIN_LOG2_NUMEL, MAX_LOG2_NUMEL)
    max_numel: int = 0              # > 0: shrink the TTC and model shapes to about this many elements
    model_pick: tuple[int, ...] | None = None  # which of the model layouts (cases.MODEL_LAYOUTS); None: all


# full: 57 TTC + 36 image + 15 model + 216 random cells, 60 compiled graphs (19 + 4 + 11 +
# 27 families). The images: 224 x 224 (rows and planes of whole 16-byte vectors for every dtype)
# and 299 x 299 (Inception's input; odd sides, so no plane starts on the 16-byte grid).
# quick: the first size of two TTC permutations (ranks 2 and 6), two uint8 image cells, two model
# layouts (a small ViT head split and a Llama prefill) and the first four cells of the first two
# random families: 14 cells, 7 graphs. dry: the CPU demo's.
PLANS = {
    "full": SweepPlan(random_cells=216, cells_per_family=8, ttc_pick=slice(None),
                      image_batches=((64, 224, 224), (256, 224, 224), (64, 299, 299)),
                      image_channels=(1, 2, 3, 4)),
    "quick": SweepPlan(random_cells=8, cells_per_family=4, ttc_pick=(0, 54),
                       image_batches=((64, 224, 224),), image_channels=(3,),
                       image_dtypes=("uint8",), model_pick=(0, 4)),
    "dry": SweepPlan(random_cells=40, cells_per_family=4, ttc_pick=slice(None, None, 3),
                     image_batches=((2, 16, 16),), image_channels=(1, 2, 3, 4),
                     log2_numel=(8, 13), max_numel=1 << 13),
}


def sweep_cells(mode: str = "full", seed: Optional[int] = None) -> list[Cell]:
    """The sweep: TTC, image batches, model layouts, then the random cells ('full', 'quick' or
    'dry'). With a `seed`, the random cells alone, drawn from that seed instead of SWEEP_SEED:
    shapes that neither the committed sweep nor the tuning grids hold, to check the chooser on
    (bench.py --sweep-seed)."""
    plan = PLANS[mode]
    if seed is not None:
        cells = random_cells(plan, seed)
    else:
        ttc, models = picked(ttc_cells(), plan.ttc_pick), picked(model_cells(), plan.model_pick)
        if plan.max_numel:
            ttc, models = ([shrink_cell(c, plan.max_numel) for c in cells] for cells in (ttc, models))
        images = image_cells(plan.image_batches, plan.image_channels, plan.image_dtypes)
        cells = ttc + images + models + random_cells(plan)
    return [c for c in cells if not permuted_is_contiguous(c)]


def picked(cells: list[Cell], pick: slice | tuple[int, ...] | None) -> list[Cell]:
    return cells if pick is None else cells[pick] if isinstance(pick, slice) else [cells[i] for i in pick]


def shrink_cell(cell: Cell, max_numel: int) -> Cell:
    """The cell with every dim scaled down by one factor so it has about `max_numel`
    elements (dims stay >= 2, so the permutation still moves data)."""
    factor = (cell.numel / max_numel) ** (1 / len(cell.shape))
    shape = tuple(max(2, round(d / factor)) for d in cell.shape) if factor > 1 else cell.shape
    return Cell(cell.section, cell.name, shape, cell.dims, cell.dtype, cell.view, cell.group)


# --------------------------------------------------------------------------------------------
# The random cells
# --------------------------------------------------------------------------------------------

def random_cells(plan: SweepPlan, seed: int = SWEEP_SEED) -> list[Cell]:
    """At least plan.random_cells cells, family after family. Each family and each cell draws
    from its own seeded stream, so a shorter plan gives a prefix of a longer one's families."""
    cells: list[Cell] = []
    index = 0
    while len(cells) < plan.random_cells:
        family = make_family(index, random.Random(f"{seed}/family/{index}"))
        rng = random.Random(f"{seed}/cells/{index}")
        cells += family_cells(family, plan, rng)
        index += 1
    return cells


def make_family(index: int, rng: random.Random) -> Family:
    """Family `index`: its rank from a fixed cycle; its element size, tiny-dim placement and view
    kind from cycles over the families of that rank (so every value comes up at every rank that
    has enough families); the rest from `rng`."""
    rank = RANK_CYCLE[index % len(RANK_CYCLE)]
    k = rank_occurrence(index)
    dims = rng.choice(PERM_POOL[rank])
    dtype = ESIZE_DTYPE[ESIZE_CYCLE[(k + rank) % len(ESIZE_CYCLE)]]
    kinds = tiny_kinds(rank, dims, TINY_CYCLE[k % len(TINY_CYCLE)], rng)
    view = make_view(VIEW_CYCLE[(k + rank) % len(VIEW_CYCLE)], kinds, rng)
    return Family(index, dims, dtype, view, kinds, rng.choice(ROUNDINGS))


def rank_occurrence(index: int) -> int:
    """How many families before `index` have the same rank."""
    period, pos = divmod(index, len(RANK_CYCLE))
    rank = RANK_CYCLE[pos]
    return period * RANK_CYCLE.count(rank) + RANK_CYCLE[:pos].count(rank)


def tiny_kinds(rank: int, dims: Dims, where: str, rng: random.Random) -> tuple[str, ...]:
    """Per-dim size kinds. where: 'in' (the innermost input dim is tiny), 'out' (the innermost
    output dim), 'both', 'any' (some other dim) or 'none'. A matrix gets a skinny side instead
    (tall-skinny or short-wide), never a 1 (that would make its permute a no-op)."""
    kinds = ["free"] * rank
    if rank == 2:
        side = {"in": [1], "out": [0], "both": [rng.randrange(2)], "any": [rng.randrange(2)]}
        for d in side.get(where, []):
            kinds[d] = "skinny"
        return tuple(kinds)
    targets = {"in": [rank - 1], "out": [dims[-1]], "both": [rank - 1, dims[-1]],
               "any": [rng.randrange(rank)], "none": []}[where]
    for d in targets:
        kinds[d] = rng.choice(("one", "tiny", "tiny"))
    if where != "none" and rng.random() < 0.4:  # one more tiny dim, anywhere
        kinds[rng.randrange(rank)] = "tiny"
    if kinds.count("free") == 0:
        kinds[rng.randrange(rank)] = "free"
    return tuple(kinds)


def make_view(kind: str, kinds: tuple[str, ...], rng: random.Random) -> View:
    """A view of the given kind on a dim that suits it."""
    rank = len(kinds)
    if kind == "offset":  # innermost: unaligned rows; outermost: a shifted, still dense block
        return View("offset", rng.choice((rank - 1, 0)), rng.choice((1, 3)))
    if kind == "step":
        return View("step", rng.randrange(rank), rng.choice((2, 3)))
    if kind == "transposed":
        return View("transposed", rank - 1, rng.randrange(rank - 1))
    if kind == "expand":
        sized = [d for d in range(rank) if kinds[d] != "one"]
        return View("expand", rng.choice(sized))
    return View()


def family_cells(family: Family, plan: SweepPlan, rng: random.Random) -> list[Cell]:
    """Up to plan.cells_per_family cells of the family, of random totals (log-uniform)."""
    cells: list[Cell] = []
    lo, hi = plan.log2_numel
    for _ in range(4 * plan.cells_per_family):
        if len(cells) == plan.cells_per_family:
            break
        shape = draw_shape(family, rng.uniform(lo, hi), rng)
        group = "2-D" if family.rank == 2 else "random"
        cell = Cell("sweep", f"rand#{family.index} {dims_text(family.dims)}", shape, family.dims,
                    family.dtype, family.view, group)
        if (cell.numel >= 2 ** lo and within_limits(cell) and not permuted_is_contiguous(cell)
                and cell not in cells):
            cells.append(cell)
    return cells


def within_limits(cell: Cell) -> bool:
    return cell.nbytes <= MAX_TENSOR_BYTES and base_nbytes(cell) <= MAX_BASE_BYTES


def draw_shape(family: Family, log2_numel: float, rng: random.Random) -> Shape:
    """A shape of about 2^log2_numel elements: fixed-kind dims first, the rest of the total
    shared out at random among the free dims, then rounded as the family says."""
    fixed = {"one": lambda: 1, "tiny": lambda: rng.randint(2, 4),
             "skinny": lambda: rng.randint(2, 8)}
    shape = [fixed[k]() if k in fixed else 0 for k in family.kinds]
    free = [d for d, k in enumerate(family.kinds) if k == "free"]
    budget = max(len(free), log2_numel - sum(math.log2(s) for s in shape if s))
    weights = [rng.uniform(0.3, 1.0) for _ in free]
    for d, w in zip(free, weights):
        size = max(2, round(2 ** (budget * w / sum(weights))))
        shape[d] = round_size(size, family.rounding, ITEMSIZE[family.dtype])
    return cap_shape(tuple(shape), free, family)


def round_size(size: int, rounding: str, itemsize: int) -> int:
    """'aligned': rows of a multiple of 16 bytes; 'odd'; 'prime': the next prime; 'any'."""
    if rounding == "aligned":
        step = max(1, 16 // itemsize)
        return max(step, (size + step - 1) // step * step)
    if rounding == "odd":
        return size | 1
    if rounding == "prime":
        return next_prime(size)
    return size


def next_prime(n: int) -> int:
    n = max(2, n)
    while any(n % p == 0 for p in range(2, math.isqrt(n) + 1)):
        n += 1
    return n


def cap_shape(shape: Shape, free: list[int], family: Family) -> Shape:
    """Halve the largest free dim until the cell fits the byte caps."""
    s = list(shape)
    probe = Cell("sweep", "", tuple(s), family.dims, family.dtype, family.view)
    while free and not within_limits(probe):
        d = max(free, key=lambda i: s[i])
        smaller = round_size(max(2, s[d] // 2), family.rounding, ITEMSIZE[family.dtype])
        if smaller >= s[d]:
            break
        s[d] = smaller
        probe = Cell("sweep", "", tuple(s), family.dims, family.dtype, family.view)
    return tuple(s)
