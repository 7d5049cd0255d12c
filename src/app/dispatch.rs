//! What each typed command does. Every path either acts or returns one
//! error line; a refused command changes nothing.

use super::{say, App, Current};
use anyhow::{anyhow, bail, Result};
use rete_engine::buffer::BufferKind;
use rete_engine::ids::BufferId;
use reterm::config::{set_control, ControlSetting};
use reterm::input::{help_text, BufferRef, Command, ControlCommand, Input, Setting};

/// Runs one parsed input line.
pub async fn dispatch(app: &mut App, input: Input) -> Result<()> {
    match input {
        Input::Empty => Ok(()),
        Input::Text(text) => {
            let (net, name, kind) = app
                .current_target()
                .await
                .ok_or_else(|| anyhow!("no network: add one to the config"))?;
            if kind == BufferKind::Server {
                bail!("this is the server buffer: /join a channel or /buffer one to talk");
            }
            command(app, net, move |c| c.privmsg(&name, &text)).await
        }
        Input::Command(cmd) => run(app, cmd).await,
    }
}

async fn run(app: &mut App, cmd: Command) -> Result<()> {
    match cmd {
        Command::Connect { network } => {
            let i = network_named(app, &network)?;
            app.networks[i].session.sender().connect();
            Ok(())
        }
        Command::Disconnect { network } => {
            let i = match network {
                Some(n) => network_named(app, &n)?,
                None => current_network(app)?,
            };
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
                Some(buffer) => {
                    app.current = Some(Current {
                        network: net,
                        buffer,
                    })
                }
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
        Command::Nick { nick } => {
            let net = current_network(app)?;
            command(app, net, move |c| c.nick(&nick)).await
        }
        Command::Quote { line } => {
            let net = current_network(app)?;
            command(app, net, move |c| c.quote(&line)).await
        }
        Command::Oper { name, password } => {
            let net = current_network(app)?;
            let password = password.expose().to_owned();
            command(app, net, move |c| c.oper(&name, &password)).await
        }
        Command::Buffers => {
            for (n, (net, id, line)) in all_buffers(app).await.iter().enumerate() {
                let here = app
                    .current
                    .as_ref()
                    .is_some_and(|c| c.network == *net && &c.buffer == id);
                let mark = if here { " *" } else { "" };
                say(&format!("{}. {line}{mark}", n + 1));
            }
            Ok(())
        }
        Command::Buffer(which) => {
            let list = all_buffers(app).await;
            let pick = match which {
                BufferRef::Number(n) => list.get(n.get() - 1),
                BufferRef::Name(name) => list.iter().find(|(_, _, line)| {
                    line.split(' ')
                        .nth(1)
                        .is_some_and(|b| b.eq_ignore_ascii_case(&name))
                }),
            };
            let (net, id, line) = pick
                .cloned()
                .ok_or_else(|| anyhow!("no such buffer: see /buffers"))?;
            app.current = Some(Current {
                network: net,
                buffer: id,
            });
            say(&format!("-!- now in {line}"));
            Ok(())
        }
        Command::Quit { reason } => {
            for n in &app.networks {
                n.session.sender().disconnect(reason.clone());
            }
            app.quit = true;
            Ok(())
        }
        Command::Help { command } => {
            for line in help_text(command.as_deref()).lines() {
                say(line);
            }
            Ok(())
        }
        Command::Set(setting) => set(app, setting).await,
        Command::Control(ControlCommand::Token { regenerate }) => {
            say(&app.control.token(regenerate).await);
            Ok(())
        }
        Command::Control(ControlCommand::Status) => {
            say(&app.control.status());
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

/// Every buffer of every network, numbered in listing order:
/// (network index, buffer id, "[network] name (kind)").
async fn all_buffers(app: &App) -> Vec<(usize, BufferId, String)> {
    let mut out = Vec::new();
    for (i, n) in app.networks.iter().enumerate() {
        let name = n.config.name.clone();
        let list = n
            .session
            .reader()
            .read(move |v| {
                v.buffers()
                    .map(|b| {
                        let label = match b.kind() {
                            BufferKind::Server => format!("[{name}] {} (server)", b.name()),
                            k => format!("[{name}] {} ({})", b.name(), k.as_str()),
                        };
                        (b.id().clone(), label)
                    })
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap_or_default();
        out.extend(list.into_iter().map(|(id, label)| (i, id, label)));
    }
    out
}
