// Argument checks of the adapter. Every operator validates its arguments here, before any
// kernel runs, so a wrong call fails with a message naming the operator and the argument
// instead of a kernel trap or silent garbage.
//
// Error types: wrong dtype -> TypeError, wrong device -> RuntimeError (as torch reports device
// mismatches), wrong shape or contents (e.g. decreasing offsets) -> ValueError.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <initializer_list>
#include <vector>

namespace fbgemm_npu {

// Ids, lengths and offsets.
inline constexpr std::array<at::ScalarType, 2> kIndexTypes{at::kInt, at::kLong};
// What the jagged and sparse operators move.
inline constexpr std::array<at::ScalarType, 5> kValueTypes{at::kFloat, at::kHalf, at::kBFloat16,
                                                           at::kInt, at::kLong};

// The tensor is defined and lives on the npu (PrivateUse1) device.
void check_npu(const char* op, const char* name, const at::Tensor& t);

// All tensors given are on the same npu device as `first`.
void check_same_device(const char* op, const at::Tensor& first,
                       std::initializer_list<const at::Tensor*> others);

void check_dtype(const char* op, const char* name, const at::Tensor& t,
                 c10::ArrayRef<at::ScalarType> allowed);

void check_dim(const char* op, const char* name, const at::Tensor& t, int64_t min_dim,
               int64_t max_dim);

// Offsets of a jagged tensor, read on the host: offsets[0] >= 0 and non-decreasing. Returns the
// host copy so callers that need offsets[-1] do not read the device twice.
at::Tensor check_offsets(const char* op, const char* name, const at::Tensor& offsets);

// fbgemm passes one offsets tensor per jagged dimension; the operators support one.
const at::Tensor& single_offsets(const char* op, at::TensorList offsets);

}  // namespace fbgemm_npu
