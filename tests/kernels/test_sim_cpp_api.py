"""The C++ entry the torch adapter (issue #5) calls: the generated mxrec_sim_<op>.h, linked
against the operator's sim library, with raw host pointers, shapes, dtypes and attributes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kernel_testlib import KERNELS

from recsdk_build.ops import simbuild

PROGRAM = r"""
#include <cstdio>
#include <memory>
#include "mxrec_sim_jagged_to_padded_dense.h"

int main() {
    int64_t values[6] = {1, 2, 3, 4, 5, 6};
    int64_t offsets[4] = {0, 2, 5, 6};
    int64_t out[3 * 4];
    RecsdkSimTensor v{values, RECSDK_DT_INT64, 1, {6}};
    RecsdkSimTensor o{offsets, RECSDK_DT_INT64, 1, {4}};
    RecsdkSimTensor d{out, RECSDK_DT_INT64, 2, {3, 4}};
    RecsdkSimOptions options{};
    auto report = std::make_unique<RecsdkSimReport>();
    RecsdkSimReport* r = report.get();
    const int32_t status = mxrec_sim::JaggedToPaddedDense(v, o, 4, -1.0, -1, d, &options, r);
    std::printf("%d %d", status, report->block_dim);
    for (int64_t x : out) std::printf(" %lld", static_cast<long long>(x));
    // A wrong output shape is rejected before any kernel runs.
    RecsdkSimTensor bad{out, RECSDK_DT_INT64, 2, {3, 5}};
    const int32_t rejected = mxrec_sim::JaggedToPaddedDense(v, o, 4, 0.0, 0, bad, &options, r);
    std::printf(" | %d %s\n", rejected, report->message);
    return 0;
}
"""


def test_adapter_style_call(sim_ops, tmp_path: Path) -> None:
    built = sim_ops.build("jagged_to_padded_dense")
    source = tmp_path / "main.cpp"
    source.write_text(PROGRAM)
    exe = tmp_path / "main"
    compiler = simbuild.find_host_compiler()
    subprocess.run(
        [
            compiler.path,
            "-std=c++17",
            "-I",
            str(KERNELS / "sim" / "include"),
            "-I",
            str(built.header.parent),
            str(source),
            str(built.library),
            f"-Wl,-rpath,{built.library.parent}",
            "-o",
            str(exe),
        ],
        check=True,
    )
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    head, tail = out.split(" | ")
    assert head.split() == [
        "0",
        "1",
        "1",
        "2",
        "-1",
        "-1",
        "3",
        "4",
        "5",
        "-1",
        "6",
        "-1",
        "-1",
        "-1",
    ]
    assert tail.startswith("1 jagged_to_padded_dense: out must have the dtype of values and shape")
