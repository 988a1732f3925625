"""The chooser's kernels, each forced by name (torch.ops.cute_transpose._permute_with), on the
shapes it exists for and on the awkward ones around them; and explain(), which says what
`permute` runs and why."""

import json
import math
import pathlib
import re

import numpy as np
import pytest
import torch

import box_host
import box_model
import cute_transpose
from conftest import (ONE_PER_SIZE, assert_bits_equal, assert_writes_only_out, call, dtype_id, element_size,
                      needs_cuda, random_tensor, run_poisoned)

KERNELS = cute_transpose.KERNELS
TILE_SHAPES = ("square", "tall", "wide", "narrow", "short", "large", "column", "small")  # _permute_with(x, dims, "tile/<shape>")
LEAN_SHAPES = ("square", "tall", "wide", "large")  # _permute_with(x, dims, "lean/<shape>")
SPLIT_SHAPES = ("square", "tall", "wide", "narrow", "short")  # _permute_with(x, dims, "split/<shape>")


def reference(x, dims):
    """x.permute(dims).contiguous(), through integers of the element's size (any dtype)."""
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64, 16: torch.complex128}[x.element_size()]
    return x.view(bits).permute(dims).contiguous().view(x.dtype)


def view_of(kind, shape, dtype, device):
    """A random tensor of `shape`: contiguous, or a view with an offset, a step, a slice or a
    broadcast along dim 0."""
    if kind == "contiguous":
        return random_tensor(shape, dtype, device)
    if kind == "offset":
        return random_tensor((shape[0] + 1, *shape[1:]), dtype, device)[1:]
    if kind == "stepped":
        return random_tensor((*shape[:-1], 2 * shape[-1]), dtype, device)[..., ::2]
    if kind == "sliced":  # rows padded to a whole 64, cut back: aligned strides, odd lengths
        return random_tensor((*shape[:-1], (shape[-1] + 63) // 64 * 64), dtype, device)[..., : shape[-1]]
    if kind == "shifted":  # x[..., 1:] of rows one longer: a one-element gap, the last row ends the storage
        return random_tensor((*shape[:-1], shape[-1] + 1), dtype, device)[..., 1:]
    if kind == "expand":  # one row of dim 0, read for every index: input stride 0
        return random_tensor((1, *shape[1:]), dtype, device).expand(shape)
    raise ValueError(kind)


def permute_by(kernel, dims):
    """x -> x.permute(dims).contiguous() by the device's own pick (kernel None) or by a kernel's name."""
    if kernel is None:
        return lambda t: cute_transpose.permute(t, dims)
    return lambda t: torch.ops.cute_transpose._permute_with(t, list(dims), kernel)


def assert_permute_by_writes_every_element(kernel, x, dims):
    """permute_by(kernel, dims) on x, into a poisoned output, equals torch's permute bit for bit."""
    ref = reference(x, dims)
    assert_bits_equal(run_poisoned(permute_by(kernel, dims), x, ref.shape), ref)


# (shape, dims, view, the kernels that must be able to run it). Each kernel also runs every
# other case it accepts; the listed ones prove it is reached at all. (The tile kernels refuse
# tiles less than a quarter full, such as a 48 x 72 uint8 matrix in 128 x 128 tiles.)
CASES = [
    # images: a side of 2..8 channels, interleaved on one end, planes on the other
    ((4, 3, 32, 48), (0, 2, 3, 1), "contiguous", {"interleave", "box"}),
    ((4, 32, 48, 3), (0, 3, 1, 2), "contiguous", {"interleave", "box"}),
    ((2, 4, 1076), (0, 2, 1), "sliced", {"interleave", "box"}),  # 1024 + 52 pixels: a scalar tail
    ((2, 8, 32, 64), (0, 2, 3, 1), "contiguous", {"interleave"}),
    ((2, 8, 16, 16), (0, 2, 3, 1), "contiguous", {"box"}),  # 256 pixels: under a quarter block (uint8)
    # odd planes or unaligned rows: no 16-byte vectors, interleave one element per access
    ((3, 37, 29, 5), (0, 3, 1, 2), "contiguous", {"interleave", "box"}),
    ((1101, 5), (1, 0), "offset", {"interleave", "box"}),
    ((5, 1101), (1, 0), "offset", {"interleave", "box"}),
    ((2, 3, 2, 2000), (1, 0, 3, 2), "offset", {"interleave"}),  # a batch of 3 x 2000 at odd offsets
    ((1101, 7), (1, 0), "sliced", {"interleave", "box"}),  # x[:, :7] of rows of 64: pixels 64 apart
    ((1101, 7), (1, 0), "shifted", {"interleave", "box"}),  # pixels 8 apart: the gaps read with them
    ((3, 1101, 5), (0, 2, 1), "shifted", {"interleave"}),
    ((3, 1101, 12), (0, 2, 1), "sliced", {"interleave"}),   # 12 channels
    # tall-skinny and short-wide matrices
    ((4096, 3), (1, 0), "contiguous", {"interleave", "box"}),
    ((3, 4096), (1, 0), "contiguous", {"interleave", "box"}),
    ((2048, 64), (1, 0), "contiguous", {"tile", "box"}),
    ((64, 2048), (1, 0), "contiguous", {"tile", "box"}),
    # odd and unaligned sizes
    ((97, 101), (1, 0), "contiguous", {"tile", "box"}),
    ((130, 126), (1, 0), "offset", {"tile", "box"}),
    ((66, 72), (1, 0), "stepped", {"box"}),
    # output rows that start inside 32-byte sectors: column tiles, m-tiles walked first
    ((3, 517, 259), (0, 2, 1), "contiguous", {"tile", "padded"}),
    ((300, 1001), (1, 0), "offset", {"tile", "padded"}),
    # the copy route (the innermost dim stays innermost): long rows, short rows
    ((33, 6, 64), (1, 0, 2), "contiguous", {"rows", "box"}),
    ((300, 5, 3), (1, 0, 2), "contiguous", {"rows", "box"}),
    ((8, 6, 64), (1, 0, 2), "stepped", {"rows", "box"}),
    # dims of 2..4 anywhere, up to rank 6
    ((2, 3, 2, 5, 2), (4, 2, 0, 3, 1), "contiguous", {"box"}),
    ((2, 2, 2, 30, 7), (3, 0, 4, 2, 1), "contiguous", {"box"}),
    ((4, 8, 16, 8, 32), (0, 3, 1, 4, 2), "contiguous", {"box", "split", "padded"}),
    ((8, 16, 32, 64, 40), (4, 2, 0, 3, 1), "contiguous", {"box", "split", "padded"}),
    ((3, 2, 4, 2, 3, 2), (5, 3, 1, 4, 2, 0), "contiguous", {"box"}),
    # TMA-aligned transposes
    ((3, 48, 72), (0, 2, 1), "contiguous", {"tma", "box", "padded"}),
    ((3, 96, 144), (0, 2, 1), "contiguous", {"tile", "tma", "pipelined", "box"}),
    ((2, 144, 208), (0, 2, 1), "contiguous", {"tile", "tma", "pipelined"}),
]


def case_id(case):
    shape, dims, view, _ = case
    return f"{'x'.join(map(str, shape))}-{''.join(map(str, dims))}-{view}"


@needs_cuda
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_kernel_on_its_cases(case, dtype):
    shape, dims, view, must_run = case
    x = view_of(view, shape, dtype, "cuda")
    ref = reference(x, dims)
    ran = set()
    shapes = [f"{k}/{s}" for k, names in (("tile", TILE_SHAPES), ("lean", LEAN_SHAPES), ("split", SPLIT_SHAPES))
              for s in names] + ["box/small"]
    for kernel in KERNELS + tuple(shapes):
        # Poison: the block of the output's size is freed just before the op takes it.
        torch.full((ref.numel() * ref.element_size(),), 0xA5, dtype=torch.uint8, device="cuda")
        try:
            out = torch.ops.cute_transpose._permute_with(x, list(dims), kernel)
        except RuntimeError as e:
            assert "cannot run" in str(e), e
            continue
        ran.add(kernel)
        assert_bits_equal(out, ref)
    assert_bits_equal(cute_transpose.permute(x, dims), ref)
    if "lean" in ran:  # every lean shape runs where the square one does (these offsets fit 32 bits)
        assert {f"lean/{s}" for s in LEAN_SHAPES} <= ran
    # TMA needs sm_90; interleave takes up to 128 bytes of channels (not 12 of 16 bytes).
    expected = set(must_run)
    if min(shape[-1], shape[dims[-1]]) * x.element_size() > 128:
        expected.discard("interleave")
    if torch.cuda.get_device_capability()[0] < 9:
        expected -= {"tma", "pipelined"}
    assert expected <= ran, f"{expected - ran} did not run"


@needs_cuda
@pytest.mark.parametrize("width", [16, 4])
@pytest.mark.parametrize("share", [0.1, 0.4, 0.7, 1.5])
def test_rows_blocks_shrink_for_small_copies(width, share):
    """The rows kernel's block shape follows the copy's size (cuda/strided_copy.cu): blocks of
    128 x 1, 128 x 2 or 256 x 2 vectors, or its full 1024 vectors (512 x 2 for 16-byte vectors,
    256 x 4 for narrower ones), the first that makes two blocks an SM. Copies of `share` x (two
    full blocks an SM) land on each step, in float32 rows of 3 vectors (12 elements, or 3 where
    the rows of 12 bytes move one element per access), an odd number of them."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = int(share * 2 * sms * 1024) // 6 | 1
    x = random_tensor((rows, 2, 3 * width // 4), torch.float32, "cuda")
    ref = reference(x, (1, 0, 2))
    assert cute_transpose.explain(x, (1, 0, 2))["route"] == "copy"
    out = run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, [1, 0, 2], "rows"), x, ref.shape)
    assert_bits_equal(out, ref)


@needs_cuda
def test_unknown_kernel_is_a_clear_error():
    for name in ("nope", "tile/round", "padded/tall", "lean/round", "split/round", "tile/together", "rows/tall",
                 "box/tall"):
        with pytest.raises(RuntimeError, match=f"unknown kernel '{name}'"):
            torch.ops.cute_transpose._permute_with(torch.zeros(4, 4, device="cuda"), [1, 0], name)


def test_explain_takes_the_names_permute_with_does():
    """explain(kernel=...) parses a name as _permute_with does (parse_kernel_name, choose.cpp):
    a kernel's forms after a slash describe that form, other names are a clear error that lists
    the forms."""
    def cuda(x, dims, name, **kw):
        return cute_transpose.explain(x, dims, kernel=name, **kw)["cuda"]

    x = torch.empty(1000, 3001)
    assert " tall tile" in cuda(x, (1, 0), "tile/tall")["config"]
    assert " large tile" in cuda(x, (1, 0), "lean/large")["config"]
    rows = cuda(torch.empty(40960, 2, 8), (1, 0, 2), "rows/together", gpu="NVIDIA H200")
    assert rows["name"] == "rows/together" and rows["config"].endswith("neighbouring runs read together")
    assert cuda(torch.empty(40960, 2, 8), (1, 0, 2), "rows", gpu="NVIDIA H200")["name"] == "rows"
    # No together order where nothing holds the next run: the plain one, as _permute_with runs it
    # (force_named sets the order for both).
    assert cuda(torch.empty(40960, 16), (0, 1), "rows/together")["name"] == "rows"
    broadcast = torch.empty(1, 70000, dtype=torch.uint8).expand(100, 70000)  # output rows of 100 repeats
    assert "once per warp" in cuda(broadcast, (1, 0), "fill")["config"]
    assert "once per lane" in cuda(broadcast, (1, 0), "fill/lanes")["config"]
    image = torch.empty(16, 3, 224, 224, dtype=torch.uint8)  # NCHW -> NHWC: 3 x 50176 planes
    box, small = cuda(image, (0, 2, 3, 1), "box")["box"], cuda(image, (0, 2, 3, 1), "box/small")["box"]
    assert small["keeps_positions"] and small["volume"] < box["volume"]
    for name in ("nope", "tile/round", "padded/tall", "lean/round", "split/round", "tile/together", "rows/tall",
                 "fill/", "gather/lanes", "box/tall"):
        with pytest.raises(RuntimeError, match=f"unknown kernel '{re.escape(name)}'.*fill/lanes"):
            cute_transpose.explain(x, (1, 0), kernel=name)


@pytest.mark.parametrize("shape, dims, tile", [
    ((4096, 4096), (1, 0), "square"),  # square tiles all full stay square
    ((1000, 3001), (1, 0), "tall"),    # 98% full: the longest output runs (512 bytes)
    ((8, 64, 4096), (0, 2, 1), "square"),  # m = 64: taller tiles would be half empty
    # both 71% full: tall tiles write 512-byte output runs, square ones 256 (0.93 vs 0.85 of clone)
    ((75, 608, 12, 96), (2, 0, 3, 1), "tall"),
    ((48, 28, 28, 28, 48), (4, 3, 2, 1, 0), "narrow"),   # 48 x 48 planes: 56% full, square 28%
    ((15, 15, 15, 32, 5, 112), (2, 0, 4, 1, 5, 3), "short"),  # m = 32: 88% full, square 44%
    ((6, 96, 1000), (0, 2, 1), "tall"),  # m = 96: a short tile is full, but writes 128-byte runs
])
def test_tile_shape_weighs_fill_and_output_runs(shape, dims, tile):
    x = torch.empty(shape, device="meta")
    config = json.loads(torch.ops.cute_transpose._explain(x, list(dims), 90, "tile"))["config"]
    assert f" {tile} tile" in config, config


@pytest.mark.parametrize("shape, dtype, tile", [
    ((32768, 32768), torch.uint8, "256x256 large"),      # 1 GiB: 0.97 of clone, square tiles 0.91
    ((16384, 16384), torch.uint8, "256x256 large"),      # 4096 large tiles
    ((8192, 8192), torch.uint8, "128x128 square"),       # 1024 large tiles: no faster in them
    ((262144, 1152), torch.uint8, "128x128 square"),     # 4608 large tiles, but 90% full
    ((8192, 8192), torch.float32, "64x128 large tile, 512 threads"),
    ((8192, 4096), torch.float32, "64x128 large tile, 512 threads"),  # 128 MiB: 4096 tiles
    ((7264, 7264), torch.float32, "64x128 large tile, 512 threads"),  # the TTC suite's 2-D: 99.1% full
    ((4096, 4096), torch.float32, "64x128 square tile, 256 threads"),  # 2048 tiles
    ((32768, 32768), torch.bfloat16, "128x128 square"),  # no large configuration for 2-byte elements
])
def test_large_full_matrices_take_the_large_configuration(shape, dtype, tile):
    x = torch.empty(shape, dtype=dtype, device="meta")
    config = json.loads(torch.ops.cute_transpose._explain(x, [1, 0], 90, "tile"))["config"]
    assert config.startswith(tile), config


@pytest.mark.parametrize("shape, dims, tile", [
    ((59, 384, 2320), (0, 2, 1), "64x128 large"),  # the TTC suite's: 98% full, tall 0.969 -> large 0.991
    ((43408, 1216), (1, 0), "64x128 large"),       # 95% full
    ((4096, 120, 1740), (0, 2, 1), "128x64 tall"),  # 91% full, but m = 120: fewer tiles in flight cost more
    ((75, 96, 75, 96), (2, 0, 3, 1), "128x64 tall"),  # 56% full
    ((8, 1000, 1016), (0, 2, 1), "128x64 tall"),    # 97% full, but 1024 tiles
])
def test_mostly_full_float32_matrices_take_the_large_configuration(shape, dims, tile):
    x = torch.empty(shape, device="meta")
    config = json.loads(torch.ops.cute_transpose._explain(x, list(dims), 90, "tile"))["config"]
    assert config.startswith(tile), config


@pytest.mark.parametrize("shape, dtype, tile, m_first, padded_m_first", [
    ((9973, 10007), torch.float32, "column", True, True),  # both sides split sectors, more tiles across n
    ((8193, 8192), torch.float32, "column", True, True),   # square tiles 99% full, but the output splits sectors
    ((1000003, 61), torch.float32, "column", False, False),  # two tiles across n: their input rows stay together
    ((8192, 8193), torch.float32, "tall", False, False),    # only the input splits sectors
    ((4096, 4096), torch.float32, "square", False, False),  # 16-byte vectors
    ((9973, 10007), torch.uint8, "tall", True, False),      # column tiles only for 4-byte elements; the
                                                            # seed tile (64 x 128) has more tiles down m
    ((8191, 8191), torch.float64, "square", True, True),
])
def test_output_rows_that_split_sectors_take_column_tiles_walked_m_first(shape, dtype, tile, m_first, padded_m_first):
    x = torch.empty(shape, dtype=dtype, device="meta")
    config = json.loads(torch.ops.cute_transpose._explain(x, [1, 0], 90, "tile"))["config"]
    assert f" {tile} tile" in config, config
    assert ("m-tiles first" in config) == m_first, config
    padded = json.loads(torch.ops.cute_transpose._explain(x, [1, 0], 90, "padded"))["config"]
    assert ("m-tiles first" in padded) == padded_m_first, padded


@needs_cuda
def test_column_tiles_are_for_one_element_per_access():
    x = torch.randn(256, 256, device="cuda")
    with pytest.raises(RuntimeError, match="column tiles move one element per access"):
        torch.ops.cute_transpose._permute_with(x, [1, 0], "tile/column")


def test_tile_needs_tiles_more_than_a_quarter_full():
    # 32 x 32 planes: short 32 x 128 tiles are exactly a quarter full (0.48 of clone, split 0.84)
    x = torch.empty(15, 15, 15, 32, 15, 32, device="meta")
    with pytest.raises(RuntimeError, match="a quarter full or less"):
        torch.ops.cute_transpose._explain(x, [2, 0, 4, 1, 5, 3], 90, "tile")
    assert json.loads(torch.ops.cute_transpose._explain(x, [2, 0, 4, 1, 5, 3], 90, ""))["kernel"] == "split"


# The split kernel's sides whose two dims chain where its vectors run (split_width, choose.cpp:
# m's dims on the output, n's on the input) move in vectors that cross from one inner index to
# the next. (shape, dims, the vector width in bytes for elements of 1, 2, 4, 8 and 16 bytes.)
CHAINED_SPLIT_CASES = [
    ((4, 5, 2, 3, 8, 112), (1, 5, 0, 4, 2, 3), (16, 16, 16, 16, 16)),  # m = (6 x 8): output runs of 48
    ((8, 10, 8, 11, 104), (1, 4, 2, 3, 0), (4, 16, 16, 16, 16)),        # m = (8 x 88), input stride 104
    ((3, 3, 40, 4, 24), (4, 3, 0, 1, 2), (4, 16, 16, 16, 16)),          # n = (24 x 4): input runs of 96
    ((4, 5, 52, 212), (3, 0, 2, 1), (4, 4, 16, 16, 16)),                # m = (5 x 52), input stride 212
    ((5, 7, 6, 50), (3, 0, 2, 1), (1, 4, 4, 16, 16)),                   # m = (7 x 6): 42, no whole 16-byte vectors
]


# The split kernel walks a side from vector to vector by adding, carrying into the side's outer
# dim when the inner one runs out (split_transpose.cu, Side::advance). Inner dims of 2, 3 and 7
# against steps of 1-8 rows or blocks, in one-element, 4-byte and 16-byte vectors (the widths
# of elements of 1, 2, 4, 8 and 16 bytes, in order), with tiles cut short at the edges.
SPLIT_STEP_CASES = [
    ((64, 50, 2, 3), (1, 3, 0, 2), (1, 2, 4, 8, 16)),     # m = (2 x 64), n = (3 x 50)
    ((64, 50, 2, 4), (1, 3, 0, 2), (4, 4, 16, 16, 16)),   # n = (4 x 50)
    ((37, 45, 3, 5), (1, 3, 0, 2), (1, 2, 4, 8, 16)),     # m = (3 x 37), n = (5 x 45)
    ((131, 45, 2, 8), (1, 3, 0, 2), (1, 4, 4, 16, 16)),   # m = (2 x 131)
    ((70, 3, 3, 70, 2), (1, 3, 4, 0, 2), (1, 4, 4, 16, 16)),  # m = (3 x 70), a batch dim
    ((200, 33, 7, 3), (1, 3, 0, 2), (1, 2, 4, 8, 16)),    # m = (7 x 200), n = (3 x 33)
]


def chained_id(case):
    return f"{'x'.join(map(str, case[0]))}-{''.join(map(str, case[1]))}"


@pytest.mark.parametrize("case", CHAINED_SPLIT_CASES + SPLIT_STEP_CASES, ids=chained_id)
def test_split_sides_take_the_widest_vectors_that_stay_inside_their_runs(case):
    shape, dims, widths = case
    for dtype, width in zip(ONE_PER_SIZE, widths):
        x = torch.empty(shape, dtype=dtype, device="meta")
        config = cute_transpose.explain(x, dims, kernel="split")["cuda"]["config"]
        assert config.endswith(f", {width}-byte vectors"), (dtype, config)


SPLIT_WRITE_CASES = [(case, view) for case in CHAINED_SPLIT_CASES for view in ("contiguous", "offset", "sliced")] + [
    (case, view) for case in SPLIT_STEP_CASES for view in ("contiguous", "offset")]


@needs_cuda
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("case, view", SPLIT_WRITE_CASES, ids=lambda v: v if isinstance(v, str) else chained_id(v))
def test_split_writes_every_element(case, view, dtype):
    """In each of its tile shapes whose tiles are at least a quarter full."""
    shape, dims, _ = case
    x = view_of(view, shape, dtype, "cuda")
    ref = reference(x, dims)
    ran = []
    for tile in SPLIT_SHAPES:
        try:
            out = run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, list(dims), f"split/{tile}"), x,
                               ref.shape)
        except RuntimeError as e:
            assert "less than a quarter full" in str(e), e
            continue
        assert_bits_equal(out, ref)
        ran.append(tile)
    assert "square" in ran


# Where the chained sides give split 16-byte vectors that the tuning tables never timed it at,
# it runs instead of the table's pick if the tiles it takes (split_shape) are at least half full
# (90% full for 8-byte elements the table gives to gather), the input is not broadcast and the
# pick is not the lean kernel (choose.cpp, chained_split). `scattered`: the pick would load a
# sector per element (gather's, or ATen's copy's of 8-byte elements), and that rule runs split
# first, in the same configuration.
SCATTERED_REASONS = ("gather would load a sector for each element", "that ATen's copy would load a sector each")


@pytest.mark.parametrize("make, dims, runs_split, scattered", [
    (lambda: torch.empty(41, 20, 2, 3, 24, 112, device="meta")[1:], (1, 5, 0, 4, 2, 3), True, True),  # tiles full
    (lambda: torch.empty(17, 48, 2590, 24, dtype=torch.float64, device="meta"), (2, 3, 1, 0), True, True),  # over aten
    (lambda: torch.empty(29, 2, 1085, 166, dtype=torch.float64, device="meta"), (2, 3, 1, 0), True, False),  # over aten
    (lambda: torch.empty(6, 6, 1300, 5, 71, dtype=torch.float64, device="meta"), (2, 3, 0, 4, 1), False, False),  # gather's
    # m = 24: square tiles 38% full, wide ones (32 x 256) 75% (H200: 0.96 x gather, square 0.52 on the H100)
    (lambda: torch.empty(8, 3, 168672, 15, device="meta"), (2, 1, 3, 0), True, False),
    (lambda: torch.empty(40, 1, 2, 3, 24, 112, device="meta").expand(40, 20, 2, 3, 24, 112), (1, 5, 0, 4, 2, 3),
     False, True),  # broadcast: not chained_split's
    (lambda: torch.empty(17, 95, 73, 8, 64, device="meta"), (2, 1, 4, 3, 0), False, False),  # 70% full, lean's pick
])
def test_split_runs_where_its_sides_chain_into_16_byte_vectors_and_fill_its_tiles(make, dims, runs_split, scattered):
    x = make()
    config = cute_transpose.explain(x, dims, kernel="split")["cuda"]["config"]
    assert config.removesuffix(", input lines kept in L2").endswith(", 16-byte vectors"), config
    info = cute_transpose.explain(x, dims)["cuda"]
    assert (info["kernel"] == "split") == (runs_split or scattered), info
    assert any(why in info["reason"] for why in SCATTERED_REASONS) == scattered, info["reason"]
    assert ("sides chain" in info["reason"]) == (runs_split and not scattered), info["reason"]


# The split kernel's tiles keep the square tile's size and take the aspect (square, tall or wide)
# that the Tile kernel's score prefers over the two-dim sides (choose.cpp, split_shape); narrow
# and short tiles run by name only. Float32, ratio to clone on the H200:
@pytest.mark.parametrize("shape, dims, tile", [
    ((32, 64, 8, 7, 8, 7), (0, 2, 4, 3, 5, 1), "tall"),      # m = 64 x 7, n = 7 x 8: tall 0.84, square 0.65
    ((32, 512, 16, 4, 16, 4), (0, 2, 4, 3, 5, 1), "tall"),   # n = 4 x 16: tall 0.98, square 0.69
    ((64, 8, 8, 2, 2, 256), (0, 5, 1, 3, 2, 4), "wide"),     # m = 2 x 8: wide 0.75, square 0.52
    ((32, 64, 16, 16, 16, 16), (0, 2, 4, 3, 5, 1), "square"),  # square tiles full: 0.97
])
def test_split_tiles_keep_their_size_and_take_the_aspect_that_fills_them(shape, dims, tile):
    x = torch.empty(shape, device="meta")
    config = cute_transpose.explain(x, dims, kernel="split", gpu="NVIDIA H200")["cuda"]["config"]
    assert config.startswith(f"{tile} tiles of"), config


def test_split_runs_only_where_its_square_tiles_are_more_than_a_quarter_full():
    """As the tuning tables timed it: n = 7 x 4 fills 22% of a square tile's 128 columns (of a
    tall tile's 64, 44%), so split is not offered, though tall tiles ran 0.67 of clone on the
    H200 and ATen's copy 0.44."""
    x = torch.empty(32, 128, 4, 7, 4, 7, device="meta")
    with pytest.raises(RuntimeError, match="its square tiles would be less than a quarter full"):
        cute_transpose.explain(x, (0, 2, 4, 3, 5, 1), kernel="split", gpu="NVIDIA H200")


# A broadcast input whose distinct bytes fit in 64 KiB, of a dtype of up to 4 bytes, runs gather
# where the table picks ATen's copy (choose.cpp, broadcast_gather): every load hits the cache
# and gather's 16-byte stores set the pace. Sizes are just beyond small work (2^20).
BROADCAST_GATHER_CASES = [  # (kept shape, expanded shape, dims, dtype, runs gather; "fill" or "sectors" where that rule comes first)
    ((1, 34), (40000, 34), (1, 0), torch.uint8, "fill"),                  # 34 bytes, in output rows that repeat one
    ((1, 188, 5), (1200, 188, 5), (2, 0, 1), torch.float32, True),         # 3760 bytes
    ((53, 476, 1), (53, 476, 48), (1, 2, 0), torch.uint8, True),           # 25228 bytes
    ((7, 1, 3), (7, 60000, 3), (1, 2, 0), torch.float16, "sectors"),       # 42 bytes, lanes sharing sectors
    ((1, 99318), (27, 99318), (1, 0), torch.float16, False),               # 198636 bytes
    ((3783, 19, 1), (3783, 19, 20), (2, 1, 0), torch.uint8, False),        # 71877 bytes
    ((2, 2, 1), (2, 2, 300000), (0, 2, 1), torch.float32, "fill"),         # output rows that repeat one
    ((1, 7, 3), (60000, 7, 3), (0, 2, 1), torch.float64, False),           # 8-byte dtype
    ((1, 4), (2**17, 4), (1, 0), torch.bfloat16, False),                   # small work
    ((6, 1, 5), (6, 60000, 5), (1, 0, 2), torch.float32, "near"),          # the copy route: the H100's near_broadcast
]


def broadcast_id(case):
    return f"{'x'.join(map(str, case[1]))}-{''.join(map(str, case[2]))}-{dtype_id(case[3])}"


@pytest.mark.parametrize("case", BROADCAST_GATHER_CASES, ids=broadcast_id)
def test_gather_runs_broadcast_inputs_whose_bytes_fit_the_cache(case):
    kept, shape, dims, dtype, runs = case
    x = torch.empty(kept, dtype=dtype, device="meta").expand(shape)
    info = cute_transpose.explain(x, dims)["cuda"]
    if runs == "fill":  # output rows of 48 bytes or more that repeat one element (fill_takes_broadcast_rows)
        assert info["kernel"] == "fill", info
        return
    if runs == "sectors":  # gather's lanes share sectors (gather_takes_shared_sectors)
        assert info["kernel"] == "gather" and "share sectors in the input" in info["reason"], info
        return
    if runs == "near":  # not the cache's rule: the H100's for inputs whose neighbours lie near
        assert "every load hits the cache" not in info["reason"] and "neighbours lie near" in info["reason"], info
        return
    assert (info["kernel"] == "gather") == runs, info
    assert ("whose every load hits the cache" in info["reason"]) == runs, info["reason"]


# On the H100 (choose.cpp, near_broadcast), broadcast picks of ATen's copy of elements of up to 4
# bytes run gather at any footprint on the copy route, or where the least output distance between
# elements the input reads with a nonzero stride under one sector (the reach) is 2-1023 elements
# and the input's rows hold 64 bytes or more; the H200 keeps ATen's copy.
NEAR_BROADCAST_CASES = [  # (kept shape, expanded shape, dims, dtype, runs gather on the H100)
    ((7, 1, 21, 130), (7, 202, 21, 130), (2, 0, 1, 3), torch.float32, True),           # the copy route
    ((1, 31, 22527), (12, 31, 22527), (2, 0, 1), torch.bfloat16, True),                  # reach 372
    ((2, 58, 1, 95, 119), (2, 58, 42, 95, 119), (3, 2, 4, 1, 0), torch.uint8, True),     # reach 116
    ((412, 2432, 1), (412, 2432, 5), (2, 1, 0), torch.float32, True),                    # reach 412
    ((6097, 47, 1), (6097, 47, 13), (2, 1, 0), torch.uint8, False),                      # reach 6097
    ((113354, 1, 7), (113354, 4, 7), (2, 1, 0), torch.bfloat16, False),                 # reach 1
    ((1, 5, 3699, 31), (38, 5, 3699, 31), (3, 0, 2, 1), torch.uint8, False),            # reach 5, input rows of 31 bytes
    ((2, 1, 3, 24913, 12), (2, 2, 3, 24913, 12), (3, 4, 1, 0, 2), torch.float64, False),  # 8-byte elements
]


@pytest.mark.parametrize("case", NEAR_BROADCAST_CASES, ids=broadcast_id)
def test_gather_runs_broadcast_picks_whose_neighbours_lie_near_on_the_h100(case):
    kept, shape, dims, dtype, runs = case
    x = torch.empty(kept, dtype=dtype, device="meta").expand(shape)
    h100, h200 = (cute_transpose.explain(x, dims, gpu=gpu)["cuda"] for gpu in (None, "NVIDIA H200"))
    assert h200["kernel"] == "aten", h200
    assert h100["kernel"] == ("gather" if runs else "aten"), h100
    assert ("neighbours lie near" in h100["reason"]) == runs, h100["reason"]


@needs_cuda
@pytest.mark.parametrize("case", [c for c in BROADCAST_GATHER_CASES if c[4] in (True, "sectors", "near")] +
                         [c for c in NEAR_BROADCAST_CASES if c[4]], ids=broadcast_id)
def test_broadcast_inputs_that_run_gather_write_every_element(case):
    kept, shape, dims, dtype, _ = case
    x = random_tensor(kept, dtype, "cuda").expand(shape)
    ref = reference(x, dims)
    out = run_poisoned(lambda t: torch.ops.cute_transpose.permute(t, list(dims)), x, ref.shape)
    assert_bits_equal(out, ref)


# Batches of small matrices, each whole and in order on both sides (choose.cpp,
# gather_takes_dense_batches): 2^20 elements or more of up to 8 bytes, 1024 matrices or more, of
# up to 1 KiB (4 KiB where the pick would be ATen's copy or padded), run gather on every sm_90 GPU.
DENSE_BATCH_CASES = [  # (shape, dims, dtype, sliced x[1:] of one matrix more, the GPUs whose pick is gather)
    ((131072, 16, 16), (0, 2, 1), torch.float32, False, "both"),     # 1 KiB matrices
    ((1 << 20, 8, 8), (0, 2, 1), torch.float16, False, "both"),      # 128 bytes
    ((66000, 33, 17), (0, 2, 1), torch.float32, False, "both"),      # 2244 bytes: the table picks padded (lean, which takes padded's emptier tiles, ran them at half gather's speed)
    ((4, 20000, 16, 24), (0, 1, 3, 2), torch.float32, False, "both"),  # a batch of two dims, merged
    ((45768, 31, 7), (0, 2, 1), torch.float16, True, "both"),        # the input starts one matrix in (the table's gather)
    ((70000, 16, 64), (0, 2, 1), torch.bfloat16, False, ""),         # 2 KiB in 16-byte vectors: lean's
    ((70000, 8, 8), (0, 2, 1), torch.complex128, False, ""),         # 16-byte elements
    ((65536, 8, 8, 2), (0, 2, 1, 3), torch.float64, False, ""),     # float64 pairs, widened to 16-byte elements
    ((8, 100, 100, 16, 16), (0, 2, 1, 4, 3), torch.float32, False, ""),  # the batch out of order
    ((1000, 16, 16), (0, 2, 1), torch.float32, False, ""),           # small work: 2^18 elements
    ((1000, 32, 33), (0, 2, 1), torch.uint8, False, ""),             # under 1024 matrices
    ((2000, 40, 40), (0, 2, 1), torch.float32, False, ""),           # 6400-byte matrices
]
DENSE_BATCH_RULE = "each whole and in order on both sides"  # its reason, in explain()


def dense_batch_id(case):
    return f"{'x'.join(map(str, case[0]))}-{''.join(map(str, case[1]))}-{dtype_id(case[2])}{'-sliced' if case[3] else ''}"


def dense_batch_input(case, device):
    shape, _, dtype, sliced, _ = case
    if device == "meta":
        base = torch.empty((shape[0] + sliced, *shape[1:]), dtype=dtype, device="meta")
    else:
        base = random_tensor((shape[0] + sliced, *shape[1:]), dtype, device)
    return base[1:] if sliced else base


@pytest.mark.parametrize("gpu", ["H100", "H200"])
@pytest.mark.parametrize("case", DENSE_BATCH_CASES, ids=dense_batch_id)
def test_gather_runs_batches_of_small_dense_matrices(case, gpu):
    info = cute_transpose.explain(dense_batch_input(case, "meta"), case[1], gpu=f"NVIDIA {gpu}")["cuda"]
    if case[4] in ("both", gpu):
        assert info["kernel"] == "gather", info
    else:
        assert DENSE_BATCH_RULE not in info["reason"], info["reason"]


@needs_cuda
@pytest.mark.parametrize("case", [c for c in DENSE_BATCH_CASES if c[4] == "both"], ids=dense_batch_id)
def test_batches_of_small_dense_matrices_transpose_every_element(case):
    x = dense_batch_input(case, "cuda")
    ref = reference(x, case[1])
    out = run_poisoned(lambda t: torch.ops.cute_transpose.permute(t, list(case[1])), x, ref.shape)
    assert_bits_equal(out, ref)


def test_only_aten_runs_on_the_cpu():
    x = random_tensor((5, 7), torch.float32)
    assert_bits_equal(torch.ops.cute_transpose._permute_with(x, [1, 0], "aten"), reference(x, (1, 0)))
    for name in ("tile", "tile/tall"):
        with pytest.raises(RuntimeError, match="CUDA tensors only"):
            torch.ops.cute_transpose._permute_with(x, [1, 0], name)


def test_kernel_names_are_the_candidates():
    assert set(KERNELS) == {"rows", "tile", "split", "interleave", "box", "tma", "pipelined", "realign", "gather",
                            "lean", "words", "fill", "lanes", "stage", "padded", "aten"}
    assert set(cute_transpose.VARIANTS) == {"naive_coalesced_read", "naive_coalesced_write", "bank_conflict_read",
                                            "bank_conflict_write", "padded", "swizzled", "tma",
                                            "pipelined"}


#
# explain()
#

CLASS_KEY = re.compile(r"^[ct]\.e(1|2|4|8|16)\.o[0-4](\.i[0-4])?\.w(0|1|2|4|8|16)(\.f[12])?(\.I[eg]?)?(\.b)?(\.s)?$")


def test_explain_on_the_cpu_reports_aten_and_the_sm90_choice():
    x = torch.empty(8, 3, 64, 64, dtype=torch.uint8)
    info = cute_transpose.explain(x, (0, 2, 3, 1))
    assert info["device"] == "cpu" and info["kernel"] == "aten"
    assert info["route"] == "transpose"
    assert info["dims"] == [[8, 3 * 64 * 64, 3 * 64 * 64], [64 * 64, 1, 3], [3, 64 * 64, 1]]  # H, W merged
    cuda = info["cuda"]
    assert cuda["arch"] == 90 and cuda["kernel"] in KERNELS
    assert CLASS_KEY.match(cuda["class"]), cuda["class"]
    assert cuda["class"].startswith("t.e1.o0.i4.")  # 3 bytes out, 4096 bytes in
    assert cuda["reason"]


def meta_view(shape, dtype, view):
    """A meta tensor of `shape`: plain (None), "gap" (a one-element gap after each innermost
    run), "offset" (starting one index into dim 0), "step" (every other element along the last
    dim) or "expand" (broadcast along dim 0)."""
    if view == "gap":
        return torch.empty(shape[:-1] + (shape[-1] + 1,), dtype=dtype, device="meta").narrow(-1, 1, shape[-1])
    if view == "offset":
        return torch.empty((shape[0] + 1,) + shape[1:], dtype=dtype, device="meta")[1:]
    if view == "step":
        return torch.empty(shape[:-1] + (2 * shape[-1],), dtype=dtype, device="meta")[..., ::2]
    if view == "expand":
        return torch.empty((1,) + shape[1:], dtype=dtype, device="meta").expand(shape)
    return torch.empty(shape, dtype=dtype, device="meta")


def h100_and_h200(x, dims):
    """What the chooser picks for x.permute(dims) on an H100 and on an H200."""
    return cute_transpose.explain(x, dims)["cuda"], cute_transpose.explain(x, dims, gpu="NVIDIA H200")["cuda"]


def check_h200_moves(x, dims, on_h200, why, on_h100="aten", then=None):
    """x.permute(dims) runs `on_h100` on an H100 and `on_h200` on an H200, for a reason that
    says `why`; where on_h200 is None, the H200 keeps the H100's pick. The H200's choice.
    then="words": on both GPUs the words kernel then takes that pick (words_takes_elements),
    and says so after the pick's own reason."""
    h100, h200 = h100_and_h200(x, dims)
    if then is not None:
        assert h100["kernel"] == h200["kernel"] == then, (h100, h200)
        assert all(f"run {then}" in info["reason"] for info in (h100, h200)), (h100, h200)
        assert on_h200 is None or why in h200["reason"], h200
        return h200
    moved = why in h200["reason"]
    if on_h200 is None:
        assert h200["kernel"] == h100["kernel"] and not moved, (h100, h200)
    else:
        assert h100["kernel"] == on_h100, h100
        assert h200["kernel"] == on_h200 and moved, h200
    return h200


def check_sm90_moves(x, dims, to, why, keep=None):
    """x.permute(dims) runs `to` on both sm_90 GPUs (an H100, an H200), for a reason that says
    `why`; where `to` is None, neither says it and both run the same kernel (`keep`, where given).
    Both GPUs' choices, the H100's first."""
    h100, h200 = h100_and_h200(x, dims)
    assert h100["kernel"] == h200["kernel"], (h100, h200)
    for info in (h100, h200):
        assert info["kernel"] == (to or keep or info["kernel"]), info
        assert (why in info["reason"]) == (to is not None), info
    return h100, h200


# On the H100, the tile, lean, split and interleave (aligned vector mode) kernels' loads of 16-byte
# vectors ask the caches to keep the input's lines (evict_last) where the output takes 128 MiB or
# more (choose.cpp, keeps_inputs): not under it, not with narrower loads, not in the interleave
# kernel's other modes, not on the H200 (not measured there).
@pytest.mark.parametrize("shape, dims, dtype, kernel, kept", [
    ((8192, 4096), (1, 0), torch.float32, "tile", True),          # 128 MiB
    ((8192, 4092), (1, 0), torch.float32, "tile", False),         # just under
    ((75, 75, 96, 96), (1, 0, 3, 2), torch.float32, "lean", True),
    ((11600, 11600), (1, 0), torch.uint8, "lean", True),
    ((11584, 11584), (1, 0), torch.uint8, "lean", False),          # 127.97 MiB
    ((120, 7271, 204), (2, 1, 0), torch.uint8, "tile", False),     # 4-byte vectors
    ((250, 8, 60, 18, 25), (1, 4, 0, 3, 2), torch.float32, "lean", False),  # 4-byte loads
    ((305, 433, 25, 4), (2, 0, 3, 1), torch.complex128, "split", True),       # 202 MiB
    ((69, 217, 125, 3), (2, 0, 3, 1), torch.complex128, "split", False),      # 86 MiB
    ((256, 224, 224, 3), (0, 3, 1, 2), torch.float32, "interleave", True),    # 147 MiB, unpacked
    ((3, 10208240), (1, 0), torch.float64, "interleave", True),               # packed
    ((256, 224, 224, 2), (0, 3, 1, 2), torch.float32, "interleave", False),   # 98 MiB
    ((512, 3, 299, 299), (0, 2, 3, 1), torch.uint8, "interleave", False),     # realigned vectors
    ((4, 5243, 5719), (1, 2, 0), torch.complex128, "interleave", False),      # element mode
])
def test_large_transposes_keep_their_input_lines_on_the_h100(shape, dims, dtype, kernel, kept):
    x = torch.empty(shape, dtype=dtype, device="meta")
    h100, h200 = h100_and_h200(x, dims)
    assert h100["kernel"] == kernel, h100
    assert ("input lines kept in L2" in h100["config"]) == kept, h100
    assert "kept" not in h200["config"], h200


# The ladder's tma and pipelined kernels follow the same rule: tma's 16-byte loads, and
# pipelined's TMA loads through their cache hint.
@pytest.mark.parametrize("kernel", ["tma", "pipelined"])
@pytest.mark.parametrize("shape, dtype, kept", [
    ((8192, 4096), torch.float32, True),     # 128 MiB
    ((8192, 4092), torch.float32, False),    # just under
    ((16384, 8192), torch.uint8, True),
    ((16384, 8176), torch.uint8, False),
])
def test_tma_and_pipelined_loads_keep_input_lines_by_the_same_rule(kernel, shape, dtype, kept):
    x = torch.empty(shape, dtype=dtype, device="meta")
    h100 = cute_transpose.explain(x, (1, 0), kernel=kernel)["cuda"]
    h200 = cute_transpose.explain(x, (1, 0), kernel=kernel, gpu="NVIDIA H200")["cuda"]
    assert h100["kernel"] == h200["kernel"] == kernel, (h100, h200)
    assert ("input lines kept in L2" in h100["config"]) == kept, h100
    assert "kept" not in h200["config"], h200


# On the H100, the tile and lean kernels that keep their input lines walk m-tiles first wherever
# the output's rows are no longer than the input's (choose.cpp, kept_m_first): not tall
# transposes, not those under 128 MiB, not where the n-tiles pass blockIdx.y's limit in the lean
# kernel. The H200 walks by its own rule (m-tiles first where there are at least as many of
# them: tested below), not this one.
@pytest.mark.parametrize("shape, dims, dtype, kernel, h100, h200", [
    ((4096, 8192), (1, 0), torch.float32, "tile", True, True),
    ((8192, 8192), (1, 0), torch.float32, "tile", True, True),      # square: 128 m-tiles, 64 n-tiles
    ((8192, 8192), (1, 0), torch.bfloat16, "tile", True, True),
    ((8192, 4096), (1, 0), torch.float32, "tile", False, True),     # tall
    ((4096, 8188), (1, 0), torch.float32, "tile", False, True),     # just under 128 MiB: plain loads
    ((144, 1044448), (1, 0), torch.float32, "tile", True, False),   # 0.838 -> 0.956 of clone
    ((2096, 217152), (1, 0), torch.uint8, "lean", True, False),     # 0.576 -> 0.774
    ((972528, 176), (1, 0), torch.bfloat16, "lean", False, True),   # m-first: 0.928 -> 0.698
    ((3, 705824, 336), (0, 2, 1), torch.uint8, "lean", False, True),
    ((2, 11456, 4240), (0, 2, 1), torch.bfloat16, "tile", False, False),  # tall, more n-tiles: 0.943 -> 0.912
    ((64, 4200000), (1, 0), torch.uint8, "lean", False, False),     # 65625 n-tiles
])
def test_kept_transposes_walk_m_first_where_output_rows_are_no_longer(shape, dims, dtype, kernel, h100, h200):
    x = torch.empty(shape, dtype=dtype, device="meta")
    on = {gpu: cute_transpose.explain(x, dims, kernel=kernel, gpu=gpu)["cuda"] for gpu in (None, "NVIDIA H200")}
    for gpu, m_first in ((None, h100), ("NVIDIA H200", h200)):
        assert on[gpu]["kernel"] == kernel, on[gpu]
        assert ("m-tiles first" in on[gpu]["config"]) == m_first, (gpu, on[gpu])


def sanitizer_kept_cases():
    """scripts/sanitize_cases.py's KEPT: the sanitizers' cases of loads that keep input lines."""
    import importlib.util
    path = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "sanitize_cases.py"
    spec = importlib.util.spec_from_file_location("sanitize_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.KEPT


# The sanitizers' kept-load cases are ones that the H100's rule keeps, in the kernel each names,
# so that a change of rule cannot leave the kept loads unwatched.
@pytest.mark.parametrize("shape, dims, dtype, kernel", sanitizer_kept_cases())
def test_the_sanitizers_kept_cases_keep_their_input_lines(shape, dims, dtype, kernel):
    x = torch.empty(shape, dtype=dtype, device="meta")
    h100 = cute_transpose.explain(x, dims, kernel=kernel)["cuda"]
    assert h100["kernel"] == kernel, h100
    assert "input lines kept in L2" in h100["config"], h100


@needs_cuda
@pytest.mark.parametrize("shape, dims, dtype, kernel", [
    ((8200, 4100), (1, 0), torch.float32, "tile"),              # partial tiles on both edges
    ((17, 1000, 4104), (0, 2, 1), torch.bfloat16, "tile"),
    ((75, 75, 96, 100), (1, 0, 3, 2), torch.float32, "lean"),   # partial tiles
    ((11600, 11600), (1, 0), torch.uint8, "lean"),
    ((2000, 8400), (1, 0), torch.float64, "tile"),
    ((4100, 8200), (1, 0), torch.float32, "tile"),              # large tiles m-tiles first, partial edges
    ((11, 1100, 1100), (0, 2, 1), torch.complex128, "tile"),
    ((8200, 4100), (1, 0), torch.float32, "tma"),               # partial tiles on both edges
    ((4, 4104, 4104), (0, 2, 1), torch.bfloat16, "tma"),
    ((8200, 4104), (1, 0), torch.float32, "pipelined"),         # partial tiles, ring wraps
    ((4, 4104, 4104), (0, 2, 1), torch.bfloat16, "pipelined"),
    ((11600, 11600), (1, 0), torch.uint8, "pipelined"),         # vector stores
    ((305, 433, 25, 4), (2, 0, 3, 1), torch.complex128, "split"),
    ((15, 15, 32, 15, 15, 32), (1, 4, 0, 5, 3, 2), torch.float32, "split"),
    ((256, 224, 224, 3), (0, 3, 1, 2), torch.float32, "interleave"),  # unpacked
    ((3, 10208240), (1, 0), torch.float64, "interleave"),             # packed
])
def test_kept_input_lines_write_every_element(shape, dims, dtype, kernel):
    """The loads that keep their lines (128 MiB and up, on sm_90 GPUs but the H200) move the same
    bits as plain ones, tiles at the edges included, in every kernel that has them."""
    x = random_tensor(shape, dtype, "cuda")
    info = cute_transpose.explain(x, dims, kernel=kernel)
    kept = torch.cuda.get_device_capability() == (9, 0) and "H200" not in torch.cuda.get_device_name()
    assert ("input lines kept in L2" in info["config"]) == kept, info
    assert_permute_by_writes_every_element(kernel, x, dims)


# The rules that differ by GPU model (choose.cpp, device_rules): on an H200 the tile and lean
# kernels walk m-tiles first where there are at least as many m-tiles as n-tiles and the output's
# runs are whole sectors, and row copies in 16-byte vectors take blocks of 128 threads. The
# H100's rules are the default, for any other name.
@pytest.mark.parametrize("shape, dims, dtype, kernel, on_h200", [
    ((32768, 8192), (1, 0), torch.bfloat16, "tile", ", m-tiles first"),  # tall: 256 m-tiles, 64 n-tiles
    ((8192, 8192), (1, 0), torch.bfloat16, "tile", ", m-tiles first"),  # square: as many of each
    ((8192, 32768), (1, 0), torch.bfloat16, "tile", ""),  # wide: n-tiles first everywhere
    ((2048, 1024), (1, 0), torch.float32, "lean", ", m-tiles first"),
    ((1024, 2048), (1, 0), torch.float32, "lean", ""),
    ((1500, 1500), (1, 0), torch.float32, "lean", ""),  # 6000-byte output rows split sectors: as on the H100
    ((8, 4096, 4096), (1, 0, 2), torch.bfloat16, "rows", ", blocks of 128 threads"),
    ((8, 4096, 1023), (1, 0, 2), torch.bfloat16, "rows", ""),  # 2-byte vectors: the H100's blocks
])
def test_explain_applies_the_h200s_own_rules_only_for_an_h200(shape, dims, dtype, kernel, on_h200):
    x = torch.empty(shape, dtype=dtype, device="meta")
    h100 = cute_transpose.explain(x, dims, kernel=kernel)["cuda"]
    h200 = cute_transpose.explain(x, dims, kernel=kernel, gpu="NVIDIA H200")["cuda"]
    other = cute_transpose.explain(x, dims, kernel=kernel, gpu="NVIDIA H100 80GB HBM3")["cuda"]
    assert h100["config"] == other["config"]
    # (the H100 alone keeps the input lines of large transposes, and walks those of them whose
    # output rows are no longer m-tiles first: tested above)
    own = h100["config"].replace(", input lines kept in L2, m-tiles first", "").replace(", input lines kept in L2", "")
    assert "m-tiles first" not in own and "blocks of" not in own
    assert h200["config"] == own + on_h200
    assert h200["kernel"] == h100["kernel"] == kernel


# ... and the work that the H100 runs in the tile kernel's large tiles (full matrices of 2^28
# uint8 or 2^27 float32 elements and up; mostly full float32 ones too) runs on an H200 in wide
# tiles (uint8) or the lean kernel's large tiles (float32). Where the lean kernel cannot run it,
# the tile kernel takes the shape its rule picks without the large one.
@pytest.mark.parametrize("shape, dims, dtype, h100, h200", [
    ((32768, 32768), (1, 0), torch.uint8, "tile 256x256 large tile", "tile 64x256 wide tile"),
    ((4, 8192, 8192), (0, 2, 1), torch.uint8, "tile 256x256 large tile", "tile 64x256 wide tile"),
    ((8192, 32768), (1, 0), torch.float32, "tile 64x128 large tile, 512 threads", "lean 64x64 large tile"),
    ((43408, 1216), (1, 0), torch.float32, "tile 64x128 large tile, 512 threads", "lean 64x64 large tile"),  # mostly full
    ((2 ** 23, 128), (1, 0), torch.float32, "tile 64x128 large tile, 512 threads", "tile 64x128 square tile"),  # 2^17 m-tiles: no lean grid
    ((8192, 8192), (1, 0), torch.uint8, "lean 128x128 large tile", "lean 128x128 large tile"),  # under 4096 large tiles
    ((32768, 32768), (1, 0), torch.bfloat16, "tile 128x128 square tile", "tile 128x128 square tile"),
])
def test_explain_on_an_h200_runs_large_tiles_work_in_wide_or_lean_tiles(shape, dims, dtype, h100, h200):
    x = torch.empty(shape, dtype=dtype, device="meta")
    on = {gpu: cute_transpose.explain(x, dims, gpu=gpu)["cuda"] for gpu in (None, "NVIDIA H200")}
    for gpu, expected in ((None, h100), ("NVIDIA H200", h200)):
        assert f"{on[gpu]['kernel']} {on[gpu]['config']}".startswith(expected), (gpu, on[gpu])
    assert ("lean's: run lean" in on["NVIDIA H200"]["reason"]) == (on["NVIDIA H200"]["kernel"] != on[None]["kernel"])


# Row copies in vectors under 16 bytes run the gather kernel on both sm_90 GPUs where the rows
# kernel's divisions per byte pass gather's cost: vectors of one 4-byte element over 3 dims or
# more, of one 8-byte element over 5, narrow vectors of 2-byte and wider elements over 6 (a rule
# found on the H200 and held out on the H100).
@pytest.mark.parametrize("shape, dims, dtype, pick", [
    ((64, 224, 224, 3), (0, 2, 1, 3), torch.float32, "gather"),  # 4-byte vectors, 4 dims
    ((4096, 33, 97), (1, 0, 2), torch.float32, "gather"),  # 3 dims
    ((33, 252, 318, 10), (2, 1, 0, 3), torch.float32, "rows"),  # 8-byte vectors of two elements
    ((512, 9, 21, 31), (0, 2, 1, 3), torch.float64, "rows"),  # 8-byte elements over 4 dims
    ((19, 7, 27, 4, 36, 25), (4, 1, 2, 0, 3, 5), torch.float64, "gather"),  # over 5
    ((10, 7, 28, 5, 17, 2, 74), (1, 4, 5, 2, 0, 3, 6), torch.bfloat16, "gather"),  # 4-byte vectors of two over 6
    ((19, 27, 16, 26, 31, 36), (0, 2, 4, 1, 3, 5), torch.float64, "rows"),  # 16-byte vectors
    ((21, 8, 24, 12, 41, 12), (4, 1, 3, 2, 0, 5), torch.uint8, "rows"),  # 1-byte elements: never
])
def test_explain_runs_narrow_rows_over_many_dims_in_gather(shape, dims, dtype, pick):
    x = torch.empty(shape, dtype=dtype, device="meta")
    check_sm90_moves(x, dims, pick if pick == "gather" else None, "runs them in gather", keep="rows")


# On an H200, transposes of 8-byte elements whose input rows lie off the 16-byte grid, into output
# rows of whole vectors, run the lean kernel (one-element loads, 16-byte stores).
# 4-byte elements, aligned rows and output rows off the grid keep the H100's pick.
@pytest.mark.parametrize("shape, dims, dtype, offset, on_h200", [
    ((1000, 3001), (1, 0), torch.float64, 0, "lean"),  # odd rows
    ((6, 3791, 379), (2, 0, 1), torch.float64, 3, "lean"),  # an offset slice
    ((16, 3930, 203), (0, 2, 1), torch.complex64, 1, "lean"),  # 8-byte elements of another dtype
    ((2, 1872, 10852), (2, 0, 1), torch.float32, 3, None),  # 4-byte elements
    ((1000, 3000), (1, 0), torch.float64, 0, None),  # input rows on the grid
    ((3001, 1000), (1, 0), torch.float64, 0, "tile"),  # output rows off the grid: realign's, moved to tile (below)
])
def test_explain_on_an_h200_runs_8_byte_rows_off_the_grid_in_lean(shape, dims, dtype, offset, on_h200):
    base = torch.empty(shape[:-1] + (shape[-1] + offset,), dtype=dtype, device="meta")
    x = base.narrow(-1, offset, shape[-1])
    h100, h200 = h100_and_h200(x, dims)
    if on_h200 != "lean":
        assert h200["kernel"] == (on_h200 or h100["kernel"]) and "runs them in lean" not in h200["reason"], (h100, h200)
        return
    assert h100["kernel"] != "lean" and h200["kernel"] == on_h200, (h100, h200)
    assert "8-byte loads, 16-byte stores" in h200["config"]
    assert "runs them in lean" in h200["reason"]


# ... and transposes of 4- and 8-byte elements that the table gives the tile kernel in 16-byte
# vectors run the lean kernel's own tiles on an H200, or, for 4-byte elements where lean is not
# offered (more than 3 batch dims), the split kernel. 2-byte elements, and 8-byte ones that lean
# cannot run, keep the tile kernel.
@pytest.mark.parametrize("shape, dims, dtype, on_h200", [
    ((75, 12, 96, 608), (1, 0, 3, 2), torch.float32, "lean"),  # the TTC suite's
    ((8192, 8192), (1, 0), torch.float64, "lean"),
    ((32, 256, 56, 56), (0, 2, 3, 1), torch.complex64, "lean"),  # 8-byte elements of another dtype
    ((37, 2, 64, 8, 18, 108), (4, 1, 5, 3, 0, 2), torch.float32, "split"),  # 4 batch dims
    ((37, 2, 64, 8, 18, 108), (4, 1, 5, 3, 0, 2), torch.int32, "split"),
    ((15, 15, 32, 15, 5, 112), (1, 4, 0, 5, 3, 2), torch.float64, "tile"),
    ((16, 64, 128, 96), (2, 0, 3, 1), torch.bfloat16, "tile"),
])
def test_explain_on_an_h200_gives_the_tile_kernels_4_and_8_byte_work_away(shape, dims, dtype, on_h200):
    x = torch.empty(shape, dtype=dtype, device="meta")
    h100, h200 = h100_and_h200(x, dims)
    assert h100["kernel"] == "tile" and "16-byte vectors" in h100["config"], h100
    assert h200["kernel"] == on_h200, h200
    moved = "on a GPU whose rule runs them in lean's own tiles" in h200["reason"] or \
        "on a GPU whose rule runs them in split" in h200["reason"]
    assert moved == (on_h200 != "tile"), h200


# ... and unpacks of 2-3 channels of 8-byte elements (or 4 of 16-byte elements into output rows
# of 600 or more) that the table gives the interleave kernel one element per access run the
# split kernel on an H200 where the channels' run continues into the next dim. Four 8-byte
# channels, 4-byte elements, 16-byte elements into short rows, channels with gaps between pixels
# (an offset slice) and broadcast inputs keep the H100's pick. Since split was timed again on the
# H100 (docs/PERFORMANCE.md, "The split kernel timed again on the H100"), the table itself ranks
# split first for such unpacks: both GPUs run split, and the rule has nothing left to move.
@pytest.mark.parametrize("shape, dims, dtype, view, on_h200", [
    ((9119, 7035, 2), (2, 1, 0), torch.float64, None, "split"),  # the sweep's
    ((40, 19273, 10, 3), (2, 0, 3, 1), torch.float64, None, "split"),
    ((9119, 7035, 2), (2, 1, 0), torch.complex64, None, "split"),  # 8-byte elements of another dtype
    ((9119, 7035, 4), (2, 1, 0), torch.float64, None, None),  # four channels
    ((9119, 7035, 2), (2, 1, 0), torch.float32, None, None),  # 4-byte elements
    ((2157, 1797, 4), (2, 1, 0), torch.complex128, None, "split"),  # 16-byte elements, rows of 2157
    ((600, 4462, 4), (2, 1, 0), torch.complex128, None, "split"),  # rows of 600
    ((599, 4462, 4), (2, 1, 0), torch.complex128, None, None),  # rows of 599
    ((25, 138, 1712, 5, 4), (2, 0, 4, 3, 1), torch.complex128, None, None),  # rows of 5
    ((9119, 7035, 2), (2, 1, 0), torch.float64, "gap", None),  # a gap after each pixel
    ((9119, 7035, 2), (2, 1, 0), torch.float64, "expand", None),  # broadcast
])
def test_explain_on_an_h200_runs_dense_8_and_16_byte_unpacks_in_split(shape, dims, dtype, view, on_h200):
    x = meta_view(shape, dtype, view)
    h100, h200 = h100_and_h200(x, dims)
    moved = "channels of 8- or 16-byte elements whose runs continue" in h200["reason"]
    if on_h200 is None:
        assert h200["kernel"] == h100["kernel"] and not moved, (h100, h200)
        return
    assert h100["kernel"] == h200["kernel"] == on_h200 and not moved, (h100, h200)
    assert h100["reason"].startswith("tuned for sm_90: class ") and " ranks split," in h100["reason"], h100
    assert f"{x.element_size()}-byte vectors" in h200["config"]


# Both sm_90 GPUs run row copies (the innermost dim stays innermost) that the table gives ATen's
# copy in the gather kernel where the output's rows hold 16 bytes or more (a rule found on the
# H200 and held out on the H100). Shorter rows, broadcast inputs and transposes keep their pick.
@pytest.mark.parametrize("shape, dims, dtype, view, moved_to", [
    ((498, 4, 1993), (1, 0, 2), torch.float32, None, "gather"),
    ((148, 5, 8985), (1, 0, 2), torch.bfloat16, None, "gather"),
    ((42, 327, 321, 3), (1, 0, 2, 3), torch.uint8, None, "gather"),  # rows of 963 bytes (merged)
    ((2, 6, 29, 6, 40, 27), (4, 0, 1, 3, 2, 5), torch.uint8, None, "gather"),  # rows of 27 bytes
    ((25, 21, 1445, 11), (2, 0, 1, 3), torch.uint8, "offset", None),  # rows of 11 bytes
    ((313, 21, 36, 7, 3), (3, 1, 2, 0, 4), torch.uint8, None, None),  # rows of 3 bytes
    ((148, 5, 8985), (1, 0, 2), torch.bfloat16, "expand", None),  # broadcast
    ((100, 156, 2, 4, 104, 12), (1, 5, 0, 4, 2, 3), torch.float32, "offset", None),  # a transpose
])
def test_explain_runs_row_copies_of_aten_in_gather(shape, dims, dtype, view, moved_to):
    check_sm90_moves(meta_view(shape, dtype, view), dims, moved_to, "that the table gives ATen's copy")


# Both GPUs run transposes of 8-byte elements that the table gives ATen's copy in the split kernel
# where that copy would load a sector for every element: the input's dims whose strides stay
# within one 32-byte sector lie 512 or more elements apart in the output. Other element sizes,
# closer dims and broadcast inputs keep their pick, the same on both.
@pytest.mark.parametrize("shape, dims, dtype, view, moved", [
    ((53, 36, 2, 46, 8), (1, 4, 0, 2, 3), torch.float64, None, True),
    ((2, 2351, 93, 21, 4), (4, 3, 2, 1, 0), torch.float64, "offset", True),
    ((599, 55, 26, 4), (3, 1, 0, 2), torch.int64, None, True),
    ((2022, 56, 2, 52, 8), (1, 4, 0, 2, 3), torch.complex64, None, True),
    ((523, 967, 29, 4), (1, 3, 0, 2), torch.float64, None, True),
    ((322, 128, 2, 13, 5), (1, 0, 4, 3, 2), torch.float64, None, False),  # 26 apart in the output
    ((10, 3, 22, 2348, 4), (4, 1, 3, 2, 0), torch.float64, "expand", False),  # broadcast
    ((32, 52, 40, 29, 10), (2, 4, 0, 1, 3), torch.float32, None, False),
    ((45, 18, 124, 24), (3, 1, 0, 2), torch.bfloat16, None, False),
    ((5013, 47, 85, 2), (3, 1, 0, 2), torch.complex128, None, False),
])
def test_explain_runs_scattered_8_byte_transposes_of_aten_in_split(shape, dims, dtype, view, moved):
    x = meta_view(shape, dtype, view)
    for info in check_sm90_moves(x, dims, "split" if moved else None, "that ATen's copy would load a sector each"):
        assert info["route"] == "transpose", info


# On an H200 transposes never run the box kernel on 2-byte elements (bfloat16, float16, pairs of
# uint8): the chooser passes over it to the next kernel of the class's ranking. Other element sizes keep it.
@pytest.mark.parametrize("shape, dims, dtype, view, on_h200", [
    ((16, 2, 407, 456), (3, 2, 1, 0), torch.bfloat16, None, "gather"),
    ((41245, 2, 16, 16), (1, 3, 0, 2), torch.bfloat16, None, "gather"),
    ((14, 6679, 21, 2, 2, 4), (3, 4, 5, 0, 2, 1), torch.float16, "offset", "interleave"),
    ((119074, 2, 20), (2, 1, 0), torch.bfloat16, None, "aten"),
    ((4, 5, 614602, 2), (3, 0, 1, 2), torch.complex128, "step", None),
])
def test_explain_on_an_h200_passes_over_box_for_2_byte_elements(shape, dims, dtype, view, on_h200):
    h200 = check_h200_moves(meta_view(shape, dtype, view), dims, on_h200, "box (2-byte elements", on_h100="box")
    assert h200["kernel"] == (on_h200 or "box"), h200


# Both sm_90 GPUs run the lean kernel, rather than the padded one the table picks, for 4- and
# 8-byte elements where lean's tiles would be under half full (where they are fuller, the table
# ranked both; a rule found on the H200 and held out on the H100). Lean must fit (at most 3 batch dims); 16-byte elements keep padded (so would broadcast
# inputs, but the table gives padded none with lean's tiles under half full).
@pytest.mark.parametrize("shape, dims, dtype, view, moved_to", [
    ((846, 716, 11), (2, 1, 0), torch.int32, None, "lean"),
    ((41, 5, 1457, 2, 17), (4, 3, 2, 1, 0), torch.complex64, "step", "lean"),
    ((942, 2, 41, 2, 11), (3, 2, 1, 4, 0), torch.float32, "offset", "lean"),
    ((2, 1575, 48, 9), (3, 0, 1, 2), torch.float32, "step", "lean"),
    ((1645, 32, 12, 46), (2, 1, 3, 0), torch.float32, None, None),  # lean's tiles half full or more
    ((16961, 106), (1, 0), torch.float64, "offset", None),
    ((14, 17, 9, 9, 40, 33), (3, 0, 2, 1, 5, 4), torch.float32, "offset", None),  # 4 batch dims
    ((2, 67795, 11, 5), (3, 0, 2, 1), torch.complex128, "step", None),  # 16-byte elements
])
def test_explain_runs_padded_picks_with_emptier_lean_tiles_in_lean(shape, dims, dtype, view, moved_to):
    check_sm90_moves(meta_view(shape, dtype, view), dims, moved_to, "lean tiles under half full", keep="padded")


# ... and run the interleave kernel, rather than ATen's copy, for 2-byte elements that it runs one
# element per access (skipping gaps between pixels or not) into output rows of 2048 bytes or
# more, and for 1-byte ones where it skips gaps -- on an H200 also where ATen's copy is next
# after the box kernel it passes over (the H100 runs box there). Shorter output rows, 1-byte
# elements without gaps and broadcast inputs (interleave refuses to skip their gaps) keep ATen's
# copy.
@pytest.mark.parametrize("shape, dims, dtype, view, moved_to, on_h100", [
    ((3, 2, 36, 4758, 6, 4), (0, 2, 1, 5, 4, 3), torch.float16, None, "interleave", "aten"),  # gaps
    ((8, 4, 818, 23, 2), (0, 4, 3, 1, 2), torch.bfloat16, None, "interleave", "aten"),
    ((28, 2456, 5, 13, 2, 2), (4, 3, 2, 0, 1, 5), torch.uint8, "offset", "interleave", "aten"),  # uint8 pairs
    ((2, 9, 5692, 26, 8), (1, 3, 0, 4, 2), torch.bfloat16, None, "interleave", "box"),  # box on the H100
    ((3, 836539, 2, 2), (3, 0, 1, 2), torch.bfloat16, None, "interleave", "aten"),  # no gaps
    ((123, 1524, 7, 2), (2, 0, 3, 1), torch.bfloat16, None, "interleave", "aten"),
    ((30758, 111, 2, 3), (3, 1, 2, 0), torch.uint8, None, "interleave", "aten"),  # 1-byte elements
    ((7, 2786, 13, 15, 2, 2), (0, 5, 4, 2, 3, 1), torch.uint8, "offset", "interleave", "aten"),
    ((77, 635, 2, 12, 15), (0, 3, 2, 4, 1), torch.float16, None, None, "aten"),  # output rows under 2048 bytes
    ((260623, 4, 13), (2, 0, 1), torch.uint8, None, None, "aten"),  # 1-byte elements without gaps
    ((3, 56333, 3, 3, 2), (4, 3, 2, 0, 1), torch.bfloat16, "expand", None, "aten"),  # broadcast
])
def test_explain_runs_1_and_2_byte_aten_picks_in_interleave(shape, dims, dtype, view, moved_to, on_h100):
    x = meta_view(shape, dtype, view)
    why = "interleave runs one element per access, on a GPU"
    if on_h100 == "box":
        check_h200_moves(x, dims, moved_to, why, on_h100)
    else:
        check_sm90_moves(x, dims, moved_to, why, keep="aten")


# ... and run the gather kernel, rather than interleave, for 1-byte planes that interleave would
# pack one element per access skipping gaps. Unpacks, and 2-byte packs, keep interleave.
@pytest.mark.parametrize("shape, dims, dtype, view, on_h200", [
    ((2, 29, 531044), (2, 1, 0), torch.uint8, "offset", "gather"),
    ((5, 3, 23, 2, 33, 255), (4, 5, 2, 0, 3, 1), torch.uint8, None, "gather"),
    ((2, 5, 68, 6, 5854), (2, 4, 0, 1, 3), torch.uint8, None, "gather"),
    ((2, 13, 97, 12, 108, 16), (0, 5, 4, 3, 1, 2), torch.uint8, "offset", None),  # 16-interleaved -> planes
    ((2, 4, 2436, 3, 50, 8), (3, 4, 5, 2, 0, 1), torch.bfloat16, "offset", None),  # 2-byte elements
])
def test_explain_on_an_h200_packs_gapped_1_byte_planes_in_gather(shape, dims, dtype, view, on_h200):
    x = meta_view(shape, dtype, view)
    h200 = check_h200_moves(x, dims, on_h200, "1-byte planes packed one element per access", on_h100="interleave")
    assert h200["kernel"] == (on_h200 or "interleave"), h200


# Both GPUs run the split kernel, rather than the table's gather, where gather would load a sector
# for each element (the input's dims within one sector lie 2048 or more elements apart in the
# output) of an output of 16 MiB or more (6 MiB or more for 1- and 2-byte elements). Gather
# picks whose sector-sharing dims lie nearer stay, smaller ones stay, and so do those split
# cannot run.
@pytest.mark.parametrize("shape, dims, dtype, view, moved", [
    ((363, 23, 2, 4178), (3, 1, 0, 2), torch.float16, None, True),
    ((2, 2884, 49331), (2, 1, 0), torch.bfloat16, None, True),
    ((2471, 23, 2, 27, 3), (1, 3, 4, 0, 2), torch.int32, None, True),
    ((4, 7, 8, 120, 6623), (4, 0, 3, 2, 1), torch.uint8, "expand", True),
    ((2, 41, 4, 2, 9507), (4, 2, 3, 1, 0), torch.bfloat16, None, False),  # input rows 656 apart
    ((5, 4, 120594, 9, 14), (0, 2, 1, 4, 3), torch.float16, None, False),  # 9 apart
    ((136, 6, 66, 35), (3, 1, 0, 2), torch.bfloat16, "step", False),  # split cannot run it
    ((20, 2, 5, 22, 2, 169), (5, 1, 4, 3, 2, 0), torch.uint8, None, False),  # 1.5 MiB
    ((12, 1284, 4, 71), (3, 1, 0, 2), torch.int16, None, True),  # 2-byte elements, 8.4 MiB
    ((19, 70, 4, 4, 7, 86), (5, 3, 0, 4, 2, 1), torch.uint8, None, True),  # 12.2 MiB
    ((18, 52, 3, 12, 86), (4, 1, 0, 3, 2), torch.int16, None, False),  # 5.5 MiB: under 6 MiB
    ((6, 4468, 126), (2, 1, 0), torch.float32, None, False),  # 4-byte elements, 12.9 MiB
])
def test_explain_runs_scattered_gather_picks_in_split(shape, dims, dtype, view, moved):
    why = "gather would load a sector for each element"
    check_sm90_moves(meta_view(shape, dtype, view), dims, "split" if moved else None, why, keep="gather")


# On an H200 the gapped-pack rule's gather (uint8 planes, which the H100 keeps in interleave) takes
# the same rule, at any size.
@pytest.mark.parametrize("shape, dims, dtype, view", [
    ((2, 13844, 2113), (2, 1, 0), torch.uint8, None),
    ((4, 2, 4, 1266, 2574), (0, 1, 4, 3, 2), torch.uint8, None),
    ((3, 1144, 3, 6496), (3, 2, 1, 0), torch.uint8, "offset"),
    ((3, 819, 2408), (2, 1, 0), torch.uint8, None),  # 5.9 MiB: gapped packs at any size
])
def test_explain_on_an_h200_runs_scattered_gapped_packs_in_split(shape, dims, dtype, view):
    x = meta_view(shape, dtype, view)
    h200 = check_h200_moves(x, dims, "split", "gather would load a sector for each element", on_h100="interleave")
    assert "1-byte planes packed" in h200["reason"], h200  # the gapped-pack rule's gather, then this one's split


@needs_cuda
@pytest.mark.parametrize("shape, dims, dtypes", [
    ((12, 1284, 4, 71), (3, 1, 0, 2), (torch.int16, torch.bfloat16)),
    ((19, 70, 4, 4, 7, 86), (5, 3, 0, 4, 2, 1), (torch.uint8, torch.int8)),
    ((41, 3, 2, 146, 190), (1, 4, 0, 3, 2), (torch.bfloat16, torch.float16)),
])
@pytest.mark.parametrize("by_name", [False, True])
def test_moved_scattered_gather_picks_write_every_element(shape, dims, dtypes, by_name):
    """1- and 2-byte transposes of 6-16 MiB moved off gather (split_takes_scattered_gather), by the
    device's own pick and by the split kernel's name."""
    for dtype in dtypes:
        x = view_of("contiguous", shape, dtype, "cuda")
        assert_permute_by_writes_every_element("split" if by_name else None, x, dims)


# ... and run ATen's copy, rather than gather, for row copies of 4-byte elements in runs of one
# to three whose neighbours within a sector (the input's other dims read with strides under 32
# bytes) lie 8192 or more elements apart in the output. Nearer neighbours, broadcast inputs,
# 8-byte elements and runs of 16 bytes keep the H200's pick.
@pytest.mark.parametrize("shape, dims, dtype, view, on_h200", [
    ((19604, 3, 242, 3), (1, 2, 0, 3), torch.float32, None, "aten"),  # neighbours 58812 apart
    ((118450, 226, 3), (1, 0, 2), torch.int32, None, "aten"),  # 355350 apart
    ((36, 6020, 2, 53, 3), (3, 1, 0, 2, 4), torch.float32, "offset", "aten"),
    ((80833, 5, 3, 2), (2, 0, 1, 3), torch.float32, "step", "aten"),  # runs of one element
    ((241, 3257, 3), (1, 0, 2), torch.int32, None, None),  # neighbours 723 apart
    ((2128, 582, 3), (1, 0, 2), torch.int32, "expand", None),  # broadcast
    ((19604, 3, 242, 3), (1, 2, 0, 3), torch.float64, None, None),  # 8-byte elements
    ((19604, 3, 242, 4), (1, 2, 0, 3), torch.float32, None, None),  # runs of 16 bytes
])
def test_explain_on_an_h200_runs_far_short_runs_in_aten(shape, dims, dtype, view, on_h200):
    x = meta_view(shape, dtype, view)
    h100, h200 = h100_and_h200(x, dims)
    moved = "neighbours within a sector lie 8192" in h200["reason"]
    assert moved == (on_h200 is not None), h200
    if on_h200:
        assert h200["kernel"] == on_h200 and h100["kernel"] != on_h200, (h100, h200)
    else:
        assert "neighbours within a sector" not in h100["reason"], h100


# ... and run gather, rather than split, for transposes whose output rows chain two dims into a
# run under 128 elements with the input's rows (an input side of one dim) next to it in the
# output, moved one element per access (8-byte elements whose rows lie off the 16-byte grid,
# 16-byte ones) in tiles under 80% full: the (C, K, N) -> (N, K, C) family. Fuller tiles, 8-byte
# elements two per 16-byte vector, and input rows with other dims between them and the run keep split.
@pytest.mark.parametrize("shape, dims, dtype, view, on_h200", [
    ((5, 4, 1096287), (2, 1, 0), torch.float64, None, "gather"),  # (5 x 4) runs, 8-byte vectors: 62% full
    ((3, 7, 203146), (2, 1, 0), torch.float64, None, "gather"),
    ((6, 3, 418373), (2, 1, 0), torch.float64, None, "gather"),
    ((3, 3, 1098684), (2, 1, 0), torch.complex128, None, "gather"),  # (3 x 3) runs: 56% full
    ((2, 4, 10111072), (2, 1, 0), torch.complex128, None, "gather"),
    ((2, 8, 749633), (2, 1, 0), torch.complex128, None, None),  # (2 x 8) runs fill the tiles
    ((15, 2, 500001), (2, 1, 0), torch.complex128, None, None),  # 94% full
    ((6, 5, 2088558), (2, 1, 0), torch.float64, None, None),  # 8-byte elements in 16-byte vectors
    ((5, 4, 1096286), (2, 1, 0), torch.float64, None, None),
    ((4, 6, 1215, 421), (3, 2, 1, 0), torch.complex64, None, None),  # the input's rows 1215 runs apart
])
def test_explain_on_an_h200_runs_short_split_rows_in_gather(shape, dims, dtype, view, on_h200):
    x = meta_view(shape, dtype, view)
    h200 = check_h200_moves(x, dims, on_h200, "split tiles under 80% full", on_h100="split")
    assert h200["kernel"] == (on_h200 or "split"), h200


# Row copies whose runs lie side by side in the input and 1 MiB or more apart in the output run
# rows or gather with their blocks in the neighbours-together order on both sm_90 GPUs
# (choose.cpp, reads_runs_together; found on the H200, held out on the H100): runs under 256
# bytes, the next run within two runs' length, accesses of 8 bytes or more.
@pytest.mark.parametrize("shape, dims, dtype, view, together", [
    ((15, 15, 32, 15, 32, 16), (4, 1, 0, 3, 2, 5), torch.float32, None, True),  # TTC: 64-byte runs, 6.9 MB apart
    ((5728355, 3, 4), (1, 0, 2), torch.float64, None, True),  # 32-byte runs
    ((40475, 4, 2, 3, 6, 14), (4, 0, 2, 3, 1, 5), torch.complex64, None, True),  # 112-byte runs, 8-byte vectors
    ((96, 75, 96, 80), (2, 1, 0, 3), torch.float32, None, False),  # runs of 320 bytes
    ((8, 3, 14, 16, 14, 16), (0, 2, 4, 1, 3, 5), torch.float32, None, False),  # the next run 3 KB on (ViT patches)
    ((193, 163, 36, 74), (2, 0, 1, 3), torch.bfloat16, None, False),  # 148-byte runs in 4-byte vectors
    ((5728355, 3, 4), (1, 0, 2), torch.float64, "step", False),  # no run: every other element
    ((15, 15, 32, 15, 32, 16), (4, 1, 0, 3, 2, 5), torch.float32, "expand", False),  # broadcast
])
def test_explain_reads_far_runs_together(shape, dims, dtype, view, together):
    x = meta_view(shape, dtype, view)
    h100, h200 = h100_and_h200(x, dims)
    said = "neighbouring runs read together"
    assert h100["kernel"] == h200["kernel"], (h100, h200)
    for info in (h100, h200):
        assert (said in info["config"]) == together and ("neighbours-together" in info["reason"]) == together, info
        # the name that runs the same through _permute_with and in autotune_cache()
        assert info["name"] == info["kernel"] + ("/together" if together else ""), info
        assert not together or info["kernel"] in ("rows", "gather"), info


@needs_cuda
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("shape, dims, view", [
    ((4100, 3, 24), (1, 0, 2), "contiguous"),  # runs of 24 elements; the next run is the output's outermost dim
    ((3, 2052, 5, 24), (0, 2, 1, 3), "contiguous"),  # an outer dim around it: slices of 2052 runs, 3 times over
    ((3, 2052, 5, 24), (0, 2, 1, 3), "offset"),  # the same one element into its storage
])
@pytest.mark.parametrize("kernel", ["rows/together", "gather/together"])
def test_runs_read_together_write_every_element(dtype, shape, dims, view, kernel):
    """rows and gather with their blocks in the neighbours-together order (BlockOrder,
    cuda/index_walk.cuh): block b takes stretch b / n of slice b % n, where the slices are the
    next run's dim; slices that end in a part stretch, and outer dims around them."""
    x = view_of(view, shape, dtype, "cuda")
    assert cute_transpose.explain(x, dims)["route"] == "copy"  # runs of 24 bytes or more: not widened away
    ref = reference(x, dims)
    out = run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, list(dims), kernel), x, ref.shape)
    assert_bits_equal(out, ref)


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=dtype_id)
@pytest.mark.parametrize("a, b, n", [(3, 3, 116509), (3, 4, 87382), (5, 4, 52429), (2, 8, 65537)])
@pytest.mark.parametrize("kernel", [None, "split/wide", "gather"])
def test_short_split_rows_write_every_element(dtype, a, b, n, kernel):
    """(a, N, b), a transposed view of (a, b, N), permuted (1, 2, 0): output runs of a x b
    elements from planes of N, beyond small work; by the device's own pick (gather on an H200
    where the split tiles would be under 80% full), and by name."""
    x = random_tensor((a, b, n), dtype, "cuda").transpose(1, 2)
    dims = (1, 2, 0)
    assert_permute_by_writes_every_element(kernel, x, dims)


# ... and of that family, 16-byte elements over four or more dims (after merging) run ATen's
# copy, whose index walk costs less than gather's there; three dims, and 8-byte elements over
# four, stay with gather.
@pytest.mark.parametrize("shape, dims, dtype, on_h200", [
    ((12, 2, 4, 2, 13635), (2, 1, 4, 0, 3), torch.complex128, "aten"),  # five dims
    ((9, 4, 2, 429263), (1, 3, 0, 2), torch.complex128, "aten"),
    ((10, 26, 4, 27, 239), (1, 3, 4, 2, 0), torch.complex128, "aten"),  # (27, 239) merge: four dims
    ((3, 3, 1098684), (2, 1, 0), torch.complex128, "gather"),  # three dims
    ((2, 15, 3, 152999), (3, 1, 2, 0), torch.complex128, "gather"),  # (2, 15) merge: three dims
    ((9, 4, 2, 429263), (1, 3, 0, 2), torch.float64, "gather"),  # 8-byte elements
])
def test_explain_on_an_h200_runs_short_split_rows_over_four_dims_in_aten(shape, dims, dtype, on_h200):
    h100, h200 = h100_and_h200(meta_view(shape, dtype, None), dims)
    assert h100["kernel"] == "split" and "split tiles under 80% full" in h200["reason"], (h100, h200)
    assert h200["kernel"] == on_h200 and ("over four or more dims" in h200["reason"]) == (on_h200 == "aten"), h200


# On an H200 the padded kernel's 1-byte transposes run lean where lean is offered in its square
# tile (choose.cpp, lean_takes_padded_bytes): work under 2^22 elements, not broadcast. Where
# lean's loads and stores are both one element (rows unit-stride), the words kernel then takes
# them, on both GPUs, as it takes the padded kernel's (words_takes_elements).
@pytest.mark.parametrize("shape, dims, dtype, view, on_h200, then", [
    ((157, 29, 3, 191), (0, 3, 1, 2), torch.uint8, None, "lean", "words"),  # the held-out sweep's
    ((1000, 3001), (1, 0), torch.uint8, None, "lean", "words"),  # the matrix table's
    ((1000, 3001), (1, 0), torch.bool, "offset", "lean", "words"),
    ((686, 1842), (1, 0), torch.uint8, "step", "lean", None),  # n strided: no words
    ((81, 49184), (1, 0), torch.int8, None, "lean", "h100 words"),  # 16-byte loads along 49184: words on the H100 only
    ((9018, 532), (1, 0), torch.uint8, None, None, "words"),  # 2^22 elements or more: lean's tall tiles
    ((85, 65, 5254), (0, 2, 1), torch.int8, None, None, "words"),  # 2^24.7 elements, though lean would run its square tile
    ((4, 692, 395), (0, 2, 1), torch.uint8, "expand", None, "words"),  # broadcast
])
def test_explain_on_an_h200_runs_padded_bytes_in_lean(shape, dims, dtype, view, on_h200, then):
    x = meta_view(shape, dtype, view)
    if then == "h100 words":  # the H100's padded pick goes to words; the H200's lean one loads vectors
        h100, h200 = h100_and_h200(x, dims)
        assert h100["kernel"] == "words" and h200["kernel"] == "lean" and "16-byte loads" in h200["config"], (h100, h200)
        return
    h200 = check_h200_moves(x, dims, on_h200, "lean runs in its square tile,", on_h100="padded", then=then)
    assert h200["kernel"] == (then or on_h200 or "padded"), h200


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bool], ids=dtype_id)
@pytest.mark.parametrize("shape, dims, view", [
    ((157, 29, 3, 191), (0, 3, 1, 2), "contiguous"),
    ((1000, 3001), (1, 0), "offset"),  # rows off the 16-byte grid, one byte into the storage
    ((686, 1842), (1, 0), "stepped"),  # every other byte
    ((81, 49184), (1, 0), "contiguous"),  # 81 output bytes a row
])
@pytest.mark.parametrize("kernel", [None, "lean", "lean/square"])
def test_padded_bytes_in_lean_write_every_element(dtype, shape, dims, view, kernel):
    """1-byte transposes the H200 runs in lean's square tiles (lean_takes_padded_bytes), by the
    device's own pick and by name."""
    x = view_of(view, shape, dtype, "cuda")
    assert_permute_by_writes_every_element(kernel, x, dims)


# On an H200 the realign kernel's 8-byte transposes run the tile kernel in 8-byte vectors; its
# 2- and 4-byte ones into output rows of 256-2047 bytes from input rows of 2048 or more, and its
# 1-byte ones into output rows of 2048 bytes or more from input rows of 256 or more, run the
# padded kernel (choose.cpp, realign_gives_way); other rows keep realign.
@pytest.mark.parametrize("shape, dims, dtype, view, on_h200", [
    ((3001, 1000), (1, 0), torch.float64, None, "tile"),  # output rows off the 16-byte grid
    ((27725, 607), (1, 0), torch.float64, "offset", "tile"),  # rows off the grid on both sides
    ((10929, 2207), (1, 0), torch.complex64, None, "tile"),  # 8-byte elements of another dtype
    ((1417, 2, 2884), (1, 2, 0), torch.int64, None, "tile"),  # a batch of two 1417 x 2884 matrices
    ((1405, 23, 2979), (1, 2, 0), torch.float64, None, "tile"),  # a batch of 23
    ((3001, 1001), (1, 0), torch.float64, "offset", "tile"),
    ((1001, 3, 1203), (2, 1, 0), torch.float64, "offset", "tile"),
    ((170, 679912), (1, 0), torch.float32, None, "padded"),  # 680-byte output rows
    ((400, 56487), (1, 0), torch.int32, "offset", "padded"),
    ((691, 65239), (1, 0), torch.bfloat16, None, "padded"),  # 1382-byte output rows
    ((8485, 1790), (1, 0), torch.float32, None, None),  # output rows of 2048 bytes or more
    ((8190, 8192), (1, 0), torch.bfloat16, None, None),
    # 1-byte elements: the words kernel then takes them on both GPUs (words_takes_elements)
    ((9001, 3001), (1, 0), torch.uint8, None, "padded"),  # 1-byte elements, rows of 2048 bytes or more
    ((2, 9001, 3001), (0, 2, 1), torch.uint8, "expand", "padded"),  # a broadcast input (its batch dim)
    ((116500, 410), (1, 0), torch.int8, None, "padded"),  # 410-byte input rows
    ((7439, 4309), (1, 0), torch.uint8, "offset", "padded"),
    ((105887, 165), (1, 0), torch.int8, None, None),  # input rows under 256 bytes
    ((9001, 8001), (1, 0), torch.uint8, None, "padded"),  # 69 MiB: words as well
])
def test_explain_on_an_h200_moves_realign_picks(shape, dims, dtype, view, on_h200):
    x = meta_view(shape, dtype, view)
    then = "words" if dtype.itemsize == 1 else None
    h200 = check_h200_moves(x, dims, on_h200, "rather than realign", on_h100="realign", then=then)
    assert h200["kernel"] == (then or on_h200 or "realign"), h200
    assert on_h200 != "tile" or "8-byte vectors" in h200["config"], h200


EIGHT_BYTES = (torch.float64, torch.int64, torch.complex64)


@needs_cuda
@pytest.mark.parametrize("shape, dims, view, dtypes", [
    ((119, 61, 3, 79), (0, 2, 3, 1), "contiguous", EIGHT_BYTES),
    ((3001, 1000), (1, 0), "contiguous", EIGHT_BYTES),
    ((3001, 1001), (1, 0), "offset", EIGHT_BYTES),  # rows off the grid on both sides, one row into the storage
    ((1001, 3, 1203), (2, 1, 0), "offset", EIGHT_BYTES),
    ((86, 63999), (1, 0), "contiguous", (torch.int32, torch.float32)),  # into padded
    ((400, 56487), (1, 0), "offset", (torch.int32,)),
    ((252, 41209), (1, 0), "contiguous", (torch.bfloat16, torch.int16)),
    ((9001, 3001), (1, 0), "contiguous", (torch.uint8, torch.int8)),  # 1-byte elements into padded
    ((7439, 4309), (1, 0), "offset", (torch.uint8,)),
    ((2, 9001, 3001), (0, 2, 1), "expand", (torch.int8,)),
])
@pytest.mark.parametrize("by_name", [False, True])
def test_moved_realign_picks_write_every_element(shape, dims, view, dtypes, by_name):
    """Transposes the H200 moves off realign (realign_gives_way), by the device's own pick and by
    the name of the kernel an H200 runs them in."""
    for dtype in dtypes:
        x = view_of(view, shape, dtype, "cuda")
        kernel = ("tile" if x.element_size() == 8 else "padded") if by_name else None
        assert_permute_by_writes_every_element(kernel, x, dims)


# On an H200 the padded kernel's 8-byte transposes into rows of 256-2047 bytes on both sides run
# lean where it is offered, else split, and those from a broadcast input into rows of 2048 bytes
# or more on both sides run the tile kernel (choose.cpp, padded_gives_way); others keep padded.
# Since split was timed again on the H100, its table gives split, not padded, such transposes
# whose rows lie on the 16-byte grid; stepped ones still come to padded.
@pytest.mark.parametrize("shape, dims, dtype, view, on_h200", [
    ((2, 60, 8, 61, 59), (4, 0, 2, 3, 1), torch.complex64, "step", "lean"),
    ((6, 1100, 48, 50), (3, 1, 0, 2), torch.complex64, "step", "lean"),
    ((801, 67, 2, 65), (0, 2, 3, 1), torch.float64, "step", "lean"),  # off the 16-byte grid
    ((4, 35, 10, 48, 7, 48), (1, 2, 5, 0, 4, 3), torch.int64, "step", "lean"),
    ((14, 2, 79, 18, 3, 38), (3, 1, 5, 0, 4, 2), torch.float64, "step", None),  # neither lean nor split
    ((3, 3001, 1473), (0, 2, 1), torch.float64, "expand", "tile"),  # broadcast, rows of 2048 bytes or more
    ((3, 30442, 335), (0, 2, 1), torch.int64, "expand", "tile"),
    ((3, 4137, 1987), (0, 2, 1), torch.complex64, "expand", "tile"),
    ((3, 22849, 3, 2, 25), (0, 2, 3, 4, 1), torch.float64, "expand", None),  # 1200-byte input rows
    ((16961, 106), (1, 0), torch.float64, "offset", None),  # 16961-element output rows
    ((801, 67, 2, 65), (0, 2, 3, 1), torch.float32, None, None),  # 4-byte elements
])
def test_explain_on_an_h200_moves_padded_picks(shape, dims, dtype, view, on_h200):
    x = meta_view(shape, dtype, view)
    h200 = check_h200_moves(x, dims, on_h200, "rather than padded", on_h100="padded")
    assert h200["kernel"] == (on_h200 or "padded"), h200


@needs_cuda
@pytest.mark.parametrize("shape, dims, view, dtypes, kernel", [
    ((801, 67, 2, 65), (0, 2, 3, 1), "contiguous", EIGHT_BYTES, "lean"),
    ((801, 67, 2, 65), (0, 2, 3, 1), "offset", (torch.complex64,), "lean"),
    ((801, 67, 2, 65), (0, 2, 3, 1), "stepped", (torch.float64,), "lean"),
    ((14, 2, 79, 18, 3, 38), (3, 1, 5, 0, 4, 2), "contiguous", EIGHT_BYTES, "split"),
    ((3, 3001, 1473), (0, 2, 1), "expand", EIGHT_BYTES, "tile"),
    ((3, 30442, 335), (0, 2, 1), "expand", (torch.int64,), "tile"),
])
@pytest.mark.parametrize("by_name", [False, True])
def test_moved_padded_picks_write_every_element(shape, dims, view, dtypes, kernel, by_name):
    """Transposes the H200 moves off padded (padded_gives_way), by the device's own pick and by
    the name of the kernel an H200 runs them in."""
    for dtype in dtypes:
        x = view_of(view, shape, dtype, "cuda")
        assert_permute_by_writes_every_element(kernel if by_name else None, x, dims)


# On both sm_90 GPUs the tile kernel's 4-byte transposes one element per access (4-byte vectors:
# output rows of 16-63 elements off the 16-byte grid) run lean where gather's reads would be
# scattered (the input's rows 2048 or more elements apart in the output), though lean's tiles are
# under half full there, and gather where they lie nearer (choose.cpp, element_tiles_give_way;
# found on the H200, held out on the H100). Where lean cannot run them (more than three batch
# dims) they keep tile.
@pytest.mark.parametrize("shape, dims, dtype, view, moved_to", [
    ((17, 1124, 231), (2, 1, 0), torch.int32, None, "lean"),  # input rows 19108 apart in the output
    ((823, 3, 18, 134), (1, 3, 0, 2), torch.float32, None, "lean"),
    ((17, 54, 336, 80), (3, 2, 1, 0), torch.int32, None, "lean"),
    ((7, 19, 19, 23, 65), (4, 2, 0, 3, 1), torch.float32, "offset", "lean"),  # the sweep's
    ((17, 5, 2, 75, 262), (1, 3, 2, 4, 0), torch.float32, None, "gather"),  # input rows 17 apart
    ((3, 22, 16, 19, 70), (2, 0, 1, 4, 3), torch.int32, None, "gather"),
    ((4617, 17, 3, 118), (2, 0, 3, 1), torch.int32, None, "gather"),
    ((9, 3, 21, 2, 15, 72), (5, 0, 4, 1, 3, 2), torch.int32, None, None),  # four batch dims: no lean
])
def test_explain_moves_element_tile_picks(shape, dims, dtype, view, moved_to):
    x = meta_view(shape, dtype, view)
    _, h200 = check_sm90_moves(x, dims, moved_to, "4-byte elements one per access in the tile kernel", keep="tile")
    assert moved_to or "4-byte vectors" in h200["config"], h200


@needs_cuda
@pytest.mark.parametrize("shape, dims, view, kernel", [
    ((17, 1124, 231), (2, 1, 0), "contiguous", "lean"),
    ((823, 3, 18, 134), (1, 3, 0, 2), "contiguous", "lean"),
    ((7, 19, 19, 23, 65), (4, 2, 0, 3, 1), "offset", "lean"),
    ((17, 5, 2, 75, 262), (1, 3, 2, 4, 0), "contiguous", "gather"),
    ((4617, 17, 3, 118), (2, 0, 3, 1), "offset", "gather"),
])
@pytest.mark.parametrize("by_name", [False, True])
def test_moved_element_tile_picks_write_every_element(shape, dims, view, kernel, by_name):
    """4-byte transposes the sm_90 GPUs move off the tile kernel's one-element accesses
    (element_tiles_give_way), by the device's own pick and by the name of the kernel they run
    them in."""
    for dtype in (torch.float32, torch.int32):
        x = view_of(view, shape, dtype, "cuda")
        assert_permute_by_writes_every_element(kernel if by_name else None, x, dims)


# On both sm_90 GPUs the table's ATen's copy picks of elements up to 4 bytes run gather where the
# lanes of gather's loads share 32-byte sectors: fewer than 0.9 distinct sectors per lane in its
# first load, at the output's start and middle (choose.cpp, gather_takes_shared_sectors; found on
# the H200, held out on the H100). Lanes a sector each, and 8-byte elements, keep ATen's copy.
@pytest.mark.parametrize("shape, dims, dtype, view, moved_to", [
    ((2, 300001, 2), (2, 1, 0), torch.float32, None, "gather"),  # 2 x 2 pixels: lanes 4 apart in a row
    ((2, 300001, 2), (2, 1, 0), torch.int32, None, "gather"),
    ((240, 36, 4, 24, 4), (0, 3, 1, 4, 2), torch.bfloat16, "offset", "gather"),
    ((24, 27, 13, 85, 3, 6), (2, 4, 1, 3, 5, 0), torch.uint8, "offset", "gather"),
    ((2, 300001, 2), (2, 1, 0), torch.float64, None, None),  # 8-byte elements
    ((3, 200003, 2), (2, 1, 0), torch.int16, None, None),  # a sector a lane
    ((2, 2, 104, 78, 27, 4), (2, 5, 0, 3, 1, 4), torch.float32, None, None),
])
def test_explain_moves_aten_picks_whose_gather_lanes_share_sectors(shape, dims, dtype, view, moved_to):
    check_sm90_moves(meta_view(shape, dtype, view), dims, moved_to, "share sectors in the input", keep="aten")


@needs_cuda
@pytest.mark.parametrize("shape, dims, dtype, view", [
    ((2, 300001, 2), (2, 1, 0), torch.float32, "contiguous"),
    ((2, 300001, 2), (2, 1, 0), torch.int32, "offset"),
    ((240, 36, 4, 24, 4), (0, 3, 1, 4, 2), torch.bfloat16, "offset"),
    ((24, 27, 13, 85, 3, 6), (2, 4, 1, 3, 5, 0), torch.uint8, "offset"),
])
@pytest.mark.parametrize("by_name", [False, True])
def test_moved_aten_picks_whose_gather_lanes_share_sectors_write_every_element(shape, dims, dtype, view, by_name):
    """Transposes the sm_90 GPUs move off ATen's copy where gather's lanes share sectors
    (gather_takes_shared_sectors), by the device's own pick and by the name gather."""
    x = view_of(view, shape, dtype, "cuda")
    assert_permute_by_writes_every_element("gather" if by_name else None, x, dims)


@pytest.mark.parametrize("shape, dims, route", [
    ((64, 32), (1, 0), "transpose"),
    ((4, 6, 64), (1, 0, 2), "copy"),
    ((4, 6, 64), (0, 1, 2), "copy"),
    ((0, 6), (1, 0), "empty"),
])
def test_explain_routes(shape, dims, route):
    info = cute_transpose.explain(torch.empty(shape), dims)
    assert info["route"] == route
    if route != "empty":
        assert CLASS_KEY.match(info["cuda"]["class"])


VECTORS, REALIGNED, ELEMENTS, GAPS = "16-byte vectors", "16-byte vectors, realigned", "one element per access", "gaps"


@pytest.mark.parametrize("shape, dims, view, dtype, mode", [
    ((4, 32, 48, 3), (0, 3, 1, 2), "contiguous", torch.uint8, VECTORS),
    ((4, 3, 32, 48), (0, 2, 3, 1), "contiguous", torch.float32, VECTORS),
    ((1001, 5), (1, 0), "offset", torch.float32, ELEMENTS),   # rows start unaligned
    ((3, 37, 29, 5), (0, 3, 1, 2), "contiguous", torch.int16, ELEMENTS),  # 1073-pixel planes
    ((8, 3, 299, 299), (0, 2, 3, 1), "contiguous", torch.uint8, REALIGNED),  # odd image sides: uint8 realigns
    ((8, 299, 299, 4), (0, 3, 1, 2), "contiguous", torch.uint8, REALIGNED),
    ((4001, 5), (1, 0), "offset", torch.uint8, REALIGNED),
    ((4, 3, 32, 48), (0, 2, 3, 1), "contiguous", torch.complex128, ELEMENTS),
    ((640, 12), (1, 0), "contiguous", torch.float32, ELEMENTS),  # 12 channels: vectors take up to 8
    ((640, 4), (1, 0), "sliced", torch.float32, GAPS),  # x[:, :4] of rows of 64
    ((640, 7), (1, 0), "shifted", torch.float32, ELEMENTS),  # x[:, 1:] of rows of 8: a 4-byte gap, read
    ((640, 7), (1, 0), "shifted", torch.complex128, ELEMENTS),  # 16-byte gaps, read; 8 x 16 bytes a pixel
    ((640, 8), (1, 0), "shifted", torch.complex128, GAPS),  # 9 x 16 bytes: more than the kernel's 128
    ((4096, 3), (1, 0), "sliced", torch.uint8, GAPS),  # x[:, :3] of rows of 64 bytes: a 61-byte gap
    ((4096, 3), (1, 0), "shifted", torch.uint8, ELEMENTS),  # 3 of 4 bytes (RGBA -> RGB)
])
def test_interleave_moves_vectors_where_aligned_and_single_elements_elsewhere(shape, dims, view, dtype, mode):
    info = cute_transpose.explain(view_of(view, shape, dtype, "cpu"), dims, kernel="interleave")["cuda"]
    assert info["kernel"] == "interleave" and (ELEMENTS if mode == GAPS else mode) in info["config"], info
    assert (mode == REALIGNED) == ("realigned" in info["config"]), info
    assert re.search({VECTORS: r"\.I(\.b)?(\.s)?$", REALIGNED: r"\.I(\.b)?(\.s)?$", ELEMENTS: r"\.Ie(\.b)?(\.s)?$",
                      GAPS: r"\.Ig(\.b)?(\.s)?$"}[mode], info["class"]), info["class"]


def unaligned_view(shape, dtype, shift):
    """A random tensor of `shape` whose storage starts `shift` elements into its allocation."""
    flat = random_tensor((math.prod(shape) + shift,), dtype, "cuda")
    return flat[shift:].view(shape)


# The interleave kernel's realigned mode (uint8): planes, batch offsets or the interleaved run
# off the 16-byte grid, each warp's runs cut at both ends (pixel counts that are no multiple of a
# warp's 32 vectors, nor of one vector), storage offsets of 0-3 elements, 2-8 channels, both
# ways. A byte a warp wrote outside its own runs would overwrite a neighbour's, or leave the
# poison. Wider elements take one element per access on the same shapes.
@needs_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64], ids=dtype_id)
@pytest.mark.parametrize("channels", [2, 3, 5, 8])
@pytest.mark.parametrize("pixels, batch", [(1024 + 77, 3), (2047, 2), (3 * 1024 + 1, 2), (5 * 4096 + 9, 2)])
@pytest.mark.parametrize("pack", [True, False], ids=["pack", "unpack"])
@pytest.mark.parametrize("shift", [0, 1, 3])
def test_interleave_realigns_runs_off_the_16_byte_grid(dtype, channels, pixels, batch, pack, shift):
    shape, dims = ((batch, channels, pixels), (0, 2, 1)) if pack else ((batch, pixels, channels), (0, 2, 1))
    x = unaligned_view(shape, dtype, shift)
    ref = reference(x, dims)
    info = cute_transpose.explain(x, dims, kernel="interleave")  # a CUDA tensor: what runs here
    aligned = shift == 0 and (pixels * x.element_size()) % 16 == 0
    mode = VECTORS if aligned else REALIGNED if x.element_size() == 1 else ELEMENTS
    assert info["config"].endswith(mode) or (mode == ELEMENTS and ELEMENTS in info["config"]), info
    torch.full((ref.numel() * ref.element_size(),), 0xA5, dtype=torch.uint8, device="cuda")  # poison
    assert_bits_equal(torch.ops.cute_transpose._permute_with(x, list(dims), "interleave"), ref)


# Realigned mode over whole image batches, both ways: every plane (and every image's
# interleaved run) starts at its own offset from the 16-byte grid, and each warp step writes
# the aligned vectors that start in its 512 pixels, so neighbouring steps must meet exactly; with
# the storage one byte off the grid as well.
@needs_cuda
@pytest.mark.parametrize("channels", [2, 3, 4, 8])
@pytest.mark.parametrize("shift", [0, 1])
@pytest.mark.parametrize("pack", [True, False], ids=["pack", "unpack"])
def test_interleave_realigned_steps_meet(channels, shift, pack):
    shape = (64, channels, 299 * 299) if pack else (64, 299 * 299, channels)
    x = unaligned_view(shape, torch.uint8, shift)
    dims = (0, 2, 1)
    ref = reference(x, dims)
    assert cute_transpose.explain(x, dims, kernel="interleave")["config"].endswith(REALIGNED)
    torch.full((ref.numel(),), 0xA5, dtype=torch.uint8, device="cuda")  # poison
    assert_bits_equal(torch.ops.cute_transpose._permute_with(x, list(dims), "interleave"), ref)


# Element mode reading a warp's run in the aligned 16-byte vectors that cover it (unpacking 2-byte
# elements, and 4-byte ones whose pixels carry gaps read with them): runs that start 0-7 elements
# into a vector, gaps of 0-3 elements before each pixel, pixel counts that end inside a warp's
# run, and a last pixel whose last channel ends the storage (the vector there is read only up to
# it). A wrong element, or one never written, fails the compare against the poisoned output.
@needs_cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=dtype_id)
@pytest.mark.parametrize("channels, stride", [(2, 3), (5, 6), (6, 9), (7, 7)])
@pytest.mark.parametrize("pixels", [601, 1024 + 77, 5 * 1024 + 9])
@pytest.mark.parametrize("shift", [0, 1, 3, 5])
def test_interleave_reads_runs_in_aligned_vectors(dtype, channels, stride, pixels, shift):
    flat = random_tensor((pixels * stride + shift,), dtype, "cuda")
    x = flat[shift:].view(pixels, stride)[:, stride - channels:]  # (pixels, channels), rows `stride` apart
    info = cute_transpose.explain(x, (1, 0), kernel="interleave")
    assert ELEMENTS in info["config"], info
    out = run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, [1, 0], "interleave"), x,
                       (channels, pixels))
    assert_bits_equal(out, reference(x, (1, 0)))


# Element mode unpacking, where it writes its planes in whole aligned spans of 32 elements (the
# lanes shifted back by into_span in cuda/interleave_element.cuh: bfloat16, float32 with gaps
# read) and where it does not: the planes of a batch, of pixel counts 1 to 31 past a multiple of
# 32, start at every offset into a span; the storage starts 0 or 13 elements into its allocation;
# pixels carry gaps read with them, or gaps skipped, or none (16 uint8 channels: the 1-byte
# kernels that address from one base a lane); the last warp's run ends early. A pixel that two
# warps wrote, or that none did, fails the compare against the poisoned output.
@needs_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64, torch.complex128],
                         ids=dtype_id)
@pytest.mark.parametrize("channels, stride", [(5, 7), (3, 40), (7, 7), (16, 16)],
                         ids=["gaps-read", "gaps-skipped", "dense", "dense-16"])
@pytest.mark.parametrize("pixels", [1024 + 1, 2048 + 31, 4096 + 9])
@pytest.mark.parametrize("shift", [0, 13])
def test_interleave_element_mode_writes_every_pixel_once(dtype, channels, stride, pixels, shift):
    if channels * element_size(dtype) > 128:
        pytest.skip("pixels of more than 128 bytes: no interleave kernel")
    batch = 3
    flat = random_tensor((batch * pixels * stride + shift,), dtype, "cuda")
    x = flat[shift:].view(batch, pixels, stride)[..., stride - channels:]  # (batch, pixels, channels)
    info = cute_transpose.explain(x, (0, 2, 1), kernel="interleave")
    if dtype == torch.uint8 and channels == stride <= 8:
        assert info["config"].endswith(REALIGNED), info  # uint8 without gaps: realigned mode, up to 8 channels
        return
    assert ELEMENTS in info["config"], info
    out = run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, [0, 2, 1], "interleave"), x,
                       (batch, channels, pixels))
    assert_bits_equal(out, reference(x, (0, 2, 1)))


# The interleave kernel's blocks (all three modes) shrink from 256 threads towards one warp
# while its grid would have fewer than two blocks an SM: one matrix of 1040 to 2000000 pixels
# lands on each block size on a 132-SM GPU, in 16-byte vectors (pixel counts that keep the
# planes on the 16-byte grid), realigned (uint8 planes off it) and one element per access, both
# ways. A pixel that two blocks wrote, or that none did, fails the compare against the poisoned
# output.
@needs_cuda
@pytest.mark.parametrize("dtype, channels, odd", [(torch.uint8, 3, False), (torch.uint8, 3, True),
                                                 (torch.float32, 4, False), (torch.float32, 5, True),
                                                 (torch.bfloat16, 7, True)], ids=lambda v: str(v))
@pytest.mark.parametrize("pixels", [1040, 30000, 500000, 800000, 2000000])
@pytest.mark.parametrize("pack", [True, False], ids=["pack", "unpack"])
def test_interleave_blocks_shrink_on_small_grids(dtype, channels, odd, pixels, pack):
    pixels += odd
    shape, out_shape = ((channels, pixels), (pixels, channels)) if pack else ((pixels, channels), (channels, pixels))
    x = random_tensor(shape, dtype, "cuda")
    mode = ELEMENTS if odd and dtype != torch.uint8 else REALIGNED if odd else VECTORS
    assert mode in cute_transpose.explain(x, (1, 0), kernel="interleave")["config"]
    out = run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, [1, 0], "interleave"), x, out_shape)
    assert_bits_equal(out, reference(x, (1, 0)))


# The realign kernel: transposes whose rows lie off the 16-byte grid on the input's side, the
# output's, or both; sides that end inside a vector and inside a tile (the first and last vector
# of each output row are stored element by element); batches; storage 0-15 elements into its
# allocation; a last input row that ends the allocation (its last vector is read only up to
# there); stepped views. A wrong byte, or one never written, fails the bit-exact compare against
# the poisoned output.
REALIGN_CASES = [
    ((97, 301), (1, 0), 1),           # both sides odd
    ((2, 129, 263), (0, 2, 1), 3),    # a batch: each matrix at its own offset into a vector
    ((300, 1001), (1, 0), 0),         # output rows aligned for 2-byte elements and wider, input rows not
    ((1001, 300), (1, 0), 5),         # the other way round
    ((3, 40, 1000), (0, 2, 1), 1),    # 40 rows: under a third of a tile along m'
    ((1000, 72), (1, 0), 2),          # 72 columns
    ((67, 130, 131), (1, 2, 0), 7),   # (67, 130 * 131) transposed; stepped, (67, 131) matrices in a batch of 130
    ((5, 41, 2051), (2, 0, 1), 15),   # (5 * 41, 2051) transposed; stepped, a batch of 5 interleaved in the output
    ((2, 160, 1001), (0, 2, 1), 3),   # output rows of 160 elements: whole vectors for every size (register transposes)
    ((48, 2053), (1, 0), 1),          # the same, 48 rows: the tile's m-side mostly empty
]


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64], ids=dtype_id)
@pytest.mark.parametrize("case", REALIGN_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-{''.join(map(str, c[1]))}-s{c[2]}")
def test_realign_moves_rows_off_the_16_byte_grid(dtype, case):
    shape, dims, shift = case

    def check(x):
        ref = reference(x, dims)
        # output rows of whole aligned vectors take the register transposes (phase 2' in cuda/realign.cu)
        aligned = (x.shape[dims[-1]] * x.element_size()) % 16 == 0
        config = cute_transpose.explain(x, dims, kernel="realign")["config"]
        assert ("register transposes" in config) == aligned, config
        torch.full((ref.numel() * ref.element_size(),), 0xA5, dtype=torch.uint8, device="cuda")  # poison
        assert_bits_equal(torch.ops.cute_transpose._permute_with(x, list(dims), "realign"), ref)

    check(unaligned_view(shape, dtype, shift))
    # the last input row ends the allocation: rows of N + 1, the first element of each cut off
    check(random_tensor((*shape[:-1], shape[-1] + 1), dtype, "cuda")[..., 1:])
    # every other matrix (or row) of a tensor one longer: outer strides doubled, offset by one
    check(random_tensor((2 * shape[0] + 1, *shape[1:]), dtype, "cuda")[1::2])


def test_realign_refuses_what_it_cannot_run():
    x = torch.empty(300, 301, dtype=torch.complex128, device="meta")
    with pytest.raises(RuntimeError, match="16-byte elements"):
        torch.ops.cute_transpose._explain(x, [1, 0], 90, "realign")
    x = torch.empty(600, 301, device="meta")[::2]  # rows 602 apart, n unit-stride: runs
    assert json.loads(torch.ops.cute_transpose._explain(x, [1, 0], 90, "realign"))["kernel"] == "realign"
    x = torch.empty(300, 602, device="meta")[:, ::2]  # n strided: no
    with pytest.raises(RuntimeError, match="not unit-stride"):
        torch.ops.cute_transpose._explain(x, [1, 0], 90, "realign")
    x = torch.empty(3000, 6, device="meta")  # 6 columns of 64-element tiles: under a quarter full
    with pytest.raises(RuntimeError, match="a quarter full or less"):
        torch.ops.cute_transpose._explain(x, [1, 0], 90, "realign")


# The lean kernel (small work's transpose): (shape, dims, how the input is made, the vector bytes
# of its loads and stores for 2-byte elements). Batches of 0-3 dims, rows on and off the 16-byte
# grid on either side, edge tiles along m and n, strided and offset views.
LEAN_CASES = [
    ((128, 64), (1, 0), "contiguous", (16, 16)),             # one matrix, whole tiles
    ((8, 12, 128, 64), (0, 1, 3, 2), "contiguous", (16, 16)),  # attention keys transposed: a batch of 96
    ((4, 12, 197, 64), (0, 1, 3, 2), "contiguous", (16, 2)),   # ViT keys: output rows of 197, off the grid
    ((3, 40, 1000), (0, 2, 1), "contiguous", (16, 16)),      # 40 rows: the m-tiles' last one part-full
    ((5, 37, 29), (0, 2, 1), "contiguous", (2, 2)),          # both sides odd
    ((2, 3, 5, 24, 40), (0, 2, 1, 4, 3), "contiguous", (16, 16)),  # three batch dims, interleaved in the output
    ((2, 296, 72), (0, 2, 1), "shifted", (2, 16)),           # input rows of 73 from element 1; the last ends the storage
    ((2, 64, 96), (0, 2, 1), "stepped", (2, 16)),            # n strided: one element per load
    ((6, 48, 72), (2, 0, 1), "contiguous", (16, 16)),        # (6 * 48, 72) transposed, one matrix
    ((7, 3, 61, 8), (1, 0, 3, 2), "offset", (16, 2)),        # n of 8: tiles mostly empty; output rows of 61
    ((70000, 4, 8), (0, 2, 1), "contiguous", (16, 2)),       # more matrices than blockIdx.z holds: two slabs
    ((20, 70, 50, 8, 16), (0, 2, 1, 4, 3), "contiguous", (16, 16)),  # 70,000 over three batch dims: the second slab starts inside each
]


@needs_cuda
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("case", LEAN_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-{''.join(map(str, c[1]))}-{c[2]}")
def test_lean_transposes_every_element(dtype, case):
    shape, dims, view, widths = case
    x = view_of(view, shape, dtype, "cuda")
    ref = reference(x, dims)
    config = cute_transpose.explain(x, dims, kernel="lean")["config"]
    if x.element_size() == 2:  # where 16-byte vectors fit on each side
        assert f"{widths[0]}-byte loads, {widths[1]}-byte stores" in config, config
    for tile in LEAN_SHAPES:  # each tile shape: other edge tiles, other vectors per thread
        out = run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, list(dims), f"lean/{tile}"), x, ref.shape)
        assert_bits_equal(out, ref)


@pytest.mark.parametrize("make, dims, why", [
    (lambda: torch.empty(8, 64, 64), (1, 0, 2), "copy route"),
    (lambda: torch.empty(2, 3, 4, 5, 16, 16)[:, :, :, :, :, :15], (1, 0, 3, 2, 5, 4), "more than 3 batch dims"),
    (lambda: torch.empty(2 ** 23, 3), (1, 0), "more than 65535 m-tiles"),
    (lambda: torch.empty(2, 2 ** 30, dtype=torch.uint8), (1, 0), "offsets beyond 32 bits"),
])
def test_lean_refuses_what_it_cannot_run(make, dims, why):
    with pytest.raises(RuntimeError, match=why):
        torch.ops.cute_transpose._explain(make().to("meta"), list(dims), 90, "lean")


# The words kernel (1- and 2-byte elements off the grid, 4-byte words in shared memory): whole
# tiles (every load issued unpredicated) and edge tiles along m, n or both, batches of 0-3 dims,
# offset, shifted, stepped and broadcast inputs. An element a thread stored outside its tile would
# overwrite a neighbour's, or one it missed leave the poison.
WORDS_SHAPES = ("square", "narrow")  # _permute_with(x, dims, "words/<shape>")
WORDS_CASES = [
    ((1000, 3001), (1, 0), "contiguous"),               # the matrix table's odd matrix: edge tiles on both sides
    ((3001, 1000), (1, 0), "contiguous"),
    ((256, 128), (1, 0), "contiguous"),                 # whole tiles only
    ((3, 149, 151), (0, 2, 1), "contiguous"),           # a batch
    ((2, 3, 5, 67, 45), (0, 2, 1, 4, 3), "contiguous"),  # three batch dims, interleaved in the output
    ((2, 296, 73), (0, 2, 1), "shifted"),               # rows off by one from the allocation; the last ends it
    ((7, 3, 61, 8), (1, 0, 3, 2), "offset"),            # n of 8: tiles mostly empty
    ((4, 130, 67), (0, 2, 1), "expand"),                # a broadcast batch dim
    ((3, 4194401), (1, 0), "contiguous"),               # more n-tiles than blockIdx.y holds: walked n-tiles first
    ((70001, 3, 5), (0, 2, 1), "contiguous"),           # more matrices than blockIdx.z holds: two slabs
    ((20, 70, 50, 5, 9), (0, 2, 1, 4, 3), "contiguous"),  # 70,000 over three batch dims
]


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("case", WORDS_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-{''.join(map(str, c[1]))}-{c[2]}")
def test_words_transposes_every_element(dtype, case):
    shape, dims, view = case
    x = view_of(view, shape, dtype, "cuda")
    ref = reference(x, dims)
    for tile in WORDS_SHAPES:
        out = run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, list(dims), f"words/{tile}"), x, ref.shape)
        assert_bits_equal(out, ref)


@pytest.mark.parametrize("make, dims, why", [
    (lambda: torch.empty(300, 301), (1, 0), "4 bytes or more"),
    (lambda: torch.empty(8, 64, 64, dtype=torch.uint8), (1, 0, 2), "copy route"),
    (lambda: torch.empty(2, 3, 4, 5, 16, 16, dtype=torch.uint8)[..., :15], (1, 0, 3, 2, 5, 4), "more than 3 batch dims"),
    (lambda: torch.empty(2, 2 ** 30, dtype=torch.uint8), (1, 0), "offsets beyond 32 bits"),
    (lambda: torch.empty(2, 64, 194, dtype=torch.uint8, device="meta")[..., ::2], (0, 2, 1), "unit-stride input rows"),
])
def test_words_refuses_what_it_cannot_run(make, dims, why):
    with pytest.raises(RuntimeError, match=why):
        torch.ops.cute_transpose._explain(make().to("meta"), list(dims), 90, "words")


# Lean and words run one tile per block on a 2-D grid (cuda/small_grid.cuh) whose blockIdx.y
# holds 65535 tiles: the m-tiles, or the n-tiles where the kernel walks m-tiles first. Every form
# either refuses or walks so that its grid launches (words, walking m-tiles first, once put the
# 411,625 n-tiles of uint8 6 x 13171981 there, and its launch failed).
@pytest.mark.parametrize("make, dims", [
    (lambda: torch.empty(6, 13171981, dtype=torch.uint8, device="meta"), (1, 0)),
    (lambda: torch.empty(2, 2318831, dtype=torch.uint8, device="meta"), (1, 0)),
    (lambda: torch.empty(13171981, 6, dtype=torch.uint8, device="meta"), (1, 0)),
    (lambda: torch.empty(1, 20445718, 1, dtype=torch.bfloat16, device="meta").expand(3, -1, -1), (1, 2, 0)),
    (lambda: torch.empty(3, 4194401, dtype=torch.float16, device="meta"), (1, 0)),
    (lambda: torch.empty(5, 70001, 61, dtype=torch.uint8, device="meta"), (0, 2, 1)),
    (lambda: torch.empty(4194401, 3, dtype=torch.float32, device="meta"), (1, 0)),
])
@pytest.mark.parametrize("form", ["lean", "lean/tall", "lean/wide", "lean/large", "words", "words/square"])
@pytest.mark.parametrize("gpu", [None, "NVIDIA H200"])
def test_one_tile_per_block_grids_launch(make, dims, form, gpu):
    x = make()
    try:
        info = cute_transpose.explain(x, dims, kernel=form, gpu=gpu)["cuda"]
    except RuntimeError as e:
        assert "m-tiles" in str(e) or "4 bytes or more" in str(e) or "32 bits" in str(e), e
        return
    assert info["kernel"] == form.partition("/")[0], info
    bm, bn = map(int, re.match(r"(\d+)x(\d+)", info["config"]).groups())
    rows, cols = info["dims"][info["m"]][0], info["dims"][info["n"]][0]
    walked_in_y = -(-cols // bn) if "m-tiles first" in info["config"] else -(-rows // bm)
    assert walked_in_y <= 65535, info


# Where words takes 1- and 2-byte transposes (choose.cpp, words_takes_elements): one element per
# access on both sides through shared memory otherwise, beyond small work, its tiles at least
# half full, rows unit-stride, 2-byte elements under 32 MiB but for lean's; in narrow tiles. The same
# on every sm_90 GPU.
@pytest.mark.parametrize("shape, dims, dtype, view, picks", [
    ((1000, 3001), (1, 0), torch.uint8, "contiguous", "words 128x32 narrow"),     # was padded (H100), lean (H200)
    ((1000, 3001), (1, 0), torch.bfloat16, "contiguous", "words 64x32 narrow"),   # was padded
    ((1000, 3001), (1, 0), torch.float16, "contiguous", "words 64x32 narrow"),
    ((6007, 6011), (1, 0), torch.uint8, "contiguous", "words 128x32 narrow"),     # 36 MB (was padded)
    ((2999, 4001), (1, 0), torch.bfloat16, "contiguous", "words 64x32 narrow"),   # 24 MB
    ((6007, 6011), (1, 0), torch.bfloat16, "contiguous", "realign"),              # 72 MB of 2-byte elements: realign
    ((9973, 10007), (1, 0), torch.uint8, "contiguous", "words 128x32 narrow"),    # 95 MB (was padded)
    ((1000, 3001), (1, 0), torch.float32, "contiguous", "padded"),                # 4-byte elements fill words
    ((4096, 4096), (1, 0), torch.uint8, "contiguous", "!words"),                  # 16-byte vectors fit
    ((1023, 1025), (1, 0), torch.uint8, "contiguous", "!words"),                  # small work keeps its pick
    ((521, 751, 73), (2, 1, 0), torch.uint8, "contiguous", "words"),              # the sweep's, was padded
    ((618, 1245, 174), (2, 1, 0), torch.uint8, "contiguous", "words"),            # the sweep's, 128 MB (was realign)
    ((1000, 3001), (1, 0), torch.uint8, "stepped", "!words"),                     # n strided: not words
    # 2-byte elements from 32 MiB on: in place of lean one element each way, not of padded or realign
    ((2101, 1487, 31, 2), (0, 2, 1, 3), torch.uint8, "contiguous", "words"),      # byte pairs, 185 MB (was lean)
    ((985, 113, 205, 2), (0, 2, 1, 3), torch.uint8, "contiguous", "!words"),      # byte pairs, 44 MB, padded
    ((3, 1031, 17891, 2), (0, 2, 1, 3), torch.uint8, "contiguous", "!words"),     # byte pairs, 106 MB, realign
])
@pytest.mark.parametrize("gpu", [None, "NVIDIA H200"])
def test_explain_runs_words_where_elements_move_one_at_a_time(shape, dims, dtype, view, picks, gpu):
    x = view_of(view, shape, dtype, "meta")
    info = cute_transpose.explain(x, dims, gpu=gpu)["cuda"]
    kernel, _, config = picks.partition(" ")
    if kernel == "!words":
        assert info["kernel"] != "words", info
        return
    assert info["kernel"] == kernel, info
    assert config in info["config"], info
    if kernel == "words":
        assert "run words" in info["reason"], info


@needs_cuda
@pytest.mark.parametrize("shape, dims, dtype", [
    ((1000, 3001), (1, 0), torch.uint8), ((3, 1499, 1501), (0, 2, 1), torch.bfloat16),
    ((1023, 2049), (1, 0), torch.float16), ((31, 1637, 2, 419), (0, 3, 1, 2), torch.uint8),  # 41 MB
])
def test_words_picks_write_every_element(shape, dims, dtype):
    x = random_tensor(shape, dtype, "cuda")
    assert cute_transpose.explain(x, dims)["kernel"] == "words"
    assert_permute_by_writes_every_element(None, x, dims)


GATHER_CASES = [  # (base shape, expand to, dims): the output's innermost dim short, broadcast, or both
    ((1, 1001, 3), (4, 1001, 3), (2, 1, 0)),              # innermost output dim of 4 copies
    ((2, 1, 37, 5), (2, 3, 37, 5), (3, 0, 2, 1)),         # a broadcast dim in the middle
    ((7, 129), None, (1, 0)),                             # 903 elements: a tail after the last vector
    ((3, 5, 7, 11, 2, 3), None, (5, 3, 1, 4, 0, 2)),      # rank 6, every dim short
    ((1, 4099), (5, 4099), (1, 0)),                       # 5 copies per output row, rows off the grid
]


@needs_cuda
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("case", GATHER_CASES, ids=lambda c: f"{c[0]}->{c[1]}{c[2]}")
def test_gather_writes_every_element_in_order(dtype, case):
    base_shape, expand_to, dims = case

    def check(x):
        ref = reference(x, dims)
        torch.full((ref.numel() * ref.element_size(),), 0xA5, dtype=torch.uint8, device="cuda")  # poison
        assert_bits_equal(torch.ops.cute_transpose._permute_with(x, list(dims), "gather"), ref)

    x = random_tensor(base_shape, dtype, "cuda")
    check(x.expand(expand_to) if expand_to else x)
    # a view one element into its storage, the last dim stepped by two
    y = random_tensor((*base_shape[:-1], 2 * base_shape[-1] + 1), dtype, "cuda")[..., 1::2]
    check(y.expand(expand_to) if expand_to else y)


def check_broadcast_rows_pick(kept, shape, dims, dtype, gpu, runs, rule_runs, rule_reason):
    """explain's pick for `kept` expanded to `shape`, permuted: `runs` ("!k": anything but k), for a
    reason that ends in the rule's `rule_reason` exactly where `runs` is the rule's kernel."""
    x = torch.empty(kept, dtype=dtype, device="meta").expand(shape)
    info = cute_transpose.explain(x, dims, gpu=gpu)["cuda"]
    if runs.startswith("!"):
        assert info["kernel"] != runs[1:], info
    else:
        assert info["kernel"] == runs, info
    assert info["reason"].endswith(rule_reason) == (runs == rule_runs), info


# Realign picks whose output rows each repeat one input element (the input reads the output's
# innermost dim with stride 0), as every other such transpose with rows of 48 bytes or more but
# of 16-byte elements, run fill (choose.cpp, fill_takes_broadcast_rows); on every sm_90 GPU.
@pytest.mark.parametrize("kept, shape, dims, dtype, runs", [
    ((1, 367), (434909, 367), (1, 0), torch.bfloat16, "fill"),               # the sweep's, 319 MB, was realign
    ((2, 63, 541, 1), (2, 63, 541, 1271), (0, 2, 1, 3), torch.bfloat16, "fill"),  # was realign
    ((1, 367), (20001, 367), (1, 0), torch.bfloat16, "fill"),                # realign skipped (too few tiles)
    ((1, 6, 65536), (12, 6, 65536), (1, 2, 0), torch.float32, "fill"),    # rows of 48 bytes
    ((1, 6, 65536), (5, 6, 65536), (1, 2, 0), torch.float64, "!fill"),    # rows of 40 bytes, 8-byte elements
    ((1, 6, 2048), (48, 6, 2048), (1, 2, 0), torch.uint8, "!fill"),       # small work (under 2^20 elements)
    ((6007, 6011), (6007, 6011), (1, 0), torch.bfloat16, "realign"),          # nothing broadcast: realign stays
    ((1, 909, 1), (36194, 909, 1), (1, 0, 2), torch.complex128, "aten"),     # 16-byte elements (below)
])
@pytest.mark.parametrize("gpu", [None, "NVIDIA H200"])
def test_broadcast_output_rows_of_48_bytes_or_more_run_fill(kept, shape, dims, dtype, runs, gpu):
    check_broadcast_rows_pick(kept, shape, dims, dtype, gpu, runs, "fill", "each repeat one input element: run fill")


# Shorter such rows, of 1- to 4-byte elements, run fill too unless the pick is a vectored
# interleave (choose.cpp, fill_takes_short_broadcast_rows); on every sm_90 GPU.
@pytest.mark.parametrize("kept, shape, dims, dtype, runs", [
    ((1, 6, 65536), (11, 6, 65536), (1, 2, 0), torch.float32, "fill"),      # rows of 44 bytes
    ((1, 8388608), (16, 8388608), (1, 0), torch.uint8, "fill"),              # rows of 16 bytes, was gather
    ((1, 11184810), (12, 11184810), (1, 0), torch.uint8, "fill"),            # was interleave, one element per access
    ((561, 9, 61, 1, 119), (561, 9, 61, 2, 119), (0, 1, 4, 2, 3), torch.bfloat16, "fill"),  # rows of 4 bytes, was aten
    ((1, 16777216), (4, 16777216), (1, 0), torch.bfloat16, "interleave"),    # vectored interleave: stays
    ((1, 5592405), (3, 5592405), (1, 0), torch.float64, "!fill"),            # 8-byte elements: stay
    ((1, 6, 2048), (16, 6, 2048), (1, 2, 0), torch.uint8, "!fill"),          # small work (under 2^20 elements)
])
@pytest.mark.parametrize("gpu", [None, "NVIDIA H200"])
def test_short_broadcast_output_rows_run_fill(kept, shape, dims, dtype, runs, gpu):
    check_broadcast_rows_pick(kept, shape, dims, dtype, gpu, runs, "fill", "not a vectored interleave: run fill")


# Picks of 16-byte elements whose output rows each repeat one input element, but interleave's, run
# ATen's copy (choose.cpp, wide_broadcast_rows_run_aten); on every sm_90 GPU.
@pytest.mark.parametrize("kept, shape, dims, dtype, runs", [
    ((1, 909, 1), (36194, 909, 1), (1, 0, 2), torch.complex128, "aten"),           # was padded
    ((32, 1, 184, 16), (32, 480, 184, 16), (2, 0, 3, 1), torch.complex128, "aten"),  # was padded
    ((1, 157, 1), (8461, 157, 1), (1, 0, 2), torch.complex128, "aten"),             # 21 MB, was padded
    ((1, 13511595), (2, 13511595), (1, 0), torch.complex128, "interleave"),         # rows of two: stays
    ((1, 909, 1), (36194, 909, 1), (1, 0, 2), torch.float64, "!aten"),              # 8-byte elements: stays
    ((8, 1), (8, 9901806), (1, 0), torch.bfloat16, "rows"),  # 8 bfloat16 merged into one 16-byte element: stays
])
@pytest.mark.parametrize("gpu", [None, "NVIDIA H200"])
def test_broadcast_output_rows_of_16_byte_elements_run_aten(kept, shape, dims, dtype, runs, gpu):
    check_broadcast_rows_pick(kept, shape, dims, dtype, gpu, runs, "aten",
                              "stores whole from cached loads: run ATen's copy")


@needs_cuda
def test_broadcast_output_rows_write_every_element():
    x = random_tensor((1, 367), torch.bfloat16, "cuda").expand(100001, 367)
    assert cute_transpose.explain(x, (1, 0))["kernel"] == "fill"
    assert_permute_by_writes_every_element(None, x, (1, 0))
    z = random_tensor((1, 300007), torch.uint8, "cuda").expand(16, 300007)  # rows of 16 bytes: the lanes form
    assert cute_transpose.explain(z, (1, 0))["kernel"] == "fill"
    assert_permute_by_writes_every_element(None, z, (1, 0))
    y = random_tensor((1, 157, 1), torch.complex128, "cuda").expand(8461, 157, 1)
    assert cute_transpose.explain(y, (1, 0, 2))["kernel"] == "aten"
    assert_permute_by_writes_every_element(None, y, (1, 0, 2))


# Output rows that repeat one input element (fill.cu): (base shape, expanded shape, dims), rows
# from two elements (under 17 bytes only the lanes form runs them: a warp's span of 512 bytes
# would reach more than 32 rows) to several spans of 512-2048 bytes, rows walked over one or two
# dims.
FILL_CASES = [
    *(((1, 37), (m, 37), (1, 0)) for m in (2, 3, 5, 7, 9, 15, 17, 33, 127, 129, 1025, 2049, 4111)),
    ((3, 1, 5), (3, 300, 5), (2, 0, 1)),            # rows over two dims (5 x 3), 300 copies each
    ((1, 4, 1, 6), (20, 4, 3, 6), (1, 3, 0, 2)),    # two expanded dims, merged into rows of 60
    ((7, 1, 9), (7, 3, 9), (0, 2, 1)),              # rows of 3: a uint8 vector reaches up to 6 of them
]


def fill_row_elements(x, dims):
    """The elements of an output row: the output's innermost dims that x reads with stride 0."""
    row = 1
    for d in reversed(dims):
        if x.stride(d) != 0 and x.shape[d] != 1:
            break
        row *= x.shape[d]
    return row


@needs_cuda
@pytest.mark.parametrize("name", ["fill", "fill/lanes"])
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("case", FILL_CASES, ids=lambda c: f"{c[0]}->{c[1]}{c[2]}")
def test_fill_writes_every_element(dtype, case, name):
    base_shape, expand_to, dims = case
    fill = lambda t: torch.ops.cute_transpose._permute_with(t, list(dims), name)  # noqa: E731
    x = random_tensor(base_shape, dtype, "cuda").expand(expand_to)
    ref = reference(x, dims)
    assert_bits_equal(run_poisoned(fill, x, ref.shape), ref)
    # a view one element into its storage, the last dim stepped by two
    y = random_tensor((*base_shape[:-1], 2 * base_shape[-1] + 1), dtype, "cuda")[..., 1::2].expand(expand_to)
    ref = reference(y, dims)
    assert_bits_equal(run_poisoned(fill, y, ref.shape), ref)


# Which form "fill" runs: the warp's span where a span of 512 bytes reaches at most 32 rows
# (fill_vectors_per_lane), else each lane on its own.
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
@pytest.mark.parametrize("case", FILL_CASES, ids=lambda c: f"{c[0]}->{c[1]}{c[2]}")
def test_fill_runs_its_lanes_form_where_a_span_would_reach_more_than_32_rows(dtype, case):
    base_shape, expand_to, dims = case
    x = torch.empty(base_shape, dtype=dtype, device="meta").expand(expand_to)
    info = json.loads(torch.ops.cute_transpose._explain(x, list(dims), 90, "fill"))
    row_bytes = fill_row_elements(x, dims) * element_size(dtype)
    assert info["element_size"] == element_size(dtype), info  # these rows merge nothing
    lanes = 31 * row_bytes < 512
    assert info["config"].endswith("loaded once per lane, by the lanes whose vectors it reaches" if lanes
                                   else "loaded once per warp"), (row_bytes, info)


# An innermost dim of 2-16 bytes that stays innermost moves as one wider element (plan.cpp): rows
# of (n, 4) pixels expanded over m, transposed, repeat one 4-, 8- or 16-byte element.
@needs_cuda
@pytest.mark.parametrize("dtype", ONE_PER_SIZE[:3], ids=dtype_id)
def test_fill_writes_rows_of_merged_elements(dtype):
    x = random_tensor((1, 50, 4), dtype, "cuda").expand(201, 50, 4)
    info = json.loads(torch.ops.cute_transpose._explain(x, [1, 0, 2], 90, "fill"))
    assert info["element_size"] == 4 * element_size(dtype), info
    ref = reference(x, (1, 0, 2))
    assert_bits_equal(run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, [1, 0, 2], "fill"), x,
                                   ref.shape), ref)


# The fill kernel stores whole 16-byte vectors; the elements of an output off that grid before
# its first vector and after its last are stored one by one. Beyond small work, through out=.
@needs_cuda
@pytest.mark.parametrize("offset", [1, 3])
@pytest.mark.parametrize("dtype", ONE_PER_SIZE[:-1], ids=dtype_id)  # 16-byte elements run ATen's copy
def test_fill_writes_outputs_off_the_16_byte_grid(dtype, offset):
    x = random_tensor((1, 4099), dtype, "cuda").expand(301, 4099)  # rows of 301 elements
    assert cute_transpose.explain(x, (1, 0))["kernel"] == "fill"
    assert_writes_only_out(lambda out: torch.ops.cute_transpose.permute.out(x, [1, 0], out=out),
                           reference(x, (1, 0)), offset)


@pytest.mark.parametrize("make, dims", [
    (lambda: torch.empty(300, 301), (1, 0)),
    (lambda: torch.empty(1, 300).expand(5, 300), (0, 1)),  # expanded, but not the output's innermost dim
])
def test_fill_refuses_rows_of_distinct_elements(make, dims):
    with pytest.raises(RuntimeError, match="does not read the output's innermost dim with stride 0"):
        torch.ops.cute_transpose._explain(make(), list(dims), 90, "fill")


# fill_takes_broadcast_rows on the copy route too (x.expand(...).contiguous()), and on GPUs
# without TMA.
@pytest.mark.parametrize("make, dims, picks", [
    (lambda: torch.empty(4096, 1).expand(4096, 1024), (0, 1), True),       # x.expand(...).contiguous()
    (lambda: torch.empty(1, 367, dtype=torch.bfloat16).expand(434909, 367), (1, 0), True),
    (lambda: torch.empty(1, 4096).expand(1024, 4096), (0, 1), False),      # rows of distinct elements
    (lambda: torch.empty(1, 2 ** 20).expand(3, 2 ** 20), (1, 0), False),  # rows of 12 bytes
])
@pytest.mark.parametrize("arch", [90, 80])
def test_explain_runs_fill_on_every_gpu(make, dims, picks, arch):
    info = json.loads(torch.ops.cute_transpose._explain(make(), list(dims), arch, ""))
    assert (info["kernel"] == "fill") == picks, info
    assert info["reason"].endswith("each repeat one input element: run fill") == picks, info


def test_gather_needs_an_output_on_the_16_byte_grid():
    x = torch.empty(64, 3, 100, 100, device="meta")
    info = json.loads(torch.ops.cute_transpose._explain(x, [0, 2, 3, 1], 90, "gather"))
    assert info["kernel"] == "gather" and info["config"].startswith("16-byte stores")
    # on the H100 table, a window partition of bfloat16 feature maps (the tuning set's cf-windows 1) takes it
    x = torch.empty(16, 128, 4, 7, 4, 7, device="meta", dtype=torch.bfloat16)
    assert json.loads(torch.ops.cute_transpose._explain(x, [0, 2, 4, 3, 5, 1], 90, ""))["kernel"] == "gather"


@pytest.mark.parametrize("shape, dims, dtype", [
    ((16, 32, 16, 32, 32), (0, 3, 1, 4, 2), torch.bfloat16),
    ((5, 7), (1, 0), torch.float64),
    ((64, 1, 32), (0, 2, 1), torch.float32),
    ((3, 5, 7, 11), (3, 1, 2, 0), torch.int16),
    ((257, 64, 257), (2, 1, 0), torch.uint8),
])
def test_explain_names_the_shapes_own_class_and_the_table_entry_it_used(shape, dims, dtype):
    table = pathlib.Path(__file__).parents[1] / "csrc" / "tuning" / "sm_90.inc"
    keys = set(re.findall(r'^\{"([^"]+)"', table.read_text(), re.M))
    info = cute_transpose.explain(torch.empty(shape, dtype=dtype), dims)["cuda"]
    own = info["class"]
    if own.endswith(".s"):  # small work never reaches the table
        assert info["kernel"] in ("aten", "rows", "tile", "lanes") and info["reason"].startswith("small work: "), info
    elif own in keys:
        assert info["reason"].startswith(f"tuned for sm_90: class {own} ranks "), info
    elif info["reason"].startswith("tuned"):  # its family's entry
        assert info["reason"].startswith("tuned for sm_90: family ") and f"(the table has no class {own})" in info["reason"], info
    else:
        assert info["reason"].startswith(f"rule: neither class {own} nor its family"), info


@pytest.mark.parametrize("make, dims, ranking", [
    (lambda: torch.empty(4096, 4096), (1, 0), "tile,aten"),
    (lambda: torch.empty(100000, 4, 8)[:, :, :3], (0, 1, 2), "rows,aten"),  # 12-byte rows: no box
    (lambda: torch.empty(100000, 1, 8).expand(100000, 3, 8), (0, 1, 2), "gather,rows,aten"),
    (lambda: torch.empty(1000, 1, 64).expand(1000, 300, 64), (0, 1, 2), "gather,rows,box,aten"),
    (lambda: torch.empty(64, 1, 100).expand(64, 300, 100), (2, 1, 0), "gather,split,tile,aten"),
    (lambda: torch.empty(8000, 30, 37, dtype=torch.int16), (0, 2, 1), "padded,tile,aten"),
])
def test_a_gpu_without_a_table_follows_the_fixed_rule(make, dims, ranking):
    # arch 0 has no table: explain() names the rule's ranking, and its first kernel runs these
    info = json.loads(torch.ops.cute_transpose._explain(make(), list(dims), 0, ""))
    assert info["reason"].startswith(f"rule: neither class {info['class']} nor its family"), info
    assert info["reason"].endswith(f"; the rule ranks {ranking}"), info
    assert info["kernel"] == ranking.split(",")[0], info  # each of these runs the rule's first


def test_class_key_marks_broadcast_inputs():
    x = torch.empty(64, 1, 32).expand(64, 180, 32)  # input stride 0 along the 180
    assert re.search(r"\.b(\.s)?$", cute_transpose.explain(x, (0, 2, 1))["cuda"]["class"])
    assert not re.search(r"\.b(\.s)?$", cute_transpose.explain(x.contiguous(), (0, 2, 1))["cuda"]["class"])


@pytest.mark.parametrize("shape, dims, small", [
    ((1024, 1023), (1, 0), True),
    ((1024, 1024), (1, 0), False),           # 2^20 elements: the tuning grids' sizes
    ((4, 256, 1023), (0, 2, 1), True),
    ((2, 1024, 3, 256), (0, 3, 1, 2), False),
])
def test_class_key_marks_small_work_which_the_small_work_rules_run(shape, dims, small):
    info = cute_transpose.explain(torch.empty(shape, dtype=torch.uint8), dims)["cuda"]
    assert info["class"].endswith(".s") == small, info
    assert info["reason"].startswith("small work: ") == small, info
    if small:  # a 2-D transpose in lanes; three dims in ATen's copy
        assert info["kernel"] == ("lanes" if len(shape) == 2 else "aten"), info


@pytest.mark.parametrize("make, dims, kernel", [
    (lambda: torch.empty(1, 128, 8, 64, dtype=torch.bfloat16), (0, 2, 1, 3), "rows"),  # attention heads: 128-byte rows
    (lambda: torch.empty(4, 100, 6, 24, dtype=torch.uint8), (0, 2, 1, 3), "rows"),     # 24-byte rows: 8-byte vectors
    (lambda: torch.empty(1, 128, 8, 63, dtype=torch.bfloat16), (0, 2, 1, 3), "aten"),  # 126-byte rows: one element
    (lambda: torch.empty(64, 8, 33), (1, 0, 2), "aten"),                               # float32 rows of 33: one element
    (lambda: torch.empty(64, 1, 64).expand(64, 8, 64), (1, 0, 2), "aten"),             # broadcast input
    (lambda: torch.empty(256, 255), (1, 0), "lanes"),                                  # a transpose (not lean: rows of 255)
])
def test_small_work_runs_rows_where_its_vectors_are_wider_than_the_element(make, dims, kernel):
    # Under 2^20 elements ATen's copy runs, but the copy route in vectors wider than the element
    # (rows of whole 4-, 8- or 16-byte vectors) from an unbroadcast input runs `rows`.
    info = cute_transpose.explain(make(), dims)["cuda"]
    assert info["class"].endswith(".s") and info["reason"].startswith("small work: "), info
    assert info["kernel"] == kernel, info
    for arch in (0, 80):  # GPUs without a table: the same rule (it comes before the table)
        assert json.loads(torch.ops.cute_transpose._explain(make(), list(dims), arch, ""))["kernel"] == kernel


def assert_small_work_pick(make, dims, kernel, rule):
    """make() permuted by dims is small work that runs `kernel`, its reason naming `rule`'s kernel
    exactly where it is that kernel, and GPUs without a table pick the same (the small-work rules
    come before the table). Returns explain()'s account (for arch 90)."""
    info = cute_transpose.explain(make(), dims)["cuda"]
    assert info["class"].endswith(".s") and info["reason"].startswith("small work: "), info
    assert info["kernel"] == kernel, info
    assert (f"run {rule}" in info["reason"]) == (kernel == rule), info
    for arch in (0, 80):
        other = json.loads(torch.ops.cute_transpose._explain(make(), list(dims), arch, ""))
        assert (other["kernel"], other["config"]) == (info["kernel"], info["config"])
    return info


def fresh_cuda_like(x):
    """Fresh random data on the GPU in x's view: its shape, storage offset and broadcast dims."""
    base = random_tensor((x.storage_offset() + x.numel(),), x.dtype, "cuda")[x.storage_offset():].view(x.shape)
    return base[tuple(slice(0, 1) if x.stride(d) == 0 else slice(None) for d in range(x.dim()))].expand(x.shape)


@pytest.mark.parametrize("make, dims, kernel", [
    (lambda: torch.empty(8, 12, 128, 64, dtype=torch.bfloat16), (0, 1, 3, 2), "lean"),  # attention keys transposed
    (lambda: torch.empty(1, 256, 256, dtype=torch.bfloat16), (0, 2, 1), "lean"),        # 2^16 elements
    (lambda: torch.empty(768, 768, dtype=torch.uint8), (1, 0), "lean"),                 # 1-byte elements
    (lambda: torch.empty(1024, 640), (1, 0), "lean"),                                   # float32, 2^19.3
    (lambda: torch.empty(16, 128, 128, dtype=torch.float64), (0, 2, 1), "lean"),
    (lambda: torch.empty(3, 40, 16, dtype=torch.complex128), (0, 2, 1), "lean"),        # 16-byte elements
    (lambda: torch.empty(4, 12, 197, 64), (0, 1, 3, 2), "lean"),                        # stores of one element
    (lambda: torch.empty(64, 40, 40, dtype=torch.bfloat16), (0, 2, 1), "aten"),         # tiles 39% full
    (lambda: torch.empty(8, 12, 128, 63, dtype=torch.bfloat16), (0, 1, 3, 2), "lean"),  # loads of one element, 2^19.6
    (lambda: torch.empty(500, 301), (1, 0), "lean"),                                    # float32 rows of 301, 2^17.2
    (lambda: torch.empty(2, 256, 255, dtype=torch.bfloat16), (0, 2, 1), "aten"),        # loads of one element, under 2^17
    (lambda: torch.empty(768, 767, dtype=torch.uint8), (1, 0), "lanes"),                # loads of one byte: 2-D
    (lambda: torch.empty(8, 1, 128, 64, dtype=torch.bfloat16).expand(8, 12, 128, 64), (0, 1, 3, 2), "aten"),  # broadcast
    (lambda: torch.empty(2, 3, 4, 5, 32, 32)[..., :16], (1, 0, 3, 2, 5, 4), "aten"),    # 4 batch dims: lean cannot
])
def test_small_work_runs_lean_where_its_tiles_are_half_full_and_its_loads_vectors_or_wide_elements(make, dims, kernel):
    # wide elements: loads of one element of 2 bytes or more, from 2^17 elements
    assert_small_work_pick(make, dims, kernel, "lean")
    if torch.cuda.is_available():  # and what runs there is bit-exact, every element written
        x = fresh_cuda_like(make())
        out = run_poisoned(lambda t: cute_transpose.permute(t, dims), x, [x.shape[d] for d in dims])
        assert_bits_equal(out, reference(x, dims))


@pytest.mark.parametrize("make, dims, kernel", [
    (lambda: torch.empty(512, 512, 3, dtype=torch.uint8), (2, 0, 1), "interleave"),       # an image, HWC -> CHW
    (lambda: torch.empty(3, 512, 512, dtype=torch.uint8), (1, 2, 0), "interleave"),       # CHW -> HWC
    (lambda: torch.empty(4, 64, 64, 4, dtype=torch.uint8), (0, 3, 1, 2), "interleave"),   # a batch: three dims
    (lambda: torch.empty(100000, 6, dtype=torch.bfloat16), (1, 0), "interleave"),         # planes of 100000: 16-byte grid
    (lambda: torch.empty(6, 100000, dtype=torch.float16), (1, 0), "interleave"),
    (lambda: torch.empty(100001, 6, dtype=torch.bfloat16), (1, 0), "lanes"),              # planes off the 16-byte grid
    (lambda: torch.empty(224, 224, 3), (2, 0, 1), "lanes"),                               # 4-byte elements
    (lambda: torch.empty(512 * 512 * 3 + 1, dtype=torch.uint8)[1:].view(512, 512, 3), (2, 0, 1), "lanes"),  # realigned
    (lambda: torch.empty(224, 1, 3, dtype=torch.uint8).expand(224, 224, 3), (2, 0, 1), "aten"),          # broadcast
    (lambda: torch.empty(8, 70000, dtype=torch.uint8), (1, 0), "lanes"),                  # 8 uint8 planes packed
    (lambda: torch.empty(70000, 8, dtype=torch.uint8), (1, 0), "interleave"),             # and unpacked
    # two dims under 2^19 elements: lanes, which ran them faster (choose.cpp, kLanesOverInterleave)
    (lambda: torch.empty(224, 224, 3, dtype=torch.uint8), (2, 0, 1), "lanes"),
    (lambda: torch.empty(30000, 6, dtype=torch.bfloat16), (1, 0), "lanes"),
    (lambda: torch.empty(3488, 8, dtype=torch.uint8), (1, 0), "lanes"),
])
def test_small_work_runs_interleave_where_it_moves_1_or_2_byte_pixels_in_aligned_vectors(make, dims, kernel):
    info = assert_small_work_pick(make, dims, kernel, "interleave")
    assert (info["config"].endswith("16-byte vectors")) == (kernel == "interleave"), info
    if torch.cuda.is_available():  # and what runs there is bit-exact, every element written
        x = fresh_cuda_like(make())
        if kernel == "interleave":  # the GPU's own pick too
            assert cute_transpose.explain(x, dims)["kernel"] == "interleave"
        out = run_poisoned(lambda t: cute_transpose.permute(t, dims), x, [x.shape[d] for d in dims])
        assert_bits_equal(out, reference(x, dims))


@pytest.mark.parametrize("make, dims, planes_out", [
    (lambda: torch.empty(50497, 6)[:, 1:], (1, 0), True),                                # 5 planes out of an offset slice
    (lambda: torch.empty(7, 135487 * 2, dtype=torch.float64)[:, ::2], (1, 0), False),    # 7-interleaved out, stepped
    (lambda: torch.empty(1, 1000, dtype=torch.bfloat16).expand(3, 1000), (1, 0), False),  # a broadcast input
    (lambda: torch.empty(3, 130, 2, dtype=torch.uint8), (2, 0, 1), True),                # 2 planes, a ragged last block
    (lambda: torch.empty(4, 3, 300, 8, dtype=torch.int16), (0, 1, 3, 2), True),          # a batch of 12 matrices
    (lambda: torch.empty(129, 8, dtype=torch.complex128), (1, 0), True),                 # 16-byte elements
    (lambda: torch.empty(8, 8), (1, 0), True),                                           # both sides short
])
def test_stage_moves_a_short_side_through_shared_memory_for_any_strides(make, dims, planes_out):
    x = make()
    info = cute_transpose.explain(x, list(dims), kernel="stage")
    info = info.get("cuda", info)
    assert info["kernel"] == "stage" and ("planes out" in info["config"]) == planes_out, info
    if torch.cuda.is_available():  # every element written, bit-exact
        x = fresh_cuda_like(x)
        out = run_poisoned(lambda t: torch.ops.cute_transpose._permute_with(t, list(dims), "stage"), x,
                           [x.shape[d] for d in dims])
        assert_bits_equal(out, reference(x, dims))


def test_stage_refuses_a_permute_with_no_side_of_2_to_8_elements():
    for x, dims in ((torch.empty(100, 100), (1, 0)), (torch.empty(9, 100), (1, 0)), (torch.empty(64, 8, 33), (1, 0, 2))):
        with pytest.raises(RuntimeError, match="stage"):
            cute_transpose.explain(x, list(dims), kernel="stage")


@pytest.mark.parametrize("make, dims, kernel", [
    (lambda: torch.empty(5, 11406, dtype=torch.uint8)[:, 1:], (1, 0), "lanes"),          # offset rows, a side of 5
    (lambda: torch.empty(160723, 10)[:, ::2], (1, 0), "lanes"),                          # stepped float32
    (lambda: torch.empty(1, 42799, dtype=torch.bfloat16).expand(3, 42799), (1, 0), "lanes"),  # broadcast, 2-D
    (lambda: torch.empty(7, 5569, dtype=torch.float64), (1, 0), "lanes"),
    (lambda: torch.empty(17, 37, 157, dtype=torch.uint8), (2, 0, 1), "lanes"),           # three dims that merge to two
    (lambda: torch.empty(9, 5, 47, 17, 7), (0, 1, 4, 2, 3), "aten"),                     # three dims after merging
    (lambda: torch.empty(1, 276, 1880, dtype=torch.int16).expand(2, 276, 1880), (0, 2, 1), "aten"),  # and a broadcast
    (lambda: torch.empty(3000, 5, dtype=torch.complex128), (1, 0), "aten"),              # 16-byte elements
    (lambda: torch.empty(64, 8, 33), (1, 0, 2), "aten"),                                 # the copy route
])
def test_small_work_runs_lanes_where_a_transpose_of_two_dims_runs_no_other_rule(make, dims, kernel):
    # ATen's copy ran these; lanes is its pattern with the loads first and 32-bit fast division
    # (csrc/choose.cpp, small_lanes): 2-D plans of elements up to 8 bytes.
    info = assert_small_work_pick(make, dims, kernel, "lanes")
    if kernel == "lanes":
        assert len(info["dims"]) == 2 and info["config"].startswith("one element per access, lanes on"), info
    if torch.cuda.is_available():  # and what runs there is bit-exact, every element written
        x = fresh_cuda_like(make())
        assert cute_transpose.explain(x, dims)["kernel"] == kernel  # the GPU's own pick too
        out = run_poisoned(lambda t: cute_transpose.permute(t, dims), x, [x.shape[d] for d in dims])
        assert_bits_equal(out, reference(x, dims))


@pytest.mark.parametrize("make, dims, kernel", [
    (lambda: torch.empty(1024, 1024), (1, 0), "lean"),                                     # 2^20 float32
    (lambda: torch.empty(1, 16, 1024, 64, dtype=torch.bfloat16), (0, 1, 3, 2), "split"),  # keys transposed: the table's split
    (lambda: torch.empty(2, 1024, 1024, dtype=torch.uint8), (0, 2, 1), "lean"),            # 2^21: the table's lean
    (lambda: torch.empty(2048, 2048, dtype=torch.bfloat16), (1, 0), "tile"),               # 2^22: the table's tile
    (lambda: torch.empty(297, 11511, dtype=torch.complex128), (1, 0), "tile"),             # 16-byte elements keep tile
    (lambda: torch.empty(1000, 3001, dtype=torch.bfloat16), (1, 0), "words"),              # the table's padded, then words
    (lambda: torch.empty(64, 40, 40, 40, dtype=torch.bfloat16), (0, 1, 3, 2), "split"),  # nor here
])
def test_lean_runs_what_the_table_gives_tile_in_16_byte_vectors_up_to_2_22_elements(make, dims, kernel):
    info = cute_transpose.explain(make(), dims)["cuda"]
    assert not info["class"].endswith(".s") and info["kernel"] == kernel, info
    assert info["reason"].startswith("tuned for sm_90: "), info
    # lean comes from the rule where the table ranks tile first, or from the table itself
    assert ("run lean" in info["reason"]) == (kernel == "lean" and " ranks tile," in info["reason"]), info
    if kernel == "lean":
        assert " ranks tile," in info["reason"] or " ranks lean," in info["reason"], info
    if torch.cuda.is_available():
        x = random_tensor(make().shape, make().dtype, "cuda")
        out = run_poisoned(lambda t: cute_transpose.permute(t, dims), x, [x.shape[d] for d in dims])
        assert_bits_equal(out, reference(x, dims))


def test_interleave_leaves_batches_of_tiny_matrices_to_others():
    x = torch.empty(2, 2234417, 4, dtype=torch.bfloat16).expand(2, 2234417, 4)  # 4 pixels each
    with pytest.raises(RuntimeError, match="fewer than a quarter block of pixels"):
        cute_transpose.explain(x, (2, 1, 0), kernel="interleave")
    assert cute_transpose.explain(x, (2, 1, 0))["cuda"]["kernel"] != "interleave"


def test_padded_is_no_candidate_on_tiles_less_than_a_quarter_full():
    # (N, M, 3)[..., ::2] permuted (1, 2, 0): n is the 2-element dim, 2 of the 16 float64
    # columns of a padded tile; ATen's copy ran such views at twice the padded kernel's speed
    x = torch.empty(787, 200, 3, dtype=torch.float64)[..., ::2]
    named = cute_transpose.explain(x, (1, 2, 0), kernel="padded")["cuda"]
    assert not named["offered"] and named["reason"].endswith("less than a quarter full")
    assert cute_transpose.explain(x, (1, 2, 0))["cuda"]["kernel"] != "padded"
    assert cute_transpose.explain(x[:64, :64], (1, 2, 0), kernel="box")["cuda"]["offered"]
    # (the seed ladder's padded op and _permute_with still run it: test_each_kernel_on_its_cases)


def test_lean_is_no_candidate_on_tiles_less_than_half_full():
    # 16 x 8 float32 matrices in lean's 32 x 32 tiles: an eighth full (the rule for small work
    # and the table's rankings both take lean only where its tiles are at least half full)
    x = torch.empty(600, 8, 16)
    named = cute_transpose.explain(x, (0, 2, 1), kernel="lean")["cuda"]
    assert not named["offered"] and named["reason"].endswith("less than half full"), named
    assert cute_transpose.explain(x, (0, 2, 1))["cuda"]["kernel"] != "lean"
    assert cute_transpose.explain(torch.empty(600, 16, 32), (0, 2, 1), kernel="lean")["cuda"]["offered"]  # half


@pytest.mark.parametrize("shape, dims, dtype, tile", [
    ((2, 512, 512), (0, 2, 1), torch.float32, "32x32 tile"),                # under 2^22: the square tile
    ((64, 1024, 1024), (0, 2, 1), torch.uint8, "128x128 large tile"),        # full tiles: large
    ((75, 608, 12, 96), (2, 0, 3, 1), torch.float32, "128x32 tall tile"),   # 608 x 96: 512-byte output runs
    ((28, 48, 28, 28, 48), (4, 0, 3, 2, 1), torch.float32, "64x64 large tile"),  # 48 x 48: tall tiles 28% full
    ((6000, 24, 64), (0, 2, 1), torch.float32, "32x32 tile"),                # m = 24: other shapes under half full
])
def test_lean_tile_shape_from_2_22_elements(shape, dims, dtype, tile):
    # Under 2^22 elements the square tile; from there the tile kernel's score (fill x output run),
    # among shapes at least half full, and large tiles where the square ones are full.
    config = cute_transpose.explain(torch.empty(shape, dtype=dtype, device="meta"), dims, kernel="lean")["cuda"]["config"]
    assert config.startswith(tile + ","), config


def test_lean_is_no_candidate_where_the_tile_kernel_takes_large_tiles():
    # 16384^2 uint8: 4096 of the tile kernel's 256 x 256 tiles (0.955 of clone, large lean tiles 0.913)
    x = torch.empty(16384, 16384, dtype=torch.uint8, device="meta")
    named = cute_transpose.explain(x, (1, 0), kernel="lean")["cuda"]
    assert not named["offered"] and "large tiles run this work" in named["reason"], named
    picked = cute_transpose.explain(x, (1, 0))["cuda"]
    assert picked["kernel"] == "tile" and picked["config"].startswith("256x256 large tile"), picked
    # 8192^2 uint8 makes 1024 of them: the square tile's size class, where the table ranks lean
    assert cute_transpose.explain(torch.empty(8192, 8192, dtype=torch.uint8, device="meta"), (1, 0), kernel="lean")["cuda"]["offered"]


def test_realign_is_no_candidate_on_fewer_tiles_than_a_wave():
    # 1000 x 3001 bfloat16: 8 x 24 = 192 tiles, where `padded` ran 0.87 of clone and realign 0.78;
    # 9973 x 10007: 6241 tiles, where realign ran 0.80 and `padded` 0.64 (the H100)
    small = torch.empty(1000, 3001, dtype=torch.bfloat16)
    named = cute_transpose.explain(small, (1, 0), kernel="realign")["cuda"]
    assert not named["offered"] and named["reason"].endswith("fewer than 660 tiles")
    assert cute_transpose.explain(small, (1, 0))["cuda"]["kernel"] != "realign"
    large = torch.empty(9973, 10007, dtype=torch.bfloat16, device="meta")
    assert cute_transpose.explain(large, (1, 0), kernel="realign")["cuda"]["offered"]
    assert cute_transpose.explain(large, (1, 0))["cuda"]["kernel"] == "realign"


def test_interleave_one_element_per_access_is_no_candidate_on_a_small_grid():
    # 1101 pixels of 5 unaligned float32 channels: 2 blocks of 1024 pixels; 400000: 391
    small, large = torch.empty(1101, 6)[:, 1:], torch.empty(400000, 6)[:, 1:]
    named = cute_transpose.explain(small, (1, 0), kernel="interleave")["cuda"]
    assert not named["offered"] and named["reason"].endswith("one element per access on fewer than 264 blocks")
    assert cute_transpose.explain(small, (1, 0))["cuda"]["kernel"] != "interleave"
    named = cute_transpose.explain(large, (1, 0), kernel="interleave")["cuda"]
    assert named["offered"] and "one element per access" in named["config"]
    # 16-byte vectors take any grid
    named = cute_transpose.explain(torch.empty(1024, 4), (1, 0), kernel="interleave")["cuda"]
    assert named["offered"] and "16-byte vectors" in named["config"]


def test_interleave_skipping_gaps_is_no_candidate_on_a_broadcast_input():
    # pixels of 5 bfloat16 channels expanded from one pixel: stride 0 between pixels, gaps skipped
    x = torch.empty(1, 5, dtype=torch.bfloat16).expand(6109111, 5)
    named = cute_transpose.explain(x, (1, 0), kernel="interleave")["cuda"]
    assert not named["offered"] and named["reason"].endswith("skipping the gaps between pixels of a broadcast input")
    assert cute_transpose.explain(x, (1, 0))["cuda"]["kernel"] != "interleave"
    # the same pixels read from memory, 64 elements apart (gaps skipped) or 6 (gaps read)
    for x in (torch.empty(10**6, 64, dtype=torch.bfloat16)[:, :5], torch.empty(10**6, 6, dtype=torch.bfloat16)[:, 1:]):
        assert cute_transpose.explain(x, (1, 0), kernel="interleave")["cuda"]["offered"]


def test_explain_defaults_to_the_transpose_of_the_last_two_dims():
    x = torch.empty(2, 3, 4)
    assert cute_transpose.explain(x) == cute_transpose.explain(x, (0, 2, 1))


def test_explain_is_json_from_the_op():
    text = torch.ops.cute_transpose._explain(torch.empty(5, 7), [1, 0], 90)
    assert json.loads(text)["arch"] == 90


@needs_cuda
def test_explain_on_cuda_names_the_kernel_permute_runs():
    x = torch.empty(16, 3, 64, 64, dtype=torch.uint8, device="cuda")
    info = cute_transpose.explain(x, (0, 2, 3, 1))
    assert info["device"].startswith("cuda") and info["kernel"] in KERNELS and info["config"]


#
# Bad input
#

def test_float_dims_are_an_error_like_torch():
    x = torch.empty(2, 3, 4)
    with pytest.raises(TypeError, match="integers"):
        cute_transpose.permute(x, torch.tensor([2.5, 0.0, 1.0]))
    with pytest.raises(TypeError):
        x.permute(torch.tensor([2.5, 0.0, 1.0]))


def test_integer_tensor_dims_are_accepted():
    x = random_tensor((2, 3, 4), torch.float32)
    assert_bits_equal(cute_transpose.permute(x, torch.tensor([2, 0, 1])), reference(x, (2, 0, 1)))


NOT_DENSE = {
    "nested": (lambda: torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)]), "a nested tensor"),
    "sparse_coo": (lambda: torch.randn(4, 5).to_sparse(), "a tensor of layout torch.sparse_coo; x.to_dense()"),
    "sparse_csr": (lambda: torch.randn(4, 5).to_sparse_csr(), "a tensor of layout torch.sparse_csr; x.to_dense()"),
    "sparse_csc": (lambda: torch.randn(4, 5).to_sparse_csc(), "a tensor of layout torch.sparse_csc; x.to_dense()"),
    "quantized": (lambda: torch.quantize_per_tensor(torch.randn(4, 5), 0.1, 0, torch.quint8),
                  "a quantized tensor \\(dtype torch.quint8\\); x.dequantize()"),
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # nested and quantized tensors warn on creation
@pytest.mark.parametrize("kind", list(NOT_DENSE))
def test_tensors_that_are_not_strided_and_dense_are_a_clear_error(kind):
    """Nested, sparse and quantized tensors reach the dispatcher under their own keys: every op
    (out= forms, and with a gradient, too) answers with what it got and how to get a dense one,
    not the dispatcher's 'could not run' message."""
    make, what = NOT_DENSE[kind]
    x = make()
    calls = {name: (lambda name=name: call(name, x, (1, 0) if name == "permute" else None))
             for name in cute_transpose.OPS}
    calls["permute.out"] = lambda: torch.ops.cute_transpose.permute.out(x, [1, 0], out=torch.empty(5, 4))
    calls["transpose.out"] = lambda: torch.ops.cute_transpose.transpose.out(x, out=torch.empty(5, 4))
    calls["explain"] = lambda: cute_transpose.explain(x, (1, 0))
    calls["_permute_with"] = lambda: torch.ops.cute_transpose._permute_with(x, [1, 0], "gather")
    if kind.startswith("sparse"):
        calls["grad"] = lambda: cute_transpose.permute(make().requires_grad_(), (1, 0))
    for name, fn in calls.items():
        with pytest.raises(RuntimeError, match="expected a strided \\(dense\\) tensor, got " + what):
            fn()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_out_sharing_the_input_is_refused_eager_and_compiled(compiled):
    x = torch.randn(6, 6)
    fn = lambda t: cute_transpose.transpose(t, out=t)  # noqa: E731
    if compiled:
        fn = torch.compile(fn, fullgraph=True)
    with pytest.raises(Exception, match="overlaps the input"):
        fn(x)


#
# The Box kernel's plans, replayed on the CPU (tests/box_model.py)
#

def box_cases():
    """Small permutes of every kind the Box kernel takes: dims of 1-4 anywhere, short and long
    runs, chunked dims, every element size, strided views."""
    import random
    rng = random.Random(7)
    cases = [((2, 3, 40, 60), (0, 2, 3, 1), 1, "contiguous"), ((2, 40, 60, 3), (0, 3, 1, 2), 1, "contiguous"),
             ((33, 6, 64), (1, 0, 2), 8, "contiguous"), ((8, 6, 64), (1, 0, 2), 16, "stepped"),
             ((300, 5, 3), (1, 0, 2), 4, "contiguous"), ((97, 101), (1, 0), 2, "offset"),
             ((2, 3, 2, 5, 2), (4, 2, 0, 3, 1), 1, "contiguous"), ((5, 2, 700), (2, 1, 0), 1, "sliced")]
    for _ in range(60):
        rank = rng.randint(1, 6)
        shape = [rng.choice([1, 2, 3, 4, 5, 7, 16, 33, 64, 130]) for _ in range(rank)]
        while np.prod(shape) > 60000:
            shape[rng.randrange(rank)] = max(1, shape[rng.randrange(rank)] // 2)
        dims = list(range(rank))
        rng.shuffle(dims)
        cases.append((tuple(shape), tuple(dims), rng.choice([1, 2, 4, 8, 16]),
                      rng.choice(["contiguous", "offset", "stepped", "sliced"])))
    return cases


DTYPE_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64, 16: torch.complex128}
BOX_CASES = box_cases()


def over_box_forms_and_cases(test):
    """Parametrizes a test over each box form and each of the random box cases (drawn once)."""
    test = pytest.mark.parametrize("case", BOX_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-{''.join(map(str, c[1]))}-e{c[2]}-{c[3]}")(test)
    return pytest.mark.parametrize("name", ["box", "box/small"])(test)


def box_plan_or_skip(x, dims, name):
    """explain(x, dims, kernel=name) for a box form; a skip where the form has no box for it."""
    try:
        plan = cute_transpose.explain(x, dims, kernel=name)
    except RuntimeError as e:  # box/small: no box small enough to keep positions
        assert name == "box/small" and "1024 vectors a side" in str(e), e
        pytest.skip(str(e))
    if plan["route"] == "empty" or "box" not in plan["cuda"]:
        pytest.skip(f"no box: {plan['cuda'].get('reason')}")
    return plan


@over_box_forms_and_cases
def test_box_plans_move_every_element_once_in_whole_vectors(case, name):
    shape, dims, esize, view = case
    x = view_of(view, shape, DTYPE_OF_SIZE[esize], "cpu")
    if math.prod(shape) == 0:
        return
    plan = box_plan_or_skip(x, dims, name)
    if name == "box/small":
        assert plan["cuda"]["box"]["keeps_positions"] and "position kept" in plan["cuda"]["config"]
    # The input's storage holds each element's own index, so the replay's output names the
    # storage element each output element came from.
    index = torch.arange(x.untyped_storage().nbytes() // esize)
    ref = index.as_strided(x.shape, x.stride(), x.storage_offset()).permute(dims).contiguous().flatten()
    # A plan may move k elements as one wider element (the planner's widening): replay it in
    # those units, where element i holds elements k*i .. k*i+k-1.
    k = plan["cuda"]["element_size"] // esize
    assert x.storage_offset() % k == 0
    groups = ref.view(-1, k)
    assert torch.equal(groups - groups[:, :1], torch.arange(k).expand_as(groups)) and torch.all(groups[:, 0] % k == 0)
    got = box_model.replay(plan["cuda"]["box"], (index[::k] // k).numpy(), x.storage_offset() // k, groups.shape[0])
    assert np.array_equal(got, (groups[:, 0] // k).numpy())


@pytest.fixture(scope="module")
def box_on_the_host(tmp_path_factory):
    """The Box kernel's source compiled for the host (box_host.py), or a skip saying why not."""
    built = box_host.build(tmp_path_factory.mktemp("box_host"))
    if isinstance(built, str):
        pytest.skip(f"the Box kernel cannot be built for the host: {built}")
    return built


@over_box_forms_and_cases
def test_box_kernel_source_runs_the_plans_on_the_host(case, name, box_on_the_host, tmp_path):
    """The plans replayed above, run by the Box kernel's own source on the CPU (box_host.py),
    with 1, 3 or 40 blocks: every output byte is torch's, nothing lands outside the output, and
    no access leaves its tensor or its alignment (the runner aborts on one)."""
    shape, dims, esize, view = case
    x = view_of(view, shape, DTYPE_OF_SIZE[esize], "cpu")
    if math.prod(shape) == 0:
        return
    blocks = (1, 3, 40)[(len(shape) + esize) % 3]
    output, guards = box_host.run(box_on_the_host, tmp_path, x, box_plan_or_skip(x, dims, name)["cuda"], blocks)
    assert torch.equal(output, reference(x, dims).reshape(-1).view(torch.uint8))
    assert torch.all(guards == 0xA5), "the kernel wrote outside the output"


@needs_cuda
@over_box_forms_and_cases
def test_box_forms_write_every_element(case, name):
    """The plans replayed above, run on the GPU into a poisoned output."""
    shape, dims, esize, view = case
    x = view_of(view, shape, DTYPE_OF_SIZE[esize], "cuda")
    if math.prod(shape) == 0:
        return
    try:
        assert_permute_by_writes_every_element(name, x, dims)
    except RuntimeError as e:
        assert "cannot run" in str(e), e
        pytest.skip(str(e))
