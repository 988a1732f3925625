# Temporary: a few headline cells, ratios to clone in one run.
import torch, cute_transpose as ct
from triton.testing import do_bench
for shape in ((8192, 8192), (32768, 32768)):
    for dt in (torch.float32, torch.bfloat16, torch.uint8, torch.float64):
        x = torch.randint(0, 100, shape, device="cuda", dtype=torch.int32).to(dt)
        t0 = do_bench(lambda: x.clone(), return_mode="median")
        row = [f"{shape[0]}^2 {str(dt)[6:]}: clone {2*x.nbytes/t0/1e6:.0f}"]
        for n in ("swizzled", "padded", "tma", "copy", "transpose"):
            f = getattr(ct, n)
            assert torch.equal(f(x), x if n == "copy" else x.t().contiguous()), n
            t = do_bench(lambda: f(x), return_mode="median")
            row.append(f"{n} {t0/t:.3f}")
        print(" | ".join(row), flush=True)
        del x; torch.cuda.empty_cache()
