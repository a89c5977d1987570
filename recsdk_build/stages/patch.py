"""patch: apply the series in ``patches/<torchrec>/`` as one commit per patch.

The whole series is applied in a scratch worktree first; the source tree moves to the result
only when every patch applied, so a failure leaves it exactly at the baseline commit. The series
itself (parsing, applying, checking, refreshing) is recsdk_build/patching.py.
"""

from __future__ import annotations

import shutil
from typing import Any

import git

from recsdk_build import gitutil, patching
from recsdk_build.errors import PatchError
from recsdk_build.patching import SERIES, apply_series, file_digest, local_work, read_series
from recsdk_build.pipeline.atomic import new_staging_dir
from recsdk_build.pipeline.manifest import StageRecord
from recsdk_build.pipeline.outputs import FetchOutput, PatchOutput, parse_recorded
from recsdk_build.pipeline.stage import Context, Outcome, Stage
from recsdk_build.proc import StageLog


class PatchStage(Stage):
    name = "patch"
    summary = "apply the NPU patch series as commits"
    needs = (FetchOutput,)
    produces = PatchOutput
    helpers = (patching, gitutil)

    def inputs(self, ctx: Context) -> dict[str, Any]:
        patch_dir = ctx.project.torchrec.patches
        series = patch_dir / SERIES
        files = {p.name: file_digest(p) for p in sorted(patch_dir.glob("*.patch"))}
        return {
            "baseline": ctx.output(FetchOutput).baseline_commit,
            "series": file_digest(series) if series.is_file() else None,
            "patches": files,
        }

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        try:
            repo = gitutil.open_repo(ctx.paths.source)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            return False
        recorded = parse_recorded(PatchOutput, record.outputs)
        return (
            recorded is not None
            and gitutil.rev(repo, "HEAD") == recorded.patched_commit
            and not gitutil.dirty_paths(repo)
        )

    def run(self, ctx: Context) -> Outcome:
        baseline = ctx.output(FetchOutput).baseline_commit
        patches = read_series(ctx.project.torchrec.patches)
        repo = gitutil.open_repo(ctx.paths.source)
        previous = ctx.recorded(PatchOutput)
        known = {baseline, previous.patched_commit if previous else None}
        problem = local_work(repo, known)
        if problem and not ctx.options.patch.discard_local:
            raise PatchError(
                f"the source tree {ctx.paths.source} has {problem}",
                hint="keep the work with `recsdk-build patch refresh`, or pass --discard-local "
                "to reset the tree to the baseline and apply the series",
            )
        scratch = new_staging_dir(ctx.paths.root, "patch")
        try:
            with ctx.ui.status(f"applying {len(patches)} patches"):
                commits = apply_series(
                    repo,
                    baseline,
                    patches,
                    scratch,
                    ctx.require_log(),
                    epoch=ctx.project.torchrec.commit_time,
                )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        head = commits[-1] if commits else baseline
        # The only step that touches the real tree, after the whole series applied.
        gitutil.run_git(
            repo,
            "checkout",
            "--quiet",
            "--force",
            "-B",
            gitutil.PATCHED_BRANCH,
            head,
            error=PatchError,
            what="moving the tree to the patched commit",
        )
        gitutil.run_git(repo, "clean", "-fdq", error=PatchError, what="cleaning the tree")
        for patch, commit in zip(patches, commits, strict=True):
            added, removed = patch.stat()
            ctx.ui.detail(f"  {patch.name}: +{added} -{removed} → {commit[:12]}")
        return Outcome(
            provenance={
                "baseline_commit": baseline,
                "patches": [
                    {"name": p.name, "commit": c, "files": p.files()}
                    for p, c in zip(patches, commits, strict=True)
                ],
            },
            outputs=PatchOutput(
                patched_commit=head,
                patches=[p.name for p in patches],
                series_digest=patching.series_digest(patches),
            ),
            note=f"{len(patches)} patches on {baseline[:12]}",
        )


def check_series(ctx: Context) -> list[patching.CheckResult]:
    """Applies the series to a scratch tree from the baseline; the source tree is not touched.

    The log goes to logs/patch-check.log, apart from the stage's own log, because a check is
    not a run of the stage and must not replace what the last run recorded.
    """
    log = StageLog(ctx.paths.logs / "patch-check.log", ctx.ui)
    try:
        return patching.check_series(
            ctx.paths.source,
            ctx.output(FetchOutput).baseline_commit,
            ctx.project.torchrec.patches,
            scratch_root=ctx.paths.root,
            log=log,
            epoch=ctx.project.torchrec.commit_time,
        )
    finally:
        log.close()


def refresh_series(ctx: Context) -> tuple[list[str], list[str]]:
    """Rewrites the patch files from the tree's commits; returns (written, removed) names."""
    return patching.refresh_series(
        ctx.paths.source,
        ctx.output(FetchOutput).baseline_commit,
        ctx.project.torchrec.patches,
        scratch_root=ctx.paths.root,
    )
