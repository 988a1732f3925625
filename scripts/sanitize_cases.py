"""The workload the sanitizers watch (scripts/sanitize.sh): every op x element size on an odd
and a batched shape (and a TMA-aligned one), and `permute` on a case for each of its kernels,
each result checked on the CPU. Inputs are made on the CPU and copied over, so that the only
kernels that run are this extension's."""

import sys

import torch

import cute_transpose

SHAPES = [(37, 70), (3, 45, 100), (2, 48, 72)]  # odd; batched; M * size a multiple of 16 (tma)
DTYPES = [torch.uint8, torch.bfloat16, torch.float32, torch.float64, torch.complex128]
# (shape, dims, step of a sliced view): the row copy (vectors; scalars on a stepped view), the tile
# transpose, the split tiles (short sides, rank 5), and scalar tiles on odd sizes.
PERMUTES = [((4, 33, 6, 64), (0, 2, 1, 3), 1), ((4, 33, 6, 64), (0, 2, 1, 3), 2),
            ((3, 40, 96), (0, 2, 1), 1), ((4, 8, 16, 8, 32), (0, 3, 1, 4, 2), 1),
            ((3, 5, 7, 9), (3, 1, 0, 2), 1)]




def main() -> int:
    bad = checked = 0
    for name in cute_transpose.OPS:
        if name == "permute":  # takes dims: its cases are below
            continue
        for dtype in DTYPES:
            for shape in SHAPES:
                x = torch.randint(0, 100, shape).to(dtype)
                want = x.clone() if name == "copy" else x.transpose(-2, -1).contiguous()
                try:
                    got = getattr(torch.ops.cute_transpose, name)(x.cuda()).cpu()
                except RuntimeError as e:  # tma on a pitch it does not take
                    if "multiple of 16 bytes" in str(e):
                        continue
                    raise
                checked += 1
                if not torch.equal(got.view(torch.uint8), want.view(torch.uint8)):
                    bad += 1
                    print(f"WRONG: {name} {dtype} {shape}")
    for shape, dims, step in PERMUTES:
        for dtype in DTYPES:
            x = torch.randint(0, 100, shape).to(dtype)
            want = x[..., ::step].permute(dims).contiguous()
            got = torch.ops.cute_transpose.permute(x.cuda()[..., ::step], list(dims)).cpu()  # sliced there
            checked += 1
            if not torch.equal(got.view(torch.uint8), want.view(torch.uint8)):
                bad += 1
                print(f"WRONG: permute {dtype} {shape}[..., ::{step}] {dims}")
    print(f"sanitize_cases: {checked} op runs checked, {bad} wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
