//! Run a chapter program under a time limit with the determinism settings, and split
//! its stdout into per-block outputs.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::process::{
    cpu_time, has_exited, spawn_tracked, start_tick, stop_group, stop_marked, ticks_to_duration,
    MAX_BLOCK_OUTPUT_BYTES,
    MAX_BLOCK_OUTPUT_LINES, WALL_FACTOR,
};
use crate::program::{marker, MARKER_ENV, NO_PANIC_TAG, PANIC_TAG};

/// Settings that make libtorch print the same bits on every x86-64 machine (DESIGN.md).
pub const DETERMINISM_ENV: &[(&str, &str)] = &[
    ("OMP_NUM_THREADS", "1"),
    ("MKL_NUM_THREADS", "1"),
    ("ATEN_CPU_CAPABILITY", "avx2"),
    ("MKL_CBWR", "AVX2"),
    ("ONEDNN_MAX_CPU_ISA", "AVX2"),
    ("RUST_BACKTRACE", "0"),
];

/// glibc malloc settings for chapter programs: they change how fast a program runs, never
/// what it prints. By default glibc serves large blocks with `mmap` and hands the top of its
/// heap back to the OS once more than a (self-adjusting) threshold of it is free, so a train
/// step that allocates and frees a few MB of activations takes fresh zero-filled pages from
/// the kernel every time: about 260 page faults and 0.5 ms of a 6.5 ms TinyAgent step
/// (B = 8, T = 96, measured with getrusage). Serving blocks up to 32 MiB (glibc's maximum)
/// from the heap and keeping up to 256 MiB of it free brings that to one fault a step.
/// Setting either variable switches glibc's self-adjustment off; set alone, the trim threshold
/// leaves the mmap threshold at 128 KiB and makes it worse (about 800 faults a step).
pub const ALLOCATOR_ENV: &[(&str, &str)] =
    &[("MALLOC_MMAP_THRESHOLD_", "33554432"), ("MALLOC_TRIM_THRESHOLD_", "268435456")];

/// The only variables a chapter program inherits from the checker's environment; the rest of
/// its environment is [`DETERMINISM_ENV`], [`ALLOCATOR_ENV`] and what the checker sets (libtorch, the tokenizer
/// files, the lab results).
pub const INHERITED_ENV: &[&str] = &["PATH", "HOME", "TMPDIR"];

/// How the program ended.
#[derive(Debug)]
pub enum Ending {
    Finished,
    /// A panic outside a `should_panic` block: `location` as `file:line:col` of the generated code.
    Panicked { location: String, message: String },
    /// Exited non-zero or by a signal without a panic report.
    Crashed { status: String, stderr_tail: String },
    /// Used `limit` of CPU time (`waited` false), or ran `wall` without using it: waiting on a
    /// sleep, a lock or a read past [`WALL_FACTOR`] × the limit (`waited` true).
    TimedOut { limit: Duration, wall: Duration, cpu: Duration, waited: bool },
    /// A block printed more than a block may (64 KiB or 400 lines): the checker stopped the
    /// program at once, when the block (run block number `block`) had printed `bytes` bytes
    /// in `lines` lines.
    OutputOverLimit { block: usize, bytes: usize, lines: usize },
    /// A `should_panic` block (run block number `block`) finished without panicking.
    DidNotPanic { block: usize },
    /// Exited normally but left processes it started running: `processes` in its process
    /// group and `escaped` outside it (all killed), or a pipe held open by one the checker
    /// could not find (it left the group and replaced its environment).
    /// `first_started`: how long after the program the first of them started (by /proc's clock
    /// ticks, to within 10 ms), which names the block that started it.
    LeftRunning { processes: usize, escaped: usize, pipe_held: bool, first_started: Option<Duration> },
}

pub struct RunResult {
    /// stdout of each completed block, in run order.
    pub blocks: Vec<Vec<u8>>,
    /// stdout printed by the block that was running when the program stopped.
    pub partial: Vec<u8>,
    pub ending: Ending,
    pub elapsed: Duration,
    /// CPU time the program used (user + system, its own threads; read every 20 ms and as it
    /// exits).
    pub cpu: Duration,
    /// When each completed block's end marker reached the checker, from the program's start
    /// (so the first block's time includes the program's own start-up).
    pub block_ends: Vec<Duration>,
}

/// A fresh nonce per run so no printed text can forge a block marker.
pub fn fresh_nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

pub fn run(executable: &Path, env: &[(String, String)], limit: Duration) -> Result<RunResult> {
    let nonce = fresh_nonce();
    let start = Instant::now();
    let mut cmd = Command::new(executable);
    // A chapter sees only what the cache key covers (and PATH, HOME, TMPDIR), so nothing in the
    // caller's environment can change what it prints without re-running it.
    cmd.env_clear();
    for name in INHERITED_ENV {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd.env(MARKER_ENV, &nonce)
        .envs(DETERMINISM_ENV.iter().copied())
        .envs(ALLOCATOR_ENV.iter().copied())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The program leads a process group of its own, so all it starts can be killed with it;
    // registered, so that Ctrl-C on the checker kills them too.
    let (mut child, tracked) = spawn_tracked(&mut cmd, Some(&nonce))
        .with_context(|| format!("starting {}", executable.display()))?;
    let watch = BlockWatch { nonce: nonce.clone(), max_bytes: MAX_BLOCK_OUTPUT_BYTES, max_lines: MAX_BLOCK_OUTPUT_LINES };
    let stdout = Reader::spawn(child.stdout.take().unwrap(), start, Some(watch));
    let stderr = Reader::spawn(child.stderr.take().unwrap(), start, None);
    // When the program started, by the clock /proc gives its children's start times in.
    let leader_tick = start_tick(child.id() as i32);
    let (mut timed_out, mut over_limit, mut left_running) = (None, None, (0, None));
    let mut used = Duration::ZERO;
    let status = loop {
        if let Some(over) = stdout.over_limit() {
            // Stop a flood at once: reading on would cost memory and time for nothing.
            over_limit = Some(over);
            stop_group(&mut child);
            drop(tracked);
            break child.wait()?;
        }
        if has_exited(&mut child)? {
            // Not reaped yet (WNOWAIT), so /proc still holds its final CPU time.
            used = used.max(cpu_time(child.id()));
            // What the program started and left behind dies with it (it may hold our pipes).
            left_running = stop_group(&mut child);
            drop(tracked);
            break child.wait()?;
        }
        let (wall, cpu) = (start.elapsed(), cpu_time(child.id()));
        used = used.max(cpu);
        if cpu >= limit || wall >= limit * WALL_FACTOR {
            timed_out = Some((wall, cpu, cpu < limit));
            stop_group(&mut child);
            drop(tracked);
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    // Processes that left the group (setsid) still carry the run's marker in their environment.
    let (escaped, escaped_first) = stop_marked(&nonce, child.id() as i32);
    let first_started = [left_running.1, escaped_first]
        .into_iter()
        .flatten()
        .min()
        .zip(leader_tick)
        .map(|(tick, leader)| ticks_to_duration(tick.saturating_sub(leader)));
    // Both pipes close once those are gone; one still open is held by a process that left the
    // group and replaced its environment, which the checker cannot find: give up on it after a
    // grace period.
    let grace = Instant::now() + PIPE_GRACE;
    let stdout_over = stdout.over_limit(); // the program may have ended just as its block overflowed
    let ((out, arrivals, out_closed), (err, _, err_closed)) = (stdout.finish(grace), stderr.finish(grace));
    let (blocks, partial, marker_ends) = split_blocks(&out, &nonce);
    let block_ends = arrival_times(&arrivals, &marker_ends);
    let ending = if let Some(over) = over_limit.or(stdout_over) {
        Ending::OutputOverLimit { block: over.block, bytes: over.bytes, lines: over.lines }
    } else if let Some((wall, cpu, waited)) = timed_out {
        Ending::TimedOut { limit, wall, cpu, waited }
    } else if let Some(block) = parse_no_panic(&err) {
        Ending::DidNotPanic { block }
    } else if let (false, Some((location, message))) = (status.success(), parse_panic(&err)) {
        // Only a panic that ended the program: one the program caught (catch_unwind, a
        // thread's join) is its own business, though the hook reported it too.
        Ending::Panicked { location, message }
    } else if !status.success() {
        let text = String::from_utf8_lossy(&err);
        let lines: Vec<&str> = text.lines().collect();
        Ending::Crashed {
            status: status.to_string(),
            stderr_tail: lines[lines.len().saturating_sub(15)..].join("\n"),
        }
    } else if left_running.0 > 0 || escaped > 0 || !out_closed || !err_closed {
        let pipe_held = !out_closed || !err_closed;
        Ending::LeftRunning { processes: left_running.0, escaped, pipe_held, first_started }
    } else {
        Ending::Finished
    };
    Ok(RunResult { blocks, partial, ending, elapsed, cpu: used, block_ends })
}

/// How long after the program ends its stdout and stderr may stay open.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// Most bytes of stderr kept (the end: a panic report is the last thing a program writes).
const STDERR_KEPT: usize = 1 << 20;

/// The per-block output limit, watched while stdout is read (block boundaries are the run's
/// markers).
struct BlockWatch {
    nonce: String,
    max_bytes: usize,
    max_lines: usize,
}

/// A block that printed more than a block may: which (0-based run block) and how much it had
/// printed when the checker stopped reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverLimit {
    pub block: usize,
    pub bytes: usize,
    pub lines: usize,
}

/// What a pipe's reader has collected.
#[derive(Default)]
struct Collected {
    bytes: Vec<u8>,
    /// After each read, how many bytes had arrived and when.
    arrivals: Vec<(usize, Duration)>,
    /// Set (and reading stopped) when a block passed the [`BlockWatch`] limit.
    over: Option<OverLimit>,
}

/// A pipe read to its end on a thread, into a buffer the caller can take at any time.
struct Reader {
    read: Arc<Mutex<Collected>>,
    done: mpsc::Receiver<()>,
}

impl Reader {
    fn spawn(mut pipe: impl Read + Send + 'static, start: Instant, watch: Option<BlockWatch>) -> Reader {
        let read = Arc::new(Mutex::new(Collected::default()));
        let (tx, done) = mpsc::channel();
        let shared = Arc::clone(&read);
        std::thread::spawn(move || {
            read_with_arrivals(&mut pipe, start, &shared, watch.as_ref());
            let _ = tx.send(());
        });
        Reader { read, done }
    }

    /// The block that passed the output limit, if one has.
    fn over_limit(&self) -> Option<OverLimit> {
        self.read.lock().unwrap_or_else(|e| e.into_inner()).over
    }

    /// What was read by `deadline`, and whether the pipe had closed by then.
    fn finish(self, deadline: Instant) -> (Vec<u8>, Vec<(usize, Duration)>, bool) {
        let closed = self.done.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_ok();
        let read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        (read.bytes.clone(), read.arrivals.clone(), closed)
    }
}

/// Read all of `pipe` into `into`, noting after each read how many bytes had arrived and when.
/// With a `watch` (stdout), stop at once when the running block passes its limit, so memory
/// stays bounded whatever the program prints; without one (stderr), keep the last
/// [`STDERR_KEPT`] bytes.
fn read_with_arrivals(pipe: &mut impl Read, start: Instant, into: &Mutex<Collected>, watch: Option<&BlockWatch>) {
    let mut chunk = [0u8; 8192];
    let (mut block, mut block_start, mut scan_from) = (0usize, 0usize, 0usize);
    loop {
        let n = match pipe.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut read = into.lock().unwrap_or_else(|e| e.into_inner());
        read.bytes.extend_from_slice(&chunk[..n]);
        let total = read.bytes.len();
        read.arrivals.push((total, start.elapsed()));
        let Some(watch) = watch else {
            if read.bytes.len() > 2 * STDERR_KEPT {
                let cut = read.bytes.len() - STDERR_KEPT;
                read.bytes.drain(..cut);
                read.arrivals.clear();
            }
            continue;
        };
        loop {
            let m = marker(&watch.nonce, block);
            match find(&read.bytes[scan_from..], m.as_bytes()) {
                Some(at) => {
                    (block, block_start) = (block + 1, scan_from + at + m.len());
                    scan_from = block_start;
                }
                None => {
                    scan_from = total.saturating_sub(m.len()).max(block_start);
                    break;
                }
            }
        }
        // Bytes of the running block, less what may be the start of its end marker.
        let marker_len = marker(&watch.nonce, block).len();
        let bytes = total - block_start;
        let lines = read.bytes[block_start..].iter().filter(|&&b| b == b'\n').count();
        if bytes > watch.max_bytes + marker_len || lines > watch.max_lines {
            read.over = Some(OverLimit { block, bytes, lines });
            return;
        }
    }
}

/// When each byte offset in `ends` had arrived: the program flushes right after writing a
/// block's end marker, so the marker's arrival is the block's end to within a pipe's latency.
fn arrival_times(arrivals: &[(usize, Duration)], ends: &[usize]) -> Vec<Duration> {
    let arrived = |end: usize| arrivals.iter().find(|&&(bytes, _)| bytes >= end).map(|&(_, t)| t);
    ends.iter().map_while(|&end| arrived(end)).collect()
}

/// Split stdout at the markers: complete blocks, whatever followed the last marker, and the
/// byte offset just past each marker.
pub fn split_blocks(out: &[u8], nonce: &str) -> (Vec<Vec<u8>>, Vec<u8>, Vec<usize>) {
    let (mut blocks, mut ends) = (Vec::new(), Vec::new());
    let mut rest = out;
    loop {
        let m = marker(nonce, blocks.len());
        match find(rest, m.as_bytes()) {
            Some(at) => {
                blocks.push(rest[..at].to_vec());
                rest = &rest[at + m.len()..];
                ends.push(out.len() - rest.len());
            }
            None => return (blocks, rest.to_vec(), ends),
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn parse_no_panic(stderr: &[u8]) -> Option<usize> {
    let text = String::from_utf8_lossy(stderr);
    let at = text.find(NO_PANIC_TAG)?;
    text[at + NO_PANIC_TAG.len()..].lines().next()?.trim().parse().ok()
}

fn parse_panic(stderr: &[u8]) -> Option<(String, String)> {
    let text = String::from_utf8_lossy(stderr);
    // The last report is the panic that ended the program; earlier ones were caught.
    let at = text.rfind(PANIC_TAG)?;
    let rest = &text[at + PANIC_TAG.len()..];
    let (location, message) = rest.split_once('\n').unwrap_or((rest, ""));
    Some((location.trim().to_string(), message.trim_end().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scripts that run book code outside the checker (labs, figures, the benchmark)
    /// export the same allocator settings, so their timings are the chapters'.
    #[test]
    fn scripts_export_the_allocator_settings() {
        let exported: Vec<String> = ALLOCATOR_ENV.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let line = format!("export {}", exported.join(" "));
        for script in ["lab.sh", "figures.sh", "bench-model.sh", "example.sh"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts").join(script);
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.lines().any(|l| l == line), "{} lacks the line `{line}`", path.display());
        }
    }

    #[test]
    fn timing_markers_are_found_when_split_across_reads() {
        // a reader that hands out three bytes at a time splits every marker
        struct Trickle(Vec<u8>, usize);
        impl Read for Trickle {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = 3.min(self.0.len() - self.1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
                self.1 += n;
                Ok(n)
            }
        }
        let n = "abc";
        let text = format!("one\n{}two\n{}fake{}", marker(n, 0), marker(n, 1), marker(n, 3));
        let read = Mutex::new(Collected::default());
        read_with_arrivals(&mut Trickle(text.clone().into_bytes(), 0), Instant::now(), &read, None);
        let Collected { bytes: out, arrivals, .. } = read.into_inner().unwrap();
        assert_eq!(out, text.as_bytes());
        let (_, _, marker_ends) = split_blocks(&out, n);
        let ends = arrival_times(&arrivals, &marker_ends);
        assert_eq!(ends.len(), 2, "markers 0 and 1 only: 3 is out of order");
        // each end is the arrival of the read that completed its marker, not an earlier one
        let marker_1_read = arrivals.iter().position(|&(bytes, _)| bytes >= marker_ends[1]).unwrap();
        assert_eq!(ends[1], arrivals[marker_1_read].1);
    }

    #[test]
    fn the_block_over_the_limit_is_caught_while_reading_and_reading_stops() {
        let n = "abc";
        let mut text = format!("ok\n{}", marker(n, 0));
        text.push_str(&"x\n".repeat(400)); // exactly the limit: fine
        text.push_str(&marker(n, 1));
        text.push_str(&"y\n".repeat(100_000));
        let watch = BlockWatch { nonce: n.to_string(), max_bytes: 64 * 1024, max_lines: 400 };
        let read = Mutex::new(Collected::default());
        read_with_arrivals(&mut text.as_bytes(), Instant::now(), &read, Some(&watch));
        let got = read.into_inner().unwrap();
        let over = got.over.expect("block 2 passed the limit");
        assert_eq!((over.block, over.lines > 400), (2, true), "{over:?}");
        assert!(got.bytes.len() < 20_000, "kept reading after the limit: {} bytes", got.bytes.len());
        // A block of many bytes but few lines hits the byte limit.
        let text = format!("{}{}", marker(n, 0), "z".repeat(200_000));
        let read = Mutex::new(Collected::default());
        read_with_arrivals(&mut text.as_bytes(), Instant::now(), &read, Some(&watch));
        let over = read.into_inner().unwrap().over.expect("block 1 passed the byte limit");
        assert_eq!((over.block, over.lines), (1, 0));
        assert!(over.bytes > 64 * 1024 && over.bytes < 64 * 1024 + 16 * 1024, "{over:?}");
    }

    #[test]
    fn splits_at_markers_only() {
        let n = "abc";
        let out = format!("one\n{}two{}fake:{n}:2\ntail", marker(n, 0), marker(n, 1));
        let (blocks, partial, _) = split_blocks(out.as_bytes(), n);
        assert_eq!(blocks, vec![b"one\n".to_vec(), b"two".to_vec()]);
        assert_eq!(partial, format!("fake:{n}:2\ntail").into_bytes());
    }

    #[test]
    fn finds_the_panic_report() {
        let err = b"noise\n\nAGENTRL-PANIC@src/main.rs:10:5\nboom\nmore\n";
        let (loc, msg) = parse_panic(err).unwrap();
        assert_eq!(loc, "src/main.rs:10:5");
        assert_eq!(msg, "boom\nmore");
        // a caught panic first, then the one that ended the program
        let err = b"\nAGENTRL-PANIC@src/main.rs:3:1\ncaught\n\nAGENTRL-PANIC@src/main.rs:9:2\nfatal\n";
        assert_eq!(parse_panic(err).unwrap(), ("src/main.rs:9:2".to_string(), "fatal".to_string()));
    }
}
