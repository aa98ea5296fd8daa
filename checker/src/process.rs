//! The processes the checker starts, and the limits they run under: one module owns them.
//!
//! Chapter programs and builds lead process groups of their own (so the checker can kill
//! all they start), which means a terminal's Ctrl-C never reaches them: without the registry
//! here, an interrupted checker would leave a hung chapter program running forever. Every
//! such group is registered while it lives; on Ctrl-C, SIGTERM or SIGHUP the checker kills
//! each group (and, for a chapter program, the processes that carry its run's marker outside
//! the group), then exits with 128 + the signal's number, as a shell reports a process killed
//! by it. The limits a chapter program runs under (CPU time from [`crate::limits`], wall-clock
//! time, output per block) and the /proc reading that enforces them are here too.

use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::program::MARKER_ENV;

/// Most bytes one block may print (a book shows what a reader can read).
pub const MAX_BLOCK_OUTPUT_BYTES: usize = 64 * 1024;
/// Most lines one block may print.
pub const MAX_BLOCK_OUTPUT_LINES: usize = 400;

/// A program that neither finishes nor uses its CPU-time limit (it sleeps, waits on a lock or
/// a read) is stopped after this many times the limit of wall-clock time.
pub const WALL_FACTOR: u32 = 3;

/// The process groups the checker started and has not yet reaped.
struct Registry {
    /// A signal came: nothing new may start.
    interrupted: bool,
    groups: Vec<Group>,
    /// The id the next registered group gets (ids are never reused).
    next_id: u64,
}

struct Group {
    id: u64,
    pgid: i32,
    /// The run's marker nonce, for the processes that left the group.
    nonce: Option<String>,
}

static STARTED: Mutex<Registry> = Mutex::new(Registry { interrupted: false, groups: Vec::new(), next_id: 0 });

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    STARTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// A registered process group; dropping it (just before the process is reaped, while its pid
/// still names the group) takes it off the list.
pub struct Tracked(u64);

impl Drop for Tracked {
    fn drop(&mut self) {
        registry().groups.retain(|g| g.id != self.0);
    }
}

/// Start `cmd` as the leader of a new process group and register the group (with the run's
/// marker `nonce`, for a chapter program). Refused once a signal has come, so no process can
/// start after the handler has stopped the others.
pub fn spawn_tracked(cmd: &mut Command, nonce: Option<&str>) -> std::io::Result<(Child, Tracked)> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut reg = registry();
    if reg.interrupted {
        return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "the checker was interrupted"));
    }
    let child = cmd.spawn()?;
    let id = reg.next_id;
    reg.next_id += 1;
    let pgid = child.id() as i32;
    reg.groups.push(Group { id, pgid, nonce: nonce.map(str::to_string) });
    Ok((child, Tracked(id)))
}

/// Kill every registered group and marked process -> how many groups there were. With
/// `for_good` (a signal: the checker is about to exit), later [`spawn_tracked`] calls are
/// refused.
pub fn stop_everything(for_good: bool) -> usize {
    let mut reg = registry();
    reg.interrupted |= for_good;
    for group in &reg.groups {
        #[cfg(unix)]
        if group.pgid > 1 {
            unsafe {
                libc::kill(-group.pgid, libc::SIGKILL);
            }
        }
        if let Some(nonce) = &group.nonce {
            stop_marked(nonce, group.pgid);
        }
    }
    reg.groups.len()
}

/// Handle SIGINT, SIGTERM and SIGHUP on a thread of their own: stop everything the checker
/// started, say so on stderr, and exit with 128 + the signal.
pub fn install() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let stopped = stop_everything(true);
            let name = match signal {
                SIGINT => "interrupted (SIGINT)",
                SIGTERM => "terminated (SIGTERM)",
                _ => "hung up (SIGHUP)",
            };
            eprintln!("\nchecker: {name}: stopped {stopped} running build(s) and chapter program(s); nothing was written");
            std::process::exit(128 + signal);
        }
    });
    Ok(())
}

/// CPU time (user + system, all threads) the process `pid` has used; zero where /proc cannot
/// say (then only the wall-clock limit applies).
pub(crate) fn cpu_time(pid: u32) -> Duration {
    // after the command's closing parenthesis, utime and stime are fields 11 and 12 (0-based)
    let fields = stat_fields(pid as i32).unwrap_or_default();
    let ticks = |k: usize| fields.get(k).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    ticks_to_duration(ticks(11) + ticks(12))
}

/// Whether the program has ended; on Linux without reaping it, so that its pid (which names
/// its process group) cannot be reused before `stop_group` has signalled the group.
pub(crate) fn has_exited(child: &mut Child) -> Result<bool> {
    #[cfg(target_os = "linux")]
    {
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        if unsafe { libc::waitid(libc::P_PID, child.id(), &mut info, flags) } != 0 {
            return Err(std::io::Error::last_os_error()).context("waiting for the chapter program");
        }
        Ok(unsafe { info.si_pid() } != 0)
    }
    #[cfg(not(target_os = "linux"))]
    Ok(child.try_wait()?.is_some())
}

/// Kill the program's process group (the program leads it), before the program is reaped ->
/// how many other live processes were in it, and the clock tick the first of them started at.
pub(crate) fn stop_group(child: &mut Child) -> (usize, Option<u64>) {
    let (mut others, mut first) = (0, None);
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // A negative pid names the group; pid is positive, so this can never be -1, which
        // would mean every process we may signal.
        if pid > 1 {
            let members: Vec<Proc> = live_processes().into_iter().filter(|p| p.pgrp == pid && p.pid != pid).collect();
            (others, first) = (members.len(), members.iter().map(|p| p.started).min());
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.kill();
    (others, first)
}

/// Kill every live process whose environment holds this run's marker (`MARKER_ENV=nonce`,
/// which children inherit) -> how many of them were outside process group `pgid`, and the
/// clock tick the first of those started at. Scans until none is left (at most 2 s), since one
/// may fork while it is being killed, and a killed one lives on until the kernel ends it. Finds nothing where there is no /proc to read, or for a process
/// that replaced its environment.
pub fn stop_marked(nonce: &str, pgid: i32) -> (usize, Option<u64>) {
    let needle = format!("{MARKER_ENV}={nonce}").into_bytes();
    let mut outside = std::collections::BTreeMap::new();
    // A killed process is gone only once the kernel has run it to its end, which on a loaded
    // machine can take a while: keep scanning (and killing) until none is left, for up to 2 s.
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        let found = marked_processes(&needle);
        if found.is_empty() {
            break;
        }
        for p in found {
            if p.pgrp != pgid {
                outside.insert(p.pid, p.started);
            }
            #[cfg(unix)]
            unsafe {
                libc::kill(p.pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (outside.len(), outside.values().copied().min())
}

/// The live processes (not zombies) whose environment holds `needle` as one whole
/// `NAME=value` entry.
fn marked_processes(needle: &[u8]) -> Vec<Proc> {
    let me = std::process::id() as i32;
    let marked = |pid: i32| {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        environ.split(|&b| b == 0).any(|entry| entry == needle)
    };
    live_processes().into_iter().filter(|p| p.pid > 1 && p.pid != me && marked(p.pid)).collect()
}

/// A process as /proc/PID/stat describes it.
#[derive(Debug, Clone, Copy)]
struct Proc {
    pid: i32,
    pgrp: i32,
    /// When it started, in clock ticks since boot.
    started: u64,
}

/// Fields of /proc/PID/stat after the command's closing parenthesis (state, ppid, pgrp, ...).
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat[stat.rfind(')')? + 1..].split_whitespace().map(str::to_string).collect())
}

/// Every live process (not a zombie) in /proc; none where there is no /proc to read.
fn live_processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return vec![] };
    let live = |pid: i32| -> Option<Proc> {
        let fields = stat_fields(pid)?;
        let (state, pgrp, started) = (fields.first()?, fields.get(2)?.parse().ok()?, fields.get(19)?.parse().ok()?);
        // (field 19 is starttime: clock ticks after boot)
        (state != "Z" && state != "X").then_some(Proc { pid, pgrp, started })
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()).filter_map(live).collect()
}

/// When process `pid` started, in clock ticks since boot.
pub(crate) fn start_tick(pid: i32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

pub(crate) fn ticks_to_duration(ticks: u64) -> Duration {
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

