// The runtime part of each extension module: what _ext.py checks at import (build_info) and
// the host pool's size. Needs pybind11 and torch/version.h, not torch's tensor headers.
#pragma once

#include <pybind11/pybind11.h>
#include <torch/version.h>

#include <string>

#include "recsdk_ext/thread_pool.h"

#if !defined(RECSDK_EXT_VERSION) || !defined(RECSDK_EXT_MODULE)
#error "RECSDK_EXT_VERSION and RECSDK_EXT_MODULE must be defined by the build (setup.py)"
#endif
#define RECSDK_EXT_STR2(x) #x
#define RECSDK_EXT_STR(x) RECSDK_EXT_STR2(x)

namespace recsdk_ext {

// Raises ImportError unless this core was built for the running torch (release and C++ ABI) and
// is the running Python package's version: a mismatch would otherwise fail later, obscurely.
inline void check_build(const std::string& torch_release, bool cxx11_abi,
                        const std::string& package_version) {
    const std::string module = RECSDK_EXT_STR(RECSDK_EXT_MODULE);
    const std::string built_torch = std::to_string(TORCH_VERSION_MAJOR) + "." +
                                    std::to_string(TORCH_VERSION_MINOR) + "." +
                                    std::to_string(TORCH_VERSION_PATCH);
    if (built_torch != torch_release) {
        throw pybind11::import_error(module + "'s C++ core was built against torch " + built_torch +
                                     " but torch " + torch_release +
                                     " is running; rebuild the wheel in this environment");
    }
    const std::string version = RECSDK_EXT_STR(RECSDK_EXT_VERSION);
    if (version != package_version) {
        throw pybind11::import_error(module + "'s C++ core is version " + version +
                                     " but the Python package is " + package_version +
                                     ": a stale build is lying around; rebuild the extension");
    }
    if (static_cast<bool>(_GLIBCXX_USE_CXX11_ABI) != cxx11_abi) {
        throw pybind11::import_error(module +
                                     "'s C++ core was compiled with a different "
                                     "_GLIBCXX_USE_CXX11_ABI than torch; rebuild it with torch's "
                                     "extension builder");
    }
}

// build_info: the package version and the torch, ABI and compiler the core was built with;
// set_num_threads / get_num_threads / default_num_threads: the host pool.
inline void bind_build_and_pool(pybind11::module_& m) {
    pybind11::dict info;
    info["version"] = RECSDK_EXT_STR(RECSDK_EXT_VERSION);
    info["torch_version"] = std::to_string(TORCH_VERSION_MAJOR) + "." +
                            std::to_string(TORCH_VERSION_MINOR) + "." +
                            std::to_string(TORCH_VERSION_PATCH);
    info["cxx11_abi"] = static_cast<int>(_GLIBCXX_USE_CXX11_ABI);
    info["compiler"] = __VERSION__;
    m.attr("build_info") = info;

    m.def(
        "set_num_threads", [](int n) { ThreadPool::global().set_num_threads(n); },
        "Threads of the package's host pool, the calling thread included.");
    m.def("get_num_threads", [] { return ThreadPool::global().num_threads(); });
    m.def("default_num_threads", &default_num_threads);
    m.def("_check_build", &check_build, pybind11::arg("torch_release"), pybind11::arg("cxx11_abi"),
          pybind11::arg("package_version"));
}

}  // namespace recsdk_ext
