// SumStacked, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are generated
// from op.toml into sum_stacked_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// y is one of the K stacked tensors: x's shape without dim 0.
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* x = context->GetInputShape(0);
    gert::Shape* y = context->GetOutputShape(0);
    if (x == nullptr || y == nullptr || x->GetDimNum() < 2)
        return GRAPH_FAILED;
    y->SetDimNum(x->GetDimNum() - 1);
    for (size_t d = 1; d < x->GetDimNum(); ++d)
        y->SetDim(d - 1, x->GetDim(d));
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "sum_stacked_op_def.inc"
