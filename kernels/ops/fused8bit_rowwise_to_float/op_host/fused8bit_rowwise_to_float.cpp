// Fused8BitRowwiseToFloat, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef
// are generated from op.toml into fused8bit_rowwise_to_float_op_def.inc, included last.
#include "register/op_def_registry.h"
#include "infer_shape.h"

namespace ge {
// output = input's shape less the 8 bytes of each row's fp32 scale and bias.
static graphStatus InferShape(gert::InferShapeContext* context) {
    return mxrec::InferLastDim(context, [](int64_t w) { return w - 8; });
}
}  // namespace ge

#include "fused8bit_rowwise_to_float_op_def.inc"
