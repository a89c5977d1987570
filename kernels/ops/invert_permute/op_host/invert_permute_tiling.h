// Tiling of InvertPermute (pure; shared by the CANN op_host and the sim launcher).
//
// Two passes with a workspace instead of one DMA per scattered element. permute is cut into P
// pieces of E1 entries, inv into C chunks of E2 slots. Pass 1 (cores split the pieces) sorts
// each piece by destination chunk in UB and writes it to the workspace as packed pairs (offset
// in the chunk << 16 | offset in the piece: 4 bytes, hence E1, E2 <= 65536), with a row of C + 1
// bucket bounds. Pass 2 (cores split the chunks) fills a chunk in UB from its bucket of every
// piece and writes it out with one DMA. GM traffic: N elements read, 4N bytes written and read
// (a workspace that stays in the L2), N elements written.
//
// Pass 2 reads a bucket per (piece, chunk): P x C DMAs, whose fixed cost is what the kernel pays
// beyond its bytes, so both sizes are as large as UB allows. Pass 1 needs 8 bytes an entry (an
// int64 piece is narrowed in place to int32 values, and the pairs take the freed half); pass 2
// needs 4 + sizeof(T) bytes a slot (the chunk is filled as int32 and converted into a separate
// buffer, so the chunk's write-out overlaps the next chunk's reads). P and C are rounded up to
// multiples of the cores so that every core gets as many pieces and chunks.
//
// UB: pass 1 a piece and a row of C + 2 bounds; pass 2 a chunk, its copy as T, a bucket of pairs
// and a window of bounds. The row grows with N / E2: past about 7e8 entries (int64 on 192 KiB
// of UB) the piece no longer fits beside it and the tiling refuses the launch.
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
    const int64_t n = a.permute.dims[0];
    if (n > 2147483647LL) {
        return Reject("permute: " + std::to_string(n) + " entries are more than the kernel's " +
                      "int32 slots can index (at most 2^31 - 1)");
    }
    TilingPlan<InvertPermuteTilingData> plan;
    InvertPermuteTilingData& td = plan.data;
    td.len = n;
    constexpr int64_t kMaxSpan = 65536;  // both halves of a packed pair are 16 bits
    constexpr int64_t kMaxWindow = 256;
    const int64_t ub = UbBytes(p) - 8 * kBlockBytes;
    const int64_t cores = CoresForBytes(p, 2 * n * elem);
    // Pass 2's small buffers: a bucket of pairs and a window of bounds, a 24th of UB each at most.
    const int64_t small = AlignDown(ub / 24, kBlockBytes);
    td.pairCap = Min64(2048, StepElems(small, 4));
    const int64_t windowMost = Clamp64(small / kBlockBytes, 1, kMaxWindow);
    // Chunks first (the row of bounds pass 1 keeps depends on their number), then pieces; each
    // count rounded up to a multiple of the cores, the size the least that still covers N.
    const int64_t chunkMost =
        Min64(kMaxSpan, StepElems(ub - td.pairCap * 4 - windowMost * kBlockBytes, 4 + elem));
    td.chunks = AlignUp(Max64(1, CeilDiv(n, chunkMost)), cores);
    td.chunk = Min64(chunkMost, Max64(8, AlignUp(CeilDiv(n, td.chunks), 8)));
    td.chunks = Max64(1, CeilDiv(n, td.chunk));
    td.rowStride = AlignUp(td.chunks + 2, 8);  // + 1 bound, + 1 the counting sort's spare
    const int64_t rowBytes = td.rowStride * 4;
    if (ub - rowBytes < 8 * 8) {
        return Reject("permute: " + std::to_string(n) + " entries need more than the unified " +
                      "buffer's " + std::to_string(UbBytes(p)) +
                      " bytes for their table of buckets");
    }
    const int64_t pieceMost = Min64(kMaxSpan, StepElems(ub - rowBytes, 8));
    td.pieces = AlignUp(Max64(1, CeilDiv(n, pieceMost)), cores);
    td.piece = Min64(pieceMost, Max64(8, AlignUp(CeilDiv(n, td.pieces), 8)));
    td.pieces = Max64(1, CeilDiv(n, td.piece));
    td.window = Min64(td.pieces, windowMost);

    td.rowOffset = static_cast<uint32_t>(td.piece * 8);
    const int64_t pass1 = td.rowOffset + rowBytes;
    td.outOffset = static_cast<uint32_t>(AlignedBytes(td.chunk, 4));
    td.pairOffset = static_cast<uint32_t>(td.outOffset + AlignedBytes(td.chunk, elem));
    td.boundOffset = static_cast<uint32_t>(td.pairOffset + td.pairCap * 4);
    const int64_t pass2 = td.boundOffset + td.window * kBlockBytes;
    td.arenaBytes = static_cast<uint32_t>(Max64(pass1, pass2));
    if (td.arenaBytes > ub) {
        return Reject("permute: " + std::to_string(n) + " entries need more than the unified " +
                      "buffer's " + std::to_string(UbBytes(p)) +
                      " bytes for their table of buckets");
    }
    td.tableOffset = td.pieces * AlignedBytes(td.piece, 4);
    plan.workspace_bytes = static_cast<uint64_t>(td.tableOffset + td.pieces * rowBytes);
    SetCoreNum(plan, Min64(Max64(td.pieces, td.chunks), cores));
    return plan;
}

}  // namespace mxrec

#endif  // INVERT_PERMUTE_TILING_H
