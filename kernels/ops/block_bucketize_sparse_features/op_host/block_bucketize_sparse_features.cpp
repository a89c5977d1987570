// BlockBucketizeSparseFeatures, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef
// are generated from op.toml into block_bucketize_sparse_features_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// new_lengths = [my_size * lengths.numel()]; new_indices and the optional per-id outputs = [N].
// Unlike most sparse ops nothing here is data dependent: every id lands in exactly one bucket.
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* lengths = context->GetInputShape(0);
    const gert::Shape* indices = context->GetInputShape(1);
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    if (lengths == nullptr || indices == nullptr || attrs == nullptr)
        return GRAPH_FAILED;
    const int64_t* mySize = attrs->GetAttrPointer<int64_t>(2);
    if (mySize == nullptr || *mySize < 1)
        return GRAPH_FAILED;
    gert::Shape* newLengths = context->GetOutputShape(0);
    if (newLengths == nullptr)
        return GRAPH_FAILED;
    newLengths->SetDimNum(1);
    newLengths->SetDim(0, *mySize * lengths->GetShapeSize());
    const int64_t n = indices->GetShapeSize();
    for (size_t k = 1; k < 5; ++k) {
        gert::Shape* out = context->GetOutputShape(k);
        if (out == nullptr)
            continue;  // an absent optional output
        out->SetDimNum(1);
        out->SetDim(0, n);
    }
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "block_bucketize_sparse_features_op_def.inc"
