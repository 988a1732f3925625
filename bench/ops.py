"""The ops each section times: torch clone (the baseline), eager PyTorch, torch.compile, the
autotuned Triton kernel, and cute_transpose's ops.

torch.compile runs two ways. The matrix and permutation sections compile each cell afresh with
static shapes (``dynamic=False``). The sweep compiles once per (rank, permutation, dtype, view)
with ``dynamic=True`` and reuses that graph for every size (`DynamicCompiles`).
"""

from __future__ import annotations

import importlib
import types
import warnings
from typing import Optional, Sequence

import torch

from bench.cases import Cell, Dims
from bench.harness import OpSpec, TensorFn, ext


def torch_clone(x: torch.Tensor) -> torch.Tensor:
    """The bandwidth baseline every ratio refers to."""
    return x.clone()


def eager_permute(dims: Dims, name: str = "eager_permute") -> TensorFn:
    """``x.permute(dims).contiguous()``, as a function with a code object of its own: Dynamo
    keeps one cache per code object, so each compiled variant gets its own cache."""
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x.permute(dims).contiguous()
    code = fn.__code__.replace(co_name=name)
    return types.FunctionType(code, fn.__globals__, name, None, fn.__closure__)


def eager_transpose(x: torch.Tensor) -> torch.Tensor:
    """What a PyTorch user writes for a matrix transpose."""
    return x.transpose(-2, -1).contiguous()


def static_compile(cell: Cell) -> TensorFn:
    """torch.compile of eager for this cell only (static shapes). Dynamo is reset first, so no
    recompilation limit is in the way; the checked first call compiles, so compilation is never
    timed."""
    torch._dynamo.reset()
    return torch.compile(eager_permute(cell.dims), dynamic=False, fullgraph=True)


class DynamicCompiles:
    """One ``torch.compile(..., dynamic=True)`` per (rank, permutation, dtype, view), reused
    across sizes. Dynamo is told to recompile as often as needed and to raise instead of
    silently running eager when a limit is hit; duck sizing is off, so that equal sizes in one
    cell do not become a guard that the next cell fails."""

    def __init__(self) -> None:
        self.compiled: dict[tuple, TensorFn] = {}
        self.prepared = False
        self.graphs_before = 0

    def prepare(self) -> None:
        torch._dynamo.reset()
        config = torch._dynamo.config
        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(config, name):
                setattr(config, name, 1 << 16)
        for name in ("accumulated_recompile_limit", "accumulated_cache_size_limit"):
            if hasattr(config, name):
                setattr(config, name, 1 << 20)
        for name in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit"):
            if hasattr(config, name):
                setattr(config, name, True)
        import torch.fx.experimental._config as fx_config
        fx_config.use_duck_shape = False
        self.graphs_before = unique_graphs() or 0
        self.prepared = True

    def make(self, cell: Cell) -> TensorFn:
        if not self.prepared:
            self.prepare()
        key = (len(cell.dims), cell.dims, cell.dtype, cell.view)
        if key not in self.compiled:
            fn = eager_permute(cell.dims, f"sweep_permute_{len(self.compiled)}")
            self.compiled[key] = torch.compile(fn, dynamic=True, fullgraph=True)
        return self.compiled[key]

    def graphs(self) -> Optional[int]:
        """Graphs Dynamo has compiled for these functions (None if it cannot tell)."""
        now = unique_graphs()
        return None if now is None or not self.prepared else now - self.graphs_before


def unique_graphs() -> Optional[int]:
    """Graphs Dynamo has compiled in this process (its counter survives torch._dynamo.reset)."""
    try:
        from torch._dynamo.utils import counters
        return int(counters["stats"]["unique_graphs"])
    except Exception:  # noqa: BLE001  (a report detail)
        return None


def triton_transpose(cell: Cell) -> TensorFn:
    """The autotuned Triton kernel, imported lazily (Triton is not needed on the CPU)."""
    return importlib.import_module("bench.triton_transpose").triton_transpose


def triton_applies(cell: Cell) -> bool:
    """Triton handles contiguous (..., M, N) -> (..., N, M), in real dtypes."""
    return cell.is_matrix_transpose and cell.dtype != "complex128"


def cute_permute(cell: Cell) -> TensorFn:
    dims = list(cell.dims)
    return lambda x: torch.ops.cute_transpose.permute(x, dims)


def cute_autotuned(cell: Cell) -> TensorFn:
    """`permute` with per-shape autotuning on: its first (checked) call times the candidates."""
    autotune = ext().autotune
    dims = list(cell.dims)

    def fn(x: torch.Tensor) -> torch.Tensor:
        with autotune():
            return torch.ops.cute_transpose.permute(x, dims)
    return fn


def cute_op(name: str):
    return lambda cell: getattr(torch.ops.cute_transpose, name)


def cute_best(cell: Cell) -> TensorFn:
    """`transpose` on a matrix transpose, else `permute`: what a user of ours calls."""
    if cell.is_matrix_transpose:
        return lambda x: torch.ops.cute_transpose.transpose(x, -2, -1)
    return cute_permute(cell)


CLONE = OpSpec("clone", "copy", lambda cell: torch_clone,
               "torch `x.clone()` of a contiguous tensor of the cell's bytes: the baseline of "
               "every ratio")


# --------------------------------------------------------------------------------------------
# The op list of each section
# --------------------------------------------------------------------------------------------

def matrix_ops() -> list[OpSpec]:
    """Every op of the matrix section this build offers, in table order."""
    specs = [
        CLONE,
        OpSpec("copy", "copy", cute_op("copy"),
               "`cute_transpose.copy`: same-shape copy, the seed kernels' ceiling"),
        OpSpec("eager", "permute", lambda cell: eager_transpose,
               "`x.transpose(-2, -1).contiguous()`"),
        OpSpec("compile", "permute", static_compile,
               "`torch.compile` of eager (static shapes: dynamic=False, compiled per cell)",
               gpu_only=True, header="compile (static)"),
        OpSpec("triton", "permute", triton_transpose,
               "autotuned Triton tile transpose (bench/triton_transpose.py)", gpu_only=True,
               applies=triton_applies),
    ]
    specs += [OpSpec(v, "permute", cute_op(v), f"`cute_transpose.{v}`", may_refuse=(v in ("tma", "pipelined")))
              for v in ext().VARIANTS]
    if hasattr(torch.ops.cute_transpose, "transpose"):
        specs.append(OpSpec("transpose", "permute", cute_best,
                            "`cute_transpose.transpose`: the best kernel for the shape",
                            explained=True))
    return specs


def matrix_op_names() -> tuple[str, ...]:
    return tuple(s.name for s in matrix_ops())


def select_matrix_ops(requested: Optional[Sequence[str]], dry_run: bool) -> list[OpSpec]:
    """The matrix section's ops: all (or the requested ones), torch clone always (it is the
    baseline), none that needs a GPU in the CPU demo."""
    specs = matrix_ops()
    available = {s.name for s in specs}
    for name in sorted(set(requested or ()) - available):
        warnings.warn(f"op {name!r} is not available in this build; skipping it")
    wanted = {"clone", *(requested or available)}
    selected = [s for s in specs if s.name in wanted]
    if dry_run and requested:
        for s in selected:
            if s.gpu_only:
                warnings.warn(f"op {s.name!r} needs a GPU; the CPU demo skips it")
    return [s for s in selected if not (dry_run and s.gpu_only)]


def permute_ops(dry_run: bool) -> list[OpSpec]:
    """The permutation rows' ops."""
    specs = [
        CLONE,
        OpSpec("eager", "permute", lambda cell: eager_permute(cell.dims),
               "`x.permute(dims).contiguous()`, also the reference of the bit-exact check"),
        OpSpec("compile", "permute", static_compile,
               "`torch.compile` of eager (fullgraph, static shapes: dynamic=False, compiled "
               "per row)", gpu_only=True, header="compile (static)"),
        OpSpec("permute", "permute", cute_permute, "`cute_transpose.permute(x, dims)`",
               explained=True),
    ]
    return [s for s in specs if not (dry_run and s.gpu_only)]


def sweep_ops(dry_run: bool, compiles: DynamicCompiles) -> list[OpSpec]:
    """The sweep's ops. Triton runs only where it applies (contiguous matrix transposes)."""
    specs = [
        CLONE,
        OpSpec("eager", "permute", lambda cell: eager_permute(cell.dims),
               "`x.permute(dims).contiguous()`, also the reference of the bit-exact check"),
        OpSpec("compile", "permute", compiles.make,
               "`torch.compile` of eager (fullgraph, **dynamic shapes**: dynamic=True, one "
               "graph per rank, permutation, dtype and view, reused across sizes)",
               gpu_only=True, header="compile (dynamic)"),
        OpSpec("triton", "permute", triton_transpose,
               "autotuned Triton tile transpose, on contiguous (..., M, N) -> (..., N, M) "
               "cells in real dtypes only", gpu_only=True, applies=triton_applies),
        OpSpec("permute", "permute", cute_permute, "`cute_transpose.permute(x, dims)` (ours)",
               explained=True),
        OpSpec("autotuned", "permute", cute_autotuned,
               "ours with `cute_transpose.autotune()` on: the fastest kernel for the shape, timed "
               "at its first call (in the checked call, so its cost is in the first-call seconds)",
               gpu_only=True, explained=True, tuned=True),
    ]
    return [s for s in specs if not (dry_run and s.gpu_only)]


def workload_ops() -> list[OpSpec]:
    """The workloads' ops: the sweep's, less torch.compile and Triton (a model's copies are
    timed against the eager code the model runs)."""
    return [s for s in sweep_ops(False, DynamicCompiles()) if s.name not in ("compile", "triton")]


def cpu_row_ops() -> list[OpSpec]:
    """The CPU demo's full-size rows: torch against ours, on the CPU."""
    return [
        CLONE,
        OpSpec("eager", "permute", lambda cell: eager_permute(cell.dims),
               "torch: `x.t().contiguous()` / `x.permute(dims).contiguous()`"),
        OpSpec("ours", "permute", cute_best,
               "ours: `cute_transpose.transpose(x)` for a matrix, else "
               "`cute_transpose.permute(x, dims)`", explained=True),
    ]
