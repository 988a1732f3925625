"""cute_transpose: CuTe matrix-transpose kernels as PyTorch ops.

Every variant maps a tensor of shape (..., M, N) to a new contiguous tensor of shape
(..., N, M) equal to ``x.transpose(-2, -1).contiguous()``::

    import cute_transpose
    y = cute_transpose.swizzled(x)              # or torch.ops.cute_transpose.swizzled(x)

The variants follow the classic transpose ladder (see README.md). ``copy`` is a same-shape copy
with the seed kernels' tiles: their ceiling. ``transpose(x, dim0, dim1)`` and
``permute(x, dims)`` (equal to ``x.permute(dims).contiguous()``) pick the fastest kernel for the
shape (``explain(x, dims)`` says which and why), take strided views in place, and accept ``out=``.
"""

import torch

from . import _C  # noqa: F401  (loading the extension registers the ops)
from . import _ops
from ._ops import KERNELS, OPS, VARIANTS, copy, explain, permute, transpose

# The ladder's variants as module functions: cute_transpose.swizzled(x), ...
globals().update({name: getattr(_ops, name) for name in VARIANTS})

__all__ = ["VARIANTS", "OPS", "KERNELS", "copy", "transpose", "permute", "explain", "has_cuda_kernels",
           *VARIANTS]
__version__ = "0.1.0"


def has_cuda_kernels() -> bool:
    """True when the extension was built with its CUDA kernels."""
    return torch._C._dispatch_has_kernel_for_dispatch_key("cute_transpose::swizzled", "CUDA")
