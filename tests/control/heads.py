"""Generated request heads, and what the contract says each must get.

No sockets here: `generate(seed, index, target)` builds one case (the bytes
to send, how they are split across writes, whether the sending side is shut
after them), and `expect(data, target)` works out the answer from
control-surface.md ("The access gate" and the SDK table after it) alone. The
model is written from the contract and the documented precedence of the head
reader (mcp/src/http/head.rs: a bare CR/LF in the first 16,384 bytes is 400,
else no end of head by then is 431, then 400, 411, 413 on the complete head),
never from the code that runs: where the two disagree, a run says so.

The grammar a head must meet is RFC 9112's, taken strictly as head.rs says:
a request line `METHOD SP target SP HTTP/1.1` (or 1.0) with single spaces,
the method a token, the target visible ASCII or UTF-8; header lines
`name:value` with a token name and a value of visible UTF-8 text, spaces and
tabs; every line ended by CRLF.

Every case is a function of (seed, index) only, so a run is reproducible case
by case whatever the order workers take them in.
"""

import json
import random
import re
from dataclasses import dataclass, field

MAX_HEAD = 16_384
MAX_BODY = 65_536
# The protocol versions the handshake era serves (the contract's SDK table:
# another is 400).
SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
# Seconds from accept within which the head must be complete.
HEAD_DEADLINE = 2.0

TCHAR = frozenset(b"!#$%&'*+-.^_`|~0123456789"
                  b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_DIGITS = re.compile(r"[0-9]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(text):
    """`text` with ASCII letters lowered and nothing else changed, as HTTP
    compares names and media types (Python's lower() would fold more)."""
    return text.translate(_ASCII_LOWER)
# The first thing in the stream that settles the head: its end (CRLFCRLF), a
# CR followed by anything but LF (or by nothing yet), or an LF not after a CR.
_HEAD_EVENT = re.compile(rb"\r\n\r\n|\r(?!\n)|(?<!\r)\n")


@dataclass(frozen=True)
class Target:
    """The server a case is made for: the token and port it must carry."""

    token: str
    port: int


@dataclass(frozen=True)
class Expect:
    """The answer the contract requires.

    status None: the connection is closed unanswered. empty: the answer has
    no body (every refusal before MCP processing, and 202). interim: the 1xx
    statuses before it. or_gone: the client shut its sending side after a
    complete request, which "counts as gone": closed unanswered is also right
    (a quick call may have been answered before the server noticed).
    """

    status: object = None
    empty: bool = True
    interim: tuple = ()
    or_gone: bool = False
    # Why, in the contract's words, for a mismatch report.
    rule: str = ""


class _Incomplete(Exception):
    """The stream ends before the server has what it needs to answer; a head
    that passed the gate may already have been sent 100 Continue."""

    def __init__(self, what, interim=()):
        super().__init__(what)
        self.what = what
        self.interim = interim


@dataclass
class Case:
    index: int
    kind: str
    pieces: list            # the writes, in order (bytes)
    half_close: bool        # shut the sending side after the last write
    expect: Expect
    gap: float = 0.0        # seconds between writes: a slow writer
    pause: float = 0.0      # a short pause between writes, so splits reach the server as such
    slow: bool = False      # runs beside the fast cases, holding one slot for a while
    late_ok: float = 0.0    # a slow writer's head counts as late past this many seconds

    @property
    def data(self):
        return b"".join(self.pieces)


# -- the model ----------------------------------------------------------------

def expect(data, target, *, half_close=False):
    """What the server must answer to `data`, sent whole before anything is
    read back. Raises _Incomplete when the server would still wait for more
    (the caller then shuts the sending side: closed unanswered)."""
    head_len = _head_end(data)
    head = data[:head_len]
    parsed = _parse(head)
    if isinstance(parsed, Expect):
        return parsed
    method, target_text, headers = parsed

    def values(name):
        return [v for n, v in headers if n == name]

    framing = _framing(method, values)
    if framing is not None:
        return framing
    gate = _gate(method, values, target)
    if gate is not None:
        return gate
    path = target_text.split("?", 1)[0]
    if path != "/mcp":
        return Expect(404, rule="a path other than /mcp")
    if method != "POST":
        return Expect(405, rule="a method other than POST (Allow: POST)")
    interim = (100,) if any(ascii_lower(v) == "100-continue" for v in values("expect")) else ()
    length = int(values("content-length")[0])
    body = data[head_len:head_len + length]
    if len(body) < length:
        raise _Incomplete("body", interim)
    answer = _sdk(values, body)
    return Expect(answer.status, empty=answer.empty, interim=interim, or_gone=half_close,
                  rule=answer.rule)


def _head_end(data):
    """The head's length, or the Expect for a head refused before it ended."""
    event = _HEAD_EVENT.search(data)
    if event is None:
        if len(data) > MAX_HEAD:
            raise _Refused(Expect(431, rule="a head over 16,384 bytes"))
        raise _Incomplete("head")
    at = event.start()
    if event.group() == b"\r\n\r\n":
        if event.end() <= MAX_HEAD:
            return event.end()
        raise _Refused(Expect(431, rule="a head over 16,384 bytes"))
    if at >= MAX_HEAD:
        raise _Refused(Expect(431, rule="a head over 16,384 bytes"))
    if event.group() == b"\r" and at == len(data) - 1:
        raise _Incomplete("head")  # the byte after the CR has not been sent
    raise _Refused(Expect(400, rule="a bare CR or LF in the head"))


class _Refused(Exception):
    def __init__(self, answer):
        super().__init__(answer.rule)
        self.answer = answer


def _bad(what):
    return Expect(400, rule=f"a malformed request line or header: {what}")


def _parse(head):
    """(method, target, [(lowercased name, trimmed value)]) or a 400."""
    if head.startswith(b"\r\n"):
        return _bad("an empty line before the request line")
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3:
        return _bad("request line not three parts at single spaces")
    method, target, version = parts
    if not method or not all(b in TCHAR for b in method):
        return _bad("method not a token")
    if not target or not all(0x21 <= b <= 0x7E or b >= 0x80 for b in target):
        return _bad("target not visible text")
    try:
        target_text = target.decode("utf-8")
    except UnicodeDecodeError:
        return _bad("target not UTF-8")
    if version not in (b"HTTP/1.1", b"HTTP/1.0"):
        return _bad("version not HTTP/1.1 or HTTP/1.0")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or not all(b in TCHAR for b in name):
            return _bad("header name not a token followed by a colon")
        if not all(b == 0x09 or 0x20 <= b <= 0x7E or b >= 0x80 for b in value):
            return _bad("header value with a control byte")
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            return _bad("header value not UTF-8")
        headers.append((name.decode("ascii").lower(), text.strip(" \t")))
    return method.decode("ascii"), target_text, headers


def _framing(method, values):
    lengths = values("content-length")
    if len(lengths) > 1:
        return Expect(400, rule="more than one Content-Length")
    if lengths and not _DIGITS.fullmatch(lengths[0]):
        return Expect(400, rule="a Content-Length that is not all digits")
    if values("transfer-encoding"):
        return Expect(411, rule="Transfer-Encoding")
    if not lengths:
        return Expect(411, rule="a POST without Content-Length") if method == "POST" else None
    if int(lengths[0]) > MAX_BODY:
        return Expect(413, rule="a Content-Length over 65,536")
    return None


def _gate(method, values, target):
    bearer = "Bearer " + target.token
    if values("authorization") != [bearer]:
        return Expect(403, rule="not exactly one Authorization: Bearer <token>")
    hosts = (f"127.0.0.1:{target.port}", f"localhost:{target.port}")
    host = values("host")
    if len(host) != 1 or host[0] not in hosts:
        return Expect(403, rule="not exactly one Host 127.0.0.1:<port> or localhost:<port>")
    origin = values("origin")
    if len(origin) > 1 or (origin and origin[0] not in tuple("http://" + h for h in hosts)):
        return Expect(403, rule="an Origin other than this server's")
    if method == "OPTIONS":
        return Expect(403, rule="OPTIONS")
    return None


def _sdk(values, body):
    """The SDK's table: Accept, Content-Type, then the body."""
    entries = [e.strip() for v in values("accept") for e in v.split(",")]
    if not any(ascii_lower(e[:16]) == "application/json" for e in entries):
        return Expect(406, empty=False, rule="no Accept entry starting application/json")
    types = values("content-type")
    if len(types) != 1 or ascii_lower(types[0].split(";", 1)[0].strip()) != "application/json":
        return Expect(415, empty=False, rule="a Content-Type other than application/json")
    versions = values("mcp-protocol-version")
    if any("2026" in v for v in versions):
        raise _Undetermined("the 2026-07-28 era, which this model does not cover")
    if len(versions) > 1 or (versions and versions[0] not in SUPPORTED_VERSIONS):
        return Expect(400, empty=False, rule="an MCP-Protocol-Version the SDK does not support")
    if body in INTENDED:
        return INTENDED[body]
    try:
        json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return Expect(400, empty=False, rule="a body that is not a JSON-RPC message")
    raise _Undetermined("a JSON body the model does not judge")


class _Undetermined(Exception):
    """A case the model cannot judge; the generator makes another instead."""


def judge(data, target, *, half_close=False):
    """(Expect, half_close): the answer, and whether the sending side must be
    shut for the server to answer at all (it is when the stream ends early)."""
    try:
        return expect(data, target, half_close=half_close), half_close
    except _Refused as refused:
        return refused.answer, half_close
    except _Incomplete as missing:
        return Expect(None, interim=missing.interim,
                      rule=f"half-closed before the {missing.what} was complete"), True


# -- the requests -------------------------------------------------------------

def rpc_body(method, params=None, id=1):
    msg = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        msg["id"] = id
    if params is not None:
        msg["params"] = params
    return json.dumps(msg, separators=(",", ":")).encode()


def list_sessions(id):
    return rpc_body("tools/call", {"name": "list_sessions", "arguments": {}}, id)


NOTIFICATION = rpc_body("notifications/initialized", id=None)
# Bodies the model knows the answer to; any other JSON is left unjudged.
INTENDED = {
    NOTIFICATION: Expect(202, empty=True, rule="a JSON-RPC notification"),
    b"[]": Expect(400, empty=False, rule="a batch"),
    b"{}": Expect(400, empty=False, rule="no method, result or error"),
    b'[{"jsonrpc":"2.0","method":"ping","id":1}]': Expect(400, empty=False, rule="a batch"),
}
for _id in range(1, 1000):
    INTENDED[list_sessions(_id)] = Expect(200, empty=False, rule="a well-formed request")
del _id


@dataclass
class Request:
    """A request as lines, so a case can change one thing and keep the rest."""

    method: str = "POST"
    target: str = "/mcp"
    version: str = "HTTP/1.1"
    headers: list = field(default_factory=list)    # (name, value) as sent
    body: bytes = b""

    def head(self):
        out = [f"{self.method} {self.target} {self.version}".encode("utf-8")]
        for name, value in self.headers:
            out.append(f"{name}:{value}".encode("utf-8"))
        return b"\r\n".join(out) + b"\r\n\r\n"

    def bytes(self):
        return self.head() + self.body

    def set(self, name, value):
        """Replaces every header `name` (ignoring case) by one; None drops it."""
        keep = [(n, v) for n, v in self.headers if n.lower() != name.lower()]
        at = next((i for i, (n, _) in enumerate(self.headers) if n.lower() == name.lower()),
                  len(keep))
        if value is not None:
            keep.insert(min(at, len(keep)), (name, value))
        self.headers = keep

    def add(self, rng, name, value):
        self.headers.insert(rng.randrange(len(self.headers) + 1), (name, value))


def _name_case(rng, name):
    pick = rng.random()
    if pick < 0.6:
        return name
    if pick < 0.75:
        return name.lower()
    if pick < 0.85:
        return name.upper()
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in name)


def _pad(rng, value):
    """The value with spaces or tabs around it, which the gate drops."""
    if rng.random() < 0.7:
        return " " + value
    return rng.choice(["", "  ", "\t", " \t"]) + value + rng.choice(["", " ", "\t", "  "])


EXTRAS = [
    ("User-Agent", "heads-fuzz/1"),
    ("X-Request-Id", "5f3c9a"),
    ("Connection", "keep-alive"),
    ("Accept-Encoding", "gzip, deflate"),
    ("X-Empty", ""),
    ("X-Utf8", "café ✓"),
    ("Cache-Control", "no-cache"),
    ("MCP-Protocol-Version", "2025-06-18"),
]


def good_request(rng, t, *, body=None):
    """A well-formed request: served, whatever the order, case and spacing."""
    if body is None:
        body = list_sessions(rng.randrange(1, 1000)) if rng.random() < 0.9 else NOTIFICATION
    host = rng.choice(["127.0.0.1", "localhost"])
    headers = [
        ("Host", f"{host}:{t.port}"),
        ("Authorization", f"Bearer {t.token}"),
        ("Content-Type", rng.choice(["application/json", "application/json; charset=utf-8",
                                     "Application/JSON"])),
        ("Accept", rng.choice(["application/json, text/event-stream", "application/json",
                               "text/event-stream, application/json;q=0.9"])),
        ("Content-Length", str(len(body))),
    ]
    if rng.random() < 0.3:
        headers.append(("Origin", f"http://{rng.choice(['127.0.0.1', 'localhost'])}:{t.port}"))
    if rng.random() < 0.1:
        headers.append(("Expect", "100-continue"))
    headers.extend(rng.sample(EXTRAS, rng.randrange(0, 4)))
    rng.shuffle(headers)
    headers = [(_name_case(rng, n), _pad(rng, v)) for n, v in headers]
    return Request(
        target=rng.choice(["/mcp"] * 6 + ["/mcp?x=1", "/mcp?", "/mcp?a=b&c=%20"]),
        version=rng.choice(["HTTP/1.1"] * 4 + ["HTTP/1.0"]),
        headers=headers,
        body=body,
    )


def _wrong_token(rng, t):
    tok = t.token
    i = rng.randrange(len(tok))
    swapped = tok[:i] + ("A" if tok[i] != "A" else "B") + tok[i + 1:]
    return rng.choice([swapped, tok[:-1], tok + "x", "x" * len(tok), tok[1:], tok.upper()
                       if tok.upper() != tok else tok.lower() + "q"])


# -- the kinds of case --------------------------------------------------------
# Each takes (rng, target) and returns (kind, data, extra) where extra may set
# half_close. The model judges every one; none is told its answer.

def k_valid(rng, t):
    return good_request(rng, t).bytes()


def k_bare(rng, t):
    """A bare CR or LF somewhere in the head: inserted, replacing a byte, or a
    line's CRLF cut to one of its two bytes."""
    req = good_request(rng, t)
    head, body = req.head(), req.body
    how = rng.random()
    if how < 0.4:
        at = rng.randrange(len(head))
        head = head[:at] + rng.choice([b"\r", b"\n"]) + head[at:]
    elif how < 0.7:
        at = rng.randrange(len(head))
        head = head[:at] + rng.choice([b"\r", b"\n"]) + head[at + 1:]
    else:
        ends = [m.start() for m in re.finditer(rb"\r\n", head)]
        at = rng.choice(ends)
        head = head[:at] + rng.choice([b"\r", b"\n", b"\r\r", b"\n\n", b"\n\r"]) + head[at + 2:]
    return head + body


def k_oversize(rng, t):
    req = good_request(rng, t)
    pick = rng.randrange(9)
    if pick == 0:    # many header lines past the limit
        for i in range(rng.randrange(170, 400)):
            req.headers.append((f"X-Fill-{i}", "f" * 90))
    elif pick == 1:  # one header line past the limit
        req.add(rng, "X-Big", "b" * rng.randrange(MAX_HEAD - 200, 3 * MAX_HEAD))
    elif pick == 2:  # no line end at all
        return b"POST /mcp HTTP/1.1\r\nX-Big: " + b"n" * rng.randrange(MAX_HEAD, 2 * MAX_HEAD)
    elif pick == 3:  # a target past the limit
        req.target = "/mcp?" + "q" * rng.randrange(MAX_HEAD, 2 * MAX_HEAD)
    elif pick in (4, 5):  # a head of exactly the limit, or one byte either side
        size = MAX_HEAD + rng.choice([-1, 0, 0, 1])
        req.headers.append(("X-Pad", ""))
        short = size - len(req.head())
        req.headers[-1] = ("X-Pad", "p" * short)
    elif pick == 6:  # long, and a bare LF in it before or after the limit
        req.add(rng, "X-Big", "b" * (MAX_HEAD + 500))
        head = req.head()
        at = rng.choice([rng.randrange(100, MAX_HEAD), rng.randrange(MAX_HEAD, len(head) - 4),
                         MAX_HEAD - 1, MAX_HEAD])
        return head[:at] + b"\n" + head[at:] + req.body
    elif pick == 7:  # the end of head straddling the limit
        req.headers.append(("X-Pad", ""))
        req.headers[-1] = ("X-Pad", "p" * (MAX_HEAD + rng.randrange(-3, 4) - len(req.head())))
    else:            # past the limit, with a wrong token: still 431
        req.set("Authorization", "Bearer " + _wrong_token(rng, t))
        req.add(rng, "X-Big", "b" * rng.randrange(MAX_HEAD, MAX_HEAD + 2000))
    return req.bytes()


def k_duplicate(rng, t):
    req = good_request(rng, t)
    name = rng.choice(["Host", "Authorization", "Origin", "Content-Length", "Content-Type",
                       "Accept", "Transfer-Encoding", "Expect"])
    same = {
        "Host": f"127.0.0.1:{t.port}", "Authorization": f"Bearer {t.token}",
        "Origin": f"http://localhost:{t.port}", "Content-Length": str(len(req.body)),
        "Content-Type": "application/json", "Accept": "application/json",
        "Transfer-Encoding": "chunked", "Expect": "100-continue",
    }[name]
    other = {
        "Host": f"localhost:{t.port}", "Authorization": f"Bearer {_wrong_token(rng, t)}",
        "Origin": f"http://127.0.0.1:{t.port}", "Content-Length": str(len(req.body) + 1),
        "Content-Type": "text/plain", "Accept": "*/*", "Transfer-Encoding": "identity",
        "Expect": "nothing",
    }[name]
    for _ in range(rng.choice([1, 1, 1, 2])):
        req.add(rng, _name_case(rng, name), _pad(rng, rng.choice([same, other])))
    if rng.random() < 0.3:
        req.set("Authorization", "Bearer " + _wrong_token(rng, t))
    return req.bytes()


def k_length(rng, t):
    req = good_request(rng, t)
    n = len(req.body)
    value = rng.choice([
        "", "abc", "-1", "+" + str(n), "0x10", f"{n} {n}", f"{n},{n}", f"0{n}", f"000{n}",
        "65536", "65537", "18446744073709551615", "18446744073709551616", "9" * 30,
        "١٢٣", "²", "1.0", str(n - 1), str(n + 1), str(n + 50), "0", f"{n}\t",
    ])
    if value == "65536":
        req.body = req.body + b" " * (65536 - n)
    req.set("Content-Length", value)
    if rng.random() < 0.3:
        req.set("Authorization", "Bearer " + _wrong_token(rng, t))
    return req.bytes()


def k_framing(rng, t):
    req = good_request(rng, t)
    pick = rng.randrange(6)
    if pick == 0:
        req.set("Content-Length", None)
        req.set("Transfer-Encoding", "chunked")
        req.body = b"%x\r\n" % len(req.body) + req.body + b"\r\n0\r\n\r\n"
    elif pick == 1:
        req.add(rng, "Transfer-Encoding", rng.choice(["chunked", "gzip, chunked", "identity", ""]))
    elif pick == 2:
        req.set("Content-Length", None)
        req.body = b""
    elif pick == 3:
        req.set("Content-Length", None)
        req.method = rng.choice(["GET", "DELETE", "PUT"])
        req.body = b""
    elif pick == 4:
        req.add(rng, "transfer-encoding", "chunked")
        req.set("Authorization", None)
    else:
        req.set("Content-Length", None)
        req.set("Host", None)
    return req.bytes()


def k_request_line(rng, t):
    req = good_request(rng, t)
    pick = rng.randrange(3)
    if pick == 0:
        req.method = rng.choice([
            "GET", "PUT", "DELETE", "HEAD", "PATCH", "post", "Post", "OPTIONS", "options",
            "P@ST", "PO ST", "", "POST\t", "PO!ST", "~", "POST,", "PÖST", "CONNECT", "TRACE",
            "".join(rng.choice("!#$%&'*+-.^_`|~ABCXYZ09") for _ in range(rng.randrange(1, 12))),
        ])
    elif pick == 1:
        req.target = rng.choice([
            "/", "/mcp/", "/MCP", "/mcpx", "//mcp", "/mcp#x", "*", f"http://127.0.0.1:{t.port}/mcp",
            "/mcp%20", "/m cp", "/mcpé", "/mcp\x7f", "/mcp\x01", "", "mcp", "/mcp/../mcp",
            "/%6dcp", "/mcp;x", "/mcp ?x", "/mcp?é",
        ])
        if rng.random() < 0.2:
            req.set("Authorization", "Bearer " + _wrong_token(rng, t))
    else:
        req.version = rng.choice([
            "HTTP/1.2", "HTTP/2.0", "HTTP/2", "http/1.1", "HTTP/1.", "HTTP/1.10", "HTTP/01.1",
            "", "HTTP/1.1 ", " HTTP/1.1", "HTTP/1.1x", "HTTP/0.9", "HTTPS/1.1", "HTTP/1.0",
        ])
    head = req.head()
    if rng.random() < 0.05:  # bytes the UTF-8 text above cannot carry
        head = head.replace(b" /", b" /\xff", 1)
    return head + req.body


def k_gate(rng, t):
    req = good_request(rng, t)
    pick = rng.randrange(4)
    tok = t.token
    if pick == 0:
        req.set("Authorization", rng.choice([
            None, "", "Bearer", "Bearer ", f"bearer {tok}", f"BEARER {tok}", f"Bearer  {tok}",
            f"Bearer\t{tok}", f"Bearer {tok}  ", f"  Bearer {tok}", f"Bearer {tok}\t",
            f"Basic {tok}", f"Bearer {_wrong_token(rng, t)}", f"Bearer {tok} {tok}", tok,
            f"Bearer {tok}\x00",
        ]))
    elif pick == 1:
        p = t.port
        req.set("Host", rng.choice([
            None, "", "127.0.0.1", f"127.0.0.1:{p + 1}", f"LOCALHOST:{p}", f"127.0.0.1:0{p}",
            f"[::1]:{p}", f"127.0.0.1:{p} ", f" localhost:{p}", f"127.0.0.2:{p}",
            f"127.0.0.1:{p}.", f"127.0.0.1:+{p}", f"localhost:{p}:{p}", "evil.example",
        ]))
    elif pick == 2:
        p = t.port
        req.set("Origin", rng.choice([
            None, f"http://127.0.0.1:{p}", f"http://localhost:{p} ", "http://evil.example", "null",
            f"https://127.0.0.1:{p}", f"http://127.0.0.1:{p}/", f"http://127.0.0.1:{p + 1}",
            f"HTTP://localhost:{p}", "", f"http://127.0.0.1:{p}, http://evil.example",
        ]))
    else:
        req.method = "OPTIONS"
        if rng.random() < 0.5:
            req.set("Content-Length", None)
            req.body = b""
    return req.bytes()


def k_sdk(rng, t):
    req = good_request(rng, t)
    pick = rng.randrange(3)
    if pick == 0:
        req.set("Accept", rng.choice([None, "*/*", "application/*", "text/event-stream",
                                      "text/html, APPLICATION/JSON", "application/jsonx"]))
    elif pick == 1:
        req.set("Content-Type", rng.choice([None, "text/plain", "application/jsonx",
                                            "application/json, text/plain", " application/json ;x=1"]))
    else:
        req.body = rng.choice([b"not json", b"", b"[]", b"{}", b"{", b"\xff\xfe",
                               b'[{"jsonrpc":"2.0","method":"ping","id":1}]', NOTIFICATION])
        req.set("Content-Length", str(len(req.body)))
    return req.bytes()


def k_half_close(rng, t):
    """The sending side shut after part of the request, or all of it."""
    data = rng.choice([k_valid, k_valid, k_gate, k_length, k_request_line])(rng, t)
    cut = rng.choice([len(data), len(data), rng.randrange(len(data) + 1)])
    return data[:cut], True


def k_mutation(rng, t):
    """A well-formed request with a few bytes changed, inserted or removed."""
    data = bytearray(good_request(rng, t).bytes())
    head_len = data.find(b"\r\n\r\n") + 4
    for _ in range(rng.randrange(1, 5)):
        at = rng.randrange(head_len if rng.random() < 0.9 else len(data))
        byte = rng.choice([rng.randrange(256), rng.choice(b" \t:\r\n\x00\x7f\x80\xff"),
                           rng.choice(b"aZ09-_/?")])
        op = rng.randrange(3)
        if op == 0:
            data[at] = byte
            continue
        if op == 1:
            data.insert(at, byte)
        elif len(data) > 1:
            del data[at]
        head_len = max(0, min(head_len + (1 if op == 1 else -1), len(data)))
    return bytes(data)


def k_random(rng, t):
    pick = rng.randrange(4)
    n = rng.randrange(0, 400)
    if pick == 0:
        return bytes(rng.randrange(256) for _ in range(n)), True
    if pick == 1:  # text with line ends in it
        alphabet = b"GET POST /mcp HTTP/1.1 Host: a:b \r\n\r\n\t\x00\x80"
        return bytes(rng.choice(alphabet) for _ in range(n)), True
    if pick == 2:  # random header lines under a good request line
        lines = [b"POST /mcp HTTP/1.1"]
        for _ in range(rng.randrange(0, 8)):
            lines.append(bytes(rng.choice(b"abcXY-:; \t\x01\x7f\xc3\xa9")
                               for _ in range(rng.randrange(0, 20))))
        return b"\r\n".join(lines) + b"\r\n\r\n", True
    return rng.choice([b"", b"\r\n", b"\r\n\r\n", b"\n", b"\r", b"\x00", b"GET", b"POST /mcp",
                       b"POST /mcp HTTP/1.1\r\n", b"\x16\x03\x01\x02\x00\x01"]), True


KINDS = [
    (k_valid, 14), (k_bare, 10), (k_oversize, 4), (k_duplicate, 10), (k_length, 10),
    (k_framing, 6), (k_request_line, 10), (k_gate, 12), (k_sdk, 4), (k_half_close, 6),
    (k_mutation, 10), (k_random, 4),
]
_KIND_FUNCS = [k for k, _ in KINDS]
_KIND_WEIGHTS = [w for _, w in KINDS]


def _rng(seed, index, what="case"):
    return random.Random(f"{seed}:{what}:{index}")


def _split(rng, data):
    """Random cut points: 2 to 8 writes."""
    if len(data) < 2:
        return [data]
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randrange(1, 8))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]


def generate(seed, index, t):
    """The fast case `index` of the run seeded `seed`."""
    rng = _rng(seed, index)
    while True:
        func = rng.choices(_KIND_FUNCS, _KIND_WEIGHTS)[0]
        made = func(rng, t)
        data, half = made if isinstance(made, tuple) else (made, False)
        try:
            answer, half = judge(data, t, half_close=half)
        except _Undetermined:
            continue
        kind = func.__name__[2:]
        pieces, pause = [data], 0.0
        if rng.random() < 0.3 and len(data) < 4 * MAX_HEAD:
            pieces, pause = _split(rng, data), 0.0003
            kind += "+split"
        return Case(index, kind, pieces, half, answer, pause=pause)


def sweep_bases(t):
    """Requests split at every byte by `sweep`: one served, one refused at the
    gate, one refused for a bare LF."""
    rng = random.Random("sweep")
    served = good_request(rng, t, body=list_sessions(7))
    refused = good_request(rng, t, body=list_sessions(8))
    refused.set("Authorization", "Bearer " + _wrong_token(rng, t))
    bare = good_request(rng, t, body=list_sessions(9)).bytes().replace(b"\r\n", b"\n", 2)
    bare = bare.replace(b"\n", b"\r\n", 1)  # the first line end kept, the second bare
    return [served.bytes(), refused.bytes(), bare]


def sweep(t):
    """Every split of each sweep base into two writes, at every byte."""
    cases = []
    for data in sweep_bases(t):
        answer, half = judge(data, t)
        for at in range(1, len(data)):
            cases.append(Case(len(cases), "sweep", [data[:at], data[at:]], half, answer,
                              pause=0.001))
    return cases


def generate_slow(seed, index, t):
    """A slow writer: the whole head a byte at a time, finishing well inside
    the head deadline (answered as if sent whole), or so slowly it cannot
    (closed unanswered at the deadline, whatever it would have got)."""
    rng = _rng(seed, index, "slow")
    if index % 2 == 0:
        while True:
            data = rng.choice([k_valid, k_gate, k_duplicate, k_request_line])(rng, t)
            try:
                answer, half = judge(data, t)
            except _Undetermined:
                continue
            if len(data) < 600:
                break
        head_len = data.find(b"\r\n\r\n") + 4 if b"\r\n\r\n" in data else len(data)
        pieces = [data[i:i + 1] for i in range(head_len)] + ([data[head_len:]] * (head_len < len(data)))
        gap = min(0.003, 0.8 / max(1, len(pieces)))
        return Case(index, "slow-inside", pieces, half, answer, gap=gap, slow=True,
                    late_ok=HEAD_DEADLINE - 0.2)
    data = good_request(rng, t).bytes()
    pieces = [data[i:i + 1] for i in range(len(data))]
    return Case(index, "slow-past", pieces, False,
                Expect(None, rule="the head not complete within 2 seconds of accept"),
                gap=0.1, slow=True)
