// SegmentSumCsr, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into segment_sum_csr_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// out = [S], one sum per segment: csr_seg has S + 1 entries.
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* csr = context->GetInputShape(0);
    gert::Shape* out = context->GetOutputShape(0);
    if (csr == nullptr || out == nullptr || csr->GetDimNum() != 1 || csr->GetDim(0) < 1)
        return GRAPH_FAILED;
    out->SetDimNum(1);
    out->SetDim(0, csr->GetDim(0) - 1);
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "segment_sum_csr_op_def.inc"
