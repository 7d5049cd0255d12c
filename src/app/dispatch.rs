//! What each typed command does. Every path either acts or returns one
//! error line; a refused command changes nothing.

use super::buffers::{self, Key};
use super::{say, App, Current, Mode};
use anyhow::{anyhow, bail, Result};
use rete_engine::buffer::BufferKind;
use rete_engine::event::ConnState;
use reterm::client::ignore::full;
use reterm::config::{
    mask_problem, set_alias, set_control, set_display, set_ignores, time_format_problem,
    ControlSetting, DisplaySetting,
};
use reterm::input::{
    help_text, Command, ControlCommand, Input, IrcCommand, Lastlog, ServerCommand, Setting,
};

/// Runs one parsed input line.
pub async fn dispatch(app: &mut App, input: Input) -> Result<()> {
    match input {
        Input::Empty => Ok(()),
        Input::Text(text) => say_text(app, text).await,
        Input::Command(cmd) => run(app, cmd).await,
    }
}

/// Plain text for the current buffer. Refused in the server buffer,
/// reterm's own, and a channel we are not in (parted, kicked), going by the
/// engine's view of joined channels.
pub async fn say_text(app: &mut App, text: String) -> Result<()> {
    if app.raw_focused.is_some() {
        bail!("this is the raw buffer: /quote sends a raw line; switch to a channel to talk");
    }
    if app.own_focused {
        bail!("this is reterm's buffer: switch to a channel (Alt+2, /buffer) to talk");
    }
    let (net, name, kind) = app
        .current_target()
        .await
        .ok_or_else(|| anyhow!("no network: add one to the config"))?;
    if kind == BufferKind::Server {
        bail!("this is the server buffer: /join a channel or /buffer one to talk");
    }
    if kind == BufferKind::Channel && !joined(app, net).await {
        bail!("not in {name} — /join {name}");
    }
    command(app, net, move |c| c.privmsg(&name, &text)).await
}

/// A network's connection state now.
async fn state(app: &App, net: usize) -> ConnState {
    app.networks[net]
        .session
        .reader()
        .read(|v| v.state())
        .await
        .unwrap_or(ConnState::Disconnected)
}

/// Whether we are in the current channel now.
async fn joined(app: &App, net: usize) -> bool {
    let Some(current) = app.current.clone() else {
        return false;
    };
    app.networks[net]
        .session
        .reader()
        .read(move |v| v.channel(&current.buffer).is_some_and(|c| c.joined))
        .await
        .unwrap_or(false)
}

async fn run(app: &mut App, cmd: Command) -> Result<()> {
    match cmd {
        Command::Connect { network } => {
            let i = network_named(app, &network)?;
            let name = app.networks[i].config.name.clone();
            match state(app, i).await {
                ConnState::Connected => say(&format!("-!- {name} is already connected")),
                ConnState::Connecting => say(&format!("-!- {name} is already connecting")),
                ConnState::Reconnecting | ConnState::Disconnected => {
                    app.networks[i].session.sender().connect()
                }
            }
            Ok(())
        }
        Command::Disconnect { network } => {
            let i = match network {
                Some(n) => network_named(app, &n)?,
                None => current_network(app)?,
            };
            if state(app, i).await == ConnState::Disconnected {
                say(&format!(
                    "-!- {} is not connected",
                    app.networks[i].config.name
                ));
                return Ok(());
            }
            app.networks[i].session.sender().disconnect(None);
            Ok(())
        }
        Command::Join { channel, key } => {
            let net = current_network(app)?;
            // Already open (joined or not): focus it now; else when it opens.
            let name = channel.clone();
            let open = app.networks[net]
                .session
                .reader()
                .read(move |v| v.find_buffer(BufferKind::Channel, &name).cloned())
                .await?;
            match open {
                Some(buffer) => app.focus(Current {
                    network: net,
                    buffer,
                }),
                None => app.focus_next = Some((net, channel.clone())),
            }
            let key = key.map(|k| k.expose().to_owned());
            command(app, net, move |c| c.join(&channel, key.as_deref())).await
        }
        Command::Part { channel, reason } => {
            let (net, name, kind) = current(app).await?;
            let channel = match channel {
                Some(c) => c,
                None if kind == BufferKind::Channel => name,
                None => bail!("usage: /part [#channel] [reason] (this buffer is not a channel)"),
            };
            command(app, net, move |c| c.part(&channel, reason.as_deref())).await
        }
        Command::Msg { target, text } => {
            let net = current_network(app)?;
            command(app, net, move |c| c.privmsg(&target, &text)).await
        }
        Command::Notice { target, text } => {
            let net = current_network(app)?;
            command(app, net, move |c| c.notice(&target, &text)).await
        }
        Command::Me { text } => {
            let (net, name, kind) = current(app).await?;
            if kind == BufferKind::Server {
                bail!("/me needs a channel or query buffer");
            }
            command(app, net, move |c| c.action(&name, &text)).await
        }
        Command::Smsg { target, text } => {
            let net = current_network(app)?;
            let text = text.expose().to_owned();
            command(app, net, move |c| c.secret_privmsg(&target, &text)).await
        }
        Command::Cloud(entry) => {
            let net = current_network(app)?;
            let session = &app.networks[net].session;
            if session.reader().transport() != rete_transports::TransportKind::ReteCloud {
                bail!("/cloud is for a network reached through ReteCloud; this one talks to its IRC server directly");
            }
            // The service's answer can take a round trip or a reconnect:
            // waited for beside the input loop. Its echo lands in the
            // server buffer as a status line; a failure is said here.
            let sender = session.sender();
            tokio::spawn(async move {
                if let Err(e) = sender.cloud_settings(vec![entry]).await {
                    say(&format!("-!- /cloud: {e}"));
                }
            });
            Ok(())
        }
        Command::Backlog(rows) => super::older::command(app, rows).await,
        Command::Nick { nick } => {
            let net = current_network(app)?;
            command(app, net, move |c| c.nick(&nick)).await
        }
        Command::Quote { line } => {
            let net = current_network(app)?;
            note_quoted_request(app, net, &line);
            command(app, net, move |c| c.quote(&line)).await
        }
        Command::Oper { name, password } => {
            let net = current_network(app)?;
            let password = password.expose().to_owned();
            command(app, net, move |c| c.oper(&name, &password)).await
        }
        Command::Buffers => {
            let here = focused_key(app);
            for (n, entry) in buffers::list(app).await.iter().enumerate() {
                let mark = if Some(&entry.key) == here.as_ref() {
                    " *"
                } else {
                    ""
                };
                say(&format!("{}. {}{mark}", n + 1, entry.label));
            }
            Ok(())
        }
        Command::Buffer(which) => {
            let list = buffers::list(app).await;
            let entry = buffers::find(&list, &which)?;
            switch_to(app, &entry.key);
            if app.mode == Mode::Line {
                say(&format!("-!- now in {}", entry.label));
            }
            Ok(())
        }
        Command::Query { nick, text } => {
            let net = current_network(app)?;
            let name = nick.clone();
            let open = app.networks[net]
                .session
                .reader()
                .read(move |v| v.find_buffer(BufferKind::Query, &name).cloned())
                .await?;
            match (open, text) {
                (Some(buffer), text) => {
                    app.focus(Current {
                        network: net,
                        buffer,
                    });
                    if let Some(text) = text {
                        command(app, net, move |c| c.privmsg(&nick, &text)).await?;
                    }
                    Ok(())
                }
                (None, Some(text)) => command(app, net, move |c| c.privmsg(&nick, &text)).await,
                // The engine opens a query buffer when a message is sent or
                // received; without text there is nothing to open it with.
                (None, None) => bail!("no buffer with {nick} yet: /query {nick} <text> opens one"),
            }
        }
        Command::Close if app.raw_focused.is_some() => {
            // The raw buffer leaves the list; its ring keeps filling.
            let net = app.raw_focused.take().unwrap_or_default();
            app.raw_open.remove(&net);
            let server = app.networks[net]
                .session
                .reader()
                .read(|v| v.server_buffer().clone())
                .await?;
            app.focus(Current {
                network: net,
                buffer: server,
            });
            say(&format!(
                "-!- closed {}'s raw buffer",
                app.networks[net].config.name
            ));
            Ok(())
        }
        Command::Close => {
            let (net, name, kind) = current(app).await?;
            match kind {
                BufferKind::Server => {
                    bail!("the server buffer stays open: /disconnect to leave the network")
                }
                BufferKind::Channel if joined(app, net).await => {
                    let channel = name.clone();
                    command(app, net, move |c| c.part(&channel, None)).await?;
                }
                _ => {}
            }
            if let Some(current) = app.current.take() {
                app.closed.insert((current.network, current.buffer));
            }
            let server = app.networks[net]
                .session
                .reader()
                .read(|v| v.server_buffer().clone())
                .await?;
            app.focus(Current {
                network: net,
                buffer: server,
            });
            say(&format!("-!- closed {name}"));
            Ok(())
        }
        Command::Clear => {
            if app.raw_focused.is_some() {
                bail!("the raw buffer keeps the last 2,000 lines and cannot be cleared");
            }
            if app.own_focused {
                if let Some(notices) = &app.own {
                    notices.clear();
                }
                return Ok(());
            }
            let current = app
                .current
                .clone()
                .ok_or_else(|| anyhow!("no buffer selected: see /buffers"))?;
            let id = current.buffer.clone();
            let last = app.networks[current.network]
                .session
                .reader()
                .read(move |v| v.buffer(&id).map(|b| b.last_seq()))
                .await?
                .unwrap_or(0);
            app.notes.clear(current.network, &current.buffer);
            app.cleared.insert((current.network, current.buffer), last);
            Ok(())
        }
        Command::Lastlog(search) => lastlog(app, search).await,
        Command::Reconnect { network } => {
            let i = match network {
                Some(n) => network_named(app, &n)?,
                None => current_network(app)?,
            };
            let sender = app.networks[i].session.sender();
            sender.disconnect(Some("reconnecting".to_owned()));
            sender.connect();
            Ok(())
        }
        Command::Raw { network } => {
            let i = match network {
                Some(n) => network_named(app, &n)?,
                None => current_network(app)?,
            };
            if app.mode == Mode::Screen {
                app.raw_open.insert(i);
                switch_to(app, &Key::Raw(i));
            } else {
                show_raw(app, i);
            }
            Ok(())
        }
        Command::Ignore(None) => {
            if app.loaded.config.ignores.is_empty() {
                say("-!- nothing is ignored");
            }
            for mask in &app.loaded.config.ignores {
                say(&format!("-!- ignoring {}", full(mask)));
            }
            Ok(())
        }
        Command::Ignore(Some(mask)) => {
            if let Some(problem) = mask_problem(&mask) {
                bail!("{problem}");
            }
            if app
                .loaded
                .config
                .ignores
                .iter()
                .any(|m| full(m).eq_ignore_ascii_case(&full(&mask)))
            {
                bail!("{} is already ignored", full(&mask));
            }
            let mut masks = app.loaded.config.ignores.clone();
            masks.push(mask.clone());
            set_ignores(&app.loaded.path, &masks)?;
            app.set_ignores(masks);
            say(&format!("-!- ignoring {} (saved)", full(&mask)));
            Ok(())
        }
        Command::Alias {
            name: None,
            expansion: None,
        } => {
            let aliases = &app.loaded.config.aliases;
            if aliases.is_empty() {
                say("-!- no aliases: /alias NAME COMMAND makes one");
            }
            for (name, expansion) in aliases {
                say(&format!("-!- /{name} = /{expansion}"));
            }
            Ok(())
        }
        Command::Alias {
            name: Some(name),
            expansion: None,
        } => {
            match app.loaded.config.aliases.get(&name) {
                Some(expansion) => say(&format!("-!- /{name} = /{expansion}")),
                None => say(&format!("-!- no alias /{name}")),
            }
            Ok(())
        }
        Command::Alias {
            name: Some(name),
            expansion: Some(expansion),
        } => {
            if reterm::input::is_command(&name) {
                bail!("/{name} is a reterm command: an alias cannot replace it");
            }
            set_alias(&app.loaded.path, &name, Some(&expansion))?;
            say(&format!("-!- /{name} = /{expansion} (saved)"));
            app.loaded.config.aliases.insert(name, expansion);
            Ok(())
        }
        Command::Alias {
            name: None,
            expansion: Some(_),
        } => Ok(()),
        Command::Unalias(name) => {
            if !app.loaded.config.aliases.contains_key(&name) {
                bail!("no alias /{name}");
            }
            set_alias(&app.loaded.path, &name, None)?;
            app.loaded.config.aliases.remove(&name);
            say(&format!("-!- /{name} forgotten (saved)"));
            Ok(())
        }
        Command::Unignore(mask) => {
            let mut masks = app.loaded.config.ignores.clone();
            let before = masks.len();
            masks.retain(|m| !full(m).eq_ignore_ascii_case(&full(&mask)));
            if masks.len() == before {
                bail!("{} is not ignored: /ignore lists the masks", full(&mask));
            }
            set_ignores(&app.loaded.path, &masks)?;
            app.set_ignores(masks);
            say(&format!("-!- no longer ignoring {} (saved)", full(&mask)));
            Ok(())
        }
        Command::Reload => super::reload::reload(app).await,
        Command::Server(command) => server(app, command).await,
        Command::Irc(irc) => irc_command(app, irc).await,
        Command::Quit { reason } => {
            app.leave(reason);
            Ok(())
        }
        Command::Help { command } => {
            for line in help_text(command.as_deref()).lines() {
                say(line);
            }
            Ok(())
        }
        Command::Set(setting) => set(app, setting).await,
        Command::SetShow(word) => show_settings(app, word.as_deref()),
        Command::Control(ControlCommand::Token { regenerate }) => {
            say(&app.control.token(regenerate).await);
            Ok(())
        }
        Command::Control(ControlCommand::Register { local }) => {
            for line in app.control.register(local.as_deref()).await {
                say(&line);
            }
            Ok(())
        }
        Command::Control(ControlCommand::RegisterGrant { name, local }) => {
            for line in app.control.register_grant(&name, local.as_deref()).await {
                say(&line);
            }
            Ok(())
        }
        Command::Control(ControlCommand::GrantAdd(words)) => {
            for line in app.control.grant_add(&words) {
                say(&line);
            }
            Ok(())
        }
        Command::Control(ControlCommand::GrantList) => {
            for line in app.control.grant_list() {
                say(&line);
            }
            Ok(())
        }
        Command::Control(ControlCommand::GrantRevoke(name)) => {
            for line in app.control.grant_revoke(&name).await {
                say(&line);
            }
            Ok(())
        }
        Command::Control(ControlCommand::RegisterProject) => {
            say(super::register::NO_PROJECT_SCOPE);
            Ok(())
        }
        Command::Control(ControlCommand::Allow) => {
            say(&super::approval::answer(
                app.control.approvals(),
                None,
                true,
            ));
            Ok(())
        }
        Command::Control(ControlCommand::Deny) => {
            say(&super::approval::answer(
                app.control.approvals(),
                None,
                false,
            ));
            Ok(())
        }
        Command::Control(ControlCommand::Status) => {
            for line in app.control.status() {
                say(&line);
            }
            Ok(())
        }
        Command::Control(ControlCommand::Log) => {
            let rows = app.control.log();
            if rows.is_empty() {
                say("-!- the AI access log is empty");
            }
            for row in rows {
                say(&row);
            }
            Ok(())
        }
    }
}

/// Applies a setting: saved first (enabled, debug, port; never send), then
/// the running server follows it.
async fn set(app: &mut App, setting: Setting) -> Result<()> {
    let path = app.loaded.path.clone();
    let failure = match setting {
        Setting::TimeFormat(format) => {
            if let Some(problem) = time_format_problem(&format) {
                bail!("{problem}");
            }
            set_display(&path, &DisplaySetting::TimeFormat(format.clone()))?;
            app.look.set_time_format(&format).map_err(|e| anyhow!(e))?;
            app.loaded.config.display.time_format = format.clone();
            say(&format!("time_format is {}", format.escape_debug()));
            None
        }
        Setting::MircColours(on) => {
            set_display(&path, &DisplaySetting::MircColours(on))?;
            app.look.mirc = on;
            app.loaded.config.display.mirc_colours = on;
            say(&format!("mirc_colours is {}", on_off(on)));
            None
        }
        Setting::Nicklist(on) => {
            set_display(&path, &DisplaySetting::Nicklist(on))?;
            app.look.nicklist = on;
            app.loaded.config.display.nicklist = on;
            say(&format!("nicklist is {}", on_off(on)));
            None
        }
        Setting::Highlights(words) => {
            set_display(&path, &DisplaySetting::Highlights(words.clone()))?;
            let shown = if words.is_empty() {
                "none".to_owned()
            } else {
                words.join(",")
            };
            app.loaded.config.display.highlights = words.clone();
            app.look.highlights = words;
            say(&format!("highlights: {}", shown.escape_debug()));
            None
        }
        Setting::ControlEnabled(on) => {
            set_control(&path, ControlSetting::Enabled(on))?;
            app.loaded.config.control.enabled = on;
            say(&format!("control.enabled is {}", on_off(on)));
            app.control.apply(&app.loaded.config.control).await
        }
        Setting::ControlDebug(on) => {
            set_control(&path, ControlSetting::Debug(on))?;
            app.loaded.config.control.debug = on;
            app.control.set_debug(on);
            say(&format!("control.debug is {}", on_off(on)));
            None
        }
        Setting::ControlSend(on) => {
            // Never saved: sending is off at every start.
            app.control.set_send(on);
            say(&format!(
                "control.send is {} until reterm quits",
                on_off(on)
            ));
            None
        }
        Setting::ControlApprove(on) => {
            set_control(&path, ControlSetting::Approve(on))?;
            app.loaded.config.control.approve = on;
            app.control.set_approve(on);
            say(&format!("control.approve is {}", on_off(on)));
            None
        }
        Setting::ControlPort { port, clamped } => {
            set_control(&path, ControlSetting::Port(port))?;
            app.loaded.config.control.port = port;
            let note = if clamped {
                " (clamped to 1024…65535)"
            } else {
                ""
            };
            say(&format!("control.port is {port}{note}"));
            app.control.set_port(port).await
        }
    };
    if let Some(failure) = failure {
        say(&format!("-!- {failure}"));
    }
    Ok(())
}

/// `/set` alone or `/set word`: each setting (whose name holds `word`) with
/// its value now, one per line.
fn show_settings(app: &App, word: Option<&str>) -> Result<()> {
    let display = &app.loaded.config.display;
    let control = &app.loaded.config.control;
    let highlights = if app.look.highlights.is_empty() {
        "none".to_owned()
    } else {
        app.look.highlights.join(",")
    };
    let all = [
        (
            "time_format",
            display.time_format.escape_debug().to_string(),
        ),
        ("mirc_colours", on_off(app.look.mirc).to_owned()),
        ("nicklist", on_off(app.look.nicklist).to_owned()),
        ("highlights", highlights.escape_debug().to_string()),
        ("control.enabled", on_off(control.enabled).to_owned()),
        ("control.debug", on_off(control.debug).to_owned()),
        ("control.send", on_off(app.control.send()).to_owned()),
        ("control.approve", on_off(control.approve).to_owned()),
        ("control.port", control.port.to_string()),
    ];
    let shown: Vec<_> = all
        .iter()
        .filter(|(name, _)| word.is_none_or(|w| name.contains(w)))
        .collect();
    if shown.is_empty() {
        bail!(
            "no setting's name holds {}: /set lists them all",
            word.unwrap_or_default().escape_debug()
        );
    }
    for (name, value) in shown {
        say(&format!("{name} = {value}"));
    }
    Ok(())
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn network_named(app: &App, name: &str) -> Result<usize> {
    app.networks
        .iter()
        .position(|n| n.config.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| anyhow!("no network named {name} in the config"))
}

fn current_network(app: &App) -> Result<usize> {
    app.current
        .as_ref()
        .map(|c| c.network)
        .ok_or_else(|| anyhow!("no network: add one to the config"))
}

async fn current(app: &App) -> Result<(usize, String, BufferKind)> {
    app.current_target()
        .await
        .ok_or_else(|| anyhow!("no buffer selected: see /buffers"))
}

async fn command<F>(app: &App, net: usize, f: F) -> Result<()>
where
    F: FnOnce(
            &mut rete_engine::session::Commands<'_>,
        ) -> Result<(), rete_engine::session::CommandError>
        + Send
        + 'static,
{
    app.networks[net].session.sender().command(f).await?;
    Ok(())
}

/// The key of what the person looks at now.
pub fn focused_key(app: &App) -> Option<Key> {
    if let Some(net) = app.raw_focused {
        return Some(Key::Raw(net));
    }
    if app.own_focused {
        return Some(Key::Own);
    }
    app.current.clone().map(Key::Engine)
}

/// Shows the buffer `key` names.
pub fn switch_to(app: &mut App, key: &Key) {
    match key {
        Key::Own => {
            app.own_focused = true;
            app.set_raw_focused(None);
        }
        Key::Raw(net) => {
            app.own_focused = true;
            app.set_raw_focused(Some(*net));
        }
        Key::Engine(current) => app.focus(current.clone()),
    }
}

/// An everyday IRC command as one line for the current channel.
async fn irc_command(app: &mut App, irc: IrcCommand) -> Result<()> {
    let target = if app.own_focused {
        None
    } else {
        app.current_target().await
    };
    let net = match &target {
        Some((net, _, _)) => *net,
        None => current_network(app)?,
    };
    let channel = target
        .as_ref()
        .filter(|(_, _, kind)| *kind == BufferKind::Channel)
        .map(|(_, name, _)| name.clone());
    let line = irc.line(channel.as_deref()).map_err(|e| anyhow!(e))?;
    // Remember what was asked, so the engine's answer is shown.
    match &irc {
        IrcCommand::Topic(None) => {
            if let Some(c) = &channel {
                app.asked_topic.insert((net, c.to_lowercase()));
            }
        }
        IrcCommand::Names(which) => {
            if let Some(c) = which.as_ref().or(channel.as_ref()) {
                app.asked_names.insert((net, c.to_lowercase()));
            }
        }
        _ => {}
    }
    command(app, net, move |c| c.quote(&line)).await
}

/// Remembers a `/quote TOPIC #c` or `/quote NAMES #c`, whose answers the
/// engine keeps as state rather than rows, so they are shown.
fn note_quoted_request(app: &mut App, net: usize, line: &str) {
    let mut words = line.split_whitespace();
    let (Some(verb), Some(chan), None) = (words.next(), words.next(), words.next()) else {
        return;
    };
    let key = (net, chan.to_lowercase());
    if verb.eq_ignore_ascii_case("TOPIC") {
        app.asked_topic.insert(key);
    } else if verb.eq_ignore_ascii_case("NAMES") {
        app.asked_names.insert(key);
    }
}

/// `/lastlog text`: the current buffer's rows containing `text` (ignoring
/// case), as line mode prints rows.
async fn lastlog(app: &mut App, search: Lastlog) -> Result<()> {
    let current = app
        .current
        .clone()
        .filter(|_| !app.own_focused)
        .ok_or_else(|| anyhow!("/lastlog searches a network's buffer: switch to one first"))?;
    let net_name = app.networks[current.network].config.name.clone();
    let text = search.text.clone();
    let last = search.last;
    let matcher = search.matcher().map_err(|e| anyhow!(e))?;
    let found = app.networks[current.network]
        .session
        .reader()
        .read(move |v| {
            let b = v.buffer(&current.buffer)?;
            // Printed like any row: the held secrets masked.
            let secrets = v.secrets();
            Some(
                b.display()
                    .filter(|row| {
                        let mut hit = false;
                        row.payload.for_each_text(|t| hit |= matcher.matches(t));
                        hit
                    })
                    .map(|row| {
                        let line = super::render::render_row(&net_name, b.name(), b.kind(), row);
                        secrets.mask(&line).into_owned()
                    })
                    .collect::<Vec<_>>(),
            )
        })
        .await?
        .unwrap_or_default();
    let skipped = last.map_or(0, |n| found.len().saturating_sub(n));
    if skipped > 0 {
        say(&format!(
            "-!- lastlog: the last {} of {} rows that contain {}",
            found.len() - skipped,
            found.len(),
            text.escape_debug()
        ));
    } else {
        say(&format!(
            "-!- lastlog: {} rows contain {}",
            found.len(),
            text.escape_debug()
        ));
    }
    for line in found.iter().skip(skipped) {
        say(line);
    }
    Ok(())
}

/// How many raw lines `/raw` prints.
const RAW_SHOWN: usize = 200;

/// `/raw`: prints the network's recent raw lines, oldest first, each marked
/// `<<` (in) or `>>` (out), with the session's held secrets masked and
/// display-escaped like any other text. Printed as reterm's own lines,
/// so they never reach a transcript.
fn show_raw(app: &App, net: usize) {
    let name = &app.networks[net].config.name;
    let secrets = app.secrets(net);
    let (lines, dropped) = app.raw.last(app.networks[net].session.id(), RAW_SHOWN);
    if lines.is_empty() {
        say(&format!("-!- raw {name}: no lines yet"));
        return;
    }
    let older = if dropped > 0 {
        format!(", {dropped} older lines dropped")
    } else {
        String::new()
    };
    say(&format!(
        "-!- raw {name}: the last {} lines{older}",
        lines.len()
    ));
    for line in lines {
        let masked = secrets.mask(&line.marked()).into_owned();
        say(&format!(
            "-!- raw {name} {}",
            rete_redact::display_escape(&masked)
        ));
    }
}

/// `/server list|add|remove`: the networks in the config, changed in the
/// file; an added network starts at once (as a `/reload` would add it).
async fn server(app: &mut App, command: ServerCommand) -> Result<()> {
    match command {
        ServerCommand::List => {
            if app.networks.is_empty() {
                say("-!- no networks: /server add NAME HOST [PORT]");
            }
            for net in &app.networks {
                let c = &net.config;
                let tls = if c.tls { " tls" } else { "" };
                let auto = if c.autoconnect { ", autoconnect" } else { "" };
                say(&format!(
                    "-!- {}: {}:{}{tls}, nick {}{auto}",
                    c.name, c.host, c.port, c.nick
                ));
            }
            Ok(())
        }
        ServerCommand::Add {
            name,
            host,
            port,
            tls,
            nick,
            autoconnect,
        } => {
            if app
                .networks
                .iter()
                .any(|n| n.config.name.eq_ignore_ascii_case(&name))
            {
                bail!("there is a network {name} already");
            }
            let nick = nick
                .or_else(|| {
                    app.current
                        .as_ref()
                        .and_then(|c| app.networks.get(c.network))
                        .or_else(|| app.networks.first())
                        .map(|n| n.config.nick.clone())
                })
                .unwrap_or_else(|| "reterm".to_owned());
            let new = reterm::config::NewServer {
                name: name.clone(),
                host,
                port,
                tls,
                nick,
                autoconnect,
            };
            let path = app.loaded.path.clone();
            let before = reterm::config::add_server(&path, &new)?;
            if let Err(e) = super::reload::reload(app).await {
                reterm::config::restore(&path, &before)?;
                bail!("{e} (the file is as it was)");
            }
            if !autoconnect {
                say(&format!("-!- {name} saved; /connect {name} connects it"));
            }
            Ok(())
        }
        ServerCommand::Remove(name) => {
            if !reterm::config::remove_server(&app.loaded.path, &name)? {
                bail!("no network {name} in {}", app.loaded.path.display());
            }
            say(&format!(
                "-!- {name} removed from the config; its session stays until reterm restarts (/disconnect {name} leaves it now)"
            ));
            Ok(())
        }
    }
}
