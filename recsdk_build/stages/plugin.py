"""plugin: the torch-side packages for the selected target.

sim: ``npu_sim`` (the simulated ``npu`` device: PrivateUse1 on host memory, ``torch.npu`` and
an ``hccl`` backend) and ``fbgemm_npu_api`` (the operator adapter: npu kernels of the fbgemm
operators, running the ops stage's sim libraries, which its wheel bundles), both built against
the pinned torch in the build environment. Their wheels carry the ``+sim`` local version, so
they can never be mistaken for hardware builds.

The adapter's npu variant (aclnn on torch_npu's stream) cannot run here, but it is compiled and
linked against the pinned torch and torch_npu's headers and library (the torch_npu wheel is
downloaded and unpacked, never installed) to prove it builds. That result is recorded in the
provenance as build-checked; it is not an artifact.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

from recsdk_build import __version__
from recsdk_build.errors import BuildError
from recsdk_build.extbuild import build_extension_wheel, package_digest
from recsdk_build.ops import catalogue, codegen, simbuild
from recsdk_build.pipeline.atomic import new_staging_dir
from recsdk_build.pipeline.manifest import Artifact, StageRecord
from recsdk_build.pipeline.stage import Context, Outcome, Stage
from recsdk_build.toolchain import choose_target

NPU_SIM = Path("packages") / "npu_sim"
TORCH_PLUGIN = Path("torch_plugin")
# The npu variant's translation units (setup.py builds the sim variant's).
NPU_SOURCES = ("checks.cpp", "registrations.cpp", "backend_npu.cpp")
# What torch and Python tell the build check: include and library paths, and the C++ ABI flag
# of the torch it compiles against (never assumed).
_TORCH_BUILD_INFO = (
    "import json, sysconfig, torch\n"
    "from torch.utils import cpp_extension as c\n"
    "print(json.dumps({'include': c.include_paths(), 'lib': c.library_paths(),"
    " 'abi': int(torch._C._GLIBCXX_USE_CXX11_ABI),"
    " 'python_include': sysconfig.get_paths()['include'], 'torch': torch.__version__}))\n"
)


class PluginStage(Stage):
    name = "plugin"
    summary = "torch device and adapter packages for the target"

    def _target(self, ctx: Context) -> str:
        return choose_target(str(ctx.options.extra.get("target", "auto")))

    def inputs(self, ctx: Context) -> dict[str, Any]:
        return {
            "tool": __version__,
            "target": self._target(ctx),
            "env": ctx.output_of("env")["stamp"],
            "npu_sim": package_digest(ctx.project.root / NPU_SIM),
            "torch_plugin": package_digest(ctx.project.root / TORCH_PLUGIN),
            "torch_npu": ctx.project.runtime.torch_npu,  # the npu variant's build check
            "ops": {
                e["op"]: e.get("sha256") for e in ctx.output_of("ops").get("operators", [])
            },
        }

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        return bool(record.artifacts) and all(a.intact(ctx.paths.root) for a in record.artifacts)

    def run(self, ctx: Context) -> Outcome:
        target = self._target(ctx)
        if target == "cann":
            raise BuildError(
                "the cann plugin (fbgemm_npu_api against torch_npu) is not implemented yet",
                hint="build with --target sim",
            )
        config = self._sim_adapter_config(ctx)
        wheels = [
            build_extension_wheel(ctx, ctx.project.root / NPU_SIM, what="npu_sim"),
            build_extension_wheel(
                ctx,
                ctx.project.root / TORCH_PLUGIN,
                what="fbgemm_npu_api (sim)",
                generated={"build_config.json": json.dumps(config, indent=2) + "\n"},
            ),
        ]
        npu_check = self._npu_build_check(ctx)
        artifacts = []
        for final in wheels:
            if "+sim" not in final.name:
                raise BuildError(f"{final.name}: a sim artifact must carry +sim in its version")
            artifact = Artifact.of(ctx.paths.root, final, kind="wheel", target="sim")
            ctx.ui.info(f"  {final.name}  sha256 {artifact.sha256[:16]}…")
            artifacts.append(artifact)
        return Outcome(
            artifacts=artifacts,
            provenance={
                "target": target,
                "built_with": ctx.output_of("env")["python"],
                "adapter": {
                    "variant": "sim",
                    "operators": sorted(e["op"] for e in config["operators"]),
                    "npu_variant": npu_check,
                },
            },
            outputs={"target": target},
            note=f"{target}: " + ", ".join(w.name for w in wheels),
        )

    def _npu_build_check(self, ctx: Context) -> dict[str, Any]:
        """Compile and link the npu variant against torch and torch_npu's headers; no artifact."""
        version = ctx.project.runtime.torch_npu
        log = ctx.require_log()
        downloads = ctx.paths.downloads / "torch_npu"
        wheel = next(iter(sorted(downloads.glob(f"torch_npu-{version}-*.whl"))), None)
        python = ctx.output_of("env")["python"]
        if wheel is None:
            with ctx.ui.status(f"downloading the torch_npu {version} wheel (headers only)"):
                log.run(
                    [python, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                     "--only-binary=:all:", "-d", downloads, f"torch-npu=={version}"],
                    what=f"downloading torch-npu=={version}",
                )
            wheel = next(iter(sorted(downloads.glob(f"torch_npu-{version}-*.whl"))), None)
            if wheel is None:
                raise BuildError(f"pip download produced no torch_npu-{version} wheel")
        info = json.loads(
            subprocess.run(
                [python, "-c", _TORCH_BUILD_INFO], capture_output=True, text=True, check=True
            ).stdout
        )
        compiler = simbuild.find_host_compiler()
        plugin = ctx.project.root / TORCH_PLUGIN
        staging = new_staging_dir(ctx.paths.root, "npu-build-check")
        try:
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(staging / "wheel", [
                    n for n in zf.namelist()
                    if n.startswith(("torch_npu/include/", "torch_npu/lib/libtorch_npu.so"))
                ])
            torch_npu = staging / "wheel" / "torch_npu"
            gen = staging / "gen"
            gen.mkdir()
            for name, spec in catalogue.load_catalogue(ctx.project.root / "kernels").items():
                (gen / f"aclnn_{name}_decl.h").write_text(
                    codegen.aclnn_declaration(spec), encoding="utf-8"
                )
            out = staging / "fbgemm_npu_api_C.so"
            includes = [
                plugin / "csrc", gen,
                # CANN's aclnn/acl_meta.h is not in torch_npu: a declared stand-in, check only.
                plugin / "buildcheck",
                torch_npu / "include", torch_npu / "include" / "third_party" / "acl" / "inc",
                *info["include"], info["python_include"],
            ]
            cmd = [
                compiler.path, "-std=c++17", "-O1", "-fPIC", "-shared", "-Wall",
                "-Wno-unused-parameter", "-Wno-unused-function",
                f"-D_GLIBCXX_USE_CXX11_ABI={info['abi']}", "-DFBGEMM_NPU_API_NPU=1",
                "-DTORCH_EXTENSION_NAME=_C", "-DTORCH_API_INCLUDE_EXTENSION_H",
                *[f"-I{i}" for i in includes],
                *[str(plugin / "csrc" / src) for src in NPU_SOURCES],
                *[f"-L{d}" for d in info["lib"]], f"-L{torch_npu / 'lib'}",
                "-ltorch_npu", "-ltorch", "-ltorch_cpu", "-ltorch_python", "-lc10",
                "-o", str(out),
            ]
            with ctx.ui.status("build check: compiling the npu adapter against torch_npu"):
                log.run(cmd, what="compiling the npu variant of fbgemm_npu_api (build check)")
            symbols = subprocess.run(
                ["nm", "-D", "--undefined-only", str(out)], capture_output=True, text=True,
                check=False,
            ).stdout.split()
            ctx.ui.info(f"  npu variant: build-checked against torch_npu {version} (no artifact)")
            return {
                "status": "build-checked",
                "note": "compiled and linked only; not an artifact, not run",
                "torch": info["torch"],
                "torch_npu": version,
                "torch_npu_wheel": wheel.name,
                "torch_npu_wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
                "cxx11_abi": info["abi"],
                "compiler": compiler.version,
                "aclnn_symbols_resolved_at_load": sorted(
                    s for s in symbols if s.startswith("aclnn")
                ),
                "cann_symbols_from_stand_in_header": sorted(
                    s for s in symbols if s in ("aclCreateTensor", "aclDestroyTensor")
                ),
            }
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    @staticmethod
    def _sim_adapter_config(ctx: Context) -> dict[str, Any]:
        """What torch_plugin/setup.py builds against: the ops stage's sim libraries."""
        ops = ctx.output_of("ops")
        if ops.get("target") != "sim":
            raise BuildError(
                f"the sim adapter needs sim operator libraries, but the ops stage built for "
                f"{ops.get('target')!r}",
                hint="run `recsdk-build ops --target sim` first",
            )
        operators = []
        for entry in ops.get("operators", []):
            library = ctx.paths.root / entry["library"]
            header = ctx.paths.root / entry["header"]
            for path in (library, header):
                if not path.is_file():
                    raise BuildError(
                        f"{entry['op']}: {path} is missing",
                        hint="run `recsdk-build ops --target sim` again",
                    )
            operators.append({"op": entry["op"], "library": str(library), "header": str(header)})
        return {
            "variant": "sim",
            "sim_include": str(ops["sim_include"]),
            "operators": operators,
        }
