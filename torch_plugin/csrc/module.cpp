// The extension module fbgemm_npu_api._C: loading it runs the torch registrations of every
// family file, which add npu kernels to fbgemm's schemas (defined by fbgemm_gpu, imported first
// by the loader) and define mxrec's:
//
//   jagged.cpp  jagged_to_padded_dense_{forward,backward}, dense_to_jagged_forward
//   sparse.cpp  asynchronous_*_cumsum, permute_2D_sparse_data, block_bucketize_sparse_features,
//               invert_permute, bounds_check_indices
//   mxrec.cpp   mxrec::gather_for_rank1 and index_select_for_rank1_backward
//   tbe.cpp     the TBE training lookups (forward + fused optimizer backward)
//   hstu.cpp    mxrec::hstu_dense and hstu_dense_backward (CPU kernels in hstu_cpu.cpp)
//
// They only extend namespaces (TORCH_LIBRARY_IMPL, TORCH_LIBRARY_FRAGMENT), never define a
// whole one with TORCH_LIBRARY, so other libraries that extend fbgemm or mxrec still load next
// to this one.
#include <torch/extension.h>

#include "backend.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "npu kernels of fbgemm and mxrec operators (loaded by fbgemm_npu_api)";
    m.def("backend", &fbgemm_npu::backend::name, "the backend compiled in: 'sim' or 'npu'");
}
