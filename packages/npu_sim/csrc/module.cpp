// Python bindings of the simulated npu device.
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/extension.h>

#include "npu_sim.h"

namespace npu_sim {
c10::intrusive_ptr<c10d::Backend> make_hccl_backend(c10::intrusive_ptr<c10d::Backend> gloo,
                                                    int64_t rank, int64_t size);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "npu_sim: a simulated Ascend npu device for torch, on host memory";
    m.def("register_hooks", &npu_sim::register_hooks);
    m.def("device_count", &npu_sim::device_count);
    m.def("current_device", &npu_sim::current_device);
    m.def("set_device", &npu_sim::set_device);
    m.def("memory_stats", &npu_sim::memory_stats);
    m.def("reset_peak_memory_stats", &npu_sim::reset_peak_memory_stats);
    m.def("fallback_stats", &npu_sim::fallback_stats);
    m.def("reset_fallback_stats", &npu_sim::reset_fallback_stats);
    m.def("host_view", &npu_sim::host_view, "A CPU tensor sharing an npu tensor's (host) memory.");
    m.def("make_hccl_backend", &npu_sim::make_hccl_backend);
}
