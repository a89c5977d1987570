"""The HSTU family of the adapter on CPU (tests/plugin/test_hstu.py).

Which build is tested:
- if ``fbgemm_npu_api`` is installed (the adapter wheel), that one;
- otherwise the family's sources (torch_plugin/csrc/hstu.cpp, hstu_cpu.cpp, checks.cpp) are
  compiled into a torch operator library in pytest's cache (incremental; about a minute on 2
  busy cores the first time) and loaded with ``torch.ops.load_library``. Its backend glue header
  is generated from the catalogue as the plugin stage generates it; the two npu entry points
  hstu.cpp calls are stubs that raise, since no npu device exists here (the npu kernels are
  tested by verify/gr/test_npu_hstu.py on the built adapter).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from recsdk_build.ops import catalogue, codegen

REPO = Path(__file__).resolve().parents[2]
CSRC = REPO / "torch_plugin" / "csrc"
SOURCES = ["checks.cpp", "hstu.cpp", "hstu_cpu.cpp"]
HSTU_OPS = ("hstu_dense_forward", "hstu_dense_backward")


def _stub_backend(specs: list[catalogue.OpSpec]) -> str:
    lines = ['#include <c10/util/Exception.h>\n\n#include "backend.h"\n']
    lines.append("namespace fbgemm_npu::backend {\n")
    for spec in specs:
        if spec.name not in HSTU_OPS:
            continue
        lines.append(codegen._signature(spec, ") {"))
        lines.append(f'    TORCH_CHECK(false, "{spec.name}: no npu backend in this test build");')
        lines.append("}\n")
    lines.append("}  // namespace fbgemm_npu::backend\n")
    return "\n".join(lines)


def _build(directory: Path) -> None:
    import torch
    from torch.utils import cpp_extension

    directory.mkdir(parents=True, exist_ok=True)
    specs = list(catalogue.load_catalogue(REPO / "kernels").values())
    codegen.write_if_changed(directory / codegen.BACKEND_HEADER, codegen.backend_header(specs))
    stub = directory / "hstu_stub_backend.cpp"
    codegen.write_if_changed(stub, _stub_backend(specs))
    os.environ.setdefault("MAX_JOBS", "2")
    cpp_extension.load(
        name="hstu_adapter_cpu_test",
        sources=[str(CSRC / s) for s in SOURCES] + [str(stub)],
        extra_include_paths=[str(CSRC), str(directory)],
        extra_cflags=["-O2", "-std=c++17", "-Wall", "-Wno-unused-parameter"],
        build_directory=str(directory),
        is_python_module=False,
    )
    assert torch._C._dispatch_has_kernel_for_dispatch_key("mxrec::hstu_dense", "CPU")


@pytest.fixture(scope="session")
def hstu_adapter(request: pytest.FixtureRequest) -> str:
    """Makes torch.ops.mxrec.hstu_dense{,_backward} available; says which build."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("fbgemm_npu_api") is not None:
        import fbgemm_npu_api  # noqa: F401

        return "installed fbgemm_npu_api"
    cache = getattr(request.config, "cache", None)
    root = Path(cache.mkdir("hstu-adapter")) if cache else REPO / ".pytest_cache" / "hstu"
    _build(root)
    return f"in-tree build in {root}"
