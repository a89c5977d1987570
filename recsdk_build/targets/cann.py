"""The cann target: real operator packages built by the CANN toolkit, and the adapter's npu
variant (aclnn on torch_npu's stream) with those packages bundled.

ops: each operator becomes a CANN operator project (kernels/cmake/ + generated sources and
presets), built by the toolkit into ``mxrec_opp_<op>.run``, installed with the package's own
``--install-path`` into a staging OPP tree (never the toolkit's), and checked (files and
``vendors/config.ini`` load_priority). ``--dry-run`` writes the projects and prints the exact
commands without calling the toolkit, so the path is readable and testable without one.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from recsdk_build.errors import BuildError, ToolMissingError
from recsdk_build.hashing import hash_tree, sha256_file
from recsdk_build.ops import cannproject
from recsdk_build.options import Target
from recsdk_build.pipeline.atomic import new_staging_dir, replace_dir
from recsdk_build.pipeline.manifest import Artifact
from recsdk_build.pipeline.outputs import OperatorBuild, OpsOutput, PluginOutput
from recsdk_build.pipeline.stage import Context, Outcome
from recsdk_build.targets import OpsJob, say
from recsdk_build.targets.adapter import (
    TORCH_PLUGIN,
    adapter_sources,
    extension_wheel,
    npu_adapter_config,
    operator_catalogue,
    torch_npu_tree,
)
from recsdk_build.toolchain import CannToolkit, find_cann

_NO_TOOLKIT_HINT = "source <cann>/set_env.sh first, use --dry-run to see the build, or --target sim"


class CannTarget:
    target = Target.CANN

    # ---- ops ---------------------------------------------------------------------------------

    def ops_inputs(self, job: OpsJob) -> dict[str, Any]:
        toolkit = find_cann()
        return {
            "toolkit": {"root": str(toolkit.root), "version": toolkit.version} if toolkit else None,
            "template": hash_tree(job.kernels / "cmake"),
            "project_generator": sha256_file(Path(cannproject.__file__)),
            "sources": {n: hash_tree(s.directory) for n, s in job.catalogue.items()},
            "common": hash_tree(job.kernels / "common"),
        }

    def build_ops(self, ctx: Context, job: OpsJob) -> Outcome:
        soc = job.options.soc
        toolkit = find_cann()
        if toolkit is None and not job.options.dry_run:
            raise ToolMissingError(
                "--target cann needs the CANN toolkit, which was not found", hint=_NO_TOOLKIT_HINT
            )
        cann_root = str(toolkit.root) if toolkit else None
        root = job.root / soc
        unit = cannproject.SOCS[soc]
        buildable = [s for s in job.chosen if unit in s.compute_units]
        for skipped in (s for s in job.chosen if unit not in s.compute_units):
            ctx.ui.warn(
                f"{skipped.name}: not built for {soc} "
                f"(op.toml compute_units: {', '.join(skipped.compute_units)})"
            )
        projects = [
            cannproject.generate(
                spec, job.kernels, root / spec.name / "project", soc, cann_root, jobs=1
            )
            for spec in buildable
        ]
        if job.options.dry_run:
            return _describe(ctx, projects, root, soc, cann_root)
        assert toolkit is not None
        return _build_and_install(ctx, job, projects, buildable, root, toolkit)

    # ---- plugin ------------------------------------------------------------------------------

    def build_plugin(self, ctx: Context) -> Outcome:
        """The npu variant against the installed torch_npu and the toolkit, with the ops stage's
        installed operator packages bundled: the artifact for Ascend hosts."""
        toolkit = find_cann()
        if toolkit is None:
            raise ToolMissingError(
                "the cann plugin needs the CANN toolkit, and none was found",
                hint="source <toolkit>/set_env.sh (or set ASCEND_TOOLKIT_HOME), "
                "or use --target sim",
            )
        ops = ctx.output(OpsOutput)
        if ops.target != Target.CANN.value or not ops.opp:
            raise BuildError(
                f"the npu adapter bundles the cann operator packages, but the ops stage built for "
                f"{ops.target!r}",
                hint="run `recsdk-build ops --target cann` first",
            )
        staging = new_staging_dir(ctx.paths.root, "plugin-cann")
        try:
            torch_npu, origin = torch_npu_tree(ctx, staging, prefer_installed=True)
            config = npu_adapter_config(
                ctx,
                staging,
                torch_npu,
                include=[toolkit.root / "include"],
                library_dirs=[toolkit.root / "lib64"],
                libraries=["nnopbase", "ascendcl"],
                opp=ctx.paths.root / ops.opp,
            )
            wheel = extension_wheel(
                ctx,
                ctx.project.root / TORCH_PLUGIN,
                what="fbgemm_npu_api (npu)",
                generated=adapter_sources(config, operator_catalogue(ctx)),
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
                "adapter": {
                    "variant": "npu",
                    "operators": sorted(config["operators"]),
                    "torch_npu": origin,
                },
            },
            outputs=PluginOutput(target=Target.CANN.value),
            note=f"cann: {wheel.name}",
        )


def _describe(
    ctx: Context,
    projects: list[cannproject.CannProject],
    root: Path,
    soc: str,
    cann_root: str | None,
) -> Outcome:
    """--dry-run: the projects are written; print every command a toolkit host would run."""
    opp_final = root / "opp"
    if cann_root is None:
        say(
            ctx,
            "# no CANN toolkit here: run `source <cann>/set_env.sh` (sets ASCEND_HOME_PATH) first",
        )
    for project in projects:
        say(ctx, f"# {project.spec.name}: project {project.root}")
        for cmd in project.commands:
            say(ctx, cmd.shell())
        install = cannproject.install_command(root / "packages" / project.package.name, opp_final)
        say(ctx, f"cp {project.package} {install.cwd}/")
        say(ctx, install.shell())
    say(
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
        outputs=OpsOutput(target=Target.CANN.value, soc=soc, dry_run=True),
        note=f"dry run: {len(projects)} CANN project(s) written under {root}",
    )


def _build_and_install(
    ctx: Context,
    job: OpsJob,
    projects: list[cannproject.CannProject],
    buildable: list[Any],
    root: Path,
    toolkit: CannToolkit,
) -> Outcome:
    """Build every project's .run package in parallel, install them one at a time into a
    staging OPP tree, check it, then move it into place."""
    soc = job.options.soc
    log = ctx.require_log()
    opp_final = root / "opp"
    packages = root / "packages"
    packages.mkdir(parents=True, exist_ok=True)

    def build(project: cannproject.CannProject) -> Path:
        for cmd in project.commands:
            log.run(cmd.argv, what=cmd.what, cwd=cmd.cwd, env=cmd.env, whole=True)
        if not project.package.is_file():
            raise BuildError(f"{project.spec.name}: the build did not produce {project.package}")
        final = packages / project.package.name
        shutil.copyfile(project.package, final)
        return final

    what = f"building {len(projects)} operator package(s) with {job.options.jobs} job(s)"
    with ctx.ui.status(what), ThreadPoolExecutor(max_workers=job.options.jobs) as pool:
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
        OperatorBuild(op=p.spec.name, target="cann", soc=soc, package=a.path, sha256=a.sha256)
        for p, a in zip(projects, artifacts, strict=False)
    ]
    return Outcome(
        artifacts=artifacts,
        provenance={"toolkit": str(toolkit.root), "toolkit_version": toolkit.version, "soc": soc},
        outputs=OpsOutput(
            target=Target.CANN.value,
            soc=soc,
            opp=str(opp_final.relative_to(ctx.paths.root)),
            operators=entries,
        ),
        note=f"cann {soc}: {len(runs)} package(s) installed into "
        f"{opp_final.relative_to(ctx.paths.root)}",
    )
