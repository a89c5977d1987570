"""recsdk-build install: checksums first, the plan (--dry-run), the environment checks and
the operator packages' OPP install, on hand-written builds and fake environments."""

from __future__ import annotations

import io
import json
import shlex
import stat
import subprocess
import sys
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recsdk_build import bundle, trust
from recsdk_build import install as installer
from recsdk_build.errors import InstallError
from recsdk_build.interpreters import current
from recsdk_build.options import Target
from recsdk_build.pipeline.manifest import Artifact, Manifest, StageRecord
from recsdk_build.pipeline.stage import BuildPaths
from recsdk_build.proc import StageLog
from recsdk_build.stages.verify import installed_results
from recsdk_build.ui import UI
from tests.conftest import invoke
from tests.recsdk_build.fakebuild import all_stages, make_build
from tests.stagehelp import run
from tests.synthetic import Upstream

ME = current()


def _bundle(cli: CliRunner, project: Path, tmp_path: Path, target: str = "sim") -> Path:
    build = tmp_path / "build"
    make_build(all_stages(project), build, target=target)
    code, out = invoke(cli, project, "--build-dir", str(build), "dist")
    assert code == 0, out
    return next((build / "bundle").glob("*.tar.gz"))


def env_python(path: Path, *, torch_npu: bool = False, npu_sim: bool = False) -> Path:
    """A fake interpreter of an environment: reports itself as the running Python, and which
    npu providers the environment has."""
    report = {**ME.to_json(), "prefix": str(path.parent.parent)}
    has = {"torch_npu": torch_npu, "npu_sim": npu_sim}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "#!/bin/sh\n"
        'case "$2" in *find_spec*) echo '
        + shlex.quote(json.dumps(has))
        + " ;; *) echo "
        + shlex.quote(json.dumps(report))
        + " ;; esac\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _dry_install(
    cli: CliRunner, project: Path, bundle: str, python: str, *extra: str
) -> tuple[int, str]:
    """``recsdk-build install --bundle B --sha256-file B.sha256 --python P --dry-run [extra]``:
    (exit code, output). ``--insecure-no-digest`` in ``extra`` replaces the digest file."""
    trusted = () if "--insecure-no-digest" in extra else ("--sha256-file", bundle + ".sha256")
    return invoke(
        cli,
        project,
        "install",
        "--bundle",
        bundle,
        *trusted,
        "--python",
        python,
        "--dry-run",
        *extra,
    )


def test_dry_run_prints_the_exact_steps_and_changes_nothing(
    cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    archive = _bundle(cli, project, tmp_path)
    python = env_python(tmp_path / "env" / "bin" / "python")
    code, out = invoke(
        cli,
        project,
        "--json",
        "install",
        "--bundle",
        str(archive),
        "--sha256-file",
        f"{archive}.sha256",
        "--python",
        str(python),
        "--dry-run",
    )
    assert code == 0, out
    assert json.loads(out[out.index("{\n") :])["digest_checked"] is True
    steps = json.loads(out[out.index("{\n") :])["steps"]
    wheels = sorted(p.name for p in (tmp_path / "build" / "dist").iterdir())
    torchrec = "./wheels/torchrec-1.1.0+npu-py3-none-any.whl"
    others = [f"./wheels/{w}" for w in wheels if not w.startswith("torchrec-")]
    pip = f"PIP_NO_INPUT=1 {python} -m pip --disable-pip-version-check install"
    assert steps[0] == f"{pip} --require-hashes --no-deps -r ./runtime.lock"
    assert steps[1] == " ".join(
        [
            f"{pip} --no-deps --force-reinstall --",
            shlex.quote(torchrec),
            *map(shlex.quote, others),
        ]
    )
    record = tmp_path / "env" / "share" / "recsdk" / "install.json"
    assert steps[2].startswith(f"write {record}: ")
    assert len(steps) == 3 and not record.exists()
    code, printed = _dry_install(cli, project, str(archive), str(python))
    assert code == 0 and [line for line in printed.splitlines() if line in steps] == steps


def test_a_changed_byte_is_refused_naming_the_file(
    cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    archive = _bundle(cli, project, tmp_path)
    tampered = tmp_path / "tampered.tar.gz"
    with tarfile.open(archive) as src, tarfile.open(tampered, "w:gz") as dst:
        for info in src.getmembers():
            data = src.extractfile(info).read() if info.isfile() else None
            if data is not None and "/wheels/torchrec_embcache-" in info.name:
                victim = info.name.split("/", 1)[1]
                data = bytes([data[0] ^ 0x01]) + data[1:]
            dst.addfile(info, io.BytesIO(data) if data is not None else None)
    python = env_python(tmp_path / "env" / "bin" / "python")
    code, out = _dry_install(cli, project, str(tampered), str(python), "--insecure-no-digest")
    flat = " ".join(out.split())
    assert code == 1 and f"{victim} does not match its sha256 in SHA256SUMS" in flat
    assert "Traceback" not in out and "NOT checked against a sha256" in flat


@pytest.mark.parametrize(
    ("target", "has", "message"),
    [
        ("sim", {"torch_npu": True}, "it has the real torch_npu"),
        ("cann", {"npu_sim": True}, "it has npu_sim"),
    ],
)
def test_sim_and_cann_artifacts_stay_apart(
    cli: CliRunner, project: Path, tmp_path: Path, target: str, has: dict, message: str
) -> None:
    archive = _bundle(cli, project, tmp_path, target)
    python = env_python(tmp_path / "env" / "bin" / "python", **has)
    code, out = _dry_install(
        cli, project, str(archive), str(python), "--opp-path", str(tmp_path / "opp")
    )
    assert code == 1 and message in " ".join(out.split())
    # The other kind of environment takes it.
    clean = env_python(tmp_path / "clean" / "bin" / "python")
    code, out = _dry_install(
        cli, project, str(archive), str(clean), "--opp-path", str(tmp_path / "opp")
    )
    assert code == 0, out


def test_a_bundle_for_another_python_is_refused(tmp_path: Path) -> None:
    contents = trust.Contents("b", Target.SIM, "cp399", ME.machine, (), (), (), (), ())
    with pytest.raises(InstallError, match=f"b is for cp399 .*'python.tag'.* is {ME.tag}") as e:
        installer.check_fits(contents, ME, {})
    # The hint names the Python the bundle needs, not the environment's own.
    assert "Python 3.99" in (e.value.hint or "")


def test_cann_operator_packages_go_into_the_opp_tree_first_in_load_priority(
    cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    archive = _bundle(cli, project, tmp_path, "cann")
    top, data = bundle.open_bundle(archive, tmp_path / "unpacked")
    opp = tmp_path / "opp"
    (opp / "vendors").mkdir(parents=True)
    (opp / "vendors" / "config.ini").write_text("load_priority=customize,invert_permute\n")
    env = replace(ME, prefix=str(tmp_path / "env"))
    contents = trust.derive(top, data, sorted(bundle.listed(top)))
    plan = installer.make_plan(top, contents, env, opp=opp, manifest=data)
    # The pip steps need real wheels; the operator steps and the record are what is new here.
    local = replace(plan, steps=tuple(s for s in plan.steps if "pip" not in s.argv))
    log = StageLog(tmp_path / "install.log", UI())
    try:
        installer.execute(local, log)
    finally:
        log.close()
    for vendor in ("gather_for_rank1", "invert_permute"):
        assert (opp / "vendors" / vendor / "op_api" / "lib" / "libcust_opapi.so").is_file()
    assert (opp / "vendors" / "config.ini").read_text() == (
        "load_priority=gather_for_rank1,invert_permute,customize\n"
    )
    record = json.loads((tmp_path / "env" / "share" / "recsdk" / "install.json").read_text())
    assert record["bundle"] == data["bundle"] and record["opp"] == str(opp)
    assert installer.read_record(env) == record


def test_operator_packages_need_an_opp_directory(
    cli: CliRunner, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _bundle(cli, project, tmp_path, "cann")
    monkeypatch.delenv("ASCEND_OPP_PATH", raising=False)
    monkeypatch.setattr(installer, "find_cann", lambda: None)
    python = env_python(tmp_path / "env" / "bin" / "python")
    code, out = _dry_install(cli, project, str(archive), str(python))
    assert code == 1 and "--opp-path" in out


def test_a_missing_bundle_is_one_line(cli: CliRunner, project: Path, tmp_path: Path) -> None:
    code, out = _dry_install(cli, project, str(tmp_path / "nope.tar.gz"), sys.executable)
    assert code == 1 and "no such file" in out and "Traceback" not in out


def test_install_then_verify_the_environment_in_place(
    cli: CliRunner, project: Path, tmp_path: Path, upstream: Upstream
) -> None:
    """The synthetic pipeline end to end: its build bundled, installed into a fresh venv (its
    runtime lock is empty: the synthetic suite does not need the pinned runtime), and
    `verify --python` runs the suite in that venv without installing pytest into it."""
    build = tmp_path / "build"
    run(project, build, "fetch", "patch", "wheels", source=str(upstream.repo))
    # The verify stage's own environment is tested elsewhere; recorded as passed here.
    # The synthetic suite runs without the pinned runtime: its lock is empty.
    manifest = Manifest.load(build)
    lock = build / "verify" / "results" / "runtime.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("# nothing: the suite ran without the pinned runtime\n")
    manifest.stages["verify"] = StageRecord(
        "verify",
        "ran",
        "f",
        "now",
        0.0,
        artifacts=[Artifact.of(build, lock, kind="report")],
        outputs={"summary": {"passed": 1, "failed": 0, "errors": 0, "not_run": 1}},
    )
    manifest.save()
    code, out = invoke(cli, project, "--build-dir", str(build), "dist")
    assert code == 0, out
    archive = next((build / "bundle").glob("*.tar.gz"))
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    python = installer_python(env)
    top, data = bundle.open_bundle(archive, tmp_path / "unpacked")
    contents = trust.derive(top, data, sorted(bundle.listed(top)))
    plan = installer.make_plan(top, contents, python, opp=None, manifest=data)
    assert plan.steps[0].what.startswith("torchrec")  # an empty lock installs nothing
    log = StageLog(tmp_path / "install.log", UI())
    try:
        installer.execute(plan, log)
    finally:
        log.close()
    code, out = invoke(
        cli, project, "--build-dir", str(build), "--json", "verify", "--python", python.path
    )
    assert code == 0, out
    summary = json.loads(out[out.index("{\n") :])
    assert (summary["installed"], summary["passed"], summary["not_run"]) == (data["bundle"], 1, 1)
    results = installed_results(BuildPaths(build), python) / "results" / "junit.xml"
    assert results.is_file()
    listed = subprocess.run(
        [python.path, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
    ).stdout
    assert "pytest" not in listed.lower() and "torchrec==1.1.0+npu" in listed


def installer_python(env: Path):
    from recsdk_build.interpreters import examine

    found = examine(env / "bin" / "python")
    assert found is not None
    return found
