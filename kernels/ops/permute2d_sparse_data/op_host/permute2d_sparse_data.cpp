// Permute2dSparseData, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into permute2d_sparse_data_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// permuted_lengths = [T'(, B)]; permuted_values/weights = [permuted_lengths_sum(, W)]; the sum
// is data dependent and comes from the caller.
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* permute = context->GetInputShape(0);
    const gert::Shape* lengths = context->GetInputShape(1);
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    if (permute == nullptr || lengths == nullptr || attrs == nullptr)
        return GRAPH_FAILED;
    const int64_t* sum = attrs->GetAttrPointer<int64_t>(0);
    if (sum == nullptr || *sum < 0)
        return GRAPH_FAILED;
    gert::Shape* outLengths = context->GetOutputShape(0);
    gert::Shape* outValues = context->GetOutputShape(1);
    if (outLengths == nullptr || outValues == nullptr)
        return GRAPH_FAILED;
    *outLengths = *lengths;
    outLengths->SetDim(0, permute->GetDim(0));
    outValues->SetDimNum(1);
    outValues->SetDim(0, *sum);
    const gert::Shape* weights = context->GetOptionalInputShape(3);
    gert::Shape* outWeights = context->GetOutputShape(2);
    if (weights != nullptr && outWeights != nullptr) {
        *outWeights = *weights;
        outWeights->SetDim(0, *sum);
    }
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "permute2d_sparse_data_op_def.inc"
