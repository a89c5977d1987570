// Tiling of InvertPermute (pure; shared by the CANN op_host and the sim launcher).
//
// Two passes with a workspace instead of one DMA per scattered element. permute is cut into
// pieces of E entries and inv into chunks of E slots (P of each). Pass 1 (cores split the
// pieces) sorts each piece by destination chunk in UB and writes it to the workspace as packed
// pairs (offset in the chunk << 16 | offset in the piece: 4 bytes, hence E <= 65536), with a row
// of P + 1 bucket bounds. Pass 2 (cores split the chunks) holds a chunk of inv in UB, reads its
// bucket of every piece and writes the chunk out with one DMA. GM traffic: N elements read,
// 4N bytes written and read, N elements written (1.5x the minimum for int64, 2x for int32).
//
// UB: a piece / chunk of elements, E pairs, a row of P + 2 bounds and a window of bounds. The row
// grows with N / E: past about 1.2e8 entries (int64 on 192 KiB of UB; 1.8e8 for int32) nothing
// fits and the tiling refuses the launch.
#ifndef INVERT_PERMUTE_TILING_H
#define INVERT_PERMUTE_TILING_H

#include "invert_permute_op_args.h"
#include "invert_permute_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

inline TilingPlan<InvertPermuteTilingData> InvertPermuteTiling(const InvertPermuteArgs& a,
                                                               const PlatformInfo& p) {
    if (a.inv.dtype != a.permute.dtype || a.inv.ndim != 1 || a.inv.dims[0] != a.permute.dims[0]) {
        return Reject("inv must be [N] = [" + std::to_string(a.permute.dims[0]) +
                      "] with the dtype of permute, got " + a.inv.Shape() + " " +
                      DTypeName(a.inv.dtype));
    }
    const int64_t elem = DTypeSize(a.permute.dtype);
    if (elem == 4 && a.permute.dims[0] > 2147483647LL) {
        return Reject("permute: an int32 permutation cannot have " +
                      std::to_string(a.permute.dims[0]) + " entries (its values would not fit)");
    }
    TilingPlan<InvertPermuteTilingData> plan;
    InvertPermuteTilingData& td = plan.data;
    td.len = a.permute.dims[0];
    constexpr int64_t kWindow = 64;
    constexpr int64_t kMaxPiece = 65536;  // both halves of a packed pair are 16 bits
    const int64_t ub = UbBytes(p) - 8 * kBlockBytes;
    td.window = kWindow;
    td.boundBufBytes = static_cast<uint32_t>(kWindow * kBlockBytes);
    // E as large as UB allows next to the row of P + 2 bounds (P shrinks as E grows, so a few
    // rounds settle it); then P rounded up to a multiple of the cores, so that they all get as
    // many pieces and chunks, and E the least that still covers N in P pieces.
    const int64_t cores = CoresForBytes(p, 2 * td.len * elem);
    int64_t most = kMaxPiece;
    for (int round = 0; round < 4; ++round) {
        const int64_t rowBytes = AlignUp(CeilDiv(td.len, most) + 2, 8) * 4;
        most = Min64(kMaxPiece, StepElems(ub - kWindow * kBlockBytes - rowBytes, elem + 4));
    }
    const int64_t wanted = AlignUp(Max64(1, CeilDiv(td.len, most)), cores);
    td.piece = Min64(most, Max64(8, AlignUp(CeilDiv(td.len, wanted), 8)));
    td.pieces = Max64(1, CeilDiv(td.len, td.piece));
    td.rowStride = AlignUp(td.pieces + 2, 8);  // + 1 bound, + 1 the counting sort's spare
    td.elemBufBytes = static_cast<uint32_t>(AlignedBytes(td.piece, elem));
    td.pairBufBytes = static_cast<uint32_t>(AlignedBytes(td.piece, 4));
    td.rowBufBytes = static_cast<uint32_t>(td.rowStride * 4);
    if (td.elemBufBytes + td.pairBufBytes + td.rowBufBytes + td.boundBufBytes > ub) {
        return Reject("permute: " + std::to_string(td.len) +
                      " entries need more than the unified buffer's " + std::to_string(UbBytes(p)) +
                      " bytes for their table of buckets");
    }
    td.tableOffset = td.pieces * AlignedBytes(td.piece, 4);
    plan.workspace_bytes = static_cast<uint64_t>(td.tableOffset + td.pieces * td.rowStride * 4);
    SetCoreNum(plan, Min64(td.pieces, cores));
    return plan;
}

}  // namespace mxrec

#endif  // INVERT_PERMUTE_TILING_H
