// ExpandIntoJaggedPermute, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef
// are generated from op.toml into expand_into_jagged_permute_op_def.inc, included last.
#include "register/op_def_registry.h"
#include "infer_shape.h"

namespace ge {
// output_permute = [output_size], an attribute (the data-dependent output_offset[-1]).
static graphStatus InferShape(gert::InferShapeContext* context) {
    return mxrec::InferLengthFromAttr(context, 0);
}
}  // namespace ge

#include "expand_into_jagged_permute_op_def.inc"
