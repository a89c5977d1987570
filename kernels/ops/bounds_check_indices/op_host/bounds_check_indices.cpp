// BoundsCheckIndices, CANN host side: tiling glue and shape inference (OpDef generated from
// op.toml). The operator has no outputs: indices, offsets and warning are updated in place.
#include "register/op_def_registry.h"
#include "bounds_check_indices_op_spec.h"
#include "bounds_check_indices_tiling.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
    return mxrec_op::Tiling(context, &mxrec::BoundsCheckIndicesTiling);
}
}  // namespace optiling

namespace ge {
static graphStatus InferShape(gert::InferShapeContext* context) {
    (void)context;
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "bounds_check_indices_op_def.inc"
