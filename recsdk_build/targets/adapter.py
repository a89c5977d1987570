"""The torch adapter ``fbgemm_npu_api``, for both targets: its build configuration, the glue
generated into it, and the npu variant's build against torch_npu.

Every variant's per-operator backend glue is generated from the operator catalogue
(codegen.backend_glue) into the copy of torch_plugin that is built, never into the checkout;
build_config.json names the catalogue, whose every operator the adapter must register.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

from recsdk_build.downloads import download_wheel
from recsdk_build.errors import BuildError
from recsdk_build.extbuild import build_extension_wheel
from recsdk_build.hashing import combine, sha256_file, sha256_text
from recsdk_build.ops import catalogue, codegen
from recsdk_build.ops.catalogue import OpSpec
from recsdk_build.options import Target
from recsdk_build.pipeline.atomic import new_staging_dir
from recsdk_build.pipeline.outputs import EnvOutput
from recsdk_build.pipeline.stage import Context
from recsdk_build.proc import probe, run_captured

NPU_SIM = Path("packages") / "npu_sim"
TORCH_PLUGIN = Path("torch_plugin")
KERNELS = Path("kernels")
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


def operator_catalogue(ctx: Context) -> list[OpSpec]:
    """Every operator of kernels/ops: the adapter registers all of them."""
    return list(catalogue.load_catalogue(ctx.project.root / KERNELS).values())


def extension_wheel(ctx: Context, package: Path, **kwargs: Any) -> Path:
    """An extension wheel compiled in the build environment (the env stage's python)."""
    return build_extension_wheel(
        ctx.require_log(),
        ctx.output(EnvOutput).python,
        package,
        build_root=ctx.paths.root,
        dist=ctx.paths.dist,
        **kwargs,
    )


def adapter_sources(config: dict[str, Any], specs: list[OpSpec]) -> dict[str, str]:
    """What is written into the copy of torch_plugin before it is built: the build
    configuration and the variant's generated backend glue (csrc/, beside the hand-written
    sources that include it)."""
    target = next(t for t in Target if t.adapter_variant == config["variant"])
    glue = codegen.backend_glue(specs, target)
    return {
        "build_config.json": json.dumps(config, indent=2) + "\n",
        **{f"csrc/{name}": text for name, text in glue.items()},
    }


def generated_digest(specs: list[OpSpec]) -> str:
    """Everything the adapter's build generates from the catalogue: both variants' glue and the
    aclnn declarations. It changes with any op.toml key the adapter depends on (signatures,
    [host] error_name and trap_error), which the operator libraries' hashes need not."""
    texts = {k: v for t in Target for k, v in codegen.backend_glue(specs, t).items()}
    texts.update({f"aclnn_{s.name}_decl.h": codegen.aclnn_declaration(s) for s in specs})
    return combine(*(combine(name, sha256_text(texts[name])) for name in sorted(texts)))


# ---- the npu variant: torch_npu's headers and library --------------------------------------


def torch_npu_tree(ctx: Context, staging: Path, *, prefer_installed: bool) -> tuple[Path, str]:
    """torch_npu's package directory (headers under include/, libtorch_npu under lib/) and
    where it came from.

    On cann hosts the build environment's installed torch_npu, found without importing
    it; otherwise the pinned wheel, downloaded and unpacked, never installed (its import
    needs CANN, and it pins a torch build of its own).
    """
    python = ctx.output(EnvOutput).python
    if prefer_installed:
        found = (probe([python, "-c", _FIND_TORCH_NPU]) or "").strip()
        if found and Path(found).is_dir():
            return Path(found), f"installed: {found}"
    wheel = torch_npu_wheel(ctx)
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(
            staging / "wheel",
            [
                n
                for n in zf.namelist()
                if n.startswith(("torch_npu/include/", "torch_npu/lib/libtorch_npu.so"))
            ],
        )
    return staging / "wheel" / "torch_npu", f"wheel: {wheel.name}"


def torch_npu_wheel(ctx: Context) -> Path:
    """The pinned torch_npu wheel, downloaded once into build/downloads (never installed)."""
    version = ctx.project.runtime.torch_npu
    downloads = ctx.paths.downloads / "torch_npu"
    wheel = next(iter(sorted(downloads.glob(f"torch_npu-{version}-*.whl"))), None)
    if wheel is not None:
        return wheel
    return download_wheel(
        ctx.require_log(),
        f"torch-npu=={version}",
        downloads,
        error=BuildError,
        why="its headers and library, for the npu adapter",
        python=ctx.output(EnvOutput).python,  # the wheel for the Python the adapter is for
    )


def npu_adapter_config(
    ctx: Context,
    staging: Path,
    torch_npu: Path,
    *,
    include: list[Path],
    library_dirs: list[Path],
    libraries: list[str],
    opp: Path | None,
) -> dict[str, Any]:
    """What torch_plugin/setup.py builds the npu variant against."""
    gen = staging / "aclnn-decl"
    gen.mkdir()
    names = []
    for spec in operator_catalogue(ctx):
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


def npu_build_check(ctx: Context) -> dict[str, Any]:
    """Build the npu variant's wheel exactly as a cann host does (setup.py, the pinned torch,
    torch_npu's headers and library), with a declared stand-in for CANN's aclnn/acl_meta.h
    and no operator packages. The wheel is inspected and discarded: not an artifact."""
    version = ctx.project.runtime.torch_npu
    plugin = ctx.project.root / TORCH_PLUGIN
    staging = new_staging_dir(ctx.paths.root, "npu-build-check")
    try:
        torch_npu, origin = torch_npu_tree(ctx, staging, prefer_installed=False)
        wheel_name = origin.removeprefix("wheel: ")
        config = npu_adapter_config(
            ctx,
            staging,
            torch_npu,
            include=[plugin / "buildcheck"],
            library_dirs=[],
            libraries=[],
            opp=None,
        )
        # Discarded unrun: compiled at -O0 (see torch_plugin/setup.py).
        config["build_check"] = True
        with ctx.ui.status("build check: building the npu adapter against torch_npu"):
            wheel = extension_wheel(
                ctx,
                plugin,
                what="fbgemm_npu_api (npu, build check)",
                generated=adapter_sources(config, operator_catalogue(ctx)),
                dest=staging / "wheel-out",
            )
        if "+npu" not in wheel.name:
            raise BuildError(f"{wheel.name}: the npu variant must carry +npu in its version")
        with zipfile.ZipFile(wheel) as zf:
            so = next(n for n in zf.namelist() if n.startswith("fbgemm_npu_api/_C"))
            zf.extract(so, staging / "inspect")
        symbols = run_captured(
            ["nm", "-D", "--undefined-only", staging / "inspect" / so],
            "listing the npu adapter's undefined symbols",
        ).stdout.split()
        info = json.loads(
            run_captured(
                [ctx.output(EnvOutput).python, "-c", _TORCH_BUILD_INFO],
                "asking the build environment's torch for its build",
            ).stdout
        )
        ctx.ui.info(f"  npu variant: build-checked against torch_npu {version} (no artifact)")
        downloaded = ctx.paths.downloads / "torch_npu" / wheel_name
        return {
            "status": "build-checked",
            "note": "built with setup.py as on cann hosts, at -O0; not an artifact, not run",
            "wheel": wheel.name,
            "torch": info["torch"],
            "torch_npu": version,
            "torch_npu_wheel": wheel_name,
            "torch_npu_wheel_sha256": sha256_file(downloaded),
            "cxx11_abi": info["abi"],
            "operators": sorted(config["operators"]),
            "aclnn_symbols_resolved_at_load": sorted(s for s in symbols if s.startswith("aclnn")),
            "cann_symbols_from_stand_in_header": sorted(
                s for s in symbols if s in ("aclCreateTensor", "aclDestroyTensor")
            ),
        }
    finally:
        shutil.rmtree(staging, ignore_errors=True)
