// The op list, written once: schemas, CPU and CUDA registrations all expand this macro.
#pragma once

// X(name, Kernel): transpose variants, from the seeds' ladder, and the chooser's Kernel that
// runs each (choose.h). Each maps (..., M, N) -> (..., N, M).
#define CUTE_TRANSPOSE_FOR_EACH_SEED(X)                  \
  X(naive_coalesced_read, NaiveCoalescedRead)            \
  X(naive_coalesced_write, NaiveCoalescedWrite)          \
  X(bank_conflict_read, BankConflictRead)                \
  X(bank_conflict_write, BankConflictWrite)              \
  X(padded, Padded)                                      \
  X(swizzled, Swizzled)
#define CUTE_TRANSPOSE_FOR_EACH_VARIANT(X) CUTE_TRANSPOSE_FOR_EACH_SEED(X) X(tma, Tma) X(pipelined, Pipelined)
