//! `/reload`: the config file read again. Networks new in the file are added
//! (and connected when `autoconnect`); the ignore list, the display
//! settings and the aliases are applied. What
//! cannot change under a running session (a network's server, nick,
//! credentials; logging; the control settings) is reported, to be applied
//! by restarting reterm, so nothing is half-changed.

use super::{say, App};
use anyhow::Result;

/// Re-reads the config and applies what can be applied now.
pub async fn reload(app: &mut App) -> Result<()> {
    let fresh = reterm::config::load_or_create(&app.loaded.path)?;
    let mut added = Vec::new();
    let mut changed = Vec::new();
    for net in &fresh.config.networks {
        match app.networks.iter().find(|n| n.config.id == net.id) {
            None => added.push(net.clone()),
            Some(running) if running.config != *net => changed.push(net.name.clone()),
            Some(_) => {}
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
