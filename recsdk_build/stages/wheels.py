"""wheels: ``torchrec-<version>+npu-py3-none-any.whl`` from the patched tree.

The wheel is built by a standard PEP 517 backend (hatchling, pinned) from a build directory
that this stage assembles: the package modules of the patched commit, a generated
``torchrec/version.py`` and our own ``pyproject.toml``. Version and requirements are set here,
never by editing upstream files, and the build is reproducible: file times come from
SOURCE_DATE_EPOCH (the baseline commit's time) and entries are sorted.
"""

from __future__ import annotations

import fnmatch
import io
import shutil
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path, PurePosixPath
from typing import Any

from recsdk_build import gitutil
from recsdk_build.errors import BuildError
from recsdk_build.extbuild import build_extension_wheel, package_digest
from recsdk_build.pipeline.atomic import new_staging_dir
from recsdk_build.pipeline.manifest import Artifact, StageRecord, tool_versions
from recsdk_build.pipeline.outputs import (
    EnvOutput,
    FetchOutput,
    PatchOutput,
    StageOutput,
    WheelsOutput,
)
from recsdk_build.pipeline.stage import Context, Outcome, Stage

# setuptools.find_packages(exclude=...) patterns of torchrec's own setup.py: the wheel ships
# the same modules whichever way the source arrived (git clone or verified registry wheel).
EXCLUDED_PACKAGES = ("*tests", "*test", "examples", "*examples.*", "*benchmarks", "*build", "*rfc")
PACKAGE = "torchrec"


def package_files(paths: list[str]) -> list[str]:
    """The .py files setuptools would ship: modules of packages not excluded.

    Mirrors find_packages: a directory is a package only if it and every parent up to the top
    package has an __init__.py; excluded packages are skipped but their subpackages are
    still considered, exactly as setuptools does.
    """
    inits = {str(PurePosixPath(p).parent) for p in paths if p.endswith("/__init__.py")}

    def is_package(directory: PurePosixPath) -> bool:
        parts = directory.parts
        return all("/".join(parts[: i + 1]) in inits for i in range(len(parts)))

    def excluded(directory: PurePosixPath) -> bool:
        dotted = ".".join(directory.parts)
        return any(fnmatch.fnmatchcase(dotted, pattern) for pattern in EXCLUDED_PACKAGES)

    selected = []
    for path in paths:
        pure = PurePosixPath(path)
        if pure.suffix != ".py" or pure.parts[0] != PACKAGE:
            continue
        if is_package(pure.parent) and not excluded(pure.parent):
            selected.append(path)
    return sorted(selected)


def _pyproject(ctx: Context) -> str:
    t = ctx.project.torchrec
    deps = ",\n".join(f'    "{r}"' for r in t.requires)
    return f"""[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "torchrec"
version = "{t.wheel_version}"
description = "TorchRec {t.version} with the recsdk-build NPU patch series \
(pytorch/torchrec@{t.commit[:12]})"
readme = "README.md"
requires-python = "{t.requires_python}"
license = "BSD-3-Clause"
license-files = ["LICENSE"]
keywords = ["pytorch", "recommendation systems", "sharding", "ascend", "npu"]
dependencies = [
{deps},
]

[project.urls]
Source = "{t.repository.removesuffix(".git")}"

[tool.hatch.build.targets.wheel]
packages = ["torchrec"]
"""


def _readme(ctx: Context, series: str, patches: list[str]) -> str:
    t = ctx.project.torchrec
    listed = "\n".join(f"- {p}" for p in patches) or "- (none)"
    return (
        f"# torchrec {t.wheel_version}\n\n"
        f"TorchRec {t.version} (pytorch/torchrec@{t.commit}) with the NPU patch series of "
        f"recsdk-build applied (series sha256 {series}).\n\nPatches:\n{listed}\n"
    )


class WheelsStage(Stage):
    name = "wheels"
    summary = "build the torchrec+npu wheel and the extension package wheels"
    produces = WheelsOutput

    def requires(self, ctx: Context) -> tuple[type[StageOutput], ...]:
        # The build environment only when there are extension packages to compile in it.
        env = (EnvOutput,) if ctx.project.extension_packages else ()
        return (FetchOutput, PatchOutput, *env)

    def inputs(self, ctx: Context) -> dict[str, Any]:
        t = ctx.project.torchrec
        return {
            "patched_commit": ctx.output(PatchOutput).patched_commit,
            "version": t.wheel_version,
            "requires": list(t.requires),
            "requires_python": t.requires_python,
            "hatchling": tool_versions()["hatchling"],
            "python": sys.version_info[:2],  # builds the torchrec wheel
            "target_python": ctx.options.python.tag,  # the extension wheels' interpreter
            "extensions": {p.name: package_digest(p) for p in ctx.project.extension_packages},
            "extension_shared": (
                package_digest(ctx.project.extension_shared)
                if ctx.project.extension_shared is not None
                else None
            ),
            "env": ctx.output(EnvOutput).stamp if ctx.project.extension_packages else None,
        }

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        return bool(record.artifacts) and all(a.intact(ctx.paths.root) for a in record.artifacts)

    def run(self, ctx: Context) -> Outcome:
        patch_out = ctx.output(PatchOutput)
        baseline = ctx.output(FetchOutput).baseline_commit
        patched = patch_out.patched_commit
        repo = gitutil.open_repo(ctx.paths.source)
        epoch = int(repo.git.show("-s", "--format=%ct", baseline))
        staging = new_staging_dir(ctx.paths.root, "wheels")
        try:
            src = staging / "src"
            count = self._assemble(ctx, repo, patched, src, patch_out)
            out = staging / "out"
            with ctx.ui.status("building the torchrec wheel (PEP 517, hatchling)"):
                ctx.require_log().run(
                    [
                        sys.executable,
                        "-m",
                        "build",
                        "--wheel",
                        "--no-isolation",
                        "--outdir",
                        out,
                        src,
                    ],
                    env={"SOURCE_DATE_EPOCH": str(epoch), "PYTHONHASHSEED": "0"},
                    what="building the torchrec wheel",
                )
            wheel = self._check_wheel(ctx, out, count)
            ctx.paths.dist.mkdir(parents=True, exist_ok=True)
            final = ctx.paths.dist / wheel.name
            for stale in ctx.paths.dist.glob("torchrec-*.whl"):
                if stale.name != wheel.name:
                    stale.unlink()
            wheel.replace(final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        artifact = Artifact.of(ctx.paths.root, final, kind="wheel", target="any")
        ctx.ui.info(f"  {final.name}  sha256 {artifact.sha256[:16]}…  ({count} modules)")
        extensions = [self._extension(ctx, package) for package in ctx.project.extension_packages]
        return Outcome(
            artifacts=[artifact, *extensions],
            provenance={
                "from_commit": patched,
                "baseline_commit": baseline,
                "source_date_epoch": epoch,
                "modules": count,
                "backend": f"hatchling {tool_versions()['hatchling']}",
            },
            outputs=WheelsOutput(torchrec_wheel=artifact.path),
            note=final.name,
        )

    def _extension(self, ctx: Context, package: Path) -> Artifact:
        final = build_extension_wheel(
            ctx.require_log(),
            ctx.output(EnvOutput).python,
            package,
            build_root=ctx.paths.root,
            dist=ctx.paths.dist,
            what=package.name,
            shared=ctx.project.extension_shared,
        )
        artifact = Artifact.of(ctx.paths.root, final, kind="wheel", target="native")
        ctx.ui.info(f"  {final.name}  sha256 {artifact.sha256[:16]}…")
        return artifact

    def _assemble(
        self, ctx: Context, repo: Any, commit: str, src: Path, patch_out: PatchOutput
    ) -> int:
        """Write the package modules of ``commit`` (not the working tree) into ``src``."""
        blob = repo.git.execute(["git", "archive", "--format=tar", commit], stdout_as_string=False)
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            members = {m.name: m for m in tar.getmembers() if m.isfile()}
            chosen = package_files(list(members))
            if not chosen:
                raise BuildError(f"the patched tree {commit[:12]} has no {PACKAGE} package")
            for name in chosen:
                data = tar.extractfile(members[name])
                assert data is not None
                target = src / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data.read())
                target.chmod(0o644)
            license_member = members.get("LICENSE")
            if license_member is None:
                raise BuildError(f"the patched tree {commit[:12]} has no LICENSE file")
            lic = tar.extractfile(license_member)
            assert lic is not None
            (src / "LICENSE").write_bytes(lic.read())
        t = ctx.project.torchrec
        # Nothing here names the patched commit id: it differs between a git clone and the
        # registry fallback while the content is identical, and so must the wheel be.
        series = patch_out.series_digest
        patches = patch_out.patches
        # torchrec/__init__.py imports __version__ and github_version from .version.
        (src / PACKAGE / "version.py").write_text(
            f'__version__ = "{t.wheel_version}"\n'
            f'git_version = "{t.commit}"\n'
            f'github_version = "{t.commit}"\n'
            f'patch_series = "{series}"\n'
            f"patches = {patches!r}\n",
            encoding="utf-8",
        )
        (src / "pyproject.toml").write_text(_pyproject(ctx), encoding="utf-8")
        (src / "README.md").write_text(_readme(ctx, series, patches), encoding="utf-8")
        return len(chosen) + 1

    def _check_wheel(self, ctx: Context, out: Path, modules: int) -> Path:
        t = ctx.project.torchrec
        wheels = sorted(out.glob("*.whl"))
        expected = f"torchrec-{t.wheel_version}-py3-none-any.whl"
        if [w.name for w in wheels] != [expected]:
            raise BuildError(f"expected {expected}, the build produced {[w.name for w in wheels]}")
        with zipfile.ZipFile(wheels[0]) as zf:
            meta_name = f"torchrec-{t.wheel_version}.dist-info/METADATA"
            meta = Parser().parsestr(zf.read(meta_name).decode())
            shipped = [n for n in zf.namelist() if n.startswith(f"{PACKAGE}/")]
        if meta["Version"] != t.wheel_version:
            raise BuildError(f"wheel metadata says version {meta['Version']}")
        requires = meta.get_all("Requires-Dist") or []
        if any(r.split()[0].split("=")[0].lower() == "fbgemm-gpu" for r in requires):
            raise BuildError("the wheel requires the CUDA fbgemm-gpu; refusing to ship it")
        if len(shipped) != modules:
            raise BuildError(f"wheel has {len(shipped)} package files, expected {modules}")
        return wheels[0]
