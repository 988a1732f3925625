"""The workload the sanitizers watch (scripts/sanitize.sh): every op x element size on an odd
and a batched shape (and a TMA-aligned one), and `permute` on cases for each kernel it chooses
among, each kernel forced by name, each result checked on the CPU. Inputs are made on the CPU and copied over, so that the only
kernels that run are this extension's; the pipelined kernel on shapes that wrap its ring; and the
loads that keep their input lines in L2, on outputs of 128 MiB and more."""

import os
import sys

import torch

import cute_transpose

# initcheck does not see the writes TMA stores make (docs/PERFORMANCE.md): it would report every
# output of the kernels that store through TMA as uninitialized, so under it they are left out.
TMA_STORES = ("tma", "pipelined") if os.environ.get("SANITIZE_TOOL") == "initcheck" else ()

SHAPES = [(37, 70), (3, 45, 100), (2, 48, 72)]  # odd; batched; M * size a multiple of 16 (tma)
DTYPES = [torch.uint8, torch.bfloat16, torch.float32, torch.float64, torch.complex128]
# (shape, dims, slice of the last dim): cases for each kernel of the chooser, each forced by
# name: rows (vectors; scalars on a stepped view), tiles (16-byte and single-element vectors),
# interleave (pack, unpack, a sliced view with a scalar tail, unaligned planes one element per
# access, and pixels with gaps between them, skipped or read -- the last pixel's gap would lie
# past the storage; uint8 planes off the 16-byte grid, realigned, up to the storage's last
# byte), boxes of small dims (default and box/small), TMA.
PERMUTES = [((4, 33, 6, 64), (0, 2, 1, 3), slice(None)), ((4, 33, 6, 64), (0, 2, 1, 3), slice(None, None, 2)),
            ((3, 40, 96), (0, 2, 1), slice(None)), ((37, 70), (1, 0), slice(None)),
            ((2, 3, 40, 48), (0, 2, 3, 1), slice(None)), ((2, 40, 48, 3), (0, 3, 1, 2), slice(None)),
            ((2, 4, 1088), (0, 2, 1), slice(0, 1076)), ((4, 8, 16, 8, 32), (0, 3, 1, 4, 2), slice(None)),
            ((2, 3, 2, 5, 2), (4, 2, 0, 3, 1), slice(None)), ((3, 5, 7, 9), (3, 1, 0, 2), slice(None)),
            ((2, 48, 72), (0, 2, 1), slice(None)), ((2, 33, 37, 3), (0, 3, 1, 2), slice(None)),
            ((2, 3, 1100), (0, 2, 1), slice(1, 1099)), ((2, 1100, 9), (0, 2, 1), slice(0, 7)),
            ((2, 1100, 8), (0, 2, 1), slice(1, None)), ((3, 1031), (1, 0), slice(None))]


def check(run, want, label, refused):
    """True if run() gives want's bits, False if not (printed), None where the op refuses the
    case with an error that contains `refused`."""
    try:
        got = run().cpu()
    except RuntimeError as e:
        if refused in str(e):
            return None
        raise
    same = torch.equal(got.view(torch.uint8), want.view(torch.uint8))
    if not same:
        print(f"WRONG: {label}")
    return same


def model_rule_cases() -> list:
    """The kernels that a GPU model's own rules pick (csrc/choose.cpp, device_rules), on small
    shapes with edge tiles: uint8 in wide tiles and float32 in lean large tiles, walked m-tiles
    first on an H200 where there are at least as many m-tiles as n-tiles (tall, batched) and
    n-tiles first where not (wide); and narrow row copies over many dims in the gather kernel."""
    results = []
    # Odd rows (4-byte vectors, or one element a side), then rows of whole 16-byte vectors.
    for dtype, shape, kernel in ((torch.uint8, (600, 300), "tile/wide"), (torch.uint8, (3, 200, 520), "tile/wide"),
                                 (torch.uint8, (130, 600), "tile/wide"), (torch.float32, (2, 200, 130), "lean/large"),
                                 (torch.float32, (130, 300), "lean/large"),
                                 (torch.uint8, (592, 288), "tile/wide"), (torch.uint8, (3, 208, 528), "tile/wide"),
                                 (torch.uint8, (80, 800), "tile/wide"), (torch.float32, (2, 200, 132), "lean/large"),
                                 (torch.float32, (132, 300), "lean/large")):
        x = torch.randint(0, 100, shape).to(dtype)
        dims = [*range(len(shape) - 2), len(shape) - 1, len(shape) - 2]
        results.append(check(lambda: torch.ops.cute_transpose._permute_with(x.cuda(), dims, kernel),
                             x.transpose(-2, -1).contiguous(), f"permute[{kernel}] {dtype} {shape}", "cannot run"))
    for dtype, shape in ((torch.float64, (3, 5, 4, 6, 7, 9)), (torch.float32, (3, 5, 4, 6, 7, 5))):
        x = torch.randint(0, 100, shape).to(dtype)
        dims = (0, 2, 4, 1, 3, 5)
        for kernel in ("auto", "gather"):
            run = ((lambda: cute_transpose.permute(x.cuda(), dims)) if kernel == "auto" else
                   (lambda: torch.ops.cute_transpose._permute_with(x.cuda(), list(dims), kernel)))
            results.append(check(run, x.permute(dims).contiguous(), f"permute[{kernel}] {dtype} {shape} {dims}", "cannot run"))
    return results


# Loads that keep their input lines in L2 (choose.cpp, keeps_inputs: 16-byte loads into 128 MiB of
# output or more, on sm_90 GPUs but the H200), in every kernel that has them, tiles cut short at
# the edges. Not under racecheck: the hint changes only global loads, and racecheck, which
# watches shared memory, would take minutes over 128 MiB of tiles.
KEPT = [((8200, 4100), (1, 0), torch.float32, "tile"), ((75, 75, 96, 100), (1, 0, 3, 2), torch.float32, "lean"),
        ((8200, 4100), (1, 0), torch.float32, "tma"), ((8200, 4104), (1, 0), torch.float32, "pipelined"),
        ((15, 15, 32, 15, 15, 32), (1, 4, 0, 5, 3, 2), torch.float32, "split"),
        ((256, 224, 224, 3), (0, 3, 1, 2), torch.float32, "interleave"), ((3, 10208240), (1, 0), torch.float64, "interleave")]


def kept_input_cases() -> list:
    """The KEPT cases, each forced by name; on a GPU whose rule keeps input lines, a case whose
    configuration does not say so counts as wrong."""
    if os.environ.get("SANITIZE_TOOL") == "racecheck":
        return []
    name = torch.cuda.get_device_name()
    keeps = torch.cuda.get_device_capability() == (9, 0) and "H200" not in name
    results = []
    for shape, dims, dtype, kernel in KEPT:
        if kernel in TMA_STORES:
            continue
        x = torch.randint(0, 100, shape).to(dtype)
        on_gpu = x.cuda()
        config = cute_transpose.explain(on_gpu, dims, kernel=kernel)["config"]
        label = f"permute[{kernel}] {dtype} {shape} {dims}, {config}"
        if keeps and "input lines kept in L2" not in config:
            print(f"WRONG (input lines not kept): {label}")
            results.append(False)
            continue
        results.append(check(lambda: torch.ops.cute_transpose._permute_with(on_gpu, list(dims), kernel),
                             x.permute(dims).contiguous(), label, "cannot run"))
        del on_gpu
    return results


def main() -> int:
    results = []
    for name in cute_transpose.OPS:
        if name == "permute" or name in TMA_STORES:  # permute takes dims: its cases are below
            continue
        for dtype in DTYPES:
            for shape in SHAPES:
                x = torch.randint(0, 100, shape).to(dtype)
                want = x.clone() if name == "copy" else x.transpose(-2, -1).contiguous()
                op = getattr(torch.ops.cute_transpose, name)
                # tma refuses a pitch it does not take
                results.append(check(lambda: op(x.cuda()), want, f"{name} {dtype} {shape}", "multiple of 16 bytes"))
    for shape, dims, cut in PERMUTES:
        for dtype in DTYPES:
            x = torch.randint(0, 100, shape).to(dtype)
            want = x[..., cut].permute(dims).contiguous()
            for kernel in ("auto", "box/small") + tuple(k for k in cute_transpose.KERNELS if k not in TMA_STORES):
                view = x.cuda()[..., cut]  # sliced there
                run = ((lambda: cute_transpose.permute(view, dims)) if kernel == "auto" else
                       (lambda: torch.ops.cute_transpose._permute_with(view, list(dims), kernel)))
                # a kernel that does not take this shape says it cannot run it
                results.append(check(run, want, f"permute[{kernel}] {dtype} {shape}[..., {cut}] {dims}", "cannot run"))
    # The pipelined kernel with many tiles per block, so that every block goes round its ring of
    # stages (racecheck and synccheck watch the stage reuse).
    for dtype, shape in ((torch.float32, (2048, 4096)), (torch.complex128, (2048, 2048))):
        if "pipelined" in TMA_STORES:
            break
        x = torch.randint(0, 100, shape).to(dtype)
        results.append(check(lambda: cute_transpose.pipelined(x.cuda()), x.t().contiguous(),
                             f"pipelined ring {dtype} {shape}", "sm_90"))
    # The tile kernel's large configuration (chosen for 256 MiB and up: 64 KiB tiles of 1-byte
    # elements, 512 threads for 4-byte ones), forced on small shapes with edge tiles.
    for dtype, shape in ((torch.uint8, (300, 600)), (torch.float32, (2, 130, 200))):
        x = torch.randint(0, 100, shape).to(dtype)
        dims = [*range(len(shape) - 2), len(shape) - 1, len(shape) - 2]
        results.append(check(lambda: torch.ops.cute_transpose._permute_with(x.cuda(), dims, "tile/large"),
                             x.transpose(-2, -1).contiguous(), f"permute[tile/large] {dtype} {shape}", "cannot run"))
    # Small tiles (small work: a quarter of the square tile; 1-byte elements in 4-byte vectors), on
    # 1-16-byte elements, with edge tiles.
    for dtype, shape in ((torch.uint8, (3, 80, 144)), (torch.bfloat16, (2, 72, 136)), (torch.float32, (2, 40, 100)),
                         (torch.float64, (3, 40, 34)), (torch.complex128, (2, 20, 18))):
        x = (torch.randn(shape) * 100).to(dtype) if dtype.is_complex else torch.randint(0, 100, shape).to(dtype)
        results.append(check(lambda: torch.ops.cute_transpose._permute_with(x.cuda(), [0, 2, 1], "tile/small"),
                             x.transpose(-2, -1).contiguous(), f"permute[tile/small] {dtype} {shape}", "cannot run"))
    # The lean kernel in each of its tile shapes: every element size, 16-byte vectors on both sides
    # (shapes of whole vectors) or one element on a side off the grid (odd sizes), edge tiles
    # along m and n.
    for dtype, shape in ((torch.uint8, (3, 80, 144)), (torch.uint8, (2, 37, 71)), (torch.bfloat16, (2, 72, 136)),
                         (torch.bfloat16, (3, 197, 64)), (torch.float32, (2, 40, 100)), (torch.float32, (5, 33, 17)),
                         (torch.float64, (3, 40, 34)), (torch.float64, (2, 19, 7)), (torch.complex128, (2, 20, 18))):
        x = (torch.randn(shape) * 100).to(dtype) if dtype.is_complex else torch.randint(0, 100, shape).to(dtype)
        for lean in ("lean/square", "lean/tall", "lean/wide", "lean/large"):
            results.append(check(lambda: torch.ops.cute_transpose._permute_with(x.cuda(), [0, 2, 1], lean),
                                 x.transpose(-2, -1).contiguous(), f"permute[{lean}] {dtype} {shape}", "cannot run"))
    # The split kernel in each of its tile shapes: sides of two dims whose inner dims (2, 3, 7)
    # carry between a thread's vectors, edge tiles, and sides that chain into 16-byte vectors.
    for dtype in DTYPES:
        for shape, dims in (((64, 50, 2, 3), (1, 3, 0, 2)), ((200, 33, 7, 3), (1, 3, 0, 2)),
                            ((4, 5, 2, 3, 8, 112), (1, 5, 0, 4, 2, 3))):
            x = (torch.randn(shape) * 100).to(dtype) if dtype.is_complex else torch.randint(0, 100, shape).to(dtype)
            for tile in ("square", "tall", "wide", "narrow", "short"):
                results.append(check(lambda: torch.ops.cute_transpose._permute_with(x.cuda(), list(dims), f"split/{tile}"),
                                     x.permute(dims).contiguous(), f"permute[split/{tile}] {dtype} {shape}", "cannot run"))
    # Column tiles, and the m-first walk: output rows of 301 and 129 elements split 32-byte sectors.
    for dtype, shape in ((torch.float32, (2, 301, 131)), (torch.float64, (3, 129, 67))):
        x = torch.randint(0, 100, shape).to(dtype)
        results.append(check(lambda: torch.ops.cute_transpose._permute_with(x.cuda(), [0, 2, 1], "tile/column"),
                             x.transpose(-2, -1).contiguous(), f"permute[tile/column] {dtype} {shape}", "cannot run"))
    # rows and gather with their blocks in the neighbours-together order (cuda/index_walk.cuh):
    # slices that end in a part stretch, outer dims around them, an offset view.
    for dtype in DTYPES:
        for shape, dims, cut in (((4100, 3, 24), (1, 0, 2), slice(None)), ((3, 2052, 5, 24), (0, 2, 1, 3), slice(None)),
                                 ((3, 2052, 5, 25), (0, 2, 1, 3), slice(1, None))):
            x = (torch.randn(shape) * 100).to(dtype) if dtype.is_complex else torch.randint(0, 100, shape).to(dtype)
            want = x[..., cut].permute(dims).contiguous()
            for kernel in ("rows/together", "gather/together"):
                view = x.cuda()[..., cut]
                results.append(check(lambda: torch.ops.cute_transpose._permute_with(view, list(dims), kernel), want,
                                     f"permute[{kernel}] {dtype} {shape}[..., {cut}] {dims}", "cannot run"))
    # The fill kernel: output rows that repeat one element (expanded views), rows over one and two
    # dims, several blocks, both forms (rows of 3 and 5 elements, which only the lanes form runs
    # for elements of up to 4 and 2 bytes), and an output 3 elements off the 16-byte grid (out=,
    # beyond small work: the chooser's pick), whose first and last elements are stored one by one.
    for dtype in DTYPES:
        for base, expanded, dims in (((1, 37), (1029, 37), (1, 0)), ((3, 1, 5), (3, 700, 5), (2, 0, 1)),
                                     ((1, 50, 4), (201, 50, 4), (1, 0, 2)), ((7, 1, 901), (7, 3, 901), (0, 2, 1)),
                                     ((1, 3001), (5, 3001), (1, 0))):
            x = torch.randint(0, 100, base).to(dtype).expand(expanded)
            for name in ("fill", "fill/lanes"):
                results.append(check(lambda: torch.ops.cute_transpose._permute_with(x.cuda(), list(dims), name),
                                     x.permute(dims).contiguous(), f"permute[{name}] {dtype} {expanded} {dims}",
                                     "cannot run"))
        x = torch.randint(0, 100, (1, 4099)).to(dtype).expand(301, 4099)
        buf = torch.zeros(x.numel() + 3, dtype=dtype, device="cuda")
        results.append(check(lambda: torch.ops.cute_transpose.permute.out(x.cuda(), [1, 0], out=buf[3:].view(4099, 301)),
                             x.t().contiguous(), f"permute.out[off the grid] {dtype} (301, 4099)", "cannot run"))
    results += model_rule_cases()
    results += kept_input_cases()
    checked = [r for r in results if r is not None]
    bad = checked.count(False)
    left_out = f" ({' and '.join(TMA_STORES)} left out: TMA-store writes are invisible here)" if TMA_STORES else ""
    print(f"sanitize_cases: {len(checked)} op runs checked, {bad} wrong{left_out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
