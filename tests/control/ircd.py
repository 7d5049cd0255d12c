"""A real InspIRCd (Debian's package) on a loopback port, for the few control
tests that need a connected session: the smallest config the Rust suite's
`tests/support/inspircd.rs` also writes (one client port, the cap module, no
DNS or ident lookups, no flood limits)."""

import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from identity import IS_ROOT
from reterm_proc import free_port

BINARY = "/usr/sbin/inspircd"
READY_LINE = "InspIRCd is now running as"
SERVER_NAME = "irc.test"


class Inspircd:
    """One InspIRCd process in a temp dir; stop() kills it and removes the dir."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="rete-ctl-inspircd-"))
        self.port = free_port()
        self.output = []
        self._ready = threading.Event()
        self._proc = None

    def config(self):
        d = self.dir
        return "\n".join([
            f'<server name="{SERVER_NAME}" description="Rete control tests" id="1CT" network="CtlTest">',
            f'<admin name="Rete tests" nick="admin" email="admin@{SERVER_NAME}">',
            f'<bind address="127.0.0.1" port="{self.port}" type="clients">',
            '<connect name="main" allow="*" timeout="30" pingfreq="2m" threshold="1000000" '
            'commandrate="100000000" fakelag="no" resolvehostnames="no" useident="no" '
            'localmax="1000" globalmax="1000" maxconnwarn="no">',
            f'<pid file="{d}/inspircd.pid">',
            f'<log method="file" type="* -USERINPUT -USEROUTPUT" level="default" flush="1" '
            f'target="{d}/inspircd.log">',
            f'<files motd="{d}/motd.txt">',
            '<module name="cap">',
            "",
        ])

    def start(self, timeout=10.0):
        (self.dir / "motd.txt").write_text("Rete control test server\n")
        (self.dir / "inspircd.conf").write_text(self.config())
        argv = [BINARY, "--nofork", "--config", str(self.dir / "inspircd.conf")]
        if IS_ROOT:
            argv.append("--runasroot")
        self._proc = subprocess.Popen(argv, cwd=str(self.dir), stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(timeout):
            self.stop()
            raise AssertionError("InspIRCd did not start:\n" + "\n".join(self.output))
        if any("failed to bind" in line for line in self.output):
            self.stop()
            raise AssertionError("InspIRCd could not bind its port:\n" + "\n".join(self.output))
        return self

    def _read(self):
        for raw in self._proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.output.append(line)
            if READY_LINE in line:
                self._ready.set()

    def stop(self):
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=5)
        self._proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


class Watcher:
    """A raw-socket IRC client on `ircd` that records every line it reads."""

    def __init__(self, ircd, nick):
        self.nick = nick
        self.lines = []
        self._cond = threading.Condition()
        self.sock = socket.create_connection(("127.0.0.1", ircd.port), timeout=10)
        # Connected: reads block without a limit, so a quiet spell longer than
        # the connect timeout does not end the reader (close() ends it).
        self.sock.settimeout(None)
        self.sock.sendall(f"NICK {nick}\r\nUSER {nick} 0 * :{nick}\r\n".encode())
        threading.Thread(target=self._read, daemon=True).start()
        self.wait(lambda l: f" 001 {nick} " in l)

    def _read(self):
        buf = b""
        while True:
            try:
                data = self.sock.recv(4096)
            except OSError:
                return
            if not data:
                return
            buf += data
            while b"\r\n" in buf:
                raw, buf = buf.split(b"\r\n", 1)
                line = raw.decode("utf-8", "replace")
                if line.startswith("PING "):
                    self.sock.sendall(("PONG " + line[5:] + "\r\n").encode())
                with self._cond:
                    self.lines.append(line)
                    self._cond.notify_all()

    def wait(self, predicate, timeout=10.0):
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines:
                    if predicate(line):
                        return line
                left = deadline - time.monotonic()
                assert left > 0, "watcher read:\n" + "\n".join(self.lines)
                self._cond.wait(left)

    def close(self):
        self.sock.close()
