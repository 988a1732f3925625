"""The ops in a CUDA program: ordered on the current stream, captured in and replayed from CUDA
graphs, from two threads on two streams at once, and on a tensor of another device than the
current one (the device guard). GPU only: every test here skips without CUDA kernels."""

import threading

import pytest
import torch

from conftest import (SM90_OPS, CUDA_MARKS, IS_SM90, MATRIX_OPS, assert_bits_equal, call, dims_id, expected,
                      random_tensor)

pytestmark = list(CUDA_MARKS)

# (op, dims): every matrix op on its last two dims, and permute's two commonest permutations.
CASES = [(name, None) for name in MATRIX_OPS] + [("permute", (0, 2, 1, 3)), ("permute", (0, 3, 1, 2))]


def case_id(case):
    name, dims = case
    return name if dims is None else name + dims_id(dims)


def sample(case, shape_2d, dtype):
    """A random input for the case: shape_2d (batch, M, N) for a matrix op; (B, S, H, D) for
    permute."""
    name, dims = case
    return random_tensor(shape_2d if dims is None else (4, 48, 6, 64), dtype, "cuda")


def skip_if_unsupported(name):
    if name in SM90_OPS and not IS_SM90:
        pytest.skip(f"{name} needs sm_90")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_runs_on_the_current_stream(case):
    """The op must be ordered after earlier work on the current (non-default) stream: the input
    is written there after a long sleep, so a kernel on another stream would read stale data.
    The out= form too, where the op has one."""
    name, dims = case
    skip_if_unsupported(name)
    src = sample(case, (3, 64, 48), torch.float32)
    x = torch.zeros_like(src)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)  # ~25 ms of GPU time on this stream
        x.copy_(src)
        out = call(name, x, dims)
        if name in ("permute", "transpose"):
            out2 = torch.empty_like(out)
            call(name, x, dims, out=out2)
    stream.synchronize()
    assert_bits_equal(out, expected(name, src, dims))
    if name in ("permute", "transpose"):
        assert_bits_equal(out2, expected(name, src, dims))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_cuda_graph_capture_and_replay(case):
    name, dims = case
    skip_if_unsupported(name)
    x = sample(case, (3, 96, 160), torch.float32 if dims is None else torch.bfloat16)
    fn = lambda: call(name, x, dims)  # noqa: E731
    fn()  # warm up outside the capture (first-call setup must not be captured)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    for _ in range(2):  # new data in the captured input, then replay
        x.copy_(random_tensor(x.shape, x.dtype, "cuda"))
        graph.replay()
        torch.cuda.synchronize()
        assert_bits_equal(out, expected(name, x, dims))


def test_two_threads_on_two_streams():
    names = [n for n in MATRIX_OPS if n not in SM90_OPS or IS_SM90]
    errors = []

    def worker(seed):
        try:
            gen = torch.Generator().manual_seed(seed)
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                for i in range(40):
                    name = names[(seed + i) % len(names)]
                    x = random_tensor((2, 64 + 16 * (i % 5), 80), torch.bfloat16, "cuda", gen)
                    out = call(name, x)
                    stream.synchronize()
                    assert_bits_equal(out, expected(name, x))
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


class TmaTransposeBackward(torch.autograd.Function):
    """The identity forward; a backward that runs the TMA kernel, which the autograd engine
    calls on its own device thread."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return torch.ops.cute_transpose._permute_with(g, [0, 2, 1], "tma").transpose(-2, -1)


@pytest.mark.skipif(not IS_SM90, reason="tma needs sm_90")
def test_tma_runs_in_the_autograd_engine_thread():
    # There the CUDA context need not be current yet: encoding the TMA descriptor failed and
    # CuTe aborted the process, until the launcher made the context current.
    x = random_tensor((3, 36, 20), torch.float64, "cuda").requires_grad_()
    g = random_tensor((3, 36, 20), torch.float64, "cuda")
    TmaTransposeBackward.apply(x).backward(g)
    assert_bits_equal(x.grad, g)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_device_guard(case):
    """An input on cuda:1 while cuda:0 is current: the kernel runs on cuda:1 (on its current
    stream), the result lives there, and cuda:0 stays current."""
    name, dims = case
    skip_if_unsupported(name)
    with torch.cuda.device(1):
        x = sample(case, (3, 64, 48), torch.float32)
    with torch.cuda.device(0):
        out = call(name, x, dims)
        if name in ("permute", "transpose"):
            out2 = torch.empty_like(out)
            assert call(name, x, dims, out=out2) is out2
        assert torch.cuda.current_device() == 0
    torch.cuda.synchronize(1)
    assert out.device == x.device == torch.device("cuda", 1)
    assert_bits_equal(out, expected(name, x, dims))
    if name in ("permute", "transpose"):
        assert_bits_equal(out2, expected(name, x, dims))
