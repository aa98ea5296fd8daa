//! The agentrl book's mdBook preprocessor (`mdbook-agentrl`).
//!
//! mdBook hands every page's Markdown to [`preprocess::run`]; [`page::render_page`]
//! rewrites it using the `tangle` book model (the same parse the checker and the tangler
//! use, never a second one for blocks):
//!
//! - saved blocks lose their `//@save` line and carry a label linking to `library.md`;
//! - each recorded `Output:` block is wrapped in a styled box;
//! - `$…$` / `$$…$$` become MathML at build time ([`math`]), so no math script is needed;
//! - ```` ```mermaid ```` becomes `<pre class="mermaid">`, drawn by the bundled mermaid script.

pub mod math;
pub mod page;
pub mod preprocess;
