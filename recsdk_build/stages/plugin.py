"""plugin: the torch-side packages for the selected target.

sim: ``npu_sim`` (the simulated ``npu`` device: PrivateUse1 on host memory, ``torch.npu`` and
an ``hccl`` backend), built against the pinned torch in the build environment. Its wheel
carries the ``+sim`` local version, so it can never be mistaken for a hardware build.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from recsdk_build import __version__
from recsdk_build.errors import BuildError
from recsdk_build.pipeline.atomic import new_staging_dir
from recsdk_build.pipeline.manifest import Artifact, StageRecord
from recsdk_build.pipeline.stage import Context, Outcome, Stage, hash_tree
from recsdk_build.toolchain import choose_target

NPU_SIM = Path("packages") / "npu_sim"


def _sources(ctx: Context) -> str:
    root = ctx.project.root / NPU_SIM
    parts = [hash_tree(root / "csrc"), hash_tree(root / "npu_sim", "*.py")]
    parts += [hash_tree(root, name) for name in ("setup.py", "pyproject.toml")]
    return ":".join(parts)


class PluginStage(Stage):
    name = "plugin"
    summary = "torch device and adapter packages for the target"

    def _target(self, ctx: Context) -> str:
        return choose_target(str(ctx.options.extra.get("target", "auto")))

    def inputs(self, ctx: Context) -> dict[str, Any]:
        return {
            "tool": __version__,
            "target": self._target(ctx),
            "env": ctx.output_of("env")["stamp"],
            "npu_sim": _sources(ctx),
        }

    def intact(self, ctx: Context, record: StageRecord) -> bool:
        return bool(record.artifacts) and all(a.intact(ctx.paths.root) for a in record.artifacts)

    def run(self, ctx: Context) -> Outcome:
        target = self._target(ctx)
        if target == "cann":
            raise BuildError(
                "the cann plugin (fbgemm_npu_api against torch_npu) is not implemented yet",
                hint="build with --target sim",
            )
        python = ctx.output_of("env")["python"]
        staging = new_staging_dir(ctx.paths.root, "plugin")
        try:
            src = staging / "npu_sim"
            shutil.copytree(ctx.project.root / NPU_SIM, src,
                            ignore=shutil.ignore_patterns("build", "*.so", "*.egg-info",
                                                          "__pycache__"))
            out = staging / "out"
            with ctx.ui.status("compiling npu_sim against the pinned torch (about a minute)"):
                ctx.require_log().run(
                    [python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                     "--disable-pip-version-check", "-w", out, src],
                    what="building the npu_sim wheel",
                )
            [wheel] = sorted(out.glob("npu_sim-*.whl"))
            if "+sim" not in wheel.name:
                raise BuildError(f"{wheel.name}: a sim artifact must carry +sim in its version")
            ctx.paths.dist.mkdir(parents=True, exist_ok=True)
            for stale in ctx.paths.dist.glob("npu_sim-*.whl"):
                stale.unlink()
            final = ctx.paths.dist / wheel.name
            wheel.replace(final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        artifact = Artifact.of(ctx.paths.root, final, kind="wheel", target="sim")
        ctx.ui.info(f"  {final.name}  sha256 {artifact.sha256[:16]}…")
        return Outcome(
            artifacts=[artifact],
            provenance={"target": target, "built_with": python},
            outputs={"target": target},
            note=f"{target}: {final.name}",
        )
