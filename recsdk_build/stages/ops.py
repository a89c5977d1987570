"""ops: the AscendC operators of kernels/ops, for the cann or the sim target.

cann: each operator becomes a CANN operator project (kernels/cmake/ + generated sources and
presets), built by the toolkit into ``mxrec_opp_<op>.run``, installed with the package's own
``--install-path`` into a staging OPP tree (never the toolkit's), and checked (files and
``vendors/config.ini`` load_priority). ``--dry-run`` writes the projects and prints the exact
commands without calling the toolkit.

sim: each operator's kernel and tiling are compiled with the host compiler against
kernels/sim into ``mxrec_opp_<op>_sim.so``, in parallel; operators whose inputs are unchanged
are not rebuilt.
"""

from __future__ import annotations

import shlex
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from recsdk_build import __version__
from recsdk_build.errors import BuildError, ToolMissingError
from recsdk_build.hashing import hash_tree, sha256_file
from recsdk_build.ops import cannproject, catalogue, simbuild
from recsdk_build.ops.catalogue import OpSpec
from recsdk_build.pipeline.atomic import new_staging_dir, replace_dir
from recsdk_build.pipeline.manifest import Artifact, StageRecord
from recsdk_build.pipeline.stage import Context, Outcome, Stage
from recsdk_build.toolchain import find_cann


def _say(ctx: Context, line: str) -> None:
    """A line to copy and paste: never wrapped, no markup."""
    ctx.ui.console.print(line, markup=False, highlight=False, soft_wrap=True)


class OpsStage(Stage):
    name = "ops"
    summary = "AscendC operators (cann packages or sim libraries)"

    # ---- options ---------------------------------------------------------------------------

    @staticmethod
    def _kernels(ctx: Context) -> Path:
        return ctx.project.root / "kernels"

    @staticmethod
    def _target(ctx: Context) -> str:
        return ctx.options.ops.target.target.value

    def _selected(self, ctx: Context) -> tuple[dict[str, OpSpec], list[OpSpec]]:
        ops = catalogue.load_catalogue(self._kernels(ctx))
        only = ctx.options.ops.only
        return ops, catalogue.select(ops, list(only) if only else None)

    def _root(self, ctx: Context, target: str) -> Path:
        return ctx.paths.root / "ops" / target

    # ---- stage contract --------------------------------------------------------------------

    def inputs(self, ctx: Context) -> dict[str, Any]:
        target = self._target(ctx)
        kernels = self._kernels(ctx)
        ops, chosen = self._selected(ctx)
        base: dict[str, Any] = {
            "tool": __version__,
            "target": target,
            "soc": ctx.options.ops.soc,
            "only": [s.name for s in chosen],
            "dry_run": ctx.options.ops.dry_run,
            "generator": simbuild.generator_digest(),
        }
        if target == "sim":
            compiler = simbuild.find_host_compiler()
            base["compiler"] = compiler.version
            shared = simbuild.shared_digest(kernels, compiler)
            base["ops"] = {
                name: simbuild.op_digest(spec, kernels, shared) for name, spec in ops.items()
            }
        else:
            toolkit = find_cann()
            base["toolkit"] = (
                {"root": str(toolkit.root), "version": toolkit.version} if toolkit else None
            )
            base["template"] = hash_tree(kernels / "cmake")
            base["project_generator"] = sha256_file(Path(cannproject.__file__))
            base["sources"] = {n: hash_tree(s.directory) for n, s in ops.items()}
            base["common"] = hash_tree(kernels / "common")
        return base

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        if record.provenance.get("dry_run"):
            return False  # a dry run is for reading: print the commands every time
        return all(a.intact(ctx.paths.root) for a in record.artifacts)

    def run(self, ctx: Context) -> Outcome:
        target = self._target(ctx)
        why = ctx.options.ops.target.why
        ctx.ui.info(f"  target: [bold]{target}[/bold]{why}")
        if target == "sim":
            return self._run_sim(ctx)
        return self._run_cann(ctx)

    # ---- sim ---------------------------------------------------------------------------------

    def _run_sim(self, ctx: Context) -> Outcome:
        kernels = self._kernels(ctx)
        ops, chosen = self._selected(ctx)
        compiler = simbuild.find_host_compiler()
        root = self._root(ctx, "sim")
        jobs = ctx.options.ops.jobs
        log = ctx.require_log()
        if ctx.options.ops.dry_run:
            for spec in chosen:
                source = root / spec.name / "gen" / f"{spec.name}_sim_launch.cpp"
                out = root / spec.name / simbuild.library_name(spec)
                _say(
                    ctx, shlex.join(simbuild.compile_command(spec, kernels, source, out, compiler))
                )
            return Outcome(provenance={"dry_run": True}, note=f"dry run: {len(chosen)} operator(s)")

        shared = simbuild.shared_digest(kernels, compiler)

        def build(spec: OpSpec) -> simbuild.SimBuildResult:
            return simbuild.build_op(
                spec,
                kernels,
                root / spec.name,
                compiler,
                run=lambda cmd, what: log.run(cmd, what=what, whole=True),
                shared=shared,
            )

        started = time.monotonic()
        with ctx.ui.status("compiling the sim runtime"):
            runtime = simbuild.build_runtime(
                kernels, root, compiler, run=lambda cmd, what: log.run(cmd, what=what, whole=True)
            )
        state = f"built in {runtime.seconds:.1f}s" if runtime.rebuilt else "unchanged"
        ctx.ui.info(f"  {simbuild.RUNTIME_LIBRARY}: {state}")
        what = f"compiling {len(chosen)} operator(s) for sim with {jobs} job(s)"
        with ctx.ui.status(what), ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(build, chosen))
        for r in results:
            state = f"built in {r.seconds:.1f}s" if r.rebuilt else "unchanged"
            ctx.ui.info(f"  {simbuild.library_name(r.spec)}: {state}")
        artifacts, entries = self._sim_artifacts(ctx, ops, kernels, compiler)
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
            outputs={
                "target": "sim",
                "operators": entries,
                "runtime": runtime_artifact.path,
                "sim_include": str(kernels / "sim" / "include"),
            },
            note=f"sim: {len(rebuilt)} rebuilt, {len(chosen) - len(rebuilt)} unchanged",
        )

    def _sim_artifacts(
        self, ctx: Context, ops: dict[str, OpSpec], kernels: Path, compiler: simbuild.HostCompiler
    ) -> tuple[list[Artifact], list[dict[str, Any]]]:
        """Every operator whose library is current, not only the ones built now: the manifest
        describes what the build directory holds."""
        root = self._root(ctx, "sim")
        shared = simbuild.shared_digest(kernels, compiler)
        artifacts: list[Artifact] = []
        entries: list[dict[str, Any]] = []
        for name, spec in ops.items():
            out = root / name
            if not simbuild.is_current(spec, out, simbuild.op_digest(spec, kernels, shared)):
                continue
            lib = Artifact.of(
                ctx.paths.root,
                out / simbuild.library_name(spec),
                kind="operator-library",
                target="sim",
            )
            header = Artifact.of(
                ctx.paths.root,
                out / simbuild.header_name(spec),
                kind="operator-header",
                target="sim",
            )
            artifacts += [lib, header]
            entries.append(
                {
                    "op": name,
                    "op_type": spec.op_type,
                    "target": "sim",
                    "soc": "any (chosen at launch; default " + cannproject.DEFAULT_SOC + ")",
                    "library": lib.path,
                    "header": header.path,
                    "symbol": f"recsdk_sim_{name}",
                    "sha256": lib.sha256,
                    "groups": list(spec.groups),
                }
            )
        return artifacts, entries

    # ---- cann --------------------------------------------------------------------------------

    def _run_cann(self, ctx: Context) -> Outcome:
        kernels = self._kernels(ctx)
        _, chosen = self._selected(ctx)
        soc = ctx.options.ops.soc
        dry_run = ctx.options.ops.dry_run
        toolkit = find_cann()
        if toolkit is None and not dry_run:
            raise ToolMissingError(
                "--target cann needs the CANN toolkit, which was not found",
                hint="source <cann>/set_env.sh first, use --dry-run to see the build, "
                "or --target sim",
            )
        cann_root = str(toolkit.root) if toolkit else None
        root = self._root(ctx, "cann") / soc
        jobs = ctx.options.ops.jobs
        unit = cannproject.SOCS[soc]
        buildable = [s for s in chosen if unit in s.compute_units]
        for skipped in (s for s in chosen if unit not in s.compute_units):
            ctx.ui.warn(
                f"{skipped.name}: not built for {soc} "
                f"(op.toml compute_units: {', '.join(skipped.compute_units)})"
            )
        projects = [
            cannproject.generate(
                spec, kernels, root / spec.name / "project", soc, cann_root, jobs=1
            )
            for spec in buildable
        ]
        opp_final = root / "opp"
        if dry_run:
            if toolkit is None:
                _say(
                    ctx,
                    "# no CANN toolkit here: run `source <cann>/set_env.sh` "
                    "(sets ASCEND_HOME_PATH) first",
                )
            for project in projects:
                _say(ctx, f"# {project.spec.name}: project {project.root}")
                for cmd in project.commands:
                    _say(ctx, cmd.shell())
                install = cannproject.install_command(
                    root / "packages" / project.package.name, opp_final
                )
                _say(ctx, f"cp {project.package} {install.cwd}/")
                _say(ctx, install.shell())
            _say(
                ctx,
                f"# then {opp_final}/vendors/config.ini gets load_priority="
                + ",".join(cannproject.vendor_name(p.spec) for p in projects)
                + " and every vendor is checked",
            )
            return Outcome(
                provenance={
                    "dry_run": True,
                    "toolkit": cann_root,
                    "projects": [str(p.root) for p in projects],
                },
                outputs={"target": "cann", "soc": soc, "dry_run": True},
                note=f"dry run: {len(projects)} CANN project(s) written under {root}",
            )
        assert toolkit is not None
        log = ctx.require_log()
        packages = root / "packages"
        packages.mkdir(parents=True, exist_ok=True)

        def build(project: cannproject.CannProject) -> Path:
            for cmd in project.commands:
                log.run(cmd.argv, what=cmd.what, cwd=cmd.cwd, env=cmd.env, whole=True)
            if not project.package.is_file():
                raise BuildError(
                    f"{project.spec.name}: the build did not produce {project.package}"
                )
            final = packages / project.package.name
            shutil.copyfile(project.package, final)
            return final

        what = f"building {len(projects)} operator package(s) with {jobs} job(s)"
        with ctx.ui.status(what), ThreadPoolExecutor(max_workers=jobs) as pool:
            runs = list(pool.map(build, projects))
        staging = new_staging_dir(ctx.paths.root, "ops-opp")
        try:
            opp = staging / "opp"
            opp.mkdir()
            for run_file in runs:  # installs share vendors/: one at a time
                cmd = cannproject.install_command(run_file, opp)
                log.run(cmd.argv, what=cmd.what, cwd=cmd.cwd, whole=True)
            cannproject.write_config_ini(opp, buildable)
            problems = cannproject.check_installed(opp, buildable)
            if problems:
                raise BuildError(
                    "the staged OPP tree is incomplete:\n" + "\n".join(f"  - {p}" for p in problems)
                )
            replace_dir(opp, opp_final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        config = opp_final / "vendors" / "config.ini"
        artifacts = [
            Artifact.of(ctx.paths.root, r, kind="operator-package", target="cann") for r in runs
        ]
        artifacts.append(Artifact.of(ctx.paths.root, config, kind="opp-config", target="cann"))
        entries = [
            {"op": p.spec.name, "target": "cann", "soc": soc, "package": a.path, "sha256": a.sha256}
            for p, a in zip(projects, artifacts, strict=False)
        ]
        return Outcome(
            artifacts=artifacts,
            provenance={"toolkit": cann_root, "toolkit_version": toolkit.version, "soc": soc},
            outputs={
                "target": "cann",
                "soc": soc,
                "opp": str(opp_final.relative_to(ctx.paths.root)),
                "operators": entries,
            },
            note=f"cann {soc}: {len(runs)} package(s) installed into "
            f"{opp_final.relative_to(ctx.paths.root)}",
        )
