"""A small HTTP proxy in front of reterm for the MCP conformance suite, which
cannot add headers of its own: it adds `Authorization: Bearer <token>` to every
request and rewrites a Host (and Origin) naming the proxy into reterm's, so the
gate lets the suite's requests through. A foreign Host or Origin (the suite's
DNS-rebinding scenario sends one) is passed on unchanged, for the gate to refuse.

One request per connection, as reterm serves them; the upstream socket is opened
as reterm's user, whose sockets alone reterm answers."""

import socket
import socketserver
import threading

from identity import client_socket

MAX_HEAD = 65536


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        proxy = self.server.proxy
        client = self.request
        client.settimeout(30)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = client.recv(65536)
            if not chunk or len(data) > MAX_HEAD:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = 0
        out = [lines[0]]
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            key, value = name.strip().lower(), value.strip()
            if key == "authorization":
                continue  # the proxy's own is the only one sent
            if key == "content-length" and value.isdigit():
                length = int(value)
            if key == "host" and value in proxy.own_hosts:
                line = f"{name}: {proxy.upstream_host}"
            if key == "origin" and value in proxy.own_origins:
                line = f"{name}: http://{proxy.upstream_host}"
            out.append(line)
        out.append(f"Authorization: Bearer {proxy.token()}")
        while len(body) < length:
            chunk = client.recv(65536)
            if not chunk:
                return
            body += chunk
        upstream = client_socket()
        try:
            upstream.settimeout(40)
            upstream.connect(("127.0.0.1", proxy.upstream_port))
            upstream.sendall("\r\n".join(out).encode("latin-1") + b"\r\n\r\n" + body)
            while True:
                chunk = upstream.recv(65536)
                if not chunk:
                    break
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            upstream.close()
            try:
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class Proxy:
    """Listens on 127.0.0.1 (a free port) while in a `with` block."""

    def __init__(self, reterm):
        self._reterm = reterm
        self.upstream_port = reterm.port
        self.upstream_host = f"127.0.0.1:{reterm.port}"
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self.port = self._server.server_address[1]
        self.own_hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self.own_origins = {f"http://{h}" for h in self.own_hosts}

    def token(self):
        return self._reterm.token.value

    @property
    def url(self):
        return f"http://localhost:{self.port}/mcp"

    def __enter__(self):
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
