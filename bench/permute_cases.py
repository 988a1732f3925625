"""The rows of the benchmark's "Permutations" section: x.permute(dims).contiguous() on the
layouts that real models move between.

Each case is one input shape and one permutation, measured in each of its dtypes. The input is
a random contiguous tensor, except for a `packed` case: there the input is one slice of a larger
tensor (one of q, k, v of a packed qkv), taken directly as a strided view, as attention code
takes it.

This module is data only (no torch): bench.py builds the tensors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

Shape = tuple[int, ...]

# The goal the section is judged against, row by row (bench.py marks each row ✓ or ✗).
GOAL_RATIO_TO_CLONE = 0.90
GOAL_TEXT = f">= {GOAL_RATIO_TO_CLONE:.2f} x clone and faster than torch.compile on every row"

FLOAT_DTYPES = ("bfloat16", "float32")
# On the CPU demo every dim is divided by this, so the section finishes in seconds.
CPU_SHRINK = 8


@dataclass(frozen=True)
class PermuteCase:
    name: str                       # the row's label
    shape: Shape                    # of the input tensor (the strided view, for a packed case)
    dims: Shape                     # the permutation
    dtypes: tuple[str, ...] = FLOAT_DTYPES
    # (dim, count): the input is `parent.select(dim, 1)`, where the parent has an extra dim of
    # size `count` inserted at `dim`. So a packed (B, S, 3, H, D) qkv gives a (B, S, H, D) slice
    # whose rows are 3 * H * D elements apart.
    packed: Optional[tuple[int, int]] = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def parent_shape(self) -> Shape:
        """The shape of the tensor the input is allocated as (its own shape when unpacked)."""
        if self.packed is None:
            return self.shape
        dim, count = self.packed
        return (*self.shape[:dim], count, *self.shape[dim:])

    def shrunk(self, factor: int = CPU_SHRINK) -> "PermuteCase":
        """The same case with every dim divided by `factor`, for the CPU demo. Dims stay >= 2:
        a size-1 dim can turn the permutation into a no-op (8x4096x4096 by (1,0,2) would become
        1x512x512, already contiguous when permuted, so eager would return its input). The
        packed count is kept: it sets the stride pattern, not the size."""
        return PermuteCase(self.name, tuple(max(2, d // factor) for d in self.shape),
                           self.dims, self.dtypes, self.packed)


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
    # One slice of a packed qkv, (B, S, 3, H, D).select(2, 1): a non-contiguous input taken as
    # is. The middle slice (k, in q, k, v order; q moves the same bytes) also has a storage
    # offset, as real slices do.
    PermuteCase("packed qkv slice, BSHD->BHSD", (8, 4096, 32, 64), (0, 2, 1, 3), packed=(2, 3)),
)
