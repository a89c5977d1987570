"""Build of the npu_sim C++ extension (torch's extension builder takes the C++ ABI flag and
include paths from the torch it is built against)."""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    ext_modules=[
        CppExtension(
            "npu_sim._C",
            ["csrc/device.cpp", "csrc/hccl.cpp", "csrc/module.cpp", "csrc/sparse.cpp"],
            extra_compile_args=["-O2", "-std=c++17", "-Wall", "-Wno-unused-parameter"],
        )
    ],
    # ninja (in recsdk-build's build environment) compiles the sources in parallel; torch's
    # builder falls back to one at a time without it.
    cmdclass={"build_ext": BuildExtension},
)
