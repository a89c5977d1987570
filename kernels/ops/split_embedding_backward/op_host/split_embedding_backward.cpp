// SplitEmbeddingBackward, CANN host side: tiling glue and shape inference (OpDef generated from
// op.toml). The operator has no outputs: weights, momentum1, momentum2 and grad_weights are updated
// in place.
#include "register/op_def_registry.h"
#include "split_embedding_backward_op_spec.h"
#include "split_embedding_backward_tiling.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
    return mxrec_op::Tiling(context, &mxrec::SplitEmbeddingBackwardTiling);
}
}  // namespace optiling

namespace ge {
static graphStatus InferShape(gert::InferShapeContext* context) {
    (void)context;
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "split_embedding_backward_op_def.inc"
