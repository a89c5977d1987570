// PermutePooledEmbs, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into permute_pooled_embs_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// The output is pooled_embs' shape with dim 1 = permuted_dim (-1: unchanged, a permutation).
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* pooled = context->GetInputShape(0);
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    gert::Shape* out = context->GetOutputShape(0);
    if (pooled == nullptr || attrs == nullptr || out == nullptr)
        return GRAPH_FAILED;
    const int64_t* dim = attrs->GetAttrPointer<int64_t>(0);
    if (dim == nullptr)
        return GRAPH_FAILED;
    *out = *pooled;
    if (*dim >= 0)
        out->SetDim(1, *dim);
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "permute_pooled_embs_op_def.inc"
