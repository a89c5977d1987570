// InferShape of the row-wise codecs (CANN op_host only): the output is the input with another
// last dim, a function of the input's.
#ifndef MXREC_CODEC_SHAPE_H
#define MXREC_CODEC_SHAPE_H

#include <cstdint>

#include "register/op_def_registry.h"

namespace mxrec {

// lastDim(the input's last dim) is the output's, or negative when the input's is too short.
template <typename LastDim>
inline ge::graphStatus InferCodecShape(gert::InferShapeContext* context, LastDim lastDim) {
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

}  // namespace mxrec

#endif  // MXREC_CODEC_SHAPE_H
