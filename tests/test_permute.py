"""`permute` and `transpose` over any dims: bit-exact against `x.permute(dims).contiguous()` and
`x.transpose(a, b).contiguous()` for every rank, element size and view; out=; errors; autograd;
opcheck and torch.compile. CPU always; CUDA where a GPU is present.

The GPU tests whose names contain `big` move gigabytes (> 2**31 elements); deselect them with
`-k "not big"`.
"""

import math
import random

import pytest
import torch

import cute_transpose
from conftest import DEVICES, HAS_CUDA, POISON, assert_bits_equal, random_tensor, run_poisoned

# Element sizes 1, 2, 4, 8 and 16 bytes, with the dtypes of each size.
DTYPES_BY_SIZE = {
    1: (torch.uint8, torch.int8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2),
    2: (torch.bfloat16, torch.float16, torch.int16),
    4: (torch.float32, torch.int32),
    8: (torch.float64, torch.int64, torch.complex64),
    16: (torch.complex128,),
}
ELEMENT_SIZES = tuple(DTYPES_BY_SIZE)
# One dtype of each element size, for the parametrized tests.
FIVE_DTYPES = (torch.uint8, torch.bfloat16, torch.float32, torch.float64, torch.complex128)


def dtype_id(dtype):
    return str(dtype).replace("torch.", "")


def shape_id(shape):
    return "x".join(map(str, shape)) if len(shape) else "scalar"


def dims_id(dims):
    return "(" + ",".join(map(str, dims)) + ")"


# ----------------------------------------------------------------------------------------------
# References and checks


def permute_reference(x, dims):
    """x.permute(dims).contiguous(); through a uint8 view where torch cannot copy the dtype."""
    x = x.detach()
    try:
        return x.permute(dims).contiguous()
    except (RuntimeError, NotImplementedError):
        wrapped = [d % x.dim() for d in dims]
        bytes_ = x.unsqueeze(-1).view(torch.uint8)  # (..., element bytes), the strides of x
        return bytes_.permute(*wrapped, x.dim()).contiguous().view(x.dtype).squeeze(-1)


def transpose_reference(x, dim0, dim1):
    x = x.detach()
    try:
        return x.transpose(dim0, dim1).contiguous()
    except (RuntimeError, NotImplementedError):
        rank = max(x.dim(), 1)
        dims = list(range(x.dim()))
        if x.dim():
            dims[dim0 % rank], dims[dim1 % rank] = dims[dim1 % rank], dims[dim0 % rank]
        return permute_reference(x, dims)


def describe(x, dims=None):
    return (f"{x.device.type} {dtype_id(x.dtype)} shape {tuple(x.shape)} strides {x.stride()} "
            f"storage offset {x.storage_offset()}" + ("" if dims is None else f" dims {tuple(dims)}"))


def poisoned(shape, dtype, device):
    """A contiguous tensor of `shape` whose bytes are all POISON."""
    esize = torch.empty((), dtype=dtype).element_size()
    nbytes = math.prod(shape) * esize
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    return torch.full((nbytes,), POISON, dtype=torch.uint8, device=device).view(dtype).view(shape)


def check_result(fn, out_fn, x, ref, what, poison_allocator=True):
    """fn(x) into a poisoned allocation, and out_fn(x, out) into a poisoned out, against ref."""
    try:
        if poison_allocator:
            y = run_poisoned(fn, x, ref.shape)
        else:
            y = fn(x)
        assert_bits_equal(y, ref)
        if x.numel():
            assert y.data_ptr() != x.data_ptr(), "the result aliases the input"
        out = poisoned(ref.shape, x.dtype, x.device)
        res = out_fn(x, out)
        assert res is out, "the out= overload did not return `out`"
        assert_bits_equal(out, ref)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None


def check_permute(x, dims, poison_allocator=True):
    dims = list(dims)
    check_result(lambda t: torch.ops.cute_transpose.permute(t, dims),
                 lambda t, o: torch.ops.cute_transpose.permute.out(t, dims, out=o),
                 x, permute_reference(x, dims), describe(x, dims), poison_allocator)


def check_transpose(x, dim0, dim1):
    check_result(lambda t: cute_transpose.transpose(t, dim0, dim1),
                 lambda t, o: cute_transpose.transpose(t, dim0, dim1, out=o),
                 x, transpose_reference(x, dim0, dim1),
                 f"transpose({dim0}, {dim1}) of {describe(x)}")


def inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


# ----------------------------------------------------------------------------------------------
# Views


def make_view(shape, dtype, device, rng, *, offset=False, step=False, permuted=False,
              expand=False):
    """A tensor of `shape` with fresh random bits, viewed as asked:
    offset: a slice of a bigger tensor (storage offset > 0, padded rows);
    step: one or two dims taken every 2nd or 3rd element;
    permuted: the storage is laid out in another dim order (a permuted, non-contiguous base);
    expand: one or more dims of size > 1 are stride-0 broadcasts."""
    rank = len(shape)
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    expanded = set()
    if expand and rank:
        candidates = [d for d in range(rank) if shape[d] > 1] or list(range(rank))
        expanded = set(rng.sample(candidates, rng.randint(1, min(2, len(candidates)))))
    logical = [1 if d in expanded else s for d, s in enumerate(shape)]
    steps = [1] * rank
    if step and rank:
        for d in rng.sample(range(rank), min(rank, rng.randint(1, 2))):
            steps[d] = rng.choice((2, 3))
    pads = [0] * rank
    if offset and rank:
        for d in rng.sample(range(rank), min(rank, 2)):
            pads[d] = rng.randint(1, 3)
    stored = [n * st + p for n, st, p in zip(logical, steps, pads)]
    order = list(range(rank))
    if permuted and rank > 1:
        while order == sorted(order):
            rng.shuffle(order)
    lead = rng.randint(1, 5) if offset else 0  # elements before the view in the storage
    flat = random_tensor((lead + math.prod(stored),), dtype, device, gen)
    base = flat[lead:].view([stored[d] for d in order]).permute(inverse(order))
    starts = [rng.randint(0, p) for p in pads]
    x = base[tuple(slice(a, a + n * st, st) for a, n, st in zip(starts, logical, steps))]
    x = x.expand(shape) if expanded else x
    assert tuple(x.shape) == tuple(shape)
    return x


VIEWS = {
    "contiguous": {},
    "offset": {"offset": True},
    "stepped": {"step": True},
    "permuted": {"permuted": True},
    "expanded": {"expand": True},
    "mixed": {"offset": True, "step": True, "permuted": True, "expand": True},
}

# ----------------------------------------------------------------------------------------------
# 1. Randomized property test

SIZES = (1, 2, 3, 5, 7, 8, 16, 17, 31, 33, 64, 65, 127, 128)
BATCHES = 3


def random_shape(rng, rank, budget):
    shape = []
    for _ in range(rank):
        room = budget // max(1, math.prod(shape))
        shape.append(rng.choice([s for s in SIZES if s <= room] or [1]))
    rng.shuffle(shape)
    return shape


def random_dims(rng, rank):
    """A random permutation of range(rank), each dim written negative a quarter of the time."""
    perm = rng.sample(range(rank), rank)
    return [d - rank if rng.random() < 0.25 else d for d in perm]


@pytest.mark.parametrize("batch", range(BATCHES), ids=lambda b: f"batch{b}")
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("device", DEVICES)
def test_random_permutes(device, view, batch):
    """Ranks 1-6, random permutations and shapes (odd sizes and 1s), every element size."""
    cuda = device == "cuda"
    cases, budget = (100, 200_000) if cuda else (40, 20_000)
    rng = random.Random(f"permute-{view}-{batch}")  # the same cases on every device and run
    for i in range(cases):
        rank = rng.randint(1, 6)
        shape = random_shape(rng, rank, budget)
        dtype = rng.choice(DTYPES_BY_SIZE[ELEMENT_SIZES[i % len(ELEMENT_SIZES)]])
        x = make_view(shape, dtype, device, rng, **VIEWS[view])
        dims = random_dims(rng, rank)
        try:
            check_permute(x, dims)
        except AssertionError as e:
            raise AssertionError(f"case {i}: {e}") from None


# ----------------------------------------------------------------------------------------------
# 2. Targeted cases: one or more for each kernel route

ROUTE_CASES = {
    # The innermost dim stays innermost: a batched copy of D-element rows.
    "bshd_to_bhsd_d64": ((2, 33, 4, 64), (0, 2, 1, 3)),
    "bshd_to_bhsd_d128": ((2, 65, 3, 128), (0, 2, 1, 3)),
    "bhsd_to_bshd_d128": ((2, 3, 65, 128), (0, 2, 1, 3)),
    "8x64x64_swap_outer": ((8, 64, 64), (1, 0, 2)),
    "rows_of_3_reordered": ((5, 7, 9, 3), (2, 0, 1, 3)),
    # NCHW <-> NHWC.
    "nchw_to_nhwc": ((2, 64, 32, 32), (0, 2, 3, 1)),
    "nchw_to_nhwc_odd": ((2, 3, 17, 33), (0, 2, 3, 1)),
    "nhwc_to_nchw": ((2, 32, 32, 64), (0, 3, 1, 2)),
    "nhwc_to_nchw_odd": ((2, 17, 33, 3), (0, 3, 1, 2)),
    # Rank 5.
    "rank5_scrambled": ((2, 3, 4, 5, 6), (4, 2, 0, 3, 1)),
    "rank5_inner_kept": ((3, 8, 5, 16, 7), (0, 3, 1, 4, 2)),
    "rank5_inner_swapped": ((2, 4, 8, 16, 8), (1, 0, 2, 4, 3)),
    # Short m or n dims (below a tile): each tile side takes a second dim (split_transpose.cu).
    "short_sides_rank5": ((4, 8, 16, 8, 32), (0, 3, 1, 4, 2)),
    "short_sides_rank5_odd_outer": ((3, 5, 16, 7, 32), (0, 3, 1, 4, 2)),
    "short_m_only": ((6, 160, 5, 24), (0, 2, 3, 1)),
    "short_n_only": ((7, 24, 3, 160), (3, 0, 2, 1)),
    "short_sides_rank4": ((4, 64, 24, 48), (2, 0, 3, 1)),
    "short_sides_scrambled": ((8, 16, 8, 64, 40), (4, 2, 0, 3, 1)),
    "short_sides_unaligned": ((4, 6, 10, 6, 12), (0, 3, 1, 4, 2)),
    # Dims that merge: these are 2D transposes, batched transposes or plain copies.
    "merge_to_2d_transpose": ((4, 5, 6, 7), (2, 3, 0, 1)),
    "merge_to_batched_transpose": ((3, 4, 5, 6), (0, 1, 3, 2)),
    "merge_pairs": ((2, 3, 4, 5, 6), (0, 3, 4, 1, 2)),
    "identity": ((6, 5, 4, 3), (0, 1, 2, 3)),
    "rotate_left": ((16, 8, 32), (1, 2, 0)),
    "rotate_right": ((16, 8, 32), (2, 0, 1)),
    "unit_dims_everywhere": ((1, 37, 1, 41, 1), (3, 0, 4, 1, 2)),
    # High ranks.
    "rank8": ((2, 3, 2, 3, 2, 3, 2, 3), (7, 0, 6, 1, 5, 2, 4, 3)),
    "rank8_unit_dims": ((1, 3, 2, 5, 1, 4, 2, 3), (3, 1, 7, 5, 0, 2, 6, 4)),
    "rank9": ((2, 3, 2, 2, 3, 2, 1, 2, 3), (8, 6, 4, 2, 0, 7, 5, 3, 1)),
    "rank9_inner_kept": ((2, 2, 3, 2, 2, 3, 2, 2, 5), (1, 0, 3, 2, 5, 4, 7, 6, 8)),
    "rank12_reversed": ((2,) * 12, tuple(range(11, -1, -1))),
    # Small ranks and empty tensors.
    "rank0": ((), ()),
    "rank1": ((17,), (0,)),
    "rank1_negative": ((17,), (-1,)),
    "zero_dim": ((3, 0, 5), (2, 0, 1)),
    "zero_dim_2d": ((0, 4), (1, 0)),
    "zero_dim_rank5": ((2, 3, 0, 4, 1), (4, 3, 2, 1, 0)),
}


@pytest.mark.parametrize("dtype", FIVE_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", list(ROUTE_CASES))
@pytest.mark.parametrize("device", DEVICES)
def test_routes(device, case, dtype):
    shape, dims = ROUTE_CASES[case]
    x = random_tensor(shape, dtype, device)
    # Ranks above 8 may go through a temporary first: poison the out= result only.
    check_permute(x, dims, poison_allocator=len(shape) <= 8)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=dtype_id)
@pytest.mark.parametrize("head_dim", [64, 128], ids=lambda d: f"D{d}")
@pytest.mark.parametrize("device", DEVICES)
def test_attention_head_split(device, head_dim, dtype):
    """(B, S, H, D) -> (B, H, S, D) and back, on contiguous and sliced (e.g. fused-QKV) inputs."""
    x = random_tensor((2, 40, 6, head_dim), dtype, device)
    check_permute(x, (0, 2, 1, 3))
    qkv = random_tensor((2, 40, 3 * 6, head_dim), dtype, device)
    check_permute(qkv[:, :, 6:12], (0, 2, 1, 3))  # a slice with a storage offset
    check_permute(x.permute(0, 2, 1, 3), (0, 2, 1, 3))  # back to (B, S, H, D)


MISALIGN_CASES = {
    "inner_kept": ((24, 40, 32), (1, 0, 2)),
    "inner_moved": ((24, 40, 32), (2, 0, 1)),
    "transpose_2d": ((48, 80), (1, 0)),
    "nchw_to_nhwc": ((2, 16, 12, 20), (0, 2, 3, 1)),
}


@pytest.mark.parametrize("offset", [0, 1, 2, 4, 8], ids=lambda o: f"offset{o}")
@pytest.mark.parametrize("dtype", FIVE_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", list(MISALIGN_CASES))
@pytest.mark.parametrize("device", DEVICES)
def test_aligned_and_misaligned(device, case, dtype, offset):
    """data_ptr aligned (offset 0) or `offset` elements in: the vector and the scalar paths."""
    shape, dims = MISALIGN_CASES[case]
    flat = random_tensor((math.prod(shape) + 16,), dtype, device)
    x = flat[offset:offset + math.prod(shape)].view(shape)
    check_permute(x, dims)


@pytest.mark.parametrize("dtype", FIVE_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("device", DEVICES)
def test_every_dtype_of_each_size(device, dtype):
    """All dtypes of the element size of `dtype` (bool, float8, complex64, ...) in one case."""
    size = torch.empty((), dtype=dtype).element_size()
    for d in DTYPES_BY_SIZE[size]:
        check_permute(random_tensor((3, 17, 33), d, device), (2, 0, 1))
        check_permute(random_tensor((3, 17, 33), d, device).transpose(0, 2), (1, 2, 0))


@pytest.mark.parametrize("device", DEVICES)
def test_permute_accepts_tuples_and_negative_dims(device):
    x = random_tensor((3, 4, 5), torch.float32, device)
    ref = x.permute(2, 0, 1).contiguous()
    for dims in [(2, 0, 1), [2, 0, 1], (-1, 0, 1), (-1, -3, -2), [2, -3, 1]]:
        assert_bits_equal(cute_transpose.permute(x, dims), ref)


# ----------------------------------------------------------------------------------------------
# 3. transpose over any pair of dims

TRANSPOSE_SHAPES = {1: (7,), 2: (5, 9), 3: (3, 1, 6), 4: (3, 5, 2, 7), 5: (2, 3, 1, 5, 4)}


@pytest.mark.parametrize("view", ["contiguous", "offset", "stepped", "permuted", "expanded"])
@pytest.mark.parametrize("rank", list(TRANSPOSE_SHAPES), ids=lambda r: f"rank{r}")
@pytest.mark.parametrize("device", DEVICES)
def test_transpose_every_pair(device, rank, view):
    """Every (dim0, dim1) in range(-rank, rank)^2, equal and negative dims included."""
    rng = random.Random(f"transpose-{rank}-{view}")
    for dtype in (torch.int16, torch.float64):
        x = make_view(TRANSPOSE_SHAPES[rank], dtype, device, rng, **VIEWS[view])
        for dim0 in range(-rank, rank):
            for dim1 in range(-rank, rank):
                check_transpose(x, dim0, dim1)


@pytest.mark.parametrize("device", DEVICES)
def test_transpose_defaults_are_the_last_two_dims(device):
    x = random_tensor((2, 3, 17, 33), torch.bfloat16, device)
    ref = x.transpose(-2, -1).contiguous()
    assert_bits_equal(cute_transpose.transpose(x), ref)
    assert_bits_equal(torch.ops.cute_transpose.transpose(x), ref)
    out = poisoned(ref.shape, x.dtype, device)
    assert torch.ops.cute_transpose.transpose.out(x, out=out) is out
    assert_bits_equal(out, ref)


@pytest.mark.parametrize("dims", [(0, 0), (0, -1), (-1, 0), (-1, -1)], ids=dims_id)
@pytest.mark.parametrize("device", DEVICES)
def test_transpose_rank0(device, dims):
    """torch accepts dims 0 and -1 on a 0-d tensor; so does the op."""
    check_transpose(random_tensor((), torch.float32, device), *dims)


@pytest.mark.parametrize("shape, dims", [((2, 3, 4), (0, 3)), ((2, 3, 4), (-4, 1)),
                                         ((7,), (0, 1)), ((), (0, 1)), ((), (-2, -1))],
                         ids=["rank3_above", "rank3_below", "rank1", "rank0_above", "rank0_below"])
@pytest.mark.parametrize("device", DEVICES)
def test_transpose_dim_out_of_range(device, shape, dims):
    x = torch.zeros(shape, device=device)
    with pytest.raises((RuntimeError, IndexError), match=r"out of range|^cute_transpose\.transpose:"):
        cute_transpose.transpose(x, *dims)
    with pytest.raises((RuntimeError, IndexError), match=r"out of range|^cute_transpose\.transpose:"):
        cute_transpose.transpose(x, *dims, out=torch.empty_like(x))


# ----------------------------------------------------------------------------------------------
# 4. out=

OUT_CASES = {
    "permute_rank3": ("permute", (17, 33, 5), (2, 0, 1)),
    "permute_rank5": ("permute", (2, 3, 4, 5, 6), (4, 2, 0, 3, 1)),
    "permute_rank0": ("permute", (), ()),
    "permute_empty": ("permute", (3, 0, 5), (2, 0, 1)),
    "transpose_last2": ("transpose", (3, 33, 65), (-2, -1)),
    "transpose_outer": ("transpose", (3, 33, 65), (0, 2)),
    "transpose_same": ("transpose", (4, 5), (1, 1)),
}


def call(kind, x, dims, **kw):
    if kind == "permute":
        return cute_transpose.permute(x, dims, **kw)
    return cute_transpose.transpose(x, *dims, **kw)


def reference(kind, x, dims):
    return permute_reference(x, dims) if kind == "permute" else transpose_reference(x, *dims)


@pytest.mark.parametrize("dtype", FIVE_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", list(OUT_CASES))
@pytest.mark.parametrize("device", DEVICES)
def test_out(device, case, dtype):
    kind, shape, dims = OUT_CASES[case]
    x = random_tensor(shape, dtype, device)
    ref = reference(kind, x, dims)
    # Through the Python wrapper, into a poisoned out.
    out = poisoned(ref.shape, dtype, device)
    ptr = out.data_ptr()
    assert call(kind, x, dims, out=out) is out
    assert out.data_ptr() == ptr
    assert_bits_equal(out, ref)
    # Through torch.ops, into a contiguous out that starts inside a bigger buffer.
    buf = poisoned((ref.numel() + 6,), dtype, device)
    out = buf[3:3 + ref.numel()].view(ref.shape)
    if kind == "permute":
        res = torch.ops.cute_transpose.permute.out(x, list(dims), out=out)
    else:
        res = torch.ops.cute_transpose.transpose.out(x, *dims, out=out)
    assert res is out
    assert_bits_equal(out, ref)
    untouched = poisoned((3,), dtype, device)
    assert_bits_equal(buf[:3], untouched)  # nothing written before out
    assert_bits_equal(buf[-3:], untouched)  # nor after it


@pytest.mark.parametrize("kind", ["permute", "transpose"])
@pytest.mark.parametrize("device", DEVICES)
def test_out_sharing_storage_without_overlap(device, kind):
    """x and out in one storage, in disjoint ranges: not an overlap."""
    buf = random_tensor((2 * 60,), torch.float32, device)
    x, out = buf[:60].view(3, 4, 5), buf[60:].view(5, 3, 4)
    dims = (2, 0, 1) if kind == "permute" else (0, 2)
    if kind == "transpose":
        out = buf[60:].view(5, 4, 3)
    ref = reference(kind, x, dims)
    assert call(kind, x, dims, out=out) is out
    assert_bits_equal(out, ref)


def error_match(kind, word):
    return rf"(?s)^cute_transpose\.{kind}:.*{word}"


def out_error_cases(kind, device):
    """(name, x, dims, out, word): out= calls that must fail with a message containing `word`."""
    dims = (2, 0, 1) if kind == "permute" else (0, 2)
    x = random_tensor((2, 3, 4), torch.float32, device)
    good = reference(kind, x, dims).shape  # (4, 2, 3) or (4, 3, 2)
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


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU (or CPU-only build)")
@pytest.mark.parametrize("x_device, out_device", [("cpu", "cuda"), ("cuda", "cpu")])
@pytest.mark.parametrize("kind", ["permute", "transpose"])
def test_out_on_the_wrong_device(kind, x_device, out_device):
    dims = (2, 0, 1) if kind == "permute" else (0, 2)
    x = random_tensor((2, 3, 4), torch.float32, x_device)
    out = torch.empty(reference(kind, x, dims).shape, device=out_device)
    with pytest.raises(RuntimeError, match=error_match(kind, "device")):
        call(kind, x, dims, out=out)


# Invalid dims: not a permutation of range(rank), or out of range.
NOT_A_PERMUTATION = {
    "too_few": ((2, 3, 4), (0, 1)),
    "too_many": ((2, 3, 4), (0, 1, 2, 1)),
    "repeated": ((2, 3, 4), (0, 1, 1)),
    "repeated_after_wrapping": ((2, 3, 4), (2, -1, 0)),
    "rank0_given_a_dim": ((), (0,)),
    "rank1_given_none": ((5,), ()),
}
OUT_OF_RANGE = {
    "above": ((2, 3, 4), (0, 1, 3)),
    "below": ((2, 3, 4), (-4, 0, 1)),
    "rank1": ((5,), (1,)),
}


@pytest.mark.parametrize("case", list(NOT_A_PERMUTATION))
@pytest.mark.parametrize("device", DEVICES)
def test_permute_dims_not_a_permutation(device, case):
    shape, dims = NOT_A_PERMUTATION[case]
    x = torch.zeros(shape, device=device)
    with pytest.raises(RuntimeError, match=r"^cute_transpose\.permute:"):
        cute_transpose.permute(x, dims)
    with pytest.raises(RuntimeError, match=r"^cute_transpose\.permute:"):
        cute_transpose.permute(x, dims, out=torch.empty_like(x))


@pytest.mark.parametrize("case", list(OUT_OF_RANGE))
@pytest.mark.parametrize("device", DEVICES)
def test_permute_dim_out_of_range(device, case):
    shape, dims = OUT_OF_RANGE[case]
    x = torch.zeros(shape, device=device)
    with pytest.raises((RuntimeError, IndexError), match=r"^cute_transpose\.permute:|out of range"):
        cute_transpose.permute(x, dims)
    with pytest.raises((RuntimeError, IndexError), match=r"^cute_transpose\.permute:|out of range"):
        cute_transpose.permute(x, dims, out=torch.empty_like(x))


@pytest.mark.parametrize("case", list(NOT_A_PERMUTATION) + list(OUT_OF_RANGE))
def test_permute_bad_dims_on_meta(case):
    """The fake kernel rejects the same dims (so torch.compile traces fail the same way)."""
    shape, dims = {**NOT_A_PERMUTATION, **OUT_OF_RANGE}[case]
    with pytest.raises((RuntimeError, IndexError)):
        cute_transpose.permute(torch.zeros(shape, device="meta"), dims)


@pytest.mark.parametrize("shape, dims", [((2, 5, 7), (2, 0, 1)), ((), ()), ((3, 0, 4), (1, 2, 0)),
                                         ((2, 3, 2, 3, 2, 3, 2, 3, 2), tuple(range(8, -1, -1)))],
                         ids=["rank3", "rank0", "empty", "rank9"])
def test_meta_tensors_give_shapes(shape, dims):
    x = torch.empty(shape, device="meta", dtype=torch.bfloat16)
    out = cute_transpose.permute(x, dims)
    assert out.shape == x.permute(dims).shape
    assert out.dtype == torch.bfloat16 and out.device.type == "meta" and out.is_contiguous()


# ----------------------------------------------------------------------------------------------
# 5. Autograd


@pytest.mark.parametrize("kind", ["permute", "transpose"])
@pytest.mark.parametrize("device", DEVICES)
def test_out_with_requires_grad_raises(device, kind):
    dims = (2, 0, 1) if kind == "permute" else (0, 1)
    x = torch.randn(2, 3, 4, device=device, requires_grad=True)
    out = torch.empty(reference(kind, x, dims).shape, device=device)
    with pytest.raises(RuntimeError, match="autograd"):
        call(kind, x, dims, out=out)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    x = torch.randn(2, 3, 4, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: cute_transpose.permute(t, (2, 0, 1)), (x,))
    assert torch.autograd.gradcheck(lambda t: cute_transpose.permute(t, (1, -1, 0)), (x,))
    assert torch.autograd.gradcheck(lambda t: cute_transpose.transpose(t, 0, 1), (x,))
    y = torch.randn(2, 3, 2, 3, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: cute_transpose.transpose(t, 0, -2), (y,))


@pytest.mark.parametrize("dims", [(2, 0, 1), (1, 2, 0), (3, 1, 0, 2), (-1, 0, -2, 1), (0,), ()],
                         ids=dims_id)
@pytest.mark.parametrize("device", DEVICES)
def test_backward_is_the_inverse_permute(device, dims):
    shape = {0: (), 1: (5,), 3: (3, 4, 5), 4: (2, 3, 4, 5)}[len(dims)]
    x = torch.randn(shape, dtype=torch.float64, device=device, requires_grad=True)
    y = cute_transpose.permute(x, dims)
    g = torch.randn_like(y)
    y.backward(g)
    inv = inverse([d % max(len(dims), 1) for d in dims])
    assert_bits_equal(x.grad, g.permute(inv).contiguous())
    # A non-contiguous incoming gradient.
    x.grad = None
    y = cute_transpose.permute(x, dims)
    g = torch.randn(tuple(y.shape)[::-1], dtype=torch.float64, device=device).permute(
        list(range(y.dim() - 1, -1, -1)))
    y.backward(g)
    assert_bits_equal(x.grad, g.permute(inv).contiguous())


@pytest.mark.parametrize("dims", [(0, 1), (0, 2), (-1, 1), (1, 1)], ids=dims_id)
@pytest.mark.parametrize("device", DEVICES)
def test_backward_of_transpose(device, dims):
    x = torch.randn(3, 4, 5, dtype=torch.float64, device=device, requires_grad=True)
    y = cute_transpose.transpose(x, *dims)
    g = torch.randn_like(y)
    y.backward(g)
    assert_bits_equal(x.grad, g.transpose(*dims).contiguous())


# ----------------------------------------------------------------------------------------------
# 6. opcheck and torch.compile


def opcheck_cases(device):
    """name -> (op overload, args, kwargs, also with requires_grad)."""
    ops = torch.ops.cute_transpose
    x = torch.randn(3, 4, 5, device=device)
    strided = torch.randn(2, 3, 4, 5, device=device)[:, ::2].transpose(0, 3)
    return {
        "permute": (ops.permute.default, (x, [2, 0, 1]), {}, True),
        "permute_negative_dims": (ops.permute.default, (x, [-1, 1, 0]), {}, True),
        "permute_strided": (ops.permute.default, (strided, [3, 1, 0, 2]), {}, True),
        "permute_rank0": (ops.permute.default, (torch.randn((), device=device), []), {}, True),
        "transpose_0_2": (ops.transpose.default, (x, 0, 2), {}, True),
        "permute.out": (ops.permute.out, (x, [2, 0, 1]),
                        {"out": torch.empty(5, 3, 4, device=device)}, False),
        "transpose.out": (ops.transpose.out, (x, 0, 2),
                          {"out": torch.empty(5, 4, 3, device=device)}, False),
        "transpose.out_default_dims": (ops.transpose.out, (x,),
                                       {"out": torch.empty(3, 5, 4, device=device)}, False),
    }


def out_ops_functionalize():
    """Whether this torch can trace out= custom ops (torch.compile, opcheck's AOT test): it needs
    torch.Tag.out on the schema (set where torch has it) and auto-functionalization of out ops.
    torch 2.11 lacks them and stops with "Found a custom (non-ATen) operator whose output has
    alias annotations"; torch 2.14 has both."""
    from torch._higher_order_ops.auto_functionalize import can_auto_functionalize
    return can_auto_functionalize(torch.ops.cute_transpose.permute.out)


needs_out_tracing = pytest.mark.skipif(not out_ops_functionalize(),
                                       reason="this torch cannot functionalize out= custom ops")


@pytest.mark.parametrize("case", list(opcheck_cases("cpu")))
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device, case):
    overload, args, kwargs, with_grad = opcheck_cases(device)[case]
    if "out" in overload._overloadname and not out_ops_functionalize():
        # Everything but the AOT (functionalization) test, which this torch cannot pass.
        torch.library.opcheck(overload, args, kwargs,
                              test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))
        pytest.skip("this torch cannot functionalize out= custom ops (AOT test skipped)")
    torch.library.opcheck(overload, args, kwargs)
    if with_grad:
        x = args[0].detach().clone().requires_grad_(True)
        torch.library.opcheck(overload, (x, *args[1:]), kwargs)


COMPILED = {
    "permute": lambda x: cute_transpose.permute(x, (2, 0, 1)) + 1,
    "permute_negative": lambda x: cute_transpose.permute(x, (-1, 0, -2)) * 2,
    "transpose_0_2": lambda x: cute_transpose.transpose(x, 0, 2) + 1,
}


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("fn", list(COMPILED))
@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(device, fn, dynamic):
    torch._dynamo.reset()  # every parametrization compiles a fresh graph
    eager = COMPILED[fn]
    compiled = torch.compile(eager, fullgraph=True, dynamic=dynamic)
    for shape in [(3, 36, 20), (5, 44, 24)]:  # a second shape exercises the dynamic graph
        x = torch.randn(shape, device=device)
        assert torch.equal(compiled(x), eager(x))


@pytest.fixture
def no_compile_caches():
    """Compile from scratch: a graph found in the on-disk caches (compiled against an earlier
    build of the ops, say) skips functionalization, where out= ops fail or pass."""
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        yield
    torch._dynamo.reset()


@needs_out_tracing
@pytest.mark.usefixtures("no_compile_caches")
@pytest.mark.filterwarnings("ignore:dynamo_pgo force disabled")
@pytest.mark.parametrize("kind", ["permute", "transpose"])
@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_out(device, kind):
    """out= under torch.compile: the result (which is `buf`) is used, and the mutation of the
    graph input `buf` is kept. (Name the buffer anything but `out`: a parameter named `out`
    takes another path through torch.compile.)"""
    dims = (2, 0, 1) if kind == "permute" else (0, 2)

    def fn(x, buf):
        return call(kind, x, dims, out=buf) + 1

    compiled = torch.compile(fn, fullgraph=True)
    x = torch.randn(3, 36, 20, device=device)
    ref = reference(kind, x, dims)
    buf = torch.zeros(ref.shape, device=device)
    assert torch.equal(compiled(x, buf), ref + 1)
    assert torch.equal(buf, ref)


# ----------------------------------------------------------------------------------------------
# 7. Big GPU cases (> 2**31 elements; deselect with -k "not big")

needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU (or CPU-only build)")


def skip_unless_gpu_memory(nbytes):
    """The input, the reference and the result (3x the tensor's bytes), with 1 GiB of headroom."""
    free, _ = torch.cuda.mem_get_info()
    if free < 3 * nbytes + (1 << 30):
        pytest.skip(f"needs {(3 * nbytes + (1 << 30)) / 2**30:.1f} GiB of free GPU memory, "
                    f"has {free / 2**30:.1f}")


def assert_equal_in_chunks(out, ref, what):
    """Bit-exact comparison of two big contiguous integer tensors on the GPU, in chunks (no host
    copy, small temporaries)."""
    assert out.shape == ref.shape and out.dtype == ref.dtype and out.is_contiguous()
    a, b = out.view(-1), ref.view(-1)
    chunk = 1 << 28
    for start in range(0, a.numel(), chunk):
        if not torch.equal(a[start:start + chunk], b[start:start + chunk]):
            bad = (a[start:start + chunk] != b[start:start + chunk]).nonzero()[0].item() + start
            raise AssertionError(f"{what}: flat element {bad} differs "
                                 f"(got {a[bad].item()}, expected {b[bad].item()})")


def big_check(shape, fn, ref_fn, what):
    """fn(x) and fn(x, out=out) on a random uint8 tensor of `shape`, made and compared on the GPU.
    Every big tensor is dropped before returning or raising (a failure's traceback keeps the
    frames alive), and the cache is emptied."""
    skip_unless_gpu_memory(math.prod(shape))
    x = ref = out = None
    try:
        x = torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda")
        ref = ref_fn(x)
        out = run_poisoned(fn, x, ref.shape)
        assert_equal_in_chunks(out, ref, what)
        out = None
        out = torch.full(ref.shape, POISON, dtype=x.dtype, device=x.device)
        assert fn(x, out=out) is out
        assert_equal_in_chunks(out, ref, what + " (out=)")
    finally:
        x = ref = out = None
        torch.cuda.empty_cache()


@needs_cuda
@pytest.mark.parametrize("shape", [(2**21 + 1, 3), (3, 2**21 + 1)], ids=shape_id)
def test_big_transpose_of_a_thin_matrix(shape):
    x = random_tensor(shape, torch.float32, "cuda")
    check_transpose(x, 0, 1)
    check_transpose(x, -1, 0)
    check_result(cute_transpose.transpose, lambda t, o: cute_transpose.transpose(t, out=o), x,
                 x.t().contiguous(), f"transpose() of {describe(x)}")


@needs_cuda
def test_big_uint8_transpose_over_2e31_elements():
    shape = (65536, 40000)  # 2.6e9 elements
    big_check(shape, lambda t, **kw: cute_transpose.transpose(t, 0, 1, **kw),
              lambda t: t.t().contiguous(), f"transpose(0, 1) of uint8 {shape_id(shape)}")


@needs_cuda
def test_big_uint8_permute_over_2e31_elements():
    shape = (3, 40000, 20000)  # 2.4e9 elements
    big_check(shape, lambda t, **kw: cute_transpose.permute(t, (2, 0, 1), **kw),
              lambda t: t.permute(2, 0, 1).contiguous(), f"permute (2,0,1) of uint8 {shape_id(shape)}")


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("dims", [(0, 2, 1, 3), (0, 3, 1, 2)], ids=dims_id)
def test_cuda_graph_capture_and_replay(dims):
    x = random_tensor((4, 48, 6, 64), torch.bfloat16, "cuda")
    fn = lambda: torch.ops.cute_transpose.permute(x, list(dims))  # noqa: E731
    fn()  # warm up outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    for _ in range(2):  # new data in the captured input, then replay
        x.copy_(random_tensor(x.shape, x.dtype, "cuda"))
        graph.replay()
        torch.cuda.synchronize()
        assert_bits_equal(out, x.permute(dims).contiguous())


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("dims", [(0, 2, 1, 3), (0, 3, 1, 2)], ids=dims_id)
def test_runs_on_the_current_stream(dims):
    """Ordered after earlier work on the current (non-default) stream, as in test_api."""
    src = random_tensor((4, 48, 6, 64), torch.float32, "cuda")
    x = torch.zeros_like(src)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)
        x.copy_(src)
        out = torch.ops.cute_transpose.permute(x, list(dims))
        out2 = torch.empty_like(out)
        cute_transpose.permute(x, dims, out=out2)
    stream.synchronize()
    assert_bits_equal(out, src.permute(dims).contiguous())
    assert_bits_equal(out2, src.permute(dims).contiguous())
