"""What the benchmark measures, as data: cells, input views, and the fixed case lists.

A cell is one problem, ``x.permute(dims).contiguous()`` for an input ``x`` of a given shape,
dtype and layout (a `View` of a random contiguous base tensor). Every section of the benchmark
is a list of cells: the matrix section (transposes of the last two dims), the permutation rows,
the sweep (bench/sweep_cases.py) and the CPU demo's full-size rows.

Everything here is plain Python (no torch), so the lists can be built and checked anywhere.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Optional

Shape = tuple[int, ...]
Dims = tuple[int, ...]

GiB = 1 << 30
# Bytes per element of every dtype the benchmark builds tensors of.
ITEMSIZE = {"uint8": 1, "bfloat16": 2, "float16": 2, "float32": 4, "float64": 8,
            "complex128": 16}


# --------------------------------------------------------------------------------------------
# Views and cells
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class View:
    """How the input is taken from a random contiguous base tensor.

    kind:
      contiguous  the base itself
      offset      ``base.narrow(dim, amount, n)``: a slice with a storage offset of `amount`
                  elements along `dim` (on the innermost dim the rows are also unaligned)
      step        ``base[..., ::amount, ...]`` along `dim`: a stepped slice
      transposed  ``base.transpose(dim, amount)``: the base is stored with those two dims swapped
      expand      ``base.expand(...)``: `dim` has size 1 in the base and stride 0 in the input
      packed      ``parent.select(dim, 1)``: the parent has an extra dim of size `amount`
                  inserted at `dim` (one of q, k, v of a packed qkv)
      strided     ``base.as_strided(shape, strides, offset)`` of a flat base: any layout, such
                  as one a model handed to ``.contiguous()`` (bench/workloads.py)
    """

    kind: str = "contiguous"
    dim: int = 0
    amount: int = 0
    strides: tuple[int, ...] = ()   # "strided" only, in elements
    offset: int = 0                 # "strided" only: the storage offset, in elements

    def __post_init__(self) -> None:
        object.__setattr__(self, "strides", tuple(self.strides))  # a list when read from JSON

    def text(self) -> str:
        """A short label for tables: '' for a contiguous input."""
        return {
            "contiguous": "",
            "offset": f"offset d{self.dim}+{self.amount}",
            "step": f"step d{self.dim}:{self.amount}",
            "transposed": f"T({self.dim},{self.amount}) base",
            "expand": f"expand d{self.dim}",
            "packed": f"packed d{self.dim}/{self.amount}",
            "strided": f"strides ({','.join(map(str, self.strides))})+{self.offset}",
        }[self.kind]

    @classmethod
    def parse(cls, text: str) -> "View":
        """The View whose text() is `text`."""
        patterns = {"offset": r"offset d(\d+)\+(\d+)", "step": r"step d(\d+):(\d+)",
                    "transposed": r"T\((\d+),(\d+)\) base", "expand": r"expand d(\d+)()",
                    "packed": r"packed d(\d+)/(\d+)"}
        if not text:
            return cls()
        if m := re.fullmatch(r"strides \(([\d,]*)\)\+(\d+)", text):
            return cls("strided", strides=tuple(int(v) for v in m.group(1).split(",") if v),
                       offset=int(m.group(2)))
        for kind, pattern in patterns.items():
            if m := re.fullmatch(pattern, text):
                return cls(kind, int(m.group(1)), int(m.group(2) or 0))
        raise ValueError(f"not a view: {text!r}")


CONTIGUOUS = View()


@dataclass(frozen=True)
class Cell:
    """One problem: ``x.permute(dims).contiguous()`` for x of `shape` and `dtype`, laid out as
    `view` says. `name` labels the row; `group` is the class it is summarised in."""

    section: str
    name: str
    shape: Shape
    dims: Dims
    dtype: str
    view: View = field(default=CONTIGUOUS)
    group: str = ""

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the result (and of a contiguous copy of the input)."""
        return self.numel * ITEMSIZE[self.dtype]

    @property
    def is_matrix_transpose(self) -> bool:
        """A contiguous input whose last two dims swap: (..., M, N) -> (..., N, M)."""
        r = len(self.dims)
        return (r >= 2 and self.view.kind == "contiguous"
                and self.dims == (*range(r - 2), r - 1, r - 2))


def shape_text(shape: Shape) -> str:
    return "x".join(map(str, shape))


def dims_text(dims: Dims) -> str:
    return "(" + ",".join(map(str, dims)) + ")"


# --------------------------------------------------------------------------------------------
# Geometry of a view, without torch
# --------------------------------------------------------------------------------------------

def contiguous_strides(shape: Shape) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def base_shape(shape: Shape, view: View) -> Shape:
    """The shape of the contiguous tensor the input is taken from."""
    s, d, a = list(shape), view.dim, view.amount
    if view.kind == "strided":  # a flat base that holds every element the view reaches
        return (strided_extent(shape, view.strides, view.offset),)
    if view.kind == "offset":
        s[d] += a
    elif view.kind == "step":
        s[d] = (s[d] - 1) * a + 1
    elif view.kind == "transposed":
        s[d], s[a] = s[a], s[d]
    elif view.kind == "expand":
        s[d] = 1
    elif view.kind == "packed":
        s.insert(d, a)
    return tuple(s)


def view_strides(shape: Shape, view: View) -> tuple[tuple[int, ...], int]:
    """(strides, storage offset) of the input, in elements, as torch lays out the view."""
    if view.kind == "strided":
        return view.strides, view.offset
    base = contiguous_strides(base_shape(shape, view))
    strides, d, a = list(base), view.dim, view.amount
    offset = 0
    if view.kind == "offset":
        offset = a * base[d]
    elif view.kind == "step":
        strides[d] = base[d] * a
    elif view.kind == "transposed":
        strides[d], strides[a] = base[a], base[d]
    elif view.kind == "expand":
        strides[d] = 0
    elif view.kind == "packed":
        offset = base[d]  # slice 1 of the packed dim
        del strides[d]
    return tuple(strides), offset


def strided_extent(shape: Shape, strides: tuple[int, ...], offset: int) -> int:
    """Elements a flat storage needs for a view of these sizes, strides and offset."""
    if 0 in shape:
        return offset
    return offset + 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))


def is_contiguous(shape: Shape, strides: tuple[int, ...]) -> bool:
    """torch's rule: size-1 dims are ignored, an empty tensor is contiguous."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def permuted_is_contiguous(cell: Cell) -> bool:
    """True when ``x.permute(dims)`` is already contiguous: eager then returns its input without
    copying, so there is nothing to measure."""
    strides, _ = view_strides(cell.shape, cell.view)
    return is_contiguous(tuple(cell.shape[d] for d in cell.dims),
                         tuple(strides[d] for d in cell.dims))


def base_nbytes(cell: Cell) -> int:
    """Bytes of the base tensor the input is taken from."""
    return math.prod(base_shape(cell.shape, cell.view)) * ITEMSIZE[cell.dtype]


def footprint_bytes(cell: Cell) -> int:
    """GPU memory one cell holds at once: the base, a contiguous copy of a strided input (the
    clone baseline's source), one op's output and the reference it is compared with."""
    copy = 0 if cell.view.kind == "contiguous" else cell.nbytes
    return base_nbytes(cell) + copy + 2 * cell.nbytes


def swap_last_two(rank: int) -> Dims:
    return (*range(rank - 2), rank - 1, rank - 2)


# --------------------------------------------------------------------------------------------
# The matrix section: (..., M, N) -> (..., N, M)
# --------------------------------------------------------------------------------------------

DEFAULT_SHAPES: tuple[Shape, ...] = ((32768, 32768), (8192, 8192), (4096, 4096), (8192, 32768),
                                     (32768, 8192), (1000, 3001), (64, 1024, 1024))
DEFAULT_DTYPES = ("float32", "bfloat16", "float16", "float64", "uint8")
QUICK_SHAPES: tuple[Shape, ...] = ((8192, 8192), (1000, 3001))
QUICK_DTYPES = ("float32", "bfloat16")
DRY_SHAPES: tuple[Shape, ...] = ((64, 96), (3, 33, 65))
DRY_DTYPES = ("float32", "uint8")
HEADLINE_SHAPES: tuple[Shape, ...] = ((32768, 32768), (8192, 8192))  # the chart's subplots
TINY_SHAPE: Shape = (256, 256)  # the host-overhead measurement


def matrix_cells(shapes: tuple[Shape, ...], dtypes: tuple[str, ...]) -> list[Cell]:
    """Every shape in every dtype, shape-major."""
    return [Cell("matrix", shape_text(s), s, swap_last_two(len(s)), d)
            for s in shapes for d in dtypes]


# --------------------------------------------------------------------------------------------
# The permutation rows: layouts that real models move between
# --------------------------------------------------------------------------------------------

GOAL_RATIO_TO_CLONE = 0.90
GOAL_TEXT = f">= {GOAL_RATIO_TO_CLONE:.2f} x clone and faster than torch.compile on every row"
FLOAT_DTYPES = ("bfloat16", "float32")
QUICK_PERMUTE_DTYPES = ("bfloat16",)  # --quick runs each permutation row in one dtype
CPU_SHRINK = 8  # the CPU demo divides every dim by this (dims stay >= 2)


@dataclass(frozen=True)
class PermuteCase:
    """One row: an input shape and a permutation, measured in each of its dtypes."""

    name: str
    shape: Shape
    dims: Dims
    dtypes: tuple[str, ...] = FLOAT_DTYPES
    view: View = field(default=CONTIGUOUS)

    def shrunk(self, factor: int = CPU_SHRINK) -> "PermuteCase":
        """Every dim divided by `factor`, for the CPU demo. Dims stay >= 2: a size-1 dim can
        turn the permutation into a no-op (8x4096x4096 by (1,0,2) would become 1x512x512, whose
        permuted view is already contiguous)."""
        return PermuteCase(self.name, tuple(max(2, d // factor) for d in self.shape),
                           self.dims, self.dtypes, self.view)


PERMUTE_CASES: tuple[PermuteCase, ...] = (
    # Attention heads: (B, S, H, D) -> (B, H, S, D). Rows of D elements move as units.
    PermuteCase("attention BSHD->BHSD, D=64", (8, 4096, 32, 64), (0, 2, 1, 3)),
    PermuteCase("attention BSHD->BHSD, D=128", (8, 4096, 16, 128), (0, 2, 1, 3)),
    # Image layouts: a transpose of (C, H*W) per image, and back. uint8 too: images are bytes.
    PermuteCase("NCHW->NHWC", (32, 256, 56, 56), (0, 2, 3, 1), (*FLOAT_DTYPES, "uint8")),
    PermuteCase("NHWC->NCHW", (32, 56, 56, 256), (0, 3, 1, 2), (*FLOAT_DTYPES, "uint8")),
    # Batch-first <-> sequence-first: whole 4096-element rows move, nothing is transposed.
    PermuteCase("(B,S,E)->(S,B,E)", (8, 4096, 4096), (1, 0, 2)),
    # General permutations that move the innermost dim.
    PermuteCase("rank-4 (3,1,2,0)", (64, 32, 64, 128), (3, 1, 2, 0)),
    PermuteCase("rank-4 (2,0,3,1)", (16, 64, 128, 96), (2, 0, 3, 1)),
    PermuteCase("rank-5 (0,3,1,4,2)", (16, 32, 16, 32, 32), (0, 3, 1, 4, 2)),
    PermuteCase("rank-5 (4,2,0,3,1)", (8, 16, 32, 64, 40), (4, 2, 0, 3, 1)),
    # One slice of a packed qkv, (B, S, 3, H, D).select(2, 1): a strided input taken as is, with
    # a storage offset, as real slices have.
    PermuteCase("packed qkv slice, BSHD->BHSD", (8, 4096, 32, 64), (0, 2, 1, 3),
                view=View("packed", 2, 3)),
)


def permute_cells(dtypes: Optional[tuple[str, ...]], shrink: bool) -> list[Cell]:
    """Each case in each of its dtypes (only those in `dtypes` when given), case-major."""
    cases = [c.shrunk() if shrink else c for c in PERMUTE_CASES]
    return [Cell("permute", c.name, c.shape, c.dims, d, c.view)
            for c in cases for d in c.dtypes if dtypes is None or d in dtypes]


# --------------------------------------------------------------------------------------------
# The TTC / HPTT / cuTT suite (/work/shared/TTC-SUITE.md), as published: column-major
# --------------------------------------------------------------------------------------------

# (p, sizes) in the suite's column-major convention: output dim i is input dim p[i], and
# sizes[0] is the fastest-varying (stride-1) dim. Three size sets per permutation.
TTC_COLUMN_MAJOR: tuple[tuple[Dims, tuple[Shape, ...]], ...] = (
    ((1, 0), ((7264, 7264), (43408, 1216), (1216, 43408))),
    ((0, 2, 1), ((368, 384, 384), (2144, 64, 384), (368, 64, 2307))),
    ((1, 0, 2), ((384, 384, 355), (2320, 384, 59), (384, 2320, 59))),
    ((2, 1, 0), ((384, 355, 384), (2320, 59, 384), (384, 59, 2320))),
    ((0, 3, 2, 1), ((80, 96, 75, 96), (464, 16, 75, 96), (80, 16, 75, 582))),
    ((2, 1, 3, 0), ((96, 75, 96, 75), (608, 12, 96, 75), (96, 12, 608, 75))),
    ((2, 0, 3, 1), ((96, 75, 96, 75), (608, 12, 96, 75), (96, 12, 608, 75))),
    ((1, 0, 3, 2), ((96, 96, 75, 75), (608, 96, 12, 75), (96, 608, 12, 75))),
    ((3, 2, 1, 0), ((96, 75, 75, 96), (608, 12, 75, 96), (96, 12, 75, 608))),
    ((0, 4, 2, 1, 3), ((32, 48, 28, 28, 48), (176, 8, 28, 28, 48), (32, 8, 28, 28, 298))),
    ((3, 2, 1, 4, 0), ((48, 28, 28, 48, 28), (352, 4, 28, 48, 28), (48, 4, 28, 352, 28))),
    ((2, 0, 4, 1, 3), ((48, 28, 48, 28, 28), (352, 4, 48, 28, 28), (48, 4, 352, 28, 28))),
    ((1, 3, 0, 4, 2), ((48, 48, 28, 28, 28), (352, 48, 4, 28, 28), (48, 352, 4, 28, 28))),
    ((4, 3, 2, 1, 0), ((48, 28, 28, 28, 48), (352, 4, 28, 28, 48), (48, 4, 28, 28, 352))),
    ((0, 3, 2, 5, 4, 1), ((16, 32, 15, 32, 15, 15), (48, 10, 15, 32, 15, 15),
                          (16, 10, 15, 103, 15, 15))),
    ((3, 2, 0, 5, 1, 4), ((32, 15, 15, 32, 15, 15), (112, 5, 15, 32, 15, 15),
                          (32, 5, 15, 112, 15, 15))),
    ((3, 2, 5, 1, 0, 4), ((32, 15, 15, 32, 15, 15), (112, 5, 15, 32, 15, 15),
                          (32, 5, 15, 112, 15, 15))),
    ((2, 0, 4, 1, 5, 3), ((32, 15, 32, 15, 15, 15), (112, 5, 32, 15, 15, 15),
                          (32, 5, 112, 15, 15, 15))),
    ((5, 4, 3, 2, 1, 0), ((32, 15, 15, 15, 15, 32), (112, 5, 15, 15, 15, 32),
                          (32, 5, 15, 15, 15, 112))),
)


def column_major_to_torch(p: Dims, sizes: Shape) -> tuple[Shape, Dims]:
    """A column-major transpose (output dim i = input dim p[i], sizes fastest-first) as the
    same bytes in torch's row-major terms: the shape is the sizes reversed, and the
    permutation is q[k] = d-1-p[d-1-k]."""
    d = len(p)
    return tuple(reversed(sizes)), tuple(d - 1 - p[d - 1 - k] for k in range(d))


def ttc_cells() -> list[Cell]:
    """The 19 x 3 cases in float32, contiguous inputs."""
    cells = []
    for p, size_sets in TTC_COLUMN_MAJOR:
        for sizes in size_sets:
            shape, dims = column_major_to_torch(p, sizes)
            cells.append(Cell("sweep", f"TTC {dims_text(dims)}", shape, dims, "float32",
                              group="TTC"))
    return cells


# --------------------------------------------------------------------------------------------
# Image batches and the CPU demo's full-size rows
# --------------------------------------------------------------------------------------------

NCHW_TO_NHWC: Dims = (0, 2, 3, 1)
NHWC_TO_NCHW: Dims = (0, 3, 1, 2)


def image_cells(batches: tuple[tuple[int, int, int], ...], channels: tuple[int, ...],
                dtypes: tuple[str, ...] = ("uint8", "float32")) -> list[Cell]:
    """NCHW -> NHWC and NHWC -> NCHW for every (N, H, W), channel count and dtype. C = 1 is
    listed but drops out later: its permuted views are already contiguous."""
    cells = []
    for n, h, w in batches:
        for c in channels:
            for d in dtypes:
                cells.append(Cell("sweep", "NCHW->NHWC", (n, c, h, w), NCHW_TO_NHWC, d,
                                  group="images"))
                cells.append(Cell("sweep", "NHWC->NCHW", (n, h, w, c), NHWC_TO_NCHW, d,
                                  group="images"))
    return cells


# --------------------------------------------------------------------------------------------
# Model layouts
# --------------------------------------------------------------------------------------------

# Layout changes that models make, at the sizes they make them in inference: attention heads
# split and merged, keys transposed, a packed qkv split, windows and pixel shuffles, a
# convolution weight for another framework's layout, a ViT's patches cut out of images, a
# ShuffleNet channel shuffle. Most are small work (under 2^20 elements).
MODEL_LAYOUTS: tuple[tuple[str, Shape, Dims, str], ...] = (
    ("ViT-B/16 heads BSHD->BHSD", (1, 197, 12, 64), (0, 2, 1, 3), "float32"),
    ("ViT-B/16 heads, batch 8", (8, 197, 12, 64), (0, 2, 1, 3), "bfloat16"),
    ("BERT-base heads, batch 8", (8, 128, 12, 64), (0, 2, 1, 3), "float16"),
    ("CLIP text heads", (1, 77, 8, 64), (0, 2, 1, 3), "bfloat16"),
    ("Llama-2-7B prefill heads", (1, 2048, 32, 128), (0, 2, 1, 3), "bfloat16"),
    ("GQA key/value heads", (1, 4096, 8, 128), (0, 2, 1, 3), "bfloat16"),
    ("heads merged BHSD->BSHD", (8, 12, 128, 64), (0, 2, 1, 3), "bfloat16"),
    ("keys transposed BHSD->BHDS", (8, 12, 128, 64), (0, 1, 3, 2), "bfloat16"),
    ("keys transposed, ViT-B/16", (4, 12, 197, 64), (0, 1, 3, 2), "float32"),
    ("qkv split (B,S,3,H,D)->(3,B,H,S,D)", (8, 128, 3, 12, 64), (2, 0, 3, 1, 4), "float16"),
    ("Swin window partition", (8, 8, 7, 8, 7, 96), (0, 1, 3, 2, 4, 5), "bfloat16"),
    ("pixel shuffle x2 (N,C,r,r,H,W)", (1, 64, 2, 2, 135, 240), (0, 1, 4, 2, 5, 3), "float32"),
    ("ViT patchify (B,C,H/p,p,W/p,p)", (8, 3, 14, 16, 14, 16), (0, 2, 4, 1, 3, 5), "float32"),
    ("ShuffleNet channel shuffle", (32, 2, 116, 28, 28), (0, 2, 1, 3, 4), "bfloat16"),
    ("conv weight OIHW->HWIO", (256, 128, 3, 3), (2, 3, 1, 0), "float32"),
)


def model_cells() -> list[Cell]:
    """MODEL_LAYOUTS as sweep cells (group "models")."""
    return [Cell("sweep", name, shape, dims, dtype, group="models") for name, shape, dims, dtype in MODEL_LAYOUTS]


def cpu_cells() -> list[Cell]:
    """Full-size rows the CPU demo times on the CPU: ours against torch."""
    return [
        Cell("cpu", "transpose 4096x4096", (4096, 4096), (1, 0), "float32"),
        Cell("cpu", "transpose 8192x8192", (8192, 8192), (1, 0), "uint8"),
        Cell("cpu", "NCHW->NHWC", (32, 256, 56, 56), NCHW_TO_NHWC, "float32"),
    ]
