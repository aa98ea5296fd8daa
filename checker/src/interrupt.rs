//! Ctrl-C, SIGTERM and SIGHUP end every process the checker started, then the checker.
//!
//! Chapter programs and builds lead process groups of their own (so the checker can kill
//! all they start), which means a terminal's Ctrl-C never reaches them: without this, an
//! interrupted checker would leave a hung chapter program running forever. Every such group
//! is registered here while it lives; on a signal the checker kills each group (and, for a
//! chapter program, the processes that carry its run's marker outside the group), then exits
//! with 128 + the signal's number, as a shell reports a process killed by it.

use std::process::{Child, Command};
use std::sync::Mutex;

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
            crate::run::stop_marked(nonce, group.pgid);
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
