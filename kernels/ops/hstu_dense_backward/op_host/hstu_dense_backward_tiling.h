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
// Operands in L1 (HstuBackwardL1Plan): per vector core, TSCM for a key block's K and V and a
// query chunk's Q and dO, as NZ. Each reaches L1 once per (block, chunk) and serves every product
// that needs it (K: S and dQ; V: dP; Q: S and dK; dO: dP and dV), so the Cube reads nothing from
// global memory but P and dZ from the slots, and the tensors' bytes move on the vector cores'
// links. The chunk is the tallest of kHstuChunkQ, 64 and 32 (then the block lower) for which both
// vector cores' TSCM and the Matmul API's buffers fit the AI core's L1.
//
// Per vector core: two workspace slots ([chunkQ, blockK] in q's dtype: P, and dZ) and two
// float32 accumulators ([blockK, dimPad]: dK, dV); shared by all: the float32 dQ accumulator
// [rows * N, dimPad], added to atomically. The unified buffer holds a chunk of score rows (S,
// dP in q's dtype, double-buffered, bias and mask, three float32 work buffers and for 16-bit
// dtypes two more, P and dZ in q's dtype, double-buffered), the causal ramp, the accumulator rows
// being written and a block of zeros.
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

// The Cube tilings of the three Matmul objects for key blocks of blockK rows and query chunks of
// chunkQ rows, B (and the score's A) in L1, on `p` with the L1 the TSCM buffers leave.
inline std::string HstuBackwardMatmuls(HstuDenseBackwardTilingData& td, const HstuShape& s,
                                       const PlatformInfo& p) {
    const int64_t cq = td.chunkQ;
    std::string e = HstuMatmul(&td.score, s.dtype, s.dtype, false, true, cq, td.blockK, s.dim, p,
                               HstuMatmulOptions{true, true, 0, 0});
    if (e.empty()) {
        e = HstuMatmul(&td.trans, s.dtype, DType::kFloat32, true, false, td.blockK, s.dim, cq, p,
                       HstuMatmulOptions{false, true, 0, 0});
    }
    if (e.empty()) {
        e = HstuMatmul(&td.dq, s.dtype, DType::kFloat32, false, false, cq, s.dim, td.blockK, p,
                       HstuMatmulOptions{false, true, 0, 0});
    }
    return e;
}

// Chooses the key block (at most `block`, the balance's choice) and the query chunk so that both
// vector cores' TSCM buffers and the Matmul API's own fit the AI core's L1 (see the top): the
// chunk shrinks first (kHstuChunkQ to 32), then the block, both to 16 at the least.
inline std::string HstuBackwardL1Plan(HstuDenseBackwardTilingData& td, const HstuShape& s,
                                      const PlatformInfo& p, int64_t block) {
    const int64_t esz = DTypeSize(s.dtype);
    const int64_t rowBytes = AlignUp(s.dim, CubeC0(esz)) * esz;
    std::string e = "no key block and query chunk fit L1";
    for (int64_t bk = block; bk >= 16; bk /= 2) {
        for (int64_t cq : {kHstuChunkQ, int64_t{64}, int64_t{32}, int64_t{16}}) {
            if (cq == 16 && bk > 16)
                continue;  // a smaller block first
            const uint64_t q = static_cast<uint64_t>(cq * rowBytes);
            const uint64_t kv = static_cast<uint64_t>(AlignUp(bk, 16) * rowBytes);
            const uint64_t tscm = 2 * (2 * q + 2 * kv);  // both vector cores of the AI core
            if (tscm >= p.l1_bytes)
                continue;
            PlatformInfo api = p;
            api.l1_bytes = p.l1_bytes - tscm;
            td.blockK = bk;
            td.chunkQ = cq;
            e = HstuBackwardMatmuls(td, s, api);
            if (e.empty()) {
                td.qL1Bytes = static_cast<uint32_t>(q);
                td.kvL1Bytes = static_cast<uint32_t>(kv);
                return e;
            }
        }
    }
    return e;
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

    // Work: key block height, query chunk, AI cores, and the cut into per-core ranges; Cube
    // tilings for the largest calls. The block is twice the balance's choice (up to 256), lower
    // if L1 needs it: every block reads its queries' Q and dO again, and the Cube, which pays for
    // the larger diagonal blocks, has time to spare where the vector cores' links do not. float32
    // takes 256 whatever the balance's choice: its vector cores' links are its bound, and a
    // causal query chunk meets only the keys up to its last row, so the taller block issues no
    // more Cube work than chunkQ rows would (bench jagged B=32 N=4 D=128: 382 -> 320 us, Cube
    // MACs kept / issued 0.905 either way; bfloat16 went 243 -> 202 us, but kept / issued to 0.84
    // and vector balance to 1.19, past test_production_like_jagged_batch's 0.9 and 1.1).
    HstuWork work = HstuWorkOf(s, /*keyMajor=*/true);
    const int64_t blockWanted = esz == 4 ? 256 : Min64(256, 2 * work.block);
    std::string e0 = HstuBackwardL1Plan(td, s, p, blockWanted);
    if (!e0.empty())
        return Reject(e0);
    work.block = td.blockK;
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

    // Unified buffer: ramp, accumulator rows and zeros first, then as many score rows per chunk
    // as fit (each row: blockK elements of S, dP, bias, mask, P and dZ in q's dtype, twice, and
    // the float32 work buffers).
    td.rampBytes = causal ? static_cast<uint32_t>(AlignedBytes(td.blockK, 4)) : 0;
    td.outRows = Clamp64(UbShare(p, 8) / (td.dimPad * 4), 1, td.blockK);
    td.accInBytes = static_cast<uint32_t>(td.outRows * td.dimPad * 4);
    td.accOutBytes = static_cast<uint32_t>(td.outRows * td.dimPad * esz);
    td.zeroBytes = static_cast<uint32_t>(UbShare(p, 24));
    // S, dP, P and dZ double-buffered (a chunk's copies overlap its neighbour's vector work),
    // bias and mask single; float32 buffers: three, and two more (S and dP as float32) for
    // 16-bit scores.
    const int64_t inQ = 2 * 2 + (s.hasBias ? 1 : 0) + (s.hasMask ? 1 : 0);
    const int64_t temps = esz == 4 ? 3 : 5;
    const int64_t perRow = td.blockK * (temps * 4 + esz * (inQ + 2 * 2));
    const int64_t avail =
        UbBytes(p) - td.rampBytes - td.accInBytes - td.accOutBytes - td.zeroBytes - 4 * kBlockBytes;
    if (avail < perRow) {
        return Reject("the unified buffer (" + HstuStr(UbBytes(p)) +
                      " bytes) cannot hold one score row: needs " +
                      HstuStr(perRow + UbBytes(p) - avail) + " bytes");
    }
    td.chunkRows = Min64(avail / perRow, td.chunkQ);
    td.scoreInBytes = static_cast<uint32_t>(td.chunkRows * td.blockK * esz);
    td.tempBytes = static_cast<uint32_t>(td.chunkRows * td.blockK * 4);

    // Workspace: per worker two slots and two accumulators, then the shared dQ accumulator.
    td.slotBytes = AlignUp(td.chunkQ * td.blockK * esz, 512);
    td.accBytes = AlignUp(td.blockK * td.dimPad * 4, 512);
    td.dqAccOffset = td.workers * 2 * (td.slotBytes + td.accBytes);
    plan.workspace_bytes =
        static_cast<uint64_t>(td.dqAccOffset + AlignUp(s.rows * s.heads * td.dimPad * 4, 512));
    return plan;
}

}  // namespace mxrec

#endif  // HSTU_DENSE_BACKWARD_TILING_H
