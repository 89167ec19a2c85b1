//! The domain's modules use one another without a circle: each module can
//! be read knowing only the modules it uses, and the building blocks
//! (`db`, `dialect`, `listing`, `time`, ...) use no resource module.
//!
//! A module is a file of `src/` or a folder of it; what it uses is every
//! `crate::` path in its code (comments aside), a name that `lib.rs`
//! re-exports counting as the module it comes from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The code of `source` without its comment lines.
fn code(source: &str) -> String {
    source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every identifier at the head of a `crate::` path in `source`: the `x`
/// of `crate::x::…` and `crate::x`, and each item of `crate::{a, b::c}`.
fn crate_heads(source: &str) -> BTreeSet<String> {
    let mut heads = BTreeSet::new();
    let mut rest = source;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for item in inner.split(',') {
                let head = item.trim().split("::").next().unwrap_or("").trim();
                if !head.is_empty() {
                    heads.insert(head.to_owned());
                }
            }
        } else {
            let head: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            heads.insert(head);
        }
    }
    heads
}

/// The names `lib.rs` re-exports (`pub use module::{A, B};`), each with
/// the module it comes from.
fn re_exports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for line in lib.lines() {
        let Some(path) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let path = path.trim_end_matches(';');
        let Some((module, items)) = path.split_once("::") else {
            continue;
        };
        for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
            names.insert(item.trim().to_owned(), module.to_owned());
        }
    }
    names
}

/// Each module of `src` (by name) with the source of all its files.
fn modules(src: &Path) -> BTreeMap<String, String> {
    fn read_all(path: &Path, into: &mut String) {
        if path.is_dir() {
            let mut entries: Vec<_> = std::fs::read_dir(path)
                .expect("read a module folder")
                .map(|entry| entry.expect("a folder entry").path())
                .collect();
            entries.sort();
            for entry in entries {
                read_all(&entry, into);
            }
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            into.push_str(&std::fs::read_to_string(path).expect("read a source file"));
            into.push('\n');
        }
    }
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(src).expect("read src") {
        let path = entry.expect("an entry of src").path();
        let name = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .expect("a file name")
            .to_owned();
        if name == "lib" {
            continue;
        }
        let mut source = String::new();
        read_all(&path, &mut source);
        modules.insert(name, source);
    }
    modules
}

/// The modules each module uses, other than itself.
fn uses(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("read lib.rs");
    let re_exported = re_exports(&lib);
    let modules = modules(src);
    modules
        .iter()
        .map(|(name, source)| {
            let used = crate_heads(&code(source))
                .into_iter()
                .filter_map(|head| match re_exported.get(&head) {
                    Some(module) => Some(module.clone()),
                    None => modules.contains_key(&head).then_some(head),
                })
                .filter(|used| used != name)
                .collect();
            (name.clone(), used)
        })
        .collect()
}

/// A circle of `uses`, as the modules along it, if there is one.
fn circle(uses: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        uses: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|on_path| on_path == module) {
            let mut found = path[start..].to_vec();
            found.push(module.to_owned());
            return Some(found);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_owned());
        for next in uses.get(module).into_iter().flatten() {
            if let Some(found) = visit(next, uses, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(module.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    uses.keys()
        .find_map(|module| visit(module, uses, &mut Vec::new(), &mut done))
}

#[test]
fn the_domain_modules_use_one_another_without_a_circle() {
    let uses = uses(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(uses.len() > 20, "the modules were found");
    assert!(uses["search"].contains("posts") && uses["posts"].contains("dialect"));
    if let Some(found) = circle(&uses) {
        panic!(
            "these modules use one another in a circle: {}",
            found.join(" -> ")
        );
    }
}

#[test]
fn paths_re_exports_and_comments_are_read_as_the_modules_they_name() {
    let source = "//! crate::search\nuse crate::listing::{Arg, Page};\n\
                  use crate::{Backend, DomainError, users::Role};\nlet x = crate::posts::create;";
    let heads = crate_heads(&code(source));
    assert_eq!(
        heads.into_iter().collect::<Vec<_>>(),
        ["Backend", "DomainError", "listing", "posts", "users"]
    );
    let lib = "pub use db::{Database, Tx};\npub use dialect::Backend;\n";
    let names = re_exports(lib);
    assert_eq!(names["Backend"], "dialect");
    assert_eq!(names["Tx"], "db");
    let circular = BTreeMap::from([
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]);
    assert_eq!(
        circle(&circular),
        Some(vec!["a".into(), "b".into(), "a".into()])
    );
}
