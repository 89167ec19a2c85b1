//! Where the settings come from on disk, for the service and the command
//! line alike: the settings file (`--config`, `PLAZA_CONFIG`, else
//! `plaza.toml` in the working directory, else the package's
//! `/etc/plaza/plaza.toml`), and the `plaza.env` file beside it, whose
//! `KEY=value` lines (secrets, `PLAZA_DATABASE_URL`, `AWS_*`) are read into
//! the environment before the settings are loaded (by `main`, before any
//! other thread starts). A variable already in the environment wins over
//! the file's line.

use std::path::{Path, PathBuf};

use super::error::SettingsError;

/// The settings file the Debian package installs.
pub const PACKAGE_CONFIG: &str = "/etc/plaza/plaza.toml";

/// The name of the environment file read from the settings file's folder.
pub const ENV_FILE_NAME: &str = "plaza.env";

/// The settings file in use: the one given, else `plaza.toml` in the
/// working directory, else the package's, when they exist.
pub fn config_file(given: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = given {
        return Some(path.to_owned());
    }
    [Path::new("plaza.toml"), Path::new(PACKAGE_CONFIG)]
        .into_iter()
        .find(|path| path.exists())
        .map(Path::to_owned)
}

/// The `plaza.env` beside `config`, when there is one, and its variables
/// (for `main` to put into the environment, those not set already, before
/// any other thread starts); a file that exists but cannot be read stops
/// start-up.
pub fn env_file(config: Option<&Path>) -> Result<Option<EnvFile>, SettingsError> {
    let Some(config) = config else {
        return Ok(None);
    };
    let path = config
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(ENV_FILE_NAME);
    if !path.exists() {
        return Ok(None);
    }
    let failed = |problem: String| SettingsError {
        setting: format!("the environment file {}", path.display()),
        problem,
    };
    let text = std::fs::read_to_string(&path).map_err(|error| {
        failed(format!(
            "cannot be read ({error}); the service and the command line both read it: run the \
             command as the service's user (`sudo -u plaza`) or as root"
        ))
    })?;
    let variables = parse(&text).map_err(failed)?;
    Ok(Some(EnvFile { path, variables }))
}

/// An environment file read: where, and its `KEY=value` pairs in order.
#[derive(Debug)]
pub struct EnvFile {
    pub path: PathBuf,
    pub variables: Vec<(String, String)>,
}

/// The `KEY=value` lines of an environment file as systemd's
/// `EnvironmentFile=` reads them: blank lines and `#` comments skipped, a
/// value in single or double quotes unquoted.
fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut variables = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!("line {} is not KEY=value", index + 1));
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("line {} names no variable", index + 1));
        }
        let value = value.trim();
        let value = ['"', '\'']
            .into_iter()
            .find_map(|quote| {
                value
                    .strip_prefix(quote)
                    .and_then(|rest| rest.strip_suffix(quote))
            })
            .unwrap_or(value);
        variables.push((key.to_owned(), value.to_owned()));
    }
    Ok(variables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_as_systemd_reads_them() {
        let pairs = parse(
            "# secrets\n\nPLAZA_DATABASE_URL=postgres://u:p@h/db\nPLAZA_SMTP_URL = \"smtp://h:25\"\nAWS_REGION='eu'\n",
        )
        .unwrap();
        assert_eq!(
            pairs,
            [
                ("PLAZA_DATABASE_URL", "postgres://u:p@h/db"),
                ("PLAZA_SMTP_URL", "smtp://h:25"),
                ("AWS_REGION", "eu"),
            ]
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
        );
        assert!(parse("export PLAZA_X=1\n").is_err());
        assert!(parse("just words\n").is_err());
    }
}
