//! `$…$` and `$$…$$` to MathML at build time, so the rendered book needs no math script.

use std::ops::Range;

use pulldown_cmark::{Event, Parser};
use pulldown_latex::config::DisplayMode;
use pulldown_latex::{push_mathml, RenderConfig, Storage};

/// Markdown extensions that change where math can appear: the book model's, which are
/// mdBook's (tables, footnotes, strikethrough, task lists, heading attributes) and math.
pub use tangle::book::markdown_options;

/// One formula of a page: its byte range (delimiters included) and LaTeX source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Formula {
    pub span: Range<usize>,
    pub tex: String,
    /// `$$…$$`: typeset as a display (block) formula.
    pub display: bool,
}

/// Every `$…$` and `$$…$$` of a Markdown page, in order; math inside code is not math.
pub fn formulas(markdown: &str) -> Vec<Formula> {
    Parser::new_ext(markdown, markdown_options())
        .into_offset_iter()
        .filter_map(|(event, span)| match event {
            Event::InlineMath(tex) => Some(Formula { span, tex: tex.into_string(), display: false }),
            Event::DisplayMath(tex) => Some(Formula { span, tex: tex.into_string(), display: true }),
            _ => None,
        })
        .collect()
}

/// Byte offsets of `$` signs outside math and code: formulas the Markdown parser did not
/// read as math, which the HTML book would show as raw TeX. Three ways to write one:
/// a space just inside the dollars (`$ x $`), a `|` in a table cell (it splits the cell,
/// `\vert` does not), or math inside an HTML block (HTML is passed through untouched).
/// A dollar sign meant as text is written `\$` and is not reported.
pub fn stray_dollars(markdown: &str) -> Vec<usize> {
    use pulldown_cmark::{LinkType, Tag, TagEnd};
    let mut stray = Vec::new();
    let (mut in_code_block, mut in_autolink) = (false, false);
    // HTML comments are never shown; a comment may run over several HTML events.
    let comments = tangle::book::html_comments(markdown);
    for (event, span) in Parser::new_ext(markdown, markdown_options()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => {
                in_code_block = true;
                continue;
            }
            Event::End(TagEnd::CodeBlock) => {
                in_code_block = false;
                continue;
            }
            // An autolink's text is its address, where `$` is a plain character.
            Event::Start(Tag::Link { link_type: LinkType::Autolink, .. }) => {
                in_autolink = true;
                continue;
            }
            Event::End(TagEnd::Link) => {
                in_autolink = false;
                continue;
            }
            Event::Text(_) if !in_code_block && !in_autolink => {}
            Event::Html(_) | Event::InlineHtml(_) if !in_code_block => {}
            _ => continue,
        }
        // Offsets in the source, not the event's text: an escape (`\$`) is dropped from
        // the text, and its backslash is what marks the dollar as meant.
        for (i, _) in markdown[span.clone()].match_indices('$') {
            let at = span.start + i;
            let commented = comments.iter().any(|c| c.contains(&at));
            if !commented && !markdown[..at].ends_with('\\') {
                stray.push(at);
            }
        }
    }
    stray.dedup();
    stray
}

/// Typeset LaTeX as a `<math>` element (MathML Core). Unknown commands and syntax errors
/// are errors, never silently rendered in red.
pub fn to_mathml(tex: &str, display: bool) -> Result<String, String> {
    let storage = Storage::new();
    let mut events = Vec::new();
    for event in pulldown_latex::Parser::new(tex, &storage) {
        match event {
            Ok(e) => events.push(Ok::<_, pulldown_latex::ParserError>(e)),
            Err(e) => return Err(e.to_string().trim_end().replace('\n', " ")),
        }
    }
    let config = RenderConfig {
        display_mode: if display { DisplayMode::Block } else { DisplayMode::Inline },
        ..Default::default()
    };
    let mut out = String::new();
    push_mathml(&mut out, events.into_iter(), config).map_err(|e| e.to_string())?;
    let out = mended(&out);
    if let Some(raw) = untypeset_tex(&out) {
        return Err(format!("pulldown-latex cannot typeset `{raw}` here (it would show as raw TeX)"));
    }
    Ok(out)
}

/// What pulldown-latex 0.8 writes wrong, put right: a TeX space (`\ `, `~`) comes out as the
/// escaped entity `&amp;nbsp;`, which a browser shows as the text `&nbsp;` (a no-break
/// space is meant), `\mu` as U+00B5 MICRO SIGN, not U+03BC GREEK SMALL LETTER MU, and a bare
/// `\Vert` as a stretchy fence, which Chromium stretches over the whole row (TeX stretches a
/// delimiter only after `\left`/`\right`, which pulldown-latex writes without `symmetric`).
fn mended(mathml: &str) -> String {
    mathml
        .replace("&amp;nbsp;", "\u{a0}")
        .replace('\u{b5}', "\u{3bc}")
        .replace("<mo symmetric=\"true\" stretchy=\"true\">‖</mo>", "<mo stretchy=\"false\">‖</mo>")
}

/// The line (0-based, within `tex`) where a formula that `to_mathml` rejects goes wrong: the
/// first line whose prefix of the formula already fails with the same kind of error. The
/// parser reports no position, only a window of text around it, so a multi-line `$$` formula
/// would otherwise be reported at its first line. An unclosed group is reported where it opens.
pub fn error_line(tex: &str, display: bool) -> Option<usize> {
    let kind = |message: &str| message.split("╭─►").next().unwrap_or("").trim().to_string();
    let whole = kind(&to_mathml(tex, display).err()?);
    let mut end = 0;
    for (line, text) in tex.split_inclusive('\n').enumerate() {
        end += text.len();
        if to_mathml(&tex[..end], display).is_err_and(|e| kind(&e) == whole) {
            return Some(line);
        }
    }
    Some(0)
}

/// TeX that pulldown-latex copied into the MathML as text instead of typesetting it (it does
/// so for `\operatorname*{…}`, a command inside `\mathop{…}` or `\text{…}`): the text of the
/// first `<mi>`, `<mo>` or `<mtext>` holding a backslash before a letter or an escaped
/// character (`\%`), or starting `*{`.
fn untypeset_tex(mathml: &str) -> Option<String> {
    for tag in ["<mi", "<mo", "<mtext"] {
        let mut rest = mathml;
        while let Some(at) = rest.find(tag) {
            let after = &rest[at + tag.len()..];
            let Some(open_end) = after.find('>') else { break };
            let body = &after[open_end + 1..];
            let text = &body[..body.find('<').unwrap_or(body.len())];
            let has_command = text.char_indices().any(|(i, c)| {
                c == '\\' && text[i + 1..].starts_with(|n: char| n.is_ascii_alphabetic() || "%&#_{}$".contains(n))
            });
            if has_command || text.starts_with("*{") {
                return Some(text.to_string());
            }
            rest = body;
        }
    }
    None
}

/// Make a `<math>` fragment safe to paste into Markdown as inline HTML: one line, tags
/// that CommonMark accepts as raw HTML (pulldown-latex 0.8 writes `stretchy="true"minsize=…`
/// for `\Big[`, without the space CommonMark requires between attributes), and no
/// character in its text that Markdown would read as emphasis, code, a link, an escape or
/// a table cell border (they become numeric character references).
pub fn markdown_safe(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + 16);
    let mut in_tag = false;
    let mut in_value = false;
    let mut after_value = false;
    let mut chars = html.chars().peekable();
    while let Some(c) = chars.next() {
        let c = if c == '\n' || c == '\r' { ' ' } else { c };
        if in_tag {
            if after_value && !c.is_whitespace() && c != '>' && c != '/' {
                out.push(' ');
            }
            after_value = false;
            match c {
                '"' if in_value => {
                    in_value = false;
                    after_value = true;
                }
                '"' => in_value = true,
                '>' if !in_value => in_tag = false,
                _ => {}
            }
            out.push(c);
            continue;
        }
        match c {
            // pulldown-latex writes `<` and `>` as operators unescaped: `<mo><</mo>`
            '<' if chars.peek().is_some_and(|n| n.is_ascii_alphabetic() || *n == '/') => {
                in_tag = true;
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '*' | '_' | '`' | '[' | ']' | '|' | '~' | '$' | '!' | '^' => {
                out.push_str(&format!("&#{};", c as u32));
            }
            _ => out.push(c),
        }
    }
    out
}

/// Check that every tag of an HTML fragment is one CommonMark passes through as raw
/// inline HTML (`<name attr="v" …>`, `</name>`, `<name … />`); returns the first that is not.
pub fn check_inline_html(html: &str) -> Result<(), String> {
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        let tail = &rest[start..];
        let end = tail.find('>').ok_or_else(|| format!("unclosed tag at `{}`", truncate(tail)))?;
        let tag = &tail[..=end];
        if !is_inline_tag(tag) {
            return Err(format!("`{}` is not a tag Markdown passes through", truncate(tag)));
        }
        rest = &tail[end + 1..];
    }
    Ok(())
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(60) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn is_inline_tag(tag: &str) -> bool {
    let inner = &tag[1..tag.len() - 1];
    if let Some(name) = inner.strip_prefix('/') {
        return is_name(name.trim_end());
    }
    let inner = inner.strip_suffix('/').unwrap_or(inner);
    let name_end = inner.find(char::is_whitespace).unwrap_or(inner.len());
    if !is_name(&inner[..name_end]) {
        return false;
    }
    // attributes: whitespace, name, optional ="value"; each separated by whitespace
    let mut attrs = &inner[name_end..];
    loop {
        let trimmed = attrs.trim_start();
        if trimmed.is_empty() {
            return true;
        }
        if trimmed.len() == attrs.len() {
            return false; // no whitespace before an attribute
        }
        let name_len = trimmed
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_.:-".contains(c)))
            .unwrap_or(trimmed.len());
        if name_len == 0 {
            return false;
        }
        attrs = &trimmed[name_len..];
        if let Some(value) = attrs.strip_prefix("=\"") {
            let Some(close) = value.find('"') else { return false };
            attrs = &value[close + 1..];
        }
    }
}

fn is_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failing_line_of_a_formula_is_found() {
        assert_eq!(error_line("a + b", true), None);
        assert_eq!(error_line("a\n+ b\n+ \\nosuchcommand\n+ c", true), Some(2));
        // an unclosed group is reported on the line that opens it
        assert_eq!(error_line("a\n+ \\frac{1\n{2}\n+ c", true), Some(1));
        assert_eq!(error_line("\\nosuch", false), Some(0));
    }

    #[test]
    fn finds_inline_and_display_math_but_not_code() {
        let md = "Let $x_1$ be `$not math$`.\n\n$$V^*(s) = \\max_a Q(s, a)$$\n\n```text\n$ echo $HOME\n```\n";
        let f = formulas(md);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!((f[0].tex.as_str(), f[0].display), ("x_1", false));
        assert_eq!(&md[f[0].span.clone()], "$x_1$");
        assert!(f[1].display);
        assert_eq!(&md[f[1].span.clone()], "$$V^*(s) = \\max_a Q(s, a)$$");
    }

    #[test]
    fn dollars_that_are_not_math_are_found() {
        // Each of these leaves a `$` that the parser did not read as math.
        let spaced = "A formula $ x $ here.\n";
        assert_eq!(stray_dollars(spaced), vec![10, 14]);
        let table = "| a | b |\n| --- | --- |\n| $|x|$ | abs |\n";
        // The row has more cells than the header, so the parser drops the last: one `$` is left.
        assert_eq!(stray_dollars(table), vec![26], "{table}");
        let html = "<div>\n$x$\n</div>\n";
        assert_eq!(stray_dollars(html), vec![6, 8]);
        // Math, code, an escaped dollar and a code block are not stray.
        let fine = "Cost \\$5, $x_1$ and `$HOME`.\n\n```sh\necho $PATH\n```\n\n$$y$$\n";
        assert_eq!(stray_dollars(fine), Vec::<usize>::new());
        let table_ok = "| a |\n| --- |\n| $\\vert x \\vert$ |\n";
        assert_eq!(stray_dollars(table_ok), Vec::<usize>::new());
        let hidden = "A <!-- TODO: $\\gamma$ --> b.\n\n<!--\nexplain $x$ here\n-->\n\nSee <https://x.org/a$b>.\n";
        assert_eq!(stray_dollars(hidden), Vec::<usize>::new());
    }

    #[test]
    fn spaces_and_mu_come_out_as_meant() {
        let m = to_mathml(r"a\ b~c \mu", false).unwrap();
        assert_eq!(m.matches("<mtext>\u{a0}</mtext>").count(), 2, "{m}");
        assert!(m.contains("<mi>\u{3bc}</mi>") && !m.contains('\u{b5}'), "{m}");
        assert!(!m.contains("&amp;"), "{m}");
    }

    /// Every formula of every page of the book typesets, with no entity shown as text and no
    /// micro sign for a mu.
    #[test]
    fn every_formula_in_the_book_typesets_cleanly() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src");
        let mut pages: Vec<_> = std::fs::read_dir(&src).unwrap().map(|e| e.unwrap().path()).collect();
        pages.retain(|p| p.extension().is_some_and(|x| x == "md"));
        pages.sort();
        let (mut count, mut bad) = (0, Vec::new());
        for page in &pages {
            let text = std::fs::read_to_string(page).unwrap();
            for f in formulas(&text) {
                count += 1;
                match to_mathml(&f.tex, f.display) {
                    Ok(m) if m.contains("&amp;") || m.contains('\u{b5}') => {
                        bad.push(format!("{}: `{}` -> {m}", page.display(), f.tex))
                    }
                    Ok(_) => {}
                    Err(e) => bad.push(format!("{}: `{}`: {e}", page.display(), f.tex)),
                }
            }
        }
        assert!(count > 500, "only {count} formulas found in {}", src.display());
        assert!(bad.is_empty(), "{} of {count} formulas:\n{}", bad.len(), bad.join("\n"));
    }

    #[test]
    fn typesets_to_mathml() {
        let m = to_mathml("\\pi_\\theta(a \\mid s)", false).unwrap();
        assert!(m.starts_with("<math display=\"inline\">"), "{m}");
        assert!(m.contains("<msub><mi>π</mi><mi>θ</mi></msub>"), "{m}");
        assert!(m.ends_with("</math>"));
        let d = to_mathml("\\frac{1}{2} \\sum_{k \\ge 0} \\gamma^k", true).unwrap();
        assert!(d.starts_with("<math display=\"block\">"), "{d}");
        assert!(d.contains("<mfrac>") && d.contains("<munderover>") || d.contains("<munder>"), "{d}");
        assert!(d.contains("<msup>"), "{d}");
    }

    #[test]
    fn a_bare_norm_bar_does_not_stretch() {
        let m = to_mathml("\\mathrm{KL}(\\pi_\\theta \\Vert \\pi_{\\text{ref}})", false).unwrap();
        assert!(m.contains("<mo stretchy=\"false\">‖</mo>"), "{m}");
        let fenced = to_mathml("\\left\\Vert x^2 \\right\\Vert", false).unwrap();
        assert!(!fenced.contains("stretchy=\"false\">‖"), "{fenced}");
    }

    #[test]
    fn bad_latex_is_an_error() {
        assert!(to_mathml("\\frac{1}{", false).is_err());
        assert!(to_mathml("\\nosuchcommand x", false).is_err());
    }

    #[test]
    fn tex_the_typesetter_copies_as_text_is_an_error() {
        for tex in ["\\operatorname*{arg\\,max}_a Q", "\\mathop{\\mathbb{E}} x", "\\text{\\textit{x}}", "\\text{50\\%}"] {
            let err = to_mathml(tex, false).unwrap_err();
            assert!(err.contains("cannot typeset"), "{tex}: {err}");
        }
        // What the book writes still typesets.
        for tex in ["\\arg\\max_a Q(s, a)", "\\mathbb{E}[x]", "\\text{Var}", "a \\setminus b"] {
            to_mathml(tex, false).unwrap();
        }
    }

    #[test]
    fn big_delimiters_become_valid_inline_html() {
        let raw = to_mathml("\\Big[ x \\Big]", false).unwrap();
        let safe = markdown_safe(&raw);
        assert!(safe.contains("stretchy=\"true\" minsize=\"1.8em\""), "{safe}");
        check_inline_html(&safe).unwrap();
    }

    #[test]
    fn inline_html_check() {
        assert!(check_inline_html("<math display=\"inline\"><mi>x</mi><mspace width=\"1em\" /></math>").is_ok());
        assert!(check_inline_html("<mo a=\"1\"b=\"2\">[</mo>").is_err());
        assert!(check_inline_html("<mo>x").is_ok());
        assert!(check_inline_html("<mo").is_err());
    }

    #[test]
    fn markdown_safe_escapes_text_not_tags() {
        let s = markdown_safe("<mi mathvariant=\"normal\">a_b*c|d</mi>\n<mo>[</mo><mo><</mo><mo>></mo>");
        assert_eq!(
            s,
            "<mi mathvariant=\"normal\">a&#95;b&#42;c&#124;d</mi> <mo>&#91;</mo><mo>&lt;</mo><mo>&gt;</mo>"
        );
        check_inline_html(&s).unwrap();
        check_inline_html(&markdown_safe(&to_mathml("\\gamma < 1 > 0", false).unwrap())).unwrap();
    }
}
