// OffsetsRange, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into offsets_range_op_def.inc, included last.
#include "register/op_def_registry.h"
#include "infer_shape.h"

namespace ge {
// range = [range_size], an attribute: the output's length does not follow from offsets' shape.
static graphStatus InferShape(gert::InferShapeContext* context) {
    return mxrec::InferLengthFromAttr(context, 0);
}
}  // namespace ge

#include "offsets_range_op_def.inc"
