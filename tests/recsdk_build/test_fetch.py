"""fetch: every source kind, and refusal of anything that is not the pinned commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from recsdk_build.errors import SourceError
from recsdk_build.pipeline.manifest import Manifest
from tests.stagehelp import run
from tests.synthetic import Upstream, git, make_registry_wheel


def _tree_files(build: Path) -> set[str]:
    return set(git(build / "src" / "torchrec", "ls-files").splitlines())


def test_default_remote_is_fetched_and_verified(
    project: Path, tmp_path: Path, upstream: Upstream
) -> None:
    build = tmp_path / "build"
    run(project, build, "fetch")
    record = Manifest.load(build).stages["fetch"]
    assert record.outputs["baseline_commit"] == upstream.commit
    assert record.provenance["source_kind"] == "git"
    assert record.provenance["files_verified"] == len(_tree_files(build))
    tree = build / "src" / "torchrec"
    assert git(tree, "rev-parse", "recsdk/baseline") == upstream.commit


@pytest.mark.parametrize("kind", ["clone", "bare", "bundle"])
def test_local_sources(project: Path, tmp_path: Path, upstream: Upstream, kind: str) -> None:
    if kind == "clone":
        source = tmp_path / "clone"
        git(tmp_path, "clone", "-q", str(upstream.repo), str(source))
    elif kind == "bare":
        source = tmp_path / "bare.git"
        git(tmp_path, "clone", "-q", "--bare", str(upstream.repo), str(source))
    else:
        source = tmp_path / "torchrec.bundle"
        git(upstream.repo, "bundle", "create", str(source), "--all")
    build = tmp_path / "build"
    run(project, build, "fetch", source=str(source))
    record = Manifest.load(build).stages["fetch"]
    assert record.provenance["source_kind"] == kind
    assert record.outputs["baseline_commit"] == upstream.commit


def test_a_source_without_the_pinned_commit_is_refused(project: Path, tmp_path: Path) -> None:
    # A repository with unrelated history never contains the pin.
    lone = tmp_path / "lone"
    git(tmp_path, "init", "-q", str(lone))
    (lone / "x").write_text("x")
    git(lone, "add", "x")
    git(lone, "commit", "-qm", "unrelated")
    with pytest.raises(SourceError, match="does not contain the pinned commit"):
        run(project, tmp_path / "build", "fetch", source=str(lone))


def test_explicit_missing_source_is_a_clear_error(project: Path, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file or directory"):
        run(project, tmp_path / "build", "fetch", source=str(tmp_path / "nope"))


def test_wheel_source_is_verified_and_becomes_a_baseline_commit(
    project: Path, tmp_path: Path, upstream: Upstream
) -> None:
    build = tmp_path / "build"
    run(project, build, "fetch", source=str(upstream.wheel))
    record = Manifest.load(build).stages["fetch"]
    assert record.provenance["source_kind"] == "wheel"
    assert record.provenance["generated_files_dropped"] == ["torchrec/version.py"]
    assert _tree_files(build) == {
        "LICENSE",
        "torchrec/__init__.py",
        "torchrec/planner.py",
        "torchrec/sparse/__init__.py",
        "torchrec/sparse/jagged.py",
    }
    tree = build / "src" / "torchrec"
    # The baseline carries the pinned commit's time, so SOURCE_DATE_EPOCH is the same.
    assert git(tree, "show", "-s", "--format=%ct", "HEAD") == "1738261401"
    assert git(tree, "status", "--porcelain") == ""


def test_a_tampered_wheel_is_refused_naming_the_file(
    project: Path, tmp_path: Path, upstream: Upstream
) -> None:
    bad = make_registry_wheel(upstream.repo, tmp_path / "bad", tamper="torchrec/sparse/jagged.py")
    build = tmp_path / "build"
    with pytest.raises(SourceError) as err:
        run(project, build, "fetch", source=str(bad))
    assert "torchrec/sparse/jagged.py" in err.value.message
    assert "refused" in err.value.message
    assert not (build / "src" / "torchrec").exists()


def test_a_wheel_with_a_foreign_file_is_refused(
    project: Path, tmp_path: Path, upstream: Upstream
) -> None:
    bad = make_registry_wheel(
        upstream.repo, tmp_path / "bad", extra={"torchrec/backdoor.py": "import os\n"}
    )
    with pytest.raises(SourceError, match=r"torchrec/backdoor\.py: not a file of the pinned"):
        run(project, tmp_path / "build", "fetch", source=str(bad))


def test_a_corrupted_zip_member_is_refused(
    project: Path, tmp_path: Path, upstream: Upstream
) -> None:
    data = bytearray(upstream.wheel.read_bytes())
    marker = data.find(b"def compute_device_types")
    assert marker > 0  # stored uncompressed, so the byte we flip is file content
    data[marker] ^= 0x20
    bad = tmp_path / "torchrec-1.1.0-py3-none-any.whl"
    bad.write_bytes(bytes(data))
    with pytest.raises(SourceError, match=r"torchrec/planner\.py"):
        run(project, tmp_path / "build", "fetch", source=str(bad))


def test_unreachable_remote_falls_back_to_the_verified_wheel(project: Path, tmp_path: Path) -> None:
    toml = project / "recsdk.toml"
    remote = "https://recsdk-build.invalid/torchrec.git"
    toml.write_text(
        toml.read_text().replace(
            next(line for line in toml.read_text().splitlines() if line.startswith("repository")),
            f'repository = "{remote}"',
        )
    )
    build = tmp_path / "build"
    run(project, build, "fetch")
    record = Manifest.load(build).stages["fetch"]
    assert record.provenance["source_kind"] == "registry-wheel"
    assert "recsdk-build.invalid" in record.provenance["fallback_reason"]
    assert (build / "downloads" / "torchrec-1.1.0-py3-none-any.whl").is_file()

    with pytest.raises(SourceError, match=r"recsdk-build\.invalid"):
        run(project, tmp_path / "build2", "fetch", fallback=False)


def test_refetch_refuses_to_destroy_local_edits(project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    run(project, build, "fetch")
    planner = build / "src" / "torchrec" / "torchrec" / "planner.py"
    planner.write_text(planner.read_text() + "# my work\n")
    with pytest.raises(SourceError, match=r"uncommitted changes in torchrec/planner\.py"):
        run(project, build, "fetch", force=("fetch",))
    assert planner.read_text().endswith("# my work\n")
    run(project, build, "fetch", force=("fetch",), discard_local=True)
    assert not planner.read_text().endswith("# my work\n")
