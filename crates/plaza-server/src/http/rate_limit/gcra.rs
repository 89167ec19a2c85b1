//! The generic cell rate algorithm (GCRA), kept in process.
//!
//! A client's whole state is one number, the theoretical arrival time (TAT):
//! the moment its bucket would be full again. A request is allowed when
//! `TAT + interval - period <= now`, and moves the TAT on by one interval.
//! So a quota of N per period lets a fresh client send N at once, then one
//! more every `period / N`; nothing resets all at once at the top of the hour,
//! and a client whose TAT has passed is indistinguishable from a new one, so
//! its entry can be dropped. The Redis backend runs the same arithmetic
//! (`shared.rs`), in the same unit (microseconds).

use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::Mutex;
use std::time::Duration;

use hashbrown::HashTable;

use crate::settings::Quota;

/// What one check decided, in the terms of the `X-RateLimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub allowed: bool,
    pub limit: u32,
    /// Requests the client may still send at once.
    pub remaining: u32,
    /// Until the client's bucket is full again.
    pub reset_after: Duration,
    /// Until the next request would be allowed (zero when allowed).
    pub retry_after: Duration,
}

impl Outcome {
    /// One GCRA step for `cost` requests at once (a batch of events counts
    /// each event). `tat` is the stored arrival time (`None`: a new client);
    /// returns the outcome and the arrival time to store, if any.
    pub fn step(quota: Quota, tat: Option<u64>, now: u64, cost: u32) -> (Outcome, Option<u64>) {
        let tat = tat.unwrap_or(now).max(now);
        let next = tat.saturating_add(quota.interval_micros().saturating_mul(u64::from(cost)));
        if now < next.saturating_sub(quota.period_micros()) {
            return (Outcome::refused(quota, cost, tat - now), None);
        }
        (Outcome::allowed(quota, next - now), Some(next))
    }

    /// An allowed step whose new arrival time is `until_next` µs away; the
    /// rest follows from the quota (the Redis script answers only that).
    pub fn allowed(quota: Quota, until_next: u64) -> Outcome {
        let headroom = quota.period_micros().saturating_sub(until_next);
        Outcome {
            allowed: true,
            limit: quota.count,
            remaining: u32::try_from(headroom / quota.interval_micros().max(1))
                .unwrap_or(u32::MAX)
                .min(quota.count),
            reset_after: Duration::from_micros(until_next),
            retry_after: Duration::ZERO,
        }
    }

    /// A refused step of `cost` requests whose stored arrival time is
    /// `until_tat` µs away: it would be allowed once the time left drops by
    /// the step's excess over the period.
    pub fn refused(quota: Quota, cost: u32, until_tat: u64) -> Outcome {
        let until_allowed = until_tat
            .saturating_add(quota.interval_micros().saturating_mul(u64::from(cost)))
            .saturating_sub(quota.period_micros());
        Outcome {
            allowed: false,
            limit: quota.count,
            remaining: 0,
            reset_after: Duration::from_micros(until_tat),
            retry_after: Duration::from_micros(until_allowed),
        }
    }
}

const SHARDS: usize = 64;

/// How often a full shard looks for expired entries to make room. Between
/// two looks its new keys share the overflow key, so a flood of new
/// clients costs a full shard one scan a second, not one per request.
const FULL_SHARD_RESCAN_MICROS: u64 = 1_000_000;

/// Arrival times by key, in shards so that concurrent requests rarely wait
/// on one another. Bounded: expired entries are swept (`sweep`), and a shard
/// at its share of `max_keys` counts every new key under one overflow key,
/// so a flood of distinct clients is limited together instead of growing
/// memory.
///
/// A key is hashed once per check (keyed SipHash, so clients cannot aim at
/// one bucket): the hash picks the shard and finds the entry in it. With a
/// map per shard, a new client's key was hashed four times, a fifth of what
/// the limiter cost a request (the cost today: docs/benchmarks.md, "Rate
/// limits").
pub struct LocalStore<K> {
    shards: Box<[Mutex<Shard<K>>]>,
    hasher: RandomState,
    keys_per_shard: usize,
}

struct Shard<K> {
    entries: HashTable<(K, u64)>,
    /// When the shard, full, last looked for room.
    full_scan_at: Option<u64>,
}

impl<K: Hash + Eq> Shard<K> {
    /// Before a new key goes in: drops the clients whose buckets are full
    /// again when the table is about to grow, so it holds the clients still
    /// counted rather than every one seen since the last sweep (when most
    /// are still counted it grows now, so the next scan is at least as many
    /// new keys away as this one scanned), or when it is full, at most once
    /// a [`FULL_SHARD_RESCAN_MICROS`].
    fn make_room(&mut self, now: u64, max_len: usize, hasher: &RandomState) {
        let len = self.entries.len();
        if len >= max_len {
            if self
                .full_scan_at
                .is_some_and(|at| now < at.saturating_add(FULL_SHARD_RESCAN_MICROS))
            {
                return;
            }
            self.full_scan_at = Some(now);
        } else if len < self.entries.capacity() {
            return;
        }
        self.entries.retain(|(_, tat)| *tat > now);
        let (len, capacity) = (self.entries.len(), self.entries.capacity());
        if len > capacity / 2 && len < max_len {
            self.entries
                .reserve(capacity, |(key, _)| hasher.hash_one(key));
        }
    }

    /// One GCRA step on the entry of `key` (hashed to `hash`), made when
    /// the step allows and the key is new.
    fn step(
        &mut self,
        key: K,
        hash: u64,
        quota: Quota,
        now: u64,
        cost: u32,
        hasher: &RandomState,
    ) -> Outcome {
        if let Some((_, tat)) = self.entries.find_mut(hash, |(held, _)| *held == key) {
            let (outcome, next) = Outcome::step(quota, Some(*tat), now, cost);
            if let Some(next) = next {
                *tat = next;
            }
            return outcome;
        }
        let (outcome, next) = Outcome::step(quota, None, now, cost);
        if let Some(next) = next {
            self.entries
                .insert_unique(hash, (key, next), |(key, _)| hasher.hash_one(key));
        }
        outcome
    }
}

impl<K: Hash + Eq + Copy> LocalStore<K> {
    pub fn new(max_keys: usize) -> Self {
        LocalStore {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        entries: HashTable::new(),
                        full_scan_at: None,
                    })
                })
                .collect(),
            hasher: RandomState::new(),
            keys_per_shard: max_keys.div_ceil(SHARDS).max(1),
        }
    }

    /// The shard of a key hashed to `hash`: bits that neither the table's
    /// slot (the low bits) nor its tag (the top seven) are taken from, so
    /// the keys of one shard still spread over its table.
    fn shard_index(hash: u64) -> usize {
        (hash >> 32) as usize % SHARDS
    }

    /// Checks and counts `cost` requests of `key` at `now` (microseconds on
    /// a monotonic clock); `overflow` is the key a full shard counts new
    /// keys under.
    pub fn check(&self, key: K, overflow: K, quota: Quota, now: u64, cost: u32) -> Outcome {
        let hash = self.hasher.hash_one(key);
        let mut shard = self.shards[Self::shard_index(hash)]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // A new key may need room (the table is about to grow, or is full).
        let may_need_room = shard.entries.len() >= shard.entries.capacity()
            || shard.entries.len() >= self.keys_per_shard;
        if may_need_room && shard.entries.find(hash, |(held, _)| *held == key).is_none() {
            shard.make_room(now, self.keys_per_shard, &self.hasher);
            if shard.entries.len() >= self.keys_per_shard {
                let hash = self.hasher.hash_one(overflow);
                return shard.step(overflow, hash, quota, now, cost, &self.hasher);
            }
        }
        shard.step(key, hash, quota, now, cost, &self.hasher)
    }

    /// Drops every entry whose bucket is full again at `now`, and gives
    /// back the memory of shards that shrank to under a quarter.
    pub fn sweep(&self, now: u64) {
        for shard in self.shards.iter() {
            let entries = &mut shard
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .entries;
            entries.retain(|(_, tat)| *tat > now);
            if entries.capacity() > 64 && entries.len() < entries.capacity() / 4 {
                entries.shrink_to_fit(|(key, _)| self.hasher.hash_one(key));
            }
        }
    }

    /// Keys held now.
    pub fn key_count(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                shard
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .entries
                    .len()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000;

    #[test]
    fn the_quota_passes_and_the_next_request_is_refused() {
        let store = LocalStore::new(100);
        let quota: Quota = "100/hour".parse().unwrap();
        for sent in 1..=100 {
            let outcome = store.check(1, 0, quota, SECOND, 1);
            assert!(outcome.allowed, "request {sent}");
            assert_eq!(outcome.remaining, 100 - sent);
        }
        let refused = store.check(1, 0, quota, SECOND, 1);
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after, Duration::from_secs(36));
        assert!(store.check(2, 0, quota, SECOND, 1).allowed, "another key");
    }

    #[test]
    fn a_batch_costs_one_request_per_item_and_a_refused_one_costs_nothing() {
        let store = LocalStore::new(100);
        let quota: Quota = "100/minute".parse().unwrap();
        let batch = store.check(1, 0, quota, SECOND, 60);
        assert_eq!((batch.allowed, batch.remaining), (true, 40));
        assert!(!store.check(1, 0, quota, SECOND, 41).allowed);
        let rest = store.check(1, 0, quota, SECOND, 40);
        assert_eq!((rest.allowed, rest.remaining), (true, 0));
    }

    #[test]
    fn a_quota_that_does_not_divide_its_period_still_passes_whole() {
        let store = LocalStore::new(100);
        let quota: Quota = "3/1s".parse().unwrap();
        let passed = (0..4)
            .filter(|_| store.check(1, 0, quota, SECOND, 1).allowed)
            .count();
        assert_eq!(passed, 3);
    }

    #[test]
    fn the_window_refills_with_time() {
        let store = LocalStore::new(100);
        let quota: Quota = "2/10s".parse().unwrap();
        let start = 5 * SECOND;
        assert!(store.check(1, 0, quota, start, 1).allowed);
        assert!(store.check(1, 0, quota, start, 1).allowed);
        assert!(!store.check(1, 0, quota, start + 4 * SECOND, 1).allowed);
        assert!(store.check(1, 0, quota, start + 5 * SECOND, 1).allowed);
        let full = store.check(1, 0, quota, start + 25 * SECOND, 1);
        assert_eq!((full.allowed, full.remaining), (true, 1));
    }

    #[test]
    fn a_shard_drops_expired_keys_instead_of_growing() {
        let store = LocalStore::new(1_000_000);
        let quota: Quota = "1/1s".parse().unwrap();
        // Each key's bucket is full again a second after its request: one
        // new key a second never holds more than a handful per shard.
        for key in 0..100_000u64 {
            store.check(key, u64::MAX, quota, (key + 1) * SECOND, 1);
        }
        assert!(
            store.key_count() < 2 * SHARDS * 8,
            "{} keys held",
            store.key_count()
        );
        // Keys still counted are all kept.
        let later = 200_000 * SECOND;
        store.sweep(later);
        for key in 0..5_000u64 {
            store.check(key, u64::MAX, quota, later, 1);
        }
        assert_eq!(store.key_count(), 5_000);
        assert!((0..5_000u64).all(|key| !store.check(key, u64::MAX, quota, later, 1).allowed));
    }

    #[test]
    fn a_full_shard_looks_for_room_at_most_once_a_second() {
        // Each shard holds two keys besides the overflow key.
        let store = LocalStore::new(2 * SHARDS);
        let quota: Quota = "1/1s".parse().unwrap();
        let shard = |key: u64| LocalStore::<u64>::shard_index(store.hasher.hash_one(key));
        let keys: Vec<u64> = (1..)
            .filter(|&key| shard(key) == shard(1))
            .take(5)
            .collect();
        let overflow = 0;
        let at = |tenths: u64| tenths * SECOND / 10;
        assert!(store.check(keys[0], overflow, quota, at(10), 1).allowed);
        assert!(store.check(keys[1], overflow, quota, at(11), 1).allowed);
        // Full, both keys still counted: the third shares the overflow key
        // (the shard looked for room at 1.5 s).
        assert!(store.check(keys[2], overflow, quota, at(15), 1).allowed);
        // At 2.2 s both keys' buckets are full again, but the shard looked
        // 0.7 s ago: the fourth shares the overflow key, and its budget.
        assert!(!store.check(keys[3], overflow, quota, at(22), 1).allowed);
        // A second after the last look, the expired keys make room.
        assert!(store.check(keys[4], overflow, quota, at(26), 1).allowed);
        assert_eq!(store.key_count(), 1);
    }

    #[test]
    fn expired_keys_are_swept_and_a_full_store_shares_one_key() {
        let store = LocalStore::new(SHARDS);
        let quota: Quota = "1/1s".parse().unwrap();
        for key in 1..=10_000u64 {
            store.check(key, 0, quota, SECOND, 1);
        }
        // Each shard keeps its one key and its overflow key.
        assert!(
            store.key_count() <= 2 * SHARDS,
            "{} keys",
            store.key_count()
        );
        store.sweep(3 * SECOND);
        assert_eq!(store.key_count(), 0);
    }
}
