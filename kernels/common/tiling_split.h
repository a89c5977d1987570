// The skeleton every operator's tiling (op_host/<op>_tiling.h) shares: how many cores an amount
// of work pays for, and the 32-byte-aligned sizes of the UB buffers and workspace regions carved
// from PlatformInfo. Pure host functions, like the tilings that call them, so both targets
// (the CANN glue and the sim launcher) get the same plan; what is left in an operator's tiling is
// its own validation, its traffic estimate and its UB layout.
#ifndef MXREC_TILING_SPLIT_H
#define MXREC_TILING_SPLIT_H

#include <cstdint>

#include "mxrec_common.h"
#include "tiling_common.h"

namespace mxrec {

// PlatformInfo keeps its sizes unsigned; tilings subtract from them, so they work in int64.
inline int64_t VectorCores(const PlatformInfo& p) {
    return static_cast<int64_t>(p.vector_cores);
}
inline int64_t UbBytes(const PlatformInfo& p) {
    return static_cast<int64_t>(p.ub_bytes);
}

// Cores for `work` when starting a core only pays for at least `minPerCore` of it: from 1 (a
// launch needs a core even for empty inputs) up to maxCores.
inline int64_t CoresFor(int64_t work, int64_t minPerCore, int64_t maxCores) {
    return Clamp64(CeilDiv(work, Max64(1, minPerCore)), 1, maxCores);
}

// The usual estimate: `bytes` moved between global memory and UB, spread over the vector cores.
inline int64_t CoresForBytes(const PlatformInfo& p, int64_t bytes) {
    return CoresFor(bytes, p.min_core_bytes, VectorCores(p));
}

// When every core also moves a whole copy of something (x loaded into its UB, a UB accumulator
// added back to global memory), more cores mean more copies: keep them under a quarter of `work`.
inline int64_t CapForCopies(int64_t cores, int64_t work, int64_t copyBytes) {
    return copyBytes > 0 ? Clamp64(Min64(cores, work / (4 * copyBytes)), 1, cores) : cores;
}

// The kernels split their work over coreNum (SplitEven), so it must be the launch's blockDim.
template <typename TD>
inline void SetCoreNum(TilingPlan<TD>& plan, int64_t cores) {
    plan.data.coreNum = cores;
    plan.block_dim = static_cast<uint32_t>(cores);
}

// A fixed fraction of UB, in whole blocks so that the next buffer starts aligned. Fractions
// rather than absolute sizes keep the layout valid when tests shrink ub_bytes.
inline int64_t UbShare(const PlatformInfo& p, int64_t parts) {
    return AlignDown(UbBytes(p) / parts, kBlockBytes);
}

// `count` elements padded to whole blocks: DMA lengths and UB addresses are 32-byte multiples,
// and workspace regions laid end to end keep their successors aligned.
inline int64_t AlignedBytes(int64_t count, int64_t elemBytes) {
    return AlignUp(count * elemBytes, kBlockBytes);
}

// One block per core, for values a core publishes to the others (slice totals, maxima): a
// block each so that no two cores' DMAs touch the same 32 bytes.
inline int64_t PerCoreBlocks(int64_t cores) {
    return cores * kBlockBytes;
}

// Elements per step when each costs `perElem` bytes of `bytes`: a multiple of `multiple` (8
// keeps the step's int32 buffers whole blocks, 16 its 16-bit ones) and never less, so that a
// step always makes progress.
inline int64_t StepElems(int64_t bytes, int64_t perElem, int64_t multiple = 8) {
    return Max64(multiple, AlignDown(bytes / perElem, multiple));
}

// The UB of the two row copiers (dense_to_jagged, jagged_to_padded_dense), whose kernels move
// rows the same way: two copy buffers (double buffering) of a third each, the fill buffer for
// padding rows (1/6) and the offsets window (1/48).
template <typename TD>
inline void SizeRowCopyBuffers(TD& td, const PlatformInfo& p) {
    td.copyBufBytes = static_cast<uint32_t>(UbShare(p, 3));
    td.fillBufBytes = static_cast<uint32_t>(UbShare(p, 6));
    td.offsetBufBytes = static_cast<uint32_t>(UbShare(p, 48));
}

}  // namespace mxrec

#endif  // MXREC_TILING_SPLIT_H
