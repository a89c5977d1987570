"""The command line, end to end on a local synthetic source (no GitHub, no torch)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recsdk_build.pipeline.lock import BuildLock
from tests.conftest import invoke
from tests.synthetic import Upstream, git


def _json(output: str) -> dict:
    return json.loads(output[output.index("{\n") :])


def test_all_end_to_end_then_everything_cached(
    cli: CliRunner, project: Path, tmp_path: Path, upstream: Upstream
) -> None:
    build = tmp_path / "build"
    bare = tmp_path / "source.git"
    git(tmp_path, "clone", "-q", "--bare", str(upstream.repo), str(bare))
    code, out = invoke(
        cli, project, "--build-dir", str(build), "--json", "all", "--source", str(bare)
    )
    assert code == 0, out
    summary = _json(out)
    assert [(s["stage"], s["status"]) for s in summary["stages"]] == [
        ("fetch", "ran"),
        ("patch", "ran"),
        ("wheels", "ran"),
        ("verify", "ran"),
    ]
    manifest = json.loads((build / "manifest.json").read_text())
    assert manifest["stages"]["fetch"]["provenance"]["source_kind"] == "bare"
    verify = manifest["stages"]["verify"]["outputs"]["summary"]
    assert (verify["passed"], verify["failed"], verify["not_run"]) == (1, 0, 1)
    assert verify["skipped"][0]["reason"] == "no npu device in the synthetic environment"
    assert (build / "verify" / "results" / "junit.xml").is_file()
    for stage in ("fetch", "patch", "wheels", "verify"):
        assert (build / "logs" / f"{stage}.log").is_file()

    started = time.monotonic()
    code, out = invoke(
        cli, project, "--build-dir", str(build), "--json", "all", "--source", str(bare)
    )
    elapsed = time.monotonic() - started
    assert code == 0, out
    assert {s["status"] for s in _json(out)["stages"]} == {"cached"}
    print(f"second `all` (in-process): {elapsed:.2f}s")

    code, out = invoke(
        cli,
        project,
        "--build-dir",
        str(build),
        "--json",
        "all",
        "--source",
        str(bare),
        "--force",
        "wheels",
    )
    statuses = {s["stage"]: s["status"] for s in _json(out)["stages"]}
    # The rebuilt wheel is byte-identical, so verify stays cached.
    assert statuses == {"fetch": "cached", "patch": "cached", "wheels": "ran", "verify": "cached"}


def test_a_failing_verification_fails_the_run(
    cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    (project / "verify" / "test_broken.py").write_text(
        "def test_wrong():\n    assert 1 + 1 == 3, 'arithmetic is broken'\n"
    )
    code, out = invoke(cli, project, "--build-dir", str(tmp_path / "b"), "all")
    assert code == 1
    assert "verification failed: 1 passed, 1 failed" in out
    assert "test_wrong" in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["all"],
        ["fetch"],
        ["patch"],
        ["patch", "apply"],
        ["patch", "check"],
        ["patch", "refresh"],
        ["wheels"],
        ["verify"],
        ["doctor"],
        ["clean"],
        ["status"],
    ],
)
def test_every_command_explains_itself(cli: CliRunner, project: Path, args: list[str]) -> None:
    code, out = invoke(cli, project, *args, "--help")
    assert code == 0
    assert "Usage:" in out
    assert len(out.splitlines()) > 6


def test_unknown_stage_lists_the_valid_ones(cli: CliRunner, project: Path, tmp_path: Path) -> None:
    code, out = invoke(cli, project, "--build-dir", str(tmp_path), "all", "--force", "compile")
    assert code == 2
    assert "--force compile: no such stage" in out
    assert "fetch, patch" in out
    assert "Traceback" not in out


def test_missing_project_is_one_clear_message(cli: CliRunner, tmp_path: Path) -> None:
    code, out = invoke(cli, tmp_path / "nowhere", "all")
    assert code == 1
    assert "recsdk.toml" in out and "Traceback" not in out


def test_running_a_stage_before_its_input_says_what_to_run(
    cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    code, out = invoke(cli, project, "--build-dir", str(tmp_path), "wheels")
    assert code == 1
    assert "needs the output of 'patch'" in out
    assert "recsdk-build patch" in out


def test_a_concurrent_run_is_refused(cli: CliRunner, project: Path, tmp_path: Path) -> None:
    with BuildLock(tmp_path):
        code, out = invoke(cli, project, "--build-dir", str(tmp_path), "fetch")
    assert code == 1
    assert "another recsdk-build run" in out


def test_patch_check_and_clean(cli: CliRunner, project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    assert invoke(cli, project, "--build-dir", str(build), "fetch")[0] == 0
    code, out = invoke(cli, project, "--build-dir", str(build), "patch", "check")
    assert code == 0 and "0001-npu-planner.patch" in out
    code, out = invoke(cli, project, "--build-dir", str(build), "clean")
    assert code == 0
    assert [p.name for p in build.iterdir()] == [".recsdk-build.lock"]


@pytest.mark.parametrize("has_makeself", [True, False])
def test_doctor_reports_the_target(
    cli: CliRunner, project: Path, monkeypatch: pytest.MonkeyPatch, has_makeself: bool
) -> None:
    """What the cann target lacks is named, whichever host tools this machine happens to have
    (makeself is the cann target's packager; no test may depend on it being installed)."""
    from recsdk_build import doctor

    real = doctor._tool_version

    def tool_version(cmd: str, args: tuple[str, ...] = ("--version",)) -> tuple[bool, str]:
        if cmd == "makeself":
            return (True, "2.5.0 (/usr/bin/makeself)") if has_makeself else (False, "not found")
        return real(cmd, args)

    monkeypatch.setattr(doctor, "_tool_version", tool_version)
    monkeypatch.setattr(doctor, "find_cann", lambda: None)
    code, out = invoke(cli, project, "doctor")
    assert "target:" in out
    assert code in (0, 1)
    code, out = invoke(cli, project, "doctor", "--target", "cann")
    assert code == 1
    expected = "CANN toolkit (" if has_makeself else "makeself (not found), CANN toolkit ("
    assert f"target cann needs: {expected}" in " ".join(out.split())


def test_doctor_reports_free_disk_where_the_build_goes(tmp_path: Path, monkeypatch) -> None:
    from recsdk_build import doctor

    usage = shutil.disk_usage(tmp_path)
    # The build directory does not exist yet: its nearest existing parent is measured.
    check = doctor.disk_check(tmp_path / "not" / "yet")
    assert check.name == "free disk" and check.needed_by == ()
    assert f"at {tmp_path}" in check.detail
    assert check.found == (usage.free >= doctor.FULL_BUILD_BYTES)

    small = usage._replace(free=2 * 1024**3)
    monkeypatch.setattr(doctor.shutil, "disk_usage", lambda _: small)
    low = doctor.disk_check(tmp_path)
    assert not low.found
    assert "2.0 GiB free" in low.detail and "needs about 15 GiB" in low.detail
