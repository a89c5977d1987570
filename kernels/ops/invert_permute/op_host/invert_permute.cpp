// InvertPermute, CANN host side: tiling glue and shape inference (OpDef generated from op.toml).
#include "register/op_def_registry.h"
#include "invert_permute_op_spec.h"
#include "invert_permute_tiling.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
    return mxrec_op::Tiling(context, &mxrec::InvertPermuteTiling);
}
}  // namespace optiling

namespace ge {
// inv = [permute.size(0)].
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* permute = context->GetInputShape(0);
    gert::Shape* inv = context->GetOutputShape(0);
    if (permute == nullptr || inv == nullptr)
        return GRAPH_FAILED;
    *inv = *permute;
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "invert_permute_op_def.inc"
