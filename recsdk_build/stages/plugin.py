"""plugin: the torch-side packages for the selected target.

sim: ``npu_sim`` (the simulated ``npu`` device: PrivateUse1 on host memory, ``torch.npu`` and
an ``hccl`` backend), built against the pinned torch in the build environment. Its wheel
carries the ``+sim`` local version, so it can never be mistaken for a hardware build.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recsdk_build import __version__
from recsdk_build.errors import BuildError
from recsdk_build.extbuild import build_extension_wheel, package_digest
from recsdk_build.pipeline.manifest import Artifact, StageRecord
from recsdk_build.pipeline.stage import Context, Outcome, Stage
from recsdk_build.toolchain import choose_target

NPU_SIM = Path("packages") / "npu_sim"


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
            "npu_sim": package_digest(ctx.project.root / NPU_SIM),
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
        final = build_extension_wheel(ctx, ctx.project.root / NPU_SIM, what="npu_sim")
        if "+sim" not in final.name:
            raise BuildError(f"{final.name}: a sim artifact must carry +sim in its version")
        artifact = Artifact.of(ctx.paths.root, final, kind="wheel", target="sim")
        ctx.ui.info(f"  {final.name}  sha256 {artifact.sha256[:16]}…")
        return Outcome(
            artifacts=[artifact],
            provenance={"target": target, "built_with": ctx.output_of("env")["python"]},
            outputs={"target": target},
            note=f"{target}: {final.name}",
        )
