// AsynchronousCompleteCumsum, CANN host side: tiling glue and shape inference. The OpDef and
// InferDataType are generated from op.toml (asynchronous_complete_cumsum_op_def.inc).
#include "register/op_def_registry.h"
#include "asynchronous_complete_cumsum_op_spec.h"
#include "asynchronous_complete_cumsum_tiling.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
    return mxrec_op::Tiling(context, &mxrec::AsynchronousCompleteCumsumTiling);
}
}  // namespace optiling

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
