// ExpandIntoJaggedPermute, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef
// are generated from op.toml into expand_into_jagged_permute_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// output_permute = [output_size], an attribute (the data-dependent output_offset[-1]).
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    gert::Shape* out = context->GetOutputShape(0);
    if (attrs == nullptr || out == nullptr)
        return GRAPH_FAILED;
    const int64_t* size = attrs->GetAttrPointer<int64_t>(0);
    if (size == nullptr || *size < 0)
        return GRAPH_FAILED;
    out->SetDimNum(1);
    out->SetDim(0, *size);
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "expand_into_jagged_permute_op_def.inc"
