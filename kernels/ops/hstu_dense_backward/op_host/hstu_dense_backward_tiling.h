// Tiling of HstuDenseBackward (pure; shared by the CANN op_host and the sim launcher).
//
// Validation: kernels/common/hstu_host.h (as the forward), grad with q's shape and dtype, the
// outputs with q's (attn_bias's) shape.
//
// Work and balance (kernels/common/hstu_split.h, keyMajor): every (batch, head, key block) in
// that order, each meeting the queries that need it (causal: rows from the block's first key
// on, so nothing above the diagonal is computed), cut into one contiguous range per vector core
// at 16-key boundaries by cost (keys x queries met), as the forward does with query rows.
//
// Per vector core: two workspace slots ([kHstuChunkQ, blockK] in q's dtype: P, and dZ) and two
// float32 accumulators ([blockK, dimPad]: dK, dV); shared by all: the float32 dQ accumulator
// [rows * N, dimPad], added to atomically. The unified buffer holds a chunk of score rows (S,
// dP, bias and mask in q's dtype, five float32 work buffers, P and dZ in q's dtype), the causal
// ramp, the accumulator rows being written and a block of zeros.
#ifndef HSTU_DENSE_BACKWARD_TILING_H
#define HSTU_DENSE_BACKWARD_TILING_H

#include <string>
#include <vector>

#include "hstu_dense_backward_op_args.h"
#include "hstu_dense_backward_tiling_data.h"
#include "hstu_host.h"

namespace mxrec {

inline std::string HstuSameShape(const TensorDesc& t, const TensorDesc& like, const char* name,
                                 const char* likeName) {
    bool same = t.present && t.ndim == like.ndim && t.dtype == like.dtype;
    for (int32_t i = 0; same && i < t.ndim; ++i)
        same = t.dims[i] == like.dims[i];
    if (same)
        return std::string();
    return std::string(name) + " must have " + likeName + "'s shape " + like.Shape() +
           " and dtype " + DTypeName(like.dtype) + ", got " + (t.present ? t.Shape() : "none");
}

inline TilingPlan<HstuDenseBackwardTilingData> HstuDenseBackwardTiling(
    const HstuDenseBackwardArgs& a, const PlatformInfo& platform) {
    using TD = HstuDenseBackwardTilingData;
    // The attributes by position from the first: hstu_host.h serves both directions.
    const HstuShape s = HstuValidate(a);
    if (!s.error.empty())
        return Reject(s.error);
    std::string e = HstuSameShape(a.grad, a.q, "grad", "q");
    const TensorDesc* grads[3] = {&a.dq, &a.dk, &a.dv};
    for (int i = 0; i < 3 && e.empty(); ++i) {
        const char* names[3] = {"dq", "dk", "dv"};
        e = HstuSameShape(*grads[i], a.q, names[i], "q");
    }
    if (e.empty() && a.dAttnBias.present) {
        if (!s.hasBias) {
            e = "d_attn_bias needs attn_bias (without a bias there is no bias gradient)";
        } else {
            e = HstuSameShape(a.dAttnBias, a.attnBias, "d_attn_bias", "attn_bias");
        }
    }
    if (!e.empty())
        return Reject(e);

    TilingPlan<TD> plan = HstuNewPlan<TD>(s);
    TD& td = plan.data;
    const PlatformInfo p = HstuCubePlatform(platform);
    const bool causal = s.maskType == 0;
    const int64_t esz = DTypeSize(s.dtype);
    td.hasBiasGrad = a.dAttnBias.present ? 1 : 0;

    // Work: key block height, AI cores, and the cut into per-core ranges.
    const HstuWork work = HstuWorkOf(s, /*keyMajor=*/true);
    td.blockK = work.block;
    int64_t groups = 0;
    int64_t scores = 0;
    for (int64_t len : s.lengths) {
        groups += CeilDiv(len, kHstuRowGroup) * s.heads;
        scores += HstuIssued(work, work.block, len) * s.heads;
    }
    // Bytes a core moves for its share: Q, K, V, dO and the three gradients once, plus the
    // query rows every key block reads again and the workspace round trips (about 8 elements
    // per score).
    const int64_t bytes = 7 * s.rows * s.heads * s.dim * esz + 8 * scores * esz;
    HstuAssignWorkers(plan, work, p, bytes, groups);

    // Cube tilings for the largest calls.
    e = HstuMatmul(&td.score, s.dtype, s.dtype, false, true, kHstuChunkQ, td.blockK, s.dim, p);
    if (e.empty()) {
        e = HstuMatmul(&td.trans, s.dtype, DType::kFloat32, true, false, td.blockK, s.dim,
                       kHstuChunkQ, p);
    }
    if (e.empty()) {
        e = HstuMatmul(&td.dq, s.dtype, DType::kFloat32, false, false, kHstuChunkQ, s.dim,
                       td.blockK, p);
    }
    if (!e.empty())
        return Reject(e);

    // Unified buffer: ramp, accumulator rows and zeros first, then as many score rows per chunk
    // as fit (each row: blockK elements of S, dP, bias, mask, P and dZ in q's dtype, five float32).
    td.rampBytes = causal ? static_cast<uint32_t>(AlignedBytes(td.blockK, 4)) : 0;
    td.outRows = Clamp64(UbShare(p, 8) / (td.dimPad * 4), 1, td.blockK);
    td.accInBytes = static_cast<uint32_t>(td.outRows * td.dimPad * 4);
    td.accOutBytes = static_cast<uint32_t>(td.outRows * td.dimPad * esz);
    td.zeroBytes = static_cast<uint32_t>(UbShare(p, 24));
    const int64_t inputs = 2 + (s.hasBias ? 1 : 0) + (s.hasMask ? 1 : 0);
    const int64_t perRow = td.blockK * (5 * 4 + esz * (inputs + 2));
    const int64_t avail =
        UbBytes(p) - td.rampBytes - td.accInBytes - td.accOutBytes - td.zeroBytes - 4 * kBlockBytes;
    if (avail < perRow) {
        return Reject("the unified buffer (" + HstuStr(UbBytes(p)) +
                      " bytes) cannot hold one score row: needs " +
                      HstuStr(perRow + UbBytes(p) - avail) + " bytes");
    }
    td.chunkRows = Min64(avail / perRow, kHstuChunkQ);
    td.scoreInBytes = static_cast<uint32_t>(td.chunkRows * td.blockK * esz);
    td.tempBytes = static_cast<uint32_t>(td.chunkRows * td.blockK * 4);

    // Workspace: per worker two slots and two accumulators, then the shared dQ accumulator.
    td.slotBytes = AlignUp(kHstuChunkQ * td.blockK * esz, 512);
    td.accBytes = AlignUp(td.blockK * td.dimPad * 4, 512);
    td.dqAccOffset = td.workers * 2 * (td.slotBytes + td.accBytes);
    plan.workspace_bytes =
        static_cast<uint64_t>(td.dqAccOffset + AlignUp(s.rows * s.heads * td.dimPad * 4, 512));
    return plan;
}

}  // namespace mxrec

#endif  // HSTU_DENSE_BACKWARD_TILING_H
