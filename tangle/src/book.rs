//! The book model: chapters in SUMMARY order, their code blocks and recorded outputs,
//! with byte offsets and Markdown line numbers kept for error messages and refresh.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use pulldown_cmark::{CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};

/// An error located in a book file; `Display` is `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookError {
    pub path: PathBuf,
    pub line: usize,
    /// 1-based column, or 0 when the error is about a whole line.
    pub column: usize,
    pub message: String,
}

impl BookError {
    pub fn new(path: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        BookError { path: path.into(), line, column: 0, message: message.into() }
    }

    pub fn at_column(mut self, column: usize) -> Self {
        self.column = column;
        self
    }
}

impl fmt::Display for BookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 && self.column > 0 {
            write!(f, "{}:{}:{}: {}", self.path.display(), self.line, self.column, self.message)
        } else if self.line > 0 {
            write!(f, "{}:{}: {}", self.path.display(), self.line, self.message)
        } else {
            write!(f, "{}: {}", self.path.display(), self.message)
        }
    }
}

impl std::error::Error for BookError {}

/// What the toolchain does with a fenced code block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// ```` ```rust ```` whose first line is `//@save`: items that become the `agentrl` crate.
    Saved,
    /// Any other compiled `rust` block: runs, in order, inside the chapter's program.
    Run,
    /// Shown but never compiled: `rust,ignore` and every non-Rust fence.
    Ignored,
}

/// A fenced code block of a chapter.
#[derive(Debug, Clone)]
pub struct CodeBlock {
    pub kind: BlockKind,
    /// The Markdown file the block is in: its chapter's file, or one of the chapter's parts.
    pub path: PathBuf,
    /// The fence's info string, e.g. `rust,should_panic`.
    pub info: String,
    /// The block's text; for a saved block, without its `//@save` line.
    pub code: String,
    /// Markdown line (1-based) of the first line of `code`.
    pub code_line: usize,
    /// Markdown line of the opening fence.
    pub fence_line: usize,
    /// Byte range of the whole fenced block, opening fence to closing fence (no newline after).
    pub span: Range<usize>,
    /// `rust,should_panic`: the block must panic; the program goes on after it.
    pub should_panic: bool,
    /// `rust,no_run`: the block is compiled with the others but never runs (it prints
    /// nothing, and the names it binds are not visible to later blocks).
    pub no_run: bool,
    /// The recorded `Output:` that follows a run block.
    pub output: Option<OutputBlock>,
}

/// A recorded output: the paragraph `Output:` followed by a ```` ```text ```` fence.
#[derive(Debug, Clone)]
pub struct OutputBlock {
    /// Byte range from the start of `Output:` to the end of the closing fence.
    pub span: Range<usize>,
    /// The recorded text, exactly as between the fences (ends with a newline unless empty).
    pub text: String,
    /// Markdown line of the `Output:` paragraph.
    pub line: usize,
}

/// One chapter file, e.g. `book/src/02-rl-fundamentals.md`.
#[derive(Debug, Clone)]
pub struct Chapter {
    /// The selector: `02`, or `A` for an appendix.
    pub id: String,
    /// `rl-fundamentals`.
    pub slug: String,
    /// Title as written in SUMMARY.md.
    pub title: String,
    /// File name inside `src/`, e.g. `02-rl-fundamentals.md`.
    pub file: String,
    /// Path of the file (the book directory joined with `src/` and `file`).
    pub path: PathBuf,
    pub source: String,
    /// Its blocks, the chapter file's first, then each part's.
    pub blocks: Vec<CodeBlock>,
    /// Its code pages: pages nested under the chapter in SUMMARY.md whose names are not chapter
    /// names (`ch04-code.md` under `04-environments-and-tools.md`): saved code and prose,
    /// compiled with the chapter.
    pub parts: Vec<ChapterPart>,
}

/// A page of a chapter other than its own file: saved blocks and prose only (its code is
/// compiled into the chapter's module; run blocks and outputs belong in the chapter's file).
#[derive(Debug, Clone)]
pub struct ChapterPart {
    /// Title as written in SUMMARY.md.
    pub title: String,
    /// File name inside `src/`.
    pub file: String,
    pub path: PathBuf,
    pub source: String,
}

impl Chapter {
    /// The Markdown text `block` was parsed from: the chapter's file's, or a part's.
    pub fn source_of(&self, block: &CodeBlock) -> &str {
        self.parts.iter().find(|p| p.path == block.path).map_or(&self.source, |p| &p.source)
    }

    /// The file name (inside `src/`) that `block` is in.
    pub fn file_of(&self, block: &CodeBlock) -> &str {
        self.parts.iter().find(|p| p.path == block.path).map_or(&self.file, |p| &p.file)
    }

    /// Rust module name of the chapter in `agentrl`: `ch02_rl_fundamentals`, `app_a_math`.
    pub fn module_name(&self) -> String {
        let slug = self.slug.replace('-', "_");
        if self.id.chars().all(|c| c.is_ascii_digit()) {
            format!("ch{}_{}", self.id, slug)
        } else {
            format!("app_{}_{}", self.id.to_ascii_lowercase(), slug)
        }
    }

    pub fn saved_blocks(&self) -> impl Iterator<Item = &CodeBlock> {
        self.blocks.iter().filter(|b| b.kind == BlockKind::Saved)
    }

    pub fn run_blocks(&self) -> impl Iterator<Item = &CodeBlock> {
        self.blocks.iter().filter(|b| b.kind == BlockKind::Run)
    }
}

/// The book: its directory and its chapters in SUMMARY order (the build order).
#[derive(Debug, Clone)]
pub struct Book {
    pub dir: PathBuf,
    pub chapters: Vec<Chapter>,
    /// Chapter-named files (`NN-slug.md`) in `src/` that SUMMARY.md does not list: never checked.
    pub unlisted: Vec<PathBuf>,
}

impl Book {
    /// Load `dir/src/SUMMARY.md` and every chapter it lists.
    pub fn load(dir: &Path) -> Result<Book, BookError> {
        match Book::load_partial(dir)? {
            (book, None) => Ok(book),
            (_, Some(e)) => Err(e),
        }
    }

    /// [`Book::load`], but a chapter that cannot be read or parsed (an unterminated fence, an
    /// Output block in the wrong place) ends the book there instead of failing it: the chapters
    /// before it, and its error. SUMMARY.md's own errors still fail. The checker uses this so
    /// that one malformed chapter does not stop the chapters before it from being checked.
    pub fn load_partial(dir: &Path) -> Result<(Book, Option<BookError>), BookError> {
        let summary_path = dir.join("src").join("SUMMARY.md");
        let summary = read_text(&summary_path)?;
        let mut chapters: Vec<Chapter> = Vec::new();
        let entries = summary_entries(&summary);
        // A chapter named on a line that holds no link (`- [Title] (file.md)`, with a space)
        // would silently drop out of the book.
        let commented = commented_lines(&summary);
        for (k, line) in summary.lines().enumerate() {
            if commented.contains(&(k + 1)) {
                continue; // mdBook ignores what an HTML comment holds
            }
            let named = line
                .split(|c: char| c.is_whitespace() || "()[]<>".contains(c))
                .find(|word| chapter_file_parts(word.rsplit('/').next().unwrap_or(word)).is_some());
            if let (Some(file), false) = (named, entries.iter().any(|e| e.line == k + 1)) {
                return Err(BookError::new(
                    &summary_path,
                    k + 1,
                    format!("this line names {file} but holds no link to it; write `- [Title]({file})`"),
                ));
            }
        }
        let mut malformed = None;
        let mut under_chapter = false; // the last entry that is not nested is a chapter
        for entry in &entries {
            if entry.title.contains('$') {
                return Err(BookError::new(
                    &summary_path,
                    entry.line,
                    format!(
                        "the title `{}` holds `$`: titles are plain text (the sidebar, the page's \
                         title and the library's links do not typeset math); write it in words",
                        entry.title
                    ),
                ));
            }
            // A page nested under a chapter's entry is that chapter's code page.
            let nested = summary.lines().nth(entry.line - 1).is_some_and(|l| l.starts_with([' ', '\t']));
            if !nested {
                under_chapter = chapter_file_parts(&entry.file).is_some();
            }
            let Some((id, slug)) = chapter_file_parts(&entry.file) else {
                let local_page = entry.file.ends_with(".md") && !entry.file.contains("://");
                if let (true, true, Some(chapter)) = (nested && local_page, under_chapter, chapters.last_mut()) {
                    if let Err(e) = load_part(dir, entry, chapter) {
                        malformed = Some(e);
                        break;
                    }
                } else {
                    check_non_chapter_page(dir, &entry.file)?;
                }
                continue;
            };
            if chapters.iter().any(|c: &Chapter| c.id == id) {
                return Err(BookError::new(
                    &summary_path,
                    entry.line,
                    format!("chapter {id} is listed twice"),
                ));
            }
            let path = dir.join("src").join(&entry.file);
            let read = read_text(&path).map_err(|mut e| {
                if e.line == 0 {
                    e = BookError::new(
                        &summary_path,
                        entry.line,
                        format!("SUMMARY.md lists {} but {}", entry.file, e.message),
                    );
                }
                e
            });
            let (source, blocks) = match read.and_then(|source| parse_blocks(&path, &source).map(|b| (source, b))) {
                Ok(parsed) => parsed,
                Err(e) => {
                    malformed = Some(e);
                    break;
                }
            };
            chapters.push(Chapter {
                id,
                slug,
                title: entry.title.clone(),
                file: entry.file.clone(),
                path,
                source,
                blocks,
                parts: Vec::new(),
            });
        }
        let mut unlisted: Vec<PathBuf> = std::fs::read_dir(dir.join("src"))
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_else(|_| Vec::new())
            .into_iter()
            .filter(|name: &String| chapter_file_parts(name).is_some())
            .filter(|name| !entries.iter().any(|e| &e.file == name))
            .map(|name| dir.join("src").join(name))
            .collect();
        unlisted.sort();
        Ok((Book { dir: dir.to_path_buf(), chapters, unlisted }, malformed))
    }

    /// An unlisted chapter file whose id is `id` (so a selector can say it exists).
    pub fn unlisted_with_id(&self, id: &str) -> Option<&Path> {
        self.unlisted.iter().map(PathBuf::as_path).find(|p| {
            p.file_name()
                .and_then(|n| chapter_file_parts(&n.to_string_lossy()))
                .is_some_and(|(i, _)| i.eq_ignore_ascii_case(id) || (id.len() == 1 && i == format!("0{id}")))
        })
    }

    /// Position of the chapter with this id in build order.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.chapters.iter().position(|c| c.id == id)
    }

    /// Valid chapter ids, in build order.
    pub fn ids(&self) -> Vec<&str> {
        self.chapters.iter().map(|c| c.id.as_str()).collect()
    }
}

/// Read a code page of `chapter` (a page nested under it) and append its blocks. A code page
/// holds saved blocks and prose: a run block's output would have to be refreshed into a second
/// file, and the chapter's program runs its blocks in one order, the chapter file's.
fn load_part(dir: &Path, entry: &SummaryEntry, chapter: &mut Chapter) -> Result<(), BookError> {
    let path = dir.join("src").join(&entry.file);
    let source = read_text(&path)?;
    let blocks = parse_blocks(&path, &source)?;
    if let Some(b) = blocks.iter().find(|b| b.kind == BlockKind::Run || b.output.is_some()) {
        return Err(BookError::new(
            &path,
            b.fence_line,
            format!(
                "a code page of chapter {} holds saved blocks and prose only; move this run block \
                 (and its output) to {}, or mark it rust,ignore",
                chapter.id, chapter.file
            ),
        ));
    }
    chapter.blocks.extend(blocks);
    let (title, file) = (entry.title.clone(), entry.file.clone());
    chapter.parts.push(ChapterPart { title, file, path, source });
    Ok(())
}

/// A listed page that is not a chapter (library.md, sources.md) is never compiled, so a
/// rust block in it would go silently unchecked: refuse it.
fn check_non_chapter_page(dir: &Path, file: &str) -> Result<(), BookError> {
    if file.contains("://") || file.starts_with('#') || !file.ends_with(".md") {
        return Ok(());
    }
    let path = dir.join("src").join(file);
    let Ok(source) = std::fs::read_to_string(&path) else { return Ok(()) };
    let blocks = parse_blocks(&path, &source)?;
    if let Some(b) = blocks.iter().find(|b| b.kind != BlockKind::Ignored) {
        return Err(BookError::new(
            &path,
            b.fence_line,
            format!(
                "a ```{} block in a page that is not a chapter is never compiled or run; \
                 rename the page NN-slug.md to make it a chapter, or mark the block rust,ignore",
                b.info
            ),
        ));
    }
    Ok(())
}

fn read_text(path: &Path) -> Result<String, BookError> {
    let bytes = std::fs::read(path)
        .map_err(|e| BookError::new(path, 0, format!("cannot be read: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        BookError::new(path, line, "is not valid UTF-8")
    })
}

/// `02-rl-fundamentals.md` -> (`02`, `rl-fundamentals`); `A-math.md` -> (`A`, `math`).
pub fn chapter_file_parts(file: &str) -> Option<(String, String)> {
    let stem = file.strip_suffix(".md")?;
    if stem.contains('/') {
        return None;
    }
    let (id, slug) = stem.split_once('-')?;
    let numeric = id.len() == 2 && id.chars().all(|c| c.is_ascii_digit());
    let appendix = id.len() == 1 && id.chars().all(|c| c.is_ascii_uppercase());
    if !(numeric || appendix) || slug.is_empty() {
        return None;
    }
    Some((id.to_string(), slug.to_string()))
}

struct SummaryEntry {
    title: String,
    file: String,
    line: usize,
}

/// Byte ranges of the HTML comments (`<!-- … -->`) of a text; one left open runs to its end.
pub fn html_comments(text: &str) -> Vec<Range<usize>> {
    let mut comments = Vec::new();
    let mut rest = 0;
    while let Some(open) = text[rest..].find("<!--").map(|i| rest + i) {
        let close = text[open + 4..].find("-->").map_or(text.len(), |i| open + 4 + i + 3);
        comments.push(open..close);
        rest = close;
    }
    comments
}

/// 1-based numbers of the lines that an HTML comment (`<!-- … -->`) touches.
fn commented_lines(text: &str) -> std::collections::HashSet<usize> {
    let lines = LineIndex::new(text);
    let to_lines = |c: Range<usize>| lines.line_of(c.start)..=lines.line_of(c.end.saturating_sub(1).max(c.start));
    html_comments(text).into_iter().flat_map(to_lines).collect()
}

fn summary_entries(summary: &str) -> Vec<SummaryEntry> {
    let lines = LineIndex::new(summary);
    let mut entries = Vec::new();
    let mut current: Option<(String, usize, String)> = None;
    for (event, range) in Parser::new(summary).into_offset_iter() {
        match event {
            Event::Start(Tag::Link { link_type: LinkType::Inline, dest_url, .. }) => {
                current = Some((dest_url.to_string(), lines.line_of(range.start), String::new()));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, _, title)) = current.as_mut() {
                    title.push_str(&t);
                }
            }
            Event::End(TagEnd::Link) => {
                if let Some((file, line, title)) = current.take() {
                    entries.push(SummaryEntry { title, file, line });
                }
            }
            _ => {}
        }
    }
    entries
}

/// Maps byte offsets to 1-based line numbers.
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    pub fn line_of(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }
}

/// A leaf element of the document, in order, as far as outputs care.
enum Leaf {
    Code(usize),
    /// The `Output:` paragraph: its byte range and line.
    OutputLabel { start: usize, end: usize, line: usize },
    Other,
}

/// Parse a chapter's fenced blocks and attach each `Output:` block to the run block before it.
/// The Markdown extensions mdBook enables, so the book is read as mdBook renders it: tables,
/// footnotes, strikethrough, task lists, heading attributes, and math (our preprocessor's).
pub fn markdown_options() -> Options {
    Options::ENABLE_MATH
        | Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// mdBook's directives that paste another file into a page (`{{#include f.rs}}`): the
/// directive's name, if `text` holds one.
fn mdbook_include(text: &str) -> Option<&'static str> {
    // `{{#name ` or `{{#name}}`, without building a pattern for every text of every page
    text.match_indices("{{#").find_map(|(at, _)| {
        let rest = &text[at + 3..];
        ["include", "rustdoc_include", "playground"].into_iter().find(|d| {
            rest.strip_prefix(d).is_some_and(|after| after.starts_with(' ') || after.starts_with("}}"))
        })
    })
}

/// A control character (other than tab, newline and carriage return) in a chapter is almost
/// always a TeX command that a string escape ate on its way into the file: `\beta` written
/// through a tool that reads `\b` as a backspace renders as "eta", silently.
fn check_control_characters(path: &Path, source: &str) -> Result<(), BookError> {
    for (k, line) in source.lines().enumerate() {
        if let Some((col, c)) = line.char_indices().find(|&(_, c)| c.is_control() && c != '\t' && c != '\r') {
            let hint = match c {
                '\u{8}' => " (a backspace: `\\b` read as an escape, as in `\\beta`?)",
                '\u{c}' => " (a form feed: `\\f` read as an escape, as in `\\frac`?)",
                '\u{b}' => " (a vertical tab: `\\v` read as an escape, as in `\\vert`?)",
                '\u{7}' => " (a bell: `\\a` read as an escape, as in `\\alpha`?)",
                _ => "",
            };
            let column = line[..col].chars().count() + 1;
            return Err(BookError::new(
                path,
                k + 1,
                format!("control character U+{:04X}{hint}: write the character it stands for", c as u32),
            )
            .at_column(column));
        }
    }
    Ok(())
}

/// A line that opens a fenced code block (three or more backticks or tildes).
fn opens_fence(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("```") || line.starts_with("~~~")
}

pub fn parse_blocks(path: &Path, source: &str) -> Result<Vec<CodeBlock>, BookError> {
    let lines = LineIndex::new(source);
    check_control_characters(path, source)?;
    let mut blocks: Vec<CodeBlock> = Vec::new();
    let mut leaves: Vec<Leaf> = Vec::new();
    // (info, span start, text) of the fence being read
    let mut in_code: Option<(String, usize, String, Option<usize>)> = None;
    let mut in_paragraph: Option<(usize, String)> = None;
    let mut pending_text_fence: Vec<Option<(Range<usize>, String)>> = Vec::new();

    let parser = Parser::new_ext(source, markdown_options());
    for (event, range) in parser.into_offset_iter() {
        match event {
            Event::Text(text) if in_code.is_none() && mdbook_include(&text).is_some() => {
                let directive = mdbook_include(&text).unwrap_or_default();
                return Err(BookError::new(
                    path,
                    lines.line_of(range.start),
                    format!(
                        "`{{{{#{directive}` pastes another file into the page when mdBook renders it, \
                         but tangle and the checker read the chapter as written, so its code would \
                         never be checked: put the text in the chapter"
                    ),
                ));
            }
            Event::Html(html) | Event::InlineHtml(html) if html.lines().any(opens_fence) => {
                return Err(BookError::new(
                    path,
                    lines.line_of(range.start),
                    "a code fence inside an HTML block (a tag such as <details> or <div> with no \
                     blank line after it) is shown as text and never checked: leave a blank line \
                     after the tag",
                ));
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => {
                        in_code = Some((String::from("\0indented"), range.start, String::new(), None));
                        continue;
                    }
                };
                check_fence_closed(path, source, &lines, range.clone())?;
                in_code = Some((info, range.start, String::new(), None));
            }
            Event::Text(text) if in_code.is_some() => {
                let (_, _, body, first) = in_code.as_mut().unwrap();
                if first.is_none() {
                    *first = Some(range.start);
                }
                body.push_str(&text);
            }
            Event::End(TagEnd::CodeBlock) => {
                let (info, start, body, first) = in_code.take().unwrap();
                if info == "\0indented" {
                    if body.lines().any(|l| opens_fence(l) || l.trim() == SAVE_MARKER) {
                        return Err(BookError::new(
                            path,
                            lines.line_of(start),
                            "this code fence is indented four spaces (or four past a list item's \
                             text), which makes it an indented code block: the fence is shown as \
                             text and its code is never checked; indent it less",
                        ));
                    }
                    leaves.push(Leaf::Other);
                    continue;
                }
                let end = trim_end_newlines(source, range.end);
                let fence_line = lines.line_of(start);
                let code_line = first.map(|o| lines.line_of(o)).unwrap_or(fence_line + 1);
                let lang_attrs: Vec<&str> =
                    info.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).collect();
                let lang = lang_attrs.first().copied().unwrap_or("");
                let is_rust = lang == "rust";
                check_language(path, fence_line, lang, &lang_attrs)?;
                let ignored = lang_attrs.contains(&"ignore");
                let first_line = body.lines().next().unwrap_or("");
                let is_save = first_line.trim() == SAVE_MARKER;
                if is_rust && !ignored && !is_save && looks_like_save_marker(first_line) {
                    return Err(BookError::new(
                        path,
                        code_line,
                        format!(
                            "`{}` looks like a mistyped saved-block marker; write exactly `{SAVE_MARKER}` as the block's \
                             first line (or start this run block with something else)",
                            first_line.trim()
                        ),
                    ));
                }
                let opening = source[start..].lines().next().unwrap_or("").trim_start();
                check_no_swallowed_fence(path, opening, fence_line, code_line, &body, is_rust && !ignored)?;
                let (kind, code, code_line) = if !is_rust || ignored {
                    (BlockKind::Ignored, body, code_line)
                } else if is_save {
                    let rest = body.split_once('\n').map(|(_, r)| r.to_string()).unwrap_or_default();
                    (BlockKind::Saved, rest, code_line + 1)
                } else {
                    (BlockKind::Run, body, code_line)
                };
                let is_text = lang_attrs.first() == Some(&"text");
                leaves.push(Leaf::Code(blocks.len()));
                pending_text_fence.push(if is_text { Some((start..end, String::new())) } else { None });
                blocks.push(CodeBlock {
                    kind,
                    path: path.to_path_buf(),
                    info: info.clone(),
                    code,
                    code_line,
                    fence_line,
                    span: start..end,
                    should_panic: lang_attrs.contains(&"should_panic"),
                    no_run: lang_attrs.contains(&"no_run"),
                    output: None,
                });
            }
            Event::Start(Tag::Paragraph) => in_paragraph = Some((range.start, String::new())),
            Event::Text(t) | Event::Code(t) if in_paragraph.is_some() => {
                in_paragraph.as_mut().unwrap().1.push_str(&t);
            }
            Event::End(TagEnd::Paragraph) => {
                let (start, text) = in_paragraph.take().unwrap();
                if text.trim() == "Output:" {
                    leaves.push(Leaf::OutputLabel { start, end: range.end, line: lines.line_of(start) });
                } else {
                    leaves.push(Leaf::Other);
                }
            }
            Event::Start(Tag::Heading { .. })
            | Event::Start(Tag::Table(_))
            | Event::Start(Tag::HtmlBlock)
            | Event::Rule
            | Event::DisplayMath(_)
                if in_paragraph.is_none() =>
            {
                leaves.push(Leaf::Other);
            }
            _ => {}
        }
    }

    // Pair every `Output:` label with the fence after it and the code block before it.
    let mut outputs = Vec::new();
    for (i, leaf) in leaves.iter().enumerate() {
        let Leaf::OutputLabel { start, end, line } = *leaf else { continue };
        let fence = match leaves.get(i + 1) {
            Some(Leaf::Code(b)) if pending_text_fence[*b].is_some() => *b,
            _ => {
                return Err(BookError::new(
                    path,
                    line,
                    "`Output:` must be followed by a ```text fence holding the recorded output",
                ))
            }
        };
        let owner = match i.checked_sub(1).map(|j| &leaves[j]) {
            Some(Leaf::Code(b)) if blocks[*b].kind == BlockKind::Run => *b,
            Some(Leaf::Code(b)) if blocks[*b].kind == BlockKind::Saved => {
                return Err(BookError::new(
                    path,
                    line,
                    format!(
                        "Output block follows the saved block at line {}; saved blocks print nothing",
                        blocks[*b].fence_line
                    ),
                ))
            }
            _ => {
                return Err(BookError::new(
                    path,
                    line,
                    "Output block has no run block (```rust) directly before it",
                ))
            }
        };
        // --refresh replaces the block's end to the Output fence's end: only blank lines may
        // lie in between (a link definition there, which the parser reports as nothing, would
        // be lost).
        for gap in [blocks[owner].span.end..start, end..blocks[fence].span.start] {
            let text = &source[gap.clone()];
            // (`>` is a blockquote's prefix on the blank lines between the two)
            if let Some(at) = text.find(|c: char| !c.is_whitespace() && c != '>') {
                let found = text[at..].lines().next().unwrap_or("").trim();
                return Err(BookError::new(
                    path,
                    lines.line_of(gap.start + at),
                    format!(
                        "`{found}` stands between the run block at line {} and its recorded Output (line {line}); \
                         only blank lines may, since --refresh rewrites that span: move it after the Output",
                        blocks[owner].fence_line
                    ),
                ));
            }
        }
        let text = blocks[fence].code.clone();
        let span = start..blocks[fence].span.end;
        outputs.push((owner, fence, OutputBlock { span, text, line }));
    }
    let mut remove = Vec::new();
    for (owner, fence, out) in outputs {
        blocks[owner].output = Some(out);
        remove.push(fence);
    }
    let blocks = blocks
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !remove.contains(i))
        .map(|(_, b)| b)
        .collect();
    Ok(blocks)
}

/// The first line of a saved block.
pub const SAVE_MARKER: &str = "//@save";

/// `// @save`, `//@sav`, `//@Save`, `#@save`, `/@save`: close to the marker but not it.
fn looks_like_save_marker(line: &str) -> bool {
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
    if compact == SAVE_MARKER || compact.is_empty() {
        // `// @save` differs only in spacing; `//@Save` only in case.
        return compact == SAVE_MARKER && line.trim() != SAVE_MARKER;
    }
    let starts_like_comment = compact.starts_with('/') || compact.starts_with('#') || compact.starts_with('@');
    starts_like_comment && compact.contains("sav") && edit_distance(&compact, SAVE_MARKER) <= 2
}

fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A fence that holds a line which could open a fence of its own (a run of the fence's
/// character at least as long as its opening fence, then a word: ```` ```rust ````, ```` ```text ````)
/// has almost surely swallowed the prose after it because its own closing fence is missing: say
/// so at the line where it opened. In a rust block an `Output:` paragraph followed by such a run
/// says the same. (A ```` ````rust ```` block may hold ```` ```python ```` lines: a shorter run
/// cannot close it; and --refresh writes an Output's fence longer than any backtick run in it.)
fn check_no_swallowed_fence(
    path: &Path,
    opening: &str,
    fence_line: usize,
    code_line: usize,
    body: &str,
    rust_block: bool,
) -> Result<(), BookError> {
    let fence_char = opening.chars().next().unwrap_or('`');
    let fence_len = opening.chars().take_while(|&c| c == fence_char).count();
    fn fence_run(line: &str, fence_char: char, fence_len: usize) -> Option<&str> {
        let t = line.trim_start();
        let run = t.chars().take_while(|&c| c == '`' || c == '~').count();
        let same = t.chars().take(run).all(|c| c == fence_char);
        (same && run >= fence_len).then(|| &t[run..])
    }
    let fence_run = |line| fence_run(line, fence_char, fence_len);
    let lines: Vec<&str> = body.lines().collect();
    for (k, line) in lines.iter().enumerate() {
        let t = line.trim();
        let opens_fence = fence_run(line).is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_alphabetic()));
        let output_label = rust_block
            && t == "Output:"
            && lines[k + 1..].iter().find(|l| !l.trim().is_empty()).is_some_and(|l| fence_run(l).is_some());
        if opens_fence || output_label {
            return Err(BookError::new(
                path,
                fence_line,
                format!(
                    "the {} {} opened here is probably missing its closing fence: line {} inside it {} ({t}); \
                     close the block with {} before the prose after it",
                    opening.trim_end(),
                    if rust_block { "block" } else { "fence" },
                    code_line + k,
                    if output_label { "starts an Output block" } else { "opens another fence" },
                    &opening[..fence_len * fence_char.len_utf8()]
                ),
            ));
        }
    }
    Ok(())
}

/// Fences the checker would silently skip although they look like Rust, and attributes it
/// cannot honour.
fn check_language(path: &Path, fence_line: usize, lang: &str, attrs: &[&str]) -> Result<(), BookError> {
    if lang != "rust" && (lang == "rs" || lang.eq_ignore_ascii_case("rust")) {
        return Err(BookError::new(
            path,
            fence_line,
            format!(
                "```{lang} is neither compiled nor run: write ```rust (checked), ```rust,ignore (shown only) \
                 or ```text"
            ),
        ));
    }
    if lang == "rust" && attrs.contains(&"compile_fail") {
        return Err(BookError::new(
            path,
            fence_line,
            "```rust,compile_fail is not supported: the checker cannot show that the block fails to compile; \
             use ```rust,ignore and quote the compiler's error in the prose, or a should_panic block",
        ));
    }
    Ok(())
}

fn trim_end_newlines(source: &str, mut end: usize) -> usize {
    let bytes = source.as_bytes();
    while end > 0 && (bytes[end - 1] == b'\n' || bytes[end - 1] == b'\r') {
        end -= 1;
    }
    end
}

/// pulldown-cmark runs an unterminated fence to the end of its container; we refuse it.
fn check_fence_closed(
    path: &Path,
    source: &str,
    lines: &LineIndex,
    range: Range<usize>,
) -> Result<(), BookError> {
    let text = &source[range.start..trim_end_newlines(source, range.end)];
    let opening = text.lines().next().unwrap_or("").trim_start();
    let fence_char = opening.chars().next().unwrap_or('`');
    let fence_len = opening.chars().take_while(|&c| c == fence_char).count();
    let closed = text.lines().count() >= 2
        && text.lines().last().is_some_and(|last| {
            let last = last.trim();
            // Inside a blockquote or list the closing line may carry a container prefix.
            let last = last.trim_start_matches(['>', ' ']);
            last.len() >= fence_len && last.chars().all(|c| c == fence_char)
        });
    if closed {
        Ok(())
    } else {
        Err(BookError::new(
            path,
            lines.line_of(range.start),
            format!(
                "unterminated code fence: the {} fence opened here is never closed",
                opening.split_whitespace().next().unwrap_or(opening)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Result<Vec<CodeBlock>, BookError> {
        parse_blocks(Path::new("ch.md"), src)
    }

    #[test]
    fn code_the_book_model_would_not_see_is_an_error_at_its_line() {
        for (src, says, line) in [
            (
                "Intro.\n\n<details>\n<summary>Run it</summary>\n```rust\nprintln!(\"x\");\n```\n</details>\n",
                "inside an HTML block",
                5,
            ),
            ("Intro.\n\n    ```rust\n    //@save\n    pub fn f() {}\n    ```\n", "indented code block", 3),
            ("Intro.\n\n{{#include part.md}}\n", "`{{#include` pastes another file", 3),
        ] {
            let err = parse(src).unwrap_err();
            assert!(err.message.contains(says), "{err}");
            assert_eq!(err.line, line, "{err}");
        }
        // A footnote's block is read as mdBook renders it: a saved block like any other.
        let footnote = "Text.[^a]\n\n[^a]: The helper:\n\n    ```rust\n    //@save\n    /// H.\n    pub fn h() {}\n    ```\n";
        let blocks = parse(footnote).unwrap();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].kind, BlockKind::Saved);
        // Code spans and an HTML block with a blank line before the fence are fine.
        parse("Write `{{#include f.md}}` in mdBook.\n\n<div>\n\n```rust\nlet x = 1;\n```\n\n</div>\n").unwrap();
    }

    #[test]
    fn classifies_blocks_and_attaches_outputs() {
        let src = "# T\n\n```rust\n//@save\npub fn f() {}\n```\n\nText.\n\n```rust\nprintln!(\"hi\");\n```\n\nOutput:\n\n```text\nhi\n```\n\n```rust,ignore\nnope\n```\n\n```mermaid\ngraph\n```\n";
        let blocks = parse(src).unwrap();
        assert_eq!(blocks.len(), 4);
        assert_eq!(blocks[0].kind, BlockKind::Saved);
        assert_eq!(blocks[0].code, "pub fn f() {}\n");
        assert_eq!(blocks[0].code_line, 5);
        assert_eq!(blocks[1].kind, BlockKind::Run);
        assert_eq!(blocks[1].code_line, 11);
        let out = blocks[1].output.as_ref().unwrap();
        assert_eq!(out.text, "hi\n");
        assert_eq!(out.line, 14);
        assert_eq!(&src[out.span.clone()], "Output:\n\n```text\nhi\n```");
        assert_eq!(&src[blocks[1].span.clone()], "```rust\nprintln!(\"hi\");\n```");
        assert_eq!(blocks[2].kind, BlockKind::Ignored);
        assert_eq!(blocks[3].kind, BlockKind::Ignored);
    }

    #[test]
    fn a_control_character_is_an_error_at_its_column() {
        let err = parse("Intro.\n\nAt $\u{8}eta = 0.1$ only.\n").unwrap_err();
        assert_eq!((err.line, err.column), (3, 5), "{err}");
        assert!(err.message.contains("U+0008") && err.message.contains("beta"), "{err}");
        // tabs and CRLF line ends are text
        parse("a\tb\r\n\n```rust\nlet x = 1;\n```\n").unwrap();
    }

    #[test]
    fn unterminated_fence_is_an_error_at_its_line() {
        let err = parse("para\n\n```rust\nlet x = 1;\n").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.message.contains("unterminated code fence"), "{err}");
    }

    #[test]
    fn output_without_code_block_is_an_error() {
        let err = parse("Intro.\n\nOutput:\n\n```text\n1\n```\n").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.message.contains("no run block"), "{err}");
        let err = parse("```rust\n//@save\nfn f() {}\n```\n\nOutput:\n\n```text\n1\n```\n").unwrap_err();
        assert!(err.message.contains("saved block"), "{err}");
    }

    #[test]
    fn output_label_needs_a_text_fence() {
        let err = parse("```rust\nlet a = 1;\n```\n\nOutput:\n\nplain\n").unwrap_err();
        assert!(err.message.contains("```text"), "{err}");
    }

    #[test]
    fn an_output_fence_missing_its_close_is_an_error_not_swallowed_prose() {
        // The ```text fence runs on to the next bare ``` (the rust block's close), swallowing
        // the prose and the ```rust line: refresh would replace all of it.
        let src = "```rust\nprintln!(\"a\");\n```\n\nOutput:\n\n```text\na\n\nProse.\n\n```rust\nlet b = 2;\n```\n";
        let err = parse(src).unwrap_err();
        assert_eq!(err.line, 7);
        assert!(err.message.contains("missing its closing fence: line 12 inside it opens another fence (```rust)"), "{err}");
        // A recorded output holding fences has a longer fence (as refresh writes it): fine.
        let ok = "```rust\nprintln!(\"a\");\n```\n\nOutput:\n\n````text\n```rust\nx\n```\n````\n";
        assert_eq!(parse(ok).unwrap()[0].output.as_ref().unwrap().text, "```rust\nx\n```\n");
    }

    #[test]
    fn a_longer_fence_may_hold_shorter_fences() {
        let src = "````rust\nlet prompt = r#\"\n```python\nprint(1)\n```\n\"#;\n````\n";
        assert_eq!(parse(src).unwrap()[0].kind, BlockKind::Run);
        let swallowed = "```rust\nlet x = 1;\n\nProse.\n\n```text\nmore\n```\n";
        let err = parse(swallowed).unwrap_err();
        assert!(err.message.contains("the ```rust block opened here is probably missing its closing fence: line 6"), "{err}");
    }

    #[test]
    fn only_blank_lines_may_separate_a_block_from_its_output() {
        let src = "```rust\nprintln!(\"a\");\n```\n\n[mdp]: https://example.org\n\nOutput:\n\n```text\na\n```\n";
        let err = parse(src).unwrap_err();
        assert_eq!(err.line, 5);
        assert!(err.message.contains("`[mdp]: https://example.org` stands between the run block at line 1"), "{err}");
        let src = "```rust\nprintln!(\"a\");\n```\n\nOutput:\n\n[x]: https://example.org\n\n```text\na\n```\n";
        assert_eq!(parse(src).unwrap_err().line, 7);
    }

    #[test]
    fn rust_spelled_otherwise_and_compile_fail_are_refused() {
        for info in ["rs", "Rust", "RUST,ignore"] {
            let err = parse(&format!("```{info}\nlet x: u32 = \"no\";\n```\n")).unwrap_err();
            assert!(err.message.contains("neither compiled nor run"), "{info}: {err}");
        }
        let err = parse("```rust,compile_fail\nlet x: u32 = \"no\";\n```\n").unwrap_err();
        assert!(err.message.contains("compile_fail is not supported"), "{err}");
    }

    #[test]
    fn chapter_file_names() {
        assert_eq!(chapter_file_parts("02-rl-fundamentals.md"), Some(("02".into(), "rl-fundamentals".into())));
        assert_eq!(chapter_file_parts("A-math.md"), Some(("A".into(), "math".into())));
        assert_eq!(chapter_file_parts("library.md"), None);
        assert_eq!(chapter_file_parts("sources.md"), None);
    }

    #[test]
    fn line_index() {
        let idx = LineIndex::new("a\nbc\n\nd");
        assert_eq!(idx.line_of(0), 1);
        assert_eq!(idx.line_of(2), 2);
        assert_eq!(idx.line_of(5), 3);
        assert_eq!(idx.line_of(6), 4);
    }
}
