"""The out= overloads, transpose.out and permute.out: results written into a poisoned `out` (and
nothing around it), and every out= error: shape, dtype, contiguity, overlap, device, autograd.
CPU always; CUDA where a GPU is present."""

import pytest
import torch

from conftest import (DEVICES, ONE_PER_SIZE, assert_bits_equal, assert_writes_only_out, call, dtype_id,
                      expected, needs_cuda, poisoned, random_tensor)

# name -> (op, input shape, dims)
OUT_CASES = {
    "permute_rank3": ("permute", (17, 33, 5), (2, 0, 1)),
    "permute_rank5": ("permute", (2, 3, 4, 5, 6), (4, 2, 0, 3, 1)),
    "permute_rank0": ("permute", (), ()),
    "permute_empty": ("permute", (3, 0, 5), (2, 0, 1)),
    "transpose_last2": ("transpose", (3, 33, 65), (-2, -1)),
    "transpose_outer": ("transpose", (3, 33, 65), (0, 2)),
    "transpose_same": ("transpose", (4, 5), (1, 1)),
}


@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("case", list(OUT_CASES))
@pytest.mark.parametrize("device", DEVICES)
def test_out(device, case, dtype):
    kind, shape, dims = OUT_CASES[case]
    x = random_tensor(shape, dtype, device)
    ref = expected(kind, x, dims)
    # Through the Python wrapper, into a poisoned out.
    out = poisoned(ref.shape, dtype, device)
    ptr = out.data_ptr()
    assert call(kind, x, dims, out=out) is out
    assert out.data_ptr() == ptr
    assert_bits_equal(out, ref)
    # Through torch.ops, into a contiguous out that starts inside a bigger buffer.
    if kind == "permute":
        assert_writes_only_out(lambda out: torch.ops.cute_transpose.permute.out(x, list(dims), out=out), ref, 3)
    else:
        assert_writes_only_out(lambda out: torch.ops.cute_transpose.transpose.out(x, *dims, out=out), ref, 3)


# Beyond small work (2^20 elements and more), where the chooser's kernels store 16-byte vectors
# or TMA tiles: an out= that starts 1-3 elements off the 16-byte grid must take a kernel that
# can write it (choose.cpp refuses the others on the output's address). (input view, dims)
OFF_GRID_OUT_CASES = {  # named after the kernel an aligned output takes (H100 rules; the H200's in brackets)
    "tile": (lambda: random_tensor((4096, 4096), torch.float32, "cuda"), (1, 0)),  # (lean)
    "lean": (lambda: random_tensor((3, 1024, 1024), torch.float32, "cuda"), (0, 2, 1)),
    "words": (lambda: random_tensor((1000, 3001), torch.uint8, "cuda"), (1, 0)),
    "realign": (lambda: random_tensor((3001, 4001), torch.float32, "cuda"), (1, 0)),
    "interleave_pack": (lambda: random_tensor((4, 3, 512, 512), torch.uint8, "cuda"), (0, 2, 3, 1)),
    "interleave_unpack": (lambda: random_tensor((4, 512, 512, 3), torch.float32, "cuda"), (0, 3, 1, 2)),
    "rows": (lambda: random_tensor((64, 128, 256), torch.float16, "cuda"), (1, 0, 2)),
    "gather": (lambda: random_tensor((1, 188, 5), torch.float32, "cuda").expand(1200, 188, 5), (2, 0, 1)),
    "fill": (lambda: random_tensor((1, 367), torch.bfloat16, "cuda").expand(100001, 367), (1, 0)),
    "split": (lambda: random_tensor((4, 3, 64, 2, 64, 16), torch.float32, "cuda"), (5, 3, 1, 4, 2, 0)),
}


@needs_cuda
@pytest.mark.parametrize("offset", [1, 3])
@pytest.mark.parametrize("case", list(OFF_GRID_OUT_CASES))
def test_out_off_the_16_byte_grid_beyond_small_work(case, offset):
    make, dims = OFF_GRID_OUT_CASES[case]
    x = make()
    ref = expected("permute", x, dims)
    assert_writes_only_out(lambda out: torch.ops.cute_transpose.permute.out(x, list(dims), out=out), ref, offset)


@pytest.mark.parametrize("kind", ["permute", "transpose"])
@pytest.mark.parametrize("device", DEVICES)
def test_out_sharing_storage_without_overlap(device, kind):
    """x and out in one storage, in disjoint ranges: not an overlap."""
    buf = random_tensor((2 * 60,), torch.float32, device)
    x, out = buf[:60].view(3, 4, 5), buf[60:].view(5, 3, 4)
    dims = (2, 0, 1) if kind == "permute" else (0, 2)
    if kind == "transpose":
        out = buf[60:].view(5, 4, 3)
    ref = expected(kind, x, dims)
    assert call(kind, x, dims, out=out) is out
    assert_bits_equal(out, ref)


def error_match(kind, word):
    return rf"(?s)^cute_transpose\.{kind}:.*{word}"


def out_error_cases(kind, device):
    """(name, x, dims, out, word): out= calls that must fail with a message containing `word`."""
    dims = (2, 0, 1) if kind == "permute" else (0, 2)
    x = random_tensor((2, 3, 4), torch.float32, device)
    good = expected(kind, x, dims).shape  # (4, 2, 3) or (4, 3, 2)
    buf = random_tensor((60,), torch.float32, device)
    xs = buf[:24].view(2, 3, 4)
    return [
        ("shape_of_input", x, dims, torch.empty(2, 3, 4, device=device), "shape"),
        ("shape_same_numel", x, dims, torch.empty(24, device=device), "shape"),
        ("shape_bigger", x, dims, torch.empty(*good[:-1], good[-1] + 1, device=device), "shape"),
        ("dtype_same_size", x, dims, torch.empty(good, dtype=torch.int32, device=device), "dtype"),
        ("dtype_other_size", x, dims, torch.empty(good, dtype=torch.float64, device=device), "dtype"),
        ("noncontiguous_permuted", x, dims,
         torch.empty(good[::-1], device=device).permute(2, 1, 0), "contiguous"),
        ("noncontiguous_stepped", x, dims,
         torch.empty(*good[:-1], 2 * good[-1], device=device)[..., ::2], "contiguous"),
        ("overlap_same_tensor", xs, (0, 1, 2) if kind == "permute" else (1, 1), xs, "overlap"),
        ("overlap_partial", xs, dims, buf[12:36].view(good), "overlap"),
    ]


OUT_ERRORS = [c[0] for c in out_error_cases("permute", "cpu")]


@pytest.mark.parametrize("error", OUT_ERRORS)
@pytest.mark.parametrize("kind", ["permute", "transpose"])
@pytest.mark.parametrize("device", DEVICES)
def test_out_errors(device, kind, error):
    name, x, dims, out, word = next(c for c in out_error_cases(kind, device) if c[0] == error)
    with pytest.raises(RuntimeError, match=error_match(kind, word)):
        call(kind, x, dims, out=out)


@needs_cuda
@pytest.mark.parametrize("x_device, out_device", [("cpu", "cuda"), ("cuda", "cpu")])
@pytest.mark.parametrize("kind", ["permute", "transpose"])
def test_out_on_the_wrong_device(kind, x_device, out_device):
    dims = (2, 0, 1) if kind == "permute" else (0, 2)
    x = random_tensor((2, 3, 4), torch.float32, x_device)
    out = torch.empty(expected(kind, x, dims).shape, device=out_device)
    with pytest.raises(RuntimeError, match=error_match(kind, "device")):
        call(kind, x, dims, out=out)


@pytest.mark.parametrize("kind", ["permute", "transpose"])
@pytest.mark.parametrize("device", DEVICES)
def test_out_with_requires_grad_raises(device, kind):
    dims = (2, 0, 1) if kind == "permute" else (0, 1)
    x = torch.randn(2, 3, 4, device=device, requires_grad=True)
    out = torch.empty(expected(kind, x, dims).shape, device=device)
    with pytest.raises(RuntimeError, match="autograd"):
        call(kind, x, dims, out=out)

