// FP8RowwiseToFloat, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into fp8_rowwise_to_float_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// output = input's shape with the last dim W replaced by ceil4(W) - 8 (fbgemm's CUDA op).
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* in = context->GetInputShape(0);
    gert::Shape* out = context->GetOutputShape(0);
    if (in == nullptr || out == nullptr || in->GetDimNum() < 2)
        return GRAPH_FAILED;
    const size_t last = in->GetDimNum() - 1;
    if (in->GetDim(last) < 5)
        return GRAPH_FAILED;
    *out = *in;
    out->SetDim(last, (in->GetDim(last) + 3) / 4 * 4 - 8);
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "fp8_rowwise_to_float_op_def.inc"
