"""Typed Python entry points, fake (meta) kernels and autograd for the cute_transpose ops."""

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
# Every op the extension registers.
OPS: tuple[str, ...] = VARIANTS + ("copy",)

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

    def _backward(ctx, grad: Tensor) -> Tensor:
        # d(x^T) = (dx)^T: transpose the gradient back. The swizzled kernel takes any shape
        # (tma has alignment constraints that the gradient's shape need not meet).
        return _lib.swizzled(grad)

    torch.library.register_autograd(qualname, _backward)

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


torch.library.register_autograd("cute_transpose::copy", lambda ctx, grad: grad)


def copy(x: Tensor) -> Tensor:
    """A contiguous copy of x through the same tiling machinery: the bandwidth ceiling."""
    return _lib.copy(x)
