"""Runs stages in order: skip what is unchanged, record what ran, stop at the first failure."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone

from rich.table import Table

from recsdk_build.errors import RecsdkError, StageInputError
from recsdk_build.pipeline.manifest import StageRecord, input_digests
from recsdk_build.pipeline.stage import Context, Stage, fingerprint, stage_code_digest
from recsdk_build.proc import StageLog


@dataclass
class StageReport:
    name: str
    status: str  # ran | cached | failed | not run
    seconds: float
    note: str = ""


def run_stages(ctx: Context, stages: list[Stage], force: set[str]) -> list[StageReport]:
    """Run ``stages`` in order. Raises the first stage's RecsdkError after recording it."""
    reports: list[StageReport] = []
    ctx.manifest.pins = ctx.project.pins_summary()
    for index, stage in enumerate(stages):
        started = time.monotonic()
        try:
            report = _run_one(ctx, stage, force)
        except RecsdkError as exc:
            elapsed = time.monotonic() - started
            reports.append(StageReport(stage.name, "failed", elapsed, exc.message.splitlines()[0]))
            reports.extend(StageReport(s.name, "not run", 0.0) for s in stages[index + 1 :])
            exc.reports = reports  # type: ignore[attr-defined]
            raise
        reports.append(report)
    # Recorded only after success: a refused --python must not become the build's default.
    if ctx.manifest.python != (chosen := ctx.options.python.to_json()):
        ctx.manifest.python = chosen
        ctx.manifest.save()
    return reports


def _run_one(ctx: Context, stage: Stage, force: set[str]) -> StageReport:
    started = time.monotonic()
    _check_requirements(ctx, stage)
    inputs = {**stage.inputs(ctx), "stage_code": stage_code_digest(stage)}
    fp = fingerprint(inputs)
    previous = ctx.manifest.successful(stage.name)
    if (
        stage.name not in force
        and previous is not None
        and previous.fingerprint == fp
        and stage.intact(ctx, previous)
    ):
        previous.status = "cached"
        previous.inputs = input_digests(inputs)  # a record older than per-input digests
        ctx.manifest.save()
        return StageReport(stage.name, "cached", time.monotonic() - started)

    ctx.ui.info(f"[bold]▶ {stage.name}[/bold]: {stage.summary}")
    log = StageLog(ctx.paths.logs / f"{stage.name}.log", ctx.ui)
    ctx.log = log
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    try:
        outcome = stage.run(ctx)
    except RecsdkError as exc:
        log.write(f"FAILED: {exc.message}")
        ctx.manifest.stages[stage.name] = StageRecord(
            name=stage.name,
            status="failed",
            fingerprint=fp,
            started_at=stamp,
            duration_s=round(time.monotonic() - started, 3),
            error=exc.message,
        )
        ctx.manifest.save()
        raise
    finally:
        log.close()
        ctx.log = None
    elapsed = time.monotonic() - started
    if not isinstance(outcome.outputs, stage.produces):
        raise TypeError(f"stage {stage.name} returned {outcome.outputs!r}, not a {stage.produces}")
    ctx.manifest.stages[stage.name] = StageRecord(
        name=stage.name,
        status="ran",
        fingerprint=fp,
        started_at=stamp,
        duration_s=round(elapsed, 3),
        artifacts=outcome.artifacts,
        provenance=outcome.provenance,
        outputs=outcome.outputs.to_json(),
        inputs=input_digests(inputs),
    )
    ctx.manifest.save()
    return StageReport(stage.name, "ran", elapsed, outcome.note)


def _check_requirements(ctx: Context, stage: Stage) -> None:
    """Every missing input is named before anything runs, the nearest stage first."""
    missing = [k.stage for k in stage.requires(ctx) if ctx.manifest.successful(k.stage) is None]
    if missing:
        names = " and ".join(f"'{name}'" for name in reversed(missing))
        raise StageInputError(
            f"this stage needs the output of {names}, which "
            f"{'has' if len(missing) == 1 else 'have'} not run successfully in {ctx.paths.root}",
            hint="run "
            + ", then ".join(f"`recsdk-build {name}`" for name in missing)
            + " first, or `recsdk-build all`",
        )
    for kind in stage.requires(ctx):
        ctx.output(kind)  # recorded by another version of the tool: says which stage to rerun


_STYLE = {"ran": "green", "cached": "cyan", "failed": "bold red", "not run": "dim"}


def report_table(reports: list[StageReport]) -> Table:
    table = Table(title="recsdk-build stages", title_justify="left")
    table.add_column("stage")
    table.add_column("status")
    table.add_column("time", justify="right")
    table.add_column("note", overflow="fold")
    for r in reports:
        style = _STYLE.get(r.status, "")
        table.add_row(r.name, f"[{style}]{r.status}[/{style}]", f"{r.seconds:.2f}s", r.note)
    return table
