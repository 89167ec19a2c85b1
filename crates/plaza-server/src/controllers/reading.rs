//! A signed-in caller's relations as the routes that list members'
//! content apply them (DECISIONS.md "Between members"): read once per
//! request ([`reading_of`]), then the sight of each post ([`PostSights`])
//! or reply ([`reply_sight`]) on the page. Which routes apply them is
//! [`crate::controllers::screening`].

use std::collections::HashMap;
use std::sync::Arc;

use plaza_domain::between::Sight;
use plaza_domain::posts::Post;

use crate::auth::SessionPrincipal;
use crate::http::error::AppError;
use crate::services::reader_relations::Reading;
use crate::state::AppState;

/// The caller's relations, when any apply: `None` for anonymous readers
/// and for members who block, mute and filter nothing, whose lists are
/// read as anyone else's. Read once per request, from the copy this
/// instance keeps at the version the caller's session carries.
pub async fn reading_of(
    state: &AppState,
    caller: Option<&SessionPrincipal>,
) -> Result<Option<Arc<Reading>>, AppError> {
    let Some(caller) = caller else {
        return Ok(None);
    };
    let reading = state
        .reader_relations
        .of(
            &state.db,
            caller.user_id(),
            caller.session.relations_version,
        )
        .await?;
    Ok((!reading.relations.is_empty()).then_some(reading))
}

/// What a reader sees of a page of posts: the ones their relations hide,
/// and the `warn` phrases of the others.
#[derive(Default)]
pub struct PostSights {
    hidden: Vec<i64>,
    warnings: HashMap<i64, Vec<String>>,
}

impl PostSights {
    /// The sights of `posts` (title and content) for `reading` at `now`.
    pub fn of<'a>(
        reading: Option<&Reading>,
        posts: impl IntoIterator<Item = &'a Post>,
        now: i64,
    ) -> Self {
        let mut sights = PostSights::default();
        let Some(reading) = reading else {
            return sights;
        };
        for post in posts {
            match reading.relations.sight(
                Some(post.author_id),
                &[post.title.as_str(), post.content.as_str()],
                now,
            ) {
                Sight::Hidden(_) => sights.hidden.push(post.id),
                Sight::Shown { warnings } if !warnings.is_empty() => {
                    sights.warnings.insert(post.id, warnings);
                }
                Sight::Shown { .. } => {}
            }
        }
        sights
    }

    pub fn hides(&self, id: i64) -> bool {
        self.hidden.contains(&id)
    }

    /// The `filtered` of post `id`: its `warn` phrases, when any.
    pub fn filtered(&self, id: i64) -> Option<Vec<String>> {
        self.warnings.get(&id).cloned()
    }
}

/// What a reader sees of one reply (its author and content) at `now`.
pub fn reply_sight(
    reading: Option<&Reading>,
    author: Option<i64>,
    content: &str,
    now: i64,
) -> Sight {
    match reading {
        Some(reading) => reading.relations.sight(author, &[content], now),
        None => Sight::Shown {
            warnings: Vec::new(),
        },
    }
}
