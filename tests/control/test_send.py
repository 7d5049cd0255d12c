"""send_raw through the real HTTP server, against a real InspIRCd: the line
goes out and is recorded in the server buffer; the burst limit refuses a sixth
line at once; and the counts are cleared when the token is regenerated
("Sending" and "The rate cap" in control-surface.md)."""
import json
import os
import threading
import time

from identity import IS_ROOT, server_uid
from ircd import Inspircd, Watcher
from reterm_proc import NETWORK_ID, NETWORK_NAME, NETWORK_NICK, free_port, private_dir
import rawhttp
from rawhttp import call, post, tool_text
from test_sdk import call_all

BURST = "too many sends: at most 5 at once"


def connected_reterm(start_reterm, ircd, *, channels=(), debug=False):
    """A reterm serving AI access, its network connected to `ircd` (joining
    `channels`), sending on, and debug as asked."""
    port = free_port()
    home = private_dir("reterm-home-", server_uid())
    config = home / "reterm.toml"
    joined = ", ".join(f'"{c}"' for c in channels)
    config.write_text(f"""[control]
enabled = true
debug = {str(debug).lower()}
port = {port}

[[networks]]
id = "{NETWORK_ID}"
name = "{NETWORK_NAME}"
host = "127.0.0.1"
port = {ircd.port}
nick = "{NETWORK_NICK}"
channels = [{joined}]
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


NOT_SENT = "line not sent: a script blocked it or the connection could not take it"
ASKED = "-!- AI access wants to send on ctlnet: "


def answered(server, command):
    """What `command` printed, without the session rows line mode prints
    meanwhile (an audit row of a line just sent may land among them)."""
    return [l for l in server.run(command) if not l.startswith("[")]


def send_in_background(server, line):
    """One send_raw call on its own connection; (thread, answers) where
    answers gets its (isError, text) once it is answered."""
    answers = []

    def one():
        body = call("send_raw", {"session": NETWORK_ID, "line": line})
        answers.append(tool_text(post(server, body, timeout=30)))

    thread = threading.Thread(target=one)
    thread.start()
    return thread, answers


def test_approval_through_reterm_allows_denies_and_withdraws(start_reterm):
    """control.approve end to end in line mode: the prompt line names the
    session and shows the line masked; /control allow sends it (the watcher
    reads it), /control deny answers the veto text and sends nothing, a
    client that leaves withdraws its prompt, and the setting is saved."""
    ircd = Inspircd().start()
    watcher = None
    try:
        server = connected_reterm(start_reterm, ircd)
        watcher = Watcher(ircd, "apprwatch")
        assert answered(server, "/set control.approve on") == ["control.approve is on"]
        assert "approve = true" in server.config.read_text()
        assert server.status().endswith(" · send · approve"), server.status()

        # Allowed: the prompt, then the line on the wire and its audit row.
        start = len(server.lines)
        thread, answers = send_in_background(server, "PRIVMSG apprwatch :let through")
        asked = server.wait_line(lambda l: l.startswith(ASKED), since=start, timeout=10)
        assert asked == (ASKED + "PRIVMSG apprwatch :let through — /control allow or "
                         "/control deny within 20 s (1 waiting)"), asked
        # A second waits behind it: the count says so, and answers go oldest first.
        start = len(server.lines)
        thread2, answers2 = send_in_background(server, "PRIVMSG apprwatch :second")
        asked = server.wait_line(lambda l: l.startswith(ASKED), since=start, timeout=10)
        assert asked.endswith(":second — /control allow or /control deny within 20 s "
                              "(2 waiting)"), asked
        assert answered(server, "/control allow") == [
            "-!- allowed: AI access line on ctlnet: PRIVMSG apprwatch :let through "
            "(1 still waiting)"]
        assert answered(server, "/control allow") == [
            "-!- allowed: AI access line on ctlnet: PRIVMSG apprwatch :second"]
        for t, a in ((thread, answers), (thread2, answers2)):
            t.join(30)
            assert a and not a[0][0], a
            assert json.loads(a[0][1])["sent"] is True, a
        watcher.wait(lambda l: l.endswith("PRIVMSG apprwatch :let through"))
        watcher.wait(lambda l: l.endswith("PRIVMSG apprwatch :second"))

        # Denied: the veto answer; the prompt never shows the password.
        start = len(server.lines)
        thread, answers = send_in_background(server, "PRIVMSG NickServ :IDENTIFY hunter9zz")
        asked = server.wait_line(lambda l: l.startswith(ASKED), since=start, timeout=10)
        assert "IDENTIFY ********" in asked and "hunter9zz" not in asked, asked
        assert answered(server, "/control deny") == [
            "-!- denied: AI access line on ctlnet: PRIVMSG NickServ :IDENTIFY ********"]
        thread.join(30)
        assert answers == [(True, NOT_SENT)], answers
        assert answered(server, "/control deny") == ["-!- no AI access line waits for approval"]

        # A client that leaves while its line waits withdraws the prompt.
        start = len(server.lines)
        pending = rawhttp.Pending(server, call("send_raw", {"session": NETWORK_ID,
                                                            "line": "PRIVMSG apprwatch :gone"}))
        server.wait_line(lambda l: l.startswith(ASKED), since=start, timeout=10)
        pending.close()
        server.wait_line(lambda l: l == "-!- the agent's call gave up, not sent: AI access "
                         "line on ctlnet: PRIVMSG apprwatch :gone", since=start, timeout=10)
        assert answered(server, "/control allow") == ["-!- no AI access line waits for approval"]

        # A marker after all of it: the watcher read neither refused line.
        marker = Watcher(ircd, "apprmark")
        marker.sock.sendall(b"PRIVMSG apprwatch :marker\r\n")
        watcher.wait(lambda l: l.endswith(":marker"))
        marker.close()
        assert not any("IDENTIFY" in l or ":gone" in l for l in watcher.lines), watcher.lines

        # Off again: a line is sent without asking.
        assert answered(server, "/set control.approve off") == ["control.approve is off"]
        [(is_error, text)] = call_all(server, [("send_raw", {"session": NETWORK_ID,
                                                             "line": "PRIVMSG apprwatch :free"})])
        assert not is_error, text
        watcher.wait(lambda l: l.endswith("PRIVMSG apprwatch :free"))
    finally:
        if watcher is not None:
            watcher.close()
        ircd.stop()


LATE = "PRIVMSG latewatch :agent, after the deadline"


def test_a_send_that_outlives_its_request_is_logged_as_sent(start_reterm):
    """A send can outlive its request: queued behind the person's lines in
    the flood throttler, the line is still waiting at the 25 s deadline, so
    the call is answered 504; the line is still sent, leaves its audit row,
    and the AI access log says so in a row of its own, after the call's
    `cancelled` one."""
    ircd = Inspircd().start()
    watcher = None
    try:
        server = connected_reterm(start_reterm, ircd)
        watcher = Watcher(ircd, "latewatch")
        # Five go at once, then one every 2 s: the agent's line waits behind
        # at least 17 of these, well past the deadline.
        for i in range(22):
            server.send(f"/msg latewatch person {i}")
        # Input is handled in order: once this answers, every line is queued.
        answered(server, "/control status")
        start = len(server.lines)
        reply = post(server, call("send_raw", {"session": NETWORK_ID, "line": LATE}),
                     timeout=40)
        rawhttp.assert_empty_answer(reply, 504)
        watcher.wait(lambda l: l.endswith(LATE), timeout=60)
        server.wait_line(lambda l: l.endswith("AI access sent: " + LATE), since=start,
                         timeout=10)
        assert any(l.endswith(":person 21") for l in watcher.lines), watcher.lines
        ours = [r for r in server.run("/control log") if "agent, after the deadline" in r]
        assert len(ours) == 2, ours
        cancelled, sent = ours
        assert cancelled.endswith(" → cancelled"), ours
        assert sent.endswith(" → sent after its request was cancelled"), ours
        call_part = f'send_raw(line="{LATE}", session="{NETWORK_ID}")'
        assert call_part in cancelled and call_part in sent, ours
    finally:
        if watcher is not None:
            watcher.close()
        ircd.stop()
