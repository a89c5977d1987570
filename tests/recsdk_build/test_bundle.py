"""recsdk-build dist: one reproducible bundle per target, Python and architecture; partial,
stale and unverified builds are refused by name. On hand-written build directories."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recsdk_build import bundle
from recsdk_build.errors import BundleError
from recsdk_build.interpreters import current
from recsdk_build.pipeline.manifest import Manifest
from tests.conftest import invoke
from tests.recsdk_build.fakebuild import COMMIT_TIME, all_stages, make_build
from tests.recsdk_build.test_interpreters import fake_python

ME = current()


@pytest.fixture
def full(project: Path) -> Path:
    return all_stages(project)


def _dist(cli: CliRunner, project: Path, build: Path, *args: str) -> tuple[int, str]:
    return invoke(cli, project, "--build-dir", str(build), "dist", *args)


def _name(target: str) -> str:
    variant = "cann-Ascend910B1" if target == "cann" else target
    return f"recsdk-1.1.0-{variant}-{ME.tag}-{ME.machine}.tar.gz"


def _bundled(cli: CliRunner, full: Path, tmp_path: Path) -> Path:
    """A complete build in tmp_path/build, bundled by `dist`: the bundle's path."""
    build = tmp_path / "build"
    make_build(full, build)
    code, out = _dist(cli, full, build)
    assert code == 0, out
    return build / "bundle" / _name("sim")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_dist_twice_gives_the_same_bytes(cli: CliRunner, full: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    make_build(full, build)
    code, out = _dist(cli, full, build)
    assert code == 0, out
    first = build / "bundle" / _name("sim")
    digest = _sha(first)
    assert first.stat().st_mode & 0o777 == 0o644, "a bundle is readable by whoever installs it"
    # What a cached `all` changes (statuses, times) and file times do not change the bundle.
    manifest = Manifest.load(build)
    for record in manifest.stages.values():
        record.status, record.started_at = "cached", "2026-11-24T08:00:00+00:00"
    manifest.save()
    for path in build.rglob("*"):
        os.utime(path, (1_900_000_000, 1_900_000_000))
    code, out = _dist(cli, full, build, "--out", str(tmp_path / "again"))
    assert code == 0, out
    assert _sha(tmp_path / "again" / _name("sim")) == digest
    assert sorted(p.name for p in (build / "bundle").iterdir()) == [
        _name("sim"),
        _name("sim") + ".sha256",
    ]
    # The detached digest is `sha256sum -c` input for the bundle.
    assert (
        build / "bundle" / (_name("sim") + ".sha256")
    ).read_text() == f"{digest}  {_name('sim')}\n"


def test_the_archive_is_sorted_owned_by_root_and_timeless(
    cli: CliRunner, full: Path, tmp_path: Path
) -> None:
    path = _bundled(cli, full, tmp_path)
    build = path.parents[1]
    raw = path.read_bytes()
    assert raw[4:8] == b"\0\0\0\0" and not raw[3] & 0x08  # no gzip time, no file name
    with tarfile.open(path) as tar:
        infos = tar.getmembers()
        names = [i.name for i in infos]
        assert names == sorted(names)
        assert {(i.uid, i.gid, i.uname, i.mtime) for i in infos} == {(0, 0, "root", COMMIT_TIME)}
        top = _name("sim").removesuffix(".tar.gz")
        files = {
            i.name.removeprefix(top + "/"): tar.extractfile(i).read() for i in infos if i.isfile()
        }
    wheels = sorted(p.name for p in (build / "dist").iterdir())
    assert sorted(files) == sorted(
        [
            "INSTALL.md",
            "SHA256SUMS",
            "manifest.json",
            "runtime.lock",
            "environment.txt",
            *(f"wheels/{w}" for w in wheels),
        ]
    )
    # The runtime as verified, shipped byte for byte.
    assert files["runtime.lock"] == (build / "verify" / "results" / "runtime.lock").read_bytes()
    sums = dict(reversed(line.split("  ")) for line in files["SHA256SUMS"].decode().splitlines())
    assert sums == {n: hashlib.sha256(b).hexdigest() for n, b in files.items() if n != "SHA256SUMS"}
    data = json.loads(files["manifest.json"])
    assert (data["target"], data["python"]["tag"], data["python"]["machine"]) == (
        "sim",
        ME.tag,
        ME.machine,
    )
    assert data["install"]["torchrec"] == ["wheels/torchrec-1.1.0+npu-py3-none-any.whl"]
    assert "torch-npu==2.6.0" not in data["install"]["runtime"]
    assert str(build) not in files["manifest.json"].decode()  # no local paths
    text = files["INSTALL.md"].decode()
    assert f"recsdk-build install --bundle {_name('sim')}" in text
    assert all(w in text for w in wheels) and "sha256sum -c SHA256SUMS" in text
    assert f"--sha256-file {_name('sim')}.sha256" in text
    assert "pip install --require-hashes --no-deps -r runtime.lock" in text


def test_a_cann_bundle_carries_the_operator_packages(
    cli: CliRunner, full: Path, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    make_build(full, build, target="cann")
    assert _dist(cli, full, build)[0] == 0
    top, data = bundle.open_bundle(build / "bundle" / _name("cann"), tmp_path / "x")
    assert data["install"]["operator_packages"] == [
        {"path": "ops/mxrec_opp_gather_for_rank1.run", "vendor": "gather_for_rank1"},
        {"path": "ops/mxrec_opp_invert_permute.run", "vendor": "invert_permute"},
    ]
    assert os.access(top / "ops" / "mxrec_opp_invert_permute.run", os.X_OK)
    assert "torch-npu==2.6.0" in data["install"]["runtime"]
    assert "load_priority" in (top / "INSTALL.md").read_text()


@pytest.mark.parametrize("how", ["not run", "failed"])
def test_a_partial_build_is_refused_naming_the_stage(
    cli: CliRunner, full: Path, tmp_path: Path, how: str
) -> None:
    build = tmp_path / "build"
    manifest = make_build(full, build)
    if how == "not run":
        del manifest.stages["wheels"]
    else:
        manifest.stages["wheels"].status = "failed"
    manifest.save()
    code, out = _dist(cli, full, build)
    assert code == 1
    assert "partial: stage 'wheels'" in out and "Traceback" not in out
    assert not (build / "bundle").exists() or not list((build / "bundle").iterdir())


def test_a_stale_build_is_refused_naming_stage_and_file(
    cli: CliRunner, full: Path, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    make_build(full, build)
    wheel = next((build / "dist").glob("npu_sim-*.whl"))
    wheel.write_bytes(wheel.read_bytes() + b"!")
    code, out = _dist(cli, full, build)
    assert code == 1
    assert "stale: stage 'plugin'" in " ".join(out.split()) and wheel.name in out


def test_an_unverified_build_is_refused(cli: CliRunner, full: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    manifest = make_build(full, build)
    manifest.stages["verify"].outputs["summary"]["failed"] = 2
    manifest.save()
    code, out = _dist(cli, full, build)
    assert code == 1 and "did not pass verification" in out


def test_dist_python_must_be_the_builds(cli: CliRunner, full: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    make_build(full, build)
    other = fake_python(tmp_path / "py" / "bin" / "python", (3, 99, 0))
    code, out = _dist(cli, full, build, "--python", str(other))
    assert code == 1
    assert f"is for {ME.tag}, not cp399" in " ".join(out.split())
    assert _dist(cli, full, build, "--python", ME.path)[0] == 0


def test_no_bundle_without_a_manifest(full: Path, tmp_path: Path) -> None:
    from recsdk_build.config import load_project

    with pytest.raises(BundleError, match="holds no build"):
        bundle.collect(load_project(full), tmp_path, Manifest.load(tmp_path), ["fetch"])


def test_a_changed_byte_is_named_by_file_or_as_damage(
    cli: CliRunner, full: Path, tmp_path: Path
) -> None:
    path = _bundled(cli, full, tmp_path)
    # Inside one file: SHA256SUMS names it.
    top, _ = bundle.open_bundle(path, tmp_path / "ok")
    victim = next((top / "wheels").glob("npu_sim-*.whl"))
    data = bytearray(victim.read_bytes())
    data[3] ^= 0x01
    victim.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=rf"wheels/{re.escape(victim.name)} does not match"):
        bundle.check_sums(top)
    # In the compressed stream: refused, whatever the byte hit.
    for offset in (20, len(path.read_bytes()) // 2, len(path.read_bytes()) - 6):
        raw = bytearray(path.read_bytes())
        raw[offset] ^= 0xFF
        damaged = tmp_path / f"damaged-{offset}.tar.gz"
        damaged.write_bytes(bytes(raw))
        with pytest.raises(BundleError, match=r"damaged|does not match|missing|not listed"):
            bundle.open_bundle(damaged, tmp_path / f"out-{offset}")
    assert gzip.decompress(path.read_bytes())  # the original is intact


def test_a_build_without_a_runtime_lock_is_refused(
    cli: CliRunner, full: Path, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    manifest = make_build(full, build)
    verify = manifest.stages["verify"]
    verify.artifacts = [a for a in verify.artifacts if not a.path.endswith("runtime.lock")]
    manifest.save()
    code, out = _dist(cli, full, build)
    assert code == 1 and "has no runtime lock" in " ".join(out.split())
