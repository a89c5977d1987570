// FP8RowwiseToFloat, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into fp8_rowwise_to_float_op_def.inc, included last.
#include "register/op_def_registry.h"
#include "infer_shape.h"

namespace ge {
// output = input's shape with the last dim W replaced by ceil4(W) - 8 (fbgemm's CUDA op); W
// must be at least 5.
static graphStatus InferShape(gert::InferShapeContext* context) {
    return mxrec::InferLastDim(context, [](int64_t w) { return w < 5 ? -1 : (w + 3) / 4 * 4 - 8; });
}
}  // namespace ge

#include "fp8_rowwise_to_float_op_def.inc"
