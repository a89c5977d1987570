"""Issue 30's probes, one crafted bundle per attack: a bundle whose manifest (or file list) was
rewritten and whose SHA256SUMS was regenerated to match is refused by the outer digest, and
without it by the checks of every manifest field against the file list, naming the field.
Also: size caps, stale pins, verify without an install record, user errors as one line (and
JSON), SIGTERM cleaning up, config.ini keeping its mode and lines. On hand-written builds."""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recsdk_build import bundle, trust
from recsdk_build import install as installer
from recsdk_build.errors import BundleError
from recsdk_build.interpreters import current
from recsdk_build.pipeline.lock import BuildLock
from recsdk_build.pipeline.stage import BuildPaths
from recsdk_build.proc import StageLog
from recsdk_build.signals import terminate_as_interrupt
from recsdk_build.stages.verify import installed_results
from recsdk_build.ui import UI
from tests.conftest import invoke
from tests.recsdk_build.fakebuild import all_stages, make_build
from tests.recsdk_build.test_install import env_python

ME = current()


def _dist(cli: CliRunner, project: Path, tmp_path: Path, target: str = "sim") -> Path:
    build = tmp_path / "build"
    make_build(all_stages(project), build, target=target)
    code, out = invoke(cli, project, "--build-dir", str(build), "dist")
    assert code == 0, out
    return next((build / "bundle").glob("*.tar.gz"))


def craft(
    archive: Path,
    out: Path,
    edit: Callable[[Path], None],
    *,
    extra_sums: tuple[str, ...] = (),
    sums: Callable[[str], bytes] = str.encode,
) -> Path:
    """``archive`` unpacked, changed by ``edit`` (given its top directory), its SHA256SUMS
    regenerated over every file (plus ``extra_sums`` lines) as an attacker would, repacked."""
    work = out.with_suffix(".d")
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    (top,) = work.iterdir()
    edit(top)
    files = sorted(
        p.relative_to(top).as_posix()
        for p in top.rglob("*")
        if p.is_file() and p.relative_to(top).as_posix() != "SHA256SUMS"
    )
    lines = [f"{hashlib.sha256((top / f).read_bytes()).hexdigest()}  {f}" for f in files]
    (top / "SHA256SUMS").write_bytes(sums("\n".join([*lines, *extra_sums]) + "\n"))
    with tarfile.open(out, "w:gz") as tar:
        tar.add(top, arcname=top.name)
    return out


def _manifest(edit: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    def change(top: Path) -> None:
        path = top / "manifest.json"
        data = json.loads(path.read_text())
        new = edit(data)
        path.write_text(json.dumps(data if new is None else new))

    return change


def _install(cli: CliRunner, project: Path, archive: Path, python: Path, *trusting: str):
    return invoke(
        cli,
        project,
        "--json",
        "install",
        "--bundle",
        str(archive),
        *trusting,
        "--python",
        str(python),
        "--dry-run",
    )


def _json(out: str) -> dict[str, Any]:
    return json.loads(out[out.rindex("\n{\n") + 1 :] if "\n{\n" in out else out[out.index("{") :])


def _lock(edit: Callable[[str], str]) -> Callable[[Path], None]:
    def change(top: Path) -> None:
        path = top / "runtime.lock"
        path.write_text(edit(path.read_text()))

    return change


EVIL_WHEEL = "../../../tmp/evilpkg-0.1-py3-none-any.whl"
INDEX = "--index-url=https://evil.example/simple"


def _climb(d: dict) -> None:
    d["install"]["wheels"].append(EVIL_WHEEL)


def _index_in_runtime(d: dict) -> None:
    d["install"]["runtime"].append(INDEX)


def _index_in_pins(d: dict) -> None:
    d["pins"]["runtime"]["extra"].append(INDEX)
    d["install"]["runtime"].append(INDEX)


def _old_torch(d: dict) -> None:
    d["install"]["runtime"][0] = "torch==2.5.0"


def _schema(d: dict) -> None:
    d["schema"] = 99


def _cann(d: dict) -> None:
    d["target"] = "cann"
    d["install"]["runtime"].append("torch-npu==2.6.0")


def _other_python(d: dict) -> None:
    d["python"]["tag"], d["python"]["version"] = "cp399", [3, 99, 0]


def _no_install(d: dict) -> None:
    del d["install"]


MANIFEST_ATTACKS = {
    "a wheel path climbing out of the bundle": (_climb, "'install.wheels'"),
    "a pip option among the runtime entries": (_index_in_runtime, "'install.runtime'"),
    "a pip option in the runtime pins": (_index_in_pins, "'pins.runtime'"),
    "torch==2.5.0 in the runtime": (_old_torch, "'install.runtime'"),
    "schema 99": (_schema, "'schema' is 99"),
    "target cann in a sim bundle": (_cann, "'target' is 'cann'"),
    "another Python": (_other_python, "'python"),
    "no install section": (_no_install, "'install.torchrec' is missing"),
    "a list, not an object": (lambda d: [d], "is not a JSON object"),
}


@pytest.mark.parametrize("attack", list(MANIFEST_ATTACKS))
def test_a_rewritten_manifest_is_refused_naming_the_field(
    cli: CliRunner, project: Path, tmp_path: Path, attack: str
) -> None:
    edit, named = MANIFEST_ATTACKS[attack]
    archive = _dist(cli, project, tmp_path)
    crafted = craft(archive, tmp_path / "crafted.tar.gz", _manifest(edit))
    python = env_python(tmp_path / "env" / "bin" / "python")
    # With the published digest, refused before it is opened.
    code, out = _install(cli, project, crafted, python, "--sha256-file", f"{archive}.sha256")
    assert code == 1 and "not the expected" in " ".join(out.split()), out
    assert _json(out)["ok"] is False
    # Without it (--insecure-no-digest), refused by the manifest's own checks.
    code, out = _install(cli, project, crafted, python, "--insecure-no-digest")
    flat = " ".join(out.split())
    assert code == 1 and named in flat, out
    assert "Traceback" not in out and "internal error" not in out
    assert _json(out)["ok"] is False
    assert EVIL_WHEEL not in "".join(_json(out).get("steps", []))


LOCK_ATTACKS = {
    "a pip option in the lock": (lambda t: f"{INDEX}\n{t}", "line 1 is not"),
    "an older torch in the lock": (
        lambda t: t.replace("torch==2.6.0", "torch==2.5.0"),
        "locks torch 2.5.0, the pins say 2.6.0",
    ),
    "an unhashed line": (lambda t: t + "evilpkg==0.1\n", "is not `name==version --hash"),
    "a locked runtime requirement dropped": (
        lambda t: "".join(x for x in t.splitlines(True) if not x.startswith("tqdm")),
        "does not lock tqdm",
    ),
}


@pytest.mark.parametrize("attack", list(LOCK_ATTACKS))
def test_a_rewritten_lock_is_refused(
    cli: CliRunner, project: Path, tmp_path: Path, attack: str
) -> None:
    edit, named = LOCK_ATTACKS[attack]
    archive = _dist(cli, project, tmp_path)
    crafted = craft(archive, tmp_path / "crafted.tar.gz", _lock(edit))
    python = env_python(tmp_path / "env" / "bin" / "python")
    code, out = _install(cli, project, crafted, python, "--sha256-file", f"{archive}.sha256")
    assert code == 1 and "not the expected" in " ".join(out.split()), out
    code, out = _install(cli, project, crafted, python, "--insecure-no-digest")
    assert code == 1 and named in " ".join(out.split()), out
    assert _json(out)["ok"] is False


def test_the_outer_digest_is_required_and_checked(
    cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    archive = _dist(cli, project, tmp_path)
    digest = (archive.parent / f"{archive.name}.sha256").read_text().split()[0]
    assert digest == hashlib.sha256(archive.read_bytes()).hexdigest()
    python = env_python(tmp_path / "env" / "bin" / "python")
    code, out = _install(cli, project, archive, python)
    assert code == 1 and "no sha256 to check it against" in " ".join(out.split())
    assert _install(cli, project, archive, python, "--sha256", digest)[0] == 0
    assert _install(cli, project, archive, python, "--sha256-file", f"{archive}.sha256")[0] == 0
    code, out = _install(cli, project, archive, python, "--sha256", "0" * 64)
    assert code == 1 and "not the expected" in out
    code, out = _install(cli, project, archive, python, "--sha256", "abc")
    assert code == 1 and "not a sha256" in out

    # A consistent rewrite (pins, recipe and lock all say torch 2.5.0, sums regenerated)
    # passes every inner check: only the digest catches it. That is what
    # --insecure-no-digest gives up.
    def older(d: dict) -> None:
        d["pins"]["runtime"]["torch"] = "2.5.0"
        d["install"]["runtime"][0] = "torch==2.5.0"

    def everything(top: Path) -> None:
        _manifest(older)(top)
        _lock(lambda t: t.replace("torch==2.6.0", "torch==2.5.0"))(top)

    crafted = craft(archive, tmp_path / "older.tar.gz", everything)
    code, out = _install(cli, project, crafted, python, "--insecure-no-digest")
    assert code == 0 and "NOT checked" in " ".join(out.split()), out
    code, out = _install(cli, project, crafted, python, "--sha256", digest)
    assert code == 1 and "refusing the bundle" in " ".join(out.split())


def test_the_file_list_is_checked(cli: CliRunner, project: Path, tmp_path: Path) -> None:
    archive = _dist(cli, project, tmp_path)
    python = env_python(tmp_path / "env" / "bin" / "python")

    def nested_sums(top: Path) -> None:
        (top / "wheels" / "SHA256SUMS").write_text("anything\n")

    # An unlisted file named SHA256SUMS below the top directory is one more file.
    crafted = craft(archive, tmp_path / "a.tar.gz", lambda top: None)
    with tarfile.open(crafted) as tar:
        top = tar.getnames()[0]
    unlisted = tmp_path / "unlisted.tar.gz"
    with tarfile.open(crafted) as src, tarfile.open(unlisted, "w:gz") as dst:
        for info in src.getmembers():
            dst.addfile(info, src.extractfile(info) if info.isfile() else None)
        extra = tarfile.TarInfo(f"{top}/wheels/SHA256SUMS")
        extra.size = 9
        dst.addfile(extra, io.BytesIO(b"anything\n"))
    code, out = _install(cli, project, unlisted, python, "--insecure-no-digest")
    assert code == 1 and "wheels/SHA256SUMS is not listed" in out
    # Listed, it is a file the bundle has no place for.
    crafted = craft(archive, tmp_path / "b.tar.gz", nested_sums)
    code, out = _install(cli, project, crafted, python, "--insecure-no-digest")
    assert code == 1 and "wheels/SHA256SUMS is not a wheel" in " ".join(out.split())
    # A listed path climbing out, and an option-like wheel name.
    line = f"{'0' * 64}  ../../evilpkg-0.1-py3-none-any.whl"
    crafted = craft(archive, tmp_path / "c.tar.gz", lambda top: None, extra_sums=(line,))
    code, out = _install(cli, project, crafted, python, "--insecure-no-digest")
    assert code == 1 and "refusing the bundle" in out and "Traceback" not in out

    def option_wheel(top: Path) -> None:
        (top / "wheels" / "--index-url=x-1-py3-none-any.whl").write_text("x")

    crafted = craft(archive, tmp_path / "d.tar.gz", option_wheel)
    code, out = _install(cli, project, crafted, python, "--insecure-no-digest")
    assert code == 1 and "refusing the file name" in out
    # Not UTF-8.
    crafted = craft(
        archive, tmp_path / "e.tar.gz", lambda top: None, sums=lambda t: t.encode() + b"\xff\n"
    )
    code, out = _install(cli, project, crafted, python, "--insecure-no-digest")
    assert code == 1 and "not UTF-8" in out and _json(out)["ok"] is False


def test_extraction_is_capped_before_bytes_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small archive that unpacks to much more: refused by the header's size, before its
    bytes reach the disk."""
    bomb = tmp_path / "bomb.tar.gz"
    with gzip.open(bomb, "wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for i in range(3):
            info = tarfile.TarInfo(f"top/wheels/f{i}")
            info.size = 4 << 20
            tar.addfile(info, io.BytesIO(bytes(info.size)))
    assert bomb.stat().st_size < 64 << 10
    monkeypatch.setattr(bundle, "MAX_MEMBER", 1 << 20)
    with pytest.raises(BundleError, match="limit"):
        bundle.unpack(bomb, tmp_path / "a")
    assert not list((tmp_path / "a").rglob("f*"))
    monkeypatch.setattr(bundle, "MAX_MEMBER", 8 << 20)
    monkeypatch.setattr(bundle, "MAX_TOTAL", 10 << 20)
    with pytest.raises(BundleError, match="in all"):
        bundle.unpack(bomb, tmp_path / "b")
    assert sum(p.stat().st_size for p in (tmp_path / "b").rglob("f*")) <= 10 << 20
    monkeypatch.setattr(bundle, "MAX_ENTRIES", 2)
    monkeypatch.setattr(bundle, "MAX_TOTAL", 1 << 30)
    with pytest.raises(BundleError, match="more than 2 entries"):
        bundle.unpack(bomb, tmp_path / "c")


def test_dist_refuses_a_pin_changed_since_the_build(
    cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    make_build(all_stages(project), build)
    toml = project / "recsdk.toml"
    text = toml.read_text()
    assert 'torch = "2.6.0"' in text
    toml.write_text(text.replace('torch = "2.6.0"', 'torch = "2.7.0"', 1))
    code, out = invoke(cli, project, "--build-dir", str(build), "dist")
    flat = " ".join(out.split())
    assert code == 1 and "stale" in flat and "runtime.torch is '2.7.0'" in flat, out
    assert "'2.6.0'" in flat and "an input of the env, plugin, verify stages" in flat
    assert not (build / "bundle").exists()


def test_verify_python_needs_an_install_record(
    cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    make_build(all_stages(project), build)
    python = env_python(tmp_path / "env" / "bin" / "python")
    args = ("--build-dir", str(build), "--json", "verify", "--python", str(python))
    code, out = invoke(cli, project, *args)
    assert code == 1 and "has no install record" in " ".join(out.split()), out
    assert "cached" not in out and _json(out)["ok"] is False
    record = tmp_path / "env" / "share" / "recsdk" / "install.json"
    record.parent.mkdir(parents=True)
    record.write_text("{not json")
    code, out = invoke(cli, project, *args)
    assert code == 1 and "cannot be read" in out and "cached" not in out
    record.write_text(json.dumps({"bundle": "b", "manifest": {"pins": {}}}))
    code, out = invoke(cli, project, *args)
    assert code == 1 and "is malformed" in out and "internal error" not in out


def test_results_of_two_environments_are_kept_apart(tmp_path: Path) -> None:
    paths = BuildPaths(tmp_path)
    a, b = replace(ME, prefix="/envs/a"), replace(ME, prefix="/envs/b")
    assert installed_results(paths, a) != installed_results(paths, b)
    assert installed_results(paths, a) == installed_results(paths, replace(a, path="/x"))


def test_config_ini_keeps_its_mode_and_lines_and_the_record_is_readable(
    cli: CliRunner, project: Path, tmp_path: Path
) -> None:
    archive = _dist(cli, project, tmp_path, "cann")
    top, data = bundle.open_bundle(archive, tmp_path / "unpacked")
    contents = trust.derive(top, data, sorted(bundle.listed(top)))
    opp = tmp_path / "opp"
    config = opp / "vendors" / "config.ini"
    config.parent.mkdir(parents=True)
    config.write_text("# site settings\nload_priority=customize\nextra_key=1\n")
    config.chmod(0o640)
    env = replace(ME, prefix=str(tmp_path / "env"))
    plan = installer.make_plan(top, contents, env, opp=opp, manifest=data)
    local = replace(plan, steps=tuple(s for s in plan.steps if "pip" not in s.argv))
    for _ in range(2):  # twice: the log of the first run is kept
        log = StageLog(installer.log_path(env), UI())
        try:
            installer.execute(local, log)
        finally:
            log.close()
    assert config.read_text() == (
        "# site settings\nload_priority=gather_for_rank1,invert_permute,customize\nextra_key=1\n"
    )
    assert config.stat().st_mode & 0o777 == 0o640
    record = tmp_path / "env" / "share" / "recsdk" / "install.json"
    assert record.stat().st_mode & 0o777 == 0o644
    assert len(list((tmp_path / "env" / "share" / "recsdk" / "logs").glob("install-*.log"))) == 2


def test_a_cann_bundle_needs_a_cann_host(
    cli: CliRunner, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _dist(cli, project, tmp_path, "cann")
    monkeypatch.delenv("ASCEND_OPP_PATH", raising=False)
    monkeypatch.setattr(installer, "find_cann", lambda: None)
    python = env_python(tmp_path / "env" / "bin" / "python")
    code, out = _install(cli, project, archive, python, "--sha256-file", f"{archive}.sha256")
    assert code == 1 and "cann bundle" in out and "no OPP directory" in " ".join(out.split())


def test_status_fails_on_a_changed_artifact(cli: CliRunner, project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    make_build(all_stages(project), build)
    code, out = invoke(cli, project, "--build-dir", str(build), "--json", "status")
    assert code == 0 and _json(out)["ok"] is True
    wheel = next((build / "dist").glob("npu_sim-*.whl"))
    wheel.write_bytes(b"corrupted")
    code, out = invoke(cli, project, "--build-dir", str(build), "--json", "status")
    summary = _json(out)
    assert code == 1 and summary["ok"] is False
    assert summary["damaged"] == {"plugin": [f"dist/{wheel.name}"]}


def test_system_errors_are_one_line_with_json(
    cli: CliRunner, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = tmp_path / "build"
    make_build(all_stages(project), build)
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out = invoke(
        cli, project, "--build-dir", str(build), "--json", "dist", "--out", str(blocker / "x")
    )
    assert code == 1 and "cannot write the bundle" in out and "internal error" not in out
    assert _json(out)["ok"] is False
    # A build directory this user cannot write (no lock can be taken): read without it.

    def refuse(self: BuildLock) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(self.path))

    monkeypatch.setattr(BuildLock, "acquire", refuse)
    code, out = invoke(
        cli, project, "--build-dir", str(build), "dist", "--out", str(tmp_path / "out")
    )
    assert code == 0, out
    [archive] = (tmp_path / "out").glob("*.tar.gz")
    # install --bundle reads no build directory: a read-only one is no concern of it.
    python = env_python(tmp_path / "env" / "bin" / "python")
    code, out = _install(cli, project, archive, python, "--sha256-file", f"{archive}.sha256")
    assert code == 0 and "internal error" not in out, out


def test_install_needs_python(cli: CliRunner, project: Path, tmp_path: Path) -> None:
    archive = _dist(cli, project, tmp_path)
    code, out = invoke(cli, project, "install", "--bundle", str(archive), "--dry-run")
    assert code == 2 and "--python" in out


class _Killed(bundle.Member):
    def read(self) -> bytes:
        os.kill(os.getpid(), signal.SIGTERM)
        return b""


def test_sigterm_during_dist_leaves_no_part_file(tmp_path: Path) -> None:
    release = bundle.Release("r", (bundle.Member("a", b"x"), _Killed("b", b"")), {}, 0)
    with pytest.raises(KeyboardInterrupt), terminate_as_interrupt():
        bundle.write(release, tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored


def test_sigterm_during_install_removes_the_unpacked_bundle(
    cli: CliRunner, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _dist(cli, project, tmp_path)
    python = env_python(tmp_path / "env" / "bin" / "python")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    def killed(_: Any) -> dict[str, bool]:
        assert list(scratch.iterdir())  # the bundle is unpacked by now
        os.kill(os.getpid(), signal.SIGTERM)
        return {}

    monkeypatch.setattr(installer, "environment_has", killed)
    code, out = _install(cli, project, archive, python, "--sha256-file", f"{archive}.sha256")
    assert code == 130 and "interrupted" in out
    assert list(scratch.iterdir()) == []


@pytest.fixture
def gnupg(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], str]]:
    """A throwaway GnuPG home (short path: gpg-agent's socket lives in it); makes keys."""
    home = Path(tempfile.mkdtemp(prefix="g", dir="/tmp"))
    monkeypatch.setenv("GNUPGHOME", str(home))

    def key(uid: str) -> str:
        subprocess.run(
            [*("gpg", "--batch", "--passphrase", "", "--quick-gen-key"), uid, "ed25519", "sign"],
            check=True,
            capture_output=True,
        )
        listed = subprocess.run(
            ["gpg", "--with-colons", "--list-keys", uid], check=True, capture_output=True, text=True
        ).stdout
        return next(line.split(":")[9] for line in listed.splitlines() if line.startswith("fpr"))

    try:
        yield key
    finally:
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], check=False, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.skipif(not shutil.which("gpgv"), reason="GnuPG is not installed")
def test_a_signed_digest_file(
    cli: CliRunner, project: Path, tmp_path: Path, gnupg: Callable[[str], str]
) -> None:
    release = gnupg("release <release@example.invalid>")
    other = gnupg("mallory <mallory@example.invalid>")
    keyring = tmp_path / "release.gpg"
    keyring.write_bytes(
        subprocess.run(["gpg", "--export", release], check=True, capture_output=True).stdout
    )
    build = tmp_path / "build"
    make_build(all_stages(project), build)
    code, out = invoke(cli, project, "--build-dir", str(build), "dist", "--sign-key", release)
    assert code == 0, out
    archive = next((build / "bundle").glob("*.tar.gz"))
    digest, signature = Path(f"{archive}.sha256"), Path(f"{archive}.sha256.asc")
    assert signature.read_text().startswith("-----BEGIN PGP SIGNATURE-----")
    python = env_python(tmp_path / "env" / "bin" / "python")
    trusted = ("--sha256-file", str(digest), "--signature", str(signature))
    code, out = _install(cli, project, archive, python, *trusted, "--keyring", str(keyring))
    assert code == 0 and "good signature" in out, out
    # An armored keyring works the same.
    armored = tmp_path / "release.asc"
    armored.write_bytes(
        subprocess.run(["gpg", "--armor", "--export", release], capture_output=True).stdout
    )
    code, out = _install(cli, project, archive, python, *trusted, "--keyring", str(armored))
    assert code == 0, out
    # A crafted bundle with its own digest file: the release key's signature does not cover it.
    crafted = craft(archive, tmp_path / "crafted.tar.gz", _manifest(_old_torch))
    forged = tmp_path / "forged.sha256"
    forged.write_text(f"{hashlib.sha256(crafted.read_bytes()).hexdigest()}  {archive.name}\n")
    code, out = _install(
        cli,
        project,
        crafted,
        python,
        *("--sha256-file", str(forged), "--signature", str(signature)),
        *("--keyring", str(keyring)),
    )
    assert code == 1 and "not a good signature" in " ".join(out.split()), out
    # Signed, but by a key the keyring does not hold.
    subprocess.run(
        ["gpg", "--batch", "--yes", "--armor", "--local-user", other, "--detach-sign", str(forged)],
        check=True,
        capture_output=True,
    )
    code, out = _install(
        cli,
        project,
        crafted,
        python,
        *("--sha256-file", str(forged), "--signature", f"{forged}.asc"),
        *("--keyring", str(keyring)),
    )
    assert code == 1 and "not a good signature" in " ".join(out.split()), out
    code, out = _install(cli, project, archive, python, *trusted)
    assert code == 2 and "--signature needs --keyring" in out


def test_python_2_is_named_not_called_a_non_interpreter(tmp_path: Path) -> None:
    from recsdk_build.errors import UsageError
    from recsdk_build.interpreters import find

    py2 = tmp_path / "python2.7"
    py2.write_text(
        "#!/bin/sh\n"
        'case "$2" in *implementation*) echo "AttributeError: implementation" >&2; exit 1;;\n'
        '  *) echo "2.7.18";; esac\n'
    )
    py2.chmod(0o755)
    with pytest.raises(UsageError, match=r"is Python 2\.7\.18; recsdk-build needs Python >=3\.10"):
        find(str(py2), requires=">=3.10")


NPU_LOCK_ATTACKS = {
    "another version": (lambda t: t.replace("torch-npu==2.6.0", "torch-npu==2.5.1"), "not"),
    "a pip option": (lambda t: f"--extra-index-url=https://evil.example/simple\n{t}", "line"),
    "unhashed": (lambda t: t + "evilpkg==0.1\n", "is not `name==version --hash"),
    "emptied": (lambda t: "", "not torch-npu==2.6.0 alone"),
}


def test_a_cann_bundle_hash_locks_torch_npu(cli: CliRunner, project: Path, tmp_path: Path) -> None:
    """dist pins torch-npu with the sha256 of the wheel the plugin stage downloaded (the one
    for the build's Python and architecture); install installs it with --require-hashes; a
    rewritten torch-npu.lock is refused by the outer digest, and without it by its checks."""
    archive = _dist(cli, project, tmp_path, "cann")
    [wheel] = (tmp_path / "build" / "downloads" / "torch_npu").glob("torch_npu-2.6.0-*.whl")
    top, data = bundle.open_bundle(archive, tmp_path / "unpacked")
    assert data["install"]["torch_npu_lock"] == "torch-npu.lock"
    contents = trust.derive(top, data, sorted(bundle.listed(top)))
    [npu] = contents.npu_locked
    assert (npu.name, npu.version) == ("torch-npu", "2.6.0")
    assert npu.hashes == (hashlib.sha256(wheel.read_bytes()).hexdigest(),)
    plan = installer.make_plan(
        top, contents, replace(ME, prefix=str(tmp_path / "env")), opp=tmp_path, manifest=data
    )
    argvs = [s.argv for s in plan.steps if "pip" in s.argv]
    assert argvs[1][-5:] == ("install", "--require-hashes", "--no-deps", "-r", "./torch-npu.lock")
    assert not any("torch-npu==2.6.0" in a for argv in argvs for a in argv)  # never unhashed
    assert (
        "pip install --require-hashes --no-deps -r torch-npu.lock"
        in (top / "INSTALL.md").read_text()
    )
    python = env_python(tmp_path / "env" / "bin" / "python")
    for i, (edit, named) in enumerate(NPU_LOCK_ATTACKS.values()):

        def rewrite(top: Path, edit: Callable[[str], str] = edit) -> None:
            path = top / "torch-npu.lock"
            path.write_text(edit(path.read_text()))

        crafted = craft(archive, tmp_path / f"npu{i}.tar.gz", rewrite)
        code, out = _install(cli, project, crafted, python, "--sha256-file", f"{archive}.sha256")
        assert code == 1 and "not the expected" in " ".join(out.split()), out
        ctop, cdata = bundle.open_bundle(crafted, tmp_path / f"c{i}")
        with pytest.raises(BundleError, match=r"torch-npu\.lock") as refused:
            trust.derive(ctop, cdata, sorted(bundle.listed(ctop)))
        assert named in refused.value.message


def test_a_sim_bundle_has_no_torch_npu_lock(cli: CliRunner, project: Path, tmp_path: Path) -> None:
    archive = _dist(cli, project, tmp_path)
    crafted = craft(
        archive,
        tmp_path / "npu.tar.gz",
        lambda top: (top / "torch-npu.lock").write_text("torch-npu==2.6.0 --hash=sha256:00\n"),
    )
    top, data = bundle.open_bundle(crafted, tmp_path / "c")
    with pytest.raises(BundleError, match=r"unexpected file torch-npu\.lock"):
        trust.derive(top, data, sorted(bundle.listed(top)))
