//! Generated users and posts for development and benchmarks (`plaza dev
//! seed`): deterministic, written with multi-row INSERTs in large
//! transactions, through the real schema so triggers, counters and search
//! indexes are filled as in production.

mod replies;

pub use replies::ReplySeedSummary;

use std::time::Instant;

use sqlx::Connection;

use crate::time::now_millis;
use crate::{Database, DomainError};

/// Rows generated and written per transaction.
const ROWS_PER_TRANSACTION: usize = 20_000;

/// Words of generated text, most frequent first; texts draw from them with
/// Zipf-like weights, so a few words are in most posts and most words are rare.
const WORDS: &str = "the community people post time project help work today open good new \
    first make think great team share build code idea learn release design world \
    data question feature update support local event music city book game photo \
    garden coffee travel history science health school market water energy story \
    art film food family weekend morning night summer winter spring autumn river \
    mountain forest ocean bridge street train station library museum theatre park \
    rust python database server network browser search index query cache memory \
    thread async compiler library framework plugin module package release version \
    test benchmark latency throughput deploy cloud cluster backup restore migrate \
    schema table column row vector search ranking snippet highlight prefix token \
    garden tomato basil pepper onion garlic bread cheese pasta soup salad recipe \
    guitar piano violin drum concert album song lyric festival stage chorus band \
    camera lens film portrait landscape sunset light shadow colour frame print \
    bicycle runner marathon swim climb hike trail camp tent kayak sail fishing \
    chess puzzle riddle card board dice strategy tactic opening endgame rating \
    planet star galaxy comet orbit rocket launch telescope eclipse meteor nebula \
    poem novel essay chapter author reader library journal diary letter review \
    volunteer meeting council vote neighbour festival market fair parade picnic \
    repair bicycle workshop tool hammer wood metal paint brush canvas sketch ink \
    weather rain snow storm wind cloud thunder sunshine forecast frost fog breeze";

/// Tags of generated posts.
const TAGS: &[&str] = &[
    "announcements",
    "questions",
    "showcase",
    "help",
    "meta",
    "events",
    "rust",
    "python",
    "databases",
    "search",
    "performance",
    "design",
    "music",
    "books",
    "photography",
    "gardening",
    "cooking",
    "travel",
    "outdoors",
    "games",
    "science",
    "space",
    "art",
    "writing",
    "local",
    "volunteering",
    "diy",
    "weather",
    "film",
    "sports",
];

const FIRST_NAMES: &[&str] = &[
    "Ada",
    "Grace",
    "Alan",
    "Edsger",
    "Barbara",
    "Donald",
    "Margaret",
    "Ken",
    "Dennis",
    "Frances",
    "John",
    "Radia",
    "Tim",
    "Vint",
    "Sophie",
    "Yukihiro",
    "Guido",
    "Linus",
    "Hedy",
    "Katherine",
    "Mary",
    "Niklaus",
    "Bjarne",
    "Anders",
    "Lovelace",
    "Zoë",
    "José",
    "Chloé",
    "Søren",
    "Ümit",
];

const LAST_NAMES: &[&str] = &[
    "Hopper",
    "Turing",
    "Dijkstra",
    "Liskov",
    "Knuth",
    "Hamilton",
    "Thompson",
    "Ritchie",
    "Allen",
    "Backus",
    "Perlman",
    "Berners-Lee",
    "Cerf",
    "Wilson",
    "Matsumoto",
    "Rossum",
    "Torvalds",
    "Lamarr",
    "Johnson",
    "Jackson",
    "Wirth",
    "Stroustrup",
    "Hejlsberg",
    "Byron",
    "Nakamura",
    "García",
    "Müller",
    "Øberg",
    "Kowalski",
    "Dubois",
];

/// Reasons of generated reports.
const REPORT_REASONS: &[&str] = &[
    "Spam",
    "Harassment",
    "Off-topic",
    "Misinformation",
    "Inappropriate content",
];

/// Counts of one seeding run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedSummary {
    pub users: u64,
    pub posts: u64,
    pub tags: u64,
    pub reports: u64,
}

/// Progress of a seeding run, for the command line to print.
#[derive(Debug, Clone, Copy)]
pub struct SeedProgress {
    /// `users`, `posts` or `replies`.
    pub table: &'static str,
    pub written: u64,
    pub total: u64,
    pub elapsed_secs: f64,
}

/// A small deterministic generator (SplitMix64): the same run writes the
/// same rows.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound` > 0).
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// Uniform in `low..=high`.
    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high - low + 1)
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// Draws words with weight 1 / rank.
struct Vocabulary {
    words: Vec<&'static str>,
    cumulative: Vec<f64>,
}

impl Vocabulary {
    fn new() -> Self {
        let mut seen = std::collections::HashSet::new();
        let words: Vec<&'static str> = WORDS
            .split_whitespace()
            .filter(|word| seen.insert(*word))
            .collect();
        let mut total = 0.0;
        let cumulative = (1..=words.len())
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Vocabulary { words, cumulative }
    }

    fn word(&self, rng: &mut Rng) -> &'static str {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let target = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let index = self.cumulative.partition_point(|&c| c < target);
        self.words[index.min(self.words.len() - 1)]
    }

    /// `count` words, the first capitalized.
    fn phrase(&self, rng: &mut Rng, count: u64) -> String {
        let mut text = String::new();
        for index in 0..count {
            let word = self.word(rng);
            if index == 0 {
                let mut chars = word.chars();
                if let Some(first) = chars.next() {
                    text.extend(first.to_uppercase());
                    text.push_str(chars.as_str());
                }
            } else {
                text.push(' ');
                text.push_str(word);
            }
        }
        text
    }

    /// Sentences totalling about `words` words.
    fn paragraph(&self, rng: &mut Rng, words: u64) -> String {
        let mut text = String::new();
        let mut left = words;
        while left > 0 {
            let length = rng.between(4, 12).min(left);
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&self.phrase(rng, length));
            text.push('.');
            left -= length;
        }
        text
    }
}

/// One value of a generated row.
enum Value {
    Int(i64),
    Text(String),
    Bool(bool),
    /// A missing number.
    Null,
    /// A missing text (PostgreSQL types a parameter's NULL).
    NullText,
}

impl Database {
    /// Writes `users` new users and then `posts` new posts by random users
    /// (the new ones, or the existing ones when `users` is 0), of which
    /// about `reported_percent` % get one to three reports by other users
    /// (the admin moderation queue). Ids continue after the current
    /// largest, so it may run on a database in use, but not while the
    /// service writes to it.
    pub async fn seed_content(
        &self,
        users: u64,
        posts: u64,
        reported_percent: u64,
        progress: &mut (dyn FnMut(SeedProgress) + Send),
    ) -> Result<SeedSummary, DomainError> {
        let started = Instant::now();
        let now = now_millis();
        let vocabulary = Vocabulary::new();
        let (first_user,): (i64,) = sqlx::query_as("SELECT COALESCE(MAX(id), 0) + 1 FROM users")
            .fetch_one(&mut *self.lease().await?)
            .await?;
        let mut rng = Rng(0x5EED ^ first_user as u64);
        const DAY: i64 = 86_400_000;
        let user_rows = (0..users).map(|index| {
            let id = first_user + index as i64;
            let first = rng.pick(FIRST_NAMES);
            let last = rng.pick(LAST_NAMES);
            let bio_words = rng_words(&mut rng, 5, 25);
            let bio = vocabulary.paragraph(&mut rng, bio_words);
            let created_at = now - 730 * DAY + (index as i64 * 730 * DAY) / users.max(1) as i64;
            let role = match rng.below(100) {
                0 => "admin",
                1..=3 => "moderator",
                _ => "user",
            };
            // Every 50th user is banned now (the identities step writes
            // the ban in force).
            let status = if id % 50 == 0 { "banned" } else { "active" };
            vec![
                Value::Int(id),
                Value::Text(format!("seed{id}@seed.plaza.invalid")),
                Value::Text(format!("seed{id}")),
                Value::Text(format!("{first} {last}")),
                Value::Text(bio),
                Value::Text(
                    rng.pick(&["", "Lisbon", "Kyoto", "Oslo", "Lagos", "Lima"])
                        .to_owned(),
                ),
                Value::Bool(rng.chance(95)),
                Value::Text(role.to_owned()),
                Value::Text(status.to_owned()),
                Value::Int(created_at),
                Value::Int(created_at),
            ]
        });
        let user_rows: Vec<Vec<Value>> = user_rows.collect();
        self.insert_rows(
            "users",
            "id, email, username, name, bio, location, profile_public, role, status, created_at, updated_at",
            user_rows,
            &mut |written| {
                progress(SeedProgress {
                    table: "users",
                    written,
                    total: users,
                    elapsed_secs: started.elapsed().as_secs_f64(),
                })
            },
        )
        .await?;

        self.seed_identities(first_user, users, &mut rng, now, started, progress)
            .await?;

        let authors: Vec<i64> = if users > 0 {
            (first_user..first_user + users as i64).collect()
        } else {
            sqlx::query_as::<_, (i64,)>("SELECT id FROM users ORDER BY id")
                .fetch_all(&mut *self.lease().await?)
                .await?
                .into_iter()
                .map(|(id,)| id)
                .collect()
        };
        if authors.is_empty() && posts > 0 {
            return Err(DomainError::Conflict(
                "there are no users to write the posts; seed some users too".to_owned(),
            ));
        }
        let (first_post,): (i64,) = sqlx::query_as("SELECT COALESCE(MAX(id), 0) + 1 FROM posts")
            .fetch_one(&mut *self.lease().await?)
            .await?;
        let mut tags_written = 0u64;
        let mut reports_written = 0u64;
        let mut written = 0u64;
        while written < posts {
            let chunk = (posts - written).min(ROWS_PER_TRANSACTION as u64);
            let mut post_rows = Vec::with_capacity(chunk as usize);
            let mut tag_rows = Vec::new();
            let mut report_rows = Vec::new();
            for index in written..written + chunk {
                let id = first_post + index as i64;
                let created_at = now - 365 * DAY + (index as i64 * 365 * DAY) / posts as i64;
                let updated_at = if rng.chance(10) {
                    (created_at + rng.below(10 * DAY as u64) as i64).min(now)
                } else {
                    created_at
                };
                let roll = rng.below(100);
                let (published, moderation) = match roll {
                    0..=8 => (false, "none"),
                    9 => (true, "hidden"),
                    10 => (true, "flagged"),
                    _ => (true, "none"),
                };
                let mut tags: Vec<&str> = Vec::new();
                for _ in 0..rng.below(4) {
                    let tag = rng.pick(TAGS);
                    if !tags.contains(&tag) {
                        tags.push(tag);
                    }
                }
                for tag in &tags {
                    tag_rows.push(vec![
                        Value::Int(id),
                        Value::Text((*tag).to_owned()),
                        Value::Int(created_at),
                    ]);
                }
                let title_words = rng.between(3, 8);
                let content_words = rng_words(&mut rng, 15, 60);
                let author = authors[rng.below(authors.len() as u64) as usize];
                if reported_percent > 0 && authors.len() > 1 && rng.chance(reported_percent) {
                    let mut reporters: Vec<i64> = Vec::new();
                    for _ in 0..rng.between(1, 3) {
                        let reporter = authors[rng.below(authors.len() as u64) as usize];
                        if reporter != author && !reporters.contains(&reporter) {
                            reporters.push(reporter);
                        }
                    }
                    for reporter in reporters {
                        let reported_at = (created_at + rng.below(DAY as u64) as i64).min(now);
                        report_rows.push(vec![
                            Value::Int(id),
                            Value::Int(reporter),
                            Value::Text(rng.pick(REPORT_REASONS).to_owned()),
                            Value::Int(reported_at),
                        ]);
                    }
                }
                post_rows.push(vec![
                    Value::Int(id),
                    Value::Int(author),
                    Value::Text(vocabulary.phrase(&mut rng, title_words)),
                    Value::Text(vocabulary.paragraph(&mut rng, content_words)),
                    Value::Text(tags.join(" ")),
                    Value::Bool(published),
                    Value::Text(moderation.to_owned()),
                    Value::Int(created_at),
                    Value::Int(updated_at),
                ]);
            }
            tags_written += tag_rows.len() as u64;
            self.insert_rows(
                "posts",
                "id, author_id, title, content, tags, published, moderation, created_at, updated_at",
                post_rows,
                &mut |_| {},
            )
            .await?;
            self.insert_rows(
                "post_tags",
                "post_id, tag, created_at",
                tag_rows,
                &mut |_| {},
            )
            .await?;
            reports_written += report_rows.len() as u64;
            self.insert_rows(
                "post_reports",
                "post_id, reporter_id, reason, created_at",
                report_rows,
                &mut |_| {},
            )
            .await?;
            written += chunk;
            progress(SeedProgress {
                table: "posts",
                written,
                total: posts,
                elapsed_secs: started.elapsed().as_secs_f64(),
            });
        }
        for statement in self.dialect().after_bulk_load() {
            sqlx::query(statement)
                .execute(&mut *self.lease().await?)
                .await?;
        }
        Ok(SeedSummary {
            users,
            posts,
            tags: tags_written,
            reports: reports_written,
        })
    }

    /// Inserts `rows` into `table` with multi-row statements, several
    /// statements per transaction; `progress` gets the running count after
    /// each transaction.
    async fn insert_rows(
        &self,
        table: &str,
        columns: &str,
        rows: Vec<Vec<Value>>,
        progress: &mut (dyn FnMut(u64) + Send),
    ) -> Result<(), DomainError> {
        let width = columns.split(',').count();
        let rows_per_statement = (self.dialect().values_per_statement() / width).max(1);
        let mut rows = rows.into_iter().peekable();
        let mut written = 0u64;
        while rows.peek().is_some() {
            let mut lease = self.lease().await?;
            let mut tx = lease.begin().await?;
            for statement in self.dialect().before_bulk_load() {
                sqlx::query(statement).execute(&mut *tx).await?;
            }
            let mut in_transaction = 0;
            while in_transaction < ROWS_PER_TRANSACTION {
                let batch: Vec<Vec<Value>> = rows.by_ref().take(rows_per_statement).collect();
                if batch.is_empty() {
                    break;
                }
                in_transaction += batch.len();
                let tuples: Vec<String> = (0..batch.len())
                    .map(|row| {
                        let placeholders: Vec<String> = (1..=width)
                            .map(|column| format!("${}", row * width + column))
                            .collect();
                        format!("({})", placeholders.join(", "))
                    })
                    .collect();
                let sql = format!(
                    "INSERT INTO {table} ({columns}) VALUES {}",
                    tuples.join(", ")
                );
                let mut statement = sqlx::query(&sql);
                for value in batch.iter().flatten() {
                    statement = match value {
                        Value::Int(number) => statement.bind(*number),
                        Value::Text(text) => statement.bind(text.clone()),
                        Value::Bool(flag) => statement.bind(*flag),
                        Value::Null => statement.bind(Option::<i64>::None),
                        Value::NullText => statement.bind(Option::<String>::None),
                    };
                }
                statement.execute(&mut *tx).await?;
                written += batch.len() as u64;
            }
            tx.commit().await?;
            progress(written);
        }
        Ok(())
    }
}

const PROVIDERS: &[&str] = &["github", "google", "discord"];
const PLANS: &[&str] = &["Supporter", "Pro", "Team", "Patron"];

impl Database {
    /// For the users `first_user..first_user + users`: linked provider
    /// accounts (about 60 % of users), subscriptions (about 30 %, some
    /// ended or inactive) and bans (about 8 % have had one; every 50th
    /// user, whose status the user rows made `banned`, has one in force),
    /// what the unversioned admin user list summarises.
    async fn seed_identities(
        &self,
        first_user: i64,
        users: u64,
        rng: &mut Rng,
        now: i64,
        started: Instant,
        progress: &mut (dyn FnMut(SeedProgress) + Send),
    ) -> Result<(), DomainError> {
        const DAY: i64 = 86_400_000;
        let mut accounts = Vec::new();
        let mut subscriptions = Vec::new();
        let mut bans = Vec::new();
        for id in first_user..first_user + users as i64 {
            if rng.chance(60) {
                let first = rng.below(PROVIDERS.len() as u64) as usize;
                let linked = if rng.chance(20) { 2 } else { 1 };
                for offset in 0..linked {
                    let provider = PROVIDERS[(first + offset) % PROVIDERS.len()];
                    let used = now - rng.below(90 * DAY as u64) as i64;
                    accounts.push(vec![
                        Value::Int(id),
                        Value::Text(provider.to_owned()),
                        Value::Text(format!("{provider}-{id}")),
                        Value::Text(format!("seed{id}@{provider}.seed.plaza.invalid")),
                        Value::Bool(rng.chance(80)),
                        Value::Int(used),
                        Value::Int(used - 30 * DAY),
                    ]);
                }
            }
            if rng.chance(30) {
                for _ in 0..rng.between(1, 2) {
                    let started_at = now - rng.below(365 * DAY as u64) as i64;
                    let ends_at = if rng.chance(30) {
                        Value::Int(started_at + rng.between(30, 400) as i64 * DAY)
                    } else {
                        Value::Null
                    };
                    let status = if rng.chance(85) { "active" } else { "inactive" };
                    subscriptions.push(vec![
                        Value::Int(id),
                        Value::Text(rng.pick(PLANS).to_owned()),
                        Value::Text(status.to_owned()),
                        Value::Int(started_at),
                        ends_at,
                        Value::Int(started_at),
                        Value::Int(started_at),
                    ]);
                }
            }
            if id % 50 == 0 || rng.chance(8) {
                let created_at = now - rng.between(100, 300) as i64 * DAY;
                bans.push(vec![
                    Value::Int(id),
                    Value::Text(rng.pick(REPORT_REASONS).to_owned()),
                    Value::Int(created_at),
                    Value::Int(created_at + 7 * DAY),
                    Value::Int(created_at + 7 * DAY),
                    Value::Text("expired".to_owned()),
                ]);
            }
            if id % 50 == 0 {
                let created_at = now - rng.between(1, 5) as i64 * DAY;
                let expires_at = if rng.chance(50) {
                    Value::Int(created_at + 30 * DAY)
                } else {
                    Value::Null
                };
                bans.push(vec![
                    Value::Int(id),
                    Value::Text(rng.pick(REPORT_REASONS).to_owned()),
                    Value::Int(created_at),
                    expires_at,
                    Value::Null,
                    Value::NullText,
                ]);
            }
        }
        for (table, columns, rows) in [
            (
                "accounts",
                "user_id, provider, provider_account_id, email, email_verified, last_used_at, created_at",
                accounts,
            ),
            (
                "subscriptions",
                "user_id, plan_name, status, started_at, ends_at, created_at, updated_at",
                subscriptions,
            ),
            (
                "user_bans",
                "user_id, reason, created_at, expires_at, lifted_at, lift_reason",
                bans,
            ),
        ] {
            let total = rows.len() as u64;
            self.insert_rows(table, columns, rows, &mut |written| {
                progress(SeedProgress {
                    table,
                    written,
                    total,
                    elapsed_secs: started.elapsed().as_secs_f64(),
                })
            })
            .await?;
        }
        Ok(())
    }
}

/// A text length in words between `low` and `high`, skewed short.
fn rng_words(rng: &mut Rng, low: u64, high: u64) -> u64 {
    let a = rng.between(low, high);
    let b = rng.between(low, high);
    a.min(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_zipf_like() {
        let vocabulary = Vocabulary::new();
        let mut one = Rng(7);
        let mut two = Rng(7);
        assert_eq!(
            vocabulary.paragraph(&mut one, 30),
            vocabulary.paragraph(&mut two, 30)
        );
        let mut rng = Rng(1);
        let draws = 10_000;
        let top = (0..draws)
            .filter(|_| vocabulary.word(&mut rng) == "the")
            .count();
        assert!(top > draws / 20, "the top word is common: {top}");
    }
}
