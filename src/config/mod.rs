//! The `reterm` config file (`~/.rete/reterm.toml`).
//!
//! The file is the only place networks are defined, so loading is strict: unknown
//! keys, duplicate networks and malformed values are reported with the file
//! position instead of being silently ignored. The file is also written by us (to
//! fill in network ids and persist `/set control.*`), always through `toml_edit`
//! so the user's comments and layout survive, and always atomically so a crash
//! never leaves half a config behind.

mod aliases;
mod control;
mod display;
mod error;
mod ids;
mod ignores;
mod load;
mod model;
mod raw;
mod servers;
mod template;
mod validate;
mod write;

pub use aliases::{alias_expansion_problem, alias_name_problem, set_alias};
pub use control::{set_control, ControlKey, ControlSetting};
pub use display::{set_display, time_format_problem, DisplaySetting};
pub use error::ConfigError;
pub use ignores::{mask_problem, set_ignores};
pub use load::{default_path, load_or_create, LoadedConfig};
pub use model::{
    ChannelConfig, CloudNetworkConfig, Config, ControlConfig, DisplayConfig, NetworkConfig,
    SaslConfig, SaslMechanismName, DEFAULT_CONTROL_PORT, DEFAULT_TIME_FORMAT,
};
pub use servers::{add_server, remove_server, restore, NewServer};
pub use template::template;
