"""Fixtures for the control-server suite: a copy of the reterm binary that an
unprivileged user can run, reterm processes with AI access on, and the scrub
that keeps every token out of pytest's output."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from identity import IS_ROOT  # noqa: E402
from masking import scrub  # noqa: E402
from reterm_proc import Reterm  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _built_binary():
    if os.environ.get("RETERM_BIN"):
        return Path(os.environ["RETERM_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / "debug" / "reterm"


@pytest.fixture(scope="session")
def reterm_bin():
    """`target/debug/reterm` copied into a fresh 0755 directory, because the
    unprivileged user reterm runs as may not be able to reach the build tree."""
    source = _built_binary()
    if not source.exists():
        pytest.fail(f"{source} is missing: run `cargo build --bin reterm` first")
    directory = Path(tempfile.mkdtemp(prefix="reterm-bin-"))
    directory.chmod(0o755)
    binary = directory / "reterm"
    shutil.copy2(source, binary)
    binary.chmod(0o755)
    yield binary
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def reterm_version(reterm_bin):
    """reterm's version, as `reterm --version` prints it."""
    out = subprocess.run([str(reterm_bin), "--version"], capture_output=True, text=True,
                         check=True).stdout.strip()
    name, _, version = out.partition(" ")
    assert name == "reterm", out
    return version


@pytest.fixture
def start_reterm(reterm_bin, request):
    """Starts reterm processes; all are stopped and their homes removed after
    the test. `serving=True` also waits until AI access is on and reads the
    token."""
    started = []
    request.node.reterm_instances = started

    def start(*, serving=True, **kw):
        proc = Reterm(reterm_bin, **kw)
        started.append(proc)
        proc.start()
        if serving:
            proc.wait_serving()
            proc.fetch_token()
        return proc

    yield start
    for proc in started:
        proc.cleanup()


@pytest.fixture
def server(start_reterm):
    """A reterm of its own, serving, with its token read."""
    return start_reterm()


@pytest.fixture(scope="module")
def shared_server(reterm_bin, request):
    """One serving reterm for a module's tests that change nothing."""
    proc = Reterm(reterm_bin)
    request.module.reterm_shared = proc
    proc.start()
    try:
        proc.wait_serving()
        proc.fetch_token()
        yield proc
    finally:
        proc.cleanup()


needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root: uses two local users")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        procs = list(getattr(item, "reterm_instances", []))
        shared = getattr(item.module, "reterm_shared", None)
        if shared is not None:
            procs.append(shared)
        for i, proc in enumerate(procs):
            err = proc.stderr_text()
            if err:
                report.sections.append((f"reterm #{i} stderr", err[-4000:]))
    # No token may leave through a report: scrub the failure and captured output.
    if report.longrepr is not None:
        text = str(report.longrepr)
        clean = scrub(text)
        if clean != text:
            report.longrepr = clean
    report.sections = [(name, scrub(content)) for name, content in report.sections]


def pytest_report_header(config):
    mode = "root: reterm and clients run as uid 65534" if IS_ROOT else "not root: two-user tests skipped"
    return f"control tests: {mode}"

