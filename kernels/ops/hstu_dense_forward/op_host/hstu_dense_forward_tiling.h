// Tiling of HstuDenseForward (pure; shared by the CANN op_host and the sim launcher).
//
// Validation: kernels/common/hstu_host.h (shared with the backward).
//
// Work and balance (kernels/common/hstu_split.h): the work is every (batch, head, query block) in
// that order; causal key blocks above the diagonal are never computed; the order is cut into one
// contiguous range per vector core (two per AI core, each driving the Cube of its AI core through
// the Matmul API) so that every range costs about the same, the cost of a piece of rows being
// rows x the keys it needs (the square of the length per sequence under the causal mask), not
// the number of blocks. blockDim is the AI cores the work pays for (PlatformInfo::cube_cores).
//
// Per vector core: a workspace slot for one S / P block ([blockQ, kHstuBlockK] in q's dtype) and
// a float32 O accumulator ([blockQ, dimPad]); the unified buffer holds a chunk of score rows
// (S, bias and mask in q's dtype, four float32 work buffers, P in q's dtype), the causal ramp,
// and the O rows being written.
#ifndef HSTU_DENSE_FORWARD_TILING_H
#define HSTU_DENSE_FORWARD_TILING_H

#include <string>
#include <vector>

#include "hstu_dense_forward_op_args.h"
#include "hstu_dense_forward_tiling_data.h"
#include "hstu_host.h"

namespace mxrec {

inline TilingPlan<HstuDenseForwardTilingData> HstuDenseForwardTiling(const HstuDenseForwardArgs& a,
                                                                     const PlatformInfo& platform) {
    using TD = HstuDenseForwardTilingData;
    // The attributes by position from the first: hstu_host.h serves both directions.
    const HstuShape s = HstuValidate(a);
    if (!s.error.empty())
        return Reject(s.error);
    if (a.out.dtype != s.dtype || a.out.ndim != a.q.ndim)
        return Reject("out must have q's shape and dtype");
    for (int32_t i = 0; i < a.q.ndim; ++i) {
        if (a.out.dims[i] != a.q.dims[i])
            return Reject("out must have q's shape " + a.q.Shape() + ", got " + a.out.Shape());
    }
    TilingPlan<TD> plan = HstuNewPlan<TD>(s);
    TD& td = plan.data;
    const PlatformInfo p = HstuCubePlatform(platform);
    const bool causal = s.maskType == 0;
    const int64_t esz = DTypeSize(s.dtype);

    // Work: query block height, AI cores, and the cut into per-core ranges.
    const HstuWork work = HstuWorkOf(s, /*keyMajor=*/false);
    td.blockQ = work.block;
    int64_t groups = 0;
    for (int64_t len : s.lengths)
        groups += CeilDiv(len, kHstuRowGroup) * s.heads;
    // Bytes a core moves for its share: Q, K, V and O once, plus the key and value rows every
    // query block reads again and the S / P / O workspace round trips, about 4 elements per score.
    int64_t scores = 0;
    for (int64_t len : s.lengths)
        scores += HstuIssued(work, work.block, len) * s.heads;
    const int64_t bytes = 4 * s.rows * s.heads * s.dim * esz + 4 * scores * esz;
    HstuAssignWorkers(plan, work, p, bytes, groups);

    // Cube tilings for the largest calls.
    std::string e =
        HstuMatmul(&td.qk, s.dtype, s.dtype, false, true, td.blockQ, kHstuBlockK, s.dim, p);
    if (e.empty())
        e = HstuMatmul(&td.sv, s.dtype, DType::kFloat32, false, false, td.blockQ, s.dim,
                       kHstuBlockK, p);
    if (!e.empty())
        return Reject(e);

    // Unified buffer: the causal ramp and the O rows first, then as many score rows per chunk
    // as fit (each row: kHstuBlockK elements of S, P, bias and mask in q's dtype, four float32).
    td.rampBytes = causal ? static_cast<uint32_t>(AlignedBytes(kHstuBlockK, 4)) : 0;
    td.outRows = Clamp64(UbShare(p, 8) / (td.dimPad * 4), 1, td.blockQ);
    td.accInBytes = static_cast<uint32_t>(td.outRows * td.dimPad * 4);
    td.accOutBytes = static_cast<uint32_t>(td.outRows * td.dimPad * esz);
    const int64_t inputs = 1 + (s.hasBias ? 1 : 0) + (s.hasMask ? 1 : 0);
    const int64_t perRow = kHstuBlockK * (4 * 4 + esz * (inputs + 1));
    const int64_t avail =
        UbBytes(p) - td.rampBytes - td.accInBytes - td.accOutBytes - 4 * kBlockBytes;
    if (avail < perRow) {
        return Reject("the unified buffer (" + HstuStr(UbBytes(p)) +
                      " bytes) cannot hold one score row: needs " +
                      HstuStr(perRow + UbBytes(p) - avail) + " bytes");
    }
    td.chunkRows = Min64(avail / perRow, td.blockQ);
    td.scoreInBytes = static_cast<uint32_t>(td.chunkRows * kHstuBlockK * esz);
    td.scoreOutBytes = td.scoreInBytes;
    td.tempBytes = static_cast<uint32_t>(td.chunkRows * kHstuBlockK * 4);

    // Workspace: per worker an S / P slot and an O accumulator, 512-byte aligned.
    td.slotBytes = AlignUp(td.blockQ * kHstuBlockK * esz, 512);
    td.accBytes = AlignUp(td.blockQ * td.dimPad * 4, 512);
    plan.workspace_bytes = static_cast<uint64_t>(td.workers * (td.slotBytes + td.accBytes));
    return plan;
}

}  // namespace mxrec

#endif  // HSTU_DENSE_FORWARD_TILING_H
