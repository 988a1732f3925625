"""A tuning grid of the layout copies real models make (`bench/tune.py --layouts`).

The main grid (bench/tune_grid.py) crosses abstract features: ranks, element sizes, short or
long innermost dims. The copies models make have a structure those draws rarely hit: a window
partition of an image splits both spatial dims and interleaves the halves, a packed qkv is read
one slice at a time, a channels-first feature map meets a channels-last one with the window
dims in between. bench/workloads.py times the copies of a fixed set of models; this grid draws
the same kinds of copy with other sizes (batch, resolution, channels, heads, windows, dtype),
to check the chooser's table on the layouts rather than on those models' shapes alone (ranked
into the table, the grid cost the benchmark's own cells: docs/PERFORMANCE.md, "The layouts
grid").

Each family below is one kind of copy, written as the model writes it: the input's sizes and
strides (a `strided` view where the model copies a slice or a permuted view), and the
permutation. Plain Python, no torch.
"""

from __future__ import annotations

import random
from typing import Callable, Optional

from bench.cases import Cell, View, permuted_is_contiguous

MIN_ELEMENTS = 1 << 20          # below, the chooser's small-work rules run, not the table
MAX_ELEMENTS = 1 << 27
DTYPES = ("float32", "float32", "bfloat16", "float16")

Draw = tuple[tuple[int, ...], tuple[int, ...], Optional[View]]  # (shape, dims, view or None)


def pick(rng: random.Random, *options):
    return rng.choice(options)


def either(rng: random.Random, there: Draw, back: Draw) -> Draw:
    """A copy one way or the other, as likely."""
    return there if rng.random() < 0.5 else back


def packed_slice(tokens: int, heads: int, dim: int, which: int) -> View:
    """Slice `which` (q, k or v) of a packed (B, tokens, 3, heads, dim) projection, as
    (B, tokens, heads, dim)."""
    return View("strided", strides=(tokens * 3 * heads * dim, 3 * heads * dim, dim, 1), offset=which * heads * dim)


def batch(rng: random.Random) -> int:
    return pick(rng, 1, 2, 4, 8, 16, 32, 64, 128)


def feature_map(rng: random.Random, multiple: int = 1) -> tuple[int, int]:
    """(side, channels) of one stage of an image backbone, the side a multiple of `multiple`."""
    image = pick(rng, 160, 192, 224, 256, 288, 320, 384, 448, 512)
    stage = rng.randrange(4)
    side = image // (4 << stage)
    side = max(multiple, side // multiple * multiple)
    return side, pick(rng, 32, 48, 64, 96, 128) << stage


def window_partition(rng: random.Random) -> Draw:
    """Swin, timm MaxViT: a channels-last map (B, H, W, C) cut into w x w windows, and back.
    (B, H/w, w, W/w, w, C) -> (B, H/w, W/w, w, w, C), or the reverse, dims (0, 1, 3, 2, 4, 5)."""
    w = pick(rng, 4, 7, 8, 12, 16)
    side, c = feature_map(rng, w)
    n = side // w
    shape = (batch(rng), n, w, n, w, c) if rng.random() < 0.5 else (batch(rng), n, n, w, w, c)
    return shape, (0, 1, 3, 2, 4, 5), None


def grid_partition(rng: random.Random) -> Draw:
    """timm MaxViT's grid attention: a g x g grid of cells strided over a channels-last map.
    (B, g, H/g, g, W/g, C) -> (B, H/g, W/g, g, g, C), dims (0, 2, 4, 1, 3, 5), or back,
    (B, H/g, W/g, g, g, C) -> (0, 3, 1, 4, 2, 5)."""
    g = pick(rng, 4, 7, 8, 12)
    side, c = feature_map(rng, g)
    n, b = side // g, batch(rng)
    return either(rng, ((b, g, n, g, n, c), (0, 2, 4, 1, 3, 5), None), ((b, n, n, g, g, c), (0, 3, 1, 4, 2, 5), None))


def channels_first_windows(rng: random.Random) -> Draw:
    """torchvision MaxViT: windows or a grid cut straight from a channels-first map.
    (B, C, H/p, p, W/p, p) -> (B, H/p, W/p, p, p, C), dims (0, 2, 4, 3, 5, 1), or back from
    (B, H/p, W/p, p, p, C), dims (0, 5, 1, 3, 2, 4). p is the window side, or the number of
    grid cells along a side."""
    p = pick(rng, 2, 4, 7, 8)
    side, c = feature_map(rng, p)
    n, b = side // p, batch(rng)
    return either(rng, ((b, c, n, p, n, p), (0, 2, 4, 3, 5, 1), None), ((b, n, n, p, p, c), (0, 5, 1, 3, 2, 4), None))


def packed_heads(rng: random.Random) -> Draw:
    """Attention over a packed projection (B, N, 3, h, d), one of q, k, v at a time:
    (B, N, h, d) -> (B, h, N, d), dims (0, 2, 1, 3), or k laid out transposed, (0, 2, 3, 1).
    Windowed models (Swin) batch their windows: B x windows of N = w^2 tokens."""
    h, d = pick(rng, 2, 3, 4, 6, 8, 12, 16), pick(rng, 16, 32, 64, 128)
    n = pick(rng, 49, 64, 144, 196, 197, 256, 577, 785, 1024, 3137)
    b = batch(rng) * (pick(rng, 1, 4, 16, 64) if n <= 256 else 1)
    view = packed_slice(n, h, d, rng.randrange(3))
    return (b, n, h, d), pick(rng, (0, 2, 1, 3), (0, 2, 1, 3), (0, 2, 3, 1)), view


def split_heads(rng: random.Random) -> Draw:
    """LeViT, EfficientFormer: one projection (B, N, h, 2 kd + vd) split per head into q, k, v
    along the last dim, each slice copied as (B, h, N, kd) (dims (0, 2, 1, 3)) or k transposed
    (dims (0, 2, 3, 1))."""
    kd = pick(rng, 16, 32)
    vd = pick(rng, kd, 2 * kd, 4 * kd)
    h, n = pick(rng, 4, 6, 8, 12, 16), pick(rng, 16, 49, 64, 196, 256, 784)
    row = 2 * kd + vd
    which = rng.randrange(3)
    size, offset = (kd, 0) if which == 0 else (kd, kd) if which == 1 else (vd, 2 * kd)
    view = View("strided", strides=(n * h * row, h * row, row, 1), offset=offset)
    return (batch(rng), n, h, size), pick(rng, (0, 2, 1, 3), (0, 2, 3, 1)), view


def channels_last(rng: random.Random) -> Draw:
    """A feature map between channels-first and channels-last: (B, C, H, W) -> dims (0, 2, 3, 1),
    or (B, H, W, C) -> (0, 3, 1, 2); one in three read from tokens after a class token, as
    (B, 1 + H W, C)[:, 1:] viewed as (B, H, W, C)."""
    side, c = feature_map(rng)
    b = batch(rng)
    if rng.random() < 0.4:
        return (b, c, side, side), (0, 2, 3, 1), None
    if rng.random() < 0.5:
        return (b, side, side, c), (0, 3, 1, 2), None
    n = side * side + 1
    view = View("strided", strides=(n * c, side * c, c, 1), offset=c)
    return (b, side, side, c), (0, 3, 1, 2), view


def sequence_channels(rng: random.Random) -> Draw:
    """Convolutions over sequences and flattened maps (Whisper, SegFormer): (B, C, L) <-> (B, L, C),
    dims (0, 2, 1)."""
    c = pick(rng, 64, 80, 128, 256, 384, 512, 768, 1024)
    length = pick(rng, 256, 1024, 1500, 3000, 4096, 64 * 64, 128 * 128)
    return (batch(rng), c, length) if rng.random() < 0.5 else (batch(rng), length, c), (0, 2, 1), None


def head_merge(rng: random.Random) -> Draw:
    """Heads split and merged in a transformer: (B, L, h, d) <-> (B, h, L, d), dims (0, 2, 1, 3);
    one in three the split of a packed (B, L, 3 h d) projection."""
    h, d = pick(rng, 8, 12, 16, 20, 32), pick(rng, 64, 80, 128)
    length, b = pick(rng, 64, 128, 256, 512, 1024, 1500, 2048, 4096), batch(rng)
    if rng.random() < 0.67:
        return (b, length, h, d) if rng.random() < 0.5 else (b, h, length, d), (0, 2, 1, 3), None
    return (b, length, h, d), (0, 2, 1, 3), packed_slice(length, h, d, rng.randrange(3))


def channel_shuffle(rng: random.Random) -> Draw:
    """ShuffleNet: (B, g, C/g, H, W) -> (B, C/g, g, H, W), dims (0, 2, 1, 3, 4)."""
    side, c = feature_map(rng)
    g = pick(rng, 2, 3, 4, 8)
    return (batch(rng), g, max(1, c // g), side, side), (0, 2, 1, 3, 4), None


def position_bias(rng: random.Random) -> Draw:
    """Relative position bias tables: (w^2, w^2, heads) -> (heads, w^2, w^2), dims (2, 0, 1)."""
    w = pick(rng, 16, 24, 32, 48)
    return (w * w, w * w, pick(rng, 3, 4, 6, 8, 12, 16, 24, 32)), (2, 0, 1), None


FAMILIES: dict[str, Callable[[random.Random], Draw]] = {
    "window": window_partition, "grid": grid_partition, "cf-windows": channels_first_windows,
    "packed-heads": packed_heads, "split-heads": split_heads, "channels-last": channels_last,
    "sequence": sequence_channels, "heads": head_merge, "shuffle": channel_shuffle,
    "position-bias": position_bias,
}


def layout_cell(family: str, k: int, rng: random.Random, attempts: int = 30) -> Optional[Cell]:
    """One shape of `family` with MIN_ELEMENTS-MAX_ELEMENTS elements whose permute copies, or None."""
    for _ in range(attempts):
        shape, dims, view = FAMILIES[family](rng)
        dtype = rng.choice(DTYPES)
        cell = Cell("tune", f"{family} {k}", tuple(shape), tuple(dims), dtype,
                    view or View(), group=family)
        if MIN_ELEMENTS <= cell.numel <= MAX_ELEMENTS and not permuted_is_contiguous(cell):
            return cell
    return None


def layout_cells(per_family: int, seed: int) -> list[Cell]:
    """`per_family` shapes of every family, round-robin over the families (a run cut short by
    its time budget still covers them all)."""
    cells = []
    for k in range(per_family):
        for family in FAMILIES:
            cell = layout_cell(family, k, random.Random(f"{seed}/{family}/{k}"))
            if cell is not None:
                cells.append(cell)
    return cells

