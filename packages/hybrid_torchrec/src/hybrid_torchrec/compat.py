"""The torchrec release check, run when hybrid_torchrec is imported.

The collections and (in phase 2) the sharders extend torchrec 1.1.0's modules and internal
interfaces, which change between releases; a mismatch shows up as wrong results or obscure
attribute errors deep inside a training step. So the package refuses to load against any other
release, with a message that says what is installed where. The check reads torchrec's version
without importing torchrec (slow, and possibly broken when it is the wrong release).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from hybrid_torchrec._version import TORCHREC_RELEASE, __version__


def _dist_info_versions(site: Path) -> list[str]:
    versions = []
    for info in sorted(site.glob("torchrec-*.dist-info")):
        metadata = info / "METADATA"
        if not metadata.is_file():
            continue
        for line in metadata.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Version:"):
                versions.append(line.split(":", 1)[1].strip())
                break
            if not line:
                break
    return versions


def _version_py(package: Path) -> str | None:
    path = package / "version.py"
    if not path.is_file():
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            return str(value)
    return None


def installed_torchrec() -> tuple[str | None, Path | None]:
    """The version of the torchrec that `import torchrec` would load, and its directory.

    The version comes from the distribution metadata next to the package (what pip
    installed), else from torchrec/version.py (what torchrec's build writes). (None, path)
    when torchrec is there but its version cannot be told; (None, None) when it is missing.
    """
    spec = importlib.util.find_spec("torchrec")
    if spec is None or not spec.submodule_search_locations:
        return None, None
    package = Path(next(iter(spec.submodule_search_locations))).resolve()
    versions = set(_dist_info_versions(package.parent))
    if len(versions) == 1:
        return versions.pop(), package
    if len(versions) > 1:
        raise ImportError(
            f"several torchrec distributions are installed in {package.parent} "
            f"({', '.join(sorted(versions))}); uninstall all but torchrec {TORCHREC_RELEASE}"
        )
    return _version_py(package), package


def release_of(version: str) -> str:
    """'1.1.0+npu' -> '1.1.0': the local part names a build of the release, not another one."""
    return version.split("+", 1)[0]


def check_torchrec() -> str:
    """Returns the installed torchrec version, or raises ImportError saying what is wrong."""
    version, where = installed_torchrec()
    wanted = f"torchrec {TORCHREC_RELEASE}"
    if where is None:
        raise ImportError(
            f"hybrid_torchrec {__version__} needs {wanted}, which is not installed: install the "
            f"project's torchrec-{TORCHREC_RELEASE}+npu wheel (or torchrec=={TORCHREC_RELEASE} "
            "with --no-deps)"
        )
    if version is None:
        raise ImportError(
            f"hybrid_torchrec {__version__} needs {wanted}, but the version of the torchrec in "
            f"{where} cannot be determined (no dist-info next to it and no torchrec/version.py); "
            "reinstall torchrec from its wheel"
        )
    if release_of(version) != TORCHREC_RELEASE:
        raise ImportError(
            f"hybrid_torchrec {__version__} works only with {wanted}, but torchrec {version} is "
            f"installed in {where}; install torchrec {TORCHREC_RELEASE} (the project's "
            f"torchrec-{TORCHREC_RELEASE}+npu wheel) or a hybrid_torchrec built for torchrec "
            f"{release_of(version)}"
        )
    return version
