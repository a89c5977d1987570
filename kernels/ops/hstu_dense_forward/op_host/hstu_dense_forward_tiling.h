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
// Causal: blocks of blockQ (512, 256, 128 or 64) query rows whose diagonal squares run in tiles of
// tileRows (kHstuTileRows; 16-bit types twice that where it fits) with Q, K and V in L1 (TSCM),
// the tallest for which both vector cores' TSCM and the Matmul API's buffers fit the AI core's L1
// (HstuForwardL1Plan); the keys left of a block in calls of kHstuTiledBlockK when a score row of
// that many fits the unified buffer. Otherwise the untiled forward: blocks from HstuChooseBlock,
// key calls of kHstuBlockK.
//
// Per vector core: a workspace slot for one S / P block ([blockQ, blockK] in q's dtype) and a
// float32 O accumulator ([blockQ, dimPad]); the unified buffer holds two chunks of score rows (S,
// bias and mask in q's dtype, P in q's dtype), the float32 work buffers of one, the causal ramp,
// and the O rows being written; L1 (tiled) a block's Q tiles and one K and one V tile.
#ifndef HSTU_DENSE_FORWARD_TILING_H
#define HSTU_DENSE_FORWARD_TILING_H

#include <string>
#include <vector>

#include "hstu_dense_forward_op_args.h"
#include "hstu_dense_forward_tiling_data.h"
#include "hstu_host.h"

namespace mxrec {

// The L1 side of the causal forward: per vector core, TSCM for a block's Q (blockQ rows) and one
// tile of K and of V (tileRows rows each), as NZ (rows padded to 16, D to the 32-byte C0);
// both vector cores of an AI core hold theirs at once, and the Matmul API's own buffers for the
// off-diagonal calls (Q, K, V from global memory) get what is left. blockQ is the tallest of 512,
// 256, 128 and 64 rows for which that all fits (with the tallest tile that does); 0: none does (D
// too large), and the forward runs untiled.
struct HstuL1Plan {
    int64_t blockQ = 0;
    int64_t tileRows = 0;
    uint32_t qBytes = 0;
    uint32_t kvBytes = 0;
    PlatformInfo api;  // the platform with the L1 the API has left
};

inline std::string HstuForwardMatmuls(HstuDenseForwardTilingData& td, const HstuShape& s,
                                      const PlatformInfo& p) {
    const int64_t h = td.tileRows > 0 ? td.tileRows : kHstuTileRows;
    // Tiled: the calls left of the diagonal with baseM = blockQ (one M block: K and V are read
    // once per call) and baseN as wide as L0C then holds (fp32 accumulator, up to 256).
    HstuMatmulOptions qk;
    HstuMatmulOptions sv;
    if (td.tileRows > 0) {
        const int64_t widest = Min64(256, static_cast<int64_t>(p.l0c_bytes) / (4 * td.blockQ));
        if (widest < 16)
            return "blockQ " + HstuStr(td.blockQ) + " leaves no base block in L0C";
        qk.baseM = sv.baseM = td.blockQ;
        qk.baseN = widest / 16 * 16;
        sv.baseN = Min64(qk.baseN, AlignUp(s.dim, 16));
    }
    std::string e =
        HstuMatmul(&td.qk, s.dtype, s.dtype, false, true, td.blockQ, td.blockK, s.dim, p, qk);
    if (e.empty())
        e = HstuMatmul(&td.sv, s.dtype, DType::kFloat32, false, false, td.blockQ, s.dim, td.blockK,
                       p, sv);
    // The tiles' calls (also registered when the forward runs untiled: every object needs one).
    if (e.empty())
        e = HstuMatmul(&td.qkL1, s.dtype, s.dtype, false, true, h, h, s.dim, p,
                       HstuMatmulOptions{true, true, 0});
    if (e.empty())
        e = HstuMatmul(&td.svL1, s.dtype, DType::kFloat32, false, false, h, s.dim, h, p,
                       HstuMatmulOptions{false, true, 0});
    return e;
}

// Unified buffer: the causal ramp and the O rows first, then as many score rows per chunk as fit
// (each row: blockK elements of S, P, bias and mask in q's dtype, two buffers each, and two
// float32 work buffers, three for 16-bit types, which widen S into one).
inline std::string HstuForwardUb(HstuDenseForwardTilingData& td, const HstuShape& s,
                                 const PlatformInfo& p) {
    const int64_t esz = DTypeSize(s.dtype);
    td.rampBytes = s.maskType == 0 ? static_cast<uint32_t>(AlignedBytes(td.blockK, 4)) : 0;
    td.outRows = Clamp64(UbShare(p, 8) / (td.dimPad * 4), 1, td.blockQ);
    td.accInBytes = static_cast<uint32_t>(td.outRows * td.dimPad * 4);
    td.accOutBytes = static_cast<uint32_t>(td.outRows * td.dimPad * esz);
    const int64_t inputs = 1 + (s.hasBias ? 1 : 0) + (s.hasMask ? 1 : 0);
    const int64_t temps = esz == 4 ? 2 : 3;
    const int64_t perRow = td.blockK * (4 * temps + 2 * esz * (inputs + 1));
    const int64_t avail =
        UbBytes(p) - td.rampBytes - td.accInBytes - td.accOutBytes - 4 * kBlockBytes;
    if (avail < perRow) {
        return "the unified buffer (" + HstuStr(UbBytes(p)) +
               " bytes) cannot hold one score row: needs " + HstuStr(perRow + UbBytes(p) - avail) +
               " bytes";
    }
    td.chunkRows = Min64(avail / perRow, td.blockQ);
    td.scoreInBytes = static_cast<uint32_t>(td.chunkRows * td.blockK * esz);
    td.scoreOutBytes = td.scoreInBytes;
    td.tempBytes = static_cast<uint32_t>(td.chunkRows * td.blockK * 4);
    return std::string();
}

inline HstuL1Plan HstuForwardL1Plan(const HstuShape& s, const PlatformInfo& p) {
    const int64_t esz = DTypeSize(s.dtype);
    const int64_t rowBytes = AlignUp(s.dim, CubeC0(esz)) * esz;
    // 16-bit: tiles of 2 kHstuTileRows where they fit. Each tile's call writes its S and adds its
    // float32 O rows to the workspace through the AI core's FIX pipe: tiles twice as tall halve
    // those bytes per score (bfloat16 D = 128: they bound the AIC), for 6% more Cube work on the
    // diagonal, which the 16-bit Cube has to spare. float32's Cube is 4 times slower: 32 rows.
    const int64_t tallest = esz == 4 ? kHstuTileRows : 2 * kHstuTileRows;
    for (int64_t bq : {512, 256, 128, 64}) {
        for (int64_t h = tallest; h >= kHstuTileRows; h /= 2) {
            HstuL1Plan plan;
            plan.blockQ = bq;
            plan.tileRows = h;
            plan.qBytes = static_cast<uint32_t>(bq * rowBytes);
            plan.kvBytes = static_cast<uint32_t>(h * rowBytes);
            const uint64_t tscm = 2 * (uint64_t(plan.qBytes) + 2 * plan.kvBytes);
            if (tscm >= p.l1_bytes)
                continue;
            plan.api = p;
            plan.api.l1_bytes = p.l1_bytes - tscm;
            HstuDenseForwardTilingData probe{};
            probe.blockQ = bq;
            probe.blockK = kHstuTiledBlockK;
            probe.tileRows = h;
            if (HstuForwardMatmuls(probe, s, plan.api).empty())
                return plan;
        }
    }
    return HstuL1Plan{};
}

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

    // Causal: blocks as tall as L1 allows, their diagonal squares in tiles with Q, K and V in L1.
    HstuWork work = HstuWorkOf(s, /*keyMajor=*/false);
    const HstuL1Plan l1 = causal ? HstuForwardL1Plan(s, p) : HstuL1Plan{};
    td.tileRows = l1.tileRows;
    if (l1.blockQ > 0)
        work.block = l1.blockQ;
    td.blockQ = work.block;
    // Keys per call left of the diagonal: tiled, kHstuTiledBlockK if a score row of that many
    // fits the unified buffer.
    std::string e;
    for (int64_t blockK : {kHstuTiledBlockK, kHstuBlockK}) {
        if (blockK == kHstuTiledBlockK && td.tileRows == 0)
            continue;
        td.blockK = blockK;
        e = HstuForwardUb(td, s, p);
        if (e.empty())
            break;
    }
    if (!e.empty())
        return Reject(e);

    if (td.tileRows > 0) {  // the balance costs the pieces as the tiled kernel runs them
        work.tile = td.tileRows;
        work.blockK = td.blockK;
    }
    // A row's own traffic on top of its scores (Q, K, V and O rows, 4 D elements, on the vector
    // cores' links): a vector core moves about 18 bytes per cycle (its share of the HBM
    // bandwidth, 1.6 TB/s / 48 cores at 1.8 GHz) and spends about 0.4 cycles per score (float32
    // vector work and the slot round trip), so a byte weighs about 1/8 of a score. Half of that
    // is charged: rows weighed in full leave the AI cores of the long sequences (whose K and V
    // left of the diagonal the Cube reads itself) the busiest (B=32 N=4 D=128 lengths 1024u^2,
    // float32: vector balance 1.08 -> 1.02 in full, AIC time 205 -> 226 us; half: 221 us).
    work.rowCost = 2 * s.dim * esz / 8;
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

    // Cube tilings for the largest calls (the L1 the TSCM buffers leave, HstuForwardL1Plan).
    e = HstuForwardMatmuls(td, s, l1.blockQ > 0 ? l1.api : p);
    if (!e.empty())
        return Reject(e);
    td.qL1Bytes = l1.qBytes;
    td.kvL1Bytes = l1.kvBytes;

    // Workspace: per worker an S / P slot and an O accumulator, 512-byte aligned.
    td.slotBytes = AlignUp(td.blockQ * td.blockK * esz, 512);
    td.accBytes = AlignUp(td.blockQ * td.dimPad * 4, 512);
    plan.workspace_bytes = static_cast<uint64_t>(td.workers * (td.slotBytes + td.accBytes));
    return plan;
}

}  // namespace mxrec

#endif  // HSTU_DENSE_FORWARD_TILING_H
