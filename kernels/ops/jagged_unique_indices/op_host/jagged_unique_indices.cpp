// JaggedUniqueIndices, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into jagged_unique_indices_op_def.inc, included last.
#include "register/op_def_registry.h"

namespace ge {
// output_lengths [T * B] and output_offsets [T * B + 1] follow offsets; unique_indices and
// reverse_index are [N] (unique_indices at its bound: num_unique says how much is written).
static graphStatus InferShape(gert::InferShapeContext* context) {
    const gert::Shape* offsets = context->GetInputShape(2);
    const gert::Shape* indices = context->GetInputShape(3);
    if (offsets == nullptr || indices == nullptr || offsets->GetDimNum() != 1 ||
        indices->GetDimNum() != 1 || offsets->GetDim(0) < 1)
        return GRAPH_FAILED;
    const int64_t dims[5] = {offsets->GetDim(0) - 1, offsets->GetDim(0), indices->GetDim(0),
                             indices->GetDim(0), 1};
    for (size_t i = 0; i < 5; ++i) {
        gert::Shape* out = context->GetOutputShape(i);
        if (out == nullptr)
            return GRAPH_FAILED;
        out->SetDimNum(1);
        out->SetDim(0, dims[i]);
    }
    return GRAPH_SUCCESS;
}
}  // namespace ge

#include "jagged_unique_indices_op_def.inc"
