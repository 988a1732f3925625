"""What every test file shares: devices and skips, the dtype table, random inputs, the reference,
poisoned outputs, the bit-exact comparison, and calling any op by name.

The test files, one concern each:
  test_registration.py     the op list, schemas, Python functions vs C++ registrations, fake
                           (meta) kernels
  test_ladder.py           the seed variants and `copy` (and `transpose` on its last two dims):
                           dtype x shape, strided views, vector widths, every torch dtype, fuzz
  test_permute.py          `permute` and `transpose` over any dims: kernel routes, property
                           tests (seeded and hypothesis), dims errors, big shapes
  test_out.py              transpose.out / permute.out: results, and every out= error
  test_autograd_compile.py gradients, gradcheck, opcheck, torch.compile fullgraph (static,
                           dynamic, out=), torch.export
  test_gpu_runtime.py      the current stream, CUDA graphs, two streams, the device guard
  test_autotune.py         per-shape autotuning: the setting, remembered picks, tuned results
  test_banks.py            shared-memory bank maps of the seed variants (no GPU needed)

Every result is compared bit-exactly (assert_bits_equal) against `reference`, on fresh random
data, with its output memory poisoned first (run_poisoned, poisoned) so unwritten elements show.
"""

import math

import pytest
import torch

import cute_transpose

# ----------------------------------------------------------------------------------------------
# Devices and skips

HAS_CUDA = torch.cuda.is_available() and cute_transpose.has_cuda_kernels()
IS_SM90 = HAS_CUDA and torch.cuda.get_device_capability()[0] >= 9
# The variants that need sm_90 (TMA) on CUDA.
SM90_OPS = ("tma", "pipelined")

_no_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU (or CPU-only build)")
# Marks of everything that runs on a GPU: `-m "not gpu"` deselects them, and they skip without one.
CUDA_MARKS = (pytest.mark.gpu, _no_cuda)

DEVICES = ["cpu", pytest.param("cuda", marks=CUDA_MARKS)]


def needs_cuda(test):
    """A test that only runs on a GPU (marked `gpu`, skipped without CUDA kernels)."""
    return pytest.mark.gpu(_no_cuda(test))


def needs_sm90(test):
    return needs_cuda(pytest.mark.skipif(not IS_SM90, reason="needs an sm_90 GPU")(test))


def needs_pre_sm90(test):
    return needs_cuda(pytest.mark.skipif(IS_SM90, reason="needs a CUDA GPU older than sm_90")(test))


# ----------------------------------------------------------------------------------------------
# Dtypes: one table, every element size, the subsets derived from it

# Every dtype the kernels move, by element size (1, 2, 4, 8, 16 bytes); the first of each size
# is its representative.
DTYPES_BY_SIZE = {
    1: (torch.uint8, torch.int8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2),
    2: (torch.bfloat16, torch.float16, torch.int16),
    4: (torch.float32, torch.int32, torch.complex32),
    8: (torch.float64, torch.int64, torch.complex64),
    16: (torch.complex128,),
}
ELEMENT_SIZES = tuple(DTYPES_BY_SIZE)
DTYPES = tuple(d for dtypes in DTYPES_BY_SIZE.values() for d in dtypes)
# One dtype of each element size (uint8, bfloat16, float32, float64, complex128).
ONE_PER_SIZE = tuple(dtypes[0] for dtypes in DTYPES_BY_SIZE.values())
REPRESENTATIVE = dict(zip(ELEMENT_SIZES, ONE_PER_SIZE))


def element_size(dtype):
    return torch.empty((), dtype=dtype).element_size()


def dtype_id(dtype):
    return str(dtype).replace("torch.", "")


def shape_id(shape):
    return "x".join(map(str, shape)) if len(shape) else "scalar"


def dims_id(dims):
    return "(" + ",".join(map(str, dims)) + ")"


# ----------------------------------------------------------------------------------------------
# Inputs and the reference


def random_tensor(shape, dtype, device="cpu", generator=None):
    """Fresh random bits of `dtype` (never zeros; NaN payloads included for floats)."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).to(device=device, dtype=torch.bool)
    raw = torch.randint(0, 256, (*shape, element_size(dtype)), dtype=torch.uint8, generator=generator)
    return raw.to(device).view(dtype).reshape(shape)


def reference(x, dims):
    """x.permute(dims).contiguous(); through a uint8 view where torch cannot copy the dtype."""
    x = x.detach()
    try:
        return x.permute(dims).contiguous()
    except (RuntimeError, NotImplementedError):
        wrapped = [d % x.dim() for d in dims]
        bytes_ = x.unsqueeze(-1).view(torch.uint8)  # (..., element bytes), the strides of x
        return bytes_.permute(*wrapped, x.dim()).contiguous().view(x.dtype).squeeze(-1)


def transposition(rank, dim0, dim1):
    """The permutation of range(rank) that swaps dim0 and dim1 (negative dims wrap)."""
    dims = list(range(rank))
    if rank:
        dims[dim0 % rank], dims[dim1 % rank] = dims[dim1 % rank], dims[dim0 % rank]
    return dims


def inverse(perm):
    """The permutation that undoes `perm` (a permutation of range(len(perm)))."""
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def transpose_reference(x, dim0=-2, dim1=-1):
    """x.transpose(dim0, dim1).contiguous(): the reference for a transposition."""
    return reference(x, transposition(x.dim(), dim0, dim1))


# The ops called as op(x) (the seed variants, `copy`, and `transpose` with its default dims).
MATRIX_OPS = tuple(name for name in cute_transpose.OPS if name != "permute")


def op(name):
    """The op's default overload (opcheck wants an overload: transpose also has .out)."""
    return getattr(torch.ops.cute_transpose, name).default


def call(name, x, dims=None, **kwargs):
    """The public Python function `name` on x: permute(x, dims), transpose(x, *dims), or op(x)
    for the others (dims None); kwargs (out=) go to permute and transpose."""
    fn = getattr(cute_transpose, name)
    if name == "permute":
        return fn(x, dims, **kwargs)
    if name == "transpose":
        return fn(x, *(dims or ()), **kwargs)
    assert dims is None and not kwargs, f"{name} takes neither dims nor out="
    return fn(x)


def expected(name, x, dims=None):
    """What `call(name, x, dims)` must return: a contiguous copy for `copy`, the permutation for
    `permute`, else the transpose of dims (the last two by default)."""
    if name == "copy":
        return reference(x, list(range(x.dim())))
    if name == "permute":
        return reference(x, dims)
    return transpose_reference(x, *(dims or (-2, -1)))


# ----------------------------------------------------------------------------------------------
# Poison and the bit-exact comparison

POISON = 0xA5


def poisoned(shape, dtype, device):
    """A contiguous tensor of `shape` whose bytes are all POISON."""
    nbytes = math.prod(shape) * element_size(dtype)
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    return torch.full((nbytes,), POISON, dtype=torch.uint8, device=device).view(dtype).view(shape)


def run_poisoned(fn, x, out_shape):
    """Runs fn(x) after filling the memory its output will get with POISON bytes.

    Allocates and frees a poisoned block of exactly the output's size just before the call; the
    CUDA caching allocator then hands that same block to the op (asserted), so unwritten elements
    show up as POISON. On the CPU the reuse is likely but not asserted.
    """
    if math.prod(out_shape) == 0:
        return fn(x)
    poison = poisoned(out_shape, x.dtype, x.device)
    ptr = poison.data_ptr()
    del poison
    out = fn(x)
    if x.is_cuda:
        assert out.data_ptr() == ptr, "the poisoned block was not reused; poisoning did not apply"
    return out


def assert_writes_only_out(run, ref, offset):
    """run(out) into a contiguous `out` that starts `offset` elements into a poisoned buffer, with
    3 more after it: run returns `out` itself, holding ref's bits, and nothing around it changed."""
    buf = poisoned((ref.numel() + offset + 3,), ref.dtype, ref.device)
    out = buf[offset:offset + ref.numel()].view(ref.shape)
    assert run(out) is out
    assert_bits_equal(out, ref)
    assert_bits_equal(buf[:offset], poisoned((offset,), ref.dtype, ref.device))  # nothing written before out
    assert_bits_equal(buf[-3:], poisoned((3,), ref.dtype, ref.device))  # nor after it


def as_bytes(t):
    """The bits of a contiguous tensor, as (..., element bytes) uint8."""
    assert t.is_contiguous()
    # Contiguity ignores the strides of size-1 dims (a 1-element tensor may have stride 2):
    # address the elements as the dense run they are.
    flat = t.as_strided((t.numel(),), (1,))
    return flat.view(torch.uint8).reshape(*t.shape, t.element_size())


def assert_bits_equal(out, ref):
    """out is contiguous and has ref's shape, dtype, device and bits (NaN payloads included)."""
    assert out.shape == ref.shape, (out.shape, ref.shape)
    assert out.dtype == ref.dtype and out.device == ref.device
    assert out.is_contiguous()
    if out.numel():
        mismatch = (as_bytes(out) != as_bytes(ref)).any(-1)
        assert not mismatch.any(), f"{int(mismatch.sum())} of {out.numel()} elements differ, " \
                                   f"first at {tuple(mismatch.nonzero()[0].tolist())}"
