//! User accounts: creation, lookup, status and sign-in bookkeeping.
//!
//! `model` says what a user is, `query` reads and lists users, `writes`
//! creates, changes and deletes them, and `admin_list` holds what the admin
//! surfaces read (their user list and a user's recent activity); everything
//! is used through this module's names.

mod admin_list;
mod model;
mod query;
mod writes;

pub use admin_list::{Activity, AdminUserPage};
pub(crate) use model::USER_COLUMNS;
pub use model::{
    NewUser, Role, User, UserChanges, UserRow, UserStatus, is_valid_username, normalize_email,
    username_base,
};
pub(crate) use query::ALL_USERS_TOTAL;
pub use query::{UserPage, UserQuery, UserSort};
pub use writes::{
    Verified, create, delete, record_login, reset_password, revoke_credentials, set_password,
    set_role, set_status, update, user_in, verify_email_securely,
};
