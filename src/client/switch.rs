//! Which buffer number a switching key means: Alt+1…9 and Alt+0 are 1–10,
//! Alt+Q…O (the keyboard row below) are 11–19, as in irssi.

/// The keys of the row below the digits, for 11–19.
const SECOND_ROW: [char; 9] = ['q', 'w', 'e', 'r', 't', 'y', 'u', 'i', 'o'];

/// The buffer number Alt+`key` switches to, if it is a switching key.
pub fn alt_key_buffer(key: char) -> Option<usize> {
    match key {
        '1'..='9' => Some(key as usize - '0' as usize),
        '0' => Some(10),
        _ => SECOND_ROW
            .iter()
            .position(|&k| k == key.to_ascii_lowercase())
            .map(|i| 11 + i),
    }
}

/// The next (or previous, with `back`) of `count` buffers after `current`
/// (both 1-based), wrapping around.
pub fn cycle(current: usize, count: usize, back: bool) -> usize {
    if count == 0 {
        return current;
    }
    let zero = current.saturating_sub(1) % count;
    let next = if back {
        (zero + count - 1) % count
    } else {
        (zero + 1) % count
    };
    next + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_and_letter_rows() {
        assert_eq!(alt_key_buffer('1'), Some(1));
        assert_eq!(alt_key_buffer('9'), Some(9));
        assert_eq!(alt_key_buffer('0'), Some(10));
        assert_eq!(alt_key_buffer('q'), Some(11));
        assert_eq!(alt_key_buffer('O'), Some(19));
        assert_eq!(alt_key_buffer('a'), None);
        assert_eq!(alt_key_buffer('p'), None);
    }

    #[test]
    fn cycling_wraps() {
        assert_eq!(cycle(1, 3, false), 2);
        assert_eq!(cycle(3, 3, false), 1);
        assert_eq!(cycle(1, 3, true), 3);
        assert_eq!(cycle(1, 0, true), 1);
    }
}
