"""The transpose ladder: every seed variant, `transpose` (on its last two dims) and `copy`,
bit-exact for every element size, on odd, batched, empty and strided inputs, every vector width,
every torch dtype, and a seeded fuzz; with the output poisoned first. Their input errors too.
CPU always; CUDA where a GPU is present."""

import math
import random
import time

import pytest
import torch

import cute_transpose
from conftest import (SM90_OPS, DEVICES, DTYPES, IS_SM90, MATRIX_OPS, ONE_PER_SIZE, assert_bits_equal,
                      dtype_id, expected, needs_pre_sm90, needs_sm90, op, random_tensor,
                      run_poisoned, shape_id, transpose_reference)

SHAPES = [(1, 1), (1, 257), (300, 1), (33, 65), (1000, 3001), (4097, 17), (3, 129, 257),
          (0, 5), (4, 0), (2, 0, 3)]

# The ops that transpose the last two dims; `copy` keeps them (its checks follow).
TRANSPOSES = cute_transpose.VARIANTS + ("transpose",)


def tma_supports(x):
    """TMA's constraint on the transposed output: a row pitch (M * element size) of 16 bytes."""
    return x.device.type == "cpu" or (x.size(-2) * x.element_size()) % 16 == 0 or x.numel() == 0


def pipelined_runs(x):
    """Inputs `pipelined` always takes on sm_90: contiguous, both row pitches (N and M times the
    element size) whole 16-byte chunks. It refuses others whose rows TMA or 16-byte vectors
    cannot move, with a clear error."""
    pitches = (x.size(-1) * x.element_size()) % 16 == 0 and (x.size(-2) * x.element_size()) % 16 == 0
    return x.is_contiguous() and pitches and x.data_ptr() % 16 == 0


def run_or_clear_refusal(run):
    """run()'s result, or None where `pipelined` refused the input with an error that says why."""
    try:
        return run()
    except RuntimeError as e:
        assert "multiple of 16 bytes" in str(e) or "cannot run this input" in str(e), e
        return None


def check_variant(name, x):
    ref = transpose_reference(x)
    if name in SM90_OPS and x.is_cuda:
        if not IS_SM90:
            with pytest.raises(RuntimeError, match="sm_90"):
                op(name)(x)
            return
        if not tma_supports(x):
            with pytest.raises(RuntimeError, match="multiple of 16 bytes"):
                op(name)(x)
            return
        if name == "pipelined" and x.numel() and not pipelined_runs(x):
            out = run_or_clear_refusal(lambda: run_poisoned(op(name), x, ref.shape))
            if out is not None:
                assert_bits_equal(out, ref)
            return
    out = run_poisoned(op(name), x, ref.shape)
    assert_bits_equal(out, ref)
    if x.numel():
        assert out.data_ptr() != x.data_ptr()


def check_copy(x):
    assert_bits_equal(run_poisoned(op("copy"), x, x.shape), x.contiguous())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", TRANSPOSES)
def test_variant(name, dtype, shape, device):
    check_variant(name, random_tensor(shape, dtype, device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_copy(dtype, shape, device):
    check_copy(random_tensor(shape, dtype, device))


def strided_views(device):
    """Inputs whose strides the kernels take directly (last two dims) or through a documented
    reshape copy (leading dims that cannot merge)."""
    base = random_tensor((70, 90), torch.float32, device)
    big = random_tensor((4, 50, 60), torch.float16, device)
    return {
        "t()": base.t(),
        "offset slice": base[3:60, 5:77],
        "stepped slice": base[::3, 1::2],
        "expanded row": random_tensor((1, 45), torch.int32, device).expand(33, 45),
        "expanded batch": random_tensor((1, 17, 40), torch.float64, device).expand(5, 17, 40),
        "batch slice": big[1:3, ::2, 7:],
        "permuted batch": random_tensor((3, 4, 33, 20), torch.uint8, device).permute(1, 0, 2, 3),
        "last dims swapped in batch": big.transpose(-2, -1),
    }


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("view", list(strided_views("cpu")))
@pytest.mark.parametrize("name", TRANSPOSES + ("copy",))
def test_strided_inputs(name, view, device):
    x = strided_views(device)[view]
    if name == "copy":
        check_copy(x)
    else:
        check_variant(name, x)


def every_dtype():
    dtypes = {d for d in (getattr(torch, attr) for attr in dir(torch)) if isinstance(d, torch.dtype)}
    return sorted(dtypes, key=str)


QUANTIZED = {torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", every_dtype(), ids=dtype_id)
def test_every_torch_dtype(dtype, device):
    """Every dtype torch has moves bit-exactly. Quantized tensors live on their own dispatch
    keys (QuantizedCPU/QuantizedCUDA), for which the ops register nothing: torch's error names them."""
    if dtype in QUANTIZED:
        q = torch.quantize_per_tensor(torch.randn(5, 7), 0.1, 0, dtype) if dtype in \
            (torch.qint8, torch.quint8, torch.qint32) else None
        if q is not None:
            with pytest.raises(RuntimeError, match="(?i)quantized"):
                op("swizzled")(q.to(device))
        return
    x = random_tensor((37, 70), dtype, device)
    for name in ("naive_coalesced_read", "swizzled", "copy"):
        ref = expected(name, x)
        assert_bits_equal(run_poisoned(op(name), x, ref.shape), ref)


# The kernels with vector paths (`transpose`, and `tma` and `pipelined` on sm_90): sizes that are multiples of
# 16 (so 16-byte vectors fit for every element size) but not of the tiles, and element offsets
# that leave the rows 8-, 4- or 2-byte aligned only: every vector width, the edge tiles, and the
# fallbacks.
VECTOR_PATHS = ["transpose", "tma", "pipelined"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("offset", [0, 1, 2, 4, 8], ids=lambda o: f"offset{o}")
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("name", VECTOR_PATHS)
def test_vector_widths(name, dtype, offset, device):
    base = random_tensor((2, 208, 336 + 16), dtype, device)
    x = base[:, :, offset:offset + 336]  # (2, 208, 336), rows start `offset` elements in
    check_variant(name, x)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("name", VECTOR_PATHS)
def test_views_with_unit_row_stride(name, dtype, device):
    """Inputs whose last dim is not the contiguous one: no vector path applies."""
    base = random_tensor((3, 96, 160), dtype, device)
    for x in (base.transpose(-2, -1), base[:, ::2, :].transpose(-2, -1), base.permute(2, 1, 0)):
        check_variant(name, x)


# ----------------------------------------------------------------------------------------------
# Input errors


@pytest.mark.parametrize("device", DEVICES + ["meta"])
@pytest.mark.parametrize("name", MATRIX_OPS)
@pytest.mark.parametrize("shape", [(), (7,)], ids=["rank0", "rank1"])
def test_rank_below_two_is_a_clear_error(name, device, shape):
    # `transpose` names the dim that does not exist, as torch.transpose does.
    with pytest.raises((RuntimeError, IndexError), match=r"rank >= 2|Dimension out of range"):
        op(name)(torch.zeros(shape, device=device))


@needs_pre_sm90
def test_tma_on_an_older_gpu_names_sm90():
    with pytest.raises(RuntimeError, match="sm_90"):
        cute_transpose.tma(torch.randn(32, 32, device="cuda"))


@needs_sm90
def test_tma_misaligned_pitch_is_a_clear_error():
    with pytest.raises(RuntimeError, match="multiple of 16 bytes"):
        cute_transpose.tma(torch.randn(33, 64, device="cuda"))


@needs_sm90
def test_pipelined_refusals_are_clear_errors():
    with pytest.raises(RuntimeError, match="input's row pitch to be a multiple of 16 bytes"):
        cute_transpose.pipelined(torch.randn(64, 33, device="cuda"))
    with pytest.raises(RuntimeError, match="not whole 16-byte vectors"):
        cute_transpose.pipelined(torch.randn(64, 64, device="cuda").t())


@needs_sm90
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("shape", [(4096, 4096), (1000, 3008), (3, 2000, 1040), (1, 16, 8192), (8192, 16)],
                         ids=shape_id)
def test_pipelined_ring_wraps(shape, dtype):
    """Shapes with many more tiles than resident blocks times stages, so each block goes round
    its ring of stages many times (barrier phases flip), edge tiles included."""
    check_variant("pipelined", random_tensor(shape, dtype, "cuda"))


# ----------------------------------------------------------------------------------------------
# Fuzz: a seeded, time-bounded run over shapes, dtypes and strides


def random_view(rng, device):
    """A random tensor of rank 2-4, possibly sliced, stepped, transposed or expanded."""
    rank = rng.randint(2, 4)
    shape = []
    for _ in range(rank):  # at most 2^21 elements in all
        room = (1 << 21) // max(1, math.prod(shape))
        size = rng.choice([0, 1, 2, 3, 7, 16, 33, 64, 100, 129, 257]) if rng.random() < 0.9 \
            else rng.randint(1, 600)
        shape.append(min(size, room))
    dtype = rng.choice(DTYPES)
    base_shape = [s + rng.randint(0, 3) for s in shape]
    x = random_tensor(tuple(base_shape), dtype, device,
                      torch.Generator().manual_seed(rng.randint(0, 2**31)))
    x = x[tuple(slice(rng.randint(0, b - s), None)  # an offset
                for s, b in zip(shape, base_shape))]
    x = x[tuple(slice(0, s) for s in shape)]
    if rng.random() < 0.3 and x.dim() >= 2:
        d = rng.randrange(x.dim())
        x = x.narrow(d, 0, (x.size(d) + 1) // 2 if x.size(d) else 0) if rng.random() < 0.5 \
            else x[(slice(None),) * d + (slice(None, None, 2),)]
    if rng.random() < 0.3:
        x = x.transpose(rng.randrange(x.dim()), rng.randrange(x.dim()))
    if rng.random() < 0.2 and 1 in x.shape:
        d = x.shape.index(1)
        x = x.expand(*[5 if i == d else -1 for i in range(x.dim())])
    return x


@pytest.mark.parametrize("device", DEVICES)
def test_fuzz(device):
    """Random shapes, dtypes and views against torch, from a fixed seed: for about 20 s, and at
    least min_cases of them however busy the machine is (the parallel suite's other workers)."""
    min_cases = 60
    rng = random.Random(20261122)
    names = [n for n in MATRIX_OPS if n not in SM90_OPS or IS_SM90 or device == "cpu"]
    deadline = time.monotonic() + 20
    cases = 0
    while cases < min_cases or time.monotonic() < deadline:
        x = random_view(rng, device)
        name = rng.choice(names)
        if name in SM90_OPS and device == "cuda" and (x.size(-2) * x.element_size()) % 16 and x.numel():
            with pytest.raises(RuntimeError, match="multiple of 16 bytes"):
                op(name)(x)
        elif name == "pipelined" and device == "cuda" and x.numel() and not pipelined_runs(x):
            out = run_or_clear_refusal(lambda: op(name)(x))
            if out is not None:
                assert_bits_equal(out, expected(name, x))
        else:
            try:
                assert_bits_equal(op(name)(x), expected(name, x))
            except AssertionError as e:
                raise AssertionError(f"{name} on {x.dtype} {tuple(x.shape)} strides {x.stride()}: {e}")
        cases += 1
