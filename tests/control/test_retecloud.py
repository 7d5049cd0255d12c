"""A ReteCloud session read through the real HTTP server: reterm (as the
unprivileged user, with AI access and debug on) on a `transport = "retecloud"`
network, attached to a real `rete-cloud` that holds a real InspIRCd
connection. list_sessions names the transport, the read tools see the rows the
service relays, and raw_since returns the frames, masked (the token in the
auth frame never appears), received ones only while the raw buffer is shown
(line mode shows none).

The service runs as root (it is not the control server); its ReteCloud token
is given to reterm through `reterm retecloud-token` on standard input, and is
checked to appear in no answer."""

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from identity import IS_ROOT, server_uid
from ircd import Inspircd, Watcher
from reterm_proc import free_port, private_dir
from test_sdk import call_all

REPO = Path(__file__).resolve().parents[2]
SESSION_ID = "0B7E4C1A-5D2F-4A6B-8C9D-1E2F3A4B5C6D"
NAME = "cloud"


def rete_cloud_binary():
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    binary = target / "debug" / "rete-cloud"
    if not binary.exists():
        pytest.fail(f"{binary} is missing: run "
                    "`cargo build -p rete-cloud --bin rete-cloud` first")
    return binary


class Service:
    """`rete-cloud serve` on a loopback port with user alice, whose network
    `local` is the given InspIRCd (nick alice, in #rete)."""

    def __init__(self, ircd):
        self.binary = rete_cloud_binary()
        self.dir = Path(tempfile.mkdtemp(prefix="rete-ctl-cloud-"))
        self.db = self.dir / "cloud.db"
        self.token = self._cli("user", "add", "alice")
        self._cli("network", "add", "alice", "local", "--server", f"127.0.0.1:{ircd.port}",
                  "--nick", "alice", "--channel", "#rete")
        self.output = []
        self._listening = threading.Event()
        self.proc = subprocess.Popen(
            [str(self.binary), "serve", "--db", str(self.db), "--listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env={**os.environ, "NO_COLOR": "1"})
        threading.Thread(target=self._read, daemon=True).start()
        if not self._listening.wait(15):
            self.stop()
            raise AssertionError("rete-cloud did not start:\n" + "\n".join(self.output))
        line = next(l for l in self.output if "rete-cloud listening on " in l)
        self.url = "ws://" + line.rsplit("://", 1)[1].strip() + "/"

    def _cli(self, *args):
        out = subprocess.run([str(self.binary), *args, "--db", str(self.db)],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, f"rete-cloud {args[:2]} failed: {out.stderr}"
        return out.stdout.strip()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.output.append(line)
            if "rete-cloud listening on " in line:
                self._listening.set()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)


def cloud_home(service, control_port):
    """reterm's home (0700, the unprivileged user's) with one ReteCloud
    network, and its token set through `reterm retecloud-token`."""
    uid = server_uid()
    home = private_dir("reterm-home-", uid)
    config = home / "reterm.toml"
    config.write_text(f"""[control]
enabled = true
debug = true
port = {control_port}

[[networks]]
id = "{SESSION_ID}"
name = "{NAME}"
transport = "retecloud"
url = "{service.url}"
network = "local"
autoconnect = true
""")
    config.chmod(0o600)
    if IS_ROOT:
        os.chown(config, uid, uid)
    return home, config


def set_token(reterm_bin, home, config, token):
    argv = [str(reterm_bin), "--config", str(config), "retecloud-token", NAME]
    if IS_ROOT:
        argv = ["setpriv", f"--reuid={server_uid()}", f"--regid={server_uid()}",
                "--clear-groups", "env", f"HOME={home}", *argv]
    out = subprocess.run(argv, input=token + "\n", capture_output=True, text=True, timeout=30,
                         env={"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin",
                              "LANG": "C.UTF-8"}, cwd=str(home))
    assert out.returncode == 0, out.stderr
    assert token not in out.stdout + out.stderr, "the token command printed the token"


def tool_json(server, name, arguments):
    [(is_error, text)] = call_all(server, [(name, arguments)])
    assert not is_error, text
    return json.loads(text)


def test_a_retecloud_session_through_the_http_server(reterm_bin, start_reterm):
    ircd = Inspircd().start()
    service = None
    bob = None
    try:
        bob = Watcher(ircd, "bob")
        bob.sock.sendall(b"JOIN #rete\r\n")
        bob.wait(lambda l: " JOIN " in l and l.startswith(":bob!"))
        service = Service(ircd)
        bob.wait(lambda l: l.startswith(":alice!") and " JOIN " in l, timeout=15)

        port = free_port()
        home, config = cloud_home(service, port)
        set_token(reterm_bin, home, config, service.token)
        server = start_reterm(port=port, home=home)
        server.wait_line(lambda l: "#rete" in l and "alice" in l, timeout=15)

        # list_sessions names the transport.
        deadline = time.monotonic() + 15
        while True:
            sessions = tool_json(server, "list_sessions", {})["sessions"]
            [session] = [s for s in sessions if s["id"] == SESSION_ID]
            if session["state"] == "connected":
                break
            assert time.monotonic() < deadline, session
            time.sleep(0.1)
        assert session["transport"] == "retecloud", session
        assert session["name"] == NAME, session

        # The read tools see the rows the service relays.
        bob.sock.sendall(b"PRIVMSG #rete :hello through the cloud\r\n")
        server.wait_line(lambda l: "hello through the cloud" in l, timeout=15)
        found = tool_json(server, "search_messages",
                          {"query": "through the cloud", "sessions": [SESSION_ID]})
        texts = [m["message"]["payload"].get("text") for m in found["matches"]]
        assert texts == ["hello through the cloud"], found
        assert found["matches"][0]["message"]["from"] == "bob", found

        # raw_since: the frames sent, masked (the auth frame's token never
        # appears); none received, since line mode shows no raw buffer.
        raw = tool_json(server, "raw_since", {"session": SESSION_ID})
        lines = raw["lines"]
        sent = [l["line"] for l in lines if l["dir"] == "out"]
        assert any('"type":"auth"' in l and '"token":"********"' in l for l in sent), lines
        assert all(l.startswith("{") for l in sent), sent
        assert [l for l in lines if l["dir"] == "in"] == [], lines

        # Our line reaches IRC as a send frame; raw_since shows that frame.
        server.send("/msg #rete from reterm via cloud")
        bob.wait(lambda l: l.endswith("PRIVMSG #rete :from reterm via cloud"), timeout=15)
        raw = tool_json(server, "raw_since", {"session": SESSION_ID, "cursor": raw["cursor"]})
        assert any('"type":"send"' in l["line"] and "from reterm via cloud" in l["line"]
                   for l in raw["lines"] if l["dir"] == "out"), raw

        # The service's token is in no answer and no output.
        everything = json.dumps([sessions, found, raw]) + "\n".join(l for l in server.lines if l)
        assert service.token not in everything, "the ReteCloud token leaked"
    finally:
        if bob is not None:
            bob.close()
        if service is not None:
            service.stop()
        ircd.stop()
