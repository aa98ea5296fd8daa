//! Judge a chapter's run: split what each block printed, hold it against the recorded
//! Output blocks and the book's rules (complete run, output limit, UTF-8), and say what
//! is wrong at each block's Markdown line.

use std::fmt::Write as _;

use similar::{ChangeTag, TextDiff};
use tangle::{Chapter, CodeBlock};

use crate::build::ChapterCrate;
use crate::refresh::recorded_form;
use crate::process::{MAX_BLOCK_OUTPUT_BYTES, MAX_BLOCK_OUTPUT_LINES};
use crate::run::{Ending, RunResult};

/// Most lines of one diff shown; the rest are counted.
pub const MAX_DIFF_LINES: usize = 60;

/// What a run came to.
#[derive(Debug, Default)]
pub struct Judgement<'c> {
    /// What each completed block printed that may be recorded (refresh writes these only).
    pub printed: Vec<(&'c CodeBlock, String)>,
    /// Blocks that completed.
    pub completed: usize,
    /// Reports, each at its Markdown line.
    pub messages: Vec<String>,
    /// Some block printed other than its recorded Output (refresh fixes this).
    pub outputs_differ: bool,
    /// Something refresh cannot fix: a panic, a time-out, an early end, too much or non-UTF-8 output.
    pub broken: bool,
}

/// Judge `result` (the run of `runs`, the chapter's run blocks in order). With `compare`
/// false (refresh) outputs are only collected, not compared.
pub fn judge<'c>(
    chapter: &'c Chapter,
    runs: &[&'c CodeBlock],
    result: &RunResult,
    krate: &ChapterCrate,
    limit_why: &str,
    compare: bool,
) -> Judgement<'c> {
    let path = chapter.path.display();
    let mut j = Judgement { completed: result.blocks.len(), ..Judgement::default() };
    for (block, bytes) in runs.iter().zip(&result.blocks) {
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                j.messages.push(format!(
                    "{path}:{}: the block printed output that is not UTF-8 (first bad byte at offset {} of its output); \
                     chapters print text only, with println!\n",
                    block.fence_line,
                    e.valid_up_to()
                ));
                j.broken = true;
                continue;
            }
        };
        let lines = text.lines().count();
        if text.len() > MAX_BLOCK_OUTPUT_BYTES || lines > MAX_BLOCK_OUTPUT_LINES {
            j.messages.push(format!(
                "{path}:{}: the block printed {} bytes in {lines} lines, over the limit of {} KiB and {} lines per block \
                 (MAX_BLOCK_OUTPUT_BYTES, MAX_BLOCK_OUTPUT_LINES in checker/src/process.rs); it is not recorded: \
                 print a summary instead\n",
                block.fence_line,
                text.len(),
                MAX_BLOCK_OUTPUT_BYTES / 1024,
                MAX_BLOCK_OUTPUT_LINES
            ));
            j.broken = true;
            continue;
        }
        j.printed.push((block, text.to_string()));
        if compare {
            if let Some(msg) = compare_block(chapter, block, text) {
                j.messages.push(msg);
                j.outputs_differ = true;
            }
        }
    }
    judge_ending(chapter, runs, result, krate, limit_why, &mut j);
    j
}

fn judge_ending(
    chapter: &Chapter,
    runs: &[&CodeBlock],
    result: &RunResult,
    krate: &ChapterCrate,
    limit_why: &str,
    j: &mut Judgement,
) {
    let path = chapter.path.display();
    let completed = result.blocks.len();
    // Where block k stopped the program; past the last block (a Drop at the end of `main`, a
    // thread), at the last block, which is where the code that ran last was written.
    let line_of = |k: usize| runs.get(k).or(runs.last()).map(|b| b.fence_line).unwrap_or(1);
    let when = |k: usize| {
        if k < runs.len() {
            "while this block was running"
        } else {
            "after the last block had completed (in code that runs as `main` ends: a Drop, or a thread)"
        }
    };
    let never_ran = |after: usize| {
        let n = runs.len().saturating_sub(after + 1);
        if n > 0 {
            format!("\n  {n} later block(s) did not run")
        } else {
            String::new()
        }
    };
    let msg = match &result.ending {
        Ending::Finished if completed < runs.len() => format!(
            "{path}:{}: the program ended ({}) while this block was running, so the block did not complete; \
             a run block must not end the program (std::process::exit, return from main){}\n",
            line_of(completed),
            "exit status 0",
            never_ran(completed)
        ),
        // No block owns this output, so refresh cannot record it: it is an error, not a diff.
        Ending::Finished if !result.partial.is_empty() => {
            let text = String::from_utf8_lossy(&result.partial);
            let shown: Vec<&str> = text.lines().take(5).collect();
            format!(
                "{path}:{}: the program printed after its last block had completed ({} bytes; a Drop as `main` \
                 ends?), which no Output can record:\n  {}\n",
                line_of(completed),
                result.partial.len(),
                shown.join("\n  ")
            )
        }
        Ending::Finished => return,
        Ending::Panicked { location, message } => {
            let who = if completed < runs.len() {
                "the block panicked".to_string()
            } else {
                format!("the program panicked {}", when(completed))
            };
            format!(
                "{path}:{}: {who}: {message}\n  panic at {}{}\n",
                line_of(completed),
                location_in_book(krate, location),
                never_ran(completed)
            )
        }
        Ending::DidNotPanic { block } => format!(
            "{path}:{}: the block is marked should_panic but finished without panicking{}\n",
            line_of(*block),
            never_ran(*block)
        ),
        Ending::TimedOut { limit, wall, cpu: _, waited: false } => format!(
            "{path}:{}: killed after using the time limit of {} s of CPU time {} ({:.0} s of wall-clock time); \
             the limit is {limit_why}{}\n",
            line_of(completed),
            limit.as_secs(),
            when(completed),
            wall.as_secs_f64(),
            never_ran(completed)
        ),
        Ending::TimedOut { limit, wall, cpu, waited: true } => format!(
            "{path}:{}: killed after {:.0} s of wall-clock time {}, in which it used only {:.1} s of CPU time \
             (the limit is {} s of CPU time, {limit_why}, and {}× that of wall-clock time for a program that \
             waits: a sleep, a lock, a read){}\n",
            line_of(completed),
            wall.as_secs_f64(),
            when(completed),
            cpu.as_secs_f64(),
            limit.as_secs(),
            crate::process::WALL_FACTOR,
            never_ran(completed)
        ),
        Ending::OutputOverLimit { block, bytes, lines } => format!(
            "{path}:{}: the block printed more than a block may ({} KiB or {} lines; MAX_BLOCK_OUTPUT_BYTES, \
             MAX_BLOCK_OUTPUT_LINES in checker/src/process.rs), so the checker stopped the program when it \
             had printed {bytes} bytes in {lines} lines; nothing of it is recorded: print a summary instead{}\n",
            line_of(*block),
            MAX_BLOCK_OUTPUT_BYTES / 1024,
            MAX_BLOCK_OUTPUT_LINES,
            never_ran(*block)
        ),
        Ending::Crashed { status, stderr_tail } => format!(
            "{path}:{}: the program {status} {}\n{stderr_tail}{}\n",
            line_of(completed),
            when(completed),
            never_ran(completed)
        ),
        Ending::LeftRunning { processes, escaped, pipe_held, first_started } => {
            let total = processes + escaped;
            let outside = match *escaped {
                0 => String::new(),
                n if n == total => ", all outside its process group".to_string(),
                n => format!(", {n} of them outside its process group"),
            };
            let killed = format!("left {total} process(es) it started still running (the checker killed them{outside})");
            let holder = "a process outside its process group, with its environment replaced, holds its output \
                          open (the checker could not find it to stop it)";
            let what = match (total, *pipe_held) {
                (_, false) => killed,
                (0, true) => format!("left running {holder}"),
                (_, true) => format!("{killed}, and {holder}"),
            };
            // The block that started the first of them: the first whose end came after it
            // started (start times come in 10 ms clock ticks); else the last block.
            let (block, by) = match first_started {
                Some(t) if total > 0 => {
                    let k = result.block_ends.iter().position(|end| end > t).unwrap_or(completed);
                    (k, "; the first of them was started while this block ran (by its start time)")
                }
                _ => (completed, ""),
            };
            format!(
                "{path}:{}: the program ended but {what}{by}; a block must wait for every process it starts{}\n",
                line_of(block),
                never_ran(completed)
            )
        }
    };
    j.messages.push(msg);
    j.broken = true;
}

/// A mismatch report for one block, or None when its output is as recorded.
pub fn compare_block(chapter: &Chapter, block: &CodeBlock, printed: &str) -> Option<String> {
    let actual = recorded_form(printed);
    let (expected, line, what) = match &block.output {
        Some(o) if o.text == actual => return None,
        Some(o) => (o.text.as_str(), o.line, "printed something other than its recorded Output"),
        None if actual.is_empty() => return None,
        None => ("", block.fence_line, "prints, but has no Output block after it"),
    };
    let what = if actual.is_empty() { "no longer prints anything, but has an Output block" } else { what };
    let header = (format!("recorded {}:{line}", chapter.path.display()), "printed by the block".to_string());
    Some(format!(
        "{}:{line}: the block at line {} {what}:\n{}\n",
        chapter.path.display(),
        block.fence_line,
        unified_diff(expected, &actual, &header)
    ))
}

/// A unified diff of at most [`MAX_DIFF_LINES`] lines. When the texts differ only in
/// invisible characters (control characters, trailing spaces, CR), every line is shown
/// quoted with escapes so the difference can be seen.
pub fn unified_diff(expected: &str, actual: &str, header: &(String, String)) -> String {
    let invisible_only = expected != actual && visible(expected) == visible(actual);
    let diff = TextDiff::from_lines(expected, actual);
    let mut out = format!("--- {}\n+++ {}\n", header.0, header.1);
    if invisible_only {
        out.push_str("(the lines differ only in invisible characters; shown escaped)\n");
    }
    let mut shown = 0;
    let mut left_out = 0;
    for group in diff.grouped_ops(3) {
        let (first, last) = (group.first().unwrap(), group.last().unwrap());
        let old = first.old_range().start..last.old_range().end;
        let new = first.new_range().start..last.new_range().end;
        let hunk_header = format!("@@ -{},{} +{},{} @@\n", old.start + 1, old.len(), new.start + 1, new.len());
        let mut hunk = vec![hunk_header];
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                let value = change.value();
                let body = value.strip_suffix('\n').unwrap_or(value);
                let body = if invisible_only || has_control(body) { escaped(body) } else { body.to_string() };
                hunk.push(format!("{sign}{body}\n"));
            }
        }
        for line in hunk {
            if shown < MAX_DIFF_LINES {
                out.push_str(&line);
                shown += 1;
            } else {
                left_out += 1;
            }
        }
    }
    if left_out > 0 {
        let _ = writeln!(out, "… {left_out} more diff line(s) not shown (the diff is capped at {MAX_DIFF_LINES} lines)");
    }
    out
}

fn has_control(s: &str) -> bool {
    s.chars().any(|c| c.is_control())
}

fn escaped(s: &str) -> String {
    format!("\"{}\"", s.escape_debug())
}

/// The text without invisible differences: control characters dropped, lines right-trimmed.
fn visible(s: &str) -> String {
    s.split('\n')
        .map(|l| l.chars().filter(|c| !c.is_control()).collect::<String>().trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `file:line:col` of generated code, as the Markdown location when it came from the book.
pub fn location_in_book(krate: &ChapterCrate, location: &str) -> String {
    let mut parts = location.rsplitn(3, ':');
    let (col, line, file) = (parts.next(), parts.next(), parts.next());
    if let (Some(col), Some(Ok(line)), Some(file)) = (col, line.map(str::parse::<usize>), file) {
        if let Some((path, md_line)) = krate.origin(file, line) {
            return format!("{}:{md_line}:{col}", path.display());
        }
        if file.ends_with("src/main.rs") {
            return "code the checker generated around the block".to_string();
        }
    }
    location.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_diffs_are_capped_and_invisible_differences_escaped() {
        let a: String = (0..500).map(|i| format!("a{i}\n")).collect();
        let b: String = (0..500).map(|i| format!("b{i}\n")).collect();
        let d = unified_diff(&a, &b, &("a".into(), "b".into()));
        assert!(d.lines().count() < MAX_DIFF_LINES + 5, "{d}");
        assert!(d.contains("more diff line(s) not shown"), "{d}");
        let d = unified_diff("x: 1\n", "x: 1  \n", &("a".into(), "b".into()));
        assert!(d.contains("+\"x: 1  \"") && d.contains("invisible"), "{d}");
    }
}
