//! Server-rendered HTML pages (sign-in and its second step, sign-out, the
//! pages of a forgotten password, of a verification link, of a mail's
//! unsubscribe link and of a ban mail's appeal link, share-image viewer,
//! and the operator console's error page). Every interpolated value is
//! escaped; the pages load nothing from elsewhere.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use crate::settings::ServerSettings;

/// An HTML page that carries (or was reached by) a mailed token: it is not
/// kept by caches, and its links send no `Referer` that could hold it.
pub fn private(status: StatusCode, html: String) -> Response {
    let mut response = (status, Html(html)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// Escapes text for HTML element content and quoted attributes.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            _ => escaped.push(c),
        }
    }
    escaped
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;background:#f4f4f7;margin:0;display:flex;\
min-height:100vh;align-items:center;justify-content:center}main{background:#fff;padding:2rem;\
border-radius:12px;box-shadow:0 2px 12px #0002;width:min(360px,90vw)}h1{font-size:1.4rem;margin:0 0 1rem}\
label{display:block;margin:.6rem 0 .2rem;font-size:.9rem}input,textarea{width:100%;box-sizing:border-box;\
padding:.55rem;border:1px solid #bbb;border-radius:6px;font:inherit}button,.provider{display:block;width:100%;\
box-sizing:border-box;margin-top:1rem;padding:.6rem;border:0;border-radius:6px;background:#118ab2;\
color:#fff;font-size:1rem;text-align:center;text-decoration:none;cursor:pointer}.provider{background:#333}\
.error{background:#fde2e1;color:#8a1c1c;padding:.6rem;border-radius:6px}hr{margin:1.4rem 0;border:0;\
border-top:1px solid #ddd}.notice{background:#e1f5e8;color:#1c5a33;padding:.6rem;border-radius:6px}\
.aside{margin:1rem 0 0;text-align:center;font-size:.9rem}a{color:#118ab2}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{title}</title><style>{STYLE}</style></head><body><main>{body}</main></body></html>",
        title = escape(title),
    )
}

fn error_text(code: &str) -> &'static str {
    match code {
        "credentials" => "Wrong email or password.",
        "too_many_attempts" => "Too many failed attempts. Try again later.",
        "account_not_linked" => {
            "That email belongs to an account here, but the provider has not verified it. Sign in another way, then link the provider."
        }
        "account_disabled" => "This account is disabled.",
        "email_required" => "The provider did not share an email address.",
        "email" => "Enter the email address of your account.",
        "invalid_token" => {
            "This link is invalid, expired or already used. Ask for a new one below."
        }
        "weak_password" => "The password must have at least 8 characters (and at most 256 bytes).",
        "mismatch" => "The two passwords differ.",
        "totp_invalid" => "That code is not right, or it was used already.",
        "totp_expired" => "The sign-in took too long. Please start again.",
        _ => "Sign-in failed. Please try again.",
    }
}

/// The notice of a failed attempt's error code, if any.
fn error_notice(error: Option<&str>) -> String {
    error
        .map(|code| {
            format!(
                "<p class=\"error\" role=\"alert\" data-error=\"{}\">{}</p>",
                escape(code),
                escape(error_text(code))
            )
        })
        .unwrap_or_default()
}

/// The sign-in page: one button per provider and the credentials form.
/// `providers` are the identity providers' ids and names.
pub fn signin(
    server: &ServerSettings,
    providers: &[(&str, &str)],
    csrf_token: &str,
    callback: &str,
    error: Option<&str>,
) -> String {
    let app = &server.app_name;
    let callback_query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("callbackUrl", callback)
        .finish();
    let mut body = format!("<h1>Sign in to {}</h1>", escape(app));
    body.push_str(&error_notice(error));
    for (id, name) in providers {
        body.push_str(&format!(
            "<a class=\"provider\" data-provider=\"{id}\" href=\"/api/auth/signin/{id}?{query}\">Sign in with {name}</a>",
            id = escape(id),
            query = escape(&callback_query),
            name = escape(name),
        ));
    }
    if !providers.is_empty() {
        body.push_str("<hr>");
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"/api/auth/signin\">\
         <input type=\"hidden\" name=\"csrfToken\" value=\"{csrf}\">\
         <input type=\"hidden\" name=\"callbackUrl\" value=\"{callback}\">\
         <label for=\"email\">Email</label><input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"email\" required>\
         <label for=\"password\">Password</label><input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required>\
         <button type=\"submit\">Sign in with email</button></form>\
         <p class=\"aside\"><a href=\"/forgot-password\">Forgot password?</a></p>",
        csrf = escape(csrf_token),
        callback = escape(callback),
    ));
    page(&format!("Sign in · {app}"), &body)
}

/// The page that asks for the email of an account whose password is
/// forgotten; `sent` after the request, which says the same whether or not
/// the address has an account.
pub fn forgot_password(
    server: &ServerSettings,
    csrf_token: &str,
    sent: bool,
    error: Option<&str>,
) -> String {
    let app = &server.app_name;
    let mut body = "<h1>Forgot your password?</h1>".to_owned();
    body.push_str(&error_notice(error));
    if sent {
        body.push_str(
            "<p class=\"notice\" role=\"status\" data-notice=\"sent\">If an account uses that \
             address, a link to choose a new password is on its way. It works once, for an hour.</p>",
        );
    } else {
        body.push_str("<p>Enter the email address of your account and we will mail you a link to choose a new password.</p>");
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"/api/auth/password/forgot\">\
         <input type=\"hidden\" name=\"csrfToken\" value=\"{csrf}\">\
         <label for=\"email\">Email</label><input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"email\" required>\
         <button type=\"submit\">Mail me a link</button></form>\
         <p class=\"aside\"><a href=\"/api/auth/signin\">Back to sign-in</a></p>",
        csrf = escape(csrf_token),
    ));
    page(&format!("Forgot password · {app}"), &body)
}

/// What the reset page shows.
pub enum ResetPage<'a> {
    /// The form for the link's token.
    Form {
        token: &'a str,
        error: Option<&'a str>,
    },
    /// The link has no token, or it was refused.
    Broken { error: &'a str },
    /// The password was set.
    Done,
}

/// The page a reset link opens: the new password, twice.
pub fn reset_password(server: &ServerSettings, csrf_token: &str, shown: ResetPage<'_>) -> String {
    let app = &server.app_name;
    let mut body = "<h1>Choose a new password</h1>".to_owned();
    match shown {
        ResetPage::Form { token, error } => {
            body.push_str(&error_notice(error));
            body.push_str(&format!(
                "<form method=\"post\" action=\"/api/auth/password/reset\">\
                 <input type=\"hidden\" name=\"csrfToken\" value=\"{csrf}\">\
                 <input type=\"hidden\" name=\"token\" value=\"{token}\">\
                 <label for=\"password\">New password</label><input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"new-password\" minlength=\"8\" required>\
                 <label for=\"passwordConfirm\">The same again</label><input id=\"passwordConfirm\" name=\"passwordConfirm\" type=\"password\" autocomplete=\"new-password\" minlength=\"8\" required>\
                 <button type=\"submit\">Set the password</button></form>\
                 <p class=\"aside\">Setting it signs you out everywhere.</p>",
                csrf = escape(csrf_token),
                token = escape(token),
            ));
        }
        ResetPage::Broken { error } => {
            body.push_str(&error_notice(Some(error)));
            body.push_str(
                "<p class=\"aside\"><a href=\"/forgot-password\">Ask for a new link</a></p>",
            );
        }
        ResetPage::Done => body.push_str(
            "<p class=\"notice\" role=\"status\" data-notice=\"reset\">Your new password is set, \
             and every session of your account has ended.</p>\
             <p class=\"aside\"><a href=\"/api/auth/signin\">Sign in</a></p>",
        ),
    }
    page(&format!("New password · {app}"), &body)
}

/// What the page of a ban mail's appeal link shows.
pub enum AppealPage<'a> {
    /// The form for the link's token; `error` names what was wrong with
    /// the last post (`text`).
    Form {
        token: &'a str,
        error: Option<&'a str>,
    },
    /// The link carries no token a mail gave.
    Unknown,
    /// The appeal window is over (`days` long).
    Expired { days: u32 },
    /// The ban is appealed already.
    Used,
    /// The appeal was just sent.
    Sent,
}

/// The page a ban mail's appeal link opens: the member writes why the ban
/// was wrong, or learns why the link no longer takes an appeal.
pub fn appeal(server: &ServerSettings, csrf_token: &str, shown: AppealPage<'_>) -> String {
    let app = &server.app_name;
    let mut body = "<h1>Appeal a ban</h1>".to_owned();
    let refusal = |code: &str, text: &str| {
        format!("<p class=\"error\" role=\"alert\" data-error=\"{code}\">{text}</p>")
    };
    match shown {
        AppealPage::Form { token, error } => {
            if error == Some("text") {
                body.push_str(&refusal(
                    "text",
                    "Write between 10 and 2,000 characters about why the ban was wrong.",
                ));
            }
            body.push_str(&format!(
                "<p>Tell the moderators why the ban was wrong. Someone other than who banned you \
                 decides, and you are told the decision.</p>\
                 <form method=\"post\" action=\"/appeal\">\
                 <input type=\"hidden\" name=\"csrfToken\" value=\"{csrf}\">\
                 <input type=\"hidden\" name=\"token\" value=\"{token}\">\
                 <label for=\"text\">Your appeal (10 to 2,000 characters)</label>\
                 <textarea id=\"text\" name=\"text\" rows=\"8\" minlength=\"10\" maxlength=\"2000\" required></textarea>\
                 <button type=\"submit\">Send the appeal</button></form>",
                csrf = escape(csrf_token),
                token = escape(token),
            ));
        }
        AppealPage::Unknown => body.push_str(&refusal(
            "invalid_token",
            "This link is not valid. Open the whole link from the mail that told you of the ban.",
        )),
        AppealPage::Expired { days } => body.push_str(&refusal(
            "expired",
            &format!("This link has expired: a ban is appealed within {days} days of it."),
        )),
        AppealPage::Used => body.push_str(&refusal(
            "used",
            "This ban has been appealed already. A moderator decides the appeal, and you are told \
             the decision.",
        )),
        AppealPage::Sent => body.push_str(
            "<p class=\"notice\" role=\"status\" data-notice=\"sent\">Your appeal is sent. A \
             moderator other than who banned you decides it, and you are told the decision.</p>",
        ),
    }
    page(&format!("Appeal · {app}"), &body)
}

/// The page a verification link opens in a browser.
pub fn email_verification(server: &ServerSettings, verified: bool) -> String {
    let app = &server.app_name;
    let body = if verified {
        format!(
            "<h1>Email address confirmed</h1><p class=\"notice\" role=\"status\" data-notice=\"verified\">\
             Thank you: your address at {} is confirmed.</p>\
             <p class=\"aside\"><a href=\"/api/auth/signin\">Sign in</a></p>",
            escape(app)
        )
    } else {
        "<h1>This link does not work</h1>\
         <p class=\"error\" role=\"alert\" data-error=\"invalid_token\">It is invalid, expired or \
         already used. Sign in and ask for a new confirmation mail.</p>\
         <p class=\"aside\"><a href=\"/api/auth/signin\">Sign in</a></p>"
            .to_owned()
    };
    page(&format!("Email confirmation · {app}"), &body)
}

/// What the page of a mail's unsubscribe link shows.
pub enum UnsubscribePage<'a> {
    /// A button that turns the mails off (a visit alone changes nothing,
    /// so a link scanner opening it does not unsubscribe anyone).
    Confirm { token: &'a str, about: &'a str },
    /// The mails are off.
    Done { about: &'a str },
    /// The link's token is not one Plaza signed.
    Broken,
}

/// The page a notification mail's "Turn these mails off" link opens.
pub fn unsubscribe(server: &ServerSettings, shown: UnsubscribePage<'_>) -> String {
    let app = &server.app_name;
    let body = match shown {
        UnsubscribePage::Confirm { token, about } => format!(
            "<h1>Turn these mails off</h1><p>Stop mailing you about {about} from {app}? \
             The notifications stay in the app, and you can turn the mails on again \
             in your notification preferences.</p>\
             <form method=\"post\" action=\"/unsubscribe?token={token}\">\
             <button type=\"submit\">Turn them off</button></form>",
            about = escape(about),
            app = escape(app),
            token = escape(token),
        ),
        UnsubscribePage::Done { about } => format!(
            "<h1>Mails turned off</h1><p class=\"notice\" role=\"status\" \
             data-notice=\"unsubscribed\">You will get no more mails about {} from {}.</p>",
            escape(about),
            escape(app)
        ),
        UnsubscribePage::Broken => "<h1>This link does not work</h1>\
             <p class=\"error\" role=\"alert\" data-error=\"invalid_token\">It is not the \
             link of a notification mail. Change which mails you get in your notification \
             preferences.</p>"
            .to_owned(),
    };
    page(&format!("Mail from {app}"), &body)
}

/// The second step of a sign-in with two-factor sign-in on: the code of
/// the sign-in waiting under the browser's `plaza_2fa` cookie.
pub fn signin_second_factor(
    server: &ServerSettings,
    csrf_token: &str,
    error: Option<&str>,
) -> String {
    let app = &server.app_name;
    let mut body = "<h1>Two-factor sign-in</h1>".to_owned();
    body.push_str(&error_notice(error));
    body.push_str(&format!(
        "<p>Enter the code your authenticator app shows, or one of your recovery codes.</p>\
         <form method=\"post\" action=\"/api/auth/signin\">\
         <input type=\"hidden\" name=\"csrfToken\" value=\"{csrf}\">\
         <label for=\"totp\">Code</label><input id=\"totp\" name=\"totp\" type=\"text\" \
         inputmode=\"numeric\" autocomplete=\"one-time-code\" required autofocus>\
         <button type=\"submit\">Verify</button></form>\
         <p><a href=\"/api/auth/signin\">Start again</a></p>",
        csrf = escape(csrf_token),
    ));
    page(&format!("Sign in · {app}"), &body)
}

/// The sign-out page.
pub fn signout(server: &ServerSettings, csrf_token: &str) -> String {
    let app = &server.app_name;
    let body = format!(
        "<h1>Sign out of {app}</h1><p>Are you sure you want to sign out?</p>\
         <form method=\"post\" action=\"/api/auth/signout\">\
         <input type=\"hidden\" name=\"csrfToken\" value=\"{csrf}\">\
         <button type=\"submit\">Sign out</button></form>",
        app = escape(app),
        csrf = escape(csrf_token),
    );
    page(&format!("Sign out · {app}"), &body)
}

/// The share-image viewer: the image, with Open Graph and Twitter card tags
/// for whoever unfurls the page, and its size shown once it has loaded.
pub fn og_viewer(server: &ServerSettings, image_path: &str) -> String {
    let app = escape(&server.app_name);
    let base = server.base_url.as_str().trim_end_matches('/');
    let image = escape(&format!("{base}{image_path}"));
    let local = escape(image_path);
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{app}</title>\
         <meta property=\"og:title\" content=\"{app}\">\
         <meta property=\"og:type\" content=\"website\">\
         <meta property=\"og:image\" content=\"{image}\">\
         <meta property=\"og:image:width\" content=\"1200\"><meta property=\"og:image:height\" content=\"630\">\
         <meta name=\"twitter:card\" content=\"summary_large_image\">\
         <meta name=\"twitter:image\" content=\"{image}\">\
         <style>body{{margin:0;background:#0b0d17;color:#ddd;font-family:system-ui,sans-serif;display:flex;\
         flex-direction:column;align-items:center;justify-content:center;min-height:100vh}}\
         img{{max-width:min(1200px,96vw);height:auto;border-radius:8px;box-shadow:0 4px 24px #0008}}</style>\
         </head><body><img id=\"card\" src=\"{local}\" width=\"1200\" height=\"630\" alt=\"Share image\">\
         <p id=\"size\"></p><script>const card=document.getElementById('card');\
         const show=()=>{{document.getElementById('size').textContent=card.naturalWidth+' x '+card.naturalHeight;}};\
         card.complete&&card.naturalWidth?show():card.addEventListener('load',show);</script></body></html>"
    )
}

/// The policy of every operator console page: everything from the
/// console's own origin, nothing inline, no framing, forms posted home.
pub const CONSOLE_CSP: &str =
    "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/// An operator console page that says why a request failed, with a way
/// back to the console; `fields` are the fields at fault, each with its
/// reason.
pub fn console_error<'a>(
    status: axum::http::StatusCode,
    title: &str,
    message: &str,
    fields: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> axum::response::Response {
    use axum::http::header;
    use axum::response::IntoResponse;
    let problems: String = fields
        .into_iter()
        .map(|(field, reason)| {
            format!(
                "<li><strong>{}</strong>: {}</li>",
                escape(field),
                escape(reason)
            )
        })
        .collect();
    let problems = if problems.is_empty() {
        String::new()
    } else {
        format!("<ul>{problems}</ul>")
    };
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{title} · Plaza console</title>\
         <link rel=\"stylesheet\" href=\"/admin/assets/console.css\"></head>\
         <body><main class=\"narrow\"><h1>{title}</h1><p class=\"error\" role=\"alert\">{message}</p>\
         {problems}<p><a href=\"/admin/\">Back to the console</a></p></main></body></html>",
        title = escape(title),
        message = escape(message),
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, CONSOLE_CSP),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
