"""A small build directory as the pipeline would leave it, written by hand.

The bundle and install tests need a finished build (every stage recorded, artifacts on disk,
verification passed) but not the hour it takes to make a real one; the wheels are a few bytes
with real file names.
"""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

from recsdk_build.config import load_project
from recsdk_build.interpreters import current
from recsdk_build.pipeline.manifest import Artifact, Manifest, StageRecord
from recsdk_build.stagenames import STAGE_NAMES

COMMIT_TIME = 1738261401  # the synthetic project's torchrec.commit_time

# What the verify stage would lock for the synthetic project's runtime pins (hashes made up).
LOCKED = {
    "torch": "2.6.0",
    "fbgemm-gpu-cpu": "1.1.0",
    "torchmetrics": "1.0.3",
    "tqdm": "4.67.1",
    "numpy": "2.1.3",
}
LOCK_TEXT = "# the verified runtime\n" + "".join(
    f"{name}=={version} --hash=sha256:{hashlib.sha256(name.encode()).hexdigest()}\n"
    for name, version in sorted(LOCKED.items())
)
ENVIRONMENT_TEXT = "".join(f"{n}=={v}\n" for n, v in sorted(LOCKED.items())) + "pytest==8.3.4\n"


def all_stages(project: Path) -> Path:
    """Make the synthetic project declare every stage, as the real one does."""
    toml = project / "recsdk.toml"
    text = toml.read_text()
    start = text.index("[pipeline]")
    end = text.index("[verify]")
    names = ", ".join(f'"{n}"' for n in STAGE_NAMES)
    toml.write_text(text[:start] + f"[pipeline]\nstages = [{names}]\n\n" + text[end:])
    return project


def _file(root: Path, rel: str, content: bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def make_build(project: Path, build: Path, *, target: str = "sim") -> Manifest:
    """Every stage of ``project`` recorded as run, for ``target`` (sim or cann)."""
    me = current()
    tag = me.tag
    native = f"{tag}-{tag}-linux_{me.machine}"
    label = "sim" if target == "sim" else "npu"
    wheels = {
        "plugin": [f"fbgemm_npu_api-1.1.0+{label}-{native}.whl"]
        + ([f"npu_sim-1.1.0+sim-{native}.whl"] if target == "sim" else []),
        "wheels": [
            "torchrec-1.1.0+npu-py3-none-any.whl",
            f"torchrec_embcache-1.1.0+npu-{native}.whl",
        ],
    }
    manifest = Manifest(path=build / "manifest.json")
    manifest.pins = load_project(project).pins_summary()
    manifest.python = me.to_json()
    for name in STAGE_NAMES:
        manifest.stages[name] = StageRecord(
            name=name,
            status="ran",
            fingerprint=hashlib.sha256(name.encode()).hexdigest(),
            started_at="2026-11-23T20:00:00+00:00",
            duration_s=1.0,
        )
    for stage, names in wheels.items():
        for wheel in names:
            path = _file(build, f"dist/{wheel}", f"wheel {wheel}\n".encode())
            manifest.stages[stage].artifacts.append(
                Artifact.of(build, path, kind="wheel", target=target)
            )
    operators = []
    if target == "cann":
        # What the plugin stage downloads for torch_npu's headers: dist hashes it.
        _file(build, f"downloads/torch_npu/torch_npu-2.6.0-{native}.whl", b"torch_npu wheel\n")
        for op in ("gather_for_rank1", "invert_permute"):
            run = _file(build, f"ops/cann/Ascend910B1/packages/mxrec_opp_{op}.run", _installer(op))
            artifact = Artifact.of(build, run, kind="operator-package", target="cann")
            manifest.stages["ops"].artifacts.append(artifact)
            operators.append(
                {
                    "op": op,
                    "target": "cann",
                    "soc": "Ascend910B1",
                    "sha256": artifact.sha256,
                    "package": artifact.path,
                }
            )
    manifest.stages["ops"].outputs = {
        "target": target,
        "soc": "Ascend910B1",
        "operators": operators,
    }
    manifest.stages["plugin"].outputs = {"target": target}
    manifest.stages["fetch"].provenance = {
        "commit": "c" * 40,
        "source_kind": "git",
        "location": str(build),
    }
    manifest.stages["patch"].outputs = {"patches": ["0001-npu.patch"]}
    report = _file(build, "verify/results/junit.xml", b"<testsuites/>\n")
    manifest.stages["verify"].artifacts.append(Artifact.of(build, report, kind="report"))
    for name, text in (("runtime.lock", LOCK_TEXT), ("environment.txt", ENVIRONMENT_TEXT)):
        path = _file(build, f"verify/results/{name}", text.encode())
        manifest.stages["verify"].artifacts.append(Artifact.of(build, path, kind="report"))
    manifest.stages["verify"].outputs = {
        "summary": {"passed": 3, "failed": 0, "errors": 0, "not_run": 1}
    }
    manifest.save()
    return manifest


def _installer(op: str) -> bytes:
    """A stand-in for a makeself operator package: installs vendors/<op> under
    --install-path, as the real ones do."""
    return textwrap.dedent(
        f"""\
        #!/bin/bash
        for arg in "$@"; do
          case "$arg" in --install-path=*) dest="${{arg#--install-path=}}";; esac
        done
        mkdir -p "$dest/vendors/{op}/op_api/lib"
        echo "{op}" > "$dest/vendors/{op}/op_api/lib/libcust_opapi.so"
        """
    ).encode()
