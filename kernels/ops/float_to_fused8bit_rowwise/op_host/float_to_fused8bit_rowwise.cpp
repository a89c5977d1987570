// FloatToFused8BitRowwise, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef
// are generated from op.toml into float_to_fused8bit_rowwise_op_def.inc, included last.
#include "register/op_def_registry.h"
#include "infer_shape.h"

namespace ge {
// output = input's shape with 8 more bytes in the last dim (the row's fp32 scale and bias).
static graphStatus InferShape(gert::InferShapeContext* context) {
    return mxrec::InferLastDim(context, [](int64_t d) { return d + 8; });
}
}  // namespace ge

#include "float_to_fused8bit_rowwise_op_def.inc"
