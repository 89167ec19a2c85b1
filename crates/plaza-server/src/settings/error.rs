//! A setting that cannot be used, named as the operator wrote it, and the
//! checks every section shares. The sections import this, not the module
//! that gathers them, so the settings import one another one way.

/// The prefix of every environment variable Plaza reads.
pub const ENV_PREFIX: &str = "PLAZA_";

/// A setting that cannot be used, with the name the operator wrote it under.
#[derive(Debug, thiserror::Error)]
#[error("invalid setting {setting}: {problem}")]
pub struct SettingsError {
    pub setting: String,
    pub problem: String,
}

impl SettingsError {
    pub(super) fn new(key: &str, problem: impl Into<String>) -> Self {
        SettingsError {
            setting: format!("`{key}` ({ENV_PREFIX}{})", key.to_uppercase()),
            problem: problem.into(),
        }
    }
}

/// Fails with the first setting in `pairs` that is zero.
pub(super) fn at_least_one<T: PartialEq + Default>(
    pairs: impl IntoIterator<Item = (&'static str, T)>,
) -> Result<(), SettingsError> {
    for (key, value) in pairs {
        if value == T::default() {
            return Err(SettingsError::new(key, "must be at least 1"));
        }
    }
    Ok(())
}
