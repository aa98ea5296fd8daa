//! Chapter selectors: `all`, `02`, `02,05-07`, `05-`, `A`.

use tangle::Book;

/// Indices (build order) of the chapters `spec` names, or an error listing the valid ids.
pub fn select(book: &Book, spec: &str) -> Result<Vec<usize>, String> {
    let valid = || {
        format!("valid chapters: {} (or `all`; ranges like `02-05` or `05-`; lists like `00,02`)", book.ids().join(", "))
    };
    let mut chosen = Vec::new();
    for part in spec.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!("empty chapter selector in `{spec}`; {}", valid()));
        }
        if part.eq_ignore_ascii_case("all") {
            chosen.extend(0..book.chapters.len());
            continue;
        }
        let index = |id: &str| {
            book.index_of(id)
                .or_else(|| book.index_of(&id.to_ascii_uppercase()))
                .or_else(|| (id.len() == 1 && id.chars().all(|c| c.is_ascii_digit())).then(|| book.index_of(&format!("0{id}"))).flatten())
                .ok_or_else(|| match book.unlisted_with_id(id) {
                    Some(p) => format!(
                        "chapter `{id}`: {} exists but {} does not list it, so it is not part of the book; add it there",
                        p.display(),
                        book.dir.join("src").join("SUMMARY.md").display()
                    ),
                    None => format!("unknown chapter `{id}`; {}", valid()),
                })
        };
        match part.split_once('-') {
            Some((a, b)) => {
                // `05-` runs to the last chapter, `-05` from the first
                let a = if a.is_empty() { 0 } else { index(a)? };
                let b = if b.is_empty() { book.chapters.len().saturating_sub(1) } else { index(b)? };
                if a > b {
                    return Err(format!("chapter range `{part}` runs backwards; {}", valid()));
                }
                chosen.extend(a..=b);
            }
            None => chosen.push(index(part)?),
        }
    }
    chosen.sort_unstable();
    chosen.dedup();
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn book(ids: &[&str]) -> Book {
        Book {
            dir: PathBuf::from("book"),
            chapters: ids
                .iter()
                .map(|id| tangle::Chapter {
                    id: id.to_string(),
                    slug: "x".into(),
                    title: id.to_string(),
                    file: format!("{id}-x.md"),
                    path: PathBuf::from(format!("book/src/{id}-x.md")),
                    source: String::new(),
                    blocks: vec![],
                    parts: vec![],
                })
                .collect(),
            unlisted: vec![],
        }
    }

    #[test]
    fn selectors() {
        let b = book(&["00", "01", "02", "05", "06", "07", "A"]);
        assert_eq!(select(&b, "all").unwrap(), vec![0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(select(&b, "02").unwrap(), vec![2]);
        assert_eq!(select(&b, "2").unwrap(), vec![2]);
        assert_eq!(select(&b, "02,05-07").unwrap(), vec![2, 3, 4, 5]);
        assert_eq!(select(&b, "a,00").unwrap(), vec![0, 6]);
        let err = select(&b, "03").unwrap_err();
        assert!(err.contains("unknown chapter `03`") && err.contains("00, 01, 02, 05, 06, 07, A"), "{err}");
        assert!(select(&b, "07-05").unwrap_err().contains("backwards"));
        assert!(select(&b, "02,").is_err());
        assert_eq!(select(&b, "06-").unwrap(), vec![4, 5, 6]);
        assert_eq!(select(&b, "-01").unwrap(), vec![0, 1]);
    }
}
