// InferShape helpers of the operators' CANN op_host sources (host only, CANN's graph API).
//
// - InferLastDim: the output is the input with another last dim, a function of the input's (the
//   row-wise codecs).
// - InferLengthFromAttr: the output is 1-D, its length an int attribute, for an output whose
//   length depends on the input's contents (the caller knows it from its host lists).
#ifndef MXREC_INFER_SHAPE_H
#define MXREC_INFER_SHAPE_H

#include <cstddef>
#include <cstdint>

#include "register/op_def_registry.h"

namespace mxrec {

// lastDim(the input's last dim) is the output's, or negative when the input's is too short.
template <typename LastDim>
inline ge::graphStatus InferLastDim(gert::InferShapeContext* context, LastDim lastDim) {
    const gert::Shape* in = context->GetInputShape(0);
    gert::Shape* out = context->GetOutputShape(0);
    if (in == nullptr || out == nullptr || in->GetDimNum() < 2)
        return ge::GRAPH_FAILED;
    const size_t last = in->GetDimNum() - 1;
    const int64_t dim = lastDim(in->GetDim(last));
    if (dim < 0)
        return ge::GRAPH_FAILED;
    *out = *in;
    out->SetDim(last, dim);
    return ge::GRAPH_SUCCESS;
}

// Output 0 = [attribute `attr`], which must be given and not negative.
inline ge::graphStatus InferLengthFromAttr(gert::InferShapeContext* context, size_t attr) {
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    gert::Shape* out = context->GetOutputShape(0);
    if (attrs == nullptr || out == nullptr)
        return ge::GRAPH_FAILED;
    const int64_t* length = attrs->GetAttrPointer<int64_t>(attr);
    if (length == nullptr || *length < 0)
        return ge::GRAPH_FAILED;
    out->SetDimNum(1);
    out->SetDim(0, *length);
    return ge::GRAPH_SUCCESS;
}

}  // namespace mxrec

#endif  // MXREC_INFER_SHAPE_H
