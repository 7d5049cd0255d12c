"""send_raw through the real HTTP server, against a real InspIRCd: the line
goes out and is recorded in the server buffer; the burst limit refuses a sixth
line at once; and the counts are cleared when the token is regenerated
("Sending" and "The rate cap" in control-surface.md)."""
import json
import os
import threading
import time

from identity import IS_ROOT, server_uid
from ircd import Inspircd
from reterm_proc import NETWORK_ID, NETWORK_NAME, NETWORK_NICK, free_port, private_dir
from rawhttp import call, post, tool_text
from test_sdk import call_all

BURST = "too many sends: at most 5 at once"


def connected_reterm(start_reterm, ircd):
    """A reterm serving AI access, its network connected to `ircd`, sending on."""
    port = free_port()
    home = private_dir("reterm-home-", server_uid())
    config = home / "reterm.toml"
    config.write_text(f"""[control]
enabled = true
port = {port}

[[networks]]
id = "{NETWORK_ID}"
name = "{NETWORK_NAME}"
host = "127.0.0.1"
port = {ircd.port}
nick = "{NETWORK_NICK}"
autoconnect = true
""")
    config.chmod(0o600)
    if IS_ROOT:
        os.chown(config, server_uid(), server_uid())
    server = start_reterm(port=port, home=home)
    server.set("control.send", "on")
    deadline = time.monotonic() + 10
    while True:
        [(is_error, text)] = call_all(server, [("list_sessions", {})])
        assert not is_error, text
        if json.loads(text)["sessions"][0]["state"] == "connected":
            return server
        assert time.monotonic() < deadline, text
        time.sleep(0.05)


def sends_at_once(server, n, tag):
    """n send_raw calls, raw requests on n connections released together (so
    the burst cannot refill between them); their (isError, text) answers."""
    answers = [None] * n
    start = threading.Barrier(n)

    def one(i):
        body = call("send_raw", {"session": NETWORK_ID, "line": f"PING :{tag}-{i}"})
        start.wait(10)
        answers[i] = tool_text(post(server, body, timeout=20))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return answers


def test_send_raw_sends_records_and_limits(start_reterm):
    ircd = Inspircd().start()
    try:
        server = connected_reterm(start_reterm, ircd)
        [(is_error, text)] = call_all(server, [("send_raw", {"session": NETWORK_ID,
                                                             "line": "PASS hunter2zz"})])
        assert not is_error, text
        assert json.loads(text) == {"line": "PASS :********", "sent": True,
                                    "session": NETWORK_ID}
        # The audit row is in the server buffer, masked; the password nowhere.
        lines = server.run("/control log")
        assert all("hunter2zz" not in l for l in lines), lines

        # Four more fill the burst; of six at once after them none goes.
        answers = sends_at_once(server, 6, "burst")
        sent = [a for a in answers if not a[0]]
        refused = [a for a in answers if a[0]]
        assert len(sent) == 4 and all(text == BURST for _, text in refused), answers

        # A new token clears the counts: five go again at once.
        server.fetch_token("/control token regenerate")
        answers = sends_at_once(server, 6, "after-regenerate")
        assert sum(1 for a in answers if not a[0]) == 5, answers
        assert [text for is_error, text in answers if is_error] == [BURST], answers
    finally:
        ircd.stop()
