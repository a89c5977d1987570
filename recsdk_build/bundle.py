"""Release bundles: one ``.tar.gz`` per target, Python and architecture, for a cluster.

``recsdk-<version>-<target>-<cpXY>-<arch>.tar.gz`` (the target of a cann bundle names its SoC:
``recsdk-1.1.0-cann-Ascend910B1-cp310-aarch64.tar.gz``) holds, under one top directory of the same
name: ``wheels/`` (every wheel the build made), ``ops/`` (cann: the ``.run`` operator
packages; sim operators live inside the sim adapter wheel), ``manifest.json`` (what is in the
bundle and how to install it, derived from the build's manifest without times or local
paths), ``INSTALL.md`` (generated from it) and ``SHA256SUMS`` (``sha256sum -c`` format, every
other file). The archive is byte-identical when made again from the same build: entries
sorted, fixed times (the pinned torchrec commit's) and owners, gzip without a name or time.

A build is bundled only when every stage of the project succeeded, every artifact the
manifest records is on disk unchanged, and the verification suite passed.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from recsdk_build import __version__
from recsdk_build.config import Project, RuntimePins
from recsdk_build.errors import BundleError
from recsdk_build.hashing import sha256_file
from recsdk_build.interpreters import Interpreter, wheel_misfits
from recsdk_build.lock import LOCK
from recsdk_build.options import ANY_TARGET, Target, recorded_target
from recsdk_build.pipeline.manifest import Manifest
from recsdk_build.pipeline.outputs import (
    EnvOutput,
    OperatorBuild,
    OpsOutput,
    PatchOutput,
    PluginOutput,
    VerifyOutput,
)

SCHEMA = 1
MANIFEST = "manifest.json"
SUMS = "SHA256SUMS"
INSTALL = "INSTALL.md"
SUFFIX = ".tar.gz"
ENVIRONMENT = "environment.txt"
# cann bundles: torch-npu pinned with the sha256 of its wheel for the bundle's Python and
# architecture (a host verify environment cannot install it, so runtime.lock lacks it).
NPU_LOCK = "torch-npu.lock"


@dataclass(frozen=True)
class Member:
    """One file of a bundle: ``arcname`` relative to its top directory."""

    arcname: str
    data: bytes | None = None  # generated files
    source: Path | None = None  # files of the build directory
    executable: bool = False

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.source is not None
        return self.source.read_bytes()

    def sha256(self) -> str:
        if self.source is not None:
            return sha256_file(self.source)
        import hashlib

        return hashlib.sha256(self.read()).hexdigest()


@dataclass(frozen=True)
class Release:
    """What ``dist`` writes: a name and its files, in archive order."""

    name: str
    members: tuple[Member, ...]
    manifest: dict[str, Any]
    mtime: int


def bundle_name(version: str, target: str, tag: str, machine: str) -> str:
    return f"recsdk-{version}-{target}-{tag}-{machine}"


# --- the build, checked ------------------------------------------------------------------


def _check_complete(project: Project, root: Path, manifest: Manifest, stages: list[str]) -> None:
    """Every stage succeeded and every artifact it recorded is on disk as recorded."""
    if not manifest.path.is_file():
        raise BundleError(
            f"{root} holds no build ({MANIFEST} is missing)",
            hint="run `recsdk-build all` first",
        )
    for name in stages:
        record = manifest.stages.get(name)
        if record is None or record.status == "failed":
            state = "has not run" if record is None else "failed"
            raise BundleError(
                f"the build in {root} is partial: stage '{name}' {state}",
                hint="run `recsdk-build all` first",
            )
        for artifact in record.artifacts:
            if not artifact.intact(root):
                raise BundleError(
                    f"the build in {root} is stale: stage '{name}' recorded {artifact.path}, "
                    "which is missing or no longer matches the manifest",
                    hint=f"run `recsdk-build all` (or `recsdk-build {name} --force`) again",
                )
    if "verify" in stages:
        # A record that does not parse counts as not verified.
        verify = manifest.recorded(VerifyOutput)
        summary = verify.summary if verify is not None else {}
        if summary.get("failed", 1) or summary.get("errors", 1) or not summary.get("passed"):
            raise BundleError(
                f"the build in {root} did not pass verification",
                hint="see `recsdk-build status` and build/verify/results/junit.xml",
            )


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: data}


# Which stages read each group of pins (their fingerprints include them).
_PIN_STAGES = {"runtime": ("env", "plugin", "verify"), "torchrec": ("fetch", "patch", "wheels")}


def _check_pins(project: Project, root: Path, manifest: Manifest, names: list[str]) -> None:
    """The pins the bundle ships (its runtime, INSTALL.md) are the ones the build was made
    and verified with: a pin changed in recsdk.toml since then makes the build stale."""
    recorded, current = _flatten(manifest.pins), _flatten(project.pins_summary())
    changed = sorted(k for k in set(recorded) | set(current) if recorded.get(k) != current.get(k))
    if changed:
        key = changed[0]
        readers = _PIN_STAGES.get(key.split(".")[0], ())
        stages = [n for n in readers if n in names] or names
        raise BundleError(
            f"the build in {root} is stale: recsdk.toml's {key} is {current.get(key)!r}, the "
            f"build was made and verified with {recorded.get(key)!r} "
            f"(an input of the {', '.join(stages)} stage{'s' if len(stages) > 1 else ''})"
            + (f" (and {len(changed) - 1} more pin(s) changed)" if len(changed) > 1 else ""),
            hint="run `recsdk-build all` again before `dist`",
        )


# Inputs that say how a stage was run rather than what it was made from: where the pinned
# commit was fetched from (its blobs are verified whatever the source; the commit and the
# fallback wheel are pins, checked above), and which operators a run chose (--only; a dry
# run is refused by _target). The command line of the build is not recorded, so they
# cannot be recomputed as it had them.
_HOW_RUN = {"fetch": ("source", "fallback_wheel"), "ops": ("only", "dry_run")}


@dataclass(frozen=True)
class StaleInput:
    """A stage whose input differs from the build's record: ``key`` is the input
    (``ops.offsets_range`` one level into a dict), None when the record predates per-input
    digests and only the whole fingerprint can be compared."""

    stage: str
    key: str | None

    def describe(self) -> str:
        if self.key is None:
            return (
                f"stage '{self.stage}': its inputs changed since the build (its record "
                "predates per-input digests, so the input cannot be named)"
            )
        if self.key == "stage_code":
            return f"stage '{self.stage}': its code (recsdk-build) changed since the build"
        return f"stage '{self.stage}': input '{self.key}' changed since the build"


def _build_context(project: Project, root: Path, manifest: Manifest) -> Any:
    """A Context whose options are the build's as its record has them: the interpreter it
    was made for, the target and SoC its ops and plugin stages recorded."""
    import dataclasses

    from recsdk_build.options import PluginOptions, TargetChoice, compute_options
    from recsdk_build.pipeline.stage import BuildPaths, Context
    from recsdk_build.ui import UI

    options = compute_options(dry_run=True, project_root=project.root)
    try:
        python = Interpreter.from_json(manifest.python)
    except (KeyError, TypeError, ValueError, IndexError):
        python = options.python  # _build_python refuses such a record first
    target = _recorded_target(manifest)
    ops = manifest.recorded(OpsOutput)
    soc = (ops.soc if ops is not None else None) or options.ops.soc
    choice = TargetChoice(target.value, target) if target is not None else options.ops.target
    options = dataclasses.replace(
        options,
        ops=dataclasses.replace(options.ops, target=choice, soc=soc, dry_run=False),
        plugin=PluginOptions(target=choice),
        python=python,
    )
    return Context(project, BuildPaths(root), manifest, UI(), options)


def stale_inputs(ctx: Any, stages: list[Any]) -> list[StaleInput]:
    """Every input of ``stages`` (Stage objects, pipeline order) whose digest now differs from
    the build's record, computed as the pipeline computes them (each stage's ``inputs`` and
    its code), reading earlier stages' recorded outputs."""
    from recsdk_build.errors import RecsdkError
    from recsdk_build.pipeline.manifest import input_digests
    from recsdk_build.pipeline.stage import fingerprint, stage_code_digest

    stale: list[StaleInput] = []
    for stage in stages:
        record = ctx.manifest.successful(stage.name)
        if record is None:
            continue  # _check_complete names it
        try:
            inputs = {**stage.inputs(ctx), "stage_code": stage_code_digest(stage)}
        except RecsdkError as exc:
            raise BundleError(
                f"cannot tell whether the build is current: the inputs of stage "
                f"'{stage.name}' cannot be computed: {exc.message}",
                hint=exc.hint or "run `recsdk-build all` again",
            ) from None
        skip = _HOW_RUN.get(stage.name, ())
        if not record.inputs:
            if fingerprint(inputs) != record.fingerprint:
                stale.append(StaleInput(stage.name, None))
            continue
        current = input_digests(inputs)
        changed = sorted(
            key
            for key in set(current) | set(record.inputs)
            if key.split(".")[0] not in skip and current.get(key) != record.inputs.get(key)
        )
        stale += [StaleInput(stage.name, key) for key in changed]
    return stale


def _check_inputs(project: Project, root: Path, manifest: Manifest, names: list[str]) -> None:
    """Every input of every stage the bundle is made from is what the build recorded: a
    kernel, a patch, the verify suite or any file or setting the pipeline fingerprints,
    changed since, makes the build stale (the bundle would not be what was verified)."""
    from recsdk_build.stages.registry import all_stages

    stages = [s for s in all_stages() if s.name in names]
    stale = stale_inputs(_build_context(project, root, manifest), stages)
    if stale:
        first = stale[0]
        more = stale[1:]
        also = ""
        if more:
            named = ", ".join(f"{s.stage}: {s.key}" if s.key else s.stage for s in more[:4]) + (
                ", ..." if len(more) > 4 else ""
            )
            also = f" (also {named})"
        raise BundleError(
            f"the build in {root} is stale: {first.describe()}{also}",
            hint=f"rebuild with `recsdk-build all` (it reruns {first.stage} and the stages "
            "after it) before `dist`",
        )


def runtime_requirements(pins: dict[str, Any], *, with_torch_npu: bool) -> list[str]:
    """The runtime requirement lines of the pins the build recorded (not the checkout's)."""
    try:
        r = dict(pins["runtime"])
        runtime = RuntimePins(**{**r, "extra": tuple(r.get("extra", ()))})
        return runtime.requirements(with_torch_npu=with_torch_npu)
    except (KeyError, TypeError) as exc:
        raise BundleError(
            f"the build's manifest has no usable runtime pins ({exc})",
            hint="run `recsdk-build all` again",
        ) from None


def _build_python(root: Path, manifest: Manifest, wanted: Interpreter | None) -> dict[str, Any]:
    recorded = manifest.python
    if not recorded or "tag" not in recorded:
        raise BundleError(
            f"the manifest in {root} does not say which Python the build is for "
            "(made by an older recsdk-build)",
            hint="run `recsdk-build all` again",
        )
    if wanted is not None and wanted.tag != recorded["tag"]:
        raise BundleError(
            f"--python {wanted.short}: the build in {root} is for {recorded['tag']}, "
            f"not {wanted.tag}",
            hint=f"build for it first: `recsdk-build all --python {wanted.short}`",
        )
    return recorded


def _target(manifest: Manifest) -> Target | None:
    ops = manifest.recorded(OpsOutput)
    if ops is not None and ops.dry_run:
        raise BundleError(
            "the ops stage ran as a dry run: there are no operator packages to bundle",
            hint="run `recsdk-build ops --target cann` without --dry-run",
        )
    return _recorded_target(manifest)


def _recorded_target(manifest: Manifest) -> Target | None:
    """The target the ops or plugin stage recorded; None for a project without either."""
    for kind in (OpsOutput, PluginOutput):
        out = manifest.recorded(kind)
        if out is not None and out.target:
            return recorded_target(out.target)
    return None


def _variant(manifest: Manifest, target: Target | None) -> str:
    """The target as the bundle's name carries it: operator packages are compiled for one SoC,
    so a bundle with them names it (cann-Ascend910B1); sim runs on any."""
    if target is None:
        return ANY_TARGET
    ops = manifest.recorded(OpsOutput)
    if target.ships_operator_packages and ops is not None and ops.soc:
        return f"{target.value}-{ops.soc}"
    return target.value


# --- what goes in ------------------------------------------------------------------------


def collect(
    project: Project,
    root: Path,
    manifest: Manifest,
    stages: list[str],
    *,
    python: Interpreter | None = None,
) -> Release:
    """The bundle of the build in ``root``, or a BundleError naming what is missing or stale.

    ``python`` (--python) must be what the build is for, if given."""
    _check_complete(project, root, manifest, stages)
    _check_pins(project, root, manifest, stages)
    interp = _build_python(root, manifest, python)
    _check_inputs(project, root, manifest, stages)
    target = _target(manifest)
    wheels, packages = [], []
    for name in stages:
        record = manifest.stages[name]
        for artifact in record.artifacts:
            if artifact.kind == "wheel":
                wheels.append(artifact)
            elif artifact.kind == "operator-package":
                packages.append(artifact)
    shim = Interpreter(
        "", tuple(interp["version"]), interp["implementation"], interp["machine"], "", "", ""
    )  # type: ignore[arg-type]
    misfits = wheel_misfits([w.name for w in wheels], shim)
    if misfits:
        raise BundleError(
            f"the build in {root} is stale: {', '.join(misfits)} not built for "
            f"{interp['tag']} {interp['machine']}",
            hint=f"run `recsdk-build all --python {shim.short}` again",
        )
    torchrec = [w for w in wheels if w.name.startswith("torchrec-")]
    others = sorted((w for w in wheels if not w.name.startswith("torchrec-")), key=lambda w: w.name)
    name = bundle_name(
        project.torchrec.version, _variant(manifest, target), interp["tag"], interp["machine"]
    )
    members = [Member(f"wheels/{w.name}", source=root / w.path) for w in [*torchrec, *others]]
    members += _verified(root, manifest, stages)
    needs_torch_npu = target is not None and target.needs_torch_npu
    if needs_torch_npu:
        members.append(_torch_npu_lock(root, manifest, shim))
    operators = _operators(manifest)
    for package in sorted(packages, key=lambda p: p.name):
        members.append(Member(f"ops/{package.name}", source=root / package.path, executable=True))
    files = [{"path": m.arcname, "sha256": m.sha256(), "size": len(m.read())} for m in members]
    data = {
        "schema": SCHEMA,
        "bundle": name,
        "recsdk_build": __version__,
        "target": target.value if target is not None else ANY_TARGET,
        "python": {k: interp[k] for k in ("version", "tag", "implementation", "machine")},
        "pins": manifest.pins,
        "files": files,
        "install": {
            "runtime": runtime_requirements(manifest.pins, with_torch_npu=needs_torch_npu),
            "runtime_lock": LOCK,
            **({"torch_npu_lock": NPU_LOCK} if needs_torch_npu else {}),
            "torchrec": [f"wheels/{w.name}" for w in torchrec],
            "wheels": [f"wheels/{w.name}" for w in others],
            "operator_packages": [
                {"path": f"ops/{Path(op.package).name}", "vendor": op.op}
                for op in operators
                if op.package
            ],
        },
        "build": _provenance(manifest, stages),
    }
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    generated = [Member(MANIFEST, text.encode()), Member(INSTALL, install_md(data).encode())]
    everything = sorted([*members, *generated], key=lambda m: m.arcname)
    sums = "".join(f"{m.sha256()}  {m.arcname}\n" for m in everything)
    return Release(
        name=name,
        members=(*everything, Member(SUMS, sums.encode())),
        manifest=data,
        mtime=project.torchrec.commit_time,
    )


def _verified(root: Path, manifest: Manifest, stages: list[str]) -> list[Member]:
    """The runtime lock and the environment listing the verify stage recorded: what the
    suite ran against, shipped so that install installs exactly that."""
    record = manifest.successful("verify") if "verify" in stages else None
    found = {Path(a.path).name: a for a in record.artifacts} if record is not None else {}
    if LOCK not in found:
        raise BundleError(
            f"the build in {root} has no runtime lock (its verify stage predates it, or the "
            "project has no verify stage): there is no verified runtime to ship",
            hint="run `recsdk-build verify --force` (or `recsdk-build all`)",
        )
    members = [Member(LOCK, source=root / found[LOCK].path)]
    if ENVIRONMENT in found:
        members.append(Member(ENVIRONMENT, source=root / found[ENVIRONMENT].path))
    return members


def _torch_npu_lock(root: Path, manifest: Manifest, python: Interpreter) -> Member:
    """torch-npu at its pin with the sha256 of the wheel pip picks for the bundle's Python and
    architecture: the one the plugin stage downloaded for its headers (build/downloads), else
    downloaded now from the package registry. install checks it with --require-hashes."""
    from recsdk_build.downloads import download_wheel
    from recsdk_build.proc import StageLog
    from recsdk_build.ui import UI

    version = str(manifest.pins.get("runtime", {}).get("torch_npu", ""))
    if not version:
        raise BundleError(
            "the build's manifest pins no torch_npu", hint="run `recsdk-build all` again"
        )
    downloads = root / "downloads" / "torch_npu"
    found = [
        w
        for w in sorted(downloads.glob(f"torch_npu-{version}-*.whl"))
        if not wheel_misfits([w.name], python)
    ]
    if found:
        wheel = found[0]
    else:
        env = manifest.recorded(EnvOutput)
        builder = env.python if env is not None else None
        if not builder or not Path(str(builder)).exists():
            raise BundleError(
                f"no torch_npu {version} wheel for {python.tag} {python.machine} in {downloads} "
                "to hash-lock torch-npu with, and no build environment to download it with",
                hint="run `recsdk-build plugin --force` (it downloads the wheel), then `dist`",
            )
        log = StageLog(root / "logs" / "dist.log", UI())
        try:
            wheel = download_wheel(
                log,
                f"torch-npu=={version}",
                downloads,
                error=BundleError,
                why="its sha256, to hash-lock torch-npu in the cann bundle",
                python=str(builder),
            )
        finally:
            log.close()
        if wheel_misfits([wheel.name], python):
            raise BundleError(
                f"the registry's torch_npu wheel {wheel.name} is not for {python.tag} "
                f"{python.machine}, the bundle's Python",
                hint="make the cann bundle on the architecture it is for",
            )
    text = (
        f"# torch-npu for the cann runtime: the sha256 of {wheel.name}, the wheel pip installs\n"
        "# for this bundle's Python and architecture (runtime.lock, made by a host verify\n"
        "# environment, cannot hold it). pip install --require-hashes --no-deps -r this file.\n"
        f"torch-npu=={version} --hash=sha256:{sha256_file(wheel)}\n"
    )
    return Member(NPU_LOCK, text.encode())


def _recorded_tools(manifest: Manifest) -> dict[str, str]:
    """The versions of the tools that made the build (not the ones running dist)."""
    try:
        tools = json.loads(manifest.path.read_text(encoding="utf-8")).get("tool", {})
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in tools.items() if k in ("recsdk-build", "hatchling", "platform")}


def _operators(manifest: Manifest) -> list[OperatorBuild]:
    ops = manifest.recorded(OpsOutput)
    return list(ops.operators) if ops is not None else []


def _provenance(manifest: Manifest, stages: list[str]) -> dict[str, Any]:
    """What the build was made from and how it was checked: no times, no local paths."""
    out: dict[str, Any] = {
        "fingerprints": {n: manifest.stages[n].fingerprint for n in stages},
        "tool": _recorded_tools(manifest),
    }
    if (fetch := manifest.successful("fetch")) is not None:
        keep = ("commit", "source_kind", "verification", "wheel", "wheel_sha256")
        out["source"] = {k: fetch.provenance[k] for k in keep if k in fetch.provenance}
    if (patch := manifest.recorded(PatchOutput)) is not None:
        out["patches"] = patch.patches
    out["operators"] = [
        {"op": op.op, "soc": op.soc, "sha256": op.sha256, "groups": op.groups}
        for op in _operators(manifest)
    ]
    if (verify := manifest.recorded(VerifyOutput)) is not None:
        summary = verify.summary
        out["verification"] = {
            k: summary.get(k, 0) for k in ("passed", "failed", "errors", "not_run")
        }
    return out


def install_md(data: dict[str, Any]) -> str:
    """INSTALL.md, from the bundle's manifest."""
    name, target = data["bundle"], data["target"]
    py = data["python"]
    inst = data["install"]
    wheels = "\n".join(f"- `{w}`" for w in [*inst["torchrec"], *inst["wheels"]])
    extra = [r for r in inst["runtime"] if r.startswith("torch-npu==")]
    lines = [
        f"# {name}",
        "",
        f"TorchRec {data['pins'].get('torchrec', {}).get('wheel_version', '')} for Ascend NPUs, "
        f"target **{target}**, for CPython {py['version'][0]}.{py['version'][1]} ({py['tag']}) "
        f"on {py['machine']}; made by recsdk-build {data['recsdk_build']}.",
        "",
        "## Install",
        "",
        f"The bundle's own sha256 is in `{name}{SUFFIX}.sha256`, written beside it by `dist` "
        "and published apart from it: check the bundle against that copy, not against "
        "anything inside the bundle.",
        "",
        "With recsdk-build (checks the bundle's sha256, then every file against SHA256SUMS "
        "and every manifest field; `--dry-run` prints the steps):",
        "",
        "```bash",
        f"recsdk-build install --bundle {name}{SUFFIX} --sha256-file {name}{SUFFIX}.sha256 "
        "--python /path/to/env/bin/python",
        "recsdk-build verify --python /path/to/env/bin/python",
        "```",
        "",
        "By hand, with the environment's Python as `python`:",
        "",
        "```bash",
        f"sha256sum -c {name}{SUFFIX}.sha256 && tar xzf {name}{SUFFIX} && cd {name}",
        f"sha256sum -c {SUMS}",
        f"python -m pip install --require-hashes --no-deps -r {LOCK}",
        *([f"python -m pip install --require-hashes --no-deps -r {NPU_LOCK}"] if extra else []),
        "python -m pip install --no-deps --force-reinstall "
        + " ".join([*inst["torchrec"], *inst["wheels"]]),
    ]
    for package in inst["operator_packages"]:
        lines.append(f"bash {package['path']} --quiet --install-path=$ASCEND_OPP_PATH")
    lines.append("```")
    if inst["operator_packages"]:
        vendors = ",".join(p["vendor"] for p in inst["operator_packages"])
        lines += [
            "",
            f"Then put `{vendors}` first in `load_priority=` of "
            "`$ASCEND_OPP_PATH/vendors/config.ini` (keeping the vendors already listed).",
        ]
    lines += [
        "",
        "torchrec is always installed `--no-deps`: every torchrec release requires the CUDA "
        f"`fbgemm-gpu`; `{LOCK}` has `fbgemm-gpu-cpu` instead: the runtime exactly as the "
        "verification suite ran against it, every distribution pinned with the sha256 of its "
        f"file (`{ENVIRONMENT}` lists that whole environment)."
        + (
            f" torch-npu is not in it (no host-only suite can install it): `{NPU_LOCK}` pins "
            "it with the sha256 of the wheel for this bundle's Python and architecture, "
            "taken from the package registry when the bundle was made."
            if extra
            else ""
        ),
        "",
        "## Contents",
        "",
        wheels,
    ]
    if inst["operator_packages"]:
        lines += [f"- `{p['path']}` (vendor `{p['vendor']}`)" for p in inst["operator_packages"]]
    if recorded_target(target) is Target.SIM:
        lines += [
            "",
            "The sim operator libraries are inside the `fbgemm_npu_api` wheel; the `npu` device "
            "is the simulated one of `npu_sim`, which refuses to load next to the real torch_npu.",
        ]
    verification = data["build"].get("verification")
    if verification:
        lines += [
            "",
            f"Verified at build time: {verification['passed']} passed, "
            f"{verification['not_run']} not run.",
        ]
    return "\n".join(lines) + "\n"


# --- writing -----------------------------------------------------------------------------


def _tarinfo(name: str, *, size: int, mode: int, mtime: int, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = mode
    info.mtime = mtime
    info.type = kind
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def write(release: Release, out_dir: Path) -> Path:
    """Write the archive under a temporary name in ``out_dir`` and rename it into place, then
    its detached digest ``<bundle>.sha256`` (``sha256sum -c`` format): what a cluster checks
    the bundle against before opening it (``install --sha256-file``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / f"{release.name}{SUFFIX}"
    fd, tmp = tempfile.mkstemp(prefix=f".{release.name}.", suffix=".part", dir=out_dir)
    try:
        with os.fdopen(fd, "wb") as raw:
            # No file name and a zero time in the gzip header: the bytes depend on content only.
            with (
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
            ):
                _add_all(tar, release)
            raw.flush()
            os.fsync(raw.fileno())
        # mkstemp creates the file 0600; a bundle is handed to other users and machines.
        os.chmod(tmp, 0o644)
        os.replace(tmp, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    digest_file(final).write_text(f"{sha256_file(final)}  {final.name}\n", encoding="utf-8")
    return final


def digest_file(bundle: Path) -> Path:
    """Where ``dist`` writes the bundle's detached sha256."""
    return bundle.with_name(bundle.name + ".sha256")


def _add_all(tar: tarfile.TarFile, release: Release) -> None:
    dirs = sorted(
        {str(p) for m in release.members for p in PurePosixPath(m.arcname).parents if str(p) != "."}
    )
    top = release.name
    entries: list[tuple[str, Member | None]] = [(top, None)]
    entries += [(f"{top}/{d}", None) for d in dirs]
    entries += [(f"{top}/{m.arcname}", m) for m in release.members]
    for arcname, member in sorted(entries, key=lambda e: e[0]):
        if member is None:
            tar.addfile(
                _tarinfo(arcname, size=0, mode=0o755, mtime=release.mtime, kind=tarfile.DIRTYPE)
            )
            continue
        data = member.read()
        mode = 0o755 if member.executable else 0o644
        info = _tarinfo(
            arcname, size=len(data), mode=mode, mtime=release.mtime, kind=tarfile.REGTYPE
        )
        tar.addfile(info, io.BytesIO(data))


# --- reading -----------------------------------------------------------------------------


# Caps on what an archive may unpack to, checked against each entry's header before any of
# its bytes are written: a bundle is a few wheels and operator packages (tens of MB), and a
# small compressed archive must not fill the disk or memory of the node installing it.
MAX_MEMBER = 512 << 20
MAX_TOTAL = 2 << 30
MAX_ENTRIES = 10_000
_CHUNK = 1 << 20


def unpack(bundle: Path, dest: Path) -> tuple[Path, str | None]:
    """Extract ``bundle`` into ``dest``; its top directory, and what is wrong with the archive
    past its last entry (gzip's checksum), if anything. That is reported only after the files
    were checked against SHA256SUMS, which names the file a changed byte landed in. A damaged
    entry is refused naming the entry being read when the damage showed. Entries are copied
    in chunks, within MAX_MEMBER each, MAX_TOTAL together and MAX_ENTRIES in number."""
    current = "(the archive header)"
    total = 0
    try:
        with tarfile.open(bundle, mode="r:gz") as tar:
            members = []
            for info in _iter(tar):
                current = info.name
                if not (info.isfile() or info.isdir()) or _unsafe(info.name):
                    raise BundleError(f"{bundle.name}: refusing the entry {info.name!r}")
                members.append(info)
                if len(members) > MAX_ENTRIES:
                    raise BundleError(
                        f"{bundle.name}: more than {MAX_ENTRIES} entries; refusing the bundle"
                    )
                if info.isfile():
                    total += info.size
                    if info.size > MAX_MEMBER or total > MAX_TOTAL:
                        raise BundleError(
                            f"{bundle.name}: {info.name} unpacks to {info.size} bytes "
                            f"({total} in all so far); a bundle's limit is {MAX_MEMBER} per "
                            f"file and {MAX_TOTAL} in all: refusing the bundle"
                        )
                    _extract(tar, info, dest / info.name)
                else:
                    (dest / info.name).mkdir(parents=True, exist_ok=True)
            trailer = _trailer(tar)
    except FileNotFoundError as exc:
        raise BundleError(f"--bundle {bundle}: no such file") from exc
    except OSError as exc:
        if exc.errno is None:  # gzip's BadGzipFile: the archive, not the system
            raise BundleError(
                f"{bundle.name} is damaged: {current}: {exc}",
                hint="copy the bundle again and compare its sha256 with the published one",
            ) from exc
        raise BundleError(
            f"cannot unpack {bundle.name}: {exc.strerror}: {exc.filename or current}"
        ) from exc
    except (tarfile.TarError, zlib.error, EOFError) as exc:
        raise BundleError(
            f"{bundle.name} is damaged: {current}: {exc}",
            hint="copy the bundle again and compare its sha256 with the published one",
        ) from exc
    tops = {PurePosixPath(m.name).parts[0] for m in members}
    if len(tops) != 1:
        raise BundleError(f"{bundle.name}: expected one top directory, found {sorted(tops)}")
    damage = f"{bundle.name} is damaged after its last entry: {trailer}" if trailer else None
    return dest / tops.pop(), damage


def _extract(tar: tarfile.TarFile, info: tarfile.TarInfo, target: Path) -> None:
    extracted = tar.extractfile(info)
    assert extracted is not None
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        raise BundleError(f"{info.name} appears twice in the archive; refusing the bundle")
    with target.open("wb") as out:
        left = info.size
        while left > 0:
            chunk = extracted.read(min(_CHUNK, left))
            if not chunk:
                raise EOFError(f"{info.name} is truncated")
            out.write(chunk)
            left -= len(chunk)
    target.chmod(0o755 if info.mode & 0o100 else 0o644)


def _trailer(tar: tarfile.TarFile) -> str | None:
    """Read the compressed stream to its end, where gzip checks its CRC."""
    try:
        while tar.fileobj is not None and tar.fileobj.read(1 << 20):
            pass
    except (zlib.error, EOFError, OSError) as exc:
        return str(exc)
    return None


def open_bundle(bundle: Path, dest: Path) -> tuple[Path, dict[str, Any]]:
    """Unpack and check ``bundle``: its top directory and manifest, or a BundleError naming
    the file that does not match SHA256SUMS (or the damage)."""
    top, damage = unpack(bundle, dest)
    data = check_sums(top)
    if damage:
        raise BundleError(damage, hint="copy the bundle again")
    return top, data


def _iter(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    while (info := tar.next()) is not None:
        yield info


def _unsafe(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return name.startswith("/") or ".." in parts


def listed(top: Path) -> dict[str, str]:
    """SHA256SUMS of an unpacked bundle: {path: sha256}, every path a plain relative one."""
    sums_file = top / SUMS
    if not sums_file.is_file():
        raise BundleError(f"{top.name}: {SUMS} is missing; not a recsdk bundle")
    try:
        text = sums_file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"{top.name}: {SUMS} is not UTF-8 text ({exc.reason})") from None
    out: dict[str, str] = {}
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not _HEX.fullmatch(digest) or not name:
            raise BundleError(f"{top.name}: {SUMS} has a malformed line: {line!r}")
        if _unsafe(name) or name == SUMS or name in out or "\\" in name:
            raise BundleError(f"{top.name}: {SUMS} lists {name!r}; refusing the bundle")
        out[name] = digest
    return out


_HEX = re.compile(r"[0-9a-f]{64}")


def check_sums(top: Path) -> dict[str, Any]:
    """Every file of an unpacked bundle against SHA256SUMS (nothing missing, nothing extra,
    no byte changed); the bundle's manifest when all match. Only the top directory's own
    SHA256SUMS is exempt: a file of that name anywhere else is one more file."""
    sums = listed(top)
    present = {p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file()}
    present.discard(SUMS)
    for name in sorted(set(sums) | present):
        if name not in present:
            raise BundleError(f"{top.name}: {name} is listed in {SUMS} but missing")
        if name not in sums:
            raise BundleError(f"{top.name}: {name} is not listed in {SUMS}; refusing it")
        if sha256_file(top / name) != sums[name]:
            raise BundleError(
                f"{top.name}: {name} does not match its sha256 in {SUMS}; refusing the bundle",
                hint="the file was changed or damaged after the bundle was made",
            )
    try:
        data = json.loads((top / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(f"{top.name}: {MANIFEST} cannot be read: {exc}") from exc
    if not isinstance(data, dict):
        raise BundleError(f"{top.name}: {MANIFEST} is not a JSON object")
    return data
