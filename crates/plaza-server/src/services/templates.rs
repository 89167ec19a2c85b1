//! The one template engine for text and HTML that Plaza writes from
//! templates (the parts of its mail, the operator console's pages):
//! minijinja, with every template compiled into the binary from the
//! crate's `templates/` folder, so a release needs no files beside it. A template whose name ends in `.html`
//! escapes every value it interpolates; a `.txt` one writes them as they
//! are. A variable a template names but the caller did not give is an
//! error, not an empty string.

use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

/// Every template, by the name templates use to extend one another.
const SOURCES: &[(&str, &str)] = &[
    (
        "mail/layout.html",
        include_str!("../../templates/mail/layout.html"),
    ),
    (
        "mail/verify_email.subject.txt",
        include_str!("../../templates/mail/verify_email.subject.txt"),
    ),
    (
        "mail/verify_email.txt",
        include_str!("../../templates/mail/verify_email.txt"),
    ),
    (
        "mail/verify_email.html",
        include_str!("../../templates/mail/verify_email.html"),
    ),
    (
        "mail/account_changed.subject.txt",
        include_str!("../../templates/mail/account_changed.subject.txt"),
    ),
    (
        "mail/account_changed.txt",
        include_str!("../../templates/mail/account_changed.txt"),
    ),
    (
        "mail/account_changed.html",
        include_str!("../../templates/mail/account_changed.html"),
    ),
    (
        "mail/reset_password.subject.txt",
        include_str!("../../templates/mail/reset_password.subject.txt"),
    ),
    (
        "mail/reset_password.txt",
        include_str!("../../templates/mail/reset_password.txt"),
    ),
    (
        "mail/reset_password.html",
        include_str!("../../templates/mail/reset_password.html"),
    ),
    (
        "mail/notification.subject.txt",
        include_str!("../../templates/mail/notification.subject.txt"),
    ),
    (
        "mail/notification.txt",
        include_str!("../../templates/mail/notification.txt"),
    ),
    (
        "mail/notification.html",
        include_str!("../../templates/mail/notification.html"),
    ),
    (
        "mail/digest.subject.txt",
        include_str!("../../templates/mail/digest.subject.txt"),
    ),
    (
        "mail/digest.txt",
        include_str!("../../templates/mail/digest.txt"),
    ),
    (
        "mail/digest.html",
        include_str!("../../templates/mail/digest.html"),
    ),
    (
        "mail/banned.subject.txt",
        include_str!("../../templates/mail/banned.subject.txt"),
    ),
    (
        "mail/banned.txt",
        include_str!("../../templates/mail/banned.txt"),
    ),
    (
        "mail/banned.html",
        include_str!("../../templates/mail/banned.html"),
    ),
    (
        "mail/registration_approved.subject.txt",
        include_str!("../../templates/mail/registration_approved.subject.txt"),
    ),
    (
        "mail/registration_approved.txt",
        include_str!("../../templates/mail/registration_approved.txt"),
    ),
    (
        "mail/registration_approved.html",
        include_str!("../../templates/mail/registration_approved.html"),
    ),
    (
        "mail/registration_rejected.subject.txt",
        include_str!("../../templates/mail/registration_rejected.subject.txt"),
    ),
    (
        "mail/registration_rejected.txt",
        include_str!("../../templates/mail/registration_rejected.txt"),
    ),
    (
        "mail/registration_rejected.html",
        include_str!("../../templates/mail/registration_rejected.html"),
    ),
    (
        "console/layout.html",
        include_str!("../../templates/console/layout.html"),
    ),
    (
        "console/site_settings.html",
        include_str!("../../templates/console/site_settings.html"),
    ),
    (
        "console/registrations.html",
        include_str!("../../templates/console/registrations.html"),
    ),
    (
        "console/email_domain_blocks.html",
        include_str!("../../templates/console/email_domain_blocks.html"),
    ),
    (
        "console/ip_blocks.html",
        include_str!("../../templates/console/ip_blocks.html"),
    ),
    (
        "console/home.html",
        include_str!("../../templates/console/home.html"),
    ),
    (
        "console/moderation.html",
        include_str!("../../templates/console/moderation.html"),
    ),
    (
        "console/users.html",
        include_str!("../../templates/console/users.html"),
    ),
    (
        "console/user.html",
        include_str!("../../templates/console/user.html"),
    ),
    (
        "console/bulk.html",
        include_str!("../../templates/console/bulk.html"),
    ),
    (
        "console/audit.html",
        include_str!("../../templates/console/audit.html"),
    ),
    (
        "console/broadcasts.html",
        include_str!("../../templates/console/broadcasts.html"),
    ),
    (
        "console/flags.html",
        include_str!("../../templates/console/flags.html"),
    ),
    (
        "console/word_filters.html",
        include_str!("../../templates/console/word_filters.html"),
    ),
    (
        "console/rules.html",
        include_str!("../../templates/console/rules.html"),
    ),
    (
        "console/appeals.html",
        include_str!("../../templates/console/appeals.html"),
    ),
    (
        "console/emojis.html",
        include_str!("../../templates/console/emojis.html"),
    ),
    (
        "console/system.html",
        include_str!("../../templates/console/system.html"),
    ),
    (
        "console/access.html",
        include_str!("../../templates/console/access.html"),
    ),
    (
        "console/analytics.html",
        include_str!("../../templates/console/analytics.html"),
    ),
    (
        "console/reports.html",
        include_str!("../../templates/console/reports.html"),
    ),
    (
        "console/webhooks.html",
        include_str!("../../templates/console/webhooks.html"),
    ),
];

/// The compiled templates.
pub struct Templates {
    environment: Environment<'static>,
}

impl Templates {
    /// Compiles every template; fails naming one that does not parse.
    pub fn new() -> Result<Self, String> {
        let mut environment = Environment::new();
        environment.set_undefined_behavior(UndefinedBehavior::Strict);
        for (name, source) in SOURCES {
            environment
                .add_template(name, source)
                .map_err(|error| format!("template {name}: {error}"))?;
        }
        Ok(Templates { environment })
    }

    /// Renders the template `name` with the values of `context`.
    pub fn render(&self, name: &str, context: impl Serialize) -> Result<String, String> {
        self.environment
            .get_template(name)
            .and_then(|template| template.render(minijinja::value::Serde(context)))
            .map_err(|error| format!("template {name}: {error:#}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_templates_escape_and_text_ones_do_not() {
        let templates = Templates::new().unwrap();
        let context = serde_json::json!({
            "app_name": "Plaza",
            "subject": "Subject",
            "name": "<Ada & Co>",
            "email": "ada@example.com",
            "link": "https://plaza.example/api/auth/verify-email?token=a&b",
            "valid_for": "24 hours",
        });
        let html = templates
            .render("mail/verify_email.html", &context)
            .unwrap();
        assert!(html.contains("&lt;Ada &amp; Co&gt;"), "{html}");
        assert!(!html.contains("<Ada"));
        assert!(html.contains("token=a&amp;b"));
        let text = templates.render("mail/verify_email.txt", &context).unwrap();
        assert!(text.contains("Hello <Ada & Co>,"), "{text}");
        assert!(text.contains("token=a&b"));
        let missing = templates.render("mail/reset_password.txt", serde_json::json!({}));
        assert!(missing.is_err(), "an undefined variable is an error");
    }
}
