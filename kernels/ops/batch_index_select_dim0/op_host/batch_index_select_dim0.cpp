// BatchIndexSelectDim0, CANN host side: InferShape. TilingFunc, InferDataType and the OpDef are
// generated from op.toml into batch_index_select_dim0_op_def.inc, included last.
#include "register/op_def_registry.h"
#include "infer_shape.h"

namespace ge {
// output = [output_len]: sum(num_t * cols_t) over the tables, known to the caller from fbgemm's
// host lists (the descriptors on the device hold the same numbers).
static graphStatus InferShape(gert::InferShapeContext* context) {
    return mxrec::InferLengthFromAttr(context, 0);
}
}  // namespace ge

#include "batch_index_select_dim0_op_def.inc"
