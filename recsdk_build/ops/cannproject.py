"""The CANN operator project of one operator, instantiated from kernels/cmake/.

The project is written whole from data: the CMake template is copied as is, CMakePresets.json
is serialised from a dict, sources are copied and the OpDef, op spec, msopgen JSON and aclnn
prototypes are generated from op.toml. Nothing is patched afterwards (fbgemm-ascend and RecSDK
sed their generated files; that breaks with every CANN release).
"""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from recsdk_build.errors import BuildError, UsageError
from recsdk_build.ops import codegen
from recsdk_build.ops.catalogue import OpSpec

# SoC -> compute unit (ASCEND_COMPUTE_UNIT, OpDef AddConfig). Mirrors the sim's table in
# kernels/sim/include/recsdk_sim/runtime.h (a test keeps them in step).
SOCS: dict[str, str] = {
    "Ascend910B1": "ascend910b",
    "Ascend910B2": "ascend910b",
    "Ascend910B3": "ascend910b",
    "Ascend910B4": "ascend910b",
    "Ascend910_9391": "ascend910_93",
    "Ascend910_9392": "ascend910_93",
    "Ascend310P3": "ascend310p",
}
DEFAULT_SOC = "Ascend910B1"  # RecSDK's default ai_core (ai_core-Ascend910B1)
CANN_ENV_ROOT = "$env{ASCEND_HOME_PATH}"


def check_soc(soc: str) -> str:
    if soc not in SOCS:
        raise UsageError(f"--soc {soc}: unknown SoC; known: {', '.join(SOCS)}")
    return SOCS[soc]


def package_name(spec: OpSpec) -> str:
    return f"mxrec_opp_{spec.name}"


def vendor_name(spec: OpSpec) -> str:
    # One vendor per operator, named after it (never "customize", as RecSDK requires).
    return spec.name


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    cwd: Path
    what: str
    env: dict[str, str] = field(default_factory=dict)

    def shell(self) -> str:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        prefix = f"{env} " if env else ""
        return f"(cd {shlex.quote(str(self.cwd))} && {prefix}{shlex.join(self.argv)})"


@dataclass(frozen=True)
class CannProject:
    spec: OpSpec
    root: Path
    soc: str
    commands: tuple[Command, ...]

    @property
    def package(self) -> Path:
        """Where CANN's packaging leaves the .run (CPACK_PACKAGE_DIRECTORY = build_out)."""
        return self.root / "build_out" / f"{package_name(self.spec)}.run"


def presets(spec: OpSpec, soc: str, cann_root: str, jobs: int) -> dict[str, object]:
    unit = SOCS[soc]
    return {
        "version": 3,
        "cmakeMinimumRequired": {"major": 3, "minor": 19, "patch": 0},
        "configurePresets": [
            {
                "name": "default",
                "displayName": f"{spec.op_type} for {soc}",
                "generator": "Unix Makefiles",
                "binaryDir": "${sourceDir}/build_out",
                "cacheVariables": {
                    "CMAKE_BUILD_TYPE": "Release",
                    "ENABLE_SOURCE_PACKAGE": "False",
                    "ENABLE_BINARY_PACKAGE": "True",
                    "ENABLE_TEST": "False",
                    "ENABLE_CROSS_COMPILE": "False",
                    "ASCEND_COMPUTE_UNIT": unit,
                    "ASCEND_CANN_PACKAGE_PATH": cann_root,
                    # find_package(ASC): asc-config.cmake sits directly in lib64/cmake.
                    "ASC_DIR": f"{cann_root}/lib64/cmake",
                    "ASCEND_PYTHON_EXECUTABLE": "python3",
                    "vendor_name": vendor_name(spec),
                    "MXREC_OP_NAME": spec.name,
                    "MXREC_OP_TYPE": spec.op_type,
                    "MXREC_PACKAGE_NAME": package_name(spec),
                },
            }
        ],
        "buildPresets": [{"name": "default", "configurePreset": "default", "jobs": max(1, jobs)}],
    }


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def generate(
    spec: OpSpec, kernels: Path, root: Path, soc: str, cann_root: str | None, jobs: int = 1
) -> CannProject:
    """Write the project for ``spec`` into ``root`` (replacing what was there)."""
    unit = check_soc(soc)
    if unit not in spec.compute_units:
        raise BuildError(
            f"{spec.name} is not built for {soc} ({unit}); "
            f"op.toml lists {', '.join(spec.compute_units)}"
        )
    if not spec.infers_shape and not spec.host_file.is_file():
        raise BuildError(f"operator {spec.name}: {spec.host_file} is missing")
    if root.exists():
        shutil.rmtree(root)
    template = kernels / "cmake"
    for rel in ("CMakeLists.txt", "op_host/CMakeLists.txt", "op_kernel/CMakeLists.txt"):
        _copy(template / rel, root / rel)
    (root / "CMakePresets.json").write_text(
        json.dumps(presets(spec, soc, cann_root or CANN_ENV_ROOT, jobs), indent=2) + "\n",
        encoding="utf-8",
    )
    common = sorted((kernels / "common").glob("*.h"))
    host = root / "op_host"
    for src in [*sorted((spec.directory / "op_host").iterdir()), *common]:
        if src.is_file():
            _copy(src, host / src.name)
    if spec.infers_shape:
        codegen.write_if_changed(host / spec.host_file.name, codegen.op_host_source(spec))
    codegen.write_if_changed(host / codegen.args_header_name(spec), codegen.op_args_header(spec))
    codegen.write_if_changed(host / f"{spec.name}_op_def.inc", codegen.opdef_inc(spec))
    codegen.write_if_changed(host / f"{spec.name}_op_spec.h", codegen.op_spec_header(spec))
    kernel = root / "op_kernel" / spec.name
    for src in [*sorted((spec.directory / "op_kernel").iterdir()), *common]:
        if src.is_file() and src.name != "cann_tiling_glue.h":
            _copy(src, kernel / src.name)
    codegen.write_if_changed(kernel / codegen.kernel_entry_name(spec), codegen.kernel_entry(spec))
    codegen.write_if_changed(root / f"{spec.name}.json", codegen.msopgen_json(spec))
    codegen.write_if_changed(
        root / "include" / f"aclnn_{spec.name}_decl.h", codegen.aclnn_declaration(spec)
    )
    # asc-config.cmake reads $ASCEND_HOME_PATH; without a detected toolkit (dry run) the caller's
    # environment (CANN's set_env.sh) provides it.
    env = {"ASCEND_HOME_PATH": cann_root} if cann_root else {}
    commands = (
        Command(("cmake", "--preset=default"), root, f"configuring {spec.name}", env),
        Command(
            ("cmake", "--build", "--preset=default", "--target", "binary"),
            root,
            f"compiling {spec.name} kernels",
            env,
        ),
        Command(
            ("cmake", "--build", "--preset=default", "--target", "package"),
            root,
            f"packaging {spec.name}",
            env,
        ),
    )
    project = CannProject(spec, root, soc, commands)
    (root / "commands.json").write_text(
        json.dumps(
            [{"cwd": str(c.cwd), "argv": list(c.argv), "env": c.env} for c in commands], indent=2
        )
        + "\n",
        encoding="utf-8",
    )
    return project


def install_command(run_file: Path, opp: Path) -> Command:
    """The package's own installer, pointed at a staging OPP tree (never the toolkit's opp)."""
    return Command(
        ("bash", str(run_file), "--quiet", f"--install-path={opp}"),
        run_file.parent,
        f"installing {run_file.name}",
    )


def expected_files(spec: OpSpec) -> list[str]:
    """Files an installed vendor must contain (relative to ``vendors/<vendor>``)."""
    return [
        "op_api/lib/libcust_opapi.so",
        f"op_api/include/aclnn_{spec.name}.h",
        f"op_impl/ai_core/tbe/{vendor_name(spec)}_impl/dynamic/{spec.name}.json",
    ]


def write_config_ini(opp: Path, specs: list[OpSpec]) -> Path:
    """vendors/config.ini: installing with --install-path does not update load_priority."""
    config = opp / "vendors" / "config.ini"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "load_priority=" + ",".join(vendor_name(s) for s in specs) + "\n", encoding="utf-8"
    )
    return config


def check_installed(opp: Path, specs: list[OpSpec]) -> list[str]:
    """Problems with a staged OPP tree (empty when every package installed completely)."""
    problems = []
    for spec in specs:
        vendor = opp / "vendors" / vendor_name(spec)
        for rel in expected_files(spec):
            if not (vendor / rel).is_file():
                problems.append(f"{spec.name}: vendors/{vendor_name(spec)}/{rel} is missing")
        if not any((vendor / "op_impl" / "ai_core" / "tbe" / "kernel").rglob("*.o")):
            problems.append(
                f"{spec.name}: no kernel binaries under "
                f"vendors/{vendor_name(spec)}/op_impl/ai_core/tbe/kernel"
            )
    config = opp / "vendors" / "config.ini"
    text = config.read_text(encoding="utf-8") if config.is_file() else ""
    listed = next(
        (
            line.split("=", 1)[1].split(",")
            for line in text.splitlines()
            if line.startswith("load_priority=")
        ),
        [],
    )
    missing = [vendor_name(s) for s in specs if vendor_name(s) not in listed]
    if missing:
        problems.append(f"vendors/config.ini load_priority lacks {', '.join(missing)}")
    return problems
