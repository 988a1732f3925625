"""Shared-memory bank maps of the shared-memory variants, from their real C++ layouts.

    python -m cute_transpose.banks swizzled --dtype float32

prints the bank id of every element of the shared-memory tile (as the seeds draw it), then the
conflict degree of each warp access in the two phases: phase 1 stores the tile row by row,
phase 2 loads it column by column. `pipelined` has no phase 1 (TMA writes its stages) and loads
16 bytes per lane in phase 2. The addresses come from the extension
(torch.ops.cute_transpose._smem_access_map), which evaluates the kernel's own layout and thread
partitions, so the map cannot drift from the code.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch

from . import _C  # noqa: F401  (registers the ops)

# The variants with a shared-memory tile, as the extension lists them.
VARIANTS = tuple(torch.ops.cute_transpose._smem_variants())
# Bytes each lane moves per shared-memory access, where it is not one element.
ACCESS_BYTES = {"pipelined": 16}
BANKS = 32
BANK_BYTES = 4
WAVEFRONT_BYTES = BANKS * BANK_BYTES  # one shared-memory wavefront serves 128 bytes


def conflict_degree(addresses: list[int], element_size: int) -> int:
    """How many times slower than conflict-free one warp access is.

    Each lane reads `element_size` bytes at its address. A bank serves one 4-byte word per
    wavefront (lanes reading the same word share it), so the access takes as many wavefronts
    as the busiest bank has distinct words. A conflict-free access of 8- or 16-byte elements
    still needs 2 or 4 wavefronts (256 or 512 bytes); the degree divides that out.
    """
    words_per_bank: dict[int, set[int]] = {}
    for address in addresses:
        for word in range(address // BANK_BYTES, (address + element_size - 1) // BANK_BYTES + 1):
            words_per_bank.setdefault(word % BANKS, set()).add(word)
    wavefronts = max(len(words) for words in words_per_bank.values())
    ideal = max(1, len(addresses) * max(element_size, BANK_BYTES) // WAVEFRONT_BYTES)
    return max(1, wavefronts // ideal)


@dataclass
class BankMap:
    variant: str
    element_size: int
    access_bytes: int    # bytes each lane reads or writes per access
    store: torch.Tensor  # (steps, 32) byte addresses, phase 1
    load: torch.Tensor   # (steps, 32) byte addresses, phase 2
    tile: torch.Tensor   # (bM, bN) byte address of each element

    @property
    def bank_grid(self) -> torch.Tensor:
        """The bank of the first byte of every element of the tile, (bM, bN)."""
        return (self.tile // BANK_BYTES) % BANKS

    def degrees(self, phase: str) -> list[int]:
        """The conflict degree of each of warp 0's accesses in phase 'store' or 'load'."""
        steps = getattr(self, phase)
        return [conflict_degree(row.tolist(), self.access_bytes) for row in steps]


def bank_map(variant: str, dtype: torch.dtype = torch.float32) -> BankMap:
    """The bank map of a shared-memory seed variant for elements of `dtype`."""
    if variant not in VARIANTS:
        raise ValueError(f"no shared-memory tile in {variant!r}; choose from {', '.join(VARIANTS)}")
    element_size = torch.empty((), dtype=dtype).element_size()
    store, load, tile = torch.ops.cute_transpose._smem_access_map(variant, element_size)
    return BankMap(variant, element_size, ACCESS_BYTES.get(variant, element_size), store, load, tile)


def render(m: BankMap, rows: int = 8) -> str:
    """The bank-id grid of the first `rows` tile rows, then the per-access conflict degrees."""
    grid = m.bank_grid
    lines = [f"{m.variant}, {m.element_size}-byte elements: tile {tuple(grid.shape)}, "
             f"bank of each element (first {min(rows, grid.shape[0])} rows)"]
    for row in grid[:rows].tolist():
        lines.append(" ".join(f"{b:2d}" for b in row))
    for phase, what in (("store", "phase 1, store along rows"), ("load", "phase 2, load down columns")):
        degrees = m.degrees(phase)
        if not degrees:
            lines.append(f"{what}: no lanes (TMA writes the tile)")
            continue
        worst = max(degrees)
        verdict = "conflict-free" if worst == 1 else f"{worst}-way bank conflicts"
        lines.append(f"{what}: {verdict} (degree of each of warp 0's {len(degrees)} accesses: "
                     f"{' '.join(map(str, degrees))})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m cute_transpose.banks", description=__doc__.split("\n\n")[0])
    p.add_argument("variant", choices=VARIANTS)
    p.add_argument("--dtype", default="float32", help="a torch dtype name, e.g. float32, bfloat16, uint8")
    p.add_argument("--rows", type=int, default=8, help="tile rows to print")
    args = p.parse_args(argv)
    dtype = getattr(torch, args.dtype, None)
    if not isinstance(dtype, torch.dtype):
        p.error(f"unknown dtype {args.dtype!r}")
    print(render(bank_map(args.variant, dtype), args.rows))


if __name__ == "__main__":
    main()
