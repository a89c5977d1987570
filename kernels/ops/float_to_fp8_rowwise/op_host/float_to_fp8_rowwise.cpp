// FloatToFP8Rowwise, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into float_to_fp8_rowwise_op_def.inc, included last.
#include "register/op_def_registry.h"
#include "infer_shape.h"

namespace ge {
// output = input's shape with the last dim D padded to a multiple of 4, plus 8 bytes (the
// row's fp32 scale and 4 zero bytes).
static graphStatus InferShape(gert::InferShapeContext* context) {
    return mxrec::InferLastDim(context, [](int64_t d) { return (d + 3) / 4 * 4 + 8; });
}
}  // namespace ge

#include "float_to_fp8_rowwise_op_def.inc"
