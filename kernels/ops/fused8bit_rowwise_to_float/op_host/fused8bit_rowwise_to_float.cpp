// Fused8BitRowwiseToFloat, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef
// are generated from op.toml into fused8bit_rowwise_to_float_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// output = input's shape less the 8 bytes of each row's fp32 scale and bias.
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* in = context->GetInputShape(0);
    gert::Shape* out = context->GetOutputShape(0);
    if (in == nullptr || out == nullptr || in->GetDimNum() < 2)
        return GRAPH_FAILED;
    const size_t last = in->GetDimNum() - 1;
    if (in->GetDim(last) < 8)
        return GRAPH_FAILED;
    *out = *in;
    out->SetDim(last, in->GetDim(last) - 8);
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "fused8bit_rowwise_to_float_op_def.inc"
