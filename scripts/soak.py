"""The soak: a long run of mixed agent load against a busy IRC network,
measured (issue 19). Started by scripts/soak, which builds reterm first.

- A real InspIRCd (tests/control/ircd.py) and 10 raw-socket bots that keep
  200 lines/s across 50 channels (paced by a clock, not by sleeps that
  drift), some lines mentioning reterm's nick, some ACTIONs and notices.
- reterm (line mode, tests/control/reterm_proc.py) joined to the 50
  channels, with AI access, control.debug and control.send on.
- 8 agents, each its own MCP SDK session over the real HTTP server, calling
  a weighted mix of tools: reads, searches, member and user lookups, the raw
  and log reads, engine_state, subscriptions (made, read in digest and full
  mode, waited on, removed) and send_raw inside its caps.
- Every 10 s reterm's RSS and CPU time (from /proc); at the end the RSS slope
  (least squares over every sample, and over the second half alone), p50 and
  p99 per tool, reterm's CPU seconds, the lines the bots sent, the machine's
  load, and every error: those the contract names (a third waiting call, a
  17th subscription, a send past the caps, a search past its time budget)
  counted by text, and every other one (internal error, an HTTP failure, a
  timeout, a dropped connection) counted as unexpected: the goal is 0.

The figures print as a table and as one JSON line (--json FILE writes it).
"""

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "control"))

import anyio  # noqa: E402

import sdk  # noqa: E402
from identity import IS_ROOT, acting_as, server_uid  # noqa: E402
from ircd import Inspircd  # noqa: E402
from reterm_proc import Reterm, free_port, private_dir  # noqa: E402

NICK = "soaker"
NETWORK_ID = "0D5A6C1E-7F2B-4A3C-9E8D-1B2C3D4E5F60"
BOTS = 10
# Seconds between two send_raw calls of all the agents together: 15 a minute.
SEND_EVERY = 4.0
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]

# Errors the contract names that a correct run can meet under this load.
NAMED = [
    "too many waiting calls: at most 2 wait_for_updates may run at once",
    "too many subscriptions: unsubscribe one first (limit 16)",
    "too many sends: at most 30 per minute on a session",
    "too many sends: at most 5 at once",
    "search stopped: time budget exceeded",
    "unknown subscription",
]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reterm", required=True, help="the reterm binary")
    p.add_argument("--duration", type=float, default=600.0, help="seconds of load")
    p.add_argument("--agents", type=int, default=8)
    p.add_argument("--rate", type=float, default=200.0, help="lines/s the bots send in all")
    p.add_argument("--channels", type=int, default=50)
    p.add_argument("--sample", type=float, default=10.0, help="seconds between RSS samples")
    p.add_argument("--buffer-rows", type=int,
                   help="rows each buffer keeps (reterm's buffer_rows; default 50,000), so that "
                        "buffers fill within the run and RSS can be seen to level off")
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--debug-build", action="store_true", help="(read by scripts/soak)")
    return p.parse_args()


# -- the network ---------------------------------------------------------------


class SoakIrcd(Inspircd):
    """The control suite's InspIRCd, letting one client join every channel and
    a bot's queues hold a burst (as the Rust harness's server does)."""

    def config(self):
        return super().config().replace(
            'maxconnwarn="no"',
            'maxconnwarn="no" maxchans="1000" hardsendq="16M" softsendq="8M" recvq="1M"')



class Bot:
    """One raw-socket IRC client: registers, joins, answers PING."""

    def __init__(self, port, nick, channels):
        self.port, self.nick, self.channels = port, nick, channels
        self.reader = self.writer = None
        self.sent = 0

    async def start(self):
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.write(f"NICK {self.nick}")
        self.write(f"USER {self.nick} 0 * :soak bot")
        await self.wait_for(lambda l: l.split(" ")[1:2] == ["001"])
        for c in self.channels:
            self.write(f"JOIN {c}")
        last = self.channels[-1].lower()
        await self.wait_for(lambda l: l.split(" ")[1:2] == ["366"]
                            and l.split(" ")[3:4] == [last])
        asyncio.get_running_loop().create_task(self.drain())

    def write(self, line):
        self.writer.write(line.encode() + b"\r\n")

    async def wait_for(self, predicate, timeout=15):
        async def go():
            while True:
                line = (await self.reader.readline()).decode("utf-8", "replace").rstrip("\r\n")
                if not line:
                    raise ConnectionError(f"{self.nick}: the server closed the connection")
                if line.startswith("PING"):
                    self.write("PONG" + line[4:])
                if predicate(line):
                    return line
        return await asyncio.wait_for(go(), timeout)

    async def drain(self):
        while True:
            line = await self.reader.readline()
            if not line:
                return
            if line.startswith(b"PING"):
                self.write("PONG" + line[4:].decode().rstrip("\r\n"))


def line_text(rng, n):
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
    kind = n % 20
    if kind == 0:
        return f"{NICK}: {words}"
    if kind == 1:
        return f"\x01ACTION {words}\x01"
    if kind == 2:
        return f"see https://example.org/{rng.choice(WORDS)}?n={n} {words}"
    return f"{n} {words}"


async def flood(bots, rate, stop):
    """`rate` lines/s in all, round robin over the bots and their channels,
    each line due at its own time on the loop's clock (a late loop catches
    up rather than drifting)."""
    rng = random.Random(7)
    loop = asyncio.get_running_loop()
    start = loop.time()
    n = 0
    while not stop.is_set():
        due = start + n / rate
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        bot = bots[n % len(bots)]
        channel = bot.channels[(n // len(bots)) % len(bot.channels)]
        text = line_text(rng, n)
        if n % 50 == 3:
            bot.write(f"NOTICE {channel} :{text}")
        else:
            bot.write(f"PRIVMSG {channel} :{text}")
        bot.sent += 1
        n += 1
        if n % 200 == 0:
            await asyncio.gather(*(b.writer.drain() for b in bots))


# -- reterm ----------------------------------------------------------------------


def reterm_config(control_port, irc_port, channels, buffer_rows):
    chans = ", ".join(f'"{c}"' for c in channels)
    return f"""[control]
enabled = true
debug = true
port = {control_port}

[[networks]]
id = "{NETWORK_ID}"
name = "soak"
host = "127.0.0.1"
port = {irc_port}
nick = "{NICK}"
channels = [{chans}]
autoconnect = true
""" + (f"buffer_rows = {buffer_rows}\n" if buffer_rows else "")


def start_reterm(binary, irc_port, channels, buffer_rows=None):
    port = free_port()
    uid = server_uid()
    home = private_dir("reterm-soak-", uid)
    config = home / "reterm.toml"
    config.write_text(reterm_config(port, irc_port, channels, buffer_rows))
    config.chmod(0o600)
    if IS_ROOT:
        os.chown(config, uid, uid)
    proc = Reterm(binary, port=port, home=home)
    proc.start()
    proc.wait_serving(timeout=20)
    proc.fetch_token()
    proc.set("control.send", "on")
    return proc


def proc_stats(pid):
    """(RSS bytes, CPU seconds) of a process, from /proc."""
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    return rss, cpu


# -- the agents ------------------------------------------------------------------


class Stats:
    def __init__(self):
        self.latency = {}
        self.named = {}
        self.unexpected = {}
        # When any agent last sent: sends are spaced across the agents.
        self.last_send = 0.0

    def took(self, tool, seconds):
        self.latency.setdefault(tool, []).append(seconds)

    def error(self, tool, text):
        # search_messages and find_user stopped by their time budget are
        # errors whose text is the partial JSON, naming the stop in "stopped".
        try:
            stopped = json.loads(text).get("stopped")
        except (ValueError, AttributeError):
            stopped = None
        if stopped:
            text = stopped
        short = text if len(text) < 120 else text[:120] + "…"
        if any(text == n or text.startswith(n) for n in NAMED):
            self.named[short] = self.named.get(short, 0) + 1
        else:
            key = f"{tool}: {short}"
            self.unexpected[key] = self.unexpected.get(key, 0) + 1


class Agent:
    """One agent: its own SDK session, cursors and subscriptions."""

    def __init__(self, index, session, stats, buffers):
        self.i = index
        self.s = session
        self.stats = stats
        self.buffers = buffers
        self.rng = random.Random(100 + index)
        self.since = {}
        self.raw_cursor = None
        self.log_cursor = None
        self.subs = []

    async def call(self, tool, arguments):
        t0 = time.perf_counter()
        try:
            result = sdk.wire(await self.s.call_tool(tool, arguments))
        except Exception as e:  # an HTTP failure, a timeout, a dropped connection
            self.stats.took(tool, time.perf_counter() - t0)
            self.stats.error(tool, f"{type(e).__name__}: {e}")
            return None
        self.stats.took(tool, time.perf_counter() - t0)
        text = "".join(c.get("text", "") for c in result.get("content", []))
        if result.get("isError"):
            self.stats.error(tool, text)
            return None
        return json.loads(text)

    def channel(self):
        return self.rng.choice(self.buffers)

    async def step(self):
        r = self.rng.random()
        b = self.channel()
        if r < 0.14:
            await self.call("read_messages", {"buffer": b, "limit": self.rng.choice([20, 50, 200])})
        elif r < 0.28:
            v = await self.call("read_since", {"buffer": b, "limit": 200,
                                               **({"cursor": self.since[b]} if b in self.since else {})})
            if v and v.get("cursor"):
                self.since[b] = v["cursor"]
        elif r < 0.36:
            await self.call("search_messages", {"query": self.rng.choice(WORDS), "limit": 20})
        elif r < 0.39:
            await self.call("search_messages", {"query": f"{self.rng.choice(WORDS)} .*o",
                                                "match": "regex", "limit": 20,
                                                "buffers": [b]})
        elif r < 0.43:
            await self.call("find_user", {"nick": f"bot{self.rng.randrange(BOTS)}"})
        elif r < 0.47:
            await self.call("list_members", {"buffer": b})
        elif r < 0.50:
            await self.call(self.rng.choice(["list_sessions", "list_subscriptions"]), {})
        elif r < 0.52:
            await self.call("list_buffers", {"session": NETWORK_ID})
        elif r < 0.59:
            v = await self.call("raw_since", {"session": NETWORK_ID, "limit": 200,
                                              **({"cursor": self.raw_cursor} if self.raw_cursor else {})})
            if v:
                self.raw_cursor = v.get("cursor")
        elif r < 0.62:
            await self.call("search_raw", {"session": NETWORK_ID, "contains": self.rng.choice(WORDS),
                                           "limit": 50})
        elif r < 0.64:
            await self.call("engine_state", {"session": NETWORK_ID,
                                             **({"sections": ["connection", "flood"]}
                                                if self.rng.random() < 0.5 else {})})
        elif r < 0.67:
            v = await self.call("read_log", {"limit": 200,
                                             **({"cursor": self.log_cursor} if self.log_cursor else {})})
            if v:
                self.log_cursor = v.get("cursor")
        elif r < 0.72:
            await self.subscription()
        elif r < 0.84:
            await self.call("read_updates", {"detail": self.rng.choice(["digest", "full"]),
                                             **({"id": self.rng.choice(self.subs)} if self.subs else {})})
        elif r < 0.92:
            await self.call("wait_for_updates", {"timeout": self.rng.choice([1, 2, 3]),
                                                 "detail": self.rng.choice(["digest", "full"]),
                                                 **({"id": self.rng.choice(self.subs)} if self.subs else {})})
        elif r < 0.935:
            # Inside the caps (30 a minute, 5 at once): the agents together
            # send one line every SEND_EVERY seconds at most.
            if time.monotonic() - self.stats.last_send >= SEND_EVERY:
                self.stats.last_send = time.monotonic()
                await self.call("send_raw", {
                    "session": NETWORK_ID,
                    "line": f"PRIVMSG #soak0 :agent {self.i} {self.rng.choice(WORDS)}"})
        else:
            await self.call("read_messages", {"buffer": b, "limit": 500})

    async def subscription(self):
        """Make one (two at most per agent, so 16 across the 8), or remove one."""
        if len(self.subs) >= 2 or (self.subs and self.rng.random() < 0.3):
            sub = self.subs.pop(self.rng.randrange(len(self.subs)))
            await self.call("unsubscribe", {"id": sub})
            return
        kinds = [
            {"mentions": True},
            {"buffers": [self.channel()]},
            {"match": self.rng.choice(WORDS)},
            {"from": [f"bot{self.rng.randrange(BOTS)}"]},
            {"kinds": ["privmsg", "action", "notice", "join", "part"], "sessions": [NETWORK_ID]},
            {"raw": {"commands": ["PRIVMSG"], "direction": "in"}},
            {"log": {"min_level": "info"}},
        ]
        v = await self.call("subscribe", self.rng.choice(kinds))
        if v:
            self.subs.append(v["subscription"]["id"])

    async def run(self, deadline):
        while time.monotonic() < deadline:
            await self.step()
        for sub in self.subs:
            await self.call("unsubscribe", {"id": sub})


async def agent_task(i, port, token, stats, buffers, deadline):
    async with sdk.session(port, token) as s:
        await s.initialize()
        await Agent(i, s, stats, buffers).run(deadline)


async def buffer_ids(port, token, want):
    """The channel buffer ids once reterm has joined all `want` channels."""
    async with sdk.session(port, token) as s:
        await s.initialize()
        # The joins go through the session's flood throttle, a few a second.
        for _ in range(3000):
            v = json.loads((await s.call_tool("list_buffers", {"session": NETWORK_ID}))
                           .content[0].text)
            ids = [b["id"] for b in v.get("buffers", []) if b["kind"] == "channel"]
            if len(ids) >= want:
                return ids
            await anyio.sleep(0.1)
    raise RuntimeError(f"reterm joined only {len(ids)} of {want} channels")


# -- the run ---------------------------------------------------------------------


def fit(samples):
    """Least-squares slope (bytes per second) of (t, rss) samples."""
    if len(samples) < 2:
        return 0.0
    ts = [t for t, _ in samples]
    rs = [r for _, r in samples]
    mt, mr = statistics.fmean(ts), statistics.fmean(rs)
    den = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (r - mr) for t, r in zip(ts, rs)) / den if den else 0.0


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


async def load(args, reterm, ircd_port, channels):
    stats = Stats()
    stop = asyncio.Event()
    bots = []
    per = args.channels // BOTS
    for i in range(BOTS):
        bots.append(Bot(ircd_port, f"bot{i}", channels[i * per:(i + 1) * per] or channels))
    await asyncio.gather(*(b.start() for b in bots))
    buffers = await buffer_ids(reterm.port, reterm.token, len(channels))
    pid = reterm._proc.pid
    flooding = asyncio.get_running_loop().create_task(flood(bots, args.rate, stop))
    samples = []
    start = time.monotonic()
    deadline = start + args.duration
    rss0, cpu0 = proc_stats(pid)
    samples.append((0.0, rss0))

    async def sampler():
        while time.monotonic() < deadline:
            await asyncio.sleep(min(args.sample, max(0.0, deadline - time.monotonic())))
            samples.append((time.monotonic() - start, proc_stats(pid)[0]))

    sampling = asyncio.get_running_loop().create_task(sampler())
    await asyncio.gather(*(agent_task(i, reterm.port, reterm.token, stats, buffers, deadline)
                           for i in range(args.agents)))
    await sampling
    elapsed = time.monotonic() - start
    rss1, cpu1 = proc_stats(pid)
    stop.set()
    await flooding
    sent = sum(b.sent for b in bots)
    half = [s for s in samples if s[0] >= elapsed / 2]
    return {
        "duration_s": round(elapsed, 1),
        "agents": args.agents,
        "channels": len(channels),
        "lines_sent": sent,
        "lines_per_s": round(sent / elapsed, 1),
        "rss_mib": [round(r / 2**20, 2) for _, r in samples],
        "rss_start_mib": round(rss0 / 2**20, 2),
        "rss_end_mib": round(rss1 / 2**20, 2),
        "rss_slope_kib_per_min": round(fit(samples) * 60 / 1024, 1),
        "rss_slope_second_half_kib_per_min": round(fit(half) * 60 / 1024, 1),
        # The slope per line the session stored: buffers fill (50,000 rows
        # each) long after a 10-minute run ends, so this, not flatness, is
        # what a run this short can show.
        "rss_bytes_per_line": round(fit(samples) * elapsed / sent, 1) if sent else 0,
        "reterm_cpu_s": round(cpu1 - cpu0, 2),
        "reterm_cpu_pct_of_one_core": round(100 * (cpu1 - cpu0) / elapsed, 1),
        "calls": sum(len(v) for v in stats.latency.values()),
        "per_tool_ms": {t: {"n": len(v), "p50": round(1000 * pct(v, 0.5), 2),
                            "p99": round(1000 * pct(v, 0.99), 2)}
                        for t, v in sorted(stats.latency.items())},
        "named_errors": stats.named,
        "unexpected_errors": stats.unexpected,
        "unexpected_error_count": sum(stats.unexpected.values()),
    }


def print_table(r):
    print(f"soak: {r['agents']} agents x {r['duration_s']} s, {r['channels']} channels, "
          f"{r['lines_per_s']} lines/s from the bots ({r['lines_sent']} lines)")
    print(f"load average {r['load_before']} before, {r['load_after']} after")
    print(f"reterm RSS {r['rss_start_mib']} -> {r['rss_end_mib']} MiB; slope "
          f"{r['rss_slope_kib_per_min']} KiB/min (second half {r['rss_slope_second_half_kib_per_min']}), "
          f"{r['rss_bytes_per_line']} bytes per line received")
    print(f"reterm CPU {r['reterm_cpu_s']} s ({r['reterm_cpu_pct_of_one_core']}% of one core)")
    print(f"{r['calls']} tool calls")
    print(f"{'tool':<20} {'calls':>7} {'p50 ms':>9} {'p99 ms':>9}")
    for tool, v in r["per_tool_ms"].items():
        print(f"{tool:<20} {v['n']:>7} {v['p50']:>9} {v['p99']:>9}")
    print("errors the contract names:", json.dumps(r["named_errors"], ensure_ascii=False))
    print(f"errors it does not name: {r['unexpected_error_count']}",
          json.dumps(r["unexpected_errors"], ensure_ascii=False))


def main():
    args = parse_args()
    binary = Path(args.reterm).resolve()
    # The unprivileged user runs a copy it can reach (the build tree may be out of its reach).
    bindir = Path(tempfile.mkdtemp(prefix="reterm-soak-bin-"))
    bindir.chmod(0o755)
    copy = bindir / "reterm"
    copy.write_bytes(binary.read_bytes())
    copy.chmod(0o755)
    channels = [f"#soak{i}" for i in range(args.channels)]
    ircd = SoakIrcd().start()
    reterm = None
    try:
        reterm = start_reterm(copy, ircd.port, channels, args.buffer_rows)
        load_before = os.getloadavg()[0]

        async def main_async():
            return await load(args, reterm, ircd.port, channels)

        # The agents' sockets must be reterm's user's (the peer check).
        with acting_as(server_uid()):
            result = anyio.run(main_async)
        result["load_before"] = round(load_before, 2)
        result["load_after"] = round(os.getloadavg()[0], 2)
        result["reterm"] = str(binary)
        result["buffer_rows"] = args.buffer_rows
    finally:
        if reterm is not None:
            reterm.cleanup()
        ircd.stop()
        copy.unlink(missing_ok=True)
        bindir.rmdir()
    print_table(result)
    print(json.dumps(result, ensure_ascii=False))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False))
    sys.exit(1 if result["unexpected_error_count"] else 0)


if __name__ == "__main__":
    main()
