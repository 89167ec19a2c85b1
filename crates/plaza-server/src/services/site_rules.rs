//! Replacing the site's rules as one unit of work with its audit entry
//! (`rules.update`, the titles before and after), shared by
//! `PUT /api/v1/admin/rules` and the console's rules page.

use plaza_domain::audit::{self, AuditAction, AuditContext};
use plaza_domain::rules::{self, Rule, RuleDraft};
use plaza_domain::{Database, DomainError};
use serde_json::json;

/// Replaces the rules with `drafts` (checked by the surface), in that
/// order, audited with `context`; answers the rules as now.
pub async fn replace(
    db: &Database,
    context: AuditContext,
    drafts: Vec<RuleDraft>,
) -> Result<Vec<Rule>, DomainError> {
    db.write(move |tx| {
        Box::pin(async move {
            let (before, after) = rules::replace(tx, drafts).await?;
            let shown = |list: &[Rule]| {
                list.iter()
                    .map(|rule| json!({"id": rule.id.to_string(), "title": rule.title}))
                    .collect::<Vec<_>>()
            };
            audit::record(
                tx,
                &context,
                AuditAction {
                    action: "rules.update",
                    target_type: "rules",
                    target_id: None,
                    changes: json!({"before": shown(&before), "after": shown(&after)}),
                },
            )
            .await?;
            Ok(after)
        })
    })
    .await
}
