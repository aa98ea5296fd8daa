//! Render every page of the real book (no mdBook, no network): each must go through the
//! preprocessor without error, keep no `//@save` line, and typeset all its math.

use std::path::Path;

use render::page::{render_page, Page};

#[test]
fn every_page_of_the_book_renders() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../book");
    let book = tangle::Book::load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let src = dir.join("src");
    // (file, title, the chapter it is a code page of)
    let mut pages: Vec<(String, String, Option<String>)> =
        book.chapters.iter().map(|c| (c.file.clone(), c.title.clone(), None)).collect();
    for c in &book.chapters {
        pages.extend(c.parts.iter().map(|p| (p.file.clone(), p.title.clone(), Some(c.title.clone()))));
    }
    pages.push(("library.md".into(), "The agentrl library".into(), None));
    for (file, title, code_page_of) in pages {
        let content = std::fs::read_to_string(src.join(&file)).unwrap();
        let code_page_of = code_page_of.as_deref();
        let page = Page { source_path: &file, src_dir: &src, title: &title, code_page_of, content: &content };
        let out = render_page(&page)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!out.lines().any(|l| l.trim() == "//@save"), "{file}: a //@save line is left");
        let formulas = render::math::formulas(&content).len();
        let typeset = out.matches("<math display=").count();
        assert_eq!(typeset, formulas, "{file}: {typeset} of {formulas} formulas typeset");
    }
}
