"""Generated request heads through a real reterm control server (issue 19).

Every case from heads.py is sent over its own loopback connection to a reterm
running as the unprivileged user, and its answer checked against what the
model says the contract requires. Cases run in batches: seven workers send
fast cases while one sends slow writers, so up to 8 connections are open at
once, the contract's limit, and none may be refused for it. After each batch:

* the slot probe: 8 connections each send part of a head (so each holds a
  slot), a 9th connection must be closed unanswered, and the 8 must then all
  be served. A slot a case leaked leaves one of the 8 refused; a limit that
  grew serves the 9th;
* the process must still run, and its stderr must not mention a panic.

A worker opens its next connection only once the server has closed the last
one (every case reads to the close), and the server gives a slot back before
its close can be seen, so "8 at once" never overshoots by a race of the
client's making.

Run directly for the long run (scripts/fuzz-heads wraps it); the control
suite runs a short, seeded one (test_heads_fuzz.py).
"""

import argparse
import errno
import select
import signal
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heads  # noqa: E402
from identity import acting_as, server_uid  # noqa: E402
from rawhttp import _parse  # noqa: E402

SLOTS = 8
FAST_WORKERS = 7
# What a fast case may take before it counts as hung: answers come in
# milliseconds, and nothing generated waits for a deadline.
FAST_TIMEOUT = 10.0
SLOW_TIMEOUT = heads.HEAD_DEADLINE + 6.0
# A head still arriving at the deadline is closed at it, never before.
EARLY = 0.25
# SO_LINGER 0: closing resets the connection, so a million of them leave no
# TIME_WAIT sockets behind in the kernel's tables (the server's peer check
# looks the client's socket up there).
RESET_ON_CLOSE = struct.pack("ii", 1, 0)


@dataclass
class Outcome:
    raw: bytes
    closed: bool
    elapsed: float      # connect to close (or giving up)
    sent_at: float      # connect to the last byte written


def _read_until_close(sock, deadline):
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return data, False
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            continue
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data, True
        if not chunk:
            return data, True
        data += chunk


def _close(sock):
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET_ON_CLOSE)
    except OSError:
        pass
    sock.close()


class _Sockets:
    """Client sockets made ahead, many at a time.

    A socket belongs to the user whose effective uid made it, and the server
    serves only its own user's; as root, every switch of the effective uid
    is a signal to every thread of the process (that is how glibc changes a
    multi-threaded process's ids), so the sockets are made in bulk under one
    switch rather than one switch each.
    """

    BULK = 256

    def __init__(self):
        self._lock = threading.Lock()
        self._ready = []

    def take(self):
        with self._lock:
            if not self._ready:
                with acting_as(server_uid()):
                    self._ready = [socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                                   for _ in range(self.BULK)]
            return self._ready.pop()


_SOCKETS = _Sockets()


def _connect(port):
    sock = _SOCKETS.take()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.connect(("127.0.0.1", port))
    return sock


def send_case(case, port):
    """Sends `case` on a fresh connection and reads to the close."""
    sock = _connect(port)
    start = time.monotonic()
    sent_at = 0.0
    early = b""
    try:
        for k, piece in enumerate(case.pieces):
            if k and case.gap:
                # A slow writer stops as soon as the server answers or closes
                # (a 100 Continue is not an answer: the body still has to go).
                early, done = _read_while_waiting(sock, case.gap, early)
                if done:
                    break
            elif k and case.pause:
                time.sleep(case.pause)
            try:
                sock.sendall(piece)
            except OSError as e:
                if e.errno in (errno.EPIPE, errno.ECONNRESET):
                    break
                raise
            sent_at = time.monotonic() - start
        else:
            if case.half_close:
                try:
                    sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
        timeout = SLOW_TIMEOUT if case.slow else FAST_TIMEOUT
        raw, closed = _read_until_close(sock, time.monotonic() + timeout)
        return Outcome(early + raw, closed, time.monotonic() - start, sent_at)
    finally:
        _close(sock)


def _read_while_waiting(sock, seconds, early):
    """Waits `seconds` for the server, reading what it sends meanwhile:
    (everything read so far, whether it closed or sent more than 1xx)."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return early, False
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            return early, False
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return early, True
        if not chunk:
            return early, True
        early += chunk
        interim, status, _, _ = _parse(early)
        if status is not None or early != _interim_bytes(early, interim):
            return early, True


def verdict(case, out):
    """None when the answer is the contract's; else what is wrong."""
    want = case.expect
    if not out.closed:
        return "the connection was not closed"
    interim, status, headers, body = _parse(out.raw)
    if status is None and case.late_ok and out.sent_at > case.late_ok and out.raw == b"":
        return None  # a slow writer the machine made late: past the deadline, closed is right
    if status is None:
        if want.status is not None and not (want.or_gone and tuple(interim) == want.interim):
            return "closed without an answer"
        if tuple(interim) != want.interim or out.raw != _interim_bytes(out.raw, interim):
            return f"closed after {len(out.raw)} bytes that are not a whole answer"
        if case.kind == "slow-past" and out.elapsed < heads.HEAD_DEADLINE - EARLY:
            return f"closed {out.elapsed:.2f}s after accept, before the head deadline"
        return None
    if want.status is None:
        return f"answered {status}, where the connection must be closed unanswered"
    if status != want.status:
        return f"answered {status}"
    if tuple(interim) != want.interim:
        return f"interim answers {interim}, not {list(want.interim)}"
    names = {name.lower(): value for name, value in headers}
    if names.get("connection", "").lower() != "close":
        return "no Connection: close"
    if names.get("content-length", str(len(body))) != str(len(body)):
        return "a body not of its Content-Length"
    if want.empty and body:
        return f"a body where it must be empty: {body[:80]!r}"
    if status == 405 and names.get("allow") != "POST":
        return "405 without Allow: POST"
    if status == 200 and b'"result"' not in body:
        return "200 without a JSON-RPC result"
    return None


def _interim_bytes(raw, interim):
    """The bytes of `interim` 1xx answers as they lead `raw` (each ends at
    its blank line), so a close after them can be told from a torn answer."""
    at = 0
    for _ in interim:
        end = raw.find(b"\r\n\r\n", at)
        if end < 0:
            return b""
        at = end + 4
    return raw[:at]


def redact(data, token):
    """`data` with every run of 6 or more characters of the token (in any
    case) masked, so no report can carry the token or most of it."""
    low, tok = data.lower(), token.lower().encode()
    masked = bytearray(data)
    for size in range(len(tok), 5, -1):
        for i in range(len(tok) - size + 1):
            at = low.find(tok[i:i + size])
            while at >= 0:
                masked[at:at + size] = b"*" * size
                at = low.find(tok[i:i + size], at + 1)
    return bytes(masked)


def probe_request(target):
    body = heads.list_sessions(1)
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{target.port}\r\n"
            f"Authorization: Bearer {target.token}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode() + body


def probe_slots(target):
    """None when exactly 8 connections are served at once; else what is wrong."""
    request = probe_request(target)
    split = 30
    held = []
    try:
        for _ in range(SLOTS):
            sock = _connect(target.port)
            held.append(sock)
            try:
                sock.sendall(request[:split])
            except OSError:
                pass  # refused at once: counted below as not served
        ninth = _connect(target.port)
        try:
            ninth.sendall(request)
            raw, closed = _read_until_close(ninth, time.monotonic() + FAST_TIMEOUT)
        except OSError:
            raw, closed = b"", True
        finally:
            _close(ninth)
        if raw or not closed:
            return f"a 9th connection was not closed unanswered: {raw[:40]!r}"
        served = 0
        for sock in held:
            try:
                sock.sendall(request[split:])
            except OSError:
                pass  # already closed unanswered: counted below as not served
        for sock in held:
            raw, closed = _read_until_close(sock, time.monotonic() + FAST_TIMEOUT)
            if closed and raw.startswith(b"HTTP/1.1 200 "):
                served += 1
        if served != SLOTS:
            return f"{served} of {SLOTS} connections at once served: {SLOTS - served} slot(s) leaked"
        return None
    finally:
        for sock in held:
            _close(sock)


@dataclass
class Report:
    cases: int = 0
    slow: int = 0
    late: int = 0
    batches: int = 0
    mismatches: list = field(default_factory=list)   # (index, kind, rule, problem, data)
    mismatch_count: int = 0
    leaks: list = field(default_factory=list)
    panics: int = 0
    died: bool = False
    seconds: float = 0.0
    kinds: dict = field(default_factory=dict)
    # How many cases the contract wanted each answer for (None: closed unanswered).
    expected: dict = field(default_factory=dict)

    @property
    def ok(self):
        return not (self.mismatch_count or self.leaks or self.panics or self.died)

    def summary(self):
        rate = self.cases / self.seconds if self.seconds else 0.0
        return (f"{self.cases} cases ({self.slow} slow writers) in {self.batches} batches, "
                f"{self.seconds:.0f} s, {rate:.0f} cases/s: mismatches {self.mismatch_count}, "
                f"panics {self.panics}, process exited {'yes' if self.died else 'no'}, "
                f"slots leaked {len(self.leaks)} (probes failed)")


class Runner:
    """Runs a seeded set of cases against `server` (a started, serving
    reterm_proc.Reterm with its token read)."""

    def __init__(self, server, *, seed, workers=FAST_WORKERS, keep=20, on_mismatch=None):
        self.server = server
        # Told of each mismatch as it happens (its report line), for a long run.
        self.on_mismatch = on_mismatch
        self.target = heads.Target(server.token.value, server.port)
        self.seed = seed
        self.workers = workers
        self.keep = keep
        self.report = Report()
        self._lock = threading.Lock()

    def _record(self, case, problem):
        with self._lock:
            self.report.cases += 1
            self.report.kinds[case.kind.split("+")[0]] = (
                self.report.kinds.get(case.kind.split("+")[0], 0) + 1)
            want = case.expect.status
            self.report.expected[want] = self.report.expected.get(want, 0) + 1
            if case.slow:
                self.report.slow += 1
            if problem is None:
                return
            self.report.mismatch_count += 1
            data = redact(case.data, self.target.token)
            entry = (case.index, case.kind, case.expect.rule, case.expect.status, problem,
                     case.half_close, data[:600])
            if len(self.report.mismatches) < self.keep:
                self.report.mismatches.append(entry)
            if self.on_mismatch:
                self.on_mismatch(_mismatch_line(entry))

    def _run_one(self, case):
        out = send_case(case, self.target.port)
        problem = verdict(case, out)
        if problem is None and case.late_ok and out.sent_at > case.late_ok:
            with self._lock:
                self.report.late += 1
        self._record(case, problem)

    def _run_many(self, cases):
        it = iter(cases)
        take = threading.Lock()

        def work():
            while True:
                with take:
                    case = next(it, None)
                if case is None:
                    return
                self._run_one(case)

        threads = [threading.Thread(target=work, daemon=True) for _ in range(self.workers)]
        for thread in threads:
            thread.start()
        return threads

    def batch(self, fast, slow):
        """Runs the cases `fast` on the workers and `slow` one at a time
        beside them, then checks the slots and the process."""
        threads = self._run_many(fast)
        slow_thread = threading.Thread(
            target=lambda: [self._run_one(c) for c in slow], daemon=True)
        slow_thread.start()
        for thread in [*threads, slow_thread]:
            thread.join()
        self.report.batches += 1
        leak = probe_slots(self.target)
        if leak is not None:
            self.report.leaks.append((self.report.batches, leak))
        if not self.server.running():
            self.report.died = True
        self.report.panics = self.server.stderr_text().count("panick")

    def run(self, cases, *, batch=2000, slow_per_batch=2, progress=None):
        """`cases` cases in all: the every-byte sweep first, then generated
        ones; every batch of `batch` fast cases also runs `slow_per_batch`
        slow writers. Stops early once the server has died."""
        start = time.monotonic()
        sweep = heads.sweep(self.target)[:cases]
        fast_index = 0
        slow_index = 0
        done = 0
        pending = list(sweep)
        while done < cases and not self.report.died:
            n_slow = min(slow_per_batch, cases - done)
            n_fast = min(batch, cases - done - n_slow)
            fast = pending[:n_fast]
            pending = pending[n_fast:]
            while len(fast) < n_fast:
                fast.append(heads.generate(self.seed, fast_index, self.target))
                fast_index += 1
            slow = [heads.generate_slow(self.seed, slow_index + i, self.target)
                    for i in range(n_slow)]
            slow_index += n_slow
            self.batch(fast, slow)
            done += n_fast + n_slow
            self.report.seconds = time.monotonic() - start
            if progress:
                progress(self.report)
        self.report.seconds = time.monotonic() - start
        return self.report


def _mismatch_line(entry):
    index, kind, rule, status, problem, half, data = entry
    want = "closed unanswered" if status is None else status
    return (f"MISMATCH case {index} ({kind}{', half-closed' if half else ''}): "
            f"expected {want} ({rule}); {problem}; sent {data!r}")


def describe(report):
    """The report's lines, mismatches included (their data redacted)."""
    lines = [report.summary()]
    if report.late:
        lines.append(f"{report.late} slow writers were late on a busy machine (closed, as is right)")
    lines.append("cases by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(report.kinds.items())))
    answers = sorted(report.expected.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))
    lines.append("cases by the answer due: " + ", ".join(
        f"{'closed' if k is None else k} {n}" for k, n in answers))
    lines.extend(_mismatch_line(entry) for entry in report.mismatches)
    for batch, leak in report.leaks:
        lines.append(f"SLOTS after batch {batch}: {leak}")
    if report.died:
        lines.append("the reterm process exited")
    return lines


def _main():
    from reterm_proc import Reterm

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reterm", required=True, help="the reterm binary")
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--seed", default="1")
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--slow", type=int, default=2, help="slow writers per batch")
    parser.add_argument("--only", type=int, help="run only generated case INDEX, and show it")
    args = parser.parse_args()

    # A copy the unprivileged user can run (the build tree may be out of its reach).
    bindir = Path(tempfile.mkdtemp(prefix="reterm-bin-"))
    bindir.chmod(0o755)
    binary = bindir / "reterm"
    shutil.copy2(args.reterm, binary)
    binary.chmod(0o755)
    server = Reterm(binary)
    # Stopped with a signal (a background run ignores SIGINT): clean up all the same.
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        server.start()
        server.wait_serving(timeout=20)
        server.fetch_token()
        runner = Runner(server, seed=args.seed, on_mismatch=lambda line: print(line, flush=True))
        if args.only is not None:
            case = heads.generate(args.seed, args.only, runner.target)
            out = send_case(case, server.port)
            print(f"case {case.index} ({case.kind}): expected {case.expect}")
            print(f"sent {redact(case.data, runner.target.token)[:2000]!r} "
                  f"in {len(case.pieces)} writes, half-closed {case.half_close}")
            print(f"got {redact(out.raw, runner.target.token)[:2000]!r}, closed {out.closed}")
            problem = verdict(case, out)
            print("ok" if problem is None else f"MISMATCH: {problem}")
            return 0 if problem is None else 1

        def progress(report):
            if report.batches % 10 == 0:
                print(report.summary(), flush=True)

        report = runner.run(args.cases, batch=args.batch, slow_per_batch=args.slow,
                            progress=progress)
        for line in describe(report):
            print(line)
        if report.panics or report.died:
            print(server.stderr_text()[-4000:])
        return 0 if report.ok else 1
    finally:
        server.cleanup()
        shutil.rmtree(bindir, ignore_errors=True)


def _interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    sys.exit(_main())
