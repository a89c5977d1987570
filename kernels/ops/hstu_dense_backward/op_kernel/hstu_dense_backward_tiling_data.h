// Tiling struct of HstuDenseBackward (filled by op_host/hstu_dense_backward_tiling.h).
#ifndef HSTU_DENSE_BACKWARD_TILING_DATA_H
#define HSTU_DENSE_BACKWARD_TILING_DATA_H

#include <cstdint>

#include "hstu_common.h"
#include "kernel_tiling/kernel_tiling.h"

struct HstuDenseBackwardTilingData {
    // Q, dO, K and V in L1 (TSCM); P and dZ from the workspace slots.
    AscendC::tiling::TCubeTiling
        score;  // S = Q K^T, dP = dO V^T: [chunkQ, blockK] over D, C in q's dtype
    AscendC::tiling::TCubeTiling
        trans;  // dV += P^T dO, dK += dZ^T Q: [blockK, D] over chunkQ, float32
    AscendC::tiling::TCubeTiling dq;  // dQ += dZ K: [chunkQ, D] over blockK, float32
    int64_t batch;                    // B (jagged: len(seq_offset) - 1)
    int64_t seqLen;                   // max_seq_len: S, the row stride of mask and bias
    int64_t heads;                    // N
    int64_t dim;                      // D
    int64_t dimPad;                   // D rounded up to 16: the row stride of the accumulators
    int64_t rows;                     // T = q.size(0) (jagged) or B * S (normal)
    int64_t jagged;                   // 1: sequence b is rows offsets[b]:offsets[b + 1]
    int64_t maskType;                 // 0 causal, 2 none, 3 custom
    int64_t hasBias;                  // attn_bias given
    int64_t hasBiasGrad;              // d_attn_bias wanted
    int64_t squareBatch;              // leading size of mask, attn_bias and d_attn_bias
    int64_t blockK;                   // key rows per block (a multiple of 16, at most 256)
    int64_t chunkQ;                   // query rows per Cube call (at most kHstuChunkQ)
    int64_t chunkRows;                // score rows per vector pass (UB)
    int64_t outRows;                  // accumulator rows per pass when writing dq, dk, dv (UB)
    int64_t workers;                  // vector cores with work ranges = 2 * blockDim
    int64_t offsetSum;                // sum of (i + 1) * seq_offset[i], wrapping
    int64_t slotBytes;  // workspace per worker for P and for dZ: chunkQ * blockK elements each
    int64_t accBytes;   // workspace per worker for dK and for dV: blockK * dimPad float32 each
    int64_t
        dqAccOffset;  // workspace offset of the shared dQ accumulator [rows * N, dimPad] float32
    uint32_t scoreInBytes;  // UB: one chunk of S (also dP, bias, mask) in q's dtype
    uint32_t tempBytes;     // UB: each of the five float32 work buffers of a chunk
    uint32_t rampBytes;     // UB: -j for the causal mask's rows (float32, blockK)
    uint32_t accInBytes;    // UB: accumulator rows (float32)
    uint32_t accOutBytes;   // UB: output rows in q's dtype
    uint32_t zeroBytes;     // UB: zeros for clearing the dQ accumulator and d_attn_bias
    uint32_t qL1Bytes;      // TSCM: a chunk's Q (and its dO) as NZ, chunkQ rows
    uint32_t kvL1Bytes;     // TSCM: a block's K (and its V) as NZ, blockK rows
    float scale;            // s: silu_scale, or 1 / max_seq_len
    uint32_t reserved;
    mxrec::HstuPos start[mxrec::kHstuMaxWorkers + 1];  // worker w: [start[w], start[w + 1])
};

#endif  // HSTU_DENSE_BACKWARD_TILING_DATA_H
