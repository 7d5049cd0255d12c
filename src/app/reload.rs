//! `/reload`: the config file read again. Networks new in the file are added
//! (and connected when `autoconnect`); the ignore list, the display
//! settings and the aliases are applied; so are a running IRC network's
//! nick (asked for at once), channels (joined and parted at once) and
//! login (username, realname, server password, SASL: from its next
//! connection), as irssi users expect. What cannot change under a running
//! session (a network's server and TLS, a ReteCloud network's settings;
//! logging; the control settings) is reported, to be applied by restarting
//! reterm, so nothing is half-changed.

use super::{say, spec, App};
use anyhow::Result;
use reterm::config::NetworkConfig;

/// How a network's table changed, as `/reload` can apply it.
#[derive(Debug, Default, PartialEq, Eq)]
struct Change {
    nick: bool,
    channels: bool,
    login: bool,
    /// What else changed: applied when reterm restarts.
    on_restart: Vec<&'static str>,
}

impl Change {
    fn live(&self) -> bool {
        self.nick || self.channels || self.login
    }
}

/// What differs between the running network's table and the file's.
fn change(running: &NetworkConfig, file: &NetworkConfig) -> Change {
    // A ReteCloud network's nick, channels and login are the service's.
    if running.cloud.is_some() || file.cloud.is_some() {
        let mut c = Change::default();
        if running != file {
            c.on_restart.push("its ReteCloud settings");
        }
        return c;
    }
    let mut c = Change {
        nick: running.nick != file.nick,
        channels: running.channels != file.channels,
        login: running.username != file.username
            || running.realname != file.realname
            || running.password != file.password
            || running.sasl != file.sasl,
        on_restart: Vec::new(),
    };
    let restart = [
        ("name", running.name != file.name),
        (
            "server",
            running.host != file.host || running.port != file.port,
        ),
        (
            "TLS",
            running.tls != file.tls
                || running.tls_fingerprint != file.tls_fingerprint
                || running.tls_cert != file.tls_cert,
        ),
        ("autoconnect", running.autoconnect != file.autoconnect),
        (
            "buffer sizes",
            running.max_query_buffers != file.max_query_buffers
                || running.buffer_rows != file.buffer_rows,
        ),
    ];
    c.on_restart = restart
        .into_iter()
        .filter(|(_, differs)| *differs)
        .map(|(what, _)| what)
        .collect();
    c
}

/// Applies `change`'s live parts of `file` to the running network `i`, and
/// records them as the network's table.
async fn apply(app: &mut App, i: usize, file: &NetworkConfig, change: &Change) -> Result<()> {
    let fresh = spec::session_spec(file)?.config;
    let (nick, channels, login) = (change.nick, change.channels, change.login);
    app.networks[i]
        .session
        .sender()
        .command(move |c| {
            if login {
                c.set_login(
                    &fresh.username,
                    &fresh.realname,
                    fresh.password.as_deref(),
                    fresh.sasl.clone(),
                )?;
            }
            if channels {
                c.set_channel_specs(&fresh.channels)?;
            }
            if nick {
                c.set_nick(&fresh.nick)?;
            }
            Ok(())
        })
        .await?;
    let running = &mut app.networks[i].config;
    running.nick.clone_from(&file.nick);
    running.channels.clone_from(&file.channels);
    running.username.clone_from(&file.username);
    running.realname.clone_from(&file.realname);
    running.password.clone_from(&file.password);
    running.sasl.clone_from(&file.sasl);
    Ok(())
}

/// Re-reads the config and applies what can be applied now.
pub async fn reload(app: &mut App) -> Result<()> {
    let fresh = reterm::config::load_or_create(&app.loaded.path)?;
    let mut added = Vec::new();
    let mut changed = Vec::new();
    for net in &fresh.config.networks {
        let Some(i) = app.networks.iter().position(|n| n.config.id == net.id) else {
            added.push(net.clone());
            continue;
        };
        let change = change(&app.networks[i].config, net);
        if change.live() {
            match apply(app, i, net, &change).await {
                Ok(()) => say(&format!(
                    "-!- {}: applied {}",
                    net.name,
                    applied_parts(&change)
                )),
                Err(e) => say(&format!("-!- {}: not applied: {e}", net.name)),
            }
        }
        if !change.on_restart.is_empty() {
            changed.push(format!("{} ({})", net.name, change.on_restart.join(", ")));
        }
    }
    let gone: Vec<String> = app
        .networks
        .iter()
        .filter(|n| !fresh.config.networks.iter().any(|f| f.id == n.config.id))
        .map(|n| n.config.name.clone())
        .collect();
    for net in added {
        let name = net.name.clone();
        app.add_network(net).await?;
        say(&format!("-!- added network {name}"));
    }
    app.set_ignores(fresh.config.ignores.clone());
    let masks = std::mem::take(&mut app.look.masks);
    app.look = super::look_of(&fresh.config.display);
    app.look.masks = masks;
    app.loaded.config.display = fresh.config.display.clone();
    app.loaded.config.aliases = fresh.config.aliases.clone();
    if !changed.is_empty() {
        say(&format!(
            "-!- changed in the file, applied when reterm restarts: {}",
            changed.join(", ")
        ));
    }
    if !gone.is_empty() {
        say(&format!(
            "-!- no longer in the file, kept until reterm restarts: {}",
            gone.join(", ")
        ));
    }
    if fresh.config.logging != app.loaded.config.logging {
        say("-!- logging changed: applied when reterm restarts");
    }
    say(&format!("-!- reloaded {}", app.loaded.path.display()));
    Ok(())
}

/// The live parts of a change, as `/reload` reports them.
fn applied_parts(change: &Change) -> String {
    let parts = [
        (change.nick, "the nick"),
        (change.channels, "the channels"),
        (change.login, "the login (from the next connection)"),
    ];
    parts
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, what)| what)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net() -> NetworkConfig {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("reterm.toml");
        let text = "[[networks]]\nid = \"0F8E2B1A-3C4D-4E5F-8A9B-0C1D2E3F4A5B\"\nname = \"a\"\n\
                    host = \"irc.example\"\nport = 6697\ntls = true\nnick = \"rt\"\nchannels = [\"#a\"]\n";
        std::fs::write(&path, text).expect("write");
        let loaded = reterm::config::load_or_create(&path).expect("config");
        loaded.config.networks[0].clone()
    }

    #[test]
    fn nick_channels_and_login_are_live_the_server_waits_for_a_restart() {
        let running = net();
        let mut file = running.clone();
        assert_eq!(change(&running, &file), Change::default());
        file.nick = "rt2".into();
        file.realname = "New Name".into();
        let c = change(&running, &file);
        assert!(
            c.nick && c.login && !c.channels && c.on_restart.is_empty(),
            "{c:?}"
        );
        file.port = 6667;
        file.tls = false;
        assert_eq!(change(&running, &file).on_restart, ["server", "TLS"]);
    }

    #[test]
    fn a_retecloud_networks_changes_all_wait_for_a_restart() {
        let mut running = net();
        running.cloud = Some(reterm::config::CloudNetworkConfig {
            url: "wss://cloud.example/".into(),
            network: "libera".into(),
            account: None,
        });
        let mut file = running.clone();
        file.nick = "rt2".into();
        let c = change(&running, &file);
        assert!(!c.live(), "{c:?}");
        assert_eq!(c.on_restart, ["its ReteCloud settings"]);
    }
}
