//! Numbers at the boundary, in the one range both host languages hold exactly: counts as
//! `u32` and times as `i64` milliseconds (a JavaScript number is exact to 2^53; a Python
//! int holds either).

use agentfw_core::time::Timestamp;

/// A count or position (a line, a column, a size); past `u32::MAX` it reads as the largest.
pub fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A time in milliseconds since the epoch; past `i64::MAX` it reads as the largest.
pub fn ms(t: Timestamp) -> i64 {
    i64::try_from(t.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_values_saturate() {
        assert_eq!(count(7), 7);
        assert_eq!(count(usize::MAX), u32::MAX);
        assert_eq!(ms(Timestamp::from_millis(1_700_000_000_000)), 1_700_000_000_000);
        assert_eq!(ms(Timestamp::from_millis(u64::MAX)), i64::MAX);
    }
}
