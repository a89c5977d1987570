// JaggedToPaddedDense, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into jagged_to_padded_dense_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// out = [B, max_length] or [B, max_length, D], B = offsets.size(0) - 1.
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* values = context->GetInputShape(0);
    const gert::Shape* offsets = context->GetInputShape(1);
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    gert::Shape* out = context->GetOutputShape(0);
    if (values == nullptr || offsets == nullptr || attrs == nullptr || out == nullptr)
        return GRAPH_FAILED;
    const int64_t* maxLength = attrs->GetAttrPointer<int64_t>(0);
    if (maxLength == nullptr || offsets->GetDimNum() != 1)
        return GRAPH_FAILED;
    out->SetDimNum(values->GetDimNum() + 1);
    out->SetDim(0, offsets->GetDim(0) - 1);
    out->SetDim(1, *maxLength);
    if (values->GetDimNum() == 2)
        out->SetDim(2, values->GetDim(1));
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "jagged_to_padded_dense_op_def.inc"
