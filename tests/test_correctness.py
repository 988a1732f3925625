"""Bit-exact results of every op, for every element size, on odd, batched, empty and strided
inputs, with the output poisoned first. CPU always; CUDA where a GPU is present."""

import pytest
import torch

import cute_transpose
from conftest import (DEVICES, DTYPES, IS_SM90, SHAPES, assert_bits_equal, op, random_tensor,
                      run_poisoned, transpose_reference)


def tma_supports(x):
    """TMA's constraint on the transposed output: a row pitch (M * element size) of 16 bytes."""
    return x.device.type == "cpu" or (x.size(-2) * x.element_size()) % 16 == 0 or x.numel() == 0


def check_variant(name, x):
    ref = transpose_reference(x)
    if name == "tma" and x.is_cuda:
        if not IS_SM90:
            with pytest.raises(RuntimeError, match="sm_90"):
                op(name)(x)
            return
        if not tma_supports(x):
            with pytest.raises(RuntimeError, match="multiple of 16 bytes"):
                op(name)(x)
            return
    out = run_poisoned(op(name), x, ref.shape)
    assert_bits_equal(out, ref)
    if x.numel():
        assert out.data_ptr() != x.data_ptr()


TRANSPOSES = cute_transpose.VARIANTS + ("transpose",)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", TRANSPOSES)
def test_variant(name, dtype, shape, device):
    check_variant(name, random_tensor(shape, dtype, device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_copy(dtype, shape, device):
    x = random_tensor(shape, dtype, device)
    out = run_poisoned(op("copy"), x, x.shape)
    assert_bits_equal(out, x.contiguous())


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
        assert_bits_equal(run_poisoned(op(name), x, x.shape), x.contiguous())
    else:
        check_variant(name, x)


def every_dtype():
    dtypes = {d for d in (getattr(torch, attr) for attr in dir(torch)) if isinstance(d, torch.dtype)}
    return sorted(dtypes, key=str)


QUANTIZED = {torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", every_dtype(), ids=str)
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
        ref = x.contiguous() if name == "copy" else transpose_reference(x)
        assert_bits_equal(run_poisoned(op(name), x, ref.shape), ref)


# The kernels with vector paths (`transpose`, and `tma` on sm_90): sizes that are multiples of
# 16 (so 16-byte vectors fit for every element size) but not of the tiles, and element offsets
# that leave the rows 8-, 4- or 2-byte aligned only: every vector width, the edge tiles, and the
# fallbacks.
VECTOR_PATHS = ["transpose", "tma"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("offset", [0, 1, 2, 4, 8], ids=lambda o: f"offset{o}")
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64,
                                   torch.complex128], ids=str)
@pytest.mark.parametrize("name", VECTOR_PATHS)
def test_vector_widths(name, dtype, offset, device):
    base = random_tensor((2, 208, 336 + 16), dtype, device)
    x = base[:, :, offset:offset + 336]  # (2, 208, 336), rows start `offset` elements in
    check_variant(name, x)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (0, 2), (-1, -3), (1, 3), (2, 2), (-1, 3)],
                         ids=lambda d: f"{d[0]},{d[1]}")
def test_transpose_any_two_dims(dims, device):
    x = random_tensor((3, 5, 7, 9), torch.float16, device)
    ref = x.transpose(*dims).contiguous()
    out = run_poisoned(lambda t: cute_transpose.transpose(t, *dims), x, ref.shape)
    assert_bits_equal(out, ref)
    assert out.data_ptr() != x.data_ptr()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape, dims", [((7,), (0, 0)), ((7,), (-1, 0)), ((), (0, 0)), ((3, 4), (1, 1))])
def test_transpose_equal_dims_is_a_copy_like_torch(shape, dims, device):
    x = random_tensor(shape, torch.int16, device)
    out = cute_transpose.transpose(x, *dims)
    assert_bits_equal(out, x.transpose(*dims).contiguous())
    assert x.numel() == 0 or out.data_ptr() != x.data_ptr()
    meta = cute_transpose.transpose(x.to("meta"), *dims)  # the fake kernel agrees
    assert meta.shape == out.shape


@pytest.mark.parametrize("device", DEVICES)
def test_transpose_dim_out_of_range(device):
    with pytest.raises(IndexError, match="out of range"):
        cute_transpose.transpose(torch.zeros(2, 3, device=device), 0, 2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64,
                                   torch.complex128], ids=str)
@pytest.mark.parametrize("name", VECTOR_PATHS)
def test_views_with_unit_row_stride(name, dtype, device):
    """Inputs whose last dim is not the contiguous one: no vector path applies."""
    base = random_tensor((3, 96, 160), dtype, device)
    for x in (base.transpose(-2, -1), base[:, ::2, :].transpose(-2, -1), base.permute(2, 1, 0)):
        check_variant(name, x)
