"""fetch: the pinned torchrec source as a git tree with a verified baseline commit.

Which source (the pinned remote, ``--source``, or the verified registry-wheel fallback) and
where the tree goes are decided here; fetching and verifying are recsdk_build/fetching.py. The
tree is built in staging and replaces build/src/torchrec only when verified, and never over a
maintainer's unsaved work.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import git

from recsdk_build import blobs, fetching, gitutil
from recsdk_build.blobs import BlobList
from recsdk_build.errors import SourceError
from recsdk_build.fetching import classify_source, download_fallback_wheel, from_git, from_wheel
from recsdk_build.hashing import sha256_file
from recsdk_build.pipeline.atomic import new_staging_dir, replace_dir
from recsdk_build.pipeline.manifest import StageRecord
from recsdk_build.pipeline.outputs import FetchOutput, PatchOutput, parse_recorded
from recsdk_build.pipeline.stage import Context, Outcome, Stage


class FetchStage(Stage):
    name = "fetch"
    summary = "pinned torchrec source, verified"
    produces = FetchOutput
    helpers = (fetching, blobs, gitutil)

    def inputs(self, ctx: Context) -> dict[str, Any]:
        t = ctx.project.torchrec
        spec = classify_source(ctx.options.fetch.source, t.repository)
        return {
            "commit": t.commit,
            "commit_time": t.commit_time,
            "repository": t.repository,
            "branch": t.branch,
            "fallback_wheel": t.fallback_wheel if ctx.options.fetch.fallback else None,
            "blobs": sha256_file(t.blobs),
            "source": {"kind": spec.kind, "location": spec.location},
        }

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        if not gitutil.is_git_dir(ctx.paths.source):
            return False
        try:
            repo = gitutil.open_repo(ctx.paths.source)
        except git.InvalidGitRepositoryError:
            return False
        recorded = parse_recorded(FetchOutput, record.outputs)
        return recorded is not None and gitutil.rev(repo, gitutil.BASELINE_TAG) == (
            recorded.baseline_commit
        )

    def run(self, ctx: Context) -> Outcome:
        t = ctx.project.torchrec
        pinned = BlobList.load(t.blobs)
        spec = classify_source(ctx.options.fetch.source, t.repository)
        _refuse_to_destroy_local_work(ctx)
        staging = new_staging_dir(ctx.paths.root, "fetch")
        tree = staging / "torchrec"
        try:
            if spec.kind in ("remote", "clone", "bare", "bundle"):
                try:
                    provenance = from_git(
                        t,
                        spec,
                        tree,
                        pinned,
                        ctx.require_log(),
                        config_name=ctx.project.config_path.name,
                    )
                except SourceError as exc:
                    if spec.explicit or spec.kind != "remote" or not ctx.options.fetch.fallback:
                        raise
                    reason = exc.message.splitlines()[-1]
                    ctx.ui.warn(
                        f"cannot fetch {spec.location} ({_short(reason)}); falling back to the "
                        f"registry wheel {t.fallback_wheel}, accepted only if every file "
                        "matches the pinned commit"
                    )
                    shutil.rmtree(tree, ignore_errors=True)
                    wheel = download_fallback_wheel(t, staging, ctx.require_log())
                    provenance = from_wheel(t, wheel, tree, pinned, kind="registry-wheel")
                    provenance["fallback_reason"] = reason
                    # Kept (verified) for the verify stage's comparisons with upstream.
                    ctx.paths.downloads.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(wheel, ctx.paths.downloads / wheel.name)
            else:
                provenance = from_wheel(t, Path(spec.location), tree, pinned, kind="wheel")
            baseline = gitutil.rev(gitutil.open_repo(tree), "HEAD")
            replace_dir(tree, ctx.paths.source)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        ctx.ui.info(f"  source: {provenance['source_kind']} — {provenance['verification']}")
        return Outcome(
            provenance=provenance,
            outputs=FetchOutput(baseline_commit=baseline, source_kind=provenance["source_kind"]),
            note=f"{provenance['source_kind']}, {provenance['files_verified']} files verified",
        )


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _refuse_to_destroy_local_work(ctx: Context) -> None:
    """A refetch replaces the tree; never silently drop a maintainer's unsaved patch work."""
    if not gitutil.is_git_dir(ctx.paths.source) or ctx.options.fetch.discard_local:
        return
    try:
        repo = gitutil.open_repo(ctx.paths.source)
    except git.InvalidGitRepositoryError:
        return
    dirty = gitutil.dirty_paths(repo)
    fetched, patched = ctx.recorded(FetchOutput), ctx.recorded(PatchOutput)
    known = {
        fetched.baseline_commit if fetched else None,
        patched.patched_commit if patched else None,
    }
    head = gitutil.rev(repo, "HEAD")
    if dirty or head not in known:
        what = (
            f"uncommitted changes in {', '.join(dirty[:5])}"
            if dirty
            else (f"commits not produced by the pipeline (HEAD {head and head[:12]})")
        )
        raise SourceError(
            f"{ctx.paths.source} has {what}; fetching again would replace the tree",
            hint="save your work with `recsdk-build patch refresh`, or pass --discard-local",
        )
