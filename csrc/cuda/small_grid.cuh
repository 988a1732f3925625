// One tile per block, placed straight by blockIdx, every offset in 32 bits: the grid of the
// kernels of small and mid-sized work (lean_transpose.cu, words.cu). blockIdx.x and y walk the
// n- and m-tiles (swapped where the chooser walks m-tiles first, Problem::m_first), z the batch
// of up to three dims: batches of more than 65535 matrices, blockIdx.z's limit, launch in slabs
// of 65535 (launch_slabs), each numbering its matrices from its first, z0. The chooser
// (choose.cpp: small_grid_fits, and the walk it gives lean and words) has checked that the grid's
// x and y and every offset fit.
#pragma once

#include "launch.h"

namespace cute_transpose {

struct SmallGrid {
  void const* src;
  void* dst;
  int rows, cols, row_stride, col_stride, out_col_stride;
  int batch_rank;
  int size[3], in[3], out[3];  // batch dims, outermost first
  bool m_first;                // blockIdx.x walks the m-tiles, y the n-tiles
  bool keep_inputs;            // Problem::keep_inputs: which kernel the launcher runs
  int z0 = 0;                  // this launch's first matrix

  explicit SmallGrid(Problem const& p)
      : src(p.src), dst(p.dst), rows(int(p.rows)), cols(int(p.cols)), row_stride(int(p.row_stride)),
        col_stride(int(p.col_stride)), out_col_stride(int(p.out_col_stride)), batch_rank(p.batch.rank), size{},
        in{}, out{}, m_first(p.m_first), keep_inputs(p.keep_inputs) {
    for (int d = 0; d < p.batch.rank; ++d) {
      size[d] = int(p.batch.size[d]);
      in[d] = int(p.batch.in_stride[d]);
      out[d] = int(p.batch.out_stride[d]);
    }
  }

  // Whether the launcher can run p in (bm, bn) tiles: m unit-stride in the output, up to three
  // batch dims, and the grid's y within CUDA's limit (a last guard; the chooser's
  // small_grid_fits also checks the offsets).
  static bool launchable(Problem const& p, int bm, int bn) {
    int64_t const grid_y = p.m_first ? (p.cols + bn - 1) / bn : (p.rows + bm - 1) / bm;
    return (p.out_row_stride == 1 || p.rows == 1) && p.batch.rank <= 3 && grid_y <= kMaxGridYZ;
  }

  // launch(slab, matrices) for each slab of at most 65535 of the `batch` matrices, in order: a
  // copy of this grid whose z0 is the slab's first matrix, and how many it holds.
  template <class Launch>
  cudaError_t launch_slabs(int batch, Launch&& launch) const {
    for (int64_t first = 0; first < batch; first += kMaxGridYZ) {
      SmallGrid slab = *this;
      slab.z0 = int(first);
      cudaError_t const e = launch(slab, int(batch - first < kMaxGridYZ ? batch - first : kMaxGridYZ));
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }

  // The grid of (bm, bn) tiles over `batch` matrices.
  dim3 grid(int bm, int bn, int batch) const {
    unsigned const tiles_m = (rows + bm - 1) / bm, tiles_n = (cols + bn - 1) / bn;
    return dim3(m_first ? tiles_m : tiles_n, m_first ? tiles_n : tiles_m, batch);
  }

#if defined(__CUDACC__)
  // This block's tile: its corner (m0, n0) and the offsets of the corner in the input and the
  // output, in elements (the matrix z0 + blockIdx.z of the batch, innermost dim first).
  __device__ void tile(int bm, int bn, int& m0, int& n0, int& in_at, int& out_at) const {
    int z = z0 + int(blockIdx.z);
    in_at = 0, out_at = 0;
#pragma unroll
    for (int d = 2; d >= 0; --d) {
      if (d < batch_rank) {
        int const i = d == 0 ? z : z % size[d];
        if (d > 0) z /= size[d];
        in_at += i * in[d];
        out_at += i * out[d];
      }
    }
    m0 = (m_first ? blockIdx.x : blockIdx.y) * bm;
    n0 = (m_first ? blockIdx.y : blockIdx.x) * bn;
    in_at += m0 * row_stride + n0 * col_stride;
    out_at += n0 * out_col_stride + m0;
  }
#endif
};

}  // namespace cute_transpose
