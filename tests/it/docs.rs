//! The documentation names only what exists: every file or folder the codemap of
//! `ARCHITECTURE.md` names in backticks is in the repository.

use std::path::{Path, PathBuf};

/// Every file and folder below `dir`, as paths relative to `root` with `/` separators
/// (folders end with `/`); build output and version control are skipped.
fn tree(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "target" || name.starts_with('.') && name != ".ci" && name != ".cargo" {
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if path.is_dir() {
            out.push(format!("{rel}/"));
            tree(root, &path, out);
        } else {
            out.push(rel);
        }
    }
}

/// The backticked names in `text` that look like paths: a file with a known ending, or a
/// folder (`name/`).
fn named_paths(text: &str) -> Vec<String> {
    const ENDINGS: [&str; 7] = [".rs", ".toml", ".sh", ".lua", ".py", ".md", ".json"];
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| !t.contains(' ') && !t.contains("::") && !t.starts_with('<'))
        .filter(|t| {
            let name = t.trim_end_matches('/');
            let looks_like_file = ENDINGS.iter().any(|e| name.ends_with(e));
            let looks_like_dir = t.ends_with('/')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
            (looks_like_file || looks_like_dir) && !name.is_empty()
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_codemap_names_only_paths_that_exist() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let start = doc.find("## Codemap").expect("a codemap section");
    let end = doc[start + 1..]
        .find("\n## ")
        .map_or(doc.len(), |i| start + 1 + i);
    let codemap = &doc[start..end];
    let mut files = Vec::new();
    tree(&root, &root, &mut files);
    let names = named_paths(codemap);
    assert!(names.len() > 50, "too few paths found: {names:?}");
    // A name is found when some path in the repository is it or ends with `/<name>`: the
    // codemap names files relative to the section they are listed in.
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| {
            !files
                .iter()
                .any(|f| f == *n || f.ends_with(&format!("/{n}")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "the codemap names paths that do not exist: {missing:?}"
    );
}
