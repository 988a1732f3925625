"""An autotuned Triton tile transpose: the "what a generic compiler-written kernel gets" baseline.

``triton_transpose(x)`` maps a contiguous CUDA tensor of shape (..., M, N) to a new contiguous
tensor of shape (..., N, M) equal to ``x.transpose(-2, -1).contiguous()``. Every program loads one
(BLOCK_M, BLOCK_N) tile of one matrix with masked, row-coalesced loads and stores the transposed
tile with masked, row-coalesced stores; Triton stages the tile through shared memory in between.

This module imports Triton at import time: import it only where Triton is available (bench.py
imports it lazily, so its CPU dry run works without Triton).
"""

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

__all__ = ["triton_transpose"]

# (BLOCK_M, BLOCK_N, num_warps, num_stages): 14 configs. The kernel has no loop, so num_stages
# barely matters; the other values are tried on a few tile shapes only.
_CONFIGS = (
    (32, 32, 4, 1),
    (32, 64, 4, 1),
    (64, 32, 4, 1),
    (32, 128, 4, 1),
    (128, 32, 4, 1),
    (64, 64, 4, 1),
    (64, 64, 4, 2),
    (64, 64, 8, 1),
    (64, 128, 4, 1),
    (64, 128, 8, 3),
    (128, 64, 4, 1),
    (128, 64, 8, 2),
    (128, 128, 4, 1),
    (128, 128, 8, 1),
)


def _tuning_bench(fn, quantiles):
    """Time one autotuning candidate: shorter than the defaults, still median with L2 flushed."""
    return do_bench(fn, warmup=10, rep=40, quantiles=quantiles)


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
             for bm, bn, w, s in _CONFIGS],
    key=["M", "N"],  # the autotuner adds the dtype of every tensor argument to the key
    do_bench=_tuning_bench,
)
@triton.jit
def _transpose_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """One program transposes tile (tile_m, tile_n) of matrix `batch`: x[b, M, N] -> y[b, N, M]."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid = tl.program_id(0)
    batch = pid // (tiles_m * tiles_n)
    tile = pid % (tiles_m * tiles_n)
    m0 = (tile // tiles_n) * BLOCK_M
    n0 = (tile % tiles_n) * BLOCK_N

    # 64-bit scalar base offsets (a batch can exceed 2^31 elements); 32-bit offsets in the tile.
    matrix = batch.to(tl.int64) * M * N
    src_base = x_ptr + matrix + m0.to(tl.int64) * N + n0
    dst_base = y_ptr + matrix + n0.to(tl.int64) * M + m0

    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    mask = ((m0 + rm) < M)[:, None] & ((n0 + rn) < N)[None, :]  # (BLOCK_M, BLOCK_N)
    tile_vals = tl.load(src_base + rm[:, None] * N + rn[None, :], mask=mask)
    tl.store(dst_base + rn[:, None] * M + rm[None, :], tl.trans(tile_vals), mask=tl.trans(mask))


def triton_transpose(x: torch.Tensor) -> torch.Tensor:
    """x.transpose(-2, -1).contiguous() for a contiguous CUDA tensor x of rank >= 2."""
    if x.dim() < 2:
        raise ValueError(f"triton_transpose: expected rank >= 2, got shape {tuple(x.shape)}")
    if not x.is_contiguous():
        raise ValueError("triton_transpose: expected a contiguous tensor")
    *batch, m, n = x.shape
    y = x.new_empty((*batch, n, m))
    if y.numel() == 0:
        return y
    num_matrices = x.numel() // (m * n)

    def grid(meta):
        return (num_matrices * triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

    _transpose_kernel[grid](x, y, m, n)
    return y
