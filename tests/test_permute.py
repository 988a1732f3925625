"""`permute` and `transpose` over any dims: bit-exact against `x.permute(dims).contiguous()` and
`x.transpose(a, b).contiguous()` for every rank, element size and view, by property tests (seeded
and hypothesis), targeted cases for each kernel route, every pair of dims, and big shapes; and
their dims errors. CPU always; CUDA where a GPU is present. (out=: test_out.py; autograd, opcheck
and torch.compile: test_autograd_compile.py.)

The GPU tests whose names contain `big` move gigabytes (> 2**31 elements); deselect them with
`-k "not big"`.
"""

import math
import random
import zlib
from dataclasses import dataclass
from typing import Callable, Optional

import pytest
import torch

import cute_transpose
from conftest import (DEVICES, DTYPES_BY_SIZE, ELEMENT_SIZES, IS_SM90, ONE_PER_SIZE, POISON, SM90_OPS,
                      assert_bits_equal, call, dims_id, dtype_id, expected, inverse, needs_cuda,
                      poisoned, random_tensor, reference, run_poisoned, shape_id,
                      transpose_reference)

try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError:  # the hypothesis tests skip; everything else runs
    hypothesis = st = None

# ----------------------------------------------------------------------------------------------
# The functions under test, and the checks


@dataclass(frozen=True)
class PermuteImpl:
    """A function that must equal x.permute(dims).contiguous(): fn(x, dims) returns a new tensor;
    out(x, dims, out), where the implementation has an out= form, writes `out` and returns it."""
    name: str
    fn: Callable
    out: Optional[Callable] = None
    cuda_only: bool = False


PERMUTE = PermuteImpl(
    "permute",
    lambda x, dims: torch.ops.cute_transpose.permute(x, list(dims)),
    lambda x, dims, out: torch.ops.cute_transpose.permute.out(x, list(dims), out=out))



def forced(kernel):
    """One kernel of the chooser, named (torch.ops.cute_transpose._permute_with); where it
    cannot run a case, `permute`'s own choice runs instead."""
    def fn(x, dims):
        try:
            return torch.ops.cute_transpose._permute_with(x, list(dims), kernel)
        except RuntimeError as e:
            if "cannot run" not in str(e):
                raise
            return torch.ops.cute_transpose.permute(x, list(dims))
    return PermuteImpl(f"kernel-{kernel}", fn, cuda_only=True)


# The implementations the property tests run, each on the same cases: `permute`, and on CUDA
# each kernel it chooses among, forced by name.
IMPLS = [PERMUTE, *(forced(k) for k in cute_transpose.KERNELS if k != "aten")]


def skip_cpu_only_impl(impl, device):
    if impl.cuda_only and device == "cpu":
        pytest.skip("a CUDA kernel: on the CPU every op is ATen's copy")


def describe(x, dims=None):
    return (f"{x.device.type} {dtype_id(x.dtype)} shape {tuple(x.shape)} strides {x.stride()} "
            f"storage offset {x.storage_offset()}" + ("" if dims is None else f" dims {tuple(dims)}"))


def check_result(fn, out_fn, x, ref, what, poison_allocator=True):
    """fn(x) into a poisoned allocation, and out_fn(x, out) (unless None) into a poisoned out,
    bit-exactly against ref."""
    try:
        if poison_allocator:
            y = run_poisoned(fn, x, ref.shape)
        else:
            y = fn(x)
        assert_bits_equal(y, ref)
        if x.numel():
            assert y.data_ptr() != x.data_ptr(), "the result aliases the input"
        if out_fn is not None:
            out = poisoned(ref.shape, x.dtype, x.device)
            res = out_fn(x, out)
            assert res is out, "the out= overload did not return `out`"
            assert_bits_equal(out, ref)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None


def check_permute(impl, x, dims, poison_allocator=True):
    """impl on (x, dims), and its out= form, against x.permute(dims).contiguous()."""
    dims = list(dims)
    out_fn = None if impl.out is None else (lambda t, o: impl.out(t, dims, o))
    check_result(lambda t: impl.fn(t, dims), out_fn, x, reference(x, dims),
                 f"{impl.name}: {describe(x, dims)}", poison_allocator)


def check_transpose(x, dim0, dim1):
    check_result(lambda t: cute_transpose.transpose(t, dim0, dim1),
                 lambda t, o: cute_transpose.transpose(t, dim0, dim1, out=o),
                 x, transpose_reference(x, dim0, dim1),
                 f"transpose({dim0}, {dim1}) of {describe(x)}")


# ----------------------------------------------------------------------------------------------
# Views


@dataclass(frozen=True)
class ViewSpec:
    """How make_view lays out a tensor of a given shape in memory. Per dim: `steps` (take every
    step-th stored element), `pads` (extra stored elements) and `starts` (where the view begins
    within its pad); `expanded`: dims that are stride-0 broadcasts; `order`: the storage's dim
    order, outermost first (a permuted base unless sorted); `lead`: elements before the view in
    the storage; `seed`: the random bits."""
    steps: tuple
    pads: tuple
    starts: tuple
    expanded: tuple = ()
    order: tuple = ()
    lead: int = 0
    seed: int = 0


def make_view(shape, dtype, device, spec):
    """A tensor of `shape` with fresh random bits, laid out as `spec` says."""
    rank = len(shape)
    logical = [1 if d in spec.expanded else s for d, s in enumerate(shape)]
    stored = [n * st + p for n, st, p in zip(logical, spec.steps, spec.pads)]
    order = list(spec.order) or list(range(rank))
    gen = torch.Generator().manual_seed(spec.seed)
    flat = random_tensor((spec.lead + math.prod(stored),), dtype, device, gen)
    base = flat[spec.lead:].view([stored[d] for d in order]).permute(inverse(order))
    x = base[tuple(slice(a, a + n * st, st) for a, n, st in zip(spec.starts, logical, spec.steps))]
    x = x.expand(shape) if spec.expanded else x
    assert tuple(x.shape) == tuple(shape)
    return x


# The view kinds: make_view's layouts, one at a time and all at once.
VIEWS = {
    "contiguous": {},
    "offset": {"offset": True},        # a slice of a bigger tensor: storage offset, padded rows
    "stepped": {"step": True},         # one or two dims taken every 2nd or 3rd element
    "permuted": {"permuted": True},    # the storage laid out in another dim order
    "expanded": {"expand": True},      # one or two dims of size > 1 broadcast (stride 0)
    "all": {"offset": True, "step": True, "permuted": True, "expand": True},
}


def random_view_spec(rng, shape, *, offset=False, step=False, permuted=False, expand=False):
    """A ViewSpec drawn from `rng` (random.Random) with the layouts asked for."""
    rank = len(shape)
    seed = rng.randrange(2**31)
    expanded = set()
    if expand and rank:
        candidates = [d for d in range(rank) if shape[d] > 1] or list(range(rank))
        expanded = set(rng.sample(candidates, rng.randint(1, min(2, len(candidates)))))
    steps = [1] * rank
    if step and rank:
        for d in rng.sample(range(rank), min(rank, rng.randint(1, 2))):
            steps[d] = rng.choice((2, 3))
    pads = [0] * rank
    if offset and rank:
        for d in rng.sample(range(rank), min(rank, 2)):
            pads[d] = rng.randint(1, 3)
    order = list(range(rank))
    if permuted and rank > 1:
        while order == sorted(order):
            rng.shuffle(order)
    lead = rng.randint(1, 5) if offset else 0
    starts = [rng.randint(0, p) for p in pads]
    return ViewSpec(tuple(steps), tuple(pads), tuple(starts), tuple(sorted(expanded)), tuple(order),
                    lead, seed)


def random_view(shape, dtype, device, rng, **kinds):
    return make_view(shape, dtype, device, random_view_spec(rng, shape, **kinds))


# ----------------------------------------------------------------------------------------------
# 1. Property tests: ranks 1-6, random permutations and shapes (odd sizes and 1s), every element
# size, every view kind; run for each implementation in IMPLS

SIZES = (1, 2, 3, 5, 7, 8, 16, 17, 31, 33, 64, 65, 127, 128)
# Per device: the cases of each seeded test and their most elements; the examples of each
# hypothesis test (30 a device: view kind x element size) and their most elements. Small on the
# CPU, where the whole suite should stay fast on two cores; the GPU takes more and bigger ones.
SEEDED_CASES = {"cpu": 40, "cuda": 100}
BUDGET = {"cpu": 20_000, "cuda": 200_000}
HYPOTHESIS_EXAMPLES = {"cpu": 10, "cuda": 50}
HYPOTHESIS_BUDGET = {"cpu": 4_096, "cuda": 200_000}
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


@pytest.mark.parametrize("impl", IMPLS, ids=lambda impl: impl.name)
@pytest.mark.parametrize("batch", range(BATCHES), ids=lambda b: f"batch{b}")
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("device", DEVICES)
def test_random_permutes(device, view, batch, impl):
    """Seeded cases (random.Random): the same on every run, more and bigger on the GPU."""
    skip_cpu_only_impl(impl, device)
    cases, budget = SEEDED_CASES[device], BUDGET[device]
    rng = random.Random(f"permute-{view}-{batch}")
    for i in range(cases):
        rank = rng.randint(1, 6)
        shape = random_shape(rng, rank, budget)
        dtype = rng.choice(DTYPES_BY_SIZE[ELEMENT_SIZES[i % len(ELEMENT_SIZES)]])
        x = random_view(shape, dtype, device, rng, **VIEWS[view])
        dims = random_dims(rng, rank)
        try:
            check_permute(impl, x, dims)
        except AssertionError as e:
            raise AssertionError(f"case {i}: {e}") from None


@dataclass(frozen=True)
class PermuteCase:
    shape: tuple
    dtype: torch.dtype
    dims: tuple
    view: ViewSpec


def permute_cases(view, size, budget):
    """A hypothesis strategy of PermuteCase: a dtype of `size` bytes, a view of kind `view`, at
    most `budget` elements. Everything is drawn from hypothesis, so a failing case shrinks to a
    minimal one: rank, sizes (towards 1), dtype, dims, and each part of the layout."""
    kinds = VIEWS[view]

    @st.composite
    def cases(draw):
        rank = draw(st.integers(1, 6))
        shape = []
        for _ in range(rank):
            room = budget // max(1, math.prod(shape))
            shape.append(min(draw(st.sampled_from(SIZES) | st.integers(1, 300)), room))
        shape = tuple(shape[i] for i in draw(st.permutations(range(rank))))
        dtype = draw(st.sampled_from(DTYPES_BY_SIZE[size]))
        perm = draw(st.permutations(range(rank)))
        negative = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
        dims = tuple(d - rank if neg else d for d, neg in zip(perm, negative))

        dim = st.sampled_from(range(rank))
        expanded = ()
        if kinds.get("expand"):
            candidates = [d for d in range(rank) if shape[d] > 1] or list(range(rank))
            expanded = tuple(sorted(draw(st.sets(st.sampled_from(candidates), min_size=1,
                                                 max_size=min(2, len(candidates))))))
        steps = [1] * rank
        if kinds.get("step"):
            for d in sorted(draw(st.sets(dim, min_size=1, max_size=2))):
                steps[d] = draw(st.sampled_from((2, 3)))
        pads, starts, lead = [0] * rank, [0] * rank, 0
        if kinds.get("offset"):
            for d in sorted(draw(st.sets(dim, min_size=1, max_size=2))):
                pads[d] = draw(st.integers(1, 3))
                starts[d] = draw(st.integers(0, pads[d]))
            lead = draw(st.integers(1, 5))
        order = ()
        if kinds.get("permuted") and rank > 1:
            order = tuple(draw(st.permutations(range(rank)).filter(lambda o: o != sorted(o))))
        seed = draw(st.integers(0, 2**31 - 1))
        return PermuteCase(shape, dtype, dims, ViewSpec(tuple(steps), tuple(pads), tuple(starts),
                                                        expanded, order, lead, seed))

    return cases()


@pytest.mark.parametrize("impl", IMPLS, ids=lambda impl: impl.name)
@pytest.mark.parametrize("size", ELEMENT_SIZES, ids=lambda size: f"{size}byte")
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("device", DEVICES)
def test_permute_properties(device, view, size, impl):
    """Hypothesis cases, deterministic (a fixed seed per view kind and element size) and bounded
    (HYPOTHESIS_EXAMPLES): on a failure, hypothesis prints the minimal PermuteCase it shrank to."""
    if hypothesis is None:
        pytest.skip("needs hypothesis (pip install hypothesis)")
    skip_cpu_only_impl(impl, device)
    examples = []

    @hypothesis.seed(zlib.crc32(f"permute-{view}-{size}".encode()))
    @hypothesis.settings(max_examples=HYPOTHESIS_EXAMPLES[device], derandomize=True,
                         deadline=None, database=None, print_blob=False,
                         suppress_health_check=[hypothesis.HealthCheck.too_slow])
    @hypothesis.given(case=permute_cases(view, size, HYPOTHESIS_BUDGET[device]))
    def run(case):
        x = make_view(case.shape, case.dtype, device, case.view)
        assert x.element_size() == size
        check_permute(impl, x, case.dims)
        examples.append(case)

    run()
    assert len(examples) >= HYPOTHESIS_EXAMPLES[device] // 2, "hypothesis ran too few cases"


# ----------------------------------------------------------------------------------------------
# 2. Targeted cases of permute: one or more for each kernel route

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


@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("case", list(ROUTE_CASES))
@pytest.mark.parametrize("device", DEVICES)
def test_routes(device, case, dtype):
    shape, dims = ROUTE_CASES[case]
    x = random_tensor(shape, dtype, device)
    # Ranks above 8 may go through a temporary first: poison the out= result only.
    check_permute(PERMUTE, x, dims, poison_allocator=len(shape) <= 8)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=dtype_id)
@pytest.mark.parametrize("head_dim", [64, 128], ids=lambda d: f"D{d}")
@pytest.mark.parametrize("device", DEVICES)
def test_attention_head_split(device, head_dim, dtype):
    """(B, S, H, D) -> (B, H, S, D) and back, on contiguous and sliced (e.g. fused-QKV) inputs."""
    x = random_tensor((2, 40, 6, head_dim), dtype, device)
    check_permute(PERMUTE, x, (0, 2, 1, 3))
    qkv = random_tensor((2, 40, 3 * 6, head_dim), dtype, device)
    check_permute(PERMUTE, qkv[:, :, 6:12], (0, 2, 1, 3))  # a slice with a storage offset
    check_permute(PERMUTE, x.permute(0, 2, 1, 3), (0, 2, 1, 3))  # back to (B, S, H, D)


MISALIGN_CASES = {
    "inner_kept": ((24, 40, 32), (1, 0, 2)),
    "inner_moved": ((24, 40, 32), (2, 0, 1)),
    "transpose_2d": ((48, 80), (1, 0)),
    "nchw_to_nhwc": ((2, 16, 12, 20), (0, 2, 3, 1)),
}


@pytest.mark.parametrize("offset", [0, 1, 2, 4, 8], ids=lambda o: f"offset{o}")
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("case", list(MISALIGN_CASES))
@pytest.mark.parametrize("device", DEVICES)
def test_aligned_and_misaligned(device, case, dtype, offset):
    """data_ptr aligned (offset 0) or `offset` elements in: the vector and the scalar paths."""
    shape, dims = MISALIGN_CASES[case]
    flat = random_tensor((math.prod(shape) + 16,), dtype, device)
    x = flat[offset:offset + math.prod(shape)].view(shape)
    check_permute(PERMUTE, x, dims)


@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("device", DEVICES)
def test_every_dtype_of_each_size(device, dtype):
    """All dtypes of the element size of `dtype` (bool, float8, complex64, ...) in one case."""
    size = torch.empty((), dtype=dtype).element_size()
    for d in DTYPES_BY_SIZE[size]:
        check_permute(PERMUTE, random_tensor((3, 17, 33), d, device), (2, 0, 1))
        check_permute(PERMUTE, random_tensor((3, 17, 33), d, device).transpose(0, 2), (1, 2, 0))


LAZY_VIEWS = {
    # A conjugate view keeps its sign flip in a bit, not in memory; so does the negative view
    # that taking .imag of one gives (on a real dtype, strided over the complex elements).
    "conj": lambda x: x.conj(),
    "neg": lambda x: x.conj().imag,
}


@pytest.mark.parametrize("lazy", list(LAZY_VIEWS))
@pytest.mark.parametrize("device", DEVICES)
def test_conjugate_and_negative_views(device, lazy):
    """Every op returns the values a conjugate or negative view shows, as eager's .contiguous()
    does, never the raw memory under it: `transpose` and `permute` through ATen's copy, which
    resolves the bit as it copies (explain() says so), the variants on torch's resolved copy.
    The out= forms write a poisoned `out`, and into a conjugate `out`, its values."""
    x = LAZY_VIEWS[lazy](random_tensor((4, 32, 48), torch.complex64, device))
    assert x.is_conj() or x.is_neg()
    for name in cute_transpose.OPS:
        if name in SM90_OPS and device == "cuda" and not IS_SM90:
            continue
        dims = (2, 0, 1) if name == "permute" else None
        ref = expected(name, x, dims).resolve_conj().resolve_neg()
        out = call(name, x, dims)
        assert not out.is_conj() and not out.is_neg(), name
        assert_bits_equal(out, ref)
        if name in ("permute", "transpose"):
            out = poisoned(ref.shape, ref.dtype, device)
            call(name, x, dims, out=out)
            assert_bits_equal(out, ref)
    info = cute_transpose.explain(x, (2, 0, 1))
    info = info.get("cuda", info)  # on the CPU: what a GPU would run
    view = "a conjugate view" if lazy == "conj" else "a negative view"
    assert info["kernel"] == "aten" and info["reason"].startswith(view), info
    if lazy == "conj":  # an out= that is itself a conjugate view holds the values, not the bits
        out = poisoned((32, 4, 48), x.dtype, device).conj()
        cute_transpose.permute(x, (1, 0, 2), out=out)
        assert_bits_equal(out.resolve_conj(), reference(x.resolve_conj(), (1, 0, 2)))


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
        x = random_view(TRANSPOSE_SHAPES[rank], dtype, device, rng, **VIEWS[view])
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


@pytest.mark.parametrize("shape, dims", [((2, 3), (0, 2)), ((2, 3, 4), (0, 3)), ((2, 3, 4), (-4, 1)),
                                         ((7,), (0, 1)), ((), (0, 1)), ((), (-2, -1))],
                         ids=["rank2_above", "rank3_above", "rank3_below", "rank1", "rank0_above",
                              "rank0_below"])
@pytest.mark.parametrize("device", DEVICES)
def test_transpose_dim_out_of_range(device, shape, dims):
    """An IndexError, as torch.transpose raises, with or without out=."""
    x = torch.zeros(shape, device=device)
    with pytest.raises(IndexError, match="out of range"):
        cute_transpose.transpose(x, *dims)
    with pytest.raises(IndexError, match="out of range"):
        cute_transpose.transpose(x, *dims, out=torch.empty_like(x))


# ----------------------------------------------------------------------------------------------
# 4. Invalid dims

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


# ----------------------------------------------------------------------------------------------
# 5. Big GPU cases (> 2**31 elements; deselect with -k "not big")

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



@needs_cuda
def test_big_uint8_gather_over_2e31_elements():
    """The gather kernel's 64-bit index path, forced by name (the chooser takes it only where the
    tuning table ranks it first)."""
    shape, dims = (3, 40000, 20000), [2, 0, 1]  # 2.4e9 elements
    skip_unless_gpu_memory(math.prod(shape))
    x = ref = out = None
    try:
        x = torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda")
        ref = x.permute(dims).contiguous()
        out = run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, dims, "gather"), x, ref.shape)
        assert_equal_in_chunks(out, ref, f"gather kernel, permute (2,0,1) of uint8 {shape_id(shape)}")
    finally:
        x = ref = out = None
        torch.cuda.empty_cache()


@needs_cuda
@pytest.mark.parametrize("kernel", ["rows", "gather"])
def test_16_byte_elements_past_2e30_vectors(kernel):
    """2^30 + 2 complex128 elements (16 GiB), one 16-byte vector each: the rows and gather kernels
    take 64-bit indices there (with 32-bit ones, a thread's next index would pass 2^31)."""
    rows = 2**29 + 1
    skip_unless_gpu_memory(rows * 2 * 16)
    x = ref = out = None
    try:
        x = torch.randn((rows, 2), dtype=torch.complex128, device="cuda").t()  # (2, rows), strides (1, 2)
        ref = x.t().contiguous()
        out = run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, [1, 0], kernel), x, ref.shape)
        assert_equal_in_chunks(out.view(torch.int64), ref.view(torch.int64),
                               f"{kernel} kernel, (2, {rows}) complex128 transposed back")
    finally:
        x = ref = out = None
        torch.cuda.empty_cache()
