// What the HSTU attention tilings (hstu_dense_forward, hstu_dense_backward) share with their
// kernels: the work position a vector core starts from, and the walk both sides use. No library
// headers, so it compiles for the AI core as well as the host (like mxrec_common.h).
//
// Work: for every batch b (sequence), head h and block qb (rows qb * block .. of the sequence,
// the last one shorter), in that order. The rows are query rows in the forward (each block
// meets the keys it needs) and key rows in the backward (each block meets the queries that need
// it). The tiling cuts this order into one contiguous range per vector core (worker) at row
// boundaries that are multiples of 16 inside a block (kHstuRowGroup), so a block may be shared
// by two workers, each taking its own rows; a worker's range is [start[w], start[w + 1]) in the
// order of HstuBefore.
#ifndef MXREC_HSTU_COMMON_H
#define MXREC_HSTU_COMMON_H

#include <cstdint>

#include "mxrec_common.h"

namespace mxrec {

// Vector cores (workers) a tiling can describe: two per AI core, up to 32 AI cores.
constexpr int32_t kHstuMaxWorkers = 64;
// Query rows are cut between workers at multiples of this (the Cube's M fractal).
constexpr int64_t kHstuRowGroup = 16;
// Key columns per Cube call in the forward (S = Q K^T is [rows, at most kHstuBlockK]).
constexpr int64_t kHstuBlockK = 256;
// The same for the keys left of a tiled causal block (kHstuTileRows): one call covers up to this
// many, so a block's Q is read about once for them (the S / P slot grows to match).
constexpr int64_t kHstuTiledBlockK = 1024;
// Forward, causal: rows (and keys) of the tiles the diagonal square of a block is computed in, with
// Q, K and V in L1 (a multiple of 16: the NZ fractal).
constexpr int64_t kHstuTileRows = 32;
// Query rows per Cube call in the backward (S is [at most kHstuChunkQ, key rows]).
constexpr int64_t kHstuChunkQ = 128;

// A position in the work order: batch, head, block, first row within the block.
struct HstuPos {
    int32_t b;
    int32_t h;
    int32_t qb;
    int32_t row;
};

MXREC_HD bool HstuBefore(const HstuPos& x, const HstuPos& y) {
    if (x.b != y.b)
        return x.b < y.b;
    if (x.h != y.h)
        return x.h < y.h;
    if (x.qb != y.qb)
        return x.qb < y.qb;
    return x.row < y.row;
}

// Key columns that query rows [.., r1) of a sequence of length len need: with the causal mask
// only keys up to the last row (the diagonal included), otherwise all of them.
MXREC_HD int64_t HstuKeyEnd(bool causal, int64_t r1, int64_t len) {
    return causal ? r1 : len;
}

// The first query row that key rows [c0, ..) of a sequence meet: with the causal mask the
// diagonal (j <= i), otherwise row 0.
MXREC_HD int64_t HstuQueryStart(bool causal, int64_t c0) {
    return causal ? c0 : 0;
}

}  // namespace mxrec

#endif  // MXREC_HSTU_COMMON_H
