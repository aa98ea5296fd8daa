//! Labs: experiments longer than a chapter (`labs/`, see DESIGN.md).
//!
//! A lab is a binary `labs/src/bin/NAME.rs` of the `agentrl-labs` crate; it writes
//! `labs/results/NAME.json` holding its results and their provenance: the command that
//! produced them and [`code_hash`], a hash of the code they were computed with. A results
//! file whose hash no longer matches the code is stale ([`check_results`], run by
//! `tangle --check`). This is the only implementation of the hash: the labs crate calls it
//! too, so the writer and the check cannot disagree.
//!
//! The code hash of lab NAME, in a repository rooted at ROOT, is computed over these files:
//!
//! 1. every regular file `ROOT/agentrl/src/*.rs` (not in subfolders) — or, when the lab
//!    declares the last chapter it uses with a line `//! Uses chapters up to NN.`
//!    ([`declared_chapter`]), only the chapter modules `chMM_*.rs` with MM ≤ NN (a later
//!    chapter, or the crate root that lists the chapters, cannot change what the lab computes,
//!    so adding chapter 10 leaves a chapter-9 lab current, as the checker builds chapter 9
//!    without it);
//! 2. `ROOT/labs/src/lib.rs`;
//! 3. `ROOT/labs/src/bin/NAME.rs`.
//!
//! It is the lower-case hex SHA-256 of the concatenation of: first, for each file hashed whole
//! (the lab itself, and a module that does not parse), in the order above with the modules
//! sorted by name: its path relative to ROOT with `/` separators, `\n`, the length in bytes
//! (decimal) of its [`normalized`] text, `\n`, then that text; then `items\n`, the number of
//! item texts and `\n`; then the normalized texts of the items that count in the modules and the
//! labs library (below), together and sorted (byte order), each as its length, `\n`, text. (The
//! lengths make the concatenation unambiguous. The items are sorted because neither their order
//! nor the module they sit in can change what Rust code computes: names are unique and every
//! module is glob-imported, so a block moved to a chapter's appendix, or to another chapter,
//! leaves the results current.) A module's inner attributes (`#![allow(...)]`), when it has
//! any, are one more item text.
//!
//! The normalized text is the file's tokens as the compiler reads them, with comments, doc
//! comments (`#[doc]` attributes) and layout removed: a reworded doc comment, a re-wrapped
//! line or a chapter's prose growing (which moves the `// generated from …:LINE` comments)
//! cannot change what a lab computes, so it leaves the results current. A file that does not
//! lex as Rust is hashed as it is.
//!
//! Of an `agentrl` module, the items that count are those the lab can reach: an
//! item counts when one of its keys occurs in the lab, in the labs library, or in an item that
//! counts (to a fixed point). A function, constant, static, `macro_rules!`, type or trait is
//! keyed by its name (a trait also by its methods' and associated items' names), an `impl`
//! block by the crate's own names in its type and trait; `use` declarations never count, and
//! items without a key (`mod`, item macros, an impl that names nothing of the crate's) always do. Names are unique in the crate (tangle rejects
//! a name saved twice), and whatever a lab runs is named somewhere on the way (a value's type
//! where it is made or declared, a trait where it is bound or imported), so adding a helper to a
//! chapter, or editing code that no lab reaches, leaves every lab current, and editing anything
//! a lab reaches through any chain of names makes it stale ([`reachable_texts`]). A module that
//! does not parse counts whole; a lab that does not lex reaches every item. `labs/src/lib.rs`
//! is filtered the same way, so a helper added to it stales only the labs that call it.

//! Two rules keep the hash honest, checked by `tangle --check`: a lab that declares its last
//! chapter names nothing (`arl::X`) from a later one ([`undeclared_uses`]), and the labs crate
//! has no Rust file outside `lib.rs` and `bin/` ([`unhashed_lab_files`]).

use std::fmt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Where results files live, relative to the repository root.
pub const RESULTS_DIR: &str = "labs/results";

/// The lab binaries' folder, relative to the repository root.
pub const BIN_DIR: &str = "labs/src/bin";

/// The command that runs lab `lab` and writes its results file.
pub fn command(lab: &str) -> String {
    format!("scripts/lab.sh {lab}")
}

/// A lab name is a file stem of `[a-z0-9_-]`, starting with a letter or digit.
pub fn valid_name(lab: &str) -> bool {
    let mut chars = lab.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// The last chapter lab `source` says it uses: the NN of its line `//! Uses chapters up to NN.`
/// (None without one; then the lab's hash covers every agentrl module).
pub fn declared_chapter(source: &str) -> Option<u32> {
    source.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("//! Uses chapters up to ")?;
        let nn = rest.strip_suffix('.')?;
        (nn.len() == 2).then(|| nn.parse().ok()).flatten()
    })
}

/// The chapter number of an agentrl module file name `chNN_*.rs`.
fn module_chapter(file_name: &str) -> Option<u32> {
    let nn = file_name.strip_prefix("ch")?.get(..2)?;
    file_name.get(2..)?.starts_with(|c: char| c.is_ascii_digit()).then(|| nn.parse().ok()).flatten()
}

/// Where the `agentrl/src` modules a hash reads come from.
#[derive(Debug, Clone, Copy)]
pub enum Sources<'a> {
    /// The files in `ROOT/agentrl/src`, as committed.
    OnDisk,
    /// A tangle of the book held in memory: `(file name in src/, content)` pairs, so an edit
    /// to a chapter can be judged before `agentrl/` is rewritten (the checker does this).
    Tangled(&'a [(String, String)]),
}

/// The files [`code_hash`] covers, relative to `root`, in hashing order.
pub fn hashed_files(root: &Path, lab: &str) -> std::io::Result<Vec<String>> {
    hash_paths(root, lab, Sources::OnDisk)
}

/// The `agentrl/src/*.rs` file names in `sources`, unsorted.
fn module_names(root: &Path, sources: Sources) -> std::io::Result<Vec<String>> {
    if let Sources::Tangled(files) = sources {
        return Ok(files.iter().map(|(name, _)| name.clone()).filter(|n| n.ends_with(".rs")).collect());
    }
    let src = root.join("agentrl/src");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&src)
        .map_err(|e| std::io::Error::new(e.kind(), format!("reading {}: {e}", src.display())))?
    {
        let entry = entry?;
        let name = entry.file_name().into_string().map_err(|n| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{n:?} in {}: not UTF-8", src.display()))
        })?;
        if name.ends_with(".rs") && entry.file_type()?.is_file() {
            names.push(name);
        }
    }
    Ok(names)
}

/// The files the hash of lab `lab` covers, relative to `root`, in hashing order: the
/// `agentrl/src` modules in scope (from `sources`), then the labs library and the lab.
fn hash_paths(root: &Path, lab: &str, sources: Sources) -> std::io::Result<Vec<String>> {
    let lab_path = root.join(BIN_DIR).join(format!("{lab}.rs"));
    let last_chapter = match std::fs::read_to_string(&lab_path) {
        Ok(text) => declared_chapter(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(std::io::Error::new(e.kind(), format!("reading {}: {e}", lab_path.display()))),
    };
    let in_scope = |name: &str| match last_chapter {
        None => true,
        Some(last) => module_chapter(name).is_some_and(|ch| ch <= last),
    };
    let mut names: Vec<String> = module_names(root, sources)?.into_iter().filter(|n| in_scope(n)).collect();
    names.sort();
    let mut paths: Vec<String> = names.into_iter().map(|n| format!("agentrl/src/{n}")).collect();
    paths.push("labs/src/lib.rs".to_string());
    paths.push(format!("{BIN_DIR}/{lab}.rs"));
    Ok(paths)
}

/// The bytes of `rel` (a path from [`hash_paths`]): an `agentrl/src` module from `sources`,
/// anything else from disk.
fn hash_input(root: &Path, rel: &str, sources: Sources) -> std::io::Result<Vec<u8>> {
    if let (Sources::Tangled(files), Some(name)) = (sources, rel.strip_prefix("agentrl/src/")) {
        return Ok(files.iter().find(|(n, _)| n == name).map(|(_, c)| c.as_bytes().to_vec()).unwrap_or_default());
    }
    let path = root.join(rel);
    std::fs::read(&path).map_err(|e| std::io::Error::new(e.kind(), format!("reading {}: {e}", path.display())))
}

/// What of a Rust file can change what it computes: its tokens, without comments, doc
/// comments (`#[doc = ...]` / `#![doc = ...]`, which `///` and `//!` become) or layout, as
/// one canonical line. Bytes that do not lex as Rust (or are not UTF-8) are kept as they are.
pub fn normalized(bytes: &[u8]) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(bytes) else { return bytes.to_vec() };
    match text.parse::<proc_macro2::TokenStream>() {
        Ok(tokens) => without_doc_attributes(tokens).to_string().into_bytes(),
        Err(_) => bytes.to_vec(),
    }
}

/// `tokens` with every `#[doc ...]` and `#![doc ...]` removed, at any depth.
fn without_doc_attributes(tokens: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    use proc_macro2::{Delimiter, Group, TokenTree};
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let is_doc = |tree: Option<&TokenTree>| match tree {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket => {
            matches!(g.stream().into_iter().next(), Some(TokenTree::Ident(i)) if i == "doc")
        }
        _ => false,
    };
    let mut out = Vec::with_capacity(trees.len());
    let mut k = 0;
    while k < trees.len() {
        if let TokenTree::Punct(p) = &trees[k] {
            if p.as_char() == '#' {
                let bang = matches!(trees.get(k + 1), Some(TokenTree::Punct(b)) if b.as_char() == '!');
                let attr = if bang { k + 2 } else { k + 1 };
                if is_doc(trees.get(attr)) {
                    k = attr + 1;
                    continue;
                }
            }
        }
        out.push(match &trees[k] {
            TokenTree::Group(g) => {
                let mut inner = Group::new(g.delimiter(), without_doc_attributes(g.stream()));
                inner.set_span(g.span());
                TokenTree::Group(inner)
            }
            other => other.clone(),
        });
        k += 1;
    }
    out.into_iter().collect()
}

/// The code hash of lab `lab` in the repository at `root` (the module docs define it).
pub fn code_hash(root: &Path, lab: &str) -> std::io::Result<String> {
    code_hash_with(root, lab, Sources::OnDisk)
}

/// [`code_hash`] with the `agentrl` modules taken from `sources`.
pub fn code_hash_with(root: &Path, lab: &str, sources: Sources) -> std::io::Result<String> {
    if !valid_name(lab) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{lab}` is not a lab name (lower-case letters, digits, `_`, `-`)"),
        ));
    }
    let paths = hash_paths(root, lab, sources)?;
    let mut inputs = Vec::with_capacity(paths.len());
    for rel in &paths {
        inputs.push((rel.as_str(), hash_input(root, rel, sources)?));
    }
    let mut h = Sha256::new();
    let mut items = Vec::new(); // the reached items of every module, wherever they are
    for (rel, hashed) in paths.iter().zip(reachable_texts(&inputs)) {
        match hashed {
            Hashed::Whole(text) => {
                h.update(rel.as_bytes());
                h.update(format!("\n{}\n", text.len()).as_bytes());
                h.update(&text);
            }
            Hashed::Items(texts) => items.extend(texts),
        }
    }
    // item order cannot change what Rust code computes, nor can the module an item sits in
    // (names are unique, and every module is glob-imported): sorted, moving an item is free
    items.sort();
    h.update(format!("items\n{}\n", items.len()).as_bytes());
    for item in &items {
        h.update(format!("{}\n", item.len()).as_bytes());
        h.update(item);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// An item and its keys (None: it always counts).
type Keyed<'a> = (&'a syn::Item, Option<std::collections::HashSet<String>>);

/// What a file contributes to a hash: its whole normalized text (the lab, a file that does not
/// parse), or the normalized texts of the items of it that count, one by one.
enum Hashed {
    Whole(Vec<u8>),
    Items(Vec<Vec<u8>>),
}

/// What an `agentrl` module contributes to a hash: the items the lab can reach.
/// An item is reached when one of its keys occurs in the lab, the labs library or a reached
/// item (to a fixed point): a function, constant, static, `macro_rules!`, type or trait by its
/// name (a trait also by the names of its methods and associated items, which a call through a
/// glob import names without the trait), an `impl` block by the crate's own names in its type and
/// trait (so a type's impls follow the type, and a trait's impls the trait; an impl with none
/// always counts). Names in the crate are
/// unique (tangle rejects a name saved twice), and a value's type, or a dispatched trait, is
/// named where the value is made or declared, so code that no reached item names cannot run in
/// the lab. `use` declarations never count (a unique name cannot be redirected). Items without
/// a key (`mod`, item macros) always count. The labs library (`labs/src/lib.rs`) is filtered the
/// same way; the lab itself (the last of `inputs`) and a file that does not parse count whole,
/// and a lab that does not lex reaches every item.
fn reachable_texts(inputs: &[(&str, Vec<u8>)]) -> Vec<Hashed> {
    use quote::ToTokens;
    use std::collections::HashSet;
    let parsed: Vec<Option<syn::File>> = inputs
        .iter()
        .map(|(rel, bytes)| {
            // the labs library is filtered like a module: a helper no lab calls does not count
            let module = rel.starts_with("agentrl/src/") || *rel == "labs/src/lib.rs";
            let text = std::str::from_utf8(bytes).ok().filter(|_| module)?;
            syn::parse_file(text).ok()
        })
        .collect();
    // the keys of an item: None for one that always counts
    let keys = |item: &syn::Item| -> Option<HashSet<String>> {
        let one = |i: &syn::Ident| Some(HashSet::from([i.to_string()]));
        match item {
            syn::Item::Fn(f) => one(&f.sig.ident),
            syn::Item::Const(c) => one(&c.ident),
            syn::Item::Static(s) => one(&s.ident),
            syn::Item::Macro(m) => m.ident.as_ref().and_then(one),
            syn::Item::Struct(s) => one(&s.ident),
            syn::Item::Enum(e) => one(&e.ident),
            syn::Item::Union(u) => one(&u.ident),
            syn::Item::Type(t) => one(&t.ident),
            syn::Item::TraitAlias(t) => one(&t.ident),
            syn::Item::Trait(t) => {
                let mut k = HashSet::from([t.ident.to_string()]);
                for member in &t.items {
                    match member {
                        syn::TraitItem::Fn(f) => k.insert(f.sig.ident.to_string()),
                        syn::TraitItem::Const(c) => k.insert(c.ident.to_string()),
                        syn::TraitItem::Type(t) => k.insert(t.ident.to_string()),
                        _ => false,
                    };
                }
                Some(k)
            }
            syn::Item::Impl(i) => {
                let mut k = HashSet::new();
                collect_idents(&i.self_ty.to_token_stream(), &mut k);
                if let Some((_, path, _)) = &i.trait_ {
                    collect_idents(&path.to_token_stream(), &mut k);
                }
                Some(k)
            }
            _ => None,
        }
    };
    let mut items: Vec<Vec<Keyed>> = parsed
        .iter()
        .map(|file| file.iter().flat_map(|f| &f.items).filter(|i| !matches!(i, syn::Item::Use(_))).map(|i| (i, keys(i))).collect())
        .collect();
    // an impl is keyed by the crate's own names in its header only (`fmt`, `Display` or `Vec`
    // would tie every impl of a std trait to every other)
    let defined: HashSet<String> = (items.iter().flatten())
        .filter(|(i, _)| !matches!(i, syn::Item::Impl(_)))
        .flat_map(|(_, k)| k.iter().flatten().cloned())
        .collect();
    for (item, item_keys) in items.iter_mut().flatten() {
        if let (syn::Item::Impl(_), Some(k)) = (&item, item_keys.as_mut()) {
            k.retain(|name| defined.contains(name));
            if k.is_empty() {
                *item_keys = None; // no name of the crate's to follow it by: it always counts
            }
        }
    }
    // the roots: whole files, and the items that always count
    let mut names = HashSet::new();
    let mut unread = false; // a file whose names cannot be read: then every item counts
    for (((_, bytes), file), file_items) in inputs.iter().zip(&parsed).zip(&items) {
        if file.is_some() {
            file_items.iter().filter(|(_, k)| k.is_none()).for_each(|(i, _)| collect_idents(&i.to_token_stream(), &mut names));
        } else {
            match lex(bytes) {
                Some(tokens) => collect_idents(&tokens, &mut names),
                None => unread = true,
            }
        }
    }
    // the items those names reach, and the names in them, until nothing new is reached
    let mut reached = HashSet::new();
    loop {
        let before = reached.len();
        for (f, file_items) in items.iter().enumerate() {
            for (k, (item, item_keys)) in file_items.iter().enumerate() {
                let hit = item_keys.as_ref().is_some_and(|ks| unread || ks.iter().any(|n| names.contains(n)));
                if hit && reached.insert((f, k)) {
                    collect_idents(&item.to_token_stream(), &mut names);
                }
            }
        }
        if reached.len() == before {
            break;
        }
    }
    let mut texts = Vec::with_capacity(inputs.len());
    for (f, (((_, bytes), file), file_items)) in inputs.iter().zip(&parsed).zip(&items).enumerate() {
        let Some(file) = file else {
            texts.push(Hashed::Whole(normalized(bytes)));
            continue;
        };
        let text = |tokens: proc_macro2::TokenStream| without_doc_attributes(tokens).to_string();
        let mut kept = Vec::new();
        // the file's inner attributes (`#![allow(...)]`) as one entry, when there are any
        let mut attrs = proc_macro2::TokenStream::new();
        file.attrs.iter().for_each(|a| a.to_tokens(&mut attrs));
        let attrs = text(attrs);
        if !attrs.is_empty() {
            kept.push(attrs.into_bytes());
        }
        for (k, (item, item_keys)) in file_items.iter().enumerate() {
            if item_keys.is_none() || reached.contains(&(f, k)) {
                kept.push(text(item.to_token_stream()).into_bytes());
            }
        }
        texts.push(Hashed::Items(kept));
    }
    texts
}

/// The tokens of `bytes`, if they are UTF-8 Rust tokens.
fn lex(bytes: &[u8]) -> Option<proc_macro2::TokenStream> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// Every identifier in `tokens`, at any depth (macro arguments included), into `names`.
fn collect_idents(tokens: &proc_macro2::TokenStream, names: &mut std::collections::HashSet<String>) {
    for tree in tokens.clone() {
        match tree {
            proc_macro2::TokenTree::Ident(i) => {
                let name = i.to_string();
                names.insert(name.strip_prefix("r#").map(str::to_string).unwrap_or(name));
            }
            proc_macro2::TokenTree::Group(g) => collect_idents(&g.stream(), names),
            _ => {}
        }
    }
}

/// The results files `ROOT/labs/results/*.json`, sorted by name (none if the folder is absent).
pub fn results_files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    files_with_extension(root, "json")
}

/// The checkpoints labs store beside their results, `ROOT/labs/results/*.safetensors` (trained
/// agents that chapters load), sorted by name.
pub fn checkpoint_files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    files_with_extension(root, CHECKPOINT_EXTENSION)
}

/// A checkpoint's extension: `tch` writes safetensors for a path that ends so.
pub const CHECKPOINT_EXTENSION: &str = "safetensors";

fn files_with_extension(root: &Path, extension: &str) -> std::io::Result<Vec<PathBuf>> {
    let dir = root.join(RESULTS_DIR);
    let mut files = Vec::new();
    match std::fs::read_dir(&dir) {
        Ok(entries) => {
            for entry in entries {
                let path = entry?.path();
                if path.extension().is_some_and(|e| e == extension) {
                    files.push(path);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    files.sort();
    Ok(files)
}

/// A results file that does not match the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabProblem {
    /// The results file, relative to the root (`labs/results/NAME.json`).
    pub file: String,
    pub kind: ProblemKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    /// Its recorded code hash differs from the code's: rerun `command`.
    Stale { recorded: String, now: String, command: String },
    /// `labs/src/bin/NAME.rs` does not exist.
    NoLab { bin: String },
    /// Not a results file (unreadable, not JSON, a field missing or wrong).
    Malformed(String),
    /// The checkpoint the results record (`results.checkpoint`) is missing or holds other
    /// bytes than the lab wrote: rerun `command`.
    Checkpoint { checkpoint: String, why: String, command: String },
}

impl fmt::Display for LabProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ProblemKind::Stale { recorded, now, command } => write!(
                f,
                "stale: {} was computed by other code (code_hash {}…, the code now hashes to {}…); \
                 regenerate it with `{command}` and commit it",
                self.file,
                &recorded[..recorded.len().min(12)],
                &now[..now.len().min(12)],
            ),
            ProblemKind::NoLab { bin } => write!(
                f,
                "error: {}: its lab {bin} does not exist; restore the lab or remove the results file",
                self.file
            ),
            ProblemKind::Malformed(why) => write!(f, "error: {}: {why}", self.file),
            ProblemKind::Checkpoint { checkpoint, why, command } => write!(
                f,
                "stale: {checkpoint} {why}; regenerate it with `{command}` and commit both files"
            ),
        }
    }
}

/// Check every results file under `root`: its lab exists and its code hash is the code's.
/// Returns the problems (empty when all match) and the number of files checked.
pub fn check_results(root: &Path) -> (Vec<LabProblem>, usize) {
    check_results_with(root, Sources::OnDisk)
}

/// [`check_results`] with the `agentrl` modules taken from `sources`.
pub fn check_results_with(root: &Path, sources: Sources) -> (Vec<LabProblem>, usize) {
    let files = match results_files(root) {
        Ok(f) => f,
        Err(e) => {
            let file = RESULTS_DIR.to_string();
            return (vec![LabProblem { file, kind: ProblemKind::Malformed(format!("cannot list: {e}")) }], 0);
        }
    };
    let mut problems: Vec<LabProblem> = files.iter().filter_map(|path| check_one(root, path, sources)).collect();
    // A checkpoint no results file records has no provenance: nothing says what made it.
    for path in checkpoint_files(root).unwrap_or_default() {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let name = format!("{RESULTS_DIR}/{stem}.{CHECKPOINT_EXTENSION}");
        let results = root.join(RESULTS_DIR).join(format!("{stem}.json"));
        let recorded = std::fs::read_to_string(&results)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|j| j["results"]["checkpoint"]["file"].as_str() == Some(name.as_str()));
        if !recorded {
            let why = format!("no results file records it ({RESULTS_DIR}/{stem}.json from its lab): remove it or run its lab");
            problems.push(LabProblem { file: name, kind: ProblemKind::Malformed(why) });
        }
    }
    (problems, files.len())
}

fn check_one(root: &Path, path: &Path, sources: Sources) -> Option<LabProblem> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_string();
    let file = format!("{RESULTS_DIR}/{stem}.json");
    let bad = |why: String| Some(LabProblem { file: file.clone(), kind: ProblemKind::Malformed(why) });
    if !valid_name(&stem) {
        return bad(format!("`{stem}` is not a lab name (lower-case letters, digits, `_`, `-`)"));
    }
    let bin = format!("{BIN_DIR}/{stem}.rs");
    if !root.join(&bin).is_file() {
        return Some(LabProblem { file, kind: ProblemKind::NoLab { bin } });
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return bad(format!("cannot read: {e}")),
    };
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return bad(format!("not JSON: {e}")),
    };
    let field = |name: &str| json.get(name).and_then(|v| v.as_str()).map(str::to_string);
    match field("lab") {
        Some(lab) if lab == stem => {}
        Some(lab) => return bad(format!("its \"lab\" is `{lab}`, but the file is named for `{stem}`")),
        None => return bad("no \"lab\" string: not written by a lab".to_string()),
    }
    let Some(recorded) = field("code_hash") else {
        return bad("no \"code_hash\" string: not written by a lab".to_string());
    };
    let Some(command) = field("command") else {
        return bad("no \"command\" string: its provenance is incomplete".to_string());
    };
    if json.get("results").is_none_or(|r| r.is_null()) {
        return bad("no \"results\": nothing for a chapter to read".to_string());
    }
    let now = match code_hash_with(root, &stem, sources) {
        Ok(h) => h,
        Err(e) => return bad(format!("cannot hash its code: {e}")),
    };
    if recorded != now {
        return Some(LabProblem { file, kind: ProblemKind::Stale { recorded, now, command } });
    }
    let checkpoint = json.get("results").and_then(|r| r.get("checkpoint"))?;
    let (Some(name), Some(sha)) = (checkpoint["file"].as_str(), checkpoint["sha256"].as_str()) else {
        return bad("its \"checkpoint\" lacks a \"file\" or \"sha256\" string".to_string());
    };
    let why = match std::fs::read(root.join(name)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => format!("is missing ({file} records it)"),
        Err(e) => return bad(format!("cannot read its checkpoint {name}: {e}")),
        Ok(bytes) if sha256_hex(&bytes) != sha => format!("holds other bytes than {file} records"),
        Ok(_) => return None,
    };
    Some(LabProblem { file, kind: ProblemKind::Checkpoint { checkpoint: name.to_string(), why, command } })
}

/// Lower-case hex of the SHA-256 of `bytes` (how results files name a checkpoint's bytes).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Rust files of the labs crate that no code hash covers (anything under `labs/src` but
/// `lib.rs` and `bin/*.rs`): code a lab runs there could change without making its results
/// stale.
pub fn unhashed_lab_files(root: &Path) -> Vec<String> {
    let (lib, bin) = (root.join("labs/src/lib.rs"), root.join(BIN_DIR));
    crate::library::files_under(&root.join("labs/src"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter(|p| *p != lib && p.parent() != Some(bin.as_path()))
        .map(|p| p.strip_prefix(root).unwrap_or(&p).display().to_string())
        .collect()
}

/// `arl::NAME` / `agentrl::NAME` (and `arl::{A, B}`) in a lab's source whose NAME comes from a
/// chapter after the one the lab declares (`chapter_of` maps a saved name to its chapter
/// number) -> `file:line: ...` reports. The hash of such a lab would not cover that chapter.
pub fn undeclared_uses(root: &Path, chapter_of: &dyn Fn(&str) -> Option<u32>) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.join(BIN_DIR)) else { return Vec::new() };
    let mut bins: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    bins.retain(|p| p.extension().is_some_and(|x| x == "rs"));
    bins.sort();
    let mut reports = Vec::new();
    for bin in bins {
        let Ok(source) = std::fs::read_to_string(&bin) else { continue };
        let Some(declared) = declared_chapter(&source) else { continue };
        let rel = bin.strip_prefix(root).unwrap_or(&bin).display().to_string();
        for (k, line) in source.lines().enumerate() {
            for name in agentrl_names(line) {
                if let Some(ch) = chapter_of(&name).filter(|&ch| ch > declared) {
                    reports.push(format!(
                        "error: {rel}:{}: `{name}` comes from chapter {ch:02}, but the lab declares \
                         `//! Uses chapters up to {declared:02}.`, so its results would not go stale when \
                         chapter {ch:02} changes: raise the declaration (and rerun the lab)",
                        k + 1
                    ));
                }
            }
        }
    }
    reports
}

/// The names a line takes from the crate: `arl::a`, `agentrl::b`, `arl::{c, d::e}` -> a, b, c, d.
fn agentrl_names(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut names = Vec::new();
    for prefix in ["arl::", "agentrl::"] {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // part of a longer path or name
            }
            let rest = &code[at + prefix.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or("");
                names.extend(group.split(',').map(|n| ident(n.trim())).filter(|n| !n.is_empty()));
            } else {
                names.push(ident(rest));
            }
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with a fake agentrl/src and a labs tree holding lab `demo`.
    fn repo() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let r = tmp.path();
        for (path, text) in [
            ("agentrl/src/lib.rs", "pub mod ch01;\n"),
            ("agentrl/src/ch01.rs", "pub fn one() -> i64 { 1 }\n"),
            ("agentrl/src/notes.txt", "not code\n"),
            ("labs/src/lib.rs", "// the labs library\npub fn seeds() -> u64 { 3 }\n"),
            ("labs/src/bin/demo.rs", "fn main() {\n    agentrl::one();\n    labs::seeds();\n}\n"),
        ] {
            std::fs::create_dir_all(r.join(path).parent().unwrap()).unwrap();
            std::fs::write(r.join(path), text).unwrap();
        }
        tmp
    }

    fn write_results(root: &Path, lab: &str, hash: &str) {
        std::fs::create_dir_all(root.join(RESULTS_DIR)).unwrap();
        let text = format!(
            "{{\n  \"lab\": \"{lab}\",\n  \"command\": \"scripts/lab.sh {lab}\",\n  \"code_hash\": \"{hash}\",\n  \"results\": {{}}\n}}\n"
        );
        std::fs::write(root.join(RESULTS_DIR).join(format!("{lab}.json")), text).unwrap();
    }

    #[test]
    fn a_lab_using_a_later_chapter_than_it_declares_is_reported() {
        let tmp = repo();
        let r = tmp.path();
        let bin = r.join(BIN_DIR).join("demo.rs");
        let text = "//! Uses chapters up to 04.\nuse agentrl as arl;\nfn main() {\n    let t = arl::make_tasks(); // arl::late in a comment\n    arl::{rename_token, make_env}(t);\n}\n";
        std::fs::write(&bin, text).unwrap();
        let chapter_of = |name: &str| match name {
            "make_tasks" => Some(4),
            "rename_token" => Some(9),
            "make_env" | "late" => Some(9),
            _ => None,
        };
        let reports = undeclared_uses(r, &chapter_of);
        assert_eq!(reports.len(), 2, "{reports:?}");
        assert!(reports[0].contains("labs/src/bin/demo.rs:5: `rename_token` comes from chapter 09"), "{reports:?}");
        // Code outside lib.rs and bin/ is covered by no hash.
        assert!(unhashed_lab_files(r).is_empty());
        std::fs::write(r.join("labs/src/helpers.rs"), "pub fn seeds() {}\n").unwrap();
        assert_eq!(unhashed_lab_files(r), vec!["labs/src/helpers.rs".to_string()]);
    }

    #[test]
    fn a_results_file_needs_its_command_and_results() {
        let tmp = repo();
        let r = tmp.path();
        let hash = code_hash(r, "demo").unwrap();
        std::fs::create_dir_all(r.join(RESULTS_DIR)).unwrap();
        let path = r.join(RESULTS_DIR).join("demo.json");
        for (text, why) in [
            (format!("{{\"lab\": \"demo\", \"code_hash\": \"{hash}\", \"results\": {{}}}}"), "no \"command\""),
            (format!("{{\"lab\": \"demo\", \"command\": \"x\", \"code_hash\": \"{hash}\", \"results\": null}}"), "no \"results\""),
        ] {
            std::fs::write(&path, text).unwrap();
            let (problems, _) = check_results(r);
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert!(problems[0].to_string().contains(why), "{}", problems[0]);
        }
    }

    #[test]
    fn the_hash_is_the_documented_one_over_the_documented_files() {
        let tmp = repo();
        let r = tmp.path();
        assert_eq!(
            hashed_files(r, "demo").unwrap(),
            ["agentrl/src/ch01.rs", "agentrl/src/lib.rs", "labs/src/lib.rs", "labs/src/bin/demo.rs"]
        );
        // the lab whole, by path; then every module's items that count, sorted, wherever they are
        let lab = normalized(&std::fs::read(r.join("labs/src/bin/demo.rs")).unwrap());
        let mut expected = format!("labs/src/bin/demo.rs\n{}\n", lab.len()).into_bytes();
        expected.extend_from_slice(&lab);
        let mut items: Vec<Vec<u8>> = ["pub mod ch01;", "pub fn one() -> i64 { 1 }", "pub fn seeds() -> u64 { 3 }"]
            .iter()
            .map(|item| normalized(item.as_bytes()))
            .collect();
        items.sort();
        expected.extend_from_slice(format!("items\n{}\n", items.len()).as_bytes());
        for item in &items {
            expected.extend_from_slice(format!("{}\n", item.len()).as_bytes());
            expected.extend_from_slice(item);
        }
        let expected: String = Sha256::digest(&expected).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(code_hash(r, "demo").unwrap(), expected);
        // Files outside the definition do not count; files inside it do.
        std::fs::write(r.join("agentrl/src/notes.txt"), "changed\n").unwrap();
        std::fs::write(r.join("labs/src/bin/other.rs"), "fn main() {}\n").unwrap();
        assert_eq!(code_hash(r, "demo").unwrap(), expected);
        std::fs::write(r.join("agentrl/src/ch02.rs"), "").unwrap();
        assert_eq!(code_hash(r, "demo").unwrap(), expected, "an empty module adds no item");
        std::fs::write(r.join("agentrl/src/ch02.rs"), "#![allow(unused)]\n").unwrap();
        assert_ne!(code_hash(r, "demo").unwrap(), expected, "a module's attributes count");
        assert!(code_hash(r, "../demo").is_err());
    }

    #[test]
    fn a_lab_that_declares_its_chapters_hashes_only_those_modules() {
        let tmp = repo();
        let r = tmp.path();
        std::fs::write(r.join("agentrl/src/ch02_later.rs"), "pub fn two() -> i64 { 2 }\n").unwrap();
        std::fs::write(r.join("labs/src/bin/demo.rs"), "//! Uses chapters up to 01.\nfn main() { agentrl::one(); }\n")
            .unwrap();
        assert_eq!(
            hashed_files(r, "demo").unwrap(),
            ["agentrl/src/ch01.rs", "labs/src/lib.rs", "labs/src/bin/demo.rs"]
        );
        let before = code_hash(r, "demo").unwrap();
        std::fs::write(r.join("agentrl/src/ch02_later.rs"), "pub fn two() -> i64 { 3 }\n").unwrap();
        std::fs::write(r.join("agentrl/src/lib.rs"), "pub mod ch01;\npub mod ch02_later;\n").unwrap();
        assert_eq!(code_hash(r, "demo").unwrap(), before, "a later chapter does not count");
        std::fs::write(r.join("agentrl/src/ch01.rs"), "pub fn one() -> i64 { 11 }\n").unwrap();
        assert_ne!(code_hash(r, "demo").unwrap(), before, "a used chapter does");
        assert_eq!(declared_chapter("//! x\n//! Uses chapters up to 09.\n"), Some(9));
        assert_eq!(declared_chapter("//! Uses chapters up to 9.\n"), None);
        assert_eq!(module_chapter("ch10_kl.rs"), Some(10));
        assert_eq!(module_chapter("lib.rs"), None);
    }

    #[test]
    fn matching_results_pass_and_any_code_edit_makes_them_stale() {
        let tmp = repo();
        let r = tmp.path();
        assert_eq!(check_results(r), (vec![], 0), "no results folder: nothing to check");
        write_results(r, "demo", &code_hash(r, "demo").unwrap());
        assert_eq!(check_results(r), (vec![], 1));
        for edited in ["labs/src/bin/demo.rs", "labs/src/lib.rs", "agentrl/src/ch01.rs"] {
            let before = std::fs::read_to_string(r.join(edited)).unwrap();
            // the libraries: an edit to the function the lab calls
            let after = format!("{before}const EDITED: u8 = 1;\n").replace("{ 1 }", "{ 2 }").replace("{ 3 }", "{ 4 }");
            std::fs::write(r.join(edited), after).unwrap();
            let (problems, n) = check_results(r);
            assert_eq!((problems.len(), n), (1, 1), "{edited}");
            let msg = problems[0].to_string();
            assert!(msg.starts_with("stale: labs/results/demo.json was computed by other code"), "{msg}");
            assert!(msg.contains("regenerate it with `scripts/lab.sh demo`"), "{msg}");
            std::fs::write(r.join(edited), before).unwrap();
            assert_eq!(check_results(r), (vec![], 1), "restoring {edited} makes it current again");
        }
    }

    #[test]
    fn a_checkpoint_must_hold_the_bytes_its_results_record() {
        let tmp = repo();
        let r = tmp.path();
        let hash = code_hash(r, "demo").unwrap();
        let weights = r.join(RESULTS_DIR).join("demo.safetensors");
        std::fs::create_dir_all(weights.parent().unwrap()).unwrap();
        std::fs::write(&weights, b"weights").unwrap();
        let text = format!(
            "{{\"lab\": \"demo\", \"command\": \"scripts/lab.sh demo\", \"code_hash\": \"{hash}\", \
             \"results\": {{\"checkpoint\": {{\"file\": \"labs/results/demo.safetensors\", \"sha256\": \"{}\"}}}}}}",
            sha256_hex(b"weights")
        );
        std::fs::write(r.join(RESULTS_DIR).join("demo.json"), text).unwrap();
        assert_eq!(check_results(r), (vec![], 1));
        std::fs::write(&weights, b"other weights").unwrap();
        let (problems, _) = check_results(r);
        assert_eq!(
            problems[0].to_string(),
            "stale: labs/results/demo.safetensors holds other bytes than labs/results/demo.json records; \
             regenerate it with `scripts/lab.sh demo` and commit both files"
        );
        std::fs::remove_file(&weights).unwrap();
        assert!(check_results(r).0[0].to_string().contains("demo.safetensors is missing"));
        // a checkpoint nothing records
        std::fs::write(r.join(RESULTS_DIR).join("stray.safetensors"), b"x").unwrap();
        let (problems, _) = check_results(r);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[1].to_string().starts_with("error: labs/results/stray.safetensors: no results file records it"));
        assert_eq!(checkpoint_files(r).unwrap().len(), 1);
    }

    #[test]
    fn results_of_a_removed_lab_or_not_from_a_lab_are_errors() {
        let tmp = repo();
        let r = tmp.path();
        write_results(r, "gone", "0000");
        std::fs::write(r.join(RESULTS_DIR).join("demo.json"), "{\"lab\": \"demo\"}").unwrap();
        let (problems, n) = check_results(r);
        assert_eq!(n, 2);
        let msgs: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            msgs,
            [
                "error: labs/results/demo.json: no \"code_hash\" string: not written by a lab",
                "error: labs/results/gone.json: its lab labs/src/bin/gone.rs does not exist; \
                 restore the lab or remove the results file",
            ]
        );
    }

    #[test]
    fn comments_docs_and_layout_leave_the_hash_and_code_changes_it() {
        let tmp = repo();
        let r = tmp.path();
        let module = r.join("agentrl/src/ch01.rs");
        std::fs::write(&module, "/// One.\npub fn one() -> i64 {\n    1 // the unit\n}\n").unwrap();
        let before = code_hash(r, "demo").unwrap();
        for same in [
            "/// One, reworded.\npub fn one() -> i64 { 1 }\n",
            "// generated from book/src/01-x.md:999\n#[doc = \"other\"]\npub fn one()\n  -> i64 {\n1\n}\n",
            "//! The module.\n#![doc = \"more\"]\npub fn one() -> i64 { /* block */ 1 }\n",
        ] {
            std::fs::write(&module, same).unwrap();
            assert_eq!(code_hash(r, "demo").unwrap(), before, "{same}");
        }
        for different in [
            "pub fn one() -> i64 { 2 }\n",
            "pub fn one() -> i64 { DOC.len() as i64 }\nconst DOC: &str = \"#[doc]\";\n",
            "#[inline]\npub fn one() -> i64 { 1 }\n",
            "pub fn one() -> i64 { let s = \"/// not a doc\"; 1 }\n",
        ] {
            std::fs::write(&module, different).unwrap();
            assert_ne!(code_hash(r, "demo").unwrap(), before, "{different}");
        }
        // A file that is not Rust is hashed as it is: any byte counts.
        std::fs::write(&module, "pub fn one() -> i64 { 1 \"unclosed\n").unwrap();
        let broken = code_hash(r, "demo").unwrap();
        std::fs::write(&module, "pub fn one() -> i64 {  1 \"unclosed\n").unwrap();
        assert_ne!(code_hash(r, "demo").unwrap(), broken);
    }

    #[test]
    fn a_named_item_counts_only_when_something_that_counts_names_it() {
        let tmp = repo();
        let r = tmp.path();
        let module = r.join("agentrl/src/ch01.rs");
        // the lab calls `one`, which reaches `helper`, the type `Unit`, its impls, and `Scale`
        let base = "use std::fmt;\npub fn one() -> i64 { helper() }\n\
                    fn helper() -> i64 { Unit.scale() + Unit::ONE }\n\
                    pub struct Unit;\nimpl Unit { const ONE: i64 = 1; }\n\
                    pub trait Scale { fn scale(&self) -> i64; }\n\
                    impl Scale for Unit { fn scale(&self) -> i64 { 2 } }\n\
                    impl fmt::Display for Unit { fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, \"u\") } }\n";
        std::fs::write(&module, base).unwrap();
        let before = code_hash(r, "demo").unwrap();
        // what the lab cannot reach: new functions, constants, macros, types, traits and their
        // impls (a std trait's impl for a type nobody names), and `use` lines
        for same in [
            "pub fn unused() -> i64 { 5 }\n",
            "pub const LIMIT: i64 = 3;\nmacro_rules! twice { ($x:expr) => { $x * 2 } }\n",
            "use std::collections::HashMap;\n",
            "pub struct Other;\nimpl fmt::Display for Other { fn fmt(&self, _: &mut fmt::Formatter) -> fmt::Result { Ok(()) } }\n",
            "pub trait Shift { fn shift(&self) -> i64; }\nimpl Shift for Other { fn shift(&self) -> i64 { 1 } }\npub struct Other;\n",
        ] {
            std::fs::write(&module, format!("{base}{same}")).unwrap();
            assert_eq!(code_hash(r, "demo").unwrap(), before, "{same}");
        }
        // what it reaches: each function on the way, the type's inherent and trait impls (a
        // std trait's too), another type's impl of a reached trait, and a trait found by its
        // method's name alone
        for different in [
            base.replace("helper() }", "helper() + 0 }"),
            base.replace("const ONE: i64 = 1;", "const ONE: i64 = 2;"),
            base.replace("{ 2 }", "{ 3 }"),
            base.replace("\"u\"", "\"v\""),
            format!("{base}pub struct Other;\nimpl Scale for Other {{ fn scale(&self) -> i64 {{ 4 }} }}\n"),
            format!("{base}pub trait Double {{ fn helper(&self) -> i64; }}\n"),
            // an impl for a type no item defines (a macro made it) cannot be followed: it counts
            format!("{base}impl Default for Made {{ fn default() -> Self {{ Made }} }}\n"),
        ] {
            std::fs::write(&module, &different).unwrap();
            assert_ne!(code_hash(r, "demo").unwrap(), before, "{different}");
        }
        // the labs library likewise: a helper no lab calls does not count, one it calls does
        std::fs::write(&module, base).unwrap();
        let lib = r.join("labs/src/lib.rs");
        let lib_text = std::fs::read_to_string(&lib).unwrap();
        std::fs::write(&lib, format!("{lib_text}pub fn spare() -> u64 {{ 9 }}\n")).unwrap();
        assert_eq!(code_hash(r, "demo").unwrap(), before, "an unused labs helper");
        std::fs::write(&lib, lib_text.replace("{ 3 }", "{ 4 }")).unwrap();
        assert_ne!(code_hash(r, "demo").unwrap(), before, "a labs helper the lab calls");
        std::fs::write(&lib, lib_text).unwrap();
        // a lab whose text cannot be read reaches everything
        std::fs::write(&module, base).unwrap();
        std::fs::write(r.join("labs/src/bin/demo.rs"), "fn main() { \"unclosed }\n").unwrap();
        let broken = code_hash(r, "demo").unwrap();
        std::fs::write(&module, format!("{base}pub fn unused() -> i64 {{ 5 }}\n")).unwrap();
        assert_ne!(code_hash(r, "demo").unwrap(), broken);
    }

    #[test]
    fn moving_an_item_between_modules_or_within_one_leaves_the_hash() {
        let tmp = repo();
        let r = tmp.path();
        let (ch01, ch02) = (r.join("agentrl/src/ch01.rs"), r.join("agentrl/src/ch02.rs"));
        std::fs::write(&ch01, "pub fn one() -> i64 { helper() }\nfn helper() -> i64 { 1 }\n").unwrap();
        std::fs::write(&ch02, "pub fn two() -> i64 { 2 }\n").unwrap();
        let before = code_hash(r, "demo").unwrap();
        // reordered within a module, then moved to the next one (a chapter's appendix, say)
        std::fs::write(&ch01, "fn helper() -> i64 { 1 }\npub fn one() -> i64 { helper() }\n").unwrap();
        assert_eq!(code_hash(r, "demo").unwrap(), before, "reordered");
        std::fs::write(&ch01, "pub fn one() -> i64 { helper() }\n").unwrap();
        std::fs::write(&ch02, "pub fn two() -> i64 { 2 }\nfn helper() -> i64 { 1 }\n").unwrap();
        assert_eq!(code_hash(r, "demo").unwrap(), before, "moved");
        // the moved item still counts: editing it stales the lab
        std::fs::write(&ch02, "pub fn two() -> i64 { 2 }\nfn helper() -> i64 { 5 }\n").unwrap();
        assert_ne!(code_hash(r, "demo").unwrap(), before, "edited after the move");
    }

    #[test]
    fn a_tangle_in_memory_is_hashed_as_the_same_files_on_disk() {
        let tmp = repo();
        let r = tmp.path();
        write_results(r, "demo", &code_hash(r, "demo").unwrap());
        let on_disk = vec![
            ("lib.rs".to_string(), "pub mod ch01;\n".to_string()),
            ("ch01.rs".to_string(), "pub fn one() -> i64 { 1 }\n".to_string()),
        ];
        assert_eq!(code_hash_with(r, "demo", Sources::Tangled(&on_disk)).unwrap(), code_hash(r, "demo").unwrap());
        assert_eq!(check_results_with(r, Sources::Tangled(&on_disk)), (vec![], 1));
        let edited = vec![on_disk[0].clone(), ("ch01.rs".to_string(), "pub fn one() -> i64 { 7 }\n".to_string())];
        let (problems, _) = check_results_with(r, Sources::Tangled(&edited));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(matches!(problems[0].kind, ProblemKind::Stale { .. }), "{problems:?}");
        assert_eq!(check_results(r), (vec![], 1), "the files on disk are unchanged");
    }
}
