"""Per-shape autotuning (cute_transpose.autotune): the setting and its context manager, the
remembered picks, and on the GPU the results of tuned calls -- bit-exact on fresh random data
into poisoned outputs, for views, broadcasts, odd sizes and every element size -- the pick kept
for a shape and reported by explain, the current stream, CUDA graph capture and autograd."""

import pytest
import torch

import cute_transpose
from conftest import (ONE_PER_SIZE, assert_bits_equal, dims_id, dtype_id, inverse, needs_cuda,
                      poisoned, random_tensor, reference, run_poisoned)


@pytest.fixture
def tuning():
    """Autotuning on, with no remembered picks, for one test; as before afterwards."""
    cute_transpose.autotune_cache(clear=True)
    with cute_transpose.autotune():
        yield
    cute_transpose.autotune_cache(clear=True)


def test_the_setting_and_its_context_manager():
    before = cute_transpose.autotune_enabled()
    try:
        cute_transpose.autotune(False)
        assert not cute_transpose.autotune_enabled()
        with cute_transpose.autotune():
            assert cute_transpose.autotune_enabled()
            with cute_transpose.autotune(False):
                assert not cute_transpose.autotune_enabled()
            assert cute_transpose.autotune_enabled()
        assert not cute_transpose.autotune_enabled()
        cute_transpose.autotune()
        assert cute_transpose.autotune_enabled()
    finally:
        cute_transpose.autotune(before)


def test_the_cpu_never_times(tuning):
    x = random_tensor((6, 5, 7), torch.float32)
    assert_bits_equal(cute_transpose.permute(x, (2, 0, 1)), reference(x, (2, 0, 1)))
    assert cute_transpose.autotune_cache() == []
    assert cute_transpose.explain(x, (2, 0, 1))["kernel"] == "aten"


def views(dtype):
    """(name, input, dims): a plain permute, an offset slice, a stepped slice, a broadcast input,
    a transposed matrix of odd sizes, an image batch with 3 channels."""
    base = random_tensor((5, 37, 66), dtype, "cuda")
    return [
        ("permute", random_tensor((4, 40, 6, 72), dtype, "cuda"), (0, 2, 1, 3)),
        ("offset", base[:, :, 1:], (2, 0, 1)),
        ("step", base[:, ::2, :], (1, 2, 0)),
        ("broadcast", random_tensor((1, 37, 9), dtype, "cuda").expand(6, 37, 9), (2, 0, 1)),
        ("odd", random_tensor((97, 131), dtype, "cuda"), (1, 0)),
        ("image", random_tensor((2, 3, 40, 56), dtype, "cuda"), (0, 2, 3, 1)),
    ]


@needs_cuda
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=dtype_id)
def test_tuned_calls_are_bit_exact_and_keep_their_pick(tuning, dtype):
    for name, x, dims in views(dtype):
        expected = reference(x, dims)
        out_shape = expected.shape
        # The first call times the candidates into its output, then runs the fastest there.
        assert_bits_equal(cute_transpose.permute(x, dims), expected)
        picks = cute_transpose.autotune_cache()
        assert all(forced_kernel(p["kernel"]) in cute_transpose.KERNELS for p in picks), picks
        # A later call runs the remembered kernel alone: into a poisoned output, with out=, and
        # as explain reports it.
        info = cute_transpose.explain(x, dims)
        assert info["reason"].startswith("autotuned on this device"), (name, info)
        assert info["name"] in {p["kernel"] for p in picks}
        out = run_poisoned(lambda t: cute_transpose.permute(t, dims), x, out_shape)
        assert_bits_equal(out, expected)
        given = poisoned(out_shape, dtype, "cuda")
        assert cute_transpose.permute(x, dims, out=given) is given
        assert_bits_equal(given, expected)
        assert len(cute_transpose.autotune_cache()) == len(picks), "a second call of a shape timed again"


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16], ids=dtype_id)
def test_tuning_launches_every_candidate_of_a_long_matrix(tuning, dtype):
    """Matrices of 3 rows and 4.2M columns: the autotuner launches every kernel that takes the
    plan, words among them, whose one-tile-per-block grid must walk the 131,076 n-tiles of its
    narrow tiles in blockIdx.x (a launch that failed raised here)."""
    for x, dims in [(random_tensor((3, 4194401), dtype, "cuda"), (1, 0)),
                    (random_tensor((1, 4194401, 1), dtype, "cuda").expand(3, -1, -1), (1, 2, 0))]:
        assert cute_transpose.explain(x, dims, kernel="words")["kernel"] == "words"
        expected = reference(x, dims)
        assert_bits_equal(run_poisoned(lambda t: cute_transpose.permute(t, dims), x, expected.shape), expected)


def forced_kernel(name):
    """The kernel of a name that forces one: "rows/together" -> "rows"."""
    kernel, _, order = name.partition("/")
    assert order in ("", "together"), name
    return kernel


def timings(entry):
    """An autotune_cache() entry's timings, "tile 12.3 us, rows/together 12.9 us, ...", as {name: us}."""
    return {name: float(us) for name, us, unit in (t.split(" ") for t in entry["timings"].split(", "))}


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
def test_tuning_times_rows_and_gather_in_both_block_orders(tuning, dtype):
    """Runs of 24 elements whose next run lies far on in the output: the autotuner times rows
    and gather in the plain order and with their blocks reading neighbouring runs together
    (BlockOrder, cuda/index_walk.cuh), keeps the order it picked, and runs it bit-exactly."""
    x = random_tensor((4100, 3, 24), dtype, "cuda")
    dims = (1, 0, 2)
    expected = reference(x, dims)
    assert_bits_equal(cute_transpose.permute(x, dims), expected)
    (entry,) = cute_transpose.autotune_cache()
    assert {"rows", "rows/together", "gather", "gather/together"} <= set(timings(entry)), entry
    info = cute_transpose.explain(x, dims)
    assert info["name"] == entry["kernel"], (info, entry)
    assert_bits_equal(run_poisoned(lambda t: cute_transpose.permute(t, dims), x, expected.shape), expected)


@needs_cuda
def test_each_shape_is_timed_once_and_clearing_forgets(tuning):
    x = random_tensor((3, 64, 96), torch.bfloat16, "cuda")
    y = random_tensor((3, 64, 97), torch.bfloat16, "cuda")
    for _ in range(3):
        cute_transpose.transpose(x, 1, 2)
    assert len(cute_transpose.autotune_cache()) == 1
    cute_transpose.transpose(y, 1, 2)
    entries = cute_transpose.autotune_cache(clear=True)
    assert len(entries) == 2 and cute_transpose.autotune_cache() == []
    for e in entries:  # "tile 12.3 us, tma 12.9 us, ...", fastest first
        timed = timings(e)
        times = list(timed.values())
        assert times == sorted(times) and times[0] > 0
        # the fastest, or the tuning table's pick where that is within 2% of it
        assert timed[e["kernel"]] <= times[0] / 0.98 + 0.05  # (timings are printed to 0.1 us)
    with cute_transpose.autotune(False):
        cute_transpose.transpose(x, 1, 2)
        assert not cute_transpose.explain(x, (0, 2, 1))["reason"].startswith("autotuned")  # the table's pick
    assert cute_transpose.autotune_cache() == []


@needs_cuda
def test_tuning_on_a_side_stream(tuning):
    """The timing runs on the current stream: its input, written there after a long sleep, is
    read after that write."""
    src = random_tensor((2, 96, 80), torch.float32, "cuda")
    x = torch.zeros_like(src)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)
        x.copy_(src)
        out = cute_transpose.permute(x, (2, 0, 1))
    stream.synchronize()
    assert_bits_equal(out, reference(src, (2, 0, 1)))


@needs_cuda
def test_a_shape_first_seen_in_graph_capture_is_not_timed(tuning):
    x = random_tensor((4, 72, 40), torch.float16, "cuda")
    static_out = None
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            static_out = cute_transpose.permute(x, (1, 2, 0))
    torch.cuda.current_stream().wait_stream(stream)
    assert cute_transpose.autotune_cache() == []  # capture cannot time
    x.copy_(random_tensor(x.shape, x.dtype, "cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert_bits_equal(static_out, reference(x, (1, 2, 0)))


@needs_cuda
@pytest.mark.parametrize("dims", [(0, 2, 3, 1), (3, 1, 0, 2)], ids=dims_id)
def test_gradients_with_tuning(tuning, dims):
    x = random_tensor((2, 8, 30, 18), torch.float64, "cuda").requires_grad_()
    y = cute_transpose.permute(x, dims)
    g = random_tensor(y.shape, torch.float64, "cuda")
    y.backward(g)
    assert_bits_equal(y.detach(), reference(x.detach(), dims))
    assert_bits_equal(x.grad, reference(g, inverse(dims)))
    assert len(cute_transpose.autotune_cache()) == 2  # the forward's shape and the backward's
