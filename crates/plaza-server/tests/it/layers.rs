//! The server's folders are its layers: nothing below the controllers
//! imports one. Only the router (`app.rs`) and the controllers themselves
//! may name `controllers`, so a handler's types never become a dependency
//! of the plumbing, the services or the settings beneath it.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read the source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

/// The lines of `source` that refer to the controllers in code (comments
/// may name them).
fn controller_references(source: &str) -> Vec<String> {
    source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .filter(|line| line.contains("controllers::"))
        .map(|line| line.trim().to_owned())
        .collect()
}

#[test]
fn nothing_below_the_controllers_imports_a_controller() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(files.len() > 50, "the sources were found");
    let mut offenders = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&root).expect("under src");
        if relative.starts_with("controllers") || relative == Path::new("app.rs") {
            continue;
        }
        let source = std::fs::read_to_string(&file).expect("read a source file");
        for line in controller_references(&source) {
            offenders.push(format!("{}: {line}", relative.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "below the controllers, these lines import one:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn a_controller_reference_in_code_is_found_and_one_in_a_comment_is_not() {
    let source = "//! see `controllers::emojis`\nuse crate::controllers::users::UserView;\n";
    assert_eq!(
        controller_references(source),
        ["use crate::controllers::users::UserView;"]
    );
}
