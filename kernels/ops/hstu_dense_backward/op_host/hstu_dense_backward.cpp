// HstuDenseBackward, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into hstu_dense_backward_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// dq, dk, dv have q's shape; d_attn_bias (when given) attn_bias's.
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* q = context->GetInputShape(1);
    if (q == nullptr)
        return GRAPH_FAILED;
    for (size_t o = 0; o < 3; ++o) {
        gert::Shape* out = context->GetOutputShape(o);
        if (out == nullptr)
            return GRAPH_FAILED;
        out->SetDimNum(q->GetDimNum());
        for (size_t i = 0; i < q->GetDimNum(); ++i)
            out->SetDim(i, q->GetDim(i));
    }
    const gert::Shape* bias = context->GetOptionalInputShape(5);
    gert::Shape* dBias = context->GetOutputShape(3);
    if (bias != nullptr && dBias != nullptr) {
        dBias->SetDimNum(bias->GetDimNum());
        for (size_t i = 0; i < bias->GetDimNum(); ++i)
            dBias->SetDim(i, bias->GetDim(i));
    }
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "hstu_dense_backward_op_def.inc"
