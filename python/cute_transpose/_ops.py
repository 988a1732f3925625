"""Typed Python entry points and fake (meta) kernels for the cute_transpose ops.

Autograd is registered in C++ (csrc/autograd.cpp), so that calls stay in C++."""

from typing import Callable, Optional, Sequence

import torch
from torch import Tensor
from torch._prims_common import canonicalize_dim

# The transpose variants, in the order of the ladder. Must match csrc/variants.h (a test checks).
VARIANTS: tuple[str, ...] = (
    "naive_coalesced_read",
    "naive_coalesced_write",
    "bank_conflict_read",
    "bank_conflict_write",
    "padded",
    "swizzled",
    "tma",
)
# Every op the extension registers: the variants, the copy ceiling, and `transpose` and `permute`,
# which pick the fastest kernel for the shape and accept any dims (both have out= overloads).
OPS: tuple[str, ...] = VARIANTS + ("copy", "transpose", "permute")

_lib = torch.ops.cute_transpose


def _check_rank(x: Tensor, name: str) -> None:
    torch._check(x.dim() >= 2,
                 lambda: f"cute_transpose.{name}: expected a tensor of rank >= 2 (..., M, N), "
                         f"got rank {x.dim()} with shape {tuple(x.shape)}")


def _register_transpose(name: str) -> Callable[[Tensor], Tensor]:
    op = getattr(_lib, name)
    qualname = f"cute_transpose::{name}"

    @torch.library.register_fake(qualname)
    def _fake(x: Tensor) -> Tensor:
        _check_rank(x, name)
        return x.new_empty((*x.shape[:-2], x.shape[-1], x.shape[-2]))

    def fn(x: Tensor) -> Tensor:
        return op(x)

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"x.transpose(-2, -1).contiguous() computed by the `{name}` kernel."
    return fn


naive_coalesced_read = _register_transpose("naive_coalesced_read")
naive_coalesced_write = _register_transpose("naive_coalesced_write")
bank_conflict_read = _register_transpose("bank_conflict_read")
bank_conflict_write = _register_transpose("bank_conflict_write")
padded = _register_transpose("padded")
swizzled = _register_transpose("swizzled")
tma = _register_transpose("tma")


@torch.library.register_fake("cute_transpose::copy")
def _copy_fake(x: Tensor) -> Tensor:
    _check_rank(x, "copy")
    return x.new_empty(x.shape)


def copy(x: Tensor) -> Tensor:
    """A contiguous copy of x with the seed kernels' tiles and scalar accesses: their ceiling.
    (torch's clone, with wide vector accesses, is the device's.)"""
    return _lib.copy(x)


def _permutation(x: Tensor, dims: Sequence[int], name: str) -> list[int]:
    rank = x.dim()
    torch._check(len(dims) == rank,
                 lambda: f"cute_transpose.{name}: dims {list(dims)} has {len(dims)} entries, "
                         f"but the input has rank {rank} (shape {tuple(x.shape)})")
    perm = [canonicalize_dim(rank, d) for d in dims]  # IndexError as torch's, for a bad dim
    torch._check(len(set(perm)) == rank,
                 lambda: f"cute_transpose.{name}: dims {list(dims)} is not a permutation")
    return perm


def _transposition(x: Tensor, dim0: int, dim1: int) -> list[int]:
    a, b = canonicalize_dim(x.dim(), dim0), canonicalize_dim(x.dim(), dim1)
    perm = list(range(x.dim()))
    if perm:
        perm[a], perm[b] = perm[b], perm[a]
    return perm


def _check_out(x: Tensor, out: Tensor, perm: list[int], name: str) -> None:
    shape = tuple(x.shape[d] for d in perm)
    torch._check(out.device == x.device,
                 lambda: f"cute_transpose.{name}: out is on device {out.device} but the input is on {x.device}")
    torch._check(out.dtype == x.dtype,
                 lambda: f"cute_transpose.{name}: out has dtype {out.dtype} but the input has dtype {x.dtype}")
    torch._check(tuple(out.shape) == shape,
                 lambda: f"cute_transpose.{name}: out has shape {tuple(out.shape)} but the result has shape {shape}")
    torch._check(out.is_contiguous(), lambda: f"cute_transpose.{name}: out must be a contiguous tensor")


@torch.library.register_fake("cute_transpose::transpose")
def _transpose_fake(x: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    return x.new_empty([x.shape[d] for d in _transposition(x, dim0, dim1)])


@torch.library.register_fake("cute_transpose::transpose.out")
def _transpose_out_fake(src: Tensor, dim0: int = -2, dim1: int = -1, *, out: Tensor) -> Tensor:
    _check_out(src, out, _transposition(src, dim0, dim1), "transpose")
    return out


@torch.library.register_fake("cute_transpose::permute")
def _permute_fake(x: Tensor, dims: Sequence[int]) -> Tensor:
    return x.new_empty([x.shape[d] for d in _permutation(x, dims, "permute")])


@torch.library.register_fake("cute_transpose::permute.out")
def _permute_out_fake(src: Tensor, dims: Sequence[int], *, out: Tensor) -> Tensor:
    _check_out(src, out, _permutation(src, dims, "permute"), "permute")
    return out


def transpose(x: Tensor, dim0: int = -2, dim1: int = -1, *, out: Optional[Tensor] = None) -> Tensor:
    """x.transpose(dim0, dim1).contiguous() with the fastest kernel for the shape and dtype.

    Any two dims of any rank, any strides. With ``out`` (contiguous, of the result's shape, dtype
    and device) the result is written there and ``out`` is returned."""
    if out is None:
        return _lib.transpose(x, dim0, dim1)
    return _lib.transpose.out(x, dim0, dim1, out=out)


def permute(x: Tensor, dims: Sequence[int], *, out: Optional[Tensor] = None) -> Tensor:
    """x.permute(dims).contiguous() with the fastest kernel for the shape and dtype.

    Dims that stay adjacent are merged; when the innermost dim stays innermost the rows are
    copied in vectors, otherwise tiles are transposed between the input's and the output's
    innermost dims. Strided views are read in place. With ``out`` (contiguous, of the result's
    shape, dtype and device) the result is written there and ``out`` is returned."""
    if out is None:
        return _lib.permute(x, list(dims))
    return _lib.permute.out(x, list(dims), out=out)
