// Tensors in and out of the core, for the bindings that take or return tensors.
//
// Tensors are validated and unwrapped here and the core works on raw pointers. Vectors
// produced by the core become tensors without a copy (the tensor owns the vector).
#pragma once

#include <ATen/ATen.h>
#include <torch/python.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace embcache {

template <class T>
at::Tensor to_tensor(std::vector<T>&& v, at::ScalarType st, std::vector<int64_t> shape) {
    if (v.empty())
        return at::empty(shape, at::TensorOptions().dtype(st));
    auto* holder = new std::vector<T>(std::move(v));
    return at::from_blob(
        holder->data(), shape, [holder](void*) { delete holder; }, at::TensorOptions().dtype(st));
}

inline at::Tensor ids_tensor(std::vector<int64_t>&& v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return to_tensor(std::move(v), at::kLong, {n});
}

inline at::Tensor u32_to_long(const std::vector<uint32_t>& v) {
    at::Tensor t = at::empty({static_cast<int64_t>(v.size())}, at::kLong);
    int64_t* p = t.data_ptr<int64_t>();
    for (size_t i = 0; i < v.size(); ++i)
        p[i] = v[i];
    return t;
}

inline void check_cpu(const at::Tensor& t, const char* name) {
    if (!t.device().is_cpu()) {
        throw std::invalid_argument(std::string(name) + " must be a CPU tensor here, got one on " +
                                    t.device().str());
    }
    if (!t.is_contiguous())
        throw std::invalid_argument(std::string(name) + " must be contiguous");
}

inline const int64_t* ids_ptr(const at::Tensor& t, const char* name) {
    check_cpu(t, name);
    if (t.scalar_type() != at::kLong) {
        throw pybind11::type_error(std::string(name) + " must be int64, got " +
                                   std::string(c10::toString(t.scalar_type())));
    }
    if (t.dim() != 1)
        throw std::invalid_argument(std::string(name) + " must be 1-D");
    return t.data_ptr<int64_t>();
}

inline const float* floats_ptr(const at::Tensor& t, const char* name, int64_t rows, int64_t cols) {
    check_cpu(t, name);
    if (t.scalar_type() != at::kFloat) {
        throw pybind11::type_error(std::string(name) + " must be float32, got " +
                                   std::string(c10::toString(t.scalar_type())));
    }
    if (t.dim() != 2 || t.size(0) != rows || t.size(1) != cols) {
        throw std::invalid_argument(std::string(name) + " must have shape [" +
                                    std::to_string(rows) + ", " + std::to_string(cols) + "], got " +
                                    c10::str(t.sizes()));
    }
    return t.data_ptr<float>();
}

inline const uint8_t* mask_ptr(const c10::optional<at::Tensor>& t, int64_t n, const char* name) {
    if (!t.has_value())
        return nullptr;
    check_cpu(*t, name);
    if (t->scalar_type() != at::kBool || t->dim() != 1 || t->size(0) != n) {
        throw std::invalid_argument(std::string(name) + " must be a bool tensor of length " +
                                    std::to_string(n));
    }
    return reinterpret_cast<const uint8_t*>(t->data_ptr<bool>());
}

}  // namespace embcache
