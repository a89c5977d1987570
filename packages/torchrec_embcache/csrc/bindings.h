// The pieces of the torchrec_embcache._C module, one per bound class or group. bindings.cpp
// calls them in this order: a class must be registered before a later signature names it,
// or that signature's docstring shows the C++ type instead of the Python one.
//
// Only bindings_table.cpp and bindings_planner.cpp see torch (see tensor_args.h); the rest
// needs pybind11 alone, so that it compiles without torch's headers.
#pragma once

#include <pybind11/pybind11.h>

namespace embcache {

// Exception translation and the registration of the Python error classes.
void bind_errors(pybind11::module_& m);
// build_info, thread count and crc32c.
void bind_runtime(pybind11::module_& m);
// OptimKind, InitKind, OptimConfig, InitConfig, TableConfig.
void bind_configs(pybind11::module_& m);
// HostTable and bucket_of (bindings_table.cpp).
void bind_host_table(pybind11::module_& m);
// SwapPlan, PlanHandle and CachePlanner (bindings_planner.cpp).
void bind_cache_planner(pybind11::module_& m);

}  // namespace embcache
