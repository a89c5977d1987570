// GatherForRank1, CANN host side: tiling glue and shape inference (OpDef generated from op.toml).
#include "register/op_def_registry.h"
#include "gather_for_rank1_op_spec.h"
#include "gather_for_rank1_tiling.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
    return mxrec_op::Tiling(context, &mxrec::GatherForRank1Tiling);
}
}  // namespace optiling

namespace ge {
// out = [index.size(0)].
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* index = context->GetInputShape(1);
    gert::Shape* out = context->GetOutputShape(0);
    if (index == nullptr || out == nullptr)
        return GRAPH_FAILED;
    *out = *index;
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "gather_for_rank1_op_def.inc"
