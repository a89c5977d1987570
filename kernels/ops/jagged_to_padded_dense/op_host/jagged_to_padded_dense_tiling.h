// Tiling of JaggedToPaddedDense (pure; shared by the CANN op_host and the sim launcher).
//
// The dense output has B * L rows of D elements. Cores take equal shares of those rows; a
// core walks the batches its rows belong to, copies each batch's valid rows from values in one
// segment and fills the rest of its rows with the padding value. Every output byte is written
// once and every value byte read at most once.
#ifndef JAGGED_TO_PADDED_DENSE_TILING_H
#define JAGGED_TO_PADDED_DENSE_TILING_H

#include "float_bits.h"
#include "jagged_to_padded_dense_op_args.h"
#include "jagged_to_padded_dense_tiling_data.h"
#include "tiling_common.h"
#include "tiling_split.h"

namespace mxrec {

// The element bits of a padding value, as fbgemm's static_cast<scalar_t>(double) produces them.
inline uint64_t PaddingBits(DType dtype, double value, int64_t intValue) {
    switch (dtype) {
        case DType::kFloat32:
            return FloatBits(static_cast<float>(value));
        case DType::kFloat16:
            return FloatToHalfBits(static_cast<float>(value));
        case DType::kBFloat16:
            return FloatToBf16Bits(static_cast<float>(value));
        case DType::kInt32:
            return static_cast<uint32_t>(static_cast<int32_t>(intValue));
        default:
            return static_cast<uint64_t>(intValue);
    }
}

inline TilingPlan<JaggedToPaddedDenseTilingData> JaggedToPaddedDenseTiling(
    const JaggedToPaddedDenseArgs& a, const PlatformInfo& p) {
    const int64_t maxLength = a.maxLength;
    if (maxLength < 0)
        return Reject("max_length must be >= 0, got " + std::to_string(maxLength));
    if (a.offsets.ndim != 1 || a.offsets.dims[0] < 1)
        return Reject("offsets must be 1-D with B + 1 >= 1 entries");
    const int64_t batch = a.offsets.dims[0] - 1;
    const int64_t inner = a.values.ndim == 2 ? a.values.dims[1] : 1;
    const bool shape_ok = a.out.dtype == a.values.dtype && a.out.ndim == a.values.ndim + 1 &&
                          a.out.dims[0] == batch && a.out.dims[1] == maxLength &&
                          (a.values.ndim == 1 || a.out.dims[2] == inner);
    if (!shape_ok) {
        return Reject("out must have the dtype of values and shape [B, max_length" +
                      std::string(a.values.ndim == 2 ? ", D]" : "]") + " = " + "[" +
                      std::to_string(batch) + ", " + std::to_string(maxLength) +
                      (a.values.ndim == 2 ? ", " + std::to_string(inner) : "") + "], got " +
                      a.out.Shape());
    }
    const int64_t elem = DTypeSize(a.values.dtype);
    TilingPlan<JaggedToPaddedDenseTilingData> plan;
    JaggedToPaddedDenseTilingData& td = plan.data;
    td.batch = batch;
    td.maxLength = maxLength;
    td.inner = inner;
    td.valueRows = a.values.dims[0];
    td.padBits = PaddingBits(a.values.dtype, a.paddingValue, a.paddingValueInt);
    SizeRowCopyBuffers(td, p);
    SetCoreNum(plan, CoresForBytes(p, batch * maxLength * inner * elem));
    return plan;
}

}  // namespace mxrec

#endif  // JAGGED_TO_PADDED_DENSE_TILING_H
