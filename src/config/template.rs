//! The commented config written on first run.

/// The file `load_or_create` writes when there is none: every option with a
/// comment, and one localhost network that is *not* connected automatically, so
/// a first start never reaches out anywhere the user did not choose.
pub fn template() -> &'static str {
    TEMPLATE
}

const TEMPLATE: &str = r##"# reterm configuration.
#
# Created on first run; edit freely. reterm rewrites this file only to add a
# network's `id` or to save a `/set control.*` change, and keeps your comments.
# Unknown keys are errors, so a typo cannot silently disable a setting.

# Keep per-buffer transcripts under ~/.rete/logs. They contain other people's
# messages, so this is off unless you turn it on.
# logging = false

# AI access: an MCP server on 127.0.0.1 that lets an AI agent (such as Claude
# Code) read your sessions. It never changes anything; sending to IRC is a
# separate switch (/set control.send on), off at every start and never saved.
# See the README before enabling it. `/control token` prints how to connect.
[control]
enabled = false   # serve AI access on 127.0.0.1
debug = false     # also serve the debug tools (not built yet)
approve = false   # ask me before each line an agent sends (Ctrl-G / Ctrl-X)
port = 7422       # the port on 127.0.0.1

# How the full screen draws; `/set time_format|mirc_colours|nicklist|highlights`
# saves these in a [display] table.
#   time_format   strftime format of row times, default "%H:%M"
#   mirc_colours  render mIRC bold/italic/underline/colours (default true)
#   nicklist      the nick list pane beside channels (default true)
#   highlights    words that highlight like your nick, e.g. ["deploy"]
#
# `/ignore MASK` saves masks whose messages are not shown, e.g.
#   ignores = ["spammer", "*!*@bad.host"]

# One [[networks]] block per IRC network. Keys:
#
#   id              stable UUID of the network. Leave it out: reterm generates
#                   one and writes it here. Do not copy it to another network.
#   name            short unique name, used by `/connect NAME`   (required)
#   host            server host name or address                  (required)
#   port            default 6697 with tls, else 6667
#   tls             use TLS (default false)
#   tls_fingerprint accept this self-signed server certificate: its SHA-256
#                   fingerprint, 64 hex digits (colons allowed)
#   tls_cert        client certificate with its key (PEM) for SASL EXTERNAL;
#                   `~/` is your home, relative paths start from this folder
#   nick            nickname                                     (required)
#   username        user name (ident), default: the nick
#   realname        real name shown in WHOIS, default: the nick
#   password        server password (PASS), if the server wants one
#   sasl            account login, e.g.
#                     sasl = { mechanism = "PLAIN", username = "me", password = "..." }
#                   mechanism is PLAIN, SCRAM-SHA-256 (both need password) or
#                   EXTERNAL (needs tls_cert); username defaults to the nick
#   channels        joined after connecting, e.g.
#                     channels = ["#rete", { name = "#secret", key = "k3y" }]
#   autoconnect     connect when reterm starts (default true)
#   max_query_buffers  private-message buffers others may open (default 500);
#                   past it their messages stay in the server buffer
#   buffer_rows     rows each buffer keeps, its scrollback (default 50000,
#                   at least 100); past it the oldest row is dropped
#   transport       "irc" (the default) or "retecloud": reach the network
#                   through a rete-cloud service that stays connected while
#                   reterm is not. Then give only name, url, network (and
#                   optionally tls_fingerprint, nick, autoconnect,
#                   max_query_buffers, buffer_rows): the server, SASL and channels are
#                   set in the service.
#   url             the service's wss:// URL (ws:// only to 127.0.0.1)
#   network         the service's id of the network (rete-cloud network add)
#                   The service's token is not in this file: set it with
#                     reterm retecloud-token NAME
#                   which reads it without echo into ~/.rete/secrets.json.
#
# This file may hold passwords: it is created readable by you only (0600).
#
# A public network over TLS, ready to use: remove the "# " in front of its
# lines (and of the sasl line once your nick is registered with NickServ),
# set your nick, and type `/connect libera`.
#
# [[networks]]
# name = "libera"
# host = "irc.libera.chat"
# port = 6697
# tls = true
# nick = "your-nick"
# # sasl = { mechanism = "PLAIN", username = "your-account", password = "your-password" }
# channels = ["#libera"]
# autoconnect = true

# A network held by a rete-cloud service (then `reterm retecloud-token cloud`):
#
# [[networks]]
# name = "cloud"
# transport = "retecloud"
# url = "wss://cloud.example.net/"
# network = "libera"
# account = "alice"   # only to use two accounts of one service: one token each

# An example for a server on this machine. It is not connected at start-up;
# type `/connect local` to use it.
[[networks]]
name = "local"
host = "127.0.0.1"
port = 6667
tls = false
nick = "rete"
channels = ["#rete"]
autoconnect = false
"##;
