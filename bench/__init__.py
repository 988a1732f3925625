"""The benchmark and its tools: bench.py (the report), tune.py (the kernel chooser's table),
profile.py (the Nsight Compute table). Run them as scripts from the repository root."""
