//! What this instance knows of the front door: the site settings and the
//! IP blocks in force, read from the database and kept in memory, so a
//! request reads them without a query (the IP blocks on every request).
//!
//! Every instance reads the settings' one row each second (the
//! `front_door_refresh` job); when its version moved (a change of the
//! settings or of the IP blocks, made through any instance) it reads the
//! blocks again and builds their ranges anew, and when the first block in
//! force ends it builds them without it. So a change is in force on every
//! instance within about a second (the decided bound is 5 s); the instance
//! that made it reloads at once ([`FrontDoor::reload`]).

use std::net::IpAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use plaza_domain::ip_blocks::Severity;
use plaza_domain::site_settings::{FileDefaults, RegistrationMode, StoredSettings};
use plaza_domain::time::now_millis;
use plaza_domain::{Database, DomainError};

use crate::services::address_ranges::{AddressRanges, Range, parse_range};

/// What the rest of the server reads: the settings in force.
#[derive(Debug, Clone)]
pub struct SiteSettings {
    pub stored: StoredSettings,
    /// The registration mode in force (the file's `signup` decides until
    /// an administrator sets one).
    pub registration_mode: RegistrationMode,
}

impl SiteSettings {
    /// The hold on new accounts: each account's first N posts and replies
    /// wait for a moderator.
    pub fn new_account_hold_count(&self) -> i64 {
        self.stored.new_account_hold_count
    }

    /// Whether the moderation log is public.
    pub fn public_modlog(&self) -> bool {
        self.stored.public_modlog
    }

    /// The question a sign-up answers while registrations need approval.
    pub fn registration_question(&self) -> Option<&str> {
        self.stored.registration_question.as_deref()
    }

    /// Whether members (not only administrators) may make invites.
    pub fn invites_by_members(&self) -> bool {
        self.stored.invites_by_members
    }
}

/// The blocks as last read, and the ranges built from them.
struct Blocks {
    read: Vec<Range>,
    ranges: AddressRanges,
}

/// See the module documentation.
pub struct FrontDoor {
    defaults: FileDefaults,
    settings: ArcSwap<SiteSettings>,
    blocks: ArcSwap<Blocks>,
    /// Held by the one reload in progress.
    reloading: tokio::sync::Mutex<()>,
}

impl FrontDoor {
    /// Empty until the first [`FrontDoor::refresh`]: no blocks, the
    /// file's `defaults`.
    pub fn new(defaults: FileDefaults) -> Self {
        let stored = StoredSettings {
            registration_mode: None,
            registration_question: None,
            invites_by_members: false,
            new_account_hold_count: 0,
            public_modlog: false,
            version: -1,
            updated_at: None,
            updated_by: None,
        };
        FrontDoor {
            defaults,
            settings: ArcSwap::from_pointee(SiteSettings {
                registration_mode: stored.registration_mode(defaults.signup),
                stored: stored.in_force(defaults),
            }),
            blocks: ArcSwap::from_pointee(Blocks {
                read: Vec::new(),
                ranges: AddressRanges::default(),
            }),
            reloading: tokio::sync::Mutex::new(()),
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> Arc<SiteSettings> {
        self.settings.load_full()
    }

    /// The settings file's values in force until an administrator sets
    /// the site settings.
    pub fn file_defaults(&self) -> FileDefaults {
        self.defaults
    }

    /// Whether a block of `severity` or stronger covers `address`.
    pub fn blocks(&self, address: IpAddr, severity: Severity) -> bool {
        self.blocks.load().ranges.blocks(address, severity)
    }

    /// Reads the settings' row; reloads the blocks when its version moved,
    /// or builds their ranges again when the first one has ended. Answers
    /// what it did, for the job's log.
    pub async fn refresh(&self, db: &Database) -> Result<String, DomainError> {
        let _turn = self.reloading.lock().await;
        let stored = db.site_settings().await?.in_force(self.defaults);
        let now = now_millis();
        if stored.version != self.settings.load().stored.version {
            let read: Vec<Range> = db
                .ip_blocks_in_force()
                .await?
                .iter()
                .filter_map(|block| {
                    Some(Range {
                        net: parse_range(&block.cidr)?,
                        severity: block.severity(),
                        expires_at: block.expires_at,
                    })
                })
                .collect();
            let ranges = AddressRanges::build(&read, now);
            let outcome = format!(
                "version {}: {} IP blocks in force",
                stored.version,
                ranges.len()
            );
            self.blocks.store(Arc::new(Blocks { read, ranges }));
            self.settings.store(Arc::new(SiteSettings {
                registration_mode: stored.registration_mode(self.defaults.signup),
                stored,
            }));
            return Ok(outcome);
        }
        let blocks = self.blocks.load();
        if blocks.ranges.next_expiry().is_some_and(|end| end <= now) {
            let read: Vec<Range> = blocks
                .read
                .iter()
                .filter(|block| block.expires_at.is_none_or(|end| end > now))
                .copied()
                .collect();
            let ranges = AddressRanges::build(&read, now);
            let outcome = format!("a block ended: {} IP blocks in force", ranges.len());
            self.blocks.store(Arc::new(Blocks { read, ranges }));
            return Ok(outcome);
        }
        Ok(String::new())
    }

    /// Reads everything again after this instance changed it.
    pub async fn reload(&self, db: &Database) -> Result<(), DomainError> {
        self.refresh(db).await.map(|_| ())
    }
}
