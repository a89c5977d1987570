// IndexSelectForRank1Backward, CANN host side: tiling glue and shape inference (OpDef generated
// from op.toml).
#include "register/op_def_registry.h"
#include "index_select_for_rank1_backward_op_spec.h"
#include "index_select_for_rank1_backward_tiling.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
    return mxrec_op::Tiling(context, &mxrec::IndexSelectForRank1BackwardTiling);
}
}  // namespace optiling

namespace ge {
// out has x's shape.
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* x = context->GetInputShape(1);
    gert::Shape* out = context->GetOutputShape(0);
    if (x == nullptr || out == nullptr)
        return GRAPH_FAILED;
    *out = *x;
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "index_select_for_rank1_backward_op_def.inc"
