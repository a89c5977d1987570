// FloatToFP8Rowwise, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into float_to_fp8_rowwise_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// output = input's shape with the last dim D padded to a multiple of 4, plus 8 bytes (the
// row's fp32 scale and 4 zero bytes).
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* in = context->GetInputShape(0);
    gert::Shape* out = context->GetOutputShape(0);
    if (in == nullptr || out == nullptr || in->GetDimNum() < 2)
        return GRAPH_FAILED;
    *out = *in;
    const size_t last = in->GetDimNum() - 1;
    out->SetDim(last, (in->GetDim(last) + 3) / 4 * 4 + 8);
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "float_to_fp8_rowwise_op_def.inc"
