"""dist refuses a build whose inputs changed since it was made (issue 30), naming the stage and
the input: each stage's inputs as the pipeline computes them are compared, one by one, with the
digests its record keeps. On builds the real pipeline made from the synthetic project (fetch,
patch, wheels and verify: about 40 s, once for the module) and a dry run of the ops stage on a
copy of one real kernel."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recsdk_build import bundle
from recsdk_build.config import load_project
from recsdk_build.pipeline.manifest import Manifest, input_digests
from recsdk_build.stages.ops import OpsStage
from recsdk_build.stages.registry import all_stages
from tests.conftest import invoke
from tests.stagehelp import run
from tests.synthetic import make_project, make_upstream

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
OP = "offsets_range"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The synthetic project and the build the pipeline made of it (never changed)."""
    root = tmp_path_factory.mktemp("made")
    project = make_project(root, make_upstream(root))
    build = root / "build"
    run(project, build, "fetch", "patch", "wheels", "verify")
    return project, build


@pytest.fixture
def checkout(made: tuple[Path, Path], tmp_path: Path) -> Path:
    """A copy of the project the build was made from, for one test to change."""
    project, _ = made
    copy = tmp_path / "project"
    shutil.copytree(project, copy)
    return copy


def _dist(cli: CliRunner, project: Path, build: Path, out: Path) -> tuple[int, str]:
    code, text = invoke(cli, project, "--build-dir", str(build), "dist", "--out", str(out))
    return code, " ".join(text.split())


def test_every_record_keeps_the_digest_of_each_input(made: tuple[Path, Path]) -> None:
    _, build = made
    records = Manifest.load(build).stages
    assert "patches.0001-npu-planner.patch" in records["patch"].inputs
    assert {"suite", "coverage", "requirements", "stage_code"} <= set(records["verify"].inputs)
    assert any(k.startswith("wheels.torchrec-1.1.0+npu") for k in records["verify"].inputs)


def test_an_unchanged_build_is_bundled(
    cli: CliRunner, made: tuple[Path, Path], checkout: Path, tmp_path: Path
) -> None:
    _, build = made
    code, out = _dist(cli, checkout, build, tmp_path / "out")
    assert code == 0, out
    assert list((tmp_path / "out").glob("*.tar.gz"))


def test_a_pin_change_is_refused_naming_the_pin_and_stage(
    cli: CliRunner, made: tuple[Path, Path], checkout: Path, tmp_path: Path
) -> None:
    _, build = made
    toml = checkout / "recsdk.toml"
    toml.write_text(toml.read_text().replace('torch = "2.6.0"', 'torch = "2.7.0"', 1))
    code, out = _dist(cli, checkout, build, tmp_path / "out")
    assert code == 1, out
    assert "stale" in out and "runtime.torch is '2.7.0'" in out and "'2.6.0'" in out
    # Of the stages reading runtime pins, this project has verify only.
    assert "(an input of the verify stage)" in out
    assert not (tmp_path / "out").exists()


def test_a_patch_change_is_refused_naming_the_patch(
    cli: CliRunner, made: tuple[Path, Path], checkout: Path, tmp_path: Path
) -> None:
    _, build = made
    patch = checkout / "patches" / "torchrec-1.1.0" / "0001-npu-planner.patch"
    text = patch.read_text()
    assert '"mtia", "npu"]' in text
    patch.write_text(text.replace('"mtia", "npu"]', '"mtia", "npu", "xpu"]'))
    code, out = _dist(cli, checkout, build, tmp_path / "out")
    assert code == 1, out
    assert "stage 'patch': input 'patches.0001-npu-planner.patch' changed since the build" in out
    assert "recsdk-build all" in out
    assert not (tmp_path / "out").exists()


def test_a_verify_suite_or_coverage_change_is_refused(
    cli: CliRunner, made: tuple[Path, Path], checkout: Path, tmp_path: Path
) -> None:
    _, build = made
    (checkout / "data" / "fbgemm_coverage.toml").write_text("# the suite reads this file\n")
    code, out = _dist(cli, checkout, build, tmp_path / "out")
    assert code == 1 and "stage 'verify': input 'coverage' changed since the build" in out, out
    (checkout / "data" / "fbgemm_coverage.toml").unlink()
    test = checkout / "verify" / "test_synthetic.py"
    test.write_text(test.read_text() + "\n\ndef test_one_more():\n    pass\n")
    code, out = _dist(cli, checkout, build, tmp_path / "out")
    assert code == 1 and "stage 'verify': input 'suite' changed since the build" in out, out


def test_a_record_without_input_digests_is_compared_by_its_fingerprint(
    made: tuple[Path, Path], checkout: Path
) -> None:
    """A build recorded before per-input digests: unchanged, it is current; changed, the
    stage is named, and the message says why the input cannot be."""
    _, build = made
    manifest = Manifest.load(build)
    for record in manifest.stages.values():
        record.inputs = {}
    stages = [s for s in all_stages() if s.name in manifest.stages]
    ctx = bundle._build_context(load_project(checkout), build, manifest)
    assert bundle.stale_inputs(ctx, stages) == []
    patch = checkout / "patches" / "torchrec-1.1.0" / "0001-npu-planner.patch"
    patch.write_text(patch.read_text() + "\n")
    ctx = bundle._build_context(load_project(checkout), build, manifest)
    [stale] = bundle.stale_inputs(ctx, stages)
    assert stale == bundle.StaleInput("patch", None)
    assert "cannot be named" in stale.describe()


def test_a_kernel_source_change_is_refused_naming_the_operator(tmp_path: Path) -> None:
    """The ops stage (sim, a dry run: its inputs are those of a real build) on a project
    with one real kernel; a byte of the kernel changed makes exactly that operator's input
    stale, as the pipeline would rebuild it."""
    root = tmp_path / "ops"
    project = make_project(root, make_upstream(root))
    for part in ("common", "sim", "cmake", "cann_cpu_stubs"):
        shutil.copytree(KERNELS / part, project / "kernels" / part)
    shutil.copytree(KERNELS / "ops" / OP, project / "kernels" / "ops" / OP)
    build = root / "build"
    run(project, build, "ops", target="sim", dry_run=True)
    manifest = Manifest.load(build)
    assert f"ops.{OP}" in manifest.stages["ops"].inputs
    ctx = bundle._build_context(load_project(project), build, manifest)
    assert bundle.stale_inputs(ctx, [OpsStage()]) == []
    [source] = sorted((project / "kernels" / "ops" / OP / "op_kernel").glob("*.cpp"))
    source.write_text(source.read_text() + "\n// changed after the build\n")
    stale = bundle.stale_inputs(ctx, [OpsStage()])
    assert stale == [bundle.StaleInput("ops", f"ops.{OP}")]
    assert stale[0].describe() == f"stage 'ops': input 'ops.{OP}' changed since the build"


def test_input_digests_name_one_level_into_dicts() -> None:
    digests = input_digests({"ops": {"a": "1", "b": "2"}, "target": "sim", "none": {}})
    assert sorted(digests) == ["none", "ops.a", "ops.b", "target"]
    assert digests["ops.a"] != input_digests({"ops": {"a": "3", "b": "2"}})["ops.a"]
    assert digests["ops.b"] == input_digests({"ops": {"a": "3", "b": "2"}})["ops.b"]
