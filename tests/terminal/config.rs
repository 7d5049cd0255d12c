//! Behaviour of the config file: creation, id write-back, validation errors,
//! `set_control`, and that secrets never reach Debug or error output.
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use reterm::config::{
    load_or_create, set_control, template, ConfigError, ControlSetting, LoadedConfig,
    SaslMechanismName,
};

/// A temp dir holding `reterm.toml` with `text`.
fn with_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("reterm.toml");
    fs::write(&path, text).expect("write config");
    (dir, path)
}

fn load(text: &str) -> Result<LoadedConfig, ConfigError> {
    let (_dir, path) = with_file(text);
    load_or_create(&path)
}

fn load_err(text: &str) -> String {
    match load(text) {
        Ok(loaded) => panic!("expected an error, got {loaded:?}"),
        Err(e) => e.to_string(),
    }
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).expect("metadata").permissions().mode() & 0o777
}

fn is_upper_uuid(id: &str) -> bool {
    uuid::Uuid::parse_str(id).is_ok() && id.len() == 36 && id == id.to_ascii_uppercase()
}

/// Files in `dir` other than the config (left-over temp files).
fn stray_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != "reterm.toml")
        .collect()
}

const NET: &str = "[[networks]]\nname = \"a\"\nhost = \"irc.example\"\nnick = \"me\"\n";

#[test]
fn first_run_creates_private_template_without_autoconnect() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rete_dir = dir.path().join(".rete");
    let path = rete_dir.join("reterm.toml");

    let loaded = load_or_create(&path).expect("load");

    assert!(loaded.created);
    assert_eq!(loaded.path, path);
    assert_eq!(mode(&rete_dir), 0o700);
    assert_eq!(mode(&path), 0o600);
    let config = &loaded.config;
    assert!(!config.logging);
    assert!(!config.control.enabled);
    assert_eq!(config.control.port, 7422);
    assert!(
        config.networks.iter().all(|n| !n.autoconnect),
        "a fresh config must not connect anywhere by itself"
    );
    assert!(config.networks.iter().all(|n| n.host == "127.0.0.1"));
    // Every template network got an id, written to the file.
    let text = fs::read_to_string(&path).expect("read");
    for network in &config.networks {
        assert!(is_upper_uuid(&network.id), "{}", network.id);
        assert!(text.contains(&format!("id = \"{}\"", network.id)));
    }
    // The template's comments survived the id write-back.
    for line in template().lines().filter(|l| l.starts_with('#')) {
        assert!(text.contains(line), "lost comment line {line:?}");
    }
    assert_eq!(stray_files(&rete_dir), Vec::<String>::new());

    let again = load_or_create(&path).expect("second load");
    assert!(!again.created);
    assert_eq!(again.ids_written, 0);
    assert_eq!(again.config, loaded.config);
    assert_eq!(fs::read_to_string(&path).expect("read"), text);
}

#[test]
fn template_explains_every_option() {
    let text = template();
    for key in [
        "logging",
        "enabled",
        "debug",
        "port",
        "id",
        "name",
        "host",
        "tls",
        "tls_fingerprint",
        "tls_cert",
        "nick",
        "username",
        "realname",
        "password",
        "sasl",
        "channels",
        "autoconnect",
        "transport",
        "url",
        "network",
        "retecloud-token",
    ] {
        assert!(
            text.lines().any(|l| l.contains('#') && l.contains(key)),
            "no comment mentions {key}"
        );
    }
}

#[test]
fn ids_are_written_back_keeping_comments_and_mode() {
    let original = "\
# my config
logging = true # keep logs

[[networks]]
# home network
name = \"home\"   # short name
host = \"irc.example\"
nick = \"me\"
sasl.mechanism = \"PLAIN\"
sasl.password = \"pw\"

# second one
[[networks]]
id = \"0d9c6d0e-3f7c-4a4e-9d34-2a8f8f5b5a11\"
name = \"work\"
host = \"irc.work.example\"
nick = \"me\"

[[networks]]
name = \"third\"
host = \"h\"
nick = \"n\"
";
    let (dir, path) = with_file(original);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");

    let loaded = load_or_create(&path).expect("load");
    assert_eq!(loaded.ids_written, 2);
    let nets = &loaded.config.networks;
    assert!(is_upper_uuid(&nets[0].id));
    assert_eq!(nets[1].id, "0D9C6D0E-3F7C-4A4E-9D34-2A8F8F5B5A11");
    assert!(is_upper_uuid(&nets[2].id));
    assert_ne!(nets[0].id, nets[2].id);

    let written = fs::read_to_string(&path).expect("read");
    let expected = original
        .replacen(
            "[[networks]]\n# home network\n",
            &format!("[[networks]]\n# home network\nid = \"{}\"\n", nets[0].id),
            1,
        )
        .replacen(
            "[[networks]]\nname = \"third\"",
            &format!("[[networks]]\nid = \"{}\"\nname = \"third\"", nets[2].id),
            1,
        );
    assert_eq!(written, expected);
    assert_eq!(mode(&path), 0o640);
    assert_eq!(stray_files(dir.path()), Vec::<String>::new());

    let again = load_or_create(&path).expect("second load");
    assert_eq!(again.ids_written, 0);
    assert_eq!(again.config, loaded.config);
    assert_eq!(fs::read_to_string(&path).expect("read"), written);
}

#[test]
fn ids_are_written_into_inline_network_tables() {
    let (_dir, path) = with_file("networks = [{ name = \"a\", host = \"h\", nick = \"n\" }]\n");
    let loaded = load_or_create(&path).expect("load");
    let id = &loaded.config.networks[0].id;
    assert_eq!(
        fs::read_to_string(&path).expect("read"),
        format!("networks = [{{ id = \"{id}\", name = \"a\", host = \"h\", nick = \"n\" }}]\n")
    );
}

#[test]
fn lower_case_id_is_normalised_and_file_left_alone() {
    let text = format!("{NET}id = \"0d9c6d0e-3f7c-4a4e-9d34-2a8f8f5b5a11\"\n");
    let (_dir, path) = with_file(&text);
    let loaded = load_or_create(&path).expect("load");
    assert_eq!(loaded.ids_written, 0);
    assert_eq!(
        loaded.config.networks[0].id,
        "0D9C6D0E-3F7C-4A4E-9D34-2A8F8F5B5A11"
    );
    assert_eq!(fs::read_to_string(&path).expect("read"), text);
}

#[test]
fn defaults_are_applied() {
    let config = load(NET).expect("load").config;
    let net = &config.networks[0];
    assert_eq!(net.port, 6667);
    assert!(!net.tls);
    assert_eq!(net.username, "me");
    assert_eq!(net.realname, "me");
    assert!(net.autoconnect);
    assert!(net.password.is_none() && net.sasl.is_none() && net.channels.is_empty());

    let tls = load(&format!("{NET}tls = true\n")).expect("load").config;
    assert_eq!(tls.networks[0].port, 6697);
}

#[test]
fn full_network_is_read() {
    let text = format!(
        "{NET}port = 7000\ntls = true\n\
         tls_fingerprint = \"{}\"\ntls_cert = \"certs/me.pem\"\n\
         username = \"ident\"\nrealname = \"Real Name\"\npassword = \"srv\"\n\
         sasl = {{ mechanism = \"external\" }}\n\
         channels = [\"#rete\", {{ name = \"#secret\", key = \"k3y\" }}]\nautoconnect = false\n",
        "AB:".repeat(31) + "AB"
    );
    let (dir, path) = with_file(&text);
    let net = load_or_create(&path)
        .expect("load")
        .config
        .networks
        .remove(0);
    assert_eq!(net.port, 7000);
    assert_eq!(
        net.tls_fingerprint.as_deref(),
        Some("ab".repeat(32).as_str())
    );
    assert_eq!(net.tls_cert, Some(dir.path().join("certs/me.pem")));
    assert_eq!(net.username, "ident");
    assert_eq!(net.realname, "Real Name");
    assert_eq!(
        net.password.as_ref().map(rete_redact::Secret::expose),
        Some("srv")
    );
    let sasl = net.sasl.expect("sasl");
    assert_eq!(sasl.mechanism, SaslMechanismName::External);
    assert_eq!(net.channels.len(), 2);
    assert_eq!(net.channels[0].name, "#rete");
    assert_eq!(net.channels[0].key, None);
    assert_eq!(net.channels[1].name, "#secret");
    assert_eq!(
        net.channels[1]
            .key
            .as_ref()
            .map(rete_redact::Secret::expose),
        Some("k3y")
    );
    assert!(!net.autoconnect);
}

#[test]
fn syntax_error_reports_file_line_and_column() {
    let (_dir, path) = with_file("logging = false\n\n[control]\nport = = 1\n");
    let err = load_or_create(&path).expect_err("syntax error");
    assert!(
        matches!(
            err,
            ConfigError::Syntax {
                line: 4,
                column: 8,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("{}:4:8: ", path.display())),
        "{err}"
    );
}

#[test]
fn type_error_reports_position() {
    let (_dir, path) = with_file("[control]\nenabled = \"yes\"\n");
    let err = load_or_create(&path).expect_err("type error").to_string();
    assert!(
        err.starts_with(&format!("{}:2:11: ", path.display())),
        "{err}"
    );
    assert!(err.contains("expected a boolean"), "{err}");
}

#[test]
fn unknown_keys_are_rejected_with_position() {
    let err = load_err(&format!("{NET}pasword = \"x\"\n"));
    assert!(err.contains(":5:1: unknown field `pasword`"), "{err}");
    let err = load_err("[control]\nprt = 1\n");
    assert!(err.contains(":2:1: unknown field `prt`"), "{err}");
    let err = load_err("colour = true\n");
    assert!(err.contains("unknown field `colour`"), "{err}");
    let err = load_err(&format!(
        "{NET}channels = [{{ name = \"#a\", kye = \"k\" }}]\n"
    ));
    assert!(err.contains("unknown field `kye`"), "{err}");
}

#[test]
fn sasl_password_mechanisms_need_a_password() {
    for mechanism in ["PLAIN", "SCRAM-SHA-256"] {
        let (_dir, path) = with_file(&format!("{NET}sasl = {{ mechanism = \"{mechanism}\" }}\n"));
        let err = load_or_create(&path).expect_err("no password").to_string();
        assert_eq!(
            err,
            format!(
                "{}: network \"a\": sasl {mechanism} needs a password",
                path.display()
            )
        );
    }
    let err = load_err(&format!(
        "{NET}tls = true\nsasl = {{ mechanism = \"EXTERNAL\" }}\n"
    ));
    assert!(
        err.ends_with("network \"a\": sasl EXTERNAL needs tls_cert"),
        "{err}"
    );
    let err = load_err(&format!("{NET}sasl = {{ mechanism = \"NTLM\" }}\n"));
    assert!(err.contains("unknown SASL mechanism \"NTLM\""), "{err}");
}

#[test]
fn duplicate_names_and_ids_are_rejected() {
    let err = load_err(&format!("{NET}{}", NET.replace("\"a\"", "\"A\"")));
    assert!(
        err.ends_with("network \"A\": duplicate network name \"A\""),
        "{err}"
    );

    let id = "0d9c6d0e-3f7c-4a4e-9d34-2a8f8f5b5a11";
    let err = load_err(&format!(
        "{NET}id = \"{id}\"\n{}id = \"{}\"\n",
        NET.replace("\"a\"", "\"b\""),
        id.to_ascii_uppercase()
    ));
    assert!(
        err.ends_with(&format!("duplicate network id {}", id.to_ascii_uppercase())),
        "{err}"
    );
}

#[test]
fn malformed_values_are_rejected() {
    let cases = [
        (
            format!("{NET}id = \"not-a-uuid\"\n"),
            "network \"a\": id \"not-a-uuid\" is not a UUID",
        ),
        (
            NET.replace("host = \"irc.example\"\n", ""),
            "network \"a\": host is missing or empty",
        ),
        (
            NET.replace("nick = \"me\"\n", ""),
            "network \"a\": nick is missing or empty",
        ),
        (NET.replace("name = \"a\"\n", ""), "missing field `name`"),
        (
            NET.replace("\"irc.example\"", "\"\""),
            "host is missing or empty",
        ),
        (
            NET.replace("\"me\"", "\"m e\""),
            "nick must not contain spaces",
        ),
        (
            format!("{NET}port = 0\n"),
            "port must be between 1 and 65535",
        ),
        (format!("{NET}port = 70000\n"), "expected u16"),
        (
            "[control]\nport = 0\n".to_string(),
            "control: port must be between 1 and 65535",
        ),
        (format!("{NET}channels = [\"\"]\n"), "channel name is empty"),
        (
            format!("{NET}channels = [\"#a b\"]\n"),
            "must not contain spaces or commas",
        ),
        (
            format!("{NET}channels = [\"#a,#b\"]\n"),
            "must not contain spaces or commas",
        ),
        (
            format!("{NET}channels = [\"#a\", \"#A\"]\n"),
            "channel \"#A\" is listed twice",
        ),
        (
            format!("{NET}tls_fingerprint = \"{}\"\n", "a".repeat(64)),
            "tls_fingerprint needs tls = true",
        ),
        (
            format!("{NET}tls = true\ntls_fingerprint = \"abc\"\n"),
            "64 hex digits",
        ),
        (
            format!("{NET}tls_cert = \"c.pem\"\n"),
            "tls_cert needs tls = true",
        ),
    ];
    for (text, expected) in cases {
        let err = load_err(&text);
        assert!(
            err.contains(expected),
            "{text:?}: got {err:?}, want {expected:?}"
        );
    }
}

#[test]
fn secrets_never_appear_in_debug_or_errors() {
    let secrets = ["srv-pass-1", "sasl-pass-2", "chan-key-3"];
    let text = format!(
        "{NET}password = \"{}\"\nsasl = {{ mechanism = \"PLAIN\", password = \"{}\" }}\n\
         channels = [{{ name = \"#s\", key = \"{}\" }}]\n",
        secrets[0], secrets[1], secrets[2]
    );
    let loaded = load(&text).expect("load");
    let debug = format!("{loaded:?} {:#?}", loaded.config);
    for secret in secrets {
        assert!(!debug.contains(secret), "{secret} leaked in Debug");
    }
    assert_eq!(debug.matches("********").count(), 6, "{debug}");

    // A validation error on a file full of secrets.
    let err = load(&format!("{text}{NET}")).expect_err("duplicate");
    for secret in secrets {
        assert!(!err.to_string().contains(secret) && !format!("{err:?}").contains(secret));
    }
    // Type and syntax errors on the secret lines themselves.
    for bad in [
        format!("{NET}password = 987654321\n"),
        format!("{NET}sasl = {{ mechanism = \"PLAIN\", password = 987654321 }}\n"),
        format!("{NET}channels = [{{ name = \"#s\", key = 987654321 }}]\n"),
        format!("{NET}password = \"987654321\n"),
        format!("{NET}password = 987654321 x\n"),
    ] {
        let err = load(&bad).expect_err("bad secret");
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("987654321"), "secret leaked: {shown}");
        assert!(
            matches!(err, ConfigError::Syntax { line: 5, .. }),
            "{err:?}"
        );
    }
}

#[test]
fn set_control_round_trips_and_keeps_comments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("reterm.toml");
    load_or_create(&path).expect("create");
    let before = fs::read_to_string(&path).expect("read");

    set_control(&path, ControlSetting::Enabled(true)).expect("set enabled");
    set_control(&path, ControlSetting::Debug(true)).expect("set debug");
    set_control(&path, ControlSetting::Port(9000)).expect("set port");

    let after = fs::read_to_string(&path).expect("read");
    let expected = before
        .replace("enabled = false   #", "enabled = true   #")
        .replace("debug = false     #", "debug = true     #")
        .replace("port = 7422       #", "port = 9000       #");
    assert_eq!(after, expected);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(stray_files(dir.path()), Vec::<String>::new());

    let control = load_or_create(&path).expect("reload").config.control;
    assert!(control.enabled && control.debug);
    assert_eq!(control.port, 9000);
}

#[test]
fn set_control_creates_missing_table() {
    let text = format!("# top comment\nlogging = true\n\n{NET}");
    let (_dir, path) = with_file(&text);
    set_control(&path, ControlSetting::Port(8000)).expect("set");
    let after = fs::read_to_string(&path).expect("read");
    assert!(
        after.starts_with("# top comment\nlogging = true\n"),
        "{after}"
    );
    assert!(after.contains("[control]\nport = 8000\n"), "{after}");
    assert!(after.contains(NET), "{after}");
    let loaded = load_or_create(&path).expect("reload");
    assert_eq!(loaded.config.control.port, 8000);
    assert!(!loaded.config.control.enabled);
}

#[test]
fn set_control_edits_inline_and_dotted_tables() {
    let (_dir, path) = with_file("control = { enabled = false }\n");
    set_control(&path, ControlSetting::Enabled(true)).expect("set");
    set_control(&path, ControlSetting::Port(7500)).expect("set");
    assert_eq!(
        fs::read_to_string(&path).expect("read"),
        "control = { enabled = true, port = 7500 }\n"
    );

    let (_dir, path) = with_file("control.enabled = false\n");
    set_control(&path, ControlSetting::Enabled(true)).expect("set");
    assert_eq!(
        fs::read_to_string(&path).expect("read"),
        "control.enabled = true\n"
    );
}

#[test]
fn set_control_refuses_bad_input_and_leaves_file_alone() {
    let (_dir, path) = with_file("[control]\nport = = 1\n");
    let err = set_control(&path, ControlSetting::Enabled(true)).expect_err("syntax");
    assert!(
        matches!(err, ConfigError::Syntax { line: 2, .. }),
        "{err:?}"
    );
    assert_eq!(
        fs::read_to_string(&path).expect("read"),
        "[control]\nport = = 1\n"
    );

    let (_dir, path) = with_file("control = 5\n");
    let err = set_control(&path, ControlSetting::Debug(true)).expect_err("not a table");
    assert_eq!(
        err.to_string(),
        format!("{}: control is not a table", path.display())
    );

    let (_dir, path) = with_file("");
    let err = set_control(&path, ControlSetting::Port(0)).expect_err("port 0");
    assert!(err
        .to_string()
        .ends_with("control.port must be between 1 and 65535"));

    let missing = tempfile::tempdir().expect("tempdir");
    let err = set_control(
        &missing.path().join("nope.toml"),
        ControlSetting::Debug(true),
    )
    .expect_err("missing file");
    assert!(matches!(err, ConfigError::Io { .. }), "{err:?}");
}

#[test]
fn a_control_port_below_1024_is_clamped_and_said_once() {
    let (_dir, path) = with_file("[control]\nport = 80\n");
    let loaded = load_or_create(&path).expect("load");
    assert_eq!(loaded.config.control.port, 1024);
    assert_eq!(
        loaded.notices,
        [format!(
            "control.port 80 in {} is below 1024: using 1024",
            path.display()
        )]
    );
    // The file keeps what the user wrote.
    assert!(fs::read_to_string(&path).unwrap().contains("port = 80"));
    for (text, port) in [
        ("port = 1023", 1024),
        ("port = 1024", 1024),
        ("port = 1", 1024),
    ] {
        let loaded = load(&format!("[control]\n{text}\n")).expect("load");
        assert_eq!(loaded.config.control.port, port, "{text}");
        assert_eq!(
            loaded.notices.len(),
            usize::from(text != "port = 1024"),
            "{text}"
        );
    }
    assert!(load("[control]\nport = 7422\n").unwrap().notices.is_empty());
}

#[test]
fn max_query_buffers_is_read_per_network_and_must_be_positive() {
    let loaded = load(&format!("{NET}max_query_buffers = 20\n")).expect("load");
    assert_eq!(loaded.config.networks[0].max_query_buffers, Some(20));
    let loaded = load(NET).expect("load");
    assert_eq!(loaded.config.networks[0].max_query_buffers, None);
    for bad in ["0", "-3"] {
        let err = load_err(&format!("{NET}max_query_buffers = {bad}\n"));
        assert!(
            err.contains(&format!("max_query_buffers must be at least 1 (got {bad})")),
            "{err}"
        );
    }
    // Not a number: refused at its position, like any mistyped key.
    let err = load_err(&format!("{NET}max_query_buffers = \"many\"\n"));
    assert!(err.contains("reterm.toml:5:21: invalid type"), "{err}");
}

#[test]
fn buffer_rows_is_read_per_network_and_must_hold_a_replay() {
    let loaded = load(&format!("{NET}buffer_rows = 1000\n")).expect("load");
    assert_eq!(loaded.config.networks[0].buffer_rows, Some(1000));
    let loaded = load(NET).expect("load");
    assert_eq!(loaded.config.networks[0].buffer_rows, None);
    for bad in ["99", "0", "-3"] {
        let err = load_err(&format!("{NET}buffer_rows = {bad}\n"));
        assert!(
            err.contains(&format!("buffer_rows must be at least 100 (got {bad})")),
            "{err}"
        );
    }
}

const CLOUD: &str = "[[networks]]\nname = \"c\"\ntransport = \"retecloud\"\nurl = \"wss://cloud.example.net/rete\"\nnetwork = \"libera\"\n";

#[test]
fn a_retecloud_network_is_a_url_and_the_services_network() {
    let loaded = load(CLOUD).unwrap();
    let net = &loaded.config.networks[0];
    let cloud = net.cloud.as_ref().expect("a ReteCloud network");
    assert_eq!(cloud.url, "wss://cloud.example.net/rete");
    assert_eq!(cloud.network, "libera");
    assert_eq!(
        (net.host.as_str(), net.port, net.tls),
        ("cloud.example.net", 443, true)
    );
    // One token per service account: the key is the service's URL; the
    // network's own (by id) is where an older reterm kept it.
    assert_eq!(
        net.cloud_token_key(),
        "retecloud-token-wss://cloud.example.net/rete"
    );
    assert!(net.legacy_cloud_token_key().ends_with(&net.id));
    // Two accounts on one service keep a token each; `account` is only for
    // ReteCloud networks.
    let loaded = load(&format!("{CLOUD}account = \"bob\"\n")).unwrap();
    assert_eq!(
        loaded.config.networks[0].cloud_token_key(),
        "retecloud-token-wss://cloud.example.net/rete#bob"
    );
    let err = load("[[networks]]\nname = \"i\"\nhost = \"irc.example.net\"\nnick = \"me\"\naccount = \"bob\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("account is only for transport"), "{err}");
    let loaded = load(&format!(
        "{CLOUD}tls_fingerprint = \"{}\"\nnick = \"me\"\n",
        "AB".repeat(32)
    ))
    .unwrap();
    assert_eq!(loaded.config.networks[0].nick, "me");
    // A plain one to loopback is allowed; irc stays the default.
    let loopback = CLOUD.replace("wss://cloud.example.net/rete", "ws://127.0.0.1:8080/");
    assert!(load(&loopback).unwrap().config.networks[0].cloud.is_some());
    assert!(load(NET).unwrap().config.networks[0].cloud.is_none());
}

#[test]
fn a_retecloud_network_is_checked_strictly() {
    let cases = [
        (
            CLOUD.replace("url = \"wss://cloud.example.net/rete\"\n", ""),
            "url is required",
        ),
        (
            CLOUD.replace("network = \"libera\"\n", ""),
            "network (the service's id of the network) is required",
        ),
        (
            CLOUD.replace("wss://cloud.example.net", "ws://cloud.example.net"),
            "url: ws:// is allowed only to a loopback address",
        ),
        (
            CLOUD.replace(
                "wss://cloud.example.net/rete",
                "wss://cloud.example.net/?token=x",
            ),
            "url: the URL must have no query",
        ),
        (
            CLOUD.replace("\"libera\"", "\"li bera\""),
            "network must be 1 to 64",
        ),
        (
            format!("{CLOUD}host = \"irc.example\"\n"),
            "host is not used with transport = \"retecloud\"",
        ),
        (
            format!("{CLOUD}password = \"hunter2\"\n"),
            "password is not used",
        ),
        (
            format!("{CLOUD}channels = [\"#a\"]\n"),
            "channels is not used",
        ),
        (
            CLOUD.replace("retecloud", "smoke-signals"),
            "transport must be \"irc\" or \"retecloud\"",
        ),
        (
            format!("{NET}url = \"wss://x.example/\"\n"),
            "url is only for transport = \"retecloud\"",
        ),
        (
            CLOUD.replace("wss://cloud.example.net/rete", "ws://127.0.0.1/")
                + "tls_fingerprint = \""
                + &"a".repeat(64)
                + "\"\n",
            "tls_fingerprint needs a wss:// url",
        ),
    ];
    for (text, want) in cases {
        let err = load_err(&text);
        assert!(err.contains(want), "{text}: {err}");
        assert!(
            !err.contains("hunter2") && !err.contains("token=x"),
            "{err}"
        );
    }
}
