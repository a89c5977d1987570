"""The `recsdk-build` command line."""

from __future__ import annotations

import errno
import json
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from recsdk_build import __version__, bundle, trust
from recsdk_build import install as installer
from recsdk_build.config import Project, load_project
from recsdk_build.doctor import doctor_report
from recsdk_build.errors import BundleError, RecsdkError, UsageError
from recsdk_build.hashing import sha256_file
from recsdk_build.options import TARGETS, Options, compute_options
from recsdk_build.pipeline.atomic import clear_staging
from recsdk_build.pipeline.housekeeping import clean_build, status_report
from recsdk_build.pipeline.lock import BuildLock
from recsdk_build.pipeline.manifest import Manifest
from recsdk_build.pipeline.runner import StageReport, report_table, run_stages
from recsdk_build.pipeline.stage import BuildPaths, Context, Stage
from recsdk_build.signals import terminate_as_interrupt
from recsdk_build.stages import patch as patch_stage
from recsdk_build.stages.registry import all_stages, project_stages, resolve
from recsdk_build.stages.verify import verify_installed
from recsdk_build.ui import UI

HELP = """\
Build TorchRec for Huawei Ascend NPUs from pinned, verified sources.

`recsdk-build all` runs every stage in order: fetch (torchrec at the pinned commit, verified),
patch (the NPU patch series, one commit per patch), ops (the AscendC operators), env (the
pinned build environment), plugin (the npu device and operator adapter), wheels
(torchrec-1.1.0+npu and the extension packages) and verify (install into a fresh environment
and run the verification suite). Unchanged stages are skipped; each stage can also be run on
its own.

Pins live in recsdk.toml; outputs, logs (build/logs/STAGE.log) and build/manifest.json in the
build directory. `--target` (ops, plugin): cann where the Ascend toolkit is found, else sim
(compiled against the AscendC emulation, run on a simulated npu device).
"""

app = typer.Typer(
    help=HELP,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
)
patch_app = typer.Typer(
    help="The torchrec patch series: apply it, check it, or rewrite it from the source tree.",
    no_args_is_help=True,
)
app.add_typer(patch_app, name="patch")


@dataclass
class Globals:
    project_dir: Path | None
    build_dir: Path | None
    ui: UI


def _globals(ctx: typer.Context) -> Globals:
    obj = ctx.find_root().obj
    assert isinstance(obj, Globals)
    return obj


@app.callback()
def _main(
    ctx: typer.Context,
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            help="The recsdk-build checkout (default: found from the current "
            "directory upwards by its recsdk.toml).",
            file_okay=False,
        ),
    ] = None,
    build_dir: Annotated[
        Path | None,
        typer.Option(
            "--build-dir",
            help="Where outputs, logs and the manifest go (default: PROJECT/build).",
            file_okay=False,
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Stream tool output and show tracebacks.")
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print a machine-readable summary on stdout (for CI).")
    ] = False,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"recsdk-build {__version__}")
        raise typer.Exit()
    ctx.obj = Globals(project, build_dir, UI(verbose=verbose, json_mode=json_out))


# --- shared plumbing ---------------------------------------------------------------------


def _context(g: Globals, options: Options | None = None) -> Context:
    project: Project = load_project(g.project_dir)
    root = (g.build_dir or project.root / "build").resolve()
    paths = BuildPaths(root)
    return Context(project, paths, Manifest.load(root), g.ui, options or _options(g))


def _options(g: Globals, **words: Any) -> Options:
    """compute_options with what only the project knows: the supported Pythons
    (runtime.python) and the interpreter the build directory was made for (the default of
    --python, so stages run one by one agree with the build)."""
    project = load_project(g.project_dir)
    root = (g.build_dir or project.root / "build").resolve()
    return compute_options(
        **words,
        project_root=project.root,
        python_requires=project.runtime.python,
        python_recorded=Manifest.load(root).python,
    )


def _build_root(g: Globals) -> Path:
    """The build directory, also where no project can be loaded (doctor runs anywhere)."""
    if g.build_dir is not None:
        return g.build_dir.resolve()
    try:
        return (load_project(g.project_dir).root / "build").resolve()
    except RecsdkError:
        return (Path.cwd() / "build").resolve()


def _guarded(g: Globals, action: Callable[[], dict[str, Any]]) -> None:
    """Run ``action``; turn expected errors into one clear message and an exit code."""
    started = time.monotonic()
    try:
        summary = action()
    except RecsdkError as exc:
        reports: list[StageReport] = getattr(exc, "reports", [])
        if reports:
            g.ui.console.print(report_table(reports))
        g.ui.error(exc.message, exc.hint)
        if g.ui.verbose:
            g.ui.console.print(traceback.format_exc(), markup=False)
        _emit_json(g, {"ok": False, "error": exc.message, "stages": _rows(reports)})
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        g.ui.error("interrupted; outputs of the interrupted stage were not installed")
        _emit_json(g, {"ok": False, "error": "interrupted"})
        raise typer.Exit(130) from None
    except OSError as exc:  # the system refused (permissions, a full or read-only disk)
        where = f": {exc.filename}" if exc.filename else ""
        message = f"{exc.strerror or exc}{where}"
        g.ui.error(message, "check the permissions and free space of that path")
        if g.ui.verbose:
            g.ui.console.print(traceback.format_exc(), markup=False)
        _emit_json(g, {"ok": False, "error": message})
        raise typer.Exit(1) from None
    except Exception as exc:  # a bug, not a user mistake: say so and keep the detail
        message = f"internal error: {type(exc).__name__}: {exc}"
        g.ui.error(message, "this is a recsdk-build bug; rerun with --verbose for the traceback")
        if g.ui.verbose:
            g.ui.console.print(traceback.format_exc(), markup=False)
        _emit_json(g, {"ok": False, "error": message})
        raise typer.Exit(70) from None
    summary.setdefault("ok", True)
    summary["seconds"] = round(time.monotonic() - started, 3)
    _emit_json(g, summary)
    if summary["ok"] is False:
        raise typer.Exit(1)


def _emit_json(g: Globals, summary: dict[str, Any]) -> None:
    if g.ui.json_mode:
        sys.stdout.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")


def _rows(reports: list[StageReport]) -> list[dict[str, Any]]:
    return [
        {"stage": r.name, "status": r.status, "seconds": round(r.seconds, 3), "note": r.note}
        for r in reports
    ]


def _run(
    g: Globals, stages: list[Stage] | None, force: set[str], options: Options
) -> dict[str, Any]:
    """Run ``stages`` (None: every stage of the project) under the build lock."""
    ctx = _context(g, options)
    if stages is None:
        stages = project_stages(ctx.project)
    with BuildLock(ctx.paths.root):
        clear_staging(ctx.paths.root)
        reports = run_stages(ctx, stages, force)
    g.ui.console.print(report_table(reports))
    g.ui.info(f"manifest: {ctx.manifest.path}")
    return {"stages": _rows(reports), "manifest": str(ctx.manifest.path)}


def _stage(name: str) -> Stage:
    return next(s for s in all_stages() if s.name == name)


ForceOpt = Annotated[bool, typer.Option("--force", help="Run even if the inputs are unchanged.")]
SourceOpt = Annotated[
    str | None,
    typer.Option(
        "--source",
        help="Where to get torchrec instead of the pinned repository: a git URL, a "
        "local clone, a bare repository, a git bundle, or a torchrec .whl (verified file by file).",
    ),
]
NoFallbackOpt = Annotated[
    bool,
    typer.Option(
        "--no-fallback",
        help="Fail instead of falling back to the verified registry wheel when "
        "the repository cannot be reached.",
    ),
]
DiscardOpt = Annotated[
    bool,
    typer.Option(
        "--discard-local",
        help="Allow replacing a source tree that has local edits or commits "
        "(they stay reachable in git's reflog).",
    ),
]
TargetOpt = Annotated[
    str,
    typer.Option(
        "--target",
        help="cann (Ascend toolkit), sim (host emulation) or auto: cann when the toolkit is "
        "found, else sim.",
    ),
]
SocOpt = Annotated[
    str | None,
    typer.Option("--soc", help="Ascend SoC the operators are built for (default Ascend910B1)."),
]
AscendcHeadersOpt = Annotated[
    Path | None,
    typer.Option(
        "--ascendc-headers",
        help="AscendC API headers (an asc-devkit tree or a CANN install) every kernel is "
        "type-checked against before it is built. Default: $ASCEND_HOME_PATH, else "
        "../shared/ascendc/asc-devkit beside the project; with none the check is reported "
        "as not run.",
        metavar="DIR",
    ),
]
PythonOpt = Annotated[
    str | None,
    typer.Option(
        "--python",
        help="The Python to build and verify for: an interpreter's path, or a version "
        "(3.10) found as pythonX.Y on PATH or in pyenv. Default: the one this build directory "
        "was made for, else the one running recsdk-build.",
        metavar="PATH|VERSION",
    ),
]
FreshEnvOpt = Annotated[
    bool,
    typer.Option(
        "--fresh-env",
        help="Recreate the verify environment from nothing instead of reusing its "
        "pinned runtime layer.",
    ),
]


# --- commands ------------------------------------------------------------------------------


@app.command("all")
def all_cmd(
    ctx: typer.Context,
    force: Annotated[
        list[str] | None,
        typer.Option(
            "--force",
            help="Rerun this stage even if unchanged (repeatable; 'all' for every stage).",
            metavar="STAGE",
        ),
    ] = None,
    source: SourceOpt = None,
    no_fallback: NoFallbackOpt = False,
    discard_local: DiscardOpt = False,
    fresh_env: FreshEnvOpt = False,
    target: TargetOpt = "auto",
    python: PythonOpt = None,
    soc: SocOpt = None,
    ascendc_headers: AscendcHeadersOpt = None,
) -> None:
    """Run every stage in order, skipping those whose inputs are unchanged."""
    g = _globals(ctx)

    def action() -> dict[str, Any]:
        forced = resolve(force or [], option="--force")
        options = _options(
            g,
            python=python,
            source=source,
            fallback=not no_fallback,
            discard_local=discard_local,
            fresh_env=fresh_env,
            target=target,
            soc=soc,
            ascendc_headers=str(ascendc_headers) if ascendc_headers else None,
        )
        return _run(g, None, forced, options)

    _guarded(g, action)


@app.command()
def fetch(
    ctx: typer.Context,
    force: ForceOpt = False,
    source: SourceOpt = None,
    no_fallback: NoFallbackOpt = False,
    discard_local: DiscardOpt = False,
) -> None:
    """Fetch torchrec at the pinned commit into build/src/torchrec and verify it.

    Tries the pinned git repository (shallow); when it cannot be reached, falls back to the
    registry wheel and accepts it only if every file's git blob id equals the pinned commit's.
    """
    g = _globals(ctx)
    _guarded(
        g,
        lambda: _run(
            g,
            [_stage("fetch")],
            {"fetch"} if force else set(),
            _options(g, source=source, fallback=not no_fallback, discard_local=discard_local),
        ),
    )


@app.command()
def ops(
    ctx: typer.Context,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only",
            help="Operators or groups (e.g. jagged, sparse, tbe, hstu) to build; repeatable or "
            "comma-separated. Default: every operator.",
            metavar="NAMES",
        ),
    ] = None,
    target: TargetOpt = "auto",
    soc: SocOpt = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            help="Operators built (and type-checked) in parallel (default: every CPU).",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Write the generated projects, print the exact build commands, compile nothing.",
        ),
    ] = False,
    ascendc_headers: AscendcHeadersOpt = None,
    force: ForceOpt = False,
) -> None:
    """Build the AscendC operators of kernels/ops.

    cann: mxrec_opp_OP.run per operator, built by the CANN toolkit and installed into a
    staging OPP tree. sim: mxrec_opp_OP_sim.so, the same kernels compiled against the host
    emulation of AscendC (only operators whose sources changed are rebuilt). Both targets
    first check every kernel by CANN's rules: tiling keys as CANN's operator compiler accepts
    them, and every dtype variant type-checked against the real AscendC headers
    (--ascendc-headers), or reported as not run when there are none.
    """
    g = _globals(ctx)

    def action() -> dict[str, Any]:
        options = _options(
            g,
            target=target,
            soc=soc,
            only=only,
            jobs=jobs,
            dry_run=dry_run,
            ascendc_headers=str(ascendc_headers) if ascendc_headers else None,
        )
        return _run(g, [_stage("ops")], {"ops"} if force else set(), options)

    _guarded(g, action)


@patch_app.command("apply")
def patch_apply(
    ctx: typer.Context, force: ForceOpt = False, discard_local: DiscardOpt = False
) -> None:
    """Apply the series to the fetched tree, one commit per patch.

    The series is checked in a scratch worktree first; on any failure the tree stays at the
    baseline and the error names the patch, file and hunk.
    """
    g = _globals(ctx)
    _guarded(
        g,
        lambda: _run(
            g,
            [_stage("patch")],
            {"patch"} if force else set(),
            _options(g, discard_local=discard_local),
        ),
    )


@patch_app.command("check")
def patch_check(ctx: typer.Context) -> None:
    """Verify that the whole series applies to a fresh baseline tree (builds nothing)."""
    g = _globals(ctx)

    def action() -> dict[str, Any]:
        c = _context(g)
        with BuildLock(c.paths.root):
            results = patch_stage.check_series(c)
        table = Table(
            title=f"patch series {c.project.torchrec.patches.name}: all apply", title_justify="left"
        )
        for col in ("patch", "files", "+", "-"):
            table.add_column(col)
        for r in results:
            table.add_row(r.name, str(len(r.files)), str(r.added), str(r.removed))
        g.ui.console.print(table)
        return {"patches": [r.name for r in results]}

    _guarded(g, action)


@patch_app.command("refresh")
def patch_refresh(ctx: typer.Context) -> None:
    """Rewrite the patch files from the commits after the baseline in build/src/torchrec.

    The maintainer workflow: edit the tree, `git commit --amend` (or rebase) so each commit is
    one concern with a subject `CONCERN: SUMMARY`, then refresh. The series is then
    re-applied so the tree matches what a fresh build produces.
    """
    g = _globals(ctx)

    def action() -> dict[str, Any]:
        c = _context(g)
        with BuildLock(c.paths.root):
            written, removed = patch_stage.refresh_series(c)
        for name in written:
            g.ui.info(f"  wrote {name}")
        for name in removed:
            g.ui.info(f"  removed {name}")
        summary = _run(g, [_stage("patch")], {"patch"}, _options(g, discard_local=True))
        return {"written": written, "removed": removed, **summary}

    _guarded(g, action)


@app.command()
def env(
    ctx: typer.Context,
    force: ForceOpt = False,
    fresh_env: FreshEnvOpt = False,
    python: PythonOpt = None,
) -> None:
    """Create build/env/venv with the pinned torch, where C++ extensions are compiled.

    Created once per set of pins and interpreter (--python) and reused; --fresh-env
    recreates it.
    """
    g = _globals(ctx)
    _guarded(
        g,
        lambda: _run(
            g,
            [_stage("env")],
            {"env"} if force else set(),
            _options(g, fresh_env=fresh_env, python=python),
        ),
    )


@app.command()
def plugin(ctx: typer.Context, force: ForceOpt = False, target: TargetOpt = "auto") -> None:
    """Build the torch-side packages for the target.

    sim: npu_sim, the simulated `npu` device (PrivateUse1 on host memory, torch.npu, an hccl
    backend over gloo), and fbgemm_npu_api, the operator adapter running the sim operator
    libraries; both wheels carry +sim. The adapter's npu variant is also built against
    torch_npu's headers (downloaded, never installed) as a build check, not an artifact.

    cann: fbgemm_npu_api+npu against the installed torch_npu and the toolkit's aclnn API,
    bundling the operator packages of `recsdk-build ops --target cann`; `import
    fbgemm_npu_api` then points CANN at them.
    """
    g = _globals(ctx)
    _guarded(
        g,
        lambda: _run(
            g, [_stage("plugin")], {"plugin"} if force else set(), _options(g, target=target)
        ),
    )


@app.command()
def wheels(ctx: typer.Context, force: ForceOpt = False) -> None:
    """Build torchrec-VERSION+npu-py3-none-any.whl from the patched tree (reproducibly)."""
    g = _globals(ctx)
    _guarded(g, lambda: _run(g, [_stage("wheels")], {"wheels"} if force else set(), _options(g)))


@app.command()
def verify(
    ctx: typer.Context,
    force: ForceOpt = False,
    fresh_env: FreshEnvOpt = False,
    python: PythonOpt = None,
) -> None:
    """Install the built wheels into build/verify/venv and run the verification suite.

    Results: build/verify/results/junit.xml and a summary in the manifest. Tests that need a
    device this host lacks are reported as not run, with the reason. --python names the
    interpreter the environment is created from; an environment `recsdk-build install`
    installed into is verified as it is instead (results under
    build/verify/installed-cpXY-ENV/results, the suite's tools kept outside it); an
    environment in a venv that `install` did not install into is refused.
    """
    g = _globals(ctx)

    def action() -> dict[str, Any]:
        options = _options(g, fresh_env=fresh_env, python=python)
        record = installer.read_record(options.python) if python is not None else None
        if record is None:
            # A path to a virtual environment's interpreter names an environment to verify
            # as installed; a version (3.10) or a base interpreter, the one to build for.
            if python is not None and "/" in python and options.python.in_venv:
                raise installer.InstallError(
                    f"the environment of {options.python.path} has no install record "
                    f"({installer.RECORD}): `recsdk-build install` did not install into it, "
                    "so there is nothing to verify as installed",
                    hint="install a bundle into it first (`recsdk-build install --bundle FILE "
                    "--python PATH`); to verify the build itself, give --python the base "
                    "interpreter the build is for",
                )
            return _run(g, [_stage("verify")], {"verify"} if force else set(), options)
        c = _context(g, options)
        with BuildLock(c.paths.root):
            summary = verify_installed(c.project, c.paths, g.ui, options.python, record)
        counts = {k: getattr(summary, k) for k in ("passed", "failed", "errors", "not_run")}
        return {"installed": record["bundle"], "python": options.python.path, **counts}

    _guarded(g, action)


@app.command()
def dist(
    ctx: typer.Context,
    python: PythonOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Directory the bundle is written to (default: BUILD/bundle).",
            file_okay=False,
        ),
    ] = None,
    sign_key: Annotated[
        str | None,
        typer.Option(
            "--sign-key",
            help="Also sign <bundle>.sha256 with this gpg key (an armored detached signature, "
            "<bundle>.sha256.asc, checked by `install --signature --keyring`).",
            metavar="KEYID",
        ),
    ] = None,
) -> None:
    """Pack the build into one release bundle for a cluster.

    recsdk-VERSION-TARGET-cpXY-ARCH.tar.gz: every wheel, the operator packages (cann .run;
    the sim libraries are inside the sim wheels), manifest.json, SHA256SUMS and INSTALL.md.
    Byte-identical when made again from the same build. Refuses a partial or stale build
    (a stage that has not run, or whose outputs no longer match the manifest), naming it.
    --python, if given, must be what the build is for.
    """
    g = _globals(ctx)

    def action() -> dict[str, Any]:
        options = _options(g, python=python)
        c = _context(g, options)
        target_dir = (out or c.paths.root / "bundle").resolve()
        with _reading(c.paths.root), terminate_as_interrupt():
            release = bundle.collect(
                c.project,
                c.paths.root,
                c.manifest,
                [s.name for s in project_stages(c.project)],
                python=options.python if python is not None else None,
            )
            try:
                path = bundle.write(release, target_dir)
            except OSError as exc:
                raise BundleError(
                    f"cannot write the bundle into {target_dir}: {exc.strerror}",
                    hint="pass --out DIR, a directory you can write",
                ) from None
        digest = sha256_file(path)
        signature = trust.sign_digest_file(bundle.digest_file(path), sign_key) if sign_key else None
        g.ui.info(f"bundle: {path}")
        g.ui.info(f"  sha256 {digest}  ({len(release.members)} files)")
        g.ui.info(
            f"  digest: {bundle.digest_file(path)}; publish it apart from the bundle and "
            "install with --sha256-file (or --sha256 HEX)"
        )
        if signature is not None:
            g.ui.info(f"  signed by {sign_key}: {signature}")
        return {
            "bundle": str(path),
            "sha256": digest,
            "sha256_file": str(bundle.digest_file(path)),
            "signature": str(signature) if signature else None,
            "files": len(release.members),
        }

    _guarded(g, action)


@contextmanager
def _reading(root: Path) -> Iterator[None]:
    """The build lock, for reading the build. A build directory this user cannot write
    (a CI artifact, another user's build) is read without it: nobody can be writing it
    through this account, and a read of a half-written build is refused as stale anyway."""
    try:
        lock = BuildLock(root)
        lock.acquire()
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        yield
        return
    try:
        yield
    finally:
        lock.release()


@app.command()
def install(
    ctx: typer.Context,
    python: Annotated[
        str,
        typer.Option(
            "--python",
            help="The interpreter of the environment to install into (a path or a version).",
            metavar="PATH|VERSION",
        ),
    ],
    bundle_file: Annotated[
        Path | None,
        typer.Option(
            "--bundle",
            help="A bundle made by `recsdk-build dist` (default: bundle this build first).",
            metavar="FILE",
        ),
    ] = None,
    sha256: Annotated[
        str | None,
        typer.Option(
            "--sha256",
            help="The bundle's sha256 as `dist` printed it, from a channel you trust.",
            metavar="HEX",
        ),
    ] = None,
    sha256_file: Annotated[
        Path | None,
        typer.Option(
            "--sha256-file",
            help="The bundle's .sha256 file written by `dist` (sha256sum format).",
            metavar="FILE",
        ),
    ] = None,
    signature: Annotated[
        Path | None,
        typer.Option(
            "--signature",
            help="An OpenPGP signature of the --sha256-file (dist --sign-key writes "
            "<bundle>.sha256.asc), checked with gpgv against --keyring.",
            metavar="FILE",
        ),
    ] = None,
    keyring: Annotated[
        Path | None,
        typer.Option(
            "--keyring",
            help="The public keys trusted to sign bundles (`gpg --export KEYID > FILE`).",
            metavar="FILE",
        ),
    ] = None,
    insecure_no_digest: Annotated[
        bool,
        typer.Option(
            "--insecure-no-digest",
            help="Install a --bundle without checking its sha256 against one given from "
            "outside it (only damage is detected then, not tampering).",
        ),
    ] = False,
    opp_path: Annotated[
        Path | None,
        typer.Option(
            "--opp-path",
            help="OPP directory for the operator packages (cann; default $ASCEND_OPP_PATH, "
            "else the toolkit's opp).",
            file_okay=False,
            metavar="DIR",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check everything, print the steps, change nothing.")
    ] = False,
) -> None:
    """Install a bundle (or this build) into an existing environment.

    A --bundle is checked against its sha256 (--sha256 or --sha256-file, as `dist` printed
    and wrote it) before it is opened, then every file against SHA256SUMS and every manifest
    field against the file list and the environment. Then: the pinned runtime, torchrec
    --no-deps, the extension wheels; on cann each operator package into the OPP vendors
    directory and its vendor first in vendors/config.ini's load_priority. Refuses sim
    artifacts where the real torch_npu is installed and cann artifacts where npu_sim is.
    Afterwards `recsdk-build verify --python PATH` verifies that environment.
    """
    g = _globals(ctx)

    def action() -> dict[str, Any]:
        options = _options(g, python=python)
        if (signature is None) != (keyring is None) or (signature and sha256_file is None):
            raise UsageError("--signature needs --keyring and the --sha256-file it signs")
        if signature is not None and keyring is not None and sha256_file is not None:
            with tempfile.TemporaryDirectory(prefix="recsdk-gpgv-") as home:
                key = trust.verify_signature(sha256_file, signature, keyring, Path(home))
            g.ui.info(f"{sha256_file.name}: good signature by {key}")
        digest = _expected_digest(g, bundle_file, sha256, sha256_file, insecure_no_digest)
        with (
            terminate_as_interrupt(),
            tempfile.TemporaryDirectory(prefix="recsdk-install-") as scratch,
        ):
            archive = _bundle_for_install(g, options, bundle_file, Path(scratch))
            request = installer.Request(
                archive=archive,
                python=options.python,
                digest=digest,
                opp=opp_path.resolve() if opp_path else None,
                dry_run=dry_run,
            )
            return installer.install_bundle(request, g.ui, Path(scratch))

    _guarded(g, action)


def _expected_digest(
    g: Globals, given: Path | None, hex_digest: str | None, file: Path | None, insecure: bool
) -> str | None:
    """The sha256 a --bundle must have; None for this build's own bundle (made here) or
    with --insecure-no-digest, which is said loudly."""
    if hex_digest is not None and file is not None:
        raise UsageError("give --sha256 or --sha256-file, not both")
    if given is not None and not given.is_file():
        raise BundleError(f"--bundle {given}: no such file")
    if given is None:
        if hex_digest is not None or file is not None:
            raise UsageError("--sha256/--sha256-file check a --bundle; none was given")
        return None
    if hex_digest is not None:
        return trust.parse_digest(hex_digest, where="--sha256")
    if file is not None:
        return trust.read_digest_file(file, given)
    if not insecure:
        raise BundleError(
            f"--bundle {given}: no sha256 to check it against; refusing to trust it on its own "
            "(its SHA256SUMS and manifest travel inside it: whoever changed one could change "
            "the other)",
            hint=f"pass --sha256-file {given}.sha256 (written by `dist`, copied through a "
            "channel you trust) or --sha256 HEX; --insecure-no-digest skips the check",
        )
    g.ui.warn(
        f"[bold]--insecure-no-digest: {given.name} is NOT checked against a sha256 from "
        "outside it; a rewritten bundle would be installed[/bold]"
    )
    return None


def _bundle_for_install(g: Globals, options: Options, given: Path | None, scratch: Path) -> Path:
    """The bundle to install: the one given, else this build's, made into ``scratch``."""
    if given is not None:
        if not given.is_file():
            raise BundleError(f"--bundle {given}: no such file")
        return given
    c = _context(g, options)
    with _reading(c.paths.root):
        release = bundle.collect(
            c.project, c.paths.root, c.manifest, [s.name for s in project_stages(c.project)]
        )
        return bundle.write(release, scratch)


@app.command()
def doctor(
    ctx: typer.Context,
    target: Annotated[
        str, typer.Option("--target", help=f"Target to check for: {', '.join(TARGETS)}.")
    ] = "auto",
) -> None:
    """Show what this host has and which target (cann or sim) `auto` picks.

    Exits nonzero when a tool needed by the requested target is missing.
    """
    g = _globals(ctx)
    _guarded(g, lambda: doctor_report(g.ui, _build_root(g), target))


@app.command()
def clean(
    ctx: typer.Context,
    keep_env: Annotated[
        bool,
        typer.Option("--keep-env", help="Keep the verify environment (saves re-installing ~5 GB)."),
    ] = False,
) -> None:
    """Remove the build directory (outputs, logs, manifest, source tree)."""
    g = _globals(ctx)
    _guarded(g, lambda: clean_build(g.ui, _context(g).paths, keep_env=keep_env))


@app.command()
def status(ctx: typer.Context) -> None:
    """Show what the last runs recorded in the manifest, stage by stage."""
    g = _globals(ctx)
    _guarded(g, lambda: status_report(g.ui, _context(g)))


@app.command()
def coverage(
    ctx: typer.Context,
    source: Annotated[
        Path | None,
        typer.Option(
            "--source",
            help="The torchrec source tree to scan, the directory holding torchrec/ "
            "(default: BUILD/src/torchrec, the patched tree `recsdk-build patch apply` makes).",
            file_okay=False,
            metavar="DIR",
        ),
    ] = None,
    fbgemm: Annotated[
        Path | None,
        typer.Option(
            "--fbgemm",
            help="The installed fbgemm_gpu package directory (default: the one in "
            "BUILD/verify/venv, else BUILD/env/venv, else the one this Python would import).",
            file_okay=False,
            metavar="DIR",
        ),
    ] = None,
    write_docs: Annotated[
        bool,
        typer.Option("--write-docs", help="Rewrite the generated section of docs/adapter.md."),
    ] = False,
    check_docs: Annotated[
        bool,
        typer.Option(
            "--check-docs", help="Fail when docs/adapter.md's section differs from the table."
        ),
    ] = False,
) -> None:
    """Which fbgemm operators torchrec can call, and what the npu adapter does for each.

    Scans the torchrec tree (outside its tests) and the fbgemm_gpu Python modules it imports
    for every `torch.ops.fbgemm.<op>` reference, then classifies each operator with
    data/fbgemm_coverage.toml: **npu-kernel** (its AscendC operator), **aten-composition**,
    **host-only**, **refused** (with the reason) or **missing**, and whether a training path
    reaches it.

    Fails (exit 1), naming the operator, when the source calls an operator the data file does
    not classify (after a torchrec pin bump: classify the new ones), when the data file claims
    an npu kernel that torch_plugin/csrc does not register or whose kernels/ops/OP directory
    is absent. A kernel the adapter registers for an operator the file still calls missing is
    a warning: update its entry.

    `--write-docs` regenerates the "fbgemm operator coverage" section of docs/adapter.md;
    `--check-docs` only compares. `--json` prints every operator with its call sites.
    """
    from recsdk_build import coverage as cov

    g = _globals(ctx)

    def action() -> dict[str, Any]:
        project = load_project(g.project_dir)
        build = (g.build_dir or project.root / "build").resolve()
        tree = (source or BuildPaths(build).source).resolve()
        if not (tree / "torchrec").is_dir():
            raise cov.CoverageError(
                f"no torchrec source at {tree}",
                hint="run `recsdk-build fetch` and `recsdk-build patch apply` first, or pass "
                "--source DIR (the directory holding torchrec/)",
            )
        package = fbgemm.resolve() if fbgemm else None
        if package is None:
            package = cov.find_fbgemm([build / "verify" / "venv", build / "env" / "venv"])
        if package is None or not (package / "__init__.py").is_file():
            raise cov.CoverageError(
                "no fbgemm_gpu package found" + (f" at {package}" if package is not None else ""),
                hint="pass --fbgemm DIR (an installed fbgemm_gpu package directory), or build "
                "the environment first (`recsdk-build env`)",
            )
        report = cov.build_report(project.root, tree, package, project.root / cov.DATA_FILE)
        table = Table(title="fbgemm operators torchrec can call", title_justify="left")
        for col in ("operator", "status", "training", "sites", "kernel / reason"):
            table.add_column(col, overflow="fold")
        for row in report.rows:
            e = row.entry
            table.add_row(
                row.op,
                e.status if e else "[red]unclassified[/red]",
                ("yes" if e.training else "no") if e else "",
                str(len(row.sites)),
                (", ".join(e.kernels) or e.reason) if e else "",
            )
        if not g.ui.json_mode:
            g.ui.console.print(table)
        counts = ", ".join(f"{report.count(s)} {s}" for s in cov.STATUSES if report.count(s))
        g.ui.info(
            f"{len(report.rows)} operators ({counts}); torchrec's own code calls "
            f"{len(report.ops('torchrec'))}, of which {report.count('npu-kernel', 'torchrec')} "
            "have an npu kernel"
        )
        version = cov.fbgemm_version(package)
        g.ui.info(f"source: {tree}; fbgemm_gpu: {package}" + (f" ({version})" if version else ""))
        for note in report.stale:
            g.ui.warn(note)
        if report.problems:
            for problem in report.problems:
                g.ui.warn(problem)
            raise cov.CoverageError(
                f"{len(report.problems)} problem(s) between the source, "
                f"{cov.DATA_FILE} and the adapter (listed above)",
                hint=f"classify new operators in {cov.DATA_FILE}; keep its npu-kernel entries "
                "to what torch_plugin/csrc registers",
            )
        doc = project.root / cov.DOC_FILE
        section = cov.render_markdown(report)
        if write_docs:
            text = doc.read_text(encoding="utf-8")
            doc.write_text(cov.replace_doc_section(text, section), encoding="utf-8")
            g.ui.info(f"wrote the coverage section of {doc}")
        elif check_docs and cov.doc_section(doc.read_text(encoding="utf-8")) != section:
            raise cov.CoverageError(
                f"the coverage section of {cov.DOC_FILE} is out of date",
                hint="regenerate it: `recsdk-build coverage --write-docs`",
            )
        summary = cov.report_json(report)
        return summary

    _guarded(g, action)


def main() -> None:
    app()
