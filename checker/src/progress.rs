//! Progress on stderr, so a long first build (tch: minutes) or a long chapter run is
//! visibly alive: a spinner per activity (`indicatif`) on a terminal, plain lines otherwise
//! (CI logs, tests): one when an activity has lasted [`FIRST_NOTICE`], then one every
//! [`REPEAT_NOTICE`].

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// When a plain-line activity is first reported.
pub const FIRST_NOTICE: Duration = Duration::from_secs(2);
/// How often a plain-line activity is reported after that.
pub const REPEAT_NOTICE: Duration = Duration::from_secs(15);

struct Entry {
    id: u64,
    label: String,
    detail: String,
    started: Instant,
    next_notice: Duration,
}

#[derive(Default)]
struct State {
    next_id: u64,
    entries: Vec<Entry>,
}

/// Shared handle; clone it into worker threads.
#[derive(Clone)]
pub struct Progress {
    state: Arc<Mutex<State>>,
    multi: Option<MultiProgress>,
    stop: Arc<AtomicBool>,
}

/// One thing under way (a build, a run); it disappears when dropped.
pub struct Activity {
    progress: Progress,
    id: u64,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Spinners when stderr is a terminal, plain lines otherwise.
    pub fn new() -> Progress {
        let tty = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
        let multi = tty.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        let progress = Progress { state: Arc::default(), multi, stop: Arc::default() };
        if progress.multi.is_none() {
            let p = progress.clone();
            std::thread::spawn(move || p.plain_ticker());
        }
        progress
    }

    /// Print a line without tearing the spinners.
    pub fn println(&self, line: &str) {
        match &self.multi {
            Some(m) => {
                let _ = m.println(line);
            }
            None => eprintln!("{line}"),
        }
    }

    /// Run `f` (which writes reports to stdout) with the spinners hidden.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.multi {
            Some(m) => m.suspend(f),
            None => f(),
        }
    }

    pub fn start(&self, label: impl Into<String>) -> Activity {
        let label = label.into();
        let mut state = self.state.lock().unwrap();
        state.next_id += 1;
        let id = state.next_id;
        let bar = self.multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new_spinner());
            bar.set_style(ProgressStyle::with_template("{spinner} {prefix} {msg} ({elapsed})").unwrap());
            bar.set_prefix(label.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        state.entries.push(Entry { id, label, detail: String::new(), started: Instant::now(), next_notice: FIRST_NOTICE });
        Activity { progress: self.clone(), id, bar }
    }

    fn plain_ticker(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
            let mut state = self.state.lock().unwrap();
            for e in state.entries.iter_mut() {
                let elapsed = e.started.elapsed();
                if elapsed >= e.next_notice {
                    let detail = if e.detail.is_empty() { String::new() } else { format!("; {}", e.detail) };
                    eprintln!("checker: {} ({} s{detail})", e.label, elapsed.as_secs());
                    e.next_notice = if e.next_notice == FIRST_NOTICE { REPEAT_NOTICE } else { e.next_notice + REPEAT_NOTICE };
                }
            }
        }
    }

    /// Stop the plain-line ticker and clear the spinners.
    pub fn finish(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(m) = &self.multi {
            let _ = m.clear();
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

impl Activity {
    /// A detail shown after the label (the crate cargo just finished, …).
    pub fn set_detail(&self, detail: impl Into<String>) {
        let detail = detail.into();
        if let Some(bar) = &self.bar {
            bar.set_message(detail.clone());
        }
        let mut state = self.progress.state.lock().unwrap();
        if let Some(e) = state.entries.iter_mut().find(|e| e.id == self.id) {
            e.detail = detail;
        }
    }
}

impl Drop for Activity {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        self.progress.state.lock().unwrap().entries.retain(|e| e.id != self.id);
    }
}
