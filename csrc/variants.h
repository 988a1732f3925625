// The op list, written once: schemas, CPU and CUDA registrations all expand this macro.
#pragma once

// X(name): transpose variants, from the seeds' ladder. Each maps (..., M, N) -> (..., N, M).
#define CUTE_TRANSPOSE_FOR_EACH_VARIANT(X) \
  X(naive_coalesced_read)                  \
  X(naive_coalesced_write)                 \
  X(bank_conflict_read)                    \
  X(bank_conflict_write)                   \
  X(padded)                                \
  X(swizzled)                              \
  X(tma)
