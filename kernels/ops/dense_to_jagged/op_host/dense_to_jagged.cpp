// DenseToJagged, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into dense_to_jagged_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// values = [total_l] or [total_l, D]; total_l comes from the caller (offsets[-1] lives on the
// device).
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* dense = context->GetInputShape(0);
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    gert::Shape* values = context->GetOutputShape(0);
    if (dense == nullptr || attrs == nullptr || values == nullptr)
        return GRAPH_FAILED;
    const int64_t* totalL = attrs->GetAttrPointer<int64_t>(0);
    if (totalL == nullptr || *totalL < 0)
        return GRAPH_FAILED;
    values->SetDimNum(dense->GetDimNum() - 1);
    values->SetDim(0, *totalL);
    if (dense->GetDimNum() == 3)
        values->SetDim(1, dense->GetDim(2));
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "dense_to_jagged_op_def.inc"
