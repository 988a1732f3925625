"""cute_transpose: CuTe matrix-transpose kernels as PyTorch ops.

Every variant maps a tensor of shape (..., M, N) to a new contiguous tensor of shape
(..., N, M) equal to ``x.transpose(-2, -1).contiguous()``::

    import cute_transpose
    y = cute_transpose.swizzled(x)              # or torch.ops.cute_transpose.swizzled(x)

The variants follow the classic transpose ladder (see README.md). ``copy`` is a same-shape copy
with the seed kernels' tiles: their ceiling. ``transpose(x, dim0, dim1)`` and
``permute(x, dims)`` (equal to ``x.permute(dims).contiguous()``) pick the fastest kernel for the
shape, take strided views in place, and accept ``out=``.
"""

import torch

from . import _C  # noqa: F401  (loading the extension registers the ops)
from ._ops import OPS, VARIANTS, copy, naive_coalesced_read, naive_coalesced_write, \
    bank_conflict_read, bank_conflict_write, padded, swizzled, tma, transpose, permute

__all__ = ["VARIANTS", "OPS", "copy", "transpose", "permute", *VARIANTS]
__version__ = "0.1.0"


def has_cuda_kernels() -> bool:
    """True when the extension was built with its CUDA kernels."""
    return torch._C._dispatch_has_kernel_for_dispatch_key("cute_transpose::swizzled", "CUDA")
