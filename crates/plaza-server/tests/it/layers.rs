//! The server's layers, held by reading its import graph. Every file of
//! `src/` stands on one floor of [`FLOORS`] (bottom first). The graph's
//! edges are the files' imports: `use` declarations, and paths in code that
//! start at `crate`, `super`, `self` or a child module of the file, each
//! leading to the file of the deepest module it names (a macro exported
//! at the crate's root, to the file that defines it). An import stays on its
//! floor or goes down, never up; and no files import one another round a
//! circle, a folder's `mod.rs` and its own files included. Each test fails
//! naming the edge. docs/architecture.md ("Layers") describes the floors.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::Path;

/// The floors, bottom first, each with the files it holds: a folder (`x/`)
/// or a file (`x.rs`), under `src/`. `main.rs` is the binary's own crate,
/// which reaches the library by its name from above everything.
const FLOORS: &[(&str, &[&str])] = &[
    (
        "ground",
        &[
            "settings/",
            "telemetry.rs",
            "secrets.rs",
            "startup.rs",
            "serving.rs",
        ],
    ),
    ("services", &["services/"]),
    ("http", &["http/"]),
    ("auth", &["auth/"]),
    ("state", &["state.rs"]),
    ("controllers", &["controllers/"]),
    ("top", &["app.rs", "jobs.rs", "cli/", "lib.rs"]),
];

/// The floor of `file` (a path under `src/`), by the longest entry naming it.
fn floor_of(file: &str) -> Option<usize> {
    FLOORS
        .iter()
        .enumerate()
        .flat_map(|(floor, (_, entries))| entries.iter().map(move |entry| (floor, *entry)))
        .filter(|(_, entry)| {
            if entry.ends_with('/') {
                file.starts_with(entry)
            } else {
                file == *entry
            }
        })
        .max_by_key(|(_, entry)| entry.len())
        .map(|(floor, _)| floor)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

/// The tokens of `source` that can name a module: identifiers, `::` and
/// punctuation. Comments, string and character literals and numbers are
/// left out, so a path written in them imports nothing.
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let at = |index: usize| chars.get(index).copied().unwrap_or('\0');
    let mut found = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if c.is_whitespace() {
            index += 1;
        } else if c == '/' && at(index + 1) == '/' {
            while index < chars.len() && chars[index] != '\n' {
                index += 1;
            }
        } else if c == '/' && at(index + 1) == '*' {
            let mut depth = 0;
            while index < chars.len() {
                if chars[index] == '/' && at(index + 1) == '*' {
                    depth += 1;
                    index += 2;
                } else if chars[index] == '*' && at(index + 1) == '/' {
                    depth -= 1;
                    index += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    index += 1;
                }
            }
        } else if c == '"' {
            let end = past_quoted(&chars, index + 1, '"');
            if names_a_function(&found) {
                let inside: String = chars[index + 1..end - 1].iter().collect();
                found.extend(tokens(&inside));
            }
            index = end;
        } else if c == '\'' {
            // A character literal, or else a lifetime (whose name follows).
            if at(index + 1) == '\\' {
                index = past_quoted(&chars, index + 1, '\'');
            } else if at(index + 2) == '\'' {
                index += 3;
            } else {
                index += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = index;
            while at(index).is_alphanumeric() || at(index) == '_' {
                index += 1;
            }
            let word: String = chars[start..index].iter().collect();
            match (word.as_str(), at(index)) {
                ("r" | "br", '"' | '#') => {
                    let mut hashes = 0;
                    while at(index + hashes) == '#' {
                        hashes += 1;
                    }
                    if at(index + hashes) == '"' {
                        index = past_raw(&chars, index + hashes + 1, hashes);
                    } else {
                        // A raw identifier, `r#name`: the name follows.
                        index += hashes;
                    }
                }
                ("b", '"') => index = past_quoted(&chars, index + 1, '"'),
                ("b", '\'') => index = past_quoted(&chars, index + 1, '\''),
                _ => found.push(Token::Ident(word)),
            }
        } else if c.is_ascii_digit() {
            while at(index).is_alphanumeric() || at(index) == '_' {
                index += 1;
            }
        } else if c == ':' && at(index + 1) == ':' {
            found.push(Token::PathSep);
            index += 2;
        } else {
            found.push(Token::Punct(c));
            index += 1;
        }
    }
    found
}

/// Whether a string that follows `found` is a path in code: serde's
/// `with = "…"`, `deserialize_with = "…"` and the like name a function.
fn names_a_function(found: &[Token]) -> bool {
    const KEYS: [&str; 4] = ["with", "serialize_with", "deserialize_with", "default"];
    matches!(
        found,
        [.., Token::Ident(key), Token::Punct('=')] if KEYS.contains(&key.as_str())
    )
}

/// The index after the literal that `close` ends, from `start` (inside it).
fn past_quoted(chars: &[char], start: usize, close: char) -> usize {
    let mut index = start;
    while index < chars.len() && chars[index] != close {
        index += if chars[index] == '\\' { 2 } else { 1 };
    }
    index + 1
}

/// The index after a raw string opened with `hashes` hashes, from `start`.
fn past_raw(chars: &[char], start: usize, hashes: usize) -> usize {
    let mut index = start;
    while index < chars.len() {
        if chars[index] == '"' && (1..=hashes).all(|n| chars.get(index + n) == Some(&'#')) {
            return index + 1 + hashes;
        }
        index += 1;
    }
    index
}

/// The paths of a `use` tree (from after `use` up to its `;`), each whole:
/// `a::{b, c::d}` is `a::b` and `a::c::d`; a glob names its module.
fn use_paths(
    tree: &[Token],
    position: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) {
    let mut path = prefix;
    while let Some(token) = tree.get(*position) {
        *position += 1;
        match token {
            Token::PathSep => {}
            Token::Ident(name) => {
                // `self` in braces names the module the braces follow.
                if name != "self" || path.is_empty() {
                    path.push(name.clone());
                }
                if tree.get(*position) == Some(&Token::PathSep) {
                    continue;
                }
                if tree.get(*position) == Some(&Token::Ident("as".to_owned())) {
                    *position += 2;
                }
                out.push(path);
                return;
            }
            Token::Punct('{') => {
                while let Some(inner) = tree.get(*position) {
                    match inner {
                        Token::Punct('}') => {
                            *position += 1;
                            return;
                        }
                        Token::Punct(',') => *position += 1,
                        _ => use_paths(tree, position, path.clone(), out),
                    }
                }
                return;
            }
            Token::Punct(_) => {
                out.push(path);
                return;
            }
        }
    }
}

/// The module path of a file under `src/`: `lib.rs` is the root, `x/mod.rs`
/// is `x`.
fn module_of(file: &str) -> Vec<String> {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    let stem = stem.strip_suffix("/mod").unwrap_or(stem);
    if stem == "lib" {
        return Vec::new();
    }
    stem.split('/').map(str::to_owned).collect()
}

/// The files of the crate and who imports whom.
struct Graph {
    /// File → module path.
    files: BTreeMap<String, Vec<String>>,
    /// (importer, imported) → the paths that import, as written.
    edges: BTreeMap<(String, String), BTreeSet<String>>,
}

impl Graph {
    /// Reads `sources` (path under `src/` → text).
    fn read(sources: &BTreeMap<String, String>) -> Graph {
        let files: BTreeMap<String, Vec<String>> = sources
            .keys()
            .map(|file| (file.clone(), module_of(file)))
            .collect();
        let file_of: HashMap<Vec<String>, String> = files
            .iter()
            .map(|(file, module)| (module.clone(), file.clone()))
            .collect();
        let tokens: BTreeMap<&String, Vec<Token>> = sources
            .iter()
            .map(|(file, source)| (file, tokens(source)))
            .collect();
        let mut macros = HashMap::new();
        for (file, found) in &tokens {
            let exported = found
                .iter()
                .position(|token| *token == Token::Ident("macro_export".to_owned()));
            for window in found[exported.unwrap_or(found.len())..].windows(3) {
                if let [Token::Ident(word), Token::Punct('!'), Token::Ident(name)] = window
                    && word == "macro_rules"
                {
                    macros.insert(name.clone(), (*file).clone());
                }
            }
        }
        let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for (file, found) in &tokens {
            let own = &files[*file];
            for (path, written) in paths(found, own) {
                let target = match path.as_slice() {
                    [root, name] if root == "crate" && macros.contains_key(name) => {
                        Some(macros[name].clone())
                    }
                    _ => resolve(own, &path, &|module| file_of.contains_key(module))
                        .map(|module| file_of[&module].clone()),
                };
                if let Some(target) = target
                    && target != **file
                {
                    edges
                        .entry(((*file).clone(), target))
                        .or_default()
                        .insert(written);
                }
            }
        }
        Graph { files, edges }
    }

    fn used(&self, from: &str, to: &str) -> String {
        let key = (from.to_owned(), to.to_owned());
        let paths: Vec<&str> = self.edges[&key].iter().map(String::as_str).collect();
        format!("`{}`", paths.join("`, `"))
    }

    /// Each import that runs up a floor, named.
    fn running_up(&self) -> Vec<String> {
        self.edges
            .keys()
            .filter_map(|(from, to)| {
                let (low, high) = (floor_of(from)?, floor_of(to)?);
                (high > low).then(|| {
                    format!(
                        "{from} -> {to} ({}): {} imports {}, a floor above it",
                        self.used(from, to),
                        FLOORS[low].0,
                        FLOORS[high].0
                    )
                })
            })
            .collect()
    }

    /// Each circle of files, as one loop through it with the imports that
    /// close it.
    fn circles(&self) -> Vec<String> {
        let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (from, to) in self.edges.keys() {
            next.entry(from).or_default().push(to);
        }
        strongly_connected(
            &self.files.keys().map(String::as_str).collect::<Vec<_>>(),
            &next,
        )
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let members: BTreeSet<&str> = component.iter().copied().collect();
            let start = *members.first().expect("not empty");
            let loop_files = shortest_loop(start, &members, &next);
            let mut text = format!("{} files: {start}", members.len());
            for pair in loop_files.windows(2) {
                text.push_str(&format!(
                    " -> {} ({})",
                    pair[1],
                    self.used(pair[0], pair[1])
                ));
            }
            let others: Vec<&str> = members
                .iter()
                .copied()
                .filter(|member| !loop_files.contains(member))
                .collect();
            if !others.is_empty() {
                text.push_str(&format!("; and in the same circle: {}", others.join(", ")));
            }
            text
        })
        .collect()
    }
}

/// The paths a file's tokens use, with their text; `own` is the file's
/// module. Tracks inline modules (`mod tests { … }`), which `super` leaves.
fn paths(found: &[Token], own: &[String]) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut index = 0;
    while index < found.len() {
        let current: Vec<String> = own
            .iter()
            .cloned()
            .chain(inline.iter().map(|(name, _)| name.clone()))
            .collect();
        match &found[index] {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, opened)| *opened == depth) {
                    inline.pop();
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Punct('{'))) =
                    (found.get(index + 1), found.get(index + 2))
                {
                    inline.push((name.clone(), depth));
                }
                index += 1;
            }
            // Not `use<…>`, the lifetimes an `impl Trait` captures.
            Token::Ident(word)
                if word == "use" && found.get(index + 1) != Some(&Token::Punct('<')) =>
            {
                let end = found[index..]
                    .iter()
                    .position(|token| *token == Token::Punct(';'))
                    .map_or(found.len(), |offset| index + offset);
                let tree = &found[index + 1..end];
                let mut position = 0;
                let mut trees = Vec::new();
                while position < tree.len() {
                    use_paths(tree, &mut position, Vec::new(), &mut trees);
                }
                for path in trees {
                    let written = path.join("::");
                    out.push((relative_to(&current, path), written));
                }
                index = end;
            }
            Token::Ident(first)
                if found.get(index + 1) == Some(&Token::PathSep)
                    && index.checked_sub(1).and_then(|before| found.get(before))
                        != Some(&Token::PathSep) =>
            {
                let mut path = vec![first.clone()];
                while let (Some(Token::PathSep), Some(Token::Ident(name))) =
                    (found.get(index + 1), found.get(index + 2))
                {
                    path.push(name.clone());
                    index += 2;
                }
                let written = path.join("::");
                out.push((relative_to(&current, path), written));
            }
            _ => {}
        }
        index += 1;
    }
    out
}

/// `path` with `self` and `super` at its start replaced by the modules
/// they name from `current`, and `crate` kept; other paths as they are.
fn relative_to(current: &[String], path: Vec<String>) -> Vec<String> {
    if !matches!(path.first().map(String::as_str), Some("self" | "super")) {
        return path;
    }
    let mut module = current.to_vec();
    let mut rest = path.as_slice();
    while let Some((first, tail)) = rest.split_first() {
        match first.as_str() {
            "super" => {
                module.pop();
            }
            "self" => {}
            _ => break,
        }
        rest = tail;
    }
    ["crate".to_owned()]
        .into_iter()
        .chain(module)
        .chain(rest.iter().cloned())
        .collect()
}

/// The deepest module of the crate that `path` names from `own`: from the
/// root (`crate::…`), or through a child module of `own`; `None` for a path
/// into another crate or a local name.
fn resolve(
    own: &[String],
    path: &[String],
    is_module: &dyn Fn(&[String]) -> bool,
) -> Option<Vec<String>> {
    let (mut module, rest) = match path.split_first()? {
        (root, rest) if root == "crate" => (Vec::new(), rest),
        (child, _) => {
            let mut under = own.to_vec();
            under.push(child.clone());
            if !is_module(&under) {
                return None;
            }
            (own.to_vec(), path)
        }
    };
    for segment in rest {
        let mut deeper = module.clone();
        deeper.push(segment.clone());
        if !is_module(&deeper) {
            break;
        }
        module = deeper;
    }
    Some(module)
}

/// Tarjan's strongly connected components of the graph `next` over `nodes`.
fn strongly_connected<'a>(
    nodes: &[&'a str],
    next: &BTreeMap<&'a str, Vec<&'a str>>,
) -> Vec<Vec<&'a str>> {
    struct Walk<'a, 'g> {
        next: &'g BTreeMap<&'a str, Vec<&'a str>>,
        index: HashMap<&'a str, usize>,
        low: HashMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<&'a str>>,
    }
    impl<'a> Walk<'a, '_> {
        fn visit(&mut self, node: &'a str) {
            let order = self.index.len();
            self.index.insert(node, order);
            self.low.insert(node, order);
            self.stack.push(node);
            self.on_stack.insert(node);
            for &target in self.next.get(node).map(Vec::as_slice).unwrap_or_default() {
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.low[node].min(self.low[target]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(target) {
                    let low = self.low[node].min(self.index[target]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut walk = Walk {
        next,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for &node in nodes {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.components
}

/// The shortest way from `start` back to it within `members`, both ends
/// included.
fn shortest_loop<'a>(
    start: &'a str,
    members: &BTreeSet<&'a str>,
    next: &BTreeMap<&'a str, Vec<&'a str>>,
) -> Vec<&'a str> {
    let mut came_from: HashMap<&str, &str> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &target in next.get(node).map(Vec::as_slice).unwrap_or_default() {
            if !members.contains(target) || came_from.contains_key(target) {
                continue;
            }
            came_from.insert(target, node);
            if target == start {
                let mut way = vec![start];
                let mut at = node;
                while at != start {
                    way.push(at);
                    at = came_from[at];
                }
                way.push(start);
                way.reverse();
                return way;
            }
            queue.push_back(target);
        }
    }
    vec![start]
}

/// Every source file of the server's library, by its path under `src/`.
fn server_sources() -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, found: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("read the source folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                walk(root, &path, found);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                let relative = path.strip_prefix(root).expect("under src");
                let name = relative
                    .components()
                    .map(|part| part.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                if name != "main.rs" {
                    let source = std::fs::read_to_string(&path).expect("read a source file");
                    found.insert(name, source);
                }
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = BTreeMap::new();
    walk(&root, &root, &mut found);
    assert!(found.len() > 50, "the sources were found");
    found
}

#[test]
fn every_file_stands_on_a_floor() {
    let unplaced: Vec<String> = server_sources()
        .into_keys()
        .filter(|file| floor_of(file).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "these files are on no floor of FLOORS (tests/it/layers.rs and docs/architecture.md): {unplaced:?}"
    );
}

#[test]
fn no_import_runs_up_a_floor() {
    let graph = Graph::read(&server_sources());
    assert!(
        graph.edges.len() > 300,
        "the imports were read: {}",
        graph.edges.len()
    );
    let offenders = graph.running_up();
    assert!(
        offenders.is_empty(),
        "these imports run up a floor (see FLOORS):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn no_files_import_one_another_round_a_circle() {
    let circles = Graph::read(&server_sources()).circles();
    assert!(
        circles.is_empty(),
        "these files import one another round a circle:\n{}",
        circles.join("\n")
    );
}

fn graph_of(files: &[(&str, &str)]) -> Graph {
    Graph::read(
        &files
            .iter()
            .map(|(file, source)| ((*file).to_owned(), (*source).to_owned()))
            .collect(),
    )
}

#[test]
fn an_import_up_a_floor_and_a_circle_are_found_and_named() {
    let graph = graph_of(&[
        ("lib.rs", "pub mod services;\npub mod state;\n"),
        ("state.rs", "pub struct AppState;\n"),
        ("services/mod.rs", "pub mod mail;\npub mod templates;\n"),
        (
            "services/mail.rs",
            "use super::templates::{self, Templates};\n\
             pub fn send(state: &crate::state::AppState) {}\n",
        ),
        (
            "services/templates.rs",
            "pub struct Templates;\n\
             fn render() { super::mail::send(todo!()) }\n",
        ),
    ]);
    assert_eq!(
        graph.running_up(),
        [
            "services/mail.rs -> state.rs (`crate::state::AppState`): services imports state, a floor above it"
        ]
    );
    assert_eq!(
        graph.circles(),
        [
            "2 files: services/mail.rs -> services/templates.rs (`super::templates`, `super::templates::Templates`) -> services/mail.rs (`super::mail::send`)"
        ]
    );
}

#[test]
fn paths_in_comments_and_strings_import_nothing_but_a_childs_a_serde_functions_and_a_macros_do() {
    let graph = graph_of(&[
        ("lib.rs", "pub mod http;\npub mod state;\n"),
        ("state.rs", "pub struct AppState;\n"),
        ("http/mod.rs", "pub mod error;\npub mod routes;\n"),
        (
            "http/error.rs",
            "//! see `crate::state::AppState`\n\
             /* crate::state::AppState */\n\
             const NAME: &str = \"crate::state::AppState\";\n\
             const RAW: &str = r#\"crate::state\"#;\n\
             const QUOTE: char = '\"';\n\
             #[serde(deserialize_with = \"crate::state::read\")]\n\
             fn lifetime<'a>(text: &'a str) -> &'a str { text }\n\
             #[macro_export]\n\
             macro_rules! routes { () => {} }\n",
        ),
        (
            "http/routes.rs",
            "mod tests { use super::*; fn any() { crate::routes!(); } }\n",
        ),
    ]);
    let edges: Vec<(&str, &str)> = graph
        .edges
        .keys()
        .map(|(from, to)| (from.as_str(), to.as_str()))
        .collect();
    assert_eq!(
        edges,
        [
            ("http/error.rs", "state.rs"),
            ("http/routes.rs", "http/error.rs")
        ]
    );
    let child = graph_of(&[
        ("lib.rs", "pub mod http;\n"),
        (
            "http/mod.rs",
            "mod error;\npub fn f() -> error::Kind { error::Kind }\n",
        ),
        ("http/error.rs", "pub struct Kind;\n"),
    ]);
    assert_eq!(
        child.edges.keys().collect::<Vec<_>>(),
        [&("http/mod.rs".to_owned(), "http/error.rs".to_owned())]
    );
}
