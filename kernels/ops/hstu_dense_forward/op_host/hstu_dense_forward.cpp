// HstuDenseForward, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into hstu_dense_forward_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// out has q's shape (normal [B, S, N, D] or jagged [T, N, D]).
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* q = context->GetInputShape(0);
    gert::Shape* out = context->GetOutputShape(0);
    if (q == nullptr || out == nullptr)
        return GRAPH_FAILED;
    out->SetDimNum(q->GetDimNum());
    for (size_t i = 0; i < q->GetDimNum(); ++i)
        out->SetDim(i, q->GetDim(i));
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "hstu_dense_forward_op_def.inc"
