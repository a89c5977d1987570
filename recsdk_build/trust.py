"""What ``recsdk-build install`` trusts in a bundle, and why.

SHA256SUMS and manifest.json travel inside the archive: whoever can change one can rewrite the
other, so they detect damage, not tampering. The root of trust is the archive's own sha256,
published outside it (``dist`` prints it and writes ``<bundle>.sha256``); ``install`` checks it
before opening the archive. Independently of that, the install plan is derived from the
bundle's file list rather than read from its manifest: the wheels are the listed files under
``wheels/`` (plain wheel file names, nothing a shell or pip could read as an option), the
runtime comes from the typed pins, and every field the manifest states (schema, target,
Python, architecture, the install recipe) is checked against the file list and the
environment; a mismatch is refused naming the field.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from recsdk_build.bundle import ENVIRONMENT, NPU_LOCK, SCHEMA, runtime_requirements
from recsdk_build.errors import BundleError, InstallError
from recsdk_build.interpreters import Interpreter, wheel_misfits
from recsdk_build.lock import LOCK, Locked, LockError
from recsdk_build.lock import parse as parse_lock
from recsdk_build.options import RECORDED_TARGETS, Target, recorded_target

_HEX = re.compile(r"[0-9a-fA-F]{64}")
# A wheel or operator package file name: no path, nothing pip or bash reads as an option.
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+!-]*")
_VENDOR = re.compile(r"[A-Za-z0-9_]+")


# --- the outer digest ----------------------------------------------------------------------


def parse_digest(text: str, *, where: str) -> str:
    """A sha256 given on the command line, or the first one of a ``sha256sum`` file."""
    token = text.strip().split()[0] if text.strip() else ""
    if not _HEX.fullmatch(token):
        raise BundleError(f"{where}: not a sha256 (64 hex digits): {token[:80]!r}")
    return token.lower()


def read_digest_file(path: Path, bundle: Path) -> str:
    """The digest of ``bundle`` in a ``sha256sum`` file (its line naming the bundle, or its
    only line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"--sha256-file {path}: cannot be read: {exc}") from None
    lines = [line for line in text.splitlines() if line.strip()]
    for line in lines:
        digest, _, name = line.strip().partition(" ")
        if name.strip().lstrip("*") == bundle.name:
            return parse_digest(digest, where=f"--sha256-file {path}")
    if len(lines) == 1:
        return parse_digest(lines[0], where=f"--sha256-file {path}")
    raise BundleError(f"--sha256-file {path}: no line for {bundle.name}")


def check_digest(bundle: Path, expected: str) -> None:
    """Refuse ``bundle`` unless its sha256 is ``expected``, before any of it is unpacked."""
    digest = hashlib.sha256()
    try:
        with bundle.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    except FileNotFoundError:
        raise BundleError(f"--bundle {bundle}: no such file") from None
    except OSError as exc:
        raise BundleError(f"--bundle {bundle}: cannot be read: {exc.strerror}") from None
    if digest.hexdigest() != expected:
        raise BundleError(
            f"{bundle.name}: its sha256 is {digest.hexdigest()}, not the expected {expected}; "
            "refusing the bundle",
            hint="the bundle was changed or damaged after `dist` made it: copy it again from "
            "where it was published, with its .sha256",
        )


# --- the install plan's inputs, derived and cross-checked ------------------------------------


@dataclass(frozen=True)
class Contents:
    """What install installs, every path relative to the unpacked bundle."""

    bundle: str
    target: Target | None  # None: a build without operators or adapter ("any")
    python_tag: str
    machine: str
    runtime: tuple[str, ...]  # the pins' requirement lines (what the lock must agree with)
    locked: tuple[Locked, ...]  # runtime.lock: what is installed, with --require-hashes
    torchrec: tuple[str, ...]
    wheels: tuple[str, ...]  # the other wheels
    operator_packages: tuple[tuple[str, str], ...]  # (path, vendor)
    npu_locked: tuple[Locked, ...] = ()  # cann: torch-npu.lock, with --require-hashes


def _field(top: Path, name: str, problem: str) -> BundleError:
    return BundleError(
        f"{top.name}: manifest.json field '{name}' {problem}; refusing the bundle",
        hint="the bundle was not made by this recsdk-build's `dist`, or was edited",
    )


def _get(top: Path, data: dict[str, Any], dotted: str, kind: type) -> Any:
    value: Any = data
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            raise _field(top, dotted, "is missing")
        value = value[key]
    if not isinstance(value, kind):
        raise _field(top, dotted, f"is not a {kind.__name__}: {value!r}")
    return value


def derive(top: Path, data: dict[str, Any], files: list[str]) -> Contents:
    """The install plan's inputs from ``files`` (SHA256SUMS, already checked) and the typed
    fields of ``data``; every field the manifest states must agree with them."""
    schema = data.get("schema")
    if schema != SCHEMA:
        raise _field(top, "schema", f"is {schema!r}; this recsdk-build reads schema {SCHEMA}")
    name = _get(top, data, "bundle", str)
    if name != top.name:
        raise _field(top, "bundle", f"is {name!r} but the archive's directory is {top.name!r}")
    target = _get(top, data, "target", str)
    tag = _get(top, data, "python.tag", str)
    machine = _get(top, data, "python.machine", str)
    version = _get(top, data, "python.version", list)
    if target not in RECORDED_TARGETS:
        raise _field(top, "target", f"is {target!r}, not one of {', '.join(RECORDED_TARGETS)}")
    kind = recorded_target(target)
    needs_torch_npu = kind is not None and kind.needs_torch_npu
    ships_operator_packages = kind is not None and kind.ships_operator_packages
    if not (len(version) >= 2 and all(isinstance(v, int) for v in version[:2])):
        raise _field(top, "python.version", f"is {version!r}")
    if tag != f"cp{version[0]}{version[1]}":
        raise _field(top, "python.tag", f"is {tag!r} but python.version is {version[:2]}")
    if not top.name.endswith(f"-{tag}-{machine}"):
        raise _field(top, "python", f"says {tag} {machine}, the bundle's name {top.name}")
    variant = top.name.removesuffix(f"-{tag}-{machine}").split("-", 2)[-1]
    if variant.split("-")[0] != target:
        raise _field(top, "target", f"is {target!r} but the bundle's name says {variant!r}")

    wheels = sorted(f for f in files if f.startswith("wheels/"))
    ops = sorted(f for f in files if f.startswith("ops/"))
    known = {"manifest.json", "INSTALL.md", LOCK, ENVIRONMENT, *wheels, *ops}
    if needs_torch_npu:
        known.add(NPU_LOCK)
    if extra := [f for f in files if f not in known]:
        raise BundleError(f"{top.name}: unexpected file {extra[0]} in the bundle; refusing it")
    for path in [*wheels, *ops]:
        parts = PurePosixPath(path).parts
        if len(parts) != 2 or not _SAFE_NAME.fullmatch(parts[1]):
            raise BundleError(f"{top.name}: refusing the file name {path!r}")
    for path in wheels:
        try:
            parse_wheel_filename(PurePosixPath(path).name)
        except InvalidWheelFilename:
            raise BundleError(f"{top.name}: {path} is not a wheel file name") from None
    if any(not p.endswith(".run") for p in ops):
        raise BundleError(f"{top.name}: ops/ holds something other than .run operator packages")
    if ships_operator_packages != bool(ops):
        raise _field(
            top,
            "target",
            f"is {target!r} but the bundle has {len(ops)} operator package(s) under ops/",
        )
    shim = Interpreter("", (int(version[0]), int(version[1]), 0), "cpython", machine, "", "", "")
    misfits = wheel_misfits([PurePosixPath(w).name for w in wheels], shim)
    if misfits:
        raise _field(top, "python", f"says {tag} {machine} but {misfits[0]} is not for it")

    torchrec = tuple(w for w in wheels if PurePosixPath(w).name.startswith("torchrec-"))
    others = tuple(w for w in wheels if w not in torchrec)
    stated = (
        _get(top, data, "install.torchrec", list),
        _get(top, data, "install.wheels", list),
    )
    if sorted(stated[0]) != sorted(torchrec) or sorted(stated[1]) != sorted(others):
        raise _field(top, "install.wheels", "does not list exactly the bundle's wheels/")

    packages = []
    for entry in _get(top, data, "install.operator_packages", list):
        path = entry.get("path") if isinstance(entry, dict) else None
        vendor = entry.get("vendor") if isinstance(entry, dict) else None
        if path not in ops or not isinstance(vendor, str) or not _VENDOR.fullmatch(vendor):
            raise _field(top, "install.operator_packages", f"has the entry {entry!r}")
        packages.append((str(path), vendor))
    if sorted(p for p, _ in packages) != ops:
        raise _field(top, "install.operator_packages", "does not list exactly the bundle's ops/")

    pins = _get(top, data, "pins", dict)
    try:
        runtime = runtime_requirements(pins, with_torch_npu=needs_torch_npu)
    except BundleError:
        raise _field(top, "pins.runtime", "is incomplete") from None
    for line in runtime:
        if not _SAFE_NAME.fullmatch(line.replace("==", "")):
            raise _field(top, "pins.runtime", f"holds {line!r}, not a name or name==version")
    if _get(top, data, "install.runtime", list) != runtime:
        raise _field(top, "install.runtime", f"is not the runtime of pins.runtime ({runtime})")
    if _get(top, data, "install.runtime_lock", str) != LOCK or LOCK not in files:
        raise _field(top, "install.runtime_lock", f"is not {LOCK}, a file of the bundle")
    locked = _check_lock(top, runtime)
    npu_locked = _check_npu_lock(top, data, files, runtime) if needs_torch_npu else ()
    return Contents(
        bundle=name,
        target=kind,
        python_tag=tag,
        machine=machine,
        runtime=tuple(runtime),
        locked=tuple(locked),
        torchrec=torchrec,
        wheels=others,
        operator_packages=tuple(packages),
        npu_locked=npu_locked,
    )


def _check_npu_lock(
    top: Path, data: dict[str, Any], files: list[str], runtime: list[str]
) -> tuple[Locked, ...]:
    """A cann bundle's torch-npu.lock: exactly torch-npu at the pinned version, hashed."""
    if _get(top, data, "install.torch_npu_lock", str) != NPU_LOCK or NPU_LOCK not in files:
        raise _field(top, "install.torch_npu_lock", f"is not {NPU_LOCK}, a file of the bundle")
    try:
        text = (top / NPU_LOCK).read_text(encoding="utf-8")
        locked = parse_lock(text, where=f"{top.name}/{NPU_LOCK}")
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"{top.name}: {NPU_LOCK} cannot be read: {exc}") from None
    except LockError as exc:
        raise BundleError(exc.message + "; refusing the bundle") from None
    pinned = [r.partition("==")[2] for r in runtime if r.startswith("torch-npu==")]
    if [(e.name, e.version) for e in locked] != [("torch-npu", v) for v in pinned]:
        raise BundleError(
            f"{top.name}: {NPU_LOCK} locks {[e.line().split()[0] for e in locked]}, not "
            f"torch-npu=={''.join(pinned)} alone; refusing the bundle"
        )
    return tuple(locked)


def _check_lock(top: Path, runtime: list[str]) -> list[Locked]:
    """runtime.lock, strictly parsed (only ``name==version --hash=sha256:…`` lines: pip reads
    options in a requirements file), agreeing with the pins: every runtime requirement the
    verify environment had is locked, at the pinned version where there is one."""
    try:
        text = (top / LOCK).read_text(encoding="utf-8")
        locked = parse_lock(text, where=f"{top.name}/{LOCK}")
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"{top.name}: {LOCK} cannot be read: {exc}") from None
    except LockError as exc:
        raise BundleError(exc.message + "; refusing the bundle") from None
    if not locked:
        return []  # a project whose suite runs without the pinned runtime
    versions = {e.name: e.version for e in locked}
    for line in runtime:
        name, _, version = line.partition("==")
        name = canonicalize_name(name)
        if name == "torch-npu":
            continue  # not in a host verify environment: installed by its pin
        if name not in versions:
            raise BundleError(f"{top.name}: {LOCK} does not lock {name}; refusing the bundle")
        if version and versions[name] != version:
            raise BundleError(
                f"{top.name}: {LOCK} locks {name} {versions[name]}, the pins say {version}; "
                "refusing the bundle"
            )
    return locked


def check_environment(contents: Contents, python: Interpreter) -> None:
    """The bundle's Python and architecture are the environment's."""
    for field_name, ours, theirs in (
        ("python.tag", contents.python_tag, python.tag),
        ("python.machine", contents.machine, python.machine),
    ):
        if ours != theirs:
            wanted = f"{contents.python_tag[2]}.{contents.python_tag[3:]}"
            raise InstallError(
                f"{contents.bundle} is for {contents.python_tag} on {contents.machine} "
                f"(manifest field '{field_name}' is {ours}); {python.describe()} is "
                f"{python.tag} on {python.machine}",
                hint=f"install into an environment of Python {wanted} on {contents.machine} "
                f"(--python), or use a bundle made for {python.tag} on {python.machine}",
            )


# --- signatures ----------------------------------------------------------------------------
#
# Optional, on top of the digest: an OpenPGP detached signature of ``<bundle>.sha256``, made by
# ``gpg`` and checked by ``gpgv`` against a keyring the installer names, the way apt checks a
# Debian archive's signed checksum files (gpgv trusts exactly the keys in that keyring: no
# trust database, no key servers, works offline). What it adds to the digest: the digest file
# may travel with the bundle, because whoever rewrites it cannot sign it.


def _tool(argv: list[str], what: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False, **kw)
    except FileNotFoundError:
        raise BundleError(
            f"{what} needs `{argv[0]}`, which is not installed",
            hint="install GnuPG (Debian: apt-get install gnupg gpgv)",
        ) from None


def sign_digest_file(digest_file: Path, key: str) -> Path:
    """``<digest_file>.asc``: an armored detached signature by ``key`` (a gpg key id)."""
    signature = digest_file.with_name(digest_file.name + ".asc")
    done = _tool(
        [
            *("gpg", "--batch", "--yes", "--armor", "--local-user", key, "--detach-sign"),
            *("--output", str(signature), str(digest_file)),
        ],
        "--sign-key",
    )
    if done.returncode != 0:
        signature.unlink(missing_ok=True)
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BundleError(f"signing {digest_file.name} with the key {key!r} failed: {last}")
    return signature


def verify_signature(data: Path, signature: Path, keyring: Path, scratch: Path) -> str:
    """The fingerprint of the key in ``keyring`` whose good signature of ``data`` is
    ``signature``; a BundleError otherwise. ``keyring``: public keys as ``gpg --export`` writes
    them (binary, or armored)."""
    for path, option in ((signature, "--signature"), (keyring, "--keyring")):
        if not path.is_file():
            raise BundleError(f"{option} {path}: no such file")
    ring = keyring.resolve()
    if ring.read_bytes()[:64].lstrip().startswith(b"-----BEGIN PGP"):
        ring = scratch / "keyring.gpg"
        dearmored = _tool(
            ["gpg", "--batch", "--yes", "--dearmor", "--output", str(ring), str(keyring)],
            "--keyring",
        )
        if dearmored.returncode != 0:
            raise BundleError(f"--keyring {keyring}: not an OpenPGP key file")
    done = _tool(
        ["gpgv", "--status-fd", "1", "--keyring", str(ring), str(signature), str(data)],
        "--signature",
        env={**os.environ, "GNUPGHOME": str(scratch)},
    )
    valid = [line.split()[2] for line in done.stdout.splitlines() if " VALIDSIG " in line]
    if done.returncode != 0 or not valid:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BundleError(
            f"{data.name}: {signature.name} is not a good signature by a key of {keyring} "
            f"({said}); refusing the bundle",
            hint="the digest file was changed, or signed by a key you do not trust",
        )
    return valid[0]
