// The simulated `npu` device: PrivateUse1 tensors whose memory is host memory.
//
// Only what makes a device a device lives here (allocation, device index, copies, views,
// resizing). Every other aten operator runs through the boxed CPU fallback, which copies to
// CPU, runs the CPU kernel and copies back, so ordinary models work unchanged; the fallback
// counts per operator so tests can report what was not natively implemented.
#include "npu_sim.h"

#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>

namespace npu_sim {
namespace {

thread_local c10::DeviceIndex current_device_index = 0;

c10::DeviceIndex configured_device_count() {
    // Read once: torch caches device counts, so changing it later would be inconsistent.
    static const c10::DeviceIndex count = [] {
        const char* env = std::getenv("NPU_SIM_DEVICE_COUNT");
        if (env == nullptr || *env == '\0')
            return static_cast<c10::DeviceIndex>(8);
        const int value = std::atoi(env);
        TORCH_CHECK(value >= 1 && value <= 64, "NPU_SIM_DEVICE_COUNT must be in [1, 64], got '",
                    env, "'");
        return static_cast<c10::DeviceIndex>(value);
    }();
    return count;
}

struct DeviceStats {
    std::atomic<int64_t> allocated{0};
    std::atomic<int64_t> peak{0};
    std::atomic<int64_t> allocations{0};
};

DeviceStats& stats(c10::DeviceIndex index) {
    static DeviceStats table[64];
    return table[index];
}

// Each allocation remembers its size and device so that frees keep the statistics exact.
struct Block {
    void* ptr;
    size_t size;
    c10::DeviceIndex device;
};

void free_block(void* ctx) {
    auto* block = static_cast<Block*>(ctx);
    stats(block->device).allocated -= static_cast<int64_t>(block->size);
    c10::free_cpu(block->ptr);
    delete block;
}

struct HostAllocator final : c10::Allocator {
    c10::DataPtr allocate(size_t nbytes) override {
        const c10::DeviceIndex device = current_device_index;
        void* ptr = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
        auto* block = new Block{ptr, nbytes, device};
        auto& s = stats(device);
        const int64_t now = (s.allocated += static_cast<int64_t>(nbytes));
        int64_t peak = s.peak.load();
        while (now > peak && !s.peak.compare_exchange_weak(peak, now)) {
        }
        ++s.allocations;
        return {ptr, block, &free_block, c10::Device(c10::DeviceType::PrivateUse1, device)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
    void copy_data(void* dest, const void* src, std::size_t count) const override {
        std::memcpy(dest, src, count);
    }
};

HostAllocator host_allocator;

struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
    static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
    c10::DeviceType type() const override { return kType; }
    c10::Device exchangeDevice(c10::Device d) const override {
        c10::Device old = getDevice();
        setDevice(d);
        return old;
    }
    c10::Device getDevice() const override { return {kType, current_device_index}; }
    void setDevice(c10::Device d) const override {
        TORCH_CHECK(d.type() == kType, "npu_sim: expected an npu device, got ", d);
        if (d.has_index()) {
            TORCH_CHECK(d.index() >= 0 && d.index() < configured_device_count(),
                        "npu_sim: device index ", static_cast<int>(d.index()), " out of range [0, ",
                        static_cast<int>(configured_device_count()), ")");
            current_device_index = d.index();
        }
    }
    void uncheckedSetDevice(c10::Device d) const noexcept override {
        if (d.has_index())
            current_device_index = d.index();
    }
    // The device executes synchronously on the host: one stream per device is exact.
    c10::Stream getStream(c10::Device d) const noexcept override {
        return c10::Stream(c10::Stream::DEFAULT, d);
    }
    c10::Stream getNewStream(c10::Device d, int priority) const override {
        (void)priority;
        return c10::Stream(c10::Stream::DEFAULT, d);
    }
    c10::Stream getStreamFromGlobalPool(c10::Device d, bool high_priority) const override {
        (void)high_priority;
        return c10::Stream(c10::Stream::DEFAULT, d);
    }
    c10::Stream exchangeStream(c10::Stream s) const noexcept override { return s; }
    c10::DeviceIndex deviceCount() const noexcept override { return configured_device_count(); }
    void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
                const c10::EventFlag flag) const override {
        (void)stream, (void)device_index, (void)flag;
        *event = reinterpret_cast<void*>(1);  // non-null: recorded; work is always complete
    }
    void block(void* event, const c10::Stream& stream) const override { (void)event, (void)stream; }
    bool queryEvent(void* event) const override {
        (void)event;
        return true;
    }
    void destroyEvent(void* event, const c10::DeviceIndex device_index) const noexcept override {
        (void)event, (void)device_index;
    }
    bool queryStream(const c10::Stream& stream) const override {
        (void)stream;
        return true;
    }
    void synchronizeStream(const c10::Stream& stream) const override { (void)stream; }
    void synchronizeEvent(void* event) const override { (void)event; }
    void synchronizeDevice(const c10::DeviceIndex device_index) const override {
        (void)device_index;
    }
    void recordDataPtrOnStream(const c10::DataPtr& data_ptr,
                               const c10::Stream& stream) const override {
        (void)data_ptr, (void)stream;
    }
    double elapsedTime(void* start, void* end, const c10::DeviceIndex device_index) const override {
        (void)start, (void)end, (void)device_index;
        return 0.0;
    }
};

// "Pinned" host memory for the device: plain host memory whose allocations are remembered, so
// is_pinned() is true exactly for tensors from pin_memory()/pin_memory=True, as with a real
// accelerator's page-locked allocator. DDP's reducer and torchrec's pinned copies assert it.
class PinnedAllocator final : public c10::Allocator {
public:
    c10::DataPtr allocate(size_t nbytes) override {
        void* data = c10::alloc_cpu(nbytes);
        {
            std::lock_guard<std::mutex> lock(mutex());
            live().insert(data);
        }
        return {data, data, &Delete, c10::Device(c10::DeviceType::CPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &Delete; }
    void copy_data(void* dest, const void* src, std::size_t count) const final {
        default_copy_data(dest, src, count);
    }
    static bool contains(const void* data) {
        std::lock_guard<std::mutex> lock(mutex());
        return live().count(const_cast<void*>(data)) > 0;
    }

private:
    static std::mutex& mutex() {
        static std::mutex m;
        return m;
    }
    static std::unordered_set<void*>& live() {
        static std::unordered_set<void*> s;
        return s;
    }
    static void Delete(void* data) {
        {
            std::lock_guard<std::mutex> lock(mutex());
            live().erase(data);
        }
        c10::free_cpu(data);
    }
};

PinnedAllocator pinned_allocator;

struct Hooks final : at::PrivateUse1HooksInterface {
    const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
        (void)device_index;
        // Random operators run on the CPU through the fallback, with the CPU generator.
        return at::detail::getDefaultCPUGenerator();
    }
    at::Device getDeviceFromPtr(void* data) const override {
        (void)data;
        return {c10::DeviceType::PrivateUse1, current_device_index};
    }
    bool isPinnedPtr(const void* data) const override { return PinnedAllocator::contains(data); }
    at::Allocator* getPinnedMemoryAllocator() const override { return &pinned_allocator; }
    bool hasPrimaryContext(c10::DeviceIndex device_index) const override {
        (void)device_index;
        return true;
    }
    void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
        at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), newsize);
    }
};

std::mutex fallback_mutex;
std::map<std::string, int64_t> fallback_counts;

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
    run_aten_on_cpu(op, stack, c10::DispatchKey::CPU);
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<at::MemoryFormat> memory_format) {
    (void)layout, (void)pin_memory;
    c10::OptionalDeviceGuard guard(device);
    const auto key = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
    return at::detail::empty_generic(size, &host_allocator, key, c10::dtype_or_default(dtype),
                                     memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                         std::optional<at::Device> device, std::optional<bool> pin_memory) {
    (void)layout, (void)pin_memory;
    c10::OptionalDeviceGuard guard(device);
    const auto key = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
    return at::detail::empty_strided_generic(size, stride, &host_allocator, key,
                                             c10::dtype_or_default(dtype));
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
    (void)non_blocking;  // copies are synchronous host memcpys
    TORCH_CHECK(self.sizes() == dst.sizes(), "npu_sim: copy between different shapes ",
                self.sizes(), " and ", dst.sizes());
    host_view(dst).copy_(host_view(self));
    return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
    dst.resize_(self.sizes());
    return copy_from(self, dst, false);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
    // The CPU resize grows the storage through its own allocator, which is ours.
    at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size, /*stride=*/std::nullopt);
    if (memory_format.has_value()) {
        TORCH_CHECK(*memory_format != at::MemoryFormat::Preserve,
                    "npu_sim: unsupported memory format Preserve for resize_");
        self.unsafeGetTensorImpl()->empty_tensor_restride(*memory_format);
    }
    return self;
}

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
    return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
    const int64_t nbytes = static_cast<int64_t>(source.nbytes());
    const int64_t itemsize = static_cast<int64_t>(self.dtype().itemsize());
    return self.set_(std::move(source), 0, {nbytes / itemsize}, {});
}

at::Tensor& set_storage_offset(at::Tensor& self, c10::Storage source, c10::SymInt offset,
                               c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
    return at::native::set_storage_cpu_(
        self, std::move(source), offset.guard_int(__FILE__, __LINE__),
        C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

void record_stream(at::Tensor& self, c10::Stream stream) {
    (void)self, (void)stream;  // memory is never reused before the host finishes with it
}

}  // namespace

at::Tensor host_view(const at::Tensor& t) {
    if (!t.device().is_privateuseone())
        return t;
    if (t.numel() == 0) {
        return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kCPU));
    }
    // The view owns a reference to the npu storage: an asynchronous collective (gloo's worker
    // thread) may still read or write it after the caller dropped its npu tensor, as with
    // torchrec's temporary split tensors; without it the memory would be recycled under gloo.
    c10::Storage keep = t.storage();
    return at::from_blob(
        t.data_ptr(), t.sizes(), t.strides(), [keep](void*) {}, t.options().device(at::kCPU));
}

void run_aten_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                     c10::DispatchKey cpu_key) {
    const bool sparse = cpu_key == c10::DispatchKey::SparseCPU;
    const auto& name = op.schema().operator_name().name;
    // Only aten operators fall back. Running fbgemm's (or any library's) CPU kernels for npu
    // tensors would pass off a CPU implementation as the NPU operator: those must come from
    // the operator adapter, and until they do they fail loudly.
    TORCH_CHECK_NOT_IMPLEMENTED(
        name.rfind("aten::", 0) == 0, "'", name, "' has no npu kernel",
        sparse ? " for sparse tensors" : "",
        ": the simulated device only falls back to the CPU for aten operators; npu "
        "implementations of library operators come from the operator adapter (fbgemm_npu_api)");
    {
        std::lock_guard<std::mutex> lock(fallback_mutex);
        ++fallback_counts[c10::toString(op.schema().operator_name()) + (sparse ? " (sparse)" : "")];
    }
    // SparseCPU's kernels also take the dense arguments of mixed operators such as
    // add_(dense, sparse); the dense CPU key has none for sparse arguments.
    at::native::cpu_fallback(op, stack, /*error_on_views=*/false, cpu_key);
}

std::map<std::string, int64_t> fallback_stats() {
    std::lock_guard<std::mutex> lock(fallback_mutex);
    return fallback_counts;
}

void reset_fallback_stats() {
    std::lock_guard<std::mutex> lock(fallback_mutex);
    fallback_counts.clear();
}

std::map<std::string, int64_t> memory_stats(int64_t device) {
    TORCH_CHECK(device >= 0 && device < configured_device_count(), "npu_sim: no device ", device);
    auto& s = stats(static_cast<c10::DeviceIndex>(device));
    return {{"allocated_bytes.all.current", s.allocated.load()},
            {"allocated_bytes.all.peak", s.peak.load()},
            {"num_alloc_retries", 0},
            {"allocation.all.allocated", s.allocations.load()}};
}

void reset_peak_memory_stats(int64_t device) {
    auto& s = stats(static_cast<c10::DeviceIndex>(device));
    s.peak = s.allocated.load();
}

int64_t device_count() {
    return configured_device_count();
}
int64_t current_device() {
    return current_device_index;
}
void set_device(int64_t index) {
    GuardImpl().setDevice(
        c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index)));
}

void register_hooks() {
    static bool done = false;
    if (done)
        return;
    at::RegisterPrivateUse1HooksInterface(new Hooks());
    done = true;
}

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &host_allocator);

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("empty.memory_format", empty_memory_format);
    m.impl("empty_strided", empty_strided);
    m.impl("_copy_from", copy_from);
    m.impl("_copy_from_and_resize", copy_from_and_resize);
    m.impl("resize_", resize_);
    m.impl("as_strided", as_strided);
    m.impl("set_.source_Storage", set_source_storage);
    m.impl("set_.source_Storage_storage_offset", set_storage_offset);
    m.impl("record_stream", record_stream);
    m.impl("view", at::native::view);
    m.impl("_reshape_alias", at::native::_reshape_alias);
    m.impl("alias", at::native::alias);
    m.impl("unfold", at::native::unfold);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
    m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

// torch 2.6 gives AutogradCPU, AutogradCUDA, ... a fallback for operators without an autograd
// formula (c10d collectives, library operators), but not AutogradPrivateUse1: without this,
// such operators stop at the autograd key instead of reaching their npu kernels.
TORCH_LIBRARY_IMPL(_, AutogradPrivateUse1, m) {
    m.fallback(torch::autograd::basicAutogradNotImplementedFallback());
}

}  // namespace npu_sim
