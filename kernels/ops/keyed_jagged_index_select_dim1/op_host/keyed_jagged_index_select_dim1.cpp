// KeyedJaggedIndexSelectDim1, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef
// are generated from op.toml into keyed_jagged_index_select_dim1_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// output_lengths = [T * I] with T = lengths.size(0) / batch_size; output and output_weights =
// [selected_lengths_sum], data dependent, from the caller.
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* lengths = context->GetInputShape(1);
    const gert::Shape* indices = context->GetInputShape(3);
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    if (lengths == nullptr || indices == nullptr || attrs == nullptr)
        return GRAPH_FAILED;
    const int64_t* batch = attrs->GetAttrPointer<int64_t>(0);
    const int64_t* sum = attrs->GetAttrPointer<int64_t>(1);
    if (batch == nullptr || sum == nullptr || *batch <= 0 || *sum < 0 ||
        lengths->GetDim(0) % *batch != 0)
        return GRAPH_FAILED;
    gert::Shape* output = context->GetOutputShape(0);
    gert::Shape* outLengths = context->GetOutputShape(1);
    if (output == nullptr || outLengths == nullptr)
        return GRAPH_FAILED;
    output->SetDimNum(1);
    output->SetDim(0, *sum);
    outLengths->SetDimNum(1);
    outLengths->SetDim(0, lengths->GetDim(0) / *batch * indices->GetDim(0));
    gert::Shape* outWeights = context->GetOutputShape(2);
    if (context->GetOptionalInputShape(4) != nullptr && outWeights != nullptr) {
        outWeights->SetDimNum(1);
        outWeights->SetDim(0, *sum);
    }
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "keyed_jagged_index_select_dim1_op_def.inc"
