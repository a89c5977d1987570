"""The stage machinery: fingerprints, caching, failure recording, the lock, atomic outputs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from recsdk_build.config import load_project
from recsdk_build.errors import BuildError, LockError
from recsdk_build.options import compute_options
from recsdk_build.pipeline.atomic import new_staging_dir, replace_dir, write_text_atomic
from recsdk_build.pipeline.lock import BuildLock
from recsdk_build.pipeline.manifest import Artifact, Manifest, StageRecord
from recsdk_build.pipeline.outputs import StageOutput
from recsdk_build.pipeline.runner import run_stages
from recsdk_build.pipeline.stage import BuildPaths, Context, Outcome, Stage, fingerprint
from recsdk_build.ui import UI


@dataclass(frozen=True)
class WriterOutput(StageOutput):
    stage = "writer"
    content: str


class Writer(Stage):
    """Writes ``out/<name>.txt`` with a configurable content; counts its runs."""

    summary = "test stage"
    produces = WriterOutput

    def __init__(self, name: str, content: str = "x", fail: bool = False) -> None:
        self.name = name  # type: ignore[misc]
        self.content = content
        self.fail = fail
        self.runs = 0

    def inputs(self, ctx: Context) -> dict[str, Any]:
        return {"content": self.content}

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        return all(a.intact(ctx.paths.root) for a in record.artifacts)

    def run(self, ctx: Context) -> Outcome:
        self.runs += 1
        if self.fail:
            raise BuildError(f"{self.name} broke")
        staging = new_staging_dir(ctx.paths.root, self.name)
        (staging / f"{self.name}.txt").write_text(self.content)
        final = ctx.paths.root / "out" / self.name
        replace_dir(staging, final)
        path = final / f"{self.name}.txt"
        return Outcome(
            artifacts=[Artifact.of(ctx.paths.root, path, kind="text")],
            outputs=WriterOutput(content=self.content),
        )


def _ctx(project: Path, build: Path) -> Context:
    return Context(
        load_project(project), BuildPaths(build), Manifest.load(build), UI(), compute_options()
    )


def test_fingerprint_ignores_key_order_but_not_values() -> None:
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})


def test_unchanged_stage_is_cached_and_changed_or_damaged_one_reruns(
    project: Path, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    one, two = Writer("one"), Writer("two")
    reports = run_stages(_ctx(project, build), [one, two], set())
    assert [r.status for r in reports] == ["ran", "ran"]

    reports = run_stages(_ctx(project, build), [one, two], set())
    assert [r.status for r in reports] == ["cached", "cached"]
    assert (one.runs, two.runs) == (1, 1)

    two.content = "changed"
    reports = run_stages(_ctx(project, build), [one, two], set())
    assert [r.status for r in reports] == ["cached", "ran"]

    (build / "out" / "one" / "one.txt").write_text("damaged")
    reports = run_stages(_ctx(project, build), [one, two], {"two"})
    assert [r.status for r in reports] == ["ran", "ran"]
    assert (build / "out" / "one" / "one.txt").read_text() == "x"


def test_a_failure_is_recorded_and_later_stages_do_not_run(project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    good, bad, after = Writer("good"), Writer("bad", fail=True), Writer("after")
    with pytest.raises(BuildError) as err:
        run_stages(_ctx(project, build), [good, bad, after], set())
    reports = err.value.reports  # type: ignore[attr-defined]
    assert [(r.name, r.status) for r in reports] == [
        ("good", "ran"),
        ("bad", "failed"),
        ("after", "not run"),
    ]
    manifest = Manifest.load(build)
    assert manifest.stages["bad"].status == "failed"
    assert manifest.stages["bad"].error == "bad broke"
    assert manifest.successful("bad") is None
    assert after.runs == 0
    assert "bad broke" in (build / "logs" / "bad.log").read_text()


def test_a_failed_rerun_keeps_the_previous_output(project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    stage = Writer("one", content="first")
    run_stages(_ctx(project, build), [stage], set())
    stage.content, stage.fail = "second", True
    with pytest.raises(BuildError):
        run_stages(_ctx(project, build), [stage], set())
    assert (build / "out" / "one" / "one.txt").read_text() == "first"


def test_manifest_records_artifacts_with_sha256(project: Path, tmp_path: Path) -> None:
    import hashlib
    import json

    build = tmp_path / "build"
    run_stages(_ctx(project, build), [Writer("one", content="abc")], set())
    data = json.loads((build / "manifest.json").read_text())
    [art] = data["artifacts"]
    assert art["sha256"] == hashlib.sha256(b"abc").hexdigest()
    assert art["size"] == 3 and art["stage"] == "one"
    assert data["tool"]["recsdk-build"]
    assert data["pins"]["torchrec"]["wheel_version"] == "1.1.0+npu"


def test_the_lock_refuses_a_second_run_and_names_the_holder(tmp_path: Path) -> None:
    with BuildLock(tmp_path):
        with pytest.raises(LockError) as err, BuildLock(tmp_path):
            pass
        assert "another recsdk-build run" in err.value.message
        assert "pid" in err.value.message
    with BuildLock(tmp_path):  # released: usable again
        pass


def test_the_lock_is_released_when_the_holder_dies(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from recsdk_build.pipeline.lock import "
        "BuildLock; BuildLock(Path(sys.argv[1])).acquire(); import os; os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    with BuildLock(tmp_path):
        pass


def test_replace_dir_swaps_whole_directories(tmp_path: Path) -> None:
    final = tmp_path / "final"
    final.mkdir()
    (final / "old.txt").write_text("old")
    staged = new_staging_dir(tmp_path, "x")
    (staged / "new.txt").write_text("new")
    replace_dir(staged, final)
    assert sorted(p.name for p in final.iterdir()) == ["new.txt"]
    assert not staged.exists()
    assert not list(tmp_path.glob(".final.old-*"))


def test_write_text_atomic_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "m.json"
    write_text_atomic(target, "one")

    with pytest.raises(TypeError):
        write_text_atomic(target, 5)  # type: ignore[arg-type]
    assert target.read_text() == "one"
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]
