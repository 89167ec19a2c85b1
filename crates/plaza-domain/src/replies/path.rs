//! The thread order as strings: a reply's path is its parent's path
//! followed by one segment, its rank among its siblings (0 for the first
//! answer to the same parent), written in an order-preserving, prefix-free
//! code over `0-9 a-z`. Compared byte by byte, paths are in thread order:
//! each reply right after its parent, before its parent's next sibling,
//! siblings oldest first; the paths that start with a reply's path are its
//! subtree. The newest-first key inverts the first segment's code, which
//! reverses the order of the answers to the post and keeps every subtree
//! in thread order.
//!
//! A rank below 23 is one character (`0`…`9`, `a`…`m`); a larger one is a
//! length character (`n` for one digit up to `z` for thirteen, enough for
//! any `u64`) followed by that many base-36 digits of `rank - 23`, the
//! fewest that hold it. The first
//! character of a segment thus says how long it is (so no segment is the
//! start of another), longer segments sort after shorter ones, and segments
//! of one length sort as their digits: byte order is rank order. A path of
//! a reply with a parent that had fewer than 23 answers grows by one byte a
//! level.

/// The code's characters, in byte order.
const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
/// Ranks written as a single character.
const SHORT_RANKS: u64 = 23;
/// Longest path stored: PostgreSQL's B-tree index entries hold at most
/// 2,704 bytes, and the thread indexes hold the post id beside the path.
pub const MAX_PATH_BYTES: usize = 2_600;
/// A character above every character of the code: `path || UPPER` bounds
/// the subtree of `path` from above.
pub const UPPER: char = '~';

fn digit_value(byte: u8) -> Option<u64> {
    DIGITS
        .iter()
        .position(|digit| *digit == byte)
        .map(|value| value as u64)
}

/// The segment of `rank`.
pub fn segment(rank: u64) -> String {
    if rank < SHORT_RANKS {
        return char::from(DIGITS[rank as usize]).to_string();
    }
    let mut rest = rank - SHORT_RANKS;
    let mut digits = Vec::new();
    loop {
        digits.push(DIGITS[(rest % 36) as usize]);
        rest /= 36;
        if rest == 0 {
            break;
        }
    }
    let length = DIGITS[SHORT_RANKS as usize + digits.len() - 1];
    let mut segment = String::with_capacity(digits.len() + 1);
    segment.push(char::from(length));
    segment.extend(digits.iter().rev().map(|digit| char::from(*digit)));
    segment
}

/// The length in bytes of the segment that starts with `first`.
fn segment_length(first: u8) -> Option<usize> {
    let value = digit_value(first)?;
    Some(if value < SHORT_RANKS {
        1
    } else {
        (value - SHORT_RANKS) as usize + 2
    })
}

/// The segments of `path`, or `None` when it is not a well-formed path.
pub fn segments(path: &str) -> Option<Vec<&str>> {
    let bytes = path.as_bytes();
    let mut segments = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let length = segment_length(bytes[at])?;
        let end = at.checked_add(length).filter(|end| *end <= bytes.len())?;
        if !bytes[at + 1..end]
            .iter()
            .all(|byte| digit_value(*byte).is_some())
        {
            return None;
        }
        segments.push(&path[at..end]);
        at = end;
    }
    (!segments.is_empty()).then_some(segments)
}

/// The paths of every ancestor of the reply at `path` (its parent's first),
/// from the answer to the post down; empty for an answer to the post.
pub fn ancestors(path: &str) -> Vec<String> {
    let Some(parts) = segments(path) else {
        return Vec::new();
    };
    let mut prefix = String::new();
    let mut paths = Vec::with_capacity(parts.len().saturating_sub(1));
    for part in &parts[..parts.len() - 1] {
        prefix.push_str(part);
        paths.push(prefix.clone());
    }
    paths
}

/// Each character's mirror in the code: the order of characters reversed.
fn invert_digit(byte: u8) -> u8 {
    let value = digit_value(byte).unwrap_or(0);
    DIGITS[35 - value as usize]
}

/// The newest-first key of the reply at `path`: its first segment inverted
/// (the inverted code is still prefix-free, in reverse order), the rest as
/// it is.
pub fn newest_key(path: &str) -> String {
    let first_length = path
        .as_bytes()
        .first()
        .and_then(|first| segment_length(*first))
        .unwrap_or(path.len())
        .min(path.len());
    let mut key: String = path.as_bytes()[..first_length]
        .iter()
        .map(|byte| char::from(invert_digit(*byte)))
        .collect();
    key.push_str(&path[first_length..]);
    key
}

/// The thread-order path of a newest-first key (the inverse of
/// [`newest_key`]), or `None` when `key` is not one.
pub fn path_of_newest_key(key: &str) -> Option<String> {
    let first = invert_digit(*key.as_bytes().first()?);
    let first_length = segment_length(first)?.min(key.len());
    let mut path: String = key.as_bytes()[..first_length]
        .iter()
        .map(|byte| char::from(invert_digit(*byte)))
        .collect();
    path.push_str(&key[first_length..]);
    segments(&path).is_some().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_sort_as_their_ranks_and_none_starts_another() {
        let ranks: Vec<u64> = (0..3000)
            .chain([46_655, 46_656, 1_000_000, 60_466_175, u64::MAX])
            .collect();
        let coded: Vec<String> = ranks.iter().map(|rank| segment(*rank)).collect();
        for pair in coded.windows(2) {
            assert!(pair[0] < pair[1], "{pair:?}");
            assert!(!pair[1].starts_with(&pair[0]), "{pair:?}");
        }
        assert_eq!(segment(0), "0");
        assert_eq!(segment(22), "m");
        assert_eq!(segment(23), "n0");
        assert_eq!(segment(58), "nz");
        assert_eq!(segment(59), "o10");
        assert_eq!(segment(u64::MAX).len(), 14);
        for (rank, code) in ranks.iter().zip(&coded) {
            assert_eq!(segments(code), Some(vec![code.as_str()]), "{rank}");
        }
    }

    #[test]
    fn paths_sort_in_thread_order_and_newest_keys_reverse_the_first_level() {
        // (path, thread position, newest position): three answers to the
        // post, the first with two answers, its first with one.
        let first = segment(0);
        let second = segment(1);
        let third = segment(40);
        let replies = [
            first.clone(),
            format!("{first}{}", segment(0)),
            format!("{first}{}{}", segment(0), segment(0)),
            format!("{first}{}", segment(30)),
            second.clone(),
            third.clone(),
        ];
        let mut sorted = replies.to_vec();
        sorted.sort();
        assert_eq!(sorted, replies, "thread order is byte order");
        let mut newest: Vec<String> = replies.iter().map(|path| newest_key(path)).collect();
        newest.sort();
        let newest_paths: Vec<String> = newest
            .iter()
            .map(|key| path_of_newest_key(key).expect("a key"))
            .collect();
        assert_eq!(
            newest_paths,
            [
                third,
                second,
                replies[0].clone(),
                replies[1].clone(),
                replies[2].clone(),
                replies[3].clone()
            ]
        );
    }

    #[test]
    fn ancestors_are_the_prefixes_of_whole_segments() {
        let path = format!("{}{}{}", segment(3), segment(100), segment(7));
        assert_eq!(
            ancestors(&path),
            [segment(3), format!("{}{}", segment(3), segment(100))]
        );
        assert!(ancestors(&segment(5)).is_empty());
    }

    #[test]
    fn malformed_paths_are_refused() {
        for bad in ["", "A", "n", "o1", "0-", "z123"] {
            assert_eq!(segments(bad), None, "{bad:?}");
        }
        assert_eq!(path_of_newest_key(""), None);
        assert_eq!(path_of_newest_key("~"), None);
    }
}
