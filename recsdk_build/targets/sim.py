"""The sim target: the AscendC kernels compiled against the emulation (kernels/sim), and the
torch packages that run them on a simulated ``npu`` device.

ops: each operator's kernel and tiling are compiled with the host compiler into
``mxrec_opp_<op>_sim.so``, in parallel, after the one sim runtime library they all link;
operators whose inputs are unchanged are not rebuilt.

plugin: ``npu_sim`` (the simulated ``npu`` device: PrivateUse1 on host memory, ``torch.npu`` and
an ``hccl`` backend) and ``fbgemm_npu_api`` (the operator adapter running the sim libraries,
which its wheel bundles), both built against the pinned torch in the build environment. Their
wheels carry the ``+sim`` local version, so they can never be mistaken for hardware builds.
The adapter's npu variant (aclnn on torch_npu's stream) cannot run here, but it is compiled and
linked against the pinned torch and torch_npu's headers and library to prove it builds; that
result is recorded in the provenance as build-checked, not as an artifact.
"""

from __future__ import annotations

import shlex
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from recsdk_build.errors import BuildError
from recsdk_build.ops import cannproject, simbuild
from recsdk_build.ops.catalogue import OpSpec
from recsdk_build.options import Target
from recsdk_build.pipeline.manifest import Artifact
from recsdk_build.pipeline.outputs import EnvOutput, OperatorBuild, OpsOutput, PluginOutput
from recsdk_build.pipeline.stage import Context, Outcome
from recsdk_build.targets import OpsJob, say
from recsdk_build.targets.adapter import (
    NPU_SIM,
    TORCH_PLUGIN,
    adapter_sources,
    extension_wheel,
    npu_build_check,
    operator_catalogue,
)


class SimTarget:
    target = Target.SIM

    # ---- ops ---------------------------------------------------------------------------------

    def ops_inputs(self, job: OpsJob) -> dict[str, Any]:
        compiler = simbuild.find_host_compiler()
        shared = simbuild.shared_digest(job.kernels, compiler)
        return {
            "compiler": compiler.version,
            "ops": {
                name: simbuild.op_digest(spec, job.kernels, shared)
                for name, spec in job.catalogue.items()
            },
        }

    def build_ops(self, ctx: Context, job: OpsJob) -> Outcome:
        compiler = simbuild.find_host_compiler()
        if job.options.dry_run:
            for spec in job.chosen:
                source = job.root / spec.name / "gen" / f"{spec.name}_sim_launch.cpp"
                out = job.root / spec.name / simbuild.library_name(spec)
                say(
                    ctx,
                    shlex.join(simbuild.compile_command(spec, job.kernels, source, out, compiler)),
                )
            return Outcome(
                provenance={"dry_run": True},
                outputs=OpsOutput(target=Target.SIM.value, dry_run=True),
                note=f"dry run: {len(job.chosen)} operator(s)",
            )
        log = ctx.require_log()

        def run(cmd: list[str], what: str) -> None:
            log.run(cmd, what=what, whole=True)

        shared = simbuild.shared_digest(job.kernels, compiler)

        def build(spec: OpSpec) -> simbuild.SimBuildResult:
            return simbuild.build_op(
                spec, job.kernels, job.root / spec.name, compiler, run=run, shared=shared
            )

        started = time.monotonic()
        with ctx.ui.status("compiling the sim runtime"):
            runtime = simbuild.build_runtime(job.kernels, job.root, compiler, run=run)
        state = f"built in {runtime.seconds:.1f}s" if runtime.rebuilt else "unchanged"
        ctx.ui.info(f"  {simbuild.RUNTIME_LIBRARY}: {state}")
        jobs = job.options.jobs
        what = f"compiling {len(job.chosen)} operator(s) for sim with {jobs} job(s)"
        with ctx.ui.status(what), ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(build, job.chosen))
        for r in results:
            state = f"built in {r.seconds:.1f}s" if r.rebuilt else "unchanged"
            ctx.ui.info(f"  {simbuild.library_name(r.spec)}: {state}")
        artifacts, entries = _current_libraries(ctx, job, shared)
        runtime_artifact = Artifact.of(
            ctx.paths.root, runtime.library, kind="sim-runtime", target="sim"
        )
        artifacts.append(runtime_artifact)
        rebuilt = [r.spec.name for r in results if r.rebuilt]
        return Outcome(
            artifacts=artifacts,
            provenance={
                "compiler": compiler.version,
                "flags": list(simbuild.SIM_CXXFLAGS),
                "rebuilt": rebuilt,
                "seconds": round(time.monotonic() - started, 2),
            },
            outputs=OpsOutput(
                target=Target.SIM.value,
                operators=entries,
                runtime=runtime_artifact.path,
                sim_include=str(job.kernels / "sim" / "include"),
            ),
            note=f"sim: {len(rebuilt)} rebuilt, {len(job.chosen) - len(rebuilt)} unchanged",
        )

    # ---- plugin ------------------------------------------------------------------------------

    def build_plugin(self, ctx: Context) -> Outcome:
        specs = operator_catalogue(ctx)
        config = {**sim_adapter_config(ctx), "catalogue": [s.name for s in specs]}
        wheels = [
            extension_wheel(ctx, ctx.project.root / NPU_SIM, what="npu_sim"),
            extension_wheel(
                ctx,
                ctx.project.root / TORCH_PLUGIN,
                what="fbgemm_npu_api (sim)",
                generated=adapter_sources(config, specs),
            ),
        ]
        npu_check = npu_build_check(ctx)
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
                "target": Target.SIM.value,
                "built_with": ctx.output(EnvOutput).python,
                "adapter": {
                    "variant": "sim",
                    "operators": sorted(e["op"] for e in config["operators"]),
                    "npu_variant": npu_check,
                },
            },
            outputs=PluginOutput(target=Target.SIM.value),
            note="sim: " + ", ".join(w.name for w in wheels),
        )


def _current_libraries(
    ctx: Context, job: OpsJob, shared: str
) -> tuple[list[Artifact], list[OperatorBuild]]:
    """Every operator whose library is current, not only the ones built now: the manifest
    describes what the build directory holds."""
    artifacts: list[Artifact] = []
    entries: list[OperatorBuild] = []
    for name, spec in job.catalogue.items():
        out = job.root / name
        if not simbuild.is_current(spec, out, simbuild.op_digest(spec, job.kernels, shared)):
            continue
        lib, header = (
            Artifact.of(ctx.paths.root, out / file, kind=kind, target="sim")
            for file, kind in (
                (simbuild.library_name(spec), "operator-library"),
                (simbuild.header_name(spec), "operator-header"),
            )
        )
        artifacts += [lib, header]
        entries.append(
            OperatorBuild(
                op=name,
                op_type=spec.op_type,
                target="sim",
                soc="any (chosen at launch; default " + cannproject.DEFAULT_SOC + ")",
                library=lib.path,
                header=header.path,
                symbol=f"recsdk_sim_{name}",
                sha256=lib.sha256,
                groups=list(spec.groups),
            )
        )
    return artifacts, entries


def sim_adapter_config(ctx: Context) -> dict[str, Any]:
    """What torch_plugin/setup.py builds against: the ops stage's sim libraries."""
    ops = ctx.output(OpsOutput)
    if ops.target != Target.SIM.value:
        raise BuildError(
            f"the sim adapter needs sim operator libraries, but the ops stage built for "
            f"{ops.target!r}",
            hint="run `recsdk-build ops --target sim` first",
        )
    operators = []
    for entry in ops.operators:
        library = ctx.paths.root / str(entry.library)
        header = ctx.paths.root / str(entry.header)
        for path in (library, header):
            if entry.library is None or entry.header is None or not path.is_file():
                raise BuildError(
                    f"{entry.op}: {path} is missing",
                    hint="run `recsdk-build ops --target sim` again",
                )
        operators.append({"op": entry.op, "library": str(library), "header": str(header)})
    runtime = ctx.paths.root / str(ops.runtime)
    if ops.runtime is None or not runtime.is_file():
        raise BuildError(
            "the sim runtime library (libmxrec_sim_runtime.so) the operators link is missing",
            hint="run `recsdk-build ops --target sim` again",
        )
    return {
        "variant": "sim",
        "sim_include": str(ops.sim_include),
        "runtime": str(runtime),
        "operators": operators,
    }
