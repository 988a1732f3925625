import torch, cute_transpose as ct
from triton.testing import do_bench
for dt in (torch.float32, torch.bfloat16):
    x = torch.randn(8192, 8192, device="cuda").to(dt)
    t0 = do_bench(lambda: x.clone(), return_mode="median")
    row = [f"{dt}: clone {2*x.nbytes/t0/1e6:.0f} GB/s"]
    for n in ct.OPS:
        t = do_bench(lambda: getattr(ct, n)(x), return_mode="median")
        row.append(f"{n} {2*x.nbytes/t/1e6:.0f} ({t0/t:.2f})")
    print(" | ".join(row))
