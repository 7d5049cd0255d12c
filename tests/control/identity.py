"""Which local user a client connection belongs to.

reterm serves only clients whose socket belongs to its own user (it looks the
socket up in /proc/net/tcp), and it refuses to serve at all as root. So the
suite runs reterm as an unprivileged user and must open its client sockets as
that same user.

A socket belongs to the user whose effective uid created it: the owner is fixed
when the socket is made and does not change when the file descriptor is later
used by another identity. So the test process (root) switches its *effective*
uid to the unprivileged user only while it creates sockets (raw-socket tests)
or while it runs an SDK client (which makes its sockets on the way), and
switches straight back. The saved uid stays 0, which is what allows the way
back. Run as a non-root user, the suite runs reterm and the clients as that
user and skips the tests that need two users.
"""

import contextlib
import os
import socket
import threading

# `nobody` on Debian; the uid the brief and CI use for the unprivileged side.
NOBODY = 65534

IS_ROOT = os.geteuid() == 0


def server_uid():
    """The uid reterm runs as."""
    return NOBODY if IS_ROOT else os.getuid()


# The effective uid is the process's, not a thread's: two threads switching it
# at once would make one's socket under the other's identity (a client socket
# owned by root, refused as another user's). Every switch holds this lock, and
# so does every check of which identity is in force. Re-entrant, for a block
# that opens sockets inside another one.
_IDENTITY = threading.RLock()


@contextlib.contextmanager
def acting_as(uid):
    """Runs the block with effective uid/gid `uid` (a no-op when it already is)."""
    with _IDENTITY:
        if uid is None or uid == os.geteuid():
            yield
            return
        if not IS_ROOT:
            raise RuntimeError("switching users needs root")
        os.setegid(uid)
        os.seteuid(uid)
        try:
            yield
        finally:
            os.seteuid(0)
            os.setegid(0)


def client_socket(uid=None):
    """A TCP socket owned by `uid` (default: reterm's own user)."""
    with acting_as(server_uid() if uid is None else uid):
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
