"""Writing outputs safely (issue 12, part 6), tried for real: device nodes
and FIFOs written in place and left as they are, symbolic links planted by
another user refused, every failed write one line with exit 2 and the old
file intact, and no temporary left behind by signals or by SIGKILL.

Device nodes are made by the tests in their own directories; the real
/dev/null is written to only in one test, which checks it afterwards and
restores it should it ever not be a character device.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import resource
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from probegen.files import marker

REPO = Path(__file__).parent.parent
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (device nodes, mounts, chown)")
# Local/experimental major number: no driver behind it, so even a wrong
# open of such a node reaches no hardware.
UNUSED_MAJOR = 240


def probegen(*args, cwd, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "probegen", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120, **kwargs)


def assert_one_line_error(result: subprocess.CompletedProcess, path) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}: error: "), result.stderr


def temporaries(root: Path) -> list[Path]:
    """Every temporary of probegen's naming (or the old mkstemp one) under root."""
    return [p for p in root.rglob(".*") if p.name.endswith(".tmp")]


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "probes.yaml").write_bytes((REPO / "probes.yaml").read_bytes())
    return tmp_path


@pytest.fixture(scope="module")
def header_text(tmp_path_factory) -> str:
    cwd = tmp_path_factory.mktemp("header")
    (cwd / "probes.yaml").write_bytes((REPO / "probes.yaml").read_bytes())
    result = probegen("header", "-o", "-", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout


# A header probegen wrote earlier: it carries the marker, so probegen may replace it.
OLD_HEADER = f"{marker.LINES['c']}\nold\n"

# --- Device nodes, FIFOs, sockets, /dev/stdout ---------------------------------

@root_only
@pytest.mark.parametrize("command", ["docs", "header"])
def test_null_device_node_stays_a_device(project, command):
    node = project / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    for _ in range(2):  # the second run too: a device is never "current"
        result = probegen(command, "-o", node, cwd=project)
        assert result.returncode == 0, result.stderr
        info = os.lstat(node)
        assert stat.S_ISCHR(info.st_mode) and info.st_rdev == os.makedev(1, 3)
    assert not temporaries(project)


@root_only
def test_full_device_node_is_one_line_and_stays_a_device(project):
    node = project / "full"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    result = probegen("header", "-o", node, cwd=project)
    assert_one_line_error(result, node)
    assert "No space left on device" in result.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode)


@pytest.fixture
def real_devices_checked():
    """For the tests that write to the real /dev/null and /dev/stdout (run
    only against fixed code): afterwards both must be what they were; if a
    write ever replaced one, it is restored and the test fails loudly."""
    yield
    broken = []
    info = os.lstat("/dev/null") if os.path.lexists("/dev/null") else None
    if info is None or not (stat.S_ISCHR(info.st_mode) and info.st_rdev == os.makedev(1, 3)):
        broken.append("/dev/null")
        with contextlib.suppress(FileNotFoundError):
            os.unlink("/dev/null")
        os.mknod("/dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.chmod("/dev/null", 0o666)
    if not os.path.islink("/dev/stdout") or os.readlink("/dev/stdout") != "/proc/self/fd/1":
        broken.append("/dev/stdout")
        with contextlib.suppress(FileNotFoundError):
            os.unlink("/dev/stdout")
        os.symlink("/proc/self/fd/1", "/dev/stdout")
    if broken:
        pytest.fail(f"a write replaced {' and '.join(broken)} (restored)")


@root_only
def test_real_dev_null_stays_a_device(project, real_devices_checked):
    for command in ("docs", "header"):
        result = probegen(command, "-o", "/dev/null", cwd=project)
        assert result.returncode == 0, result.stderr


def test_fifo_with_a_reader_gets_the_output(project, header_text):
    fifo = project / "fifo"
    os.mkfifo(fifo)
    # Opened read-write by the test: a reader exists before probegen runs.
    reader = os.open(fifo, os.O_RDWR)
    received = bytearray()
    expected = len(header_text.encode())

    def read_all():
        while len(received) < expected:
            received.extend(os.read(reader, expected - len(received)))
    thread = threading.Thread(target=read_all, daemon=True)
    thread.start()
    try:
        result = probegen("header", "-o", fifo, cwd=project)
        thread.join(timeout=30)
    finally:
        os.close(reader)
    assert result.returncode == 0, result.stderr
    assert received.decode() == header_text
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and not temporaries(project)


def test_fifo_without_a_reader_is_refused_at_once(project):
    fifo = project / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    result = probegen("docs", "-o", fifo, cwd=project)
    assert time.monotonic() - started < 30
    assert_one_line_error(result, fifo)
    assert "no process reads this FIFO" in result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_foreign_check_does_not_open_a_fifo(tmp_path):
    """Before writing, outputs are checked for foreign files: a FIFO (or a
    device) there is not opened for it (a writer waiting on it stays waiting)."""
    from probegen.files.output import GeneratedFile, refuse_foreign

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)
    writer.start()
    time.sleep(0.2)  # the writer waits in open()
    refuse_foreign([GeneratedFile(fifo, "text")])
    writer.join(timeout=0.5)
    opened = not writer.is_alive()
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # lets the writer go
    writer.join(timeout=5)
    assert not opened

@root_only
def test_real_dev_stdout_to_a_pipe(project, header_text, real_devices_checked):
    result = probegen("header", "-o", "/dev/stdout", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout == header_text


def test_stdout_link_appended_to_a_file_is_not_replaced(project, header_text):
    """Through a link like /dev/stdout (made here, not the real one)."""
    (project / "stdout").symlink_to("/proc/self/fd/1")
    log = project / "log"
    log.write_text("before\n")
    inode = log.stat().st_ino
    with open(log, "a") as stdout:
        result = subprocess.run([sys.executable, "-m", "probegen", "header", "-o", "stdout"],
                                stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=project, timeout=60)
    assert result.returncode == 0, result.stderr
    assert log.read_text() == "before\n" + header_text and log.stat().st_ino == inode


def test_dev_fd_of_a_pipe_like_process_substitution(project, header_text):
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as pipe_reader:
        chunks = []
        thread = threading.Thread(target=lambda: chunks.append(pipe_reader.read()), daemon=True)
        thread.start()
        try:
            result = subprocess.run([sys.executable, "-m", "probegen", "header", "-o", f"/dev/fd/{write_end}"],
                                    capture_output=True, text=True, cwd=project, pass_fds=[write_end], timeout=60)
        finally:
            os.close(write_end)
        thread.join(timeout=30)
    assert result.returncode == 0, result.stderr
    assert chunks == [header_text.encode()]


@root_only
def test_block_device_is_refused_unopened(project):
    node = project / "disk"
    os.mknod(node, 0o600 | stat.S_IFBLK, os.makedev(UNUSED_MAJOR, 0))
    result = probegen("header", "-o", node, cwd=project)
    assert_one_line_error(result, node)
    assert "block device" in result.stderr and stat.S_ISBLK(os.lstat(node).st_mode)


def test_socket_is_refused(project):
    path = project / "sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        result = probegen("docs", "-o", path, cwd=project)
    assert_one_line_error(result, path)
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


# --- Symbolic links --------------------------------------------------------------

def test_own_symlink_is_followed_and_kept(project, header_text):
    (project / "real.h").write_text(OLD_HEADER)
    link = project / "link.h"
    link.symlink_to("real.h")
    result = probegen("header", "-o", link, cwd=project)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and (project / "real.h").read_text() == header_text


@root_only
@pytest.mark.parametrize("how", ["the link itself", "root's link to it", "a directory link"])
def test_symlink_planted_by_another_user_is_refused(project, how):
    """Root writing into a shared directory where another user planted a link
    to a file of root's: the file is not touched, nor the links."""
    victims = project / "victims"
    victims.mkdir()
    victim = victims / "usdt.h"
    victim.write_text("precious\n")
    nobody = pwd.getpwnam("nobody").pw_uid
    planted = project / "planted"
    planted.symlink_to(victims if how == "a directory link" else victim)
    os.chown(planted, nobody, nobody, follow_symlinks=False)
    named = {"the link itself": planted, "root's link to it": project / "mine.h",
             "a directory link": planted / "usdt.h"}[how]
    if how == "root's link to it":
        named.symlink_to("planted")
    result = probegen("header", "-o", named, cwd=project)
    assert_one_line_error(result, named)
    assert "symbolic link owned by another user" in result.stderr
    assert victim.read_text() == "precious\n" and planted.is_symlink()


def test_own_directory_link_and_relative_parts_are_followed(project, header_text):
    (project / "real" / "inc").mkdir(parents=True)
    (project / "inc").symlink_to("real/inc")
    result = probegen("header", "-o", "inc/../inc/./usdt.h", cwd=project)
    assert result.returncode == 0, result.stderr
    assert (project / "real" / "inc" / "usdt.h").read_text() == header_text


def test_link_loop_is_one_line(project):
    (project / "a").symlink_to("b")
    (project / "b").symlink_to("a")
    result = probegen("header", "-o", "a", cwd=project)
    assert_one_line_error(result, "a")
    assert "too many levels of symbolic links" in result.stderr


# --- Every failed write: one line, exit 2, old file intact, no temporary --------

@contextlib.contextmanager
def mounted(*mount_args):
    target = mount_args[-1]
    result = subprocess.run(["mount", *map(str, mount_args)], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"mount does not work here: {result.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", str(target)], check=True)


def test_file_where_a_directory_should_be(project):
    (project / "inc").write_text("a file\n")
    result = probegen("header", "-o", project / "inc" / "usdt.h", cwd=project)
    assert_one_line_error(result, project / "inc" / "usdt.h")
    assert (project / "inc").read_text() == "a file\n"


def test_missing_parent_under_a_file(project):
    (project / "inc").write_text("a file\n")
    result = probegen("header", "-o", project / "inc" / "sub" / "usdt.h", cwd=project)
    assert_one_line_error(result, project / "inc" / "sub" / "usdt.h")


def test_directory_in_the_way(project):
    (project / "usdt.h").mkdir()
    (project / "usdt.h" / "keep").write_text("kept\n")
    result = probegen("header", "-o", "usdt.h", cwd=project)
    assert_one_line_error(result, "usdt.h")
    assert (project / "usdt.h" / "keep").read_text() == "kept\n"


def test_proc_target(project):
    result = probegen("header", "-o", "/proc/self/status", cwd=project)
    assert_one_line_error(result, "/proc/self/status")


@root_only
def test_read_only_filesystem_keeps_the_old_file(project, tmp_path_factory):
    source = tmp_path_factory.mktemp("ro-source")
    (source / "usdt.h").write_text(OLD_HEADER)
    view = project / "ro"
    view.mkdir()
    with mounted("--bind", "-o", "ro", source, view):
        result = probegen("header", "-o", view / "usdt.h", cwd=project)
        assert_one_line_error(result, view / "usdt.h")
        assert "Read-only file system" in result.stderr
    assert (source / "usdt.h").read_text() == OLD_HEADER and not temporaries(source)


@root_only
def test_full_filesystem_keeps_the_old_file(project):
    small = project / "small"
    small.mkdir()
    with mounted("-t", "tmpfs", "-o", "size=16k", "tmpfs", small):
        (small / "usdt.h").write_text(OLD_HEADER)
        result = probegen("header", "-o", small / "usdt.h", cwd=project)  # ~60 KB: does not fit
        assert_one_line_error(result, small / "usdt.h")
        assert "No space left on device" in result.stderr
        assert (small / "usdt.h").read_text() == OLD_HEADER and not temporaries(small)


def test_file_size_limit_keeps_the_old_file(project):
    (project / "usdt.h").write_text(OLD_HEADER)

    def limit_file_size():  # Python ignores SIGXFSZ: the write fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
    result = probegen("header", "-o", "usdt.h", cwd=project, preexec_fn=limit_file_size)
    assert_one_line_error(result, "usdt.h")
    assert "File too large" in result.stderr
    assert (project / "usdt.h").read_text() == OLD_HEADER and not temporaries(project)


# --- Signals and SIGKILL -----------------------------------------------------------

BIG = 48 << 20
# Writes one big file and stops after its first megabyte until a line comes
# on stdin, saying WRITING: the test catches it mid-write however loaded the
# machine (a writer left to run finished 48 MB before the test looked, once).
BIG_WRITER = f"""
import os
import sys
from pathlib import Path
from probegen.files.output import GeneratedFile, write_if_changed
def write_then_wait(fd, data, write=os.write):
    os.write = write
    written = write(fd, data[:1 << 20])
    print("WRITING", flush=True)
    sys.stdin.readline()
    return written
os.write = write_then_wait
try:
    write_if_changed(GeneratedFile(Path(sys.argv[1]), "x" * {BIG}))
except KeyboardInterrupt:
    sys.exit(130)
"""


def start_big_writer(target: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", BIG_WRITER, str(target)], cwd=target.parent,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_temporary(directory: Path, process: subprocess.Popen, known=()) -> Path:
    """The temporary the writer is writing, once it says so (it then waits)."""
    line = process.stdout.readline()
    found = [directory / n for n in os.listdir(directory) if n.endswith(".tmp") and directory / n not in known]
    if line != "WRITING\n" or len(found) != 1:
        pytest.fail(f"never saw a temporary being written (writer said {line!r}, exit {process.poll()})")
    return found[0]


@pytest.mark.parametrize("signum, exit_code", [
    (signal.SIGTERM, -signal.SIGTERM), (signal.SIGHUP, -signal.SIGHUP), (signal.SIGINT, 130)])
def test_signal_during_a_write_leaves_no_temporary(tmp_path, signum, exit_code):
    target = tmp_path / "big.out"
    target.write_text(OLD_HEADER)
    writer = start_big_writer(target)
    wait_for_temporary(tmp_path, writer)
    writer.send_signal(signum)
    _, stderr = writer.communicate(timeout=60)
    assert writer.returncode == exit_code, stderr
    assert "Traceback" not in stderr
    assert target.read_text() == OLD_HEADER and not temporaries(tmp_path)


def test_next_run_sweeps_only_dead_runs_own_temporaries(project, header_text):
    """Temporaries of a SIGKILLed run are removed by the next run, whatever
    their pid; one of a live (waiting) run, another user's, another
    naming's and one that is not a regular file are left alone; the live
    run then completes."""
    out = project / "out"
    out.mkdir()
    killed = start_big_writer(out / "killed.out")
    stale = wait_for_temporary(out, killed)
    killed.kill()
    killed.wait()
    assert stale.exists()

    live = start_big_writer(out / "live.out")
    live_temporary = wait_for_temporary(out, live, known={stale})  # it waits, lock held
    # Named for pid 1, which is alive, but no process holds its lock: stale.
    unlocked = out / ".usdt.h.probegen-1-0123456789ab.tmp"
    unlocked.write_text("stale\n")
    decoys = [out / ".usdt.h.k2j4h1x.tmp", out / "usdt.h.probegen-4-0123456789ab.tmp"]
    for decoy in decoys:
        decoy.write_text("not ours to remove\n")
    os.mkfifo(out / ".x.probegen-2-0123456789ab.tmp")
    decoys.append(out / ".x.probegen-2-0123456789ab.tmp")
    if os.geteuid() == 0:
        other_user = out / ".y.probegen-3-0123456789ab.tmp"
        other_user.write_text("another user's\n")
        os.chown(other_user, pwd.getpwnam("nobody").pw_uid, -1)
        decoys.append(other_user)
    try:
        result = probegen("header", "-o", out / "usdt.h", cwd=project)
        assert result.returncode == 0, result.stderr
        assert not stale.exists() and not unlocked.exists() and live_temporary.exists()
        assert all(os.path.lexists(d) for d in decoys)
    finally:
        _, stderr = live.communicate("go\n", timeout=60)
    assert live.returncode == 0, stderr
    assert (out / "live.out").stat().st_size == BIG and not live_temporary.exists()
    assert (out / "usdt.h").read_text() == header_text


def big_catalog(directory: Path, probes: int = 2000) -> Path:
    lines = ["provider: synth", "header:", "  enable_macro: SYNTH_USDT", "outputs:", "  header: out/usdt.h",
             "  bpftrace: out/bpf", "  bcc: out/bcc", "  docs: out/probes.md", "probes:"]
    types = ["int", "uint64_t", "const char *", "uint16_t", "void *"]
    for i in range(probes):
        lines += [f"  - name: probe_{i}", "    group: g", f"    doc: Synthetic probe {i}."]
        if i % 4:
            lines.append("    args:")
            lines += [f"      - {{name: a{j}, type: {types[(i + j) % len(types)]!r}}}" for j in range(i % 4)]
    catalog = directory / "probes.yaml"
    catalog.write_text("\n".join(lines) + "\n")
    return catalog


# Renders the catalog once, then forks writers of its outputs (alternately
# edited and as generated, so every run writes) and SIGKILLs each at a
# random moment within one write's duration.
KILL_LOOP = """
import json, os, random, signal, sys, time
from probegen.catalog import load_catalog
from probegen.generators import render_outputs
from probegen.files.output import GeneratedFile, write_all

def writer(files):
    pid = os.fork()
    if pid == 0:
        try:
            write_all(files)
            os._exit(0)
        except BaseException:
            os._exit(1)
    return pid

def left_behind():
    return sum(n.endswith(".tmp") for d, _, names in os.walk("out") for n in names)

files = render_outputs(load_catalog("probes.yaml"))
edited = [GeneratedFile(f.path, f.text + "\\n", f.executable) for f in files]
start = time.monotonic()
assert os.waitpid(writer(edited), 0)[1] == 0
span = time.monotonic() - start
rng = random.Random(int(sys.argv[2]))
killed = leaving = 0
for i in range(int(sys.argv[1])):
    pid = writer(files if i % 2 == 0 else edited)
    time.sleep(rng.uniform(0, span))
    os.kill(pid, signal.SIGKILL)
    killed += os.WIFSIGNALED(os.waitpid(pid, 0)[1])
    leaving += left_behind() > 0
print(json.dumps({"span": span, "killed": killed, "left_temporaries": leaving}))
"""


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_sigkill_loop_then_one_normal_run_leaves_complete_outputs(tmp_path_factory):
    clean = tmp_path_factory.mktemp("clean")
    big_catalog(clean)
    assert probegen("generate", "-q", cwd=clean).returncode == 0
    work = tmp_path_factory.mktemp("killed")
    big_catalog(work)

    # probegen generate itself, SIGKILLed as soon as one of its temporaries appears.
    (work / "out").mkdir()
    for _ in range(2):
        run = subprocess.Popen([sys.executable, "-m", "probegen", "generate", "-q"], cwd=work,
                               stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while run.poll() is None and time.monotonic() < deadline and not temporaries(work / "out"):
            pass
        run.kill()
        run.wait()

    loop = subprocess.run([sys.executable, "-c", KILL_LOOP, "40", "12"], capture_output=True, text=True,
                          cwd=work, timeout=120)
    assert loop.returncode == 0, loop.stderr
    counts = json.loads(loop.stdout)
    assert counts["killed"] >= 12, counts
    assert counts["left_temporaries"] >= 4, counts  # the kills did land in the middle of writes

    result = probegen("generate", "-q", cwd=work)
    assert result.returncode == 0, result.stderr
    assert not temporaries(work)
    assert tree(work / "out") == tree(clean / "out")


# --- '-' is stdout wherever -o takes a file ---------------------------------------

def test_dash_is_stdout_for_import_and_verify(tmp_path):
    from helpers import PYTHON311, require_file

    require_file(PYTHON311, "python3.11-minimal")
    plain = probegen("import", PYTHON311, "--provider", "python", cwd=tmp_path)
    dashed = probegen("import", PYTHON311, "--provider", "python", "-o", "-", cwd=tmp_path)
    assert plain.returncode == dashed.returncode == 0, dashed.stderr
    assert dashed.stdout == plain.stdout and "provider: python" in plain.stdout
    (tmp_path / "python.yaml").write_text(plain.stdout)
    report = probegen("verify", "-c", "python.yaml", PYTHON311, "--format", "json", "-o", "-", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert isinstance(json.loads(report.stdout), dict)
    assert not (tmp_path / "-").exists()


def test_a_sweeping_run_leaves_a_temporary_alone_until_its_rename(tmp_path, monkeypatch):
    """ninja runs probegen header and docs at once into one directory; one
    run's sweep must not take the other's finished temporary for a killed
    run's between its last write and its rename (seen in CI: 'cannot write:
    No such file or directory'). The sweep runs in a real second process at
    exactly that moment."""
    from probegen.files import output

    real_rename = os.rename
    sweeps = []
    sweep = ("import sys; from probegen.files import output, place; "
             "output._sweep(place.locate(sys.argv[1] + '/x', create=False))")

    def rename_after_a_sweep(*args, **kwargs):
        sweeps.append(subprocess.run([sys.executable, "-c", sweep, str(tmp_path)], capture_output=True, text=True))
        return real_rename(*args, **kwargs)

    monkeypatch.setattr(output.os, "rename", rename_after_a_sweep)
    target = tmp_path / "probes.md"
    assert output.write_if_changed(output.GeneratedFile(target, "probes\n"))
    assert [s.returncode for s in sweeps] == [0], [s.stderr for s in sweeps]
    assert target.read_text() == "probes\n"
    assert not [p for p in tmp_path.iterdir() if p.name != "probes.md"]


@pytest.mark.parametrize("name", [b"\xff.h", "a".encode() + "\u00e9".encode() * 100 + b".h"])
def test_an_output_named_with_bytes_not_utf8(tmp_path, name):
    """Bug: the temporary's name was made from the output's as UTF-8 text, a UnicodeEncodeError
    traceback for a name with a byte that is not UTF-8; a long name is cut at a byte, even inside
    a character."""
    from probegen.files.output import GeneratedFile, write_if_changed

    path = tmp_path / os.fsdecode(name)
    assert write_if_changed(GeneratedFile(path, "text")) and path.read_text() == "text"
    assert os.listdir(tmp_path) == [path.name]
