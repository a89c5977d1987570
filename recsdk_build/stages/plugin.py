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

Every variant's per-operator backend glue is generated here from the operator catalogue
(codegen.backend_glue) into the copy of torch_plugin that is built, never into the checkout;
build_config.json names the catalogue, whose every operator the adapter must register.
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
from recsdk_build.errors import BuildError, ToolMissingError
from recsdk_build.extbuild import build_extension_wheel, package_digest
from recsdk_build.hashing import combine, sha256_file, sha256_text
from recsdk_build.ops import catalogue, codegen
from recsdk_build.ops.catalogue import OpSpec
from recsdk_build.pipeline.atomic import new_staging_dir
from recsdk_build.pipeline.manifest import Artifact, StageRecord
from recsdk_build.pipeline.stage import Context, Outcome, Stage
from recsdk_build.toolchain import find_cann

NPU_SIM = Path("packages") / "npu_sim"
TORCH_PLUGIN = Path("torch_plugin")
KERNELS = Path("kernels")
# The code the adapter's generated glue and aclnn declarations come from: a changed generator
# rebuilds the adapter (what it generates from the catalogue is hashed too, see inputs()).
GENERATOR = (Path(codegen.__file__), Path(catalogue.__file__))
# What the build check records of the torch it built against (setup.py takes the C++ ABI flag
# from that torch; it is never assumed).
_TORCH_BUILD_INFO = (
    "import json, torch\n"
    "print(json.dumps({'abi': int(torch._C._GLIBCXX_USE_CXX11_ABI),"
    " 'torch': torch.__version__}))\n"
)
# Where torch_npu is installed, without importing it (its import needs CANN).
_FIND_TORCH_NPU = (
    "import importlib.util, os\n"
    "s = importlib.util.find_spec('torch_npu')\n"
    "print(os.path.dirname(s.origin) if s and s.origin else '')\n"
)


def _extension_wheel(ctx: Context, package: Path, **kwargs: Any) -> Path:
    """An extension wheel compiled in the build environment (the env stage's python)."""
    return build_extension_wheel(
        ctx.require_log(), ctx.output_of("env")["python"], package,
        build_root=ctx.paths.root, dist=ctx.paths.dist, **kwargs,
    )


class PluginStage(Stage):
    name = "plugin"
    summary = "torch device and adapter packages for the target"

    def _target(self, ctx: Context) -> str:
        return ctx.options.plugin.target.target.value

    def inputs(self, ctx: Context) -> dict[str, Any]:
        specs = _catalogue(ctx)
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
            "generator": generator_digest(),
            "generated": generated_digest(specs),
        }

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        return bool(record.artifacts) and all(a.intact(ctx.paths.root) for a in record.artifacts)

    def run(self, ctx: Context) -> Outcome:
        target = self._target(ctx)
        if target == "cann":
            return self._run_cann(ctx)
        specs = _catalogue(ctx)
        config = {**self._sim_adapter_config(ctx), "catalogue": [s.name for s in specs]}
        wheels = [
            _extension_wheel(ctx, ctx.project.root / NPU_SIM, what="npu_sim"),
            _extension_wheel(
                ctx,
                ctx.project.root / TORCH_PLUGIN,
                what="fbgemm_npu_api (sim)",
                generated=adapter_sources(config, specs),
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

    def _run_cann(self, ctx: Context) -> Outcome:
        """The npu variant against the installed torch_npu and the toolkit, with the ops stage's
        installed operator packages bundled: the artifact for Ascend hosts."""
        toolkit = find_cann()
        if toolkit is None:
            raise ToolMissingError(
                "the cann plugin needs the CANN toolkit, and none was found",
                hint="source <toolkit>/set_env.sh (or set ASCEND_TOOLKIT_HOME), "
                "or use --target sim",
            )
        ops = ctx.output_of("ops")
        if ops.get("target") != "cann" or not ops.get("opp"):
            raise BuildError(
                f"the npu adapter bundles the cann operator packages, but the ops stage built for "
                f"{ops.get('target')!r}",
                hint="run `recsdk-build ops --target cann` first",
            )
        staging = new_staging_dir(ctx.paths.root, "plugin-cann")
        try:
            torch_npu, origin = self._torch_npu_tree(ctx, staging, prefer_installed=True)
            cann_include = [toolkit.root / "include"]
            cann_lib = [toolkit.root / "lib64"]
            config = self._npu_adapter_config(
                ctx, staging, torch_npu, include=cann_include, library_dirs=cann_lib,
                libraries=["nnopbase", "ascendcl"], opp=ctx.paths.root / ops["opp"],
            )
            wheel = _extension_wheel(
                ctx, ctx.project.root / TORCH_PLUGIN, what="fbgemm_npu_api (npu)",
                generated=adapter_sources(config, _catalogue(ctx)),
            )
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if "+npu" not in wheel.name:
            raise BuildError(f"{wheel.name}: the npu adapter must carry +npu in its version")
        artifact = Artifact.of(ctx.paths.root, wheel, kind="wheel", target="cann")
        ctx.ui.info(f"  {wheel.name}  sha256 {artifact.sha256[:16]}…")
        return Outcome(
            artifacts=[artifact],
            provenance={
                "target": "cann",
                "toolkit": str(toolkit.root),
                "toolkit_version": toolkit.version,
                "adapter": {"variant": "npu", "operators": sorted(config["operators"]),
                            "torch_npu": origin},
            },
            outputs={"target": "cann"},
            note=f"cann: {wheel.name}",
        )

    def _torch_npu_tree(
        self, ctx: Context, staging: Path, *, prefer_installed: bool
    ) -> tuple[Path, str]:
        """torch_npu's package directory (headers under include/, libtorch_npu under lib/) and
        where it came from.

        On cann hosts the build environment's installed torch_npu, found without importing
        it; otherwise the pinned wheel, downloaded and unpacked, never installed (its import
        needs CANN, and it pins a torch build of its own).
        """
        python = ctx.output_of("env")["python"]
        if prefer_installed:
            found = subprocess.run(
                [python, "-c", _FIND_TORCH_NPU], capture_output=True, text=True, check=False
            ).stdout.strip()
            if found:
                return Path(found), f"installed: {found}"
        wheel = self._torch_npu_wheel(ctx)
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(staging / "wheel", [
                n for n in zf.namelist()
                if n.startswith(("torch_npu/include/", "torch_npu/lib/libtorch_npu.so"))
            ])
        return staging / "wheel" / "torch_npu", f"wheel: {wheel.name}"

    def _torch_npu_wheel(self, ctx: Context) -> Path:
        version = ctx.project.runtime.torch_npu
        downloads = ctx.paths.downloads / "torch_npu"
        wheel = next(iter(sorted(downloads.glob(f"torch_npu-{version}-*.whl"))), None)
        if wheel is None:
            python = ctx.output_of("env")["python"]
            with ctx.ui.status(f"downloading the torch_npu {version} wheel (headers only)"):
                ctx.require_log().run(
                    [python, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                     "--only-binary=:all:", "-d", downloads, f"torch-npu=={version}"],
                    what=f"downloading torch-npu=={version}",
                )
            wheel = next(iter(sorted(downloads.glob(f"torch_npu-{version}-*.whl"))), None)
            if wheel is None:
                raise BuildError(f"pip download produced no torch_npu-{version} wheel")
        return wheel

    @staticmethod
    def _npu_adapter_config(
        ctx: Context, staging: Path, torch_npu: Path, *, include: list[Path],
        library_dirs: list[Path], libraries: list[str], opp: Path | None,
    ) -> dict[str, Any]:
        """What torch_plugin/setup.py builds the npu variant against."""
        gen = staging / "aclnn-decl"
        gen.mkdir()
        names = []
        for spec in _catalogue(ctx):
            (gen / f"aclnn_{spec.name}_decl.h").write_text(
                codegen.aclnn_declaration(spec), encoding="utf-8"
            )
            names.append(spec.name)
        return {
            "variant": "npu",
            "catalogue": names,
            "operators": names,
            "decl_include": str(gen),
            "include_dirs": [
                str(torch_npu / "include"),
                str(torch_npu / "include" / "third_party" / "acl" / "inc"),
                *map(str, include),
            ],
            "library_dirs": [str(torch_npu / "lib"), *map(str, library_dirs)],
            "libraries": ["torch_npu", *libraries],
            "opp": str(opp) if opp else None,
        }

    def _npu_build_check(self, ctx: Context) -> dict[str, Any]:
        """Build the npu variant's wheel exactly as a cann host does (setup.py, the pinned torch,
        torch_npu's headers and library), with a declared stand-in for CANN's aclnn/acl_meta.h
        and no operator packages. The wheel is inspected and discarded: not an artifact."""
        version = ctx.project.runtime.torch_npu
        plugin = ctx.project.root / TORCH_PLUGIN
        staging = new_staging_dir(ctx.paths.root, "npu-build-check")
        try:
            torch_npu, origin = self._torch_npu_tree(ctx, staging, prefer_installed=False)
            wheel_name = origin.removeprefix("wheel: ")
            config = self._npu_adapter_config(
                ctx, staging, torch_npu, include=[plugin / "buildcheck"], library_dirs=[],
                libraries=[], opp=None,
            )
            with ctx.ui.status("build check: building the npu adapter against torch_npu"):
                wheel = _extension_wheel(
                    ctx, plugin, what="fbgemm_npu_api (npu, build check)",
                    generated=adapter_sources(config, _catalogue(ctx)),
                    dest=staging / "wheel-out",
                )
            if "+npu" not in wheel.name:
                raise BuildError(f"{wheel.name}: the npu variant must carry +npu in its version")
            with zipfile.ZipFile(wheel) as zf:
                so = next(n for n in zf.namelist() if n.startswith("fbgemm_npu_api/_C"))
                zf.extract(so, staging / "inspect")
            symbols = subprocess.run(
                ["nm", "-D", "--undefined-only", str(staging / "inspect" / so)],
                capture_output=True, text=True, check=False,
            ).stdout.split()
            info = json.loads(
                subprocess.run(
                    [ctx.output_of("env")["python"], "-c", _TORCH_BUILD_INFO],
                    capture_output=True, text=True, check=True,
                ).stdout
            )
            ctx.ui.info(f"  npu variant: build-checked against torch_npu {version} (no artifact)")
            downloaded = ctx.paths.downloads / "torch_npu" / wheel_name
            return {
                "status": "build-checked",
                "note": "built with setup.py as on cann hosts; not an artifact, not run",
                "wheel": wheel.name,
                "torch": info["torch"],
                "torch_npu": version,
                "torch_npu_wheel": wheel_name,
                "torch_npu_wheel_sha256": hashlib.sha256(downloaded.read_bytes()).hexdigest(),
                "cxx11_abi": info["abi"],
                "operators": sorted(config["operators"]),
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
        runtime = ctx.paths.root / str(ops.get("runtime", ""))
        if "runtime" not in ops or not runtime.is_file():
            raise BuildError(
                "the sim runtime library (libmxrec_sim_runtime.so) the operators link is missing",
                hint="run `recsdk-build ops --target sim` again",
            )
        return {
            "variant": "sim",
            "sim_include": str(ops["sim_include"]),
            "runtime": str(runtime),
            "operators": operators,
        }


def _catalogue(ctx: Context) -> list[OpSpec]:
    """Every operator of kernels/ops: the adapter registers all of them."""
    return list(catalogue.load_catalogue(ctx.project.root / KERNELS).values())


def adapter_sources(config: dict[str, Any], specs: list[OpSpec]) -> dict[str, str]:
    """What is written into the copy of torch_plugin before it is built: the build
    configuration and the variant's generated backend glue (csrc/, beside the hand-written
    sources that include it)."""
    glue = codegen.backend_glue(specs, config["variant"])
    return {
        "build_config.json": json.dumps(config, indent=2) + "\n",
        **{f"csrc/{name}": text for name, text in glue.items()},
    }


def generator_digest() -> str:
    """The generator's own code (GENERATOR)."""
    return combine(*(sha256_file(path) for path in GENERATOR))


def generated_digest(specs: list[OpSpec]) -> str:
    """Everything the adapter's build generates from the catalogue: both variants' glue and the
    aclnn declarations. It changes with any op.toml key the adapter depends on (signatures,
    [host] error_name and trap_error), which the operator libraries' hashes need not."""
    texts = {**codegen.backend_glue(specs, "sim"), **codegen.backend_glue(specs, "npu")}
    texts.update({f"aclnn_{s.name}_decl.h": codegen.aclnn_declaration(s) for s in specs})
    return combine(*(combine(name, sha256_text(texts[name])) for name in sorted(texts)))
