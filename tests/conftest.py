"""Shared helpers: devices, random inputs of any dtype, poisoned outputs, bit-exact comparison."""

import math

import pytest
import torch

import cute_transpose

HAS_CUDA = torch.cuda.is_available() and cute_transpose.has_cuda_kernels()
IS_SM90 = HAS_CUDA and torch.cuda.get_device_capability()[0] >= 9

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU (or CPU-only build)")),
]

# One or more dtypes of each element size: 1, 2, 4, 8, 16 bytes.
DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.float8_e4m3fn, torch.float8_e5m2,
    torch.int16, torch.float16, torch.bfloat16,
    torch.int32, torch.float32, torch.complex32,
    torch.int64, torch.float64, torch.complex64,
    torch.complex128,
]

SHAPES = [(1, 1), (1, 257), (300, 1), (33, 65), (1000, 3001), (4097, 17), (3, 129, 257),
          (0, 5), (4, 0), (2, 0, 3)]


# The ops called as op(x) (permute(x, dims) has its own file, tests/test_permute.py).
MATRIX_OPS = tuple(name for name in cute_transpose.OPS if name != "permute")


def random_tensor(shape, dtype, device="cpu", generator=None):
    """Fresh random bits of `dtype` (never zeros; NaN payloads included for floats)."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).to(device=device, dtype=torch.bool)
    esize = torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (*shape, esize), dtype=torch.uint8, generator=generator)
    return raw.to(device).view(dtype).reshape(shape)


def as_bytes(t):
    """The bits of a contiguous tensor, as (..., element bytes) uint8."""
    assert t.is_contiguous()
    # Contiguity ignores the strides of size-1 dims (a 1-element tensor may have stride 2):
    # address the elements as the dense run they are.
    flat = t.as_strided((t.numel(),), (1,))
    return flat.view(torch.uint8).reshape(*t.shape, t.element_size())


def transpose_reference(x):
    """x.transpose(-2, -1).contiguous(); through a uint8 view where torch cannot copy the dtype."""
    try:
        return x.transpose(-2, -1).contiguous()
    except (RuntimeError, NotImplementedError):
        bytes_ = x.unsqueeze(-1).view(torch.uint8)  # (..., M, N, E), strides of x
        return bytes_.transpose(-3, -2).contiguous().view(x.dtype).squeeze(-1)


def expected(name, x):
    """What op `name` must return for x: a contiguous copy for `copy`, else the transpose."""
    x = x.detach()
    return x.contiguous() if name == "copy" else transpose_reference(x)


def assert_bits_equal(out, ref):
    assert out.shape == ref.shape, (out.shape, ref.shape)
    assert out.dtype == ref.dtype and out.device == ref.device
    assert out.is_contiguous()
    if out.numel():
        mismatch = (as_bytes(out) != as_bytes(ref)).any(-1)
        assert not mismatch.any(), f"{int(mismatch.sum())} of {out.numel()} elements differ, " \
                                   f"first at {tuple(mismatch.nonzero()[0].tolist())}"


POISON = 0xA5


def run_poisoned(fn, x, out_shape):
    """Runs fn(x) after filling the memory its output will get with POISON bytes.

    Allocates and frees a block of exactly the output's size just before the call; the CUDA
    caching allocator then hands that same block to the op (asserted), so unwritten elements
    show up as POISON. On the CPU the reuse is likely but not asserted.
    """
    nbytes = math.prod(out_shape) * x.element_size()
    if nbytes == 0:
        return fn(x)
    poison = torch.full((nbytes,), POISON, dtype=torch.uint8, device=x.device)
    ptr = poison.data_ptr()
    del poison
    out = fn(x)
    if x.is_cuda:
        assert out.data_ptr() == ptr, "the poisoned block was not reused; poisoning did not apply"
    return out


def op(name):
    """The op's default overload (opcheck wants an overload: transpose also has .out)."""
    return getattr(torch.ops.cute_transpose, name).default
