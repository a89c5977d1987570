// AsynchronousCompleteCumsum, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef
// are generated from op.toml into asynchronous_complete_cumsum_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// y has one more element than x along the last axis.
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* x = context->GetInputShape(0);
    gert::Shape* y = context->GetOutputShape(0);
    if (x == nullptr || y == nullptr || x->GetDimNum() < 1)
        return GRAPH_FAILED;
    *y = *x;
    const size_t last = x->GetDimNum() - 1;
    y->SetDim(last, x->GetDim(last) + 1);
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "asynchronous_complete_cumsum_op_def.inc"
