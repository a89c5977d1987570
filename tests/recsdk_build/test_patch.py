"""patch: apply / conflict / rollback / check / refresh on a small local repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from recsdk_build.errors import PatchError
from recsdk_build.patching import read_series
from recsdk_build.pipeline.manifest import Manifest
from recsdk_build.stages.patch import check_series, refresh_series
from tests.stagehelp import context, run
from tests.synthetic import Upstream, git, make_project


def _tree(build: Path) -> Path:
    return build / "src" / "torchrec"


def test_series_applies_as_one_commit_per_patch(
    project: Path, tmp_path: Path, upstream: Upstream
) -> None:
    build = tmp_path / "build"
    run(project, build, "fetch", "patch")
    tree = _tree(build)
    assert git(tree, "log", "--format=%s", "recsdk/baseline..HEAD") == (
        "npu-planner: plan for npu devices"
    )
    assert '"npu"' in (tree / "torchrec" / "planner.py").read_text()
    assert git(tree, "status", "--porcelain") == ""
    record = Manifest.load(build).stages["patch"]
    assert record.outputs["patches"] == ["0001-npu-planner.patch"]
    assert record.outputs["patched_commit"] == git(tree, "rev-parse", "HEAD")


def test_applying_twice_gives_the_same_commit(project: Path, tmp_path: Path) -> None:
    run(project, tmp_path / "a", "fetch", "patch")
    run(project, tmp_path / "b", "fetch", "patch")
    assert git(_tree(tmp_path / "a"), "rev-parse", "HEAD") == git(
        _tree(tmp_path / "b"), "rev-parse", "HEAD"
    )


def test_a_broken_hunk_names_patch_file_and_hunk_and_leaves_the_baseline(
    tmp_path: Path, upstream: Upstream
) -> None:
    project = make_project(tmp_path / "p", upstream, broken_patch=True)
    build = tmp_path / "build"
    with pytest.raises(PatchError) as err:
        run(project, build, "fetch", "patch")
    message = err.value.message
    assert "0001-npu-planner.patch" in message
    assert "torchrec/planner.py" in message
    assert "hunk #1" in message
    tree = _tree(build)
    assert git(tree, "rev-parse", "HEAD") == upstream.commit
    assert git(tree, "status", "--porcelain") == ""
    assert git(tree, "worktree", "list").count("\n") == 0  # scratch worktree removed


def test_a_failure_after_a_good_patch_also_leaves_the_baseline(
    project: Path, tmp_path: Path, upstream: Upstream
) -> None:
    patch_dir = project / "patches" / "torchrec-1.1.0"
    (patch_dir / "0002-missing-file.patch").write_text(
        "diff --git a/torchrec/nothere.py b/torchrec/nothere.py\n"
        "--- a/torchrec/nothere.py\n+++ b/torchrec/nothere.py\n"
        "@@ -1 +1 @@\n-a\n+b\n"
    )
    (patch_dir / "series").write_text("0001-npu-planner.patch\n0002-missing-file.patch\n")
    build = tmp_path / "build"
    with pytest.raises(PatchError) as err:
        run(project, build, "fetch", "patch")
    assert "0002-missing-file.patch" in err.value.message
    assert "torchrec/nothere.py" in err.value.message
    assert git(_tree(build), "rev-parse", "HEAD") == upstream.commit


def test_crlf_patches_apply(project: Path, tmp_path: Path) -> None:
    patch = project / "patches" / "torchrec-1.1.0" / "0001-npu-planner.patch"
    patch.write_bytes(patch.read_bytes().replace(b"\n", b"\r\n"))
    build = tmp_path / "build"
    run(project, build, "fetch", "patch")
    assert '"npu"' in (_tree(build) / "torchrec" / "planner.py").read_text()


def test_plain_diffs_apply_as_commits_named_by_concern(project: Path, tmp_path: Path) -> None:
    patch_dir = project / "patches" / "torchrec-1.1.0"
    (patch_dir / "0002-hbm-for-npu.patch").write_text(
        "diff --git a/torchrec/planner.py b/torchrec/planner.py\n"
        "--- a/torchrec/planner.py\n+++ b/torchrec/planner.py\n"
        "@@ -6,3 +6,5 @@ def hbm_gb(device):\n"
        '     if device == "cuda":\n         return 32\n'
        '+    if device == "npu":\n+        return 64\n'
        "     return 0\n"
    )
    (patch_dir / "series").write_text("0001-npu-planner.patch\n0002-hbm-for-npu.patch\n")
    build = tmp_path / "build"
    run(project, build, "fetch", "patch")
    assert git(_tree(build), "log", "-1", "--format=%s") == "hbm-for-npu"


@pytest.mark.parametrize(
    ("series", "problem"),
    [
        ("0001-npu-planner.patch\n0001-npu-planner.patch\n", "listed twice"),
        ("npu.patch\n", "NNNN-<concern>.patch"),
        ("0009-gone.patch\n", "does not exist"),
        ("# nothing\n", "not listed in series"),
    ],
)
def test_bad_series_files_are_explained(project: Path, series: str, problem: str) -> None:
    patch_dir = project / "patches" / "torchrec-1.1.0"
    (patch_dir / "series").write_text(series)
    with pytest.raises(PatchError, match=problem.replace(".", r"\.")):
        read_series(patch_dir)


def test_local_edits_are_refused_with_the_file_named(project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    run(project, build, "fetch", "patch")
    jagged = _tree(build) / "torchrec" / "sparse" / "jagged.py"
    jagged.write_text(jagged.read_text().replace("out = [0]", "out = [1]"))
    # The tree is no longer intact, so the stage reruns and must not discard the edit.
    with pytest.raises(PatchError, match=r"uncommitted changes in torchrec/sparse/jagged\.py"):
        run(project, build, "patch")
    assert "out = [1]" in jagged.read_text()
    run(project, build, "patch", discard_local=True)
    assert "out = [0]" in jagged.read_text()


def test_check_applies_to_a_scratch_tree_only(
    project: Path, tmp_path: Path, upstream: Upstream
) -> None:
    build = tmp_path / "build"
    run(project, build, "fetch")
    results = check_series(
        context(
            project,
            build,
        )
    )
    assert [r.name for r in results] == ["0001-npu-planner.patch"]
    assert results[0].files == ["torchrec/planner.py"]
    assert (results[0].added, results[0].removed) == (1, 1)
    assert git(_tree(build), "rev-parse", "HEAD") == upstream.commit


def test_refresh_rewrites_patches_from_the_tree(project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    run(project, build, "fetch", "patch")
    tree = _tree(build)
    planner = tree / "torchrec" / "planner.py"
    planner.write_text(planner.read_text().replace("return 32", "return 80"))
    git(tree, "commit", "-qam", "npu-hbm: larger HBM default")
    ctx = context(project, build)
    ctx.log = None
    written, removed = refresh_series(ctx)
    assert written == ["0001-npu-planner.patch", "0002-npu-hbm.patch"]
    assert removed == []
    patch_dir = project / "patches" / "torchrec-1.1.0"
    assert "+        return 80" in (patch_dir / "0002-npu-hbm.patch").read_text()
    assert (patch_dir / "series").read_text() == (
        "# test series\n0001-npu-planner.patch\n0002-npu-hbm.patch\n"
    )
    # The refreshed series applies to a fresh tree and gives the same content.
    run(project, tmp_path / "fresh", "fetch", "patch")
    fresh = _tree(tmp_path / "fresh") / "torchrec" / "planner.py"
    assert fresh.read_text() == planner.read_text()


def test_refresh_refuses_uncommitted_work(project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    run(project, build, "fetch", "patch")
    (_tree(build) / "torchrec" / "planner.py").write_text("# wip\n")
    with pytest.raises(PatchError, match="uncommitted changes"):
        refresh_series(context(project, build))
