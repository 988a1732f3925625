"""Robustness: CUDA-graph capture and replay, concurrent streams from two threads, and a
seeded, time-bounded fuzz over shapes, dtypes and strides (CPU always, GPU where present)."""

import math
import random
import threading
import time

import pytest
import torch

from conftest import MATRIX_OPS, DEVICES, HAS_CUDA, IS_SM90, assert_bits_equal, expected, op, random_tensor

ALL_OPS = MATRIX_OPS


def usable(name):
    return name != "tma" or IS_SM90


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("name", ALL_OPS)
def test_cuda_graph_capture_and_replay(name):
    if not usable(name):
        pytest.skip("tma needs sm_90")
    x = random_tensor((3, 96, 160), torch.float32, "cuda")
    fn = op(name)
    fn(x)  # warm up outside the capture (first-call setup must not be captured)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(x)
    for _ in range(2):  # new data in the captured input, then replay
        x.copy_(random_tensor(x.shape, x.dtype, "cuda"))
        graph.replay()
        torch.cuda.synchronize()
        assert_bits_equal(out, expected(name, x))


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_two_threads_on_two_streams():
    names = [n for n in ALL_OPS if usable(n)]
    errors = []

    def worker(seed):
        try:
            gen = torch.Generator().manual_seed(seed)
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                for i in range(40):
                    name = names[(seed + i) % len(names)]
                    x = random_tensor((2, 64 + 16 * (i % 5), 80), torch.bfloat16, "cuda", gen)
                    out = op(name)(x)
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


FUZZ_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.float16, torch.bfloat16, torch.int32,
               torch.float32, torch.int64, torch.float64, torch.complex64, torch.complex128]


def random_view(rng, device):
    """A random tensor of rank 2-4, possibly sliced, stepped, transposed or expanded."""
    rank = rng.randint(2, 4)
    shape = []
    for _ in range(rank):  # at most 2^21 elements in all
        room = (1 << 21) // max(1, math.prod(shape))
        size = rng.choice([0, 1, 2, 3, 7, 16, 33, 64, 100, 129, 257]) if rng.random() < 0.9 \
            else rng.randint(1, 600)
        shape.append(min(size, room))
    dtype = rng.choice(FUZZ_DTYPES)
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
    """Random shapes, dtypes and views against torch, for about 20 s, from a fixed seed."""
    rng = random.Random(20261122)
    names = [n for n in ALL_OPS if usable(n) or device == "cpu"]
    deadline = time.monotonic() + 20
    cases = 0
    while time.monotonic() < deadline:
        x = random_view(rng, device)
        name = rng.choice(names)
        if name == "tma" and device == "cuda" and (x.size(-2) * x.element_size()) % 16 and x.numel():
            with pytest.raises(RuntimeError, match="multiple of 16 bytes"):
                op(name)(x)
        else:
            try:
                assert_bits_equal(op(name)(x), expected(name, x))
            except AssertionError as e:
                raise AssertionError(f"{name} on {x.dtype} {tuple(x.shape)} strides {x.stride()}: {e}")
        cases += 1
    assert cases > 50
