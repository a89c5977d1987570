// BatchIndexSelectDim0, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into batch_index_select_dim0_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// output = [output_len]: sum(num_t * cols_t) over the tables, known to the caller from fbgemm's
// host lists (the descriptors on the device hold the same numbers).
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    if (attrs == nullptr)
        return GRAPH_FAILED;
    const int64_t* len = attrs->GetAttrPointer<int64_t>(0);
    if (len == nullptr || *len < 0)
        return GRAPH_FAILED;
    gert::Shape* output = context->GetOutputShape(0);
    if (output == nullptr)
        return GRAPH_FAILED;
    output->SetDimNum(1);
    output->SetDim(0, *len);
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "batch_index_select_dim0_op_def.inc"
