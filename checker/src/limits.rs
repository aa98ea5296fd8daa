//! Each chapter's time limit, derived from the CPU time its program used when its outputs were
//! last recorded, so that a correct chapter passes on a machine several times slower than the
//! one that recorded it while a runaway is still stopped.
//!
//! The record is `book/cpu-seconds.json`, committed beside `book/src/`: one number per chapter,
//! the CPU seconds its program used in the last `--refresh` that ran it. A refresh rewrites a
//! chapter's number only when the new run is outside [`KEEP_BAND`] of it, so refreshing on
//! another machine does not churn the file (nor the cache keys, which cover the limit).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

/// The record's file name, in the book directory (`book/cpu-seconds.json`).
pub const RECORD_FILE: &str = "cpu-seconds.json";

/// A chapter may use this many times the CPU time it used when it was recorded: a machine
/// 3× slower, with both cores busy (which costs a CPU-bound program up to ~1.3× more CPU time
/// on a 2-vCPU machine), still passes.
pub const FACTOR: u32 = 5;

/// No chapter's derived limit is lower than this: start-up and a cold page cache cost a
/// quick chapter more than 5× its recorded second.
pub const FLOOR: Duration = Duration::from_secs(60);

/// The limit of a chapter that has no record yet (a new chapter, before its first refresh).
pub const UNRECORDED: Duration = Duration::from_secs(120);

/// A refresh keeps the recorded number while the new run is within this factor of it.
pub const KEEP_BAND: f64 = 1.5;

/// Where a chapter's limit came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// `--time-limit SECS`.
    Flag,
    /// [`FACTOR`] × the recorded CPU seconds (or [`FLOOR`], when that is higher).
    Recorded { seconds: f64 },
    /// No record for the chapter: [`UNRECORDED`].
    Unrecorded,
}

/// A chapter program's CPU-time limit and how it was derived.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    pub cpu: Duration,
    pub rule: Rule,
}

impl Limit {
    pub fn fixed(cpu: Duration) -> Limit {
        Limit { cpu, rule: Rule::Flag }
    }

    /// How the limit was derived and how to change it, for a kill message:
    /// `5 × the 12.3 s of CPU time it used when its outputs were recorded (book/cpu-seconds.json)`.
    pub fn explain(&self, record: &Path) -> String {
        let record = record.display();
        match self.rule {
            Rule::Flag => "set with --time-limit SECS".to_string(),
            Rule::Recorded { seconds } if FACTOR as f64 * seconds < FLOOR.as_secs_f64() => format!(
                "the floor of {} s: {FACTOR} × the {seconds:.1} s of CPU time it used when its outputs were \
                 last recorded ({record}) is less; --time-limit SECS sets another",
                FLOOR.as_secs()
            ),
            Rule::Recorded { seconds } => format!(
                "{FACTOR} × the {seconds:.1} s of CPU time it used when its outputs were last recorded \
                 ({record}); --time-limit SECS sets another"
            ),
            Rule::Unrecorded => format!(
                "the limit of a chapter with no recorded CPU time in {record} (a --refresh records it); \
                 --time-limit SECS sets another"
            ),
        }
    }
}

/// The committed record of each chapter's CPU seconds.
#[derive(Debug, Clone)]
pub struct CpuRecord {
    pub path: PathBuf,
    seconds: BTreeMap<String, f64>,
}

impl CpuRecord {
    /// Read `book_dir/cpu-seconds.json`; a missing file is an empty record, a malformed one an
    /// error naming the file.
    pub fn load(book_dir: &Path) -> Result<CpuRecord> {
        let path = book_dir.join(RECORD_FILE);
        let seconds = match std::fs::read_to_string(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            Ok(text) => parse(&text).with_context(|| format!("{}: not a map of chapter ids to CPU seconds", path.display()))?,
        };
        Ok(CpuRecord { path, seconds })
    }

    pub fn get(&self, chapter: &str) -> Option<f64> {
        self.seconds.get(chapter).copied()
    }

    /// The limit for `chapter`: the flag's when given, else derived from the record.
    pub fn limit(&self, chapter: &str, flag: Option<Duration>) -> Limit {
        if let Some(cpu) = flag {
            return Limit::fixed(cpu);
        }
        match self.get(chapter) {
            Some(seconds) => {
                let derived = Duration::from_secs_f64(seconds * FACTOR as f64);
                // whole seconds: the limit is part of the cache key and of messages
                let cpu = Duration::from_secs(derived.max(FLOOR).as_secs_f64().ceil() as u64);
                Limit { cpu, rule: Rule::Recorded { seconds } }
            }
            None => Limit { cpu: UNRECORDED, rule: Rule::Unrecorded },
        }
    }

    /// Note that `chapter` used `cpu` in a refresh; true when the record changed: no record
    /// yet, or the run is outside [`KEEP_BAND`] of the recorded number and the limit moves (two
    /// runs that both derive the floor keep the number they have).
    pub fn note(&mut self, chapter: &str, cpu: Duration) -> bool {
        let seconds = (cpu.as_secs_f64() * 10.0).ceil() / 10.0; // tenths, rounded up
        let seconds = seconds.max(0.1);
        let floored = |s: f64| s * FACTOR as f64 <= FLOOR.as_secs_f64();
        let keep = self.get(chapter).is_some_and(|old| {
            (seconds <= old * KEEP_BAND && seconds >= old / KEEP_BAND) || (floored(old) && floored(seconds))
        });
        if !keep {
            self.seconds.insert(chapter.to_string(), seconds);
        }
        !keep
    }

    /// Write the record atomically (temp file + rename), one chapter a line, in id order.
    pub fn save(&self) -> Result<()> {
        let rows: Vec<String> = self.seconds.iter().map(|(id, s)| format!("  {id:?}: {s:.1}")).collect();
        let text = format!("{{\n{}\n}}\n", rows.join(",\n"));
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &self.path).with_context(|| format!("writing {}", self.path.display()))
    }
}

fn parse(text: &str) -> Result<BTreeMap<String, f64>> {
    let map: BTreeMap<String, serde_json::Value> = serde_json::from_str(text)?;
    map.into_iter()
        .map(|(id, v)| match v.as_f64() {
            Some(s) if s.is_finite() && s > 0.0 => Ok((id, s)),
            _ => anyhow::bail!("chapter {id:?}: {v} is not a positive number of seconds"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: &str) -> CpuRecord {
        CpuRecord { path: PathBuf::from("book/cpu-seconds.json"), seconds: parse(text).unwrap() }
    }

    #[test]
    fn the_limit_is_five_times_the_record_with_a_floor_and_the_flag_overrides() {
        let r = record(r#"{"06": 30.2, "00": 0.4}"#);
        assert_eq!(r.limit("06", None).cpu, Duration::from_secs(151));
        assert_eq!(r.limit("00", None).cpu, FLOOR);
        assert_eq!(r.limit("99", None), Limit { cpu: UNRECORDED, rule: Rule::Unrecorded });
        assert_eq!(r.limit("06", Some(Duration::from_secs(3))), Limit::fixed(Duration::from_secs(3)));
        let why = r.limit("06", None).explain(&r.path);
        assert!(why.starts_with("5 × the 30.2 s of CPU time"), "{why}");
        assert!(why.contains("book/cpu-seconds.json") && why.contains("--time-limit SECS"), "{why}");
        assert!(r.limit("00", None).explain(&r.path).starts_with("the floor of 60 s"));
    }

    #[test]
    fn a_refresh_moves_the_record_only_outside_the_band() {
        let mut r = record(r#"{"06": 30.0}"#);
        assert!(!r.note("06", Duration::from_secs_f64(40.0)));
        assert!(!r.note("06", Duration::from_secs_f64(21.0)));
        assert_eq!(r.get("06"), Some(30.0));
        assert!(r.note("06", Duration::from_secs_f64(12.34)));
        assert_eq!(r.get("06"), Some(12.4));
        assert!(r.note("07", Duration::from_millis(10)));
        assert_eq!(r.get("07"), Some(0.1));
        // both at the floor: the limit does not move, nor does the record
        assert!(!r.note("07", Duration::from_secs(3)));
        assert_eq!(r.get("07"), Some(0.1));
        assert!(r.note("07", Duration::from_secs(13)));
    }

    #[test]
    fn a_malformed_record_is_refused_naming_the_chapter() {
        assert!(parse(r#"{"06": "fast"}"#).unwrap_err().to_string().contains("\"06\""));
        assert!(parse(r#"{"06": -1}"#).is_err());
        assert!(parse("[1, 2]").is_err());
    }

    #[test]
    fn saved_records_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = CpuRecord::load(dir.path()).unwrap();
        assert_eq!(r.get("01"), None);
        r.note("01", Duration::from_secs(2));
        r.note("A", Duration::from_secs_f64(7.25));
        r.save().unwrap();
        let text = std::fs::read_to_string(dir.path().join(RECORD_FILE)).unwrap();
        assert_eq!(text, "{\n  \"01\": 2.0,\n  \"A\": 7.3\n}\n");
        assert_eq!(CpuRecord::load(dir.path()).unwrap().get("A"), Some(7.3));
    }
}
