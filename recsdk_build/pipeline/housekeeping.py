"""What `clean` and `status` do to and with a build directory (the command line only parses)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from rich.table import Table

from recsdk_build.pipeline.lock import LOCK_NAME, BuildLock
from recsdk_build.pipeline.stage import BuildPaths, Context
from recsdk_build.stagenames import STAGE_NAMES
from recsdk_build.ui import UI


def clean_build(ui: UI, paths: BuildPaths, *, keep_env: bool) -> dict[str, Any]:
    """Remove everything in the build directory but its lock (and, with ``keep_env``, the
    verify environment, which costs ~5 GB of installs to recreate)."""
    root = paths.root
    if not root.exists():
        ui.info(f"nothing to clean: {root} does not exist")
        return {"removed": []}
    removed = []
    with BuildLock(root):
        for child in sorted(root.iterdir()):
            if child.name == LOCK_NAME:
                continue
            if keep_env and child == paths.verify:
                for sub in child.iterdir():
                    if sub.name != "venv":
                        _remove(sub)
                continue
            _remove(child)
            removed.append(child.name)
    ui.info(f"cleaned {root}" + (" (kept the verify environment)" if keep_env else ""))
    return {"removed": removed}


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def status_report(ui: UI, ctx: Context) -> dict[str, Any]:
    """Print what the manifest recorded, stage by stage; ``ok`` is false when an artifact no
    longer matches its record (so `status --json` cannot pass a damaged build)."""
    table = Table(title=f"{ctx.manifest.path}", title_justify="left")
    for col in ("stage", "last status", "when", "artifacts"):
        table.add_column(col)
    damaged: dict[str, list[str]] = {}
    for name in STAGE_NAMES:
        rec = ctx.manifest.stages.get(name)
        if rec is None:
            table.add_row(name, "[dim]never run[/dim]", "", "")
            continue
        if rec.status != "failed":
            bad = [a.path for a in rec.artifacts if not a.intact(ctx.paths.root)]
            if bad:
                damaged[name] = bad
        arts = ", ".join(
            f"[red]{a.name} (changed or missing)[/red]"
            if a.path in damaged.get(name, [])
            else a.name
            for a in rec.artifacts
        )
        table.add_row(name, rec.status, rec.started_at, arts)
    ui.console.print(table)
    for name, paths in damaged.items():
        ui.error(
            f"stage '{name}': {', '.join(paths)} no longer matches what the stage recorded",
            f"run `recsdk-build {name} --force` (or `recsdk-build all`) again",
        )
    return {
        "ok": not damaged,
        "stages": {
            n: (r.status if (r := ctx.manifest.stages.get(n)) else None) for n in STAGE_NAMES
        },
        "damaged": damaged,
    }
