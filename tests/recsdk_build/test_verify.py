"""verify: JUnit parsing and the reused environment being equal to a fresh one."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

from recsdk_build.pipeline.manifest import Manifest
from recsdk_build.stages.verify import parse_junit, venv_python
from tests.stagehelp import run

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="test_a" name="test_ok" time="0.1"/>
<testcase classname="test_a" name="test_bad" time="0.1">
  <failure message="assert 1 == 2">long text</failure></testcase>
<testcase classname="test_a" name="test_err" time="0.1"><error message="fixture broke"/></testcase>
<testcase classname="test_b" name="test_npu" time="0.0">
  <skipped type="pytest.skip" message="no npu device: neither torch_npu nor npu_sim"/></testcase>
</testsuite></testsuites>
"""


def test_parse_junit_counts_and_keeps_reasons(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    summary = parse_junit(path)
    assert (summary.passed, summary.failed, summary.errors, summary.not_run) == (1, 1, 1, 1)
    assert not summary.ok
    assert summary.failures[0] == {"test": "test_a::test_bad", "message": "assert 1 == 2"}
    assert summary.skipped == [
        {"test": "test_b::test_npu", "reason": "no npu device: neither torch_npu nor npu_sim"}
    ]


def test_a_reused_environment_drops_what_earlier_runs_added(project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    run(project, build, "fetch", "patch", "wheels", "verify")
    venv = build / "verify" / "venv"
    # Something a previous run installed (say, a wheel this run no longer builds).
    wheel = tmp_path / "leftover_pkg-1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("leftover_pkg/__init__.py", "")
        zf.writestr(
            "leftover_pkg-1.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: leftover-pkg\nVersion: 1\n",
        )
        zf.writestr(
            "leftover_pkg-1.dist-info/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr("leftover_pkg-1.dist-info/RECORD", "")
    subprocess.run(
        [venv_python(venv), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )
    assert (
        "leftover"
        in subprocess.run(
            [venv_python(venv), "-m", "pip", "list"], capture_output=True, text=True
        ).stdout
    )
    run(project, build, "verify", force=("verify",))
    record = Manifest.load(build).stages["verify"]
    assert record.provenance["environment_reused"] is True
    installed = (build / "verify" / "results" / "environment.txt").read_text().lower()
    assert "leftover" not in installed
    assert "torchrec @" in installed or "torchrec==1.1.0+npu" in installed
    assert json.loads((build / "verify" / "results" / "summary.json").read_text())["passed"] == 1
    # The synthetic suite runs without the pinned runtime: nothing to lock, but a lock.
    lock = (build / "verify" / "results" / "runtime.lock").read_text()
    assert [line for line in lock.splitlines() if not line.startswith("#")] == []
    artifacts = {Path(a.path).name for a in record.artifacts}
    assert {"junit.xml", "runtime.lock", "environment.txt"} <= artifacts
