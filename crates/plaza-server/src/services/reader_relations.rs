//! Each signed-in reader's relations (blocks, mutes, keyword filters with
//! their phrases compiled), kept per user while the user's
//! `relations_version` stays the one their session carries. The statement
//! that resolves a session reads that version on every request, so a copy
//! kept here is known current without a read of its own: a change on any
//! instance (or by plain SQL: triggers move the version) is seen by the
//! reader's next request. Anonymous readers never come here, so the
//! answer cache's path is as it was.
//!
//! Beside the relations, each copy keeps how many posts its screen hides
//! from a list whose total comes from the counters, per content generation
//! (the answer cache's check, at most [`TRUST`] old): a reader who blocks
//! a thousand members counts their posts once per change of content, not
//! per request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use plaza_domain::between::Relations;
use plaza_domain::posts::{PostQuery, Viewer};
use plaza_domain::{Database, DomainError};
use quick_cache::sync::Cache;

use crate::services::content_generation::ContentGeneration;
#[cfg(doc)]
use crate::services::content_generation::TRUST;

/// Readers whose relations are kept; the least recently used go first.
const MAX_READERS: usize = 10_000;

/// A reader's relations, and the counts of posts their screen hides.
#[derive(Debug)]
pub struct Reading {
    pub relations: Relations,
    /// By (published filter, whether the viewer moderates): the count, the
    /// generation it was read at, and until when (the next end of a mute)
    /// it holds.
    hidden_posts: Mutex<HashMap<(Option<bool>, bool), HiddenCount>>,
}

#[derive(Debug, Clone, Copy)]
struct HiddenCount {
    generation: i64,
    holds_until: Option<i64>,
    count: i64,
}

impl Reading {
    fn new(relations: Relations) -> Self {
        Reading {
            relations,
            hidden_posts: Mutex::new(HashMap::new()),
        }
    }

    /// How many posts the reader's screen at `now` hides from the list
    /// `query` as `viewer`, whose total comes from the counters: kept while
    /// the content generation is the same and no mute has ended since.
    pub async fn hidden_posts(
        &self,
        db: &Database,
        generation: &ContentGeneration,
        query: &PostQuery,
        viewer: Viewer,
        now: i64,
    ) -> Result<i64, DomainError> {
        let Some(screen) = self.relations.screen(now) else {
            return Ok(0);
        };
        let key = (query.published, matches!(viewer, Viewer::Moderator(_)));
        let current = generation.current().await?;
        let kept = self.hidden_posts.lock().ok().and_then(|counts| {
            counts.get(&key).copied().filter(|kept| {
                kept.generation == current && kept.holds_until.is_none_or(|until| now < until)
            })
        });
        if let Some(kept) = kept {
            return Ok(kept.count);
        }
        let count = db.screened_post_count(query, viewer, screen).await?;
        if let Ok(mut counts) = self.hidden_posts.lock() {
            counts.insert(
                key,
                HiddenCount {
                    generation: current,
                    holds_until: self.relations.next_change_after(now),
                    count,
                },
            );
        }
        Ok(count)
    }
}

/// The relations of recent readers (the app state holds one).
pub struct ReaderRelations {
    readers: Cache<i64, Arc<Reading>>,
}

impl Default for ReaderRelations {
    fn default() -> Self {
        ReaderRelations {
            readers: Cache::new(MAX_READERS),
        }
    }
}

impl ReaderRelations {
    /// `user_id`'s relations at `version` (their session's): the kept copy
    /// when it is of that version, else read afresh and kept.
    pub async fn of(
        &self,
        db: &Database,
        user_id: i64,
        version: i64,
    ) -> Result<Arc<Reading>, DomainError> {
        if let Some(kept) = self.readers.get(&user_id)
            && kept.relations.version == version
        {
            return Ok(kept);
        }
        let reading = Arc::new(Reading::new(db.relations_of(user_id).await?));
        // A copy read at an older version than the session's (a change
        // committed between the two reads) is used for this request but
        // not kept, so the next request reads again.
        if reading.relations.version >= version {
            self.readers.insert(user_id, reading.clone());
        }
        Ok(reading)
    }
}
