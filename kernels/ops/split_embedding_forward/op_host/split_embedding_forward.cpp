// SplitEmbeddingForward, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into split_embedding_forward_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// out = [B, total_d] with B = (offsets.size(0) - 1) / T when pooling (mode 0/1), [N, max_d] for
// none (mode 2), [vbe_output_size] with variable batch per feature (the attribute is >= 0 then:
// the layout's size depends on the batch sizes, which only the caller knows); all from shapes and
// attributes only.
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* weightsOffsets = context->GetInputShape(1);
    const gert::Shape* indices = context->GetInputShape(3);
    const gert::Shape* offsets = context->GetInputShape(4);
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    gert::Shape* out = context->GetOutputShape(0);
    if (weightsOffsets == nullptr || indices == nullptr || offsets == nullptr || attrs == nullptr ||
        out == nullptr) {
        return GRAPH_FAILED;
    }
    const int64_t* mode = attrs->GetAttrPointer<int64_t>(0);
    const int64_t* totalD = attrs->GetAttrPointer<int64_t>(1);
    const int64_t* maxD = attrs->GetAttrPointer<int64_t>(2);
    const int64_t* vbeSize = attrs->GetAttrPointer<int64_t>(3);
    const int64_t t = weightsOffsets->GetDim(0);
    if (mode == nullptr || totalD == nullptr || maxD == nullptr || vbeSize == nullptr || t < 1)
        return GRAPH_FAILED;
    if (*vbeSize >= 0) {
        out->SetDimNum(1);
        out->SetDim(0, *vbeSize);
        return GRAPH_SUCCESS;
    }
    out->SetDimNum(2);
    if (*mode == 2) {
        out->SetDim(0, indices->GetDim(0));
        out->SetDim(1, *maxD);
    } else {
        out->SetDim(0, (offsets->GetDim(0) - 1) / t);
        out->SetDim(1, *totalD);
    }
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "split_embedding_forward_op_def.inc"
