"""Real binaries with USDT notes from Debian 12 packages, for every
architecture Debian ships: downloaded once per machine with ``apt-get
download`` and unpacked with ``dpkg -x`` into a cache that outlives test runs.

Foreign architectures need no ``dpkg --add-architecture``: the fetcher keeps
an apt state of its own (package lists, archive cache, an empty dpkg status)
inside the cache and passes it to apt-get with ``-o``, so the machine's own
apt state is never touched. The package sources are the machine's own apt
sources. Once every package is unpacked the private package lists (~125 MB)
are deleted: the unpacked trees are the cache.

The cache is ``$PROBEGEN_TEST_CACHE`` or ``~/.cache/probegen-tests/debian``;
it must belong to the user running the tests and be writable by no one else.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import require

ARCHITECTURES = ("amd64", "i386", "arm64", "armhf", "s390x", "ppc64el", "mips64el")


@dataclass(frozen=True)
class DebianBinary:
    """One ELF file with stapsdt notes inside one Debian package."""

    package: str
    project: str
    pattern: str  # glob under the unpacked package; '{triplet}' is the multiarch triplet
    providers: tuple[str, ...]
    architectures: tuple[str, ...]
    provides: str  # what the notes exercise, for people choosing binaries


# About 90 MB of packages and ~60 MB of package lists for six foreign
# architectures, once per machine. Debian 12's glib and glibc carry no
# stapsdt notes, so the three projects present on every architecture are
# Ruby, libvirt and GCC's libstdc++; PostgreSQL (17 MB a package) only for
# the two x86 architectures, whose symbol displacements it exercises.
BINARIES = (
    DebianBinary(
        "libruby3.1", "Ruby", "usr/lib/{triplet}/libruby-3.1.so.3.1.*", ("ruby",), ARCHITECTURES,
        "39 probes: pointers and C strings in registers and stack slots, constants, semaphores",
    ),
    DebianBinary(
        "libvirt0", "libvirt", "usr/lib/{triplet}/libvirt.so.0.*", ("libvirt",), ARCHITECTURES,
        "41 probes of RPC and event-loop code: up to 10 arguments, many sites per probe",
    ),
    DebianBinary(
        "libstdc++6", "GCC (libstdc++)", "usr/lib/{triplet}/libstdc++.so.6.0.*", ("libstdcxx",), ARCHITECTURES,
        "3 probes named after C++ keywords (throw, rethrow, catch), two pointer arguments",
    ),
    DebianBinary(
        "postgresql-15", "PostgreSQL", "usr/lib/postgresql/15/bin/postgres", ("postgresql",), ("amd64", "i386"),
        "~80 probes: number-first symbol displacements (40+CheckpointStats(%rip), @GOTOFF(%ebx)), "
        "constants and bools at the sites of one probe",
    ),
)

TRIPLETS = {
    "amd64": "x86_64-linux-gnu", "i386": "i386-linux-gnu", "arm64": "aarch64-linux-gnu",
    "armhf": "arm-linux-gnueabihf", "s390x": "s390x-linux-gnu",
    "ppc64el": "powerpc64le-linux-gnu", "mips64el": "mips64el-linux-gnuabi64",
}

# The ELF e_machine of each Debian architecture, as readelf -h names it.
MACHINES = {
    "amd64": "Advanced Micro Devices X86-64", "i386": "Intel 80386", "arm64": "AArch64",
    "armhf": "ARM", "s390x": "IBM S/390", "ppc64el": "PowerPC64", "mips64el": "MIPS R3000",
}


def cases() -> list[tuple[DebianBinary, str]]:
    """Every (binary, architecture) pair the suite checks."""
    return [(b, arch) for b in BINARIES for arch in b.architectures]


def case_id(case: tuple[DebianBinary, str]) -> str:
    binary, arch = case
    return f"{binary.package}-{arch}"


def cache_root() -> Path:
    configured = os.environ.get("PROBEGEN_TEST_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "probegen-tests" / "debian"


def _private_directory(path: Path) -> Path:
    """Create ``path`` 0700, or check that an existing one is ours and
    writable by no one else: tests read what it holds as trusted input."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise RuntimeError(f"test cache {path} must be a directory owned by uid {os.getuid()} "
                           "and not writable by group or others")
    return path


def _unpacked_dir(root: Path, package: str, arch: str) -> Path:
    return root / "unpacked" / arch / package


def _apt_options(root: Path, architectures) -> list[str]:
    state = root / "apt" / "state"
    cache = root / "apt" / "cache"
    for directory in (state / "lists" / "partial", cache / "archives" / "partial"):
        directory.mkdir(parents=True, exist_ok=True)
    (state / "status").touch()
    options = ["-q", "-o", "APT::Architecture=amd64", "-o", "Acquire::Languages=none",
               "-o", f"Dir::State={state}", "-o", f"Dir::State::status={state / 'status'}",
               "-o", f"Dir::Cache={cache}"]
    if os.getuid() == 0:
        # apt drops to _apt to download, which cannot enter the 0700 cache.
        options += ["-o", "APT::Sandbox::User=root"]
    for arch in architectures:
        options += ["-o", f"APT::Architectures::={arch}"]
    return options


def _run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"})


def _keep_only_binaries(tree: Path, package: str, arch: str) -> None:
    """Delete all but the files the tests read (PostgreSQL unpacks to 55 MB)."""
    keep = {path for b in BINARIES if b.package == package
            for path in tree.glob(b.pattern.format(triplet=TRIPLETS[arch]))}
    for path in sorted(tree.rglob("*"), reverse=True):
        if path in keep:
            continue
        if path.is_dir() and not path.is_symlink():
            if not any(path.iterdir()):
                path.rmdir()
        else:
            path.unlink()


def _download(root: Path, missing: list[tuple[str, str]]) -> None:
    """apt-get download each (package, arch) and dpkg -x it into the cache."""
    for stale in (root / "unpacked").glob("*/.*.*"):  # left by a killed run
        shutil.rmtree(stale, ignore_errors=True)
    options = _apt_options(root, sorted({arch for _, arch in missing}))
    update = _run(["apt-get", *options, "update"])
    # A sources entry that fails (a mirror mid-sync) is tolerable as long
    # as the packages themselves download; apt-get download says if not.
    debs = root / "apt" / "debs"
    debs.mkdir(exist_ok=True)
    got = _run(["apt-get", *options, "download", *(f"{p}:{a}" for p, a in missing)], cwd=debs)
    if got.returncode != 0:
        errors = [line for line in (update.stderr + got.stderr).splitlines() if line.startswith("E:")]
        shown = " / ".join(dict.fromkeys(errors[:1] + errors[-1:])) or got.stderr.strip()[-300:]
        raise RuntimeError(f"apt-get download failed: {shown}")
    # dpkg -x writes every file of a package (Ruby's: thousands); in parallel.
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda job: _unpack(root, debs, *job), missing))
    shutil.rmtree(root / "apt", ignore_errors=True)


def _unpack(root: Path, debs: Path, package: str, arch: str) -> None:
    found = list(debs.glob(f"{package}_*_{arch}.deb"))
    if len(found) != 1:
        raise RuntimeError(f"apt-get download {package}:{arch} left {len(found)} .deb files")
    target = _unpacked_dir(root, package, arch)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{package}."))
    unpack = _run(["dpkg", "-x", str(found[0]), str(staging)])
    if unpack.returncode != 0:
        shutil.rmtree(staging)
        raise RuntimeError(f"dpkg -x {found[0].name} failed: {unpack.stderr.strip()}")
    _keep_only_binaries(staging, package, arch)
    (staging / ".deb").write_text(found[0].name + "\n")
    staging.rename(target)  # complete trees only: a killed run leaves a dot-directory
    found[0].unlink()


def fetch_all(download: bool = False) -> Path:
    """The cache root, once every package of BINARIES is unpacked there.
    Tests only look; tools/setup.sh --test downloads (helpers.fetch). Skips,
    naming the reason, when that cannot be done."""
    require("apt-get", "apt")
    require("dpkg", "dpkg")
    try:
        root = _private_directory(cache_root())
    except PermissionError as error:
        pytest.skip(f"cannot create the test cache (set PROBEGEN_TEST_CACHE): {error}")
    wanted = sorted({(b.package, arch) for b, arch in cases()})
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one download per machine, even with parallel runs
        missing = [(p, a) for p, a in wanted if not _unpacked_dir(root, p, a).is_dir()]
        if missing and not download:
            pytest.skip(f"{len(missing)} Debian packages not in {root}: tools/setup.sh --test fetches them")
        if missing:
            try:
                _download(root, missing)
            except (RuntimeError, OSError) as error:
                pytest.skip(f"could not fetch Debian packages into {root}: {error}")
    return root


def binary_path(root: Path, binary: DebianBinary, arch: str) -> Path:
    """The one file of ``binary`` in its unpacked package."""
    tree = _unpacked_dir(root, binary.package, arch)
    matches = sorted(p for p in tree.glob(binary.pattern.format(triplet=TRIPLETS[arch]))
                     if p.is_file() and not p.is_symlink())
    if len(matches) != 1:
        raise AssertionError(f"{binary.pattern} matches {len(matches)} files in {tree}")
    return matches[0]
