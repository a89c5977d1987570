"""The sim runtime is one per process: several operator libraries loaded together each launch
multi-core kernels correctly.

Regression for the failure of real batches on the npu device: each operator library carried its
own copy of the emulation's runtime state, the dynamic linker bound every library's copy of
std::thread's launch state to the first library loaded, and a multi-core kernel of any other
library found no current core ("AscendC API called outside a kernel launch"). Single-core
launches worked, so only realistic sizes failed. Loading the libraries RTLD_GLOBAL, as a program
that links them (the torch adapter) does, reproduces it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from kernel_testlib import KERNELS, REPO

from recsdk_build.ops import simbuild

# Loaded in this order; the first one used to be the only one whose multi-core launches worked.
ORDER = ("asynchronous_complete_cumsum", "gather_for_rank1", "invert_permute", "dense_to_jagged")

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    sys.path[:0] = [sys.argv[1], sys.argv[2]]
    from kernel_testlib import OpLibraries, arg
    import simrun

    cache = __import__("pathlib").Path(sys.argv[3])
    libs = OpLibraries(cache)
    ops = {}
    for name in sys.argv[4:]:
        built = libs.build(name)
        ops[name] = simrun.SimOp(built.library, libs.specs[name], global_symbols=True)

    g = torch.Generator().manual_seed(7)
    results = {}
    # Sizes that the tilings spread over many of the 48 emulated cores.
    lengths = torch.randint(0, 9, (200_000,), generator=g, dtype=torch.int64)
    out = torch.empty(lengths.numel() + 1, dtype=torch.int64)
    r = ops["asynchronous_complete_cumsum"].launch([arg(lengths), arg(out)], check=False)
    expected = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    results["asynchronous_complete_cumsum"] = [r.status, r.block_dim, r.message,
                                               bool(torch.equal(out, expected))]

    x = torch.randn(50_000, generator=g)
    index = torch.randint(0, x.numel(), (400_000,), generator=g)
    y = torch.empty(index.shape, dtype=x.dtype)
    r = ops["gather_for_rank1"].launch([arg(x), arg(index), arg(y)], check=False)
    results["gather_for_rank1"] = [r.status, r.block_dim, r.message,
                                   bool(torch.equal(y, x[index]))]

    perm = torch.randperm(300_000, generator=g)
    inv = torch.empty_like(perm)
    r = ops["invert_permute"].launch([arg(perm), arg(inv)], check=False)
    expected = torch.empty_like(perm)
    expected[perm] = torch.arange(perm.numel())
    results["invert_permute"] = [r.status, r.block_dim, r.message, bool(torch.equal(inv, expected))]

    seq = torch.randint(0, 40, (1024,), generator=g)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), seq.cumsum(0)])
    dense = torch.randn(1024, 40, 64, generator=g)
    total = int(offsets[-1])
    values = torch.empty(total, 64)
    r = ops["dense_to_jagged"].launch([arg(dense), arg(offsets), arg(values)], [total], check=False)
    mask = torch.arange(40)[None, :] < seq[:, None]
    results["dense_to_jagged"] = [r.status, r.block_dim, r.message,
                                  bool(torch.equal(values, dense[mask]))]
    print(json.dumps(results))
    """
)


def test_libraries_loaded_together_launch_multicore(sim_ops, tmp_path: Path) -> None:
    for name in ORDER:
        sim_ops.build(name)  # build in this process; the child only loads
    script = tmp_path / "together.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [
            sys.executable,
            str(script),
            str(Path(__file__).parent),
            str(REPO),
            str(sim_ops.cache),
            *ORDER,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.splitlines()[-1])
    for name in ORDER:
        status, block_dim, message, correct = results[name]
        assert status == 0, f"{name}: {message}"
        assert block_dim > 1, f"{name} ran on {block_dim} core: the test needs a multi-core launch"
        assert correct, f"{name}: wrong result when loaded beside the other libraries"


def _dynamic_exports(library: Path) -> set[str]:
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_operator_libraries_export_only_their_entry_points(sim_ops) -> None:
    """Anything else an operator library exported could be bound to another library's copy."""
    for name in ORDER:
        exports = _dynamic_exports(sim_ops.build(name).library)
        assert exports == {f"recsdk_sim_{name}", "recsdk_sim_abi_version"}, sorted(exports)


def test_runtime_is_shared_and_linked_by_name(sim_ops) -> None:
    built = sim_ops.build("gather_for_rank1")
    runtime = simbuild.runtime_library(built.library.parent.parent)
    exports = _dynamic_exports(runtime)
    # The per-thread current core and the launch entry exist once, in the runtime.
    assert {"recsdk_sim_runtime_layout", "_ZN6recsdk3sim6g_coreE"} <= exports, sorted(exports)
    needed = subprocess.run(
        ["readelf", "-d", str(built.library)], capture_output=True, text=True, check=True
    ).stdout
    assert f"[{simbuild.RUNTIME_LIBRARY}]" in needed
    assert "$ORIGIN/../runtime:$ORIGIN" in needed


def test_a_library_built_against_other_headers_is_refused(sim_ops, tmp_path: Path) -> None:
    """An operator library whose runtime structures differ from the runtime it loads fails with
    a clear message instead of misreading them."""
    built = sim_ops.build("gather_for_rank1")
    root = tmp_path / "ops"
    (root / "gather_for_rank1").mkdir(parents=True)
    lib = root / "gather_for_rank1" / built.library.name
    lib.write_bytes(built.library.read_bytes())
    # A runtime whose layout answers something else.
    fake = tmp_path / "fake_runtime.cpp"
    fake.write_text(
        '#include "kernel_operator.h"\n#include "recsdk_sim/launch.h"\n'
        "namespace recsdk::sim { thread_local CoreState* g_core = nullptr;\n"
        "CheckError::~CheckError() = default; Abort::~Abort() = default;\n"
        "int32_t RunKernel(const KernelRun&, const std::function<void()>&, RecsdkSimReport*) "
        "{ return 0; } }\n"
        'extern "C" RECSDK_SIM_RUNTIME_API uint64_t recsdk_sim_runtime_layout(void) '
        "{ return 1; }\n"
    )
    (root / simbuild.RUNTIME_DIR).mkdir()
    compiler = simbuild.find_host_compiler()
    subprocess.run(
        [
            compiler.path,
            *simbuild.SIM_CXXFLAGS,
            "-I",
            str(KERNELS / "sim" / "include"),
            "-I",
            str(KERNELS / "common"),
            str(fake),
            f"-Wl,-soname,{simbuild.RUNTIME_LIBRARY}",
            "-o",
            str(simbuild.runtime_library(root)),
        ],
        check=True,
    )
    script = tmp_path / "mismatch.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, torch
            sys.path[:0] = [sys.argv[1], sys.argv[2]]
            from kernel_testlib import arg
            import simrun
            from recsdk_build.ops import catalogue
            from kernel_testlib import KERNELS
            op = simrun.SimOp(__import__("pathlib").Path(sys.argv[3]),
                              catalogue.load_catalogue(KERNELS)["gather_for_rank1"])
            x = torch.randn(8); i = torch.zeros(4, dtype=torch.int64); y = torch.empty(4)
            r = op.launch([arg(x), arg(i), arg(y)], check=False)
            print(r.status_name, "|", r.message)
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script), str(Path(__file__).parent), str(REPO), str(lib)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("internal |"), proc.stdout
    assert "other emulation headers than the sim runtime library" in proc.stdout


def test_check_kernels_share_the_runtime(checks_library: Path) -> None:
    """The emulator's own self-test library links the same runtime as the operators."""
    needed = subprocess.run(
        ["readelf", "-d", str(checks_library)], capture_output=True, text=True, check=True
    ).stdout
    assert f"[{simbuild.RUNTIME_LIBRARY}]" in needed
