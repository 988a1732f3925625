"""Typed Python entry points and fake (meta) kernels for the cute_transpose ops.

Autograd is registered in C++ (csrc/autograd.cpp), so that calls stay in C++."""

from typing import Callable

import torch
from torch import Tensor

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
# Every op the extension registers: the variants, the copy ceiling, and `transpose`, which picks
# the fastest kernel for the shape and accepts any pair of dims.
OPS: tuple[str, ...] = VARIANTS + ("copy", "transpose")

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


@torch.library.register_fake("cute_transpose::transpose")
def _transpose_fake(x: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    return x.new_empty(x.transpose(dim0, dim1).shape)


def transpose(x: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    """x.transpose(dim0, dim1).contiguous() with the fastest kernel for the shape and dtype.

    The last two dims (the default) take the vectorized CuTe kernel on the GPU; other pairs are
    correct but take ATen's strided copy for now."""
    return _lib.transpose(x, dim0, dim1)
