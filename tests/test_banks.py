"""Bank maps of the shared-memory seed variants, evaluated from their real C++ layouts (no GPU
needed): each variant has its conflicts where its name says, and only there."""

import pytest
import torch

import cute_transpose
from cute_transpose import banks
from conftest import REPRESENTATIVE

pytestmark = pytest.mark.skipif(not cute_transpose.has_cuda_kernels(),
                                reason="the access maps are compiled with the CUDA kernels")

SIZES = REPRESENTATIVE  # element size -> a dtype of that size


def worst(variant, size, phase):
    return max(banks.bank_map(variant, SIZES[size]).degrees(phase))


@pytest.mark.parametrize("size", SIZES)
def test_bank_conflict_read_conflicts_on_the_shared_memory_read(size):
    assert worst("bank_conflict_read", size, "store") == 1
    # a column of 128-byte rows: every lane in one bank; wide elements go 16 or 8 lanes at a time
    assert worst("bank_conflict_read", size, "load") == 32 * 4 // max(size, 4)


@pytest.mark.parametrize("size", SIZES)
def test_bank_conflict_write_conflicts_on_the_shared_memory_write(size):
    assert worst("bank_conflict_write", size, "load") == 1
    assert worst("bank_conflict_write", size, "store") > 1
    if size == 4:
        assert worst("bank_conflict_write", size, "store") == 32  # the seeds' 32-way conflict


@pytest.mark.parametrize("size", SIZES)
def test_swizzled_is_conflict_free_for_every_element_size(size):
    assert worst("swizzled", size, "store") == 1
    assert worst("swizzled", size, "load") == 1


@pytest.mark.parametrize("size", SIZES)
def test_padded_is_conflict_free_except_for_sub_word_elements(size):
    # One pad element shifts a row by one bank only when an element is at least a word: with
    # 2-byte elements two rows share each bank (2-way), with 1-byte ones four (README, docs).
    assert worst("padded", size, "store") == 1
    assert worst("padded", size, "load") == {1: 4, 2: 2}.get(size, 1)


@pytest.mark.parametrize("size", SIZES)
def test_pipelined_reads_are_conflict_free_for_every_element_size(size):
    m = banks.bank_map("pipelined", SIZES[size])
    assert m.store.shape[0] == 0  # TMA writes the stages: no lanes in phase 1
    assert m.load.shape[0] > 0 and max(m.degrees("load")) == 1


@pytest.mark.parametrize("size", [1, 2, 4, 8])
def test_pipelined_needs_its_rotated_reads(size):
    """The same lanes reading their blocks' rows in plain order (no rotation) conflict: the 8
    rows one wavefront reads would share r % 8, so the 128-byte swizzle maps them to few banks."""
    m = banks.bank_map("pipelined", SIZES[size])
    rows, cols = m.tile.shape
    v = 16 // size
    cm = rows // v
    plain = [[int(m.tile[(lane % cm) * v + i, (lane // cm) * v]) for lane in range(32)] for i in range(v)]
    assert max(banks.conflict_degree(step, 16) for step in plain) > 1


def test_swizzled_grid_is_the_seeds_xor_pattern():
    grid = banks.bank_map("swizzled", torch.float32).bank_grid
    assert grid[0].tolist() == list(range(32))
    for m in range(32):
        assert grid[m].tolist() == [n ^ m for n in range(32)]
    for n in range(32):  # every column of 32 rows visits every bank once
        assert sorted(grid[:32, n].tolist()) == list(range(32))


@pytest.mark.parametrize("addresses, size, degree", [
    ([4 * t for t in range(32)], 4, 1),        # consecutive words
    ([0] * 32, 4, 1),                          # one word, broadcast
    ([128 * t for t in range(32)], 4, 32),     # a 128-byte stride: one bank
    ([256 * t for t in range(32)], 4, 32),
    ([132 * t for t in range(32)], 4, 1),      # padded stride
    ([8 * t for t in range(32)], 8, 1),        # 8-byte elements, contiguous: 2 wavefronts, ideal
    ([t for t in range(32)], 1, 1),            # bytes sharing words
    ([128 * t + 64 * (t % 2) for t in range(32)], 4, 16),
])
def test_conflict_degree(addresses, size, degree):
    assert banks.conflict_degree(addresses, size) == degree


def test_cli_prints_grid_and_verdicts(capsys):
    banks.main(["bank_conflict_read", "--dtype", "float32", "--rows", "2"])
    out = capsys.readouterr().out
    assert "phase 1, store along rows: conflict-free" in out
    assert "phase 2, load down columns: 32-way bank conflicts" in out


def test_unknown_variant_is_a_clear_error():
    with pytest.raises(ValueError, match="no shared-memory tile"):
        banks.bank_map("naive_coalesced_read")
