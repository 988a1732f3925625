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

_REBUILD = "rebuild with: pip install --no-build-isolation ."


def _release(version: str) -> str:
    """A torch version without its local label: '2.14.1+cu130' -> '2.14.1'."""
    return str(version).split("+")[0]


def _load_extension() -> None:
    """Loads _C (which registers the ops), after checking that it was built against the running
    torch: a C++ extension is tied to the torch release it was compiled against, and pip's build
    isolation may compile it against another one than the one installed."""
    running = str(torch.__version__)
    try:
        from ._build_info import TORCH_VERSION as built  # written by setup.py at build time
    except ImportError:
        built = None  # not built yet, or built by an older setup.py: loading _C below tells
    if built is not None and _release(built) != _release(running):
        raise ImportError(
            f"cute_transpose was built against torch {built}, but torch {running} is installed, "
            f"and its compiled extension only loads into the torch release it was built against; "
            f"{_REBUILD} (from the cute_transpose sources, to compile against the installed torch)")
    try:
        from . import _C  # noqa: F401
    except (ImportError, OSError) as error:
        if isinstance(error, ModuleNotFoundError) and error.name != f"{__name__}._C":
            raise
        against = f" (it was built against torch {built})" if built else ""
        raise ImportError(
            f"cute_transpose's compiled extension could not be loaded into torch {running}"
            f"{against}: {error}; it must be built against the installed torch: {_REBUILD} "
            f"(from the cute_transpose sources)") from error


_load_extension()

from . import _ops  # noqa: E402  (after the extension is loaded)
from ._ops import (KERNELS, OPS, VARIANTS, autotune, autotune_cache, autotune_enabled, copy, explain,  # noqa: E402
                   permute, transpose)
from . import _dtensor  # noqa: E402

_dtensor.register_when_imported()  # DTensor sharding rules, once torch.distributed.tensor loads

# The ladder's variants as module functions: cute_transpose.swizzled(x), ...
globals().update({name: getattr(_ops, name) for name in VARIANTS})

__all__ = ["VARIANTS", "OPS", "KERNELS", "copy", "transpose", "permute", "explain", "autotune", "autotune_enabled",
           "autotune_cache", "has_cuda_kernels",
           *VARIANTS]
__version__ = "0.1.0"


def has_cuda_kernels() -> bool:
    """True when the extension was built with its CUDA kernels."""
    return torch._C._dispatch_has_kernel_for_dispatch_key("cute_transpose::swizzled", "CUDA")
