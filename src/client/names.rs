//! Member lists as a person reads them: the one-line summary shown on join
//! (`5 nicks: 1 op, 2 voiced, 2 normal`), the nick list pane's order (by
//! rank, then nick) and `/names` in columns.

use rete_engine::view::MemberView;

/// One member as listed: the prefix symbol of their highest mode and the nick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// `@`, `+`, … or "" for no mode.
    pub prefix: String,
    /// The nick.
    pub nick: String,
    /// Rank of the highest mode (0 = highest); modes' count when none.
    pub rank: usize,
}

/// Sorts `members` by their highest mode's rank in `prefix` (ISUPPORT
/// PREFIX pairs of mode letter and symbol, highest first), then by nick
/// ignoring case.
pub fn listed(members: &[MemberView], prefix: &[(char, char)]) -> Vec<Listed> {
    let mut out: Vec<Listed> = members
        .iter()
        .map(|m| {
            let top = m
                .modes
                .chars()
                .filter_map(|c| prefix.iter().position(|(mode, _)| *mode == c))
                .min();
            Listed {
                prefix: top.map(|i| prefix[i].1.to_string()).unwrap_or_default(),
                nick: m.nick.clone(),
                rank: top.unwrap_or(prefix.len()),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        a.rank
            .cmp(&b.rank)
            .then_with(|| a.nick.to_lowercase().cmp(&b.nick.to_lowercase()))
    });
    out
}

/// `N nicks: 2 ops, 3 voiced, 4 normal` (only the classes present).
pub fn summary(members: &[Listed], prefix: &[(char, char)]) -> String {
    let count = |mode: char| {
        let rank = prefix.iter().position(|(m, _)| *m == mode);
        members.iter().filter(|m| Some(m.rank) == rank).count()
    };
    let high = members
        .iter()
        .filter(|m| {
            prefix
                .iter()
                .position(|(mode, _)| *mode == 'o')
                .is_some_and(|o| m.rank < o)
        })
        .count();
    let normal = members.iter().filter(|m| m.rank == prefix.len()).count();
    let mut parts = Vec::new();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if high > 0 {
        parts.push(plural(high, "owner/admin", "owners/admins"));
    }
    let ops = count('o');
    if ops > 0 {
        parts.push(plural(ops, "op", "ops"));
    }
    let halfops = count('h');
    if halfops > 0 {
        parts.push(plural(halfops, "halfop", "halfops"));
    }
    let voiced = count('v');
    if voiced > 0 {
        parts.push(format!("{voiced} voiced"));
    }
    if normal > 0 {
        parts.push(format!("{normal} normal"));
    }
    let total = plural(members.len(), "nick", "nicks");
    if parts.is_empty() {
        total
    } else {
        format!("{total}: {}", parts.join(", "))
    }
}

/// `/names` as lines of `[@nick   ] [+other  ]` columns fitting `width`.
pub fn columns(members: &[Listed], width: usize) -> Vec<String> {
    let cell = members
        .iter()
        .map(|m| m.prefix.chars().count() + m.nick.chars().count())
        .max()
        .unwrap_or(0)
        + 3;
    let per_line = (width / cell.max(1)).max(1);
    members
        .chunks(per_line)
        .map(|chunk| {
            chunk
                .iter()
                .map(|m| {
                    let name = format!("{}{}", m.prefix, m.nick);
                    format!("[{name:<w$}]", w = cell - 3)
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIX: [(char, char); 2] = [('o', '@'), ('v', '+')];

    fn member(nick: &str, modes: &str) -> MemberView {
        MemberView {
            nick: nick.into(),
            modes: modes.into(),
            account: None,
            away: false,
            user: None,
            host: None,
        }
    }

    #[test]
    fn sorted_by_rank_then_nick_and_summarised() {
        let members = [
            member("zed", ""),
            member("Bob", "v"),
            member("amy", "ov"),
            member("carl", ""),
            member("al", "v"),
        ];
        let l = listed(&members, &PREFIX);
        let order: Vec<String> = l
            .iter()
            .map(|m| format!("{}{}", m.prefix, m.nick))
            .collect();
        assert_eq!(order, ["@amy", "+al", "+Bob", "carl", "zed"]);
        assert_eq!(summary(&l, &PREFIX), "5 nicks: 1 op, 2 voiced, 2 normal");
        assert_eq!(summary(&l[..1], &PREFIX), "1 nick: 1 op");
    }

    #[test]
    fn columns_fit_the_width() {
        let members = [member("amy", "o"), member("bob", ""), member("carol", "")];
        let l = listed(&members, &PREFIX);
        assert_eq!(columns(&l, 20), ["[@amy ] [bob  ]", "[carol]"]);
    }
}
