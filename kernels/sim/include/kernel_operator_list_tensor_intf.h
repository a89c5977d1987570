// ListTensorDesc and TensorDesc (CANN's basic_api/kernel_operator_list_tensor_intf.h, which
// kernels include by this name): the descriptor of a dynamic list of input tensors the framework
// passes in global memory, as dav_c220 decodes it (impl/basic_api/dav_c220/
// kernel_operator_list_tensor_impl.h; ListTensorDesc.md):
//   word 0: the byte offset from the head to the data-pointer array;
//   then one record per tensor: a word whose low 32 bits are the rank `dim` and high 32 bits
//     the tensor's index (the first record's high half is the count, or 0), then `dim` shape
//     words; with dim 0 a record is 2 words (the second 0xffffffff), pointers only;
//   then `count` 64-bit data pointers.
// Malformed descriptors and indices out of range fail naming the call (the device asserts).
#ifndef RECSDK_SIM_LIST_TENSOR_INTF_H
#define RECSDK_SIM_LIST_TENSOR_INTF_H

#include <cstdint>
#include <string>

#include "kernel_operator.h"

namespace AscendC {

class ListTensorDesc;

template <class T>
class TensorDesc {
public:
    TensorDesc() {}
    void SetShapeAddr(uint64_t* shapePtr) { shape_ = shapePtr; }
    uint64_t GetDim() { return dim_; }
    uint64_t GetIndex() { return index_; }
    uint64_t GetShape(uint32_t offset) {
        if (offset >= dim_ || shape_ == nullptr) {
            recsdk::sim::Fail("TensorDesc::GetShape", {},
                              "offset " + std::to_string(offset) + " >= dim " +
                                  std::to_string(dim_) + " (or no SetShapeAddr)");
        }
        return shape_[offset];
    }
    __gm__ T* GetDataPtr() { return ptr_; }
    GlobalTensor<T> GetDataObj() {
        uint64_t n = 1;
        for (uint32_t i = 0; i < dim_; ++i)
            n *= shape_[i];
        GlobalTensor<T> obj;
        obj.SetGlobalBuffer(ptr_, n);
        return obj;
    }

    friend class ListTensorDesc;

private:
    uint64_t* shape_ = nullptr;
    __gm__ T* ptr_ = nullptr;
    uint32_t dim_ = 0;
    uint32_t index_ = 0;
};

class ListTensorDesc {
public:
    ListTensorDesc() {}
    ListTensorDesc(__gm__ void* data, uint32_t length = 0xffffffff,
                   uint32_t shapeSize = 0xffffffff) {
        Init(data, length, shapeSize);
    }
    void Init(__gm__ void* data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff) {
        const char* call = "ListTensorDesc::Init";
        if (data == nullptr)
            recsdk::sim::Fail(call, {}, "null descriptor");
        auto* head = reinterpret_cast<__gm__ uint64_t*>(data);
        const uint64_t ptr_offset = Word(head, call);
        shapes_ = head + 1;
        data_ = head + ptr_offset / sizeof(uint64_t);
        const uint64_t first = Word(shapes_, call);
        dim_ = static_cast<uint32_t>(first & 0xffffffffu);
        record_ = dim_ == 0 ? 2 : 1 + dim_;
        const uint32_t count_field = static_cast<uint32_t>(first >> 32);
        count_ = count_field != 0 ? count_field
                                  : static_cast<uint32_t>(Word(data_ - record_, call) >> 32) + 1;
        const bool ok = dim_ != 0 ? count_ == (ptr_offset - 8) / (record_ * 8)
                                  : Word(shapes_ + 1, call) == 0xffffffffu && ptr_offset == 24;
        if (ptr_offset % 8 != 0 || !ok) {
            recsdk::sim::Fail(call, {},
                              "malformed list-tensor descriptor (pointer offset " +
                                  std::to_string(ptr_offset) + ", dim " + std::to_string(dim_) +
                                  ", count " + std::to_string(count_) + ")");
        }
        if (length != 0xffffffff && shapeSize != 0xffffffff &&
            (count_ != shapeSize || length != ptr_offset + count_ * 8ull)) {
            recsdk::sim::Fail(call, {}, "length/shapeSize disagree with the descriptor");
        }
    }
    template <class T>
    void GetDesc(TensorDesc<T>& desc, uint32_t index) {
        const char* call = "ListTensorDesc::GetDesc";
        CheckIndex(index, call);
        if (dim_ == 0)
            recsdk::sim::Fail(call, {}, "the descriptor holds data pointers only (dim 0)");
        if (desc.shape_ == nullptr)
            recsdk::sim::Fail(call, {}, "the TensorDesc has no shape buffer (SetShapeAddr)");
        desc.dim_ = dim_;
        desc.index_ = index;
        desc.ptr_ = reinterpret_cast<__gm__ T*>(Word(data_ + index, call));
        const __gm__ uint64_t* record = shapes_ + uint64_t(index) * record_;
        for (uint32_t i = 0; i < dim_; ++i)
            desc.shape_[i] = Word(record + 1 + i, call);
    }
    template <class T>
    __gm__ T* GetDataPtr(uint32_t index) {
        const char* call = "ListTensorDesc::GetDataPtr";
        CheckIndex(index, call);
        return reinterpret_cast<__gm__ T*>(Word(data_ + index, call));
    }
    uint32_t GetSize() { return count_; }

private:
    // A scalar read of the descriptor, checked against the launch's global memory.
    static uint64_t Word(const __gm__ uint64_t* p, const char* call) {
        recsdk::sim::CheckGm(p, sizeof(uint64_t), false, call, {});
        auto& s = recsdk::sim::Stats();
        ++s.scalar_gm_reads;
        recsdk::sim::CountGmRead(s, p, sizeof(uint64_t));
        return *p;
    }
    void CheckIndex(uint32_t index, const char* call) const {
        if (data_ == nullptr)
            recsdk::sim::Fail(call, {}, "the descriptor is not initialised (Init)");
        if (index >= count_) {
            recsdk::sim::Fail(
                call, {},
                "index " + std::to_string(index) + " >= " + std::to_string(count_) + " tensors");
        }
    }

    const __gm__ uint64_t* shapes_ = nullptr;
    const __gm__ uint64_t* data_ = nullptr;
    uint32_t dim_ = 0;
    uint32_t record_ = 0;
    uint32_t count_ = 0;
};

}  // namespace AscendC

#endif  // RECSDK_SIM_LIST_TENSOR_INTF_H
