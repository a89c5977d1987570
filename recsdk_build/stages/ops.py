"""ops: the AscendC operators of kernels/ops, built for the resolved target.

How is the target's business (recsdk_build/targets): cann operator packages by the toolkit, or
sim libraries against the AscendC emulation. This stage owns what both share: which operators
(``--only``), what the build depends on, and when a previous build can be kept, and the
check of every chosen kernel by CANN's own rules before either target builds it
(ops/cann_check.py: tiling keys, and the type-check against the real AscendC headers, recorded
as checked or as not run with the reason).
"""

from __future__ import annotations

from typing import Any

from recsdk_build.ops import cann_check, cannproject, catalogue, codegen, simbuild
from recsdk_build.pipeline.manifest import StageRecord
from recsdk_build.pipeline.outputs import OpsOutput
from recsdk_build.pipeline.stage import Context, Outcome, Stage
from recsdk_build.targets import OpsJob, backend
from recsdk_build.targets import cann as cann_target
from recsdk_build.targets import sim as sim_target


class OpsStage(Stage):
    name = "ops"
    summary = "AscendC operators (cann packages or sim libraries)"
    produces = OpsOutput
    helpers = (catalogue, codegen, simbuild, cannproject, cann_check, sim_target, cann_target)

    @staticmethod
    def _job(ctx: Context) -> OpsJob:
        opts = ctx.options.ops
        kernels = ctx.project.root / "kernels"
        ops = catalogue.load_catalogue(kernels)
        chosen = catalogue.select(ops, list(opts.only) if opts.only else None)
        root = ctx.paths.root / "ops" / opts.target.target.value
        return OpsJob(kernels=kernels, catalogue=ops, chosen=chosen, root=root, options=opts)

    def inputs(self, ctx: Context) -> dict[str, Any]:
        job = self._job(ctx)
        return {
            "target": job.options.target.target.value,
            "soc": job.options.soc,
            "only": [s.name for s in job.chosen],
            "dry_run": job.options.dry_run,
            "cann_check": cann_check.inputs(job.kernels, job.options.headers),
            **backend(job.options.target.target).ops_inputs(job),
        }

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        if record.provenance.get("dry_run"):
            return False  # a dry run is for reading: print the commands every time
        return all(a.intact(ctx.paths.root) for a in record.artifacts)

    def run(self, ctx: Context) -> Outcome:
        choice = ctx.options.ops.target
        ctx.ui.info(f"  target: [bold]{choice.target.value}[/bold]{choice.why}")
        job = self._job(ctx)
        report = self._cann_check(ctx, job)
        outcome = backend(choice.target).build_ops(ctx, job)
        outcome.provenance["cann_check"] = report.record()
        checked = (
            f"{report.variants} variant(s) type-check against CANN's headers"
            if report.typecheck == "checked"
            else "CANN header check not run"
        )
        outcome.note = f"{outcome.note}; {checked}" if outcome.note else checked
        return outcome

    @staticmethod
    def _cann_check(ctx: Context, job: OpsJob) -> cann_check.CheckReport:
        """Every chosen kernel by CANN's rules, before anything is built (a dry run checks
        the tiling keys only: it is for reading the commands)."""
        headers = job.options.headers
        if job.options.dry_run:
            headers = cann_check.NoHeaders("--dry-run (the type-check runs on a real build)")
        elif isinstance(headers, cann_check.HeaderTree):
            ctx.ui.info(f"  AscendC headers: {headers.root} ({headers.origin})")
        what = f"checking {len(job.chosen)} kernel(s) against CANN's rules"
        with ctx.ui.status(what):
            report = cann_check.check_catalogue(
                job.chosen, job.kernels, headers, jobs=job.options.jobs
            )
        if report.typecheck == "checked":
            ctx.ui.info(f"  CANN check: {report.summary()}")
        else:
            ctx.ui.warn(f"CANN check: {report.summary()}")
        return report
