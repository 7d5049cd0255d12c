//! Properties over generated text.

use proptest::prelude::*;
use rete_redact::{display_escape, is_credential_shaped, mask_frame, mask_line, SecretSet};

proptest! {
    #[test]
    fn an_embedded_secret_is_always_found(
        before in any::<String>(),
        after in any::<String>(),
        secret in "[^\u{0}]{4,24}",
        others in proptest::collection::vec("[a-z]{4,12}", 0..7),
    ) {
        let set = SecretSet::new(others.iter().map(String::as_str).chain([secret.as_str()]));
        let text = format!("{before}{secret}{after}");
        prop_assert!(set.contains_secret(&text));
    }

    #[test]
    fn a_cut_inside_a_secret_is_seen(
        before in any::<String>(),
        secret in "[a-zA-Z0-9]{5,24}",
        cut in 4usize..24,
    ) {
        let set = SecretSet::new([secret.as_str()]);
        let cut = cut.min(secret.len());
        let kept = format!("{before}{}", &secret[..cut]);
        prop_assert!(set.cut_ends_in_secret(&kept));
        let short = format!("{before}{}", &secret[..3]);
        // Three bytes are not enough unless the text before supplies more.
        if !set.cut_ends_in_secret(&short) {
            prop_assert!(!short.ends_with(&secret[..4]));
        }
    }

    #[test]
    fn mask_line_never_panics_and_is_idempotent(line in any::<String>()) {
        let once = mask_line(&line).into_owned();
        prop_assert_eq!(mask_line(&once).into_owned(), once);
        let _ = is_credential_shaped(&line);
        let _ = mask_frame(&line);
    }

    #[test]
    fn irc_shaped_lines_never_panic(
        tags in proptest::option::of("@[a-z=;]{0,8}"),
        prefix in proptest::option::of(":[a-z!@.]{0,8}"),
        cmd in "(PASS|OPER|AUTHENTICATE|PRIVMSG|NOTICE|NS|CS|pass|x)",
        params in proptest::collection::vec("[:a-zA-Z@.,* +]{0,10}", 0..5),
    ) {
        let mut line = String::new();
        if let Some(t) = tags { line.push_str(&t); line.push(' '); }
        if let Some(p) = prefix { line.push_str(&p); line.push(' '); }
        line.push_str(&cmd);
        for p in params { line.push(' '); line.push_str(&p); }
        let masked = mask_line(&line).into_owned();
        let upper = cmd.to_ascii_uppercase();
        if upper == "PASS" || upper == "OPER" {
            prop_assert!(!is_credential_shaped(&masked), "{} → {}", line, masked);
        }
    }

    #[test]
    fn escaped_text_draws_nothing_hidden(text in any::<String>()) {
        let shown = display_escape(&text);
        let hidden = shown.chars().any(|c| c.is_control()
            || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{AD}' | '\u{E0000}'..='\u{E0FFF}'));
        prop_assert!(!hidden, "{:?} shown as {:?}", text, shown);
    }
}
