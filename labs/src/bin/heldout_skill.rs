//! Issue 28 prototype: a generated BugFix gym (one bug per task, decoys from other families)
//! and whether GRPO from a cloned base learns a repair skill that holds on held-out tasks.
//!
//!     scripts/lab.sh heldout_skill [SEEDS] [STEPS]      (default 3 seeds, 600 steps)
//!
//! Uses chapters up to 09.

use agentrl as arl;
use arl::{EditOp, Family, Task, TestCase, Value};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const LAB: &str = "heldout_skill";

// ---------------------------------------------------------------- the generator

/// Names a generated function draws from; each task takes distinct ones.
const FN_NAMES: [&str; 12] = [
    "calc", "run", "scan", "walk", "tally", "score", "probe", "check", "solve", "judge", "rate",
    "sift",
];
const LIST_NAMES: [&str; 6] = ["xs", "ys", "vals", "items", "nums", "data"];
const INT_NAMES: [&str; 6] = ["k", "t", "m", "lim", "cap", "bar"];
const ELEM_NAMES: [&str; 4] = ["x", "v", "e", "y"];
const INDEX_NAMES: [&str; 2] = ["i", "j"];
const SUM_NAMES: [&str; 4] = ["total", "acc", "agg", "tot"];
const PROD_NAMES: [&str; 3] = ["p", "prod", "mul"];
const LOW_NAMES: [&str; 4] = ["lo", "low", "least", "small"];
const HIGH_NAMES: [&str; 4] = ["hi", "high", "most", "big"];
const CLAMP_NAMES: [&str; 3] = ["c", "kept", "clamped"];
const MEAN_NAMES: [&str; 3] = ["mean", "avg", "share"];
/// A counter's name says which comparison it counts: (names, operator).
const COUNTERS: [(&[&str], &str); 4] = [
    (&["above", "over", "higher"], ">"),
    (&["at_least", "reached", "enough"], ">="),
    (&["below", "under", "lower"], "<"),
    (&["at_most", "within", "capped"], "<="),
];
/// Templates per family; the last one of each family is held out.
const TEMPLATES: usize = 4;

/// Per-task name choices, without repeats.
struct Namer<'a> {
    used: Vec<String>,
    rng: &'a mut ChaCha8Rng,
}

impl Namer<'_> {
    fn pick(&mut self, pool: &[&str]) -> String {
        let free: Vec<&&str> = pool
            .iter()
            .filter(|n| !self.used.iter().any(|u| u == **n))
            .collect();
        let name = free
            .choose(self.rng)
            .expect("name pool exhausted")
            .to_string();
        self.used.push(name.clone());
        name
    }
}

/// One block of a function body in its correct form: lines, and the variable it defines.
struct Block {
    lines: Vec<String>,
    var: String,
}

/// Template `t` of `family`, correct, over list `l` and integer `k`; `x` names its loop
/// variable (drawn first, for every family, so the draws stay in one order).
fn block(family: Family, t: usize, l: &str, k: &str, nm: &mut Namer) -> Block {
    let x = nm.pick(&ELEM_NAMES);
    let (lines, var) = match family {
        Family::Minmax => minmax_block(t, l, k, &x, nm),
        Family::OffByOne => off_by_one_block(t, l, k, &x, nm),
        Family::Strictness => strictness_block(t, l, k, &x, nm),
        Family::ZeroDivision => zero_division_block(t, l, k, &x, nm),
        Family::Accumulator => accumulator_block(t, l, k, &x, nm),
    };
    Block { lines, var }
}

/// The minmax templates: running minimum or maximum, a sum of positive parts, a clamp -> (lines, defined variable).
fn minmax_block(t: usize, l: &str, k: &str, x: &str, nm: &mut Namer) -> (Vec<String>, String) {
    match t {
        0 => {
            let v = nm.pick(&LOW_NAMES);
            (
                vec![
                    format!("let {v} = 99;"),
                    format!("for {x} in {l} {{ {v} = min({v}, {x}); }}"),
                ],
                v,
            )
        }
        1 => {
            let v = nm.pick(&HIGH_NAMES);
            (
                vec![
                    format!("let {v} = -99;"),
                    format!("for {x} in {l} {{ {v} = max({v}, {x}); }}"),
                ],
                v,
            )
        }
        2 => {
            let v = nm.pick(&SUM_NAMES);
            (
                vec![
                    format!("let {v} = 0;"),
                    format!("for {x} in {l} {{ {v} += max({x}, 0); }}"),
                ],
                v,
            )
        }
        _ => {
            let v = nm.pick(&CLAMP_NAMES);
            let lo = nm.rng.gen_range(0..=3);
            (
                vec![format!("let {v} = min(max({k}, {lo}), {});", lo + 4)],
                v,
            )
        }
    }
}

/// The off by one templates: an index loop, a count to `k`, doubling `k` times, a loop over neighbours -> (lines, defined variable).
fn off_by_one_block(t: usize, l: &str, k: &str, _x: &str, nm: &mut Namer) -> (Vec<String>, String) {
    match t {
        0 => {
            let (v, i) = (nm.pick(&SUM_NAMES), nm.pick(&INDEX_NAMES));
            (
                vec![
                    format!("let {v} = 0;"),
                    format!("for {i} in 0..{l}.len() {{ {v} += {l}[{i}]; }}"),
                ],
                v,
            )
        }
        1 => {
            let (v, i) = (nm.pick(&SUM_NAMES), nm.pick(&INDEX_NAMES));
            (
                vec![
                    format!("let {v} = 0;"),
                    format!("for {i} in 1..={k} {{ {v} += {i}; }}"),
                ],
                v,
            )
        }
        2 => {
            let (v, i) = (nm.pick(&PROD_NAMES), nm.pick(&INDEX_NAMES));
            (
                vec![
                    format!("let {v} = 1;"),
                    format!("for {i} in 1..={k} {{ {v} *= 2; }}"),
                ],
                v,
            )
        }
        _ => {
            let (v, i) = (nm.pick(&SUM_NAMES), nm.pick(&INDEX_NAMES));
            let body = format!("{v} += {l}[{i}] - {l}[{i} - 1];");
            (
                vec![
                    format!("let {v} = 0;"),
                    format!("for {i} in 1..{l}.len() {{ {body} }}"),
                ],
                v,
            )
        }
    }
}

/// The strictness templates: a counter whose name says its comparison, against four kinds of bound -> (lines, defined variable).
fn strictness_block(t: usize, l: &str, k: &str, x: &str, nm: &mut Namer) -> (Vec<String>, String) {
    match t {
        t => {
            let (names, op) = COUNTERS[nm.rng.gen_range(0..4)];
            let v = nm.pick(names);
            let bound = match t {
                0 => k.to_string(),
                1 => nm.rng.gen_range(0..=3).to_string(),
                2 => format!("{k} - 2"),
                _ => format!("{k} + 1"),
            };
            let count = format!("for {x} in {l} {{ if {x} {op} {bound} {{ {v} += 1; }} }}");
            (vec![format!("let {v} = 0;"), count], v)
        }
    }
}

/// The zero division templates: a mean, a quotient, a remainder, a quotient by a count, each guarded -> (lines, defined variable).
fn zero_division_block(
    t: usize,
    l: &str,
    k: &str,
    x: &str,
    nm: &mut Namer,
) -> (Vec<String>, String) {
    match t {
        0 => {
            let (s, v) = (nm.pick(&SUM_NAMES), nm.pick(&MEAN_NAMES));
            let lines = vec![
                format!("let {s} = 0;"),
                format!("for {x} in {l} {{ {s} += {x}; }}"),
                format!("if {l}.len() == 0 {{ return 0; }}"),
                format!("let {v} = {s} / {l}.len();"),
            ];
            (lines, v)
        }
        1 => {
            let v = nm.pick(&MEAN_NAMES);
            let n = nm.rng.gen_range(10..=60);
            (
                vec![
                    format!("if {k} == 0 {{ return 0; }}"),
                    format!("let {v} = {n} / {k};"),
                ],
                v,
            )
        }
        2 => {
            let v = nm.pick(&MEAN_NAMES);
            (
                vec![
                    format!("if {k} == 0 {{ return 0; }}"),
                    format!("let {v} = {l}.len() % {k};"),
                ],
                v,
            )
        }
        _ => {
            let (c, v) = (nm.pick(&COUNTERS[0].0), nm.pick(&MEAN_NAMES));
            let lines = vec![
                format!("let {c} = 0;"),
                format!("for {x} in {l} {{ if {x} > 0 {{ {c} += 1; }} }}"),
                format!("if {c} == 0 {{ return 0; }}"),
                format!("let {v} = {k} / {c};"),
            ];
            (lines, v)
        }
    }
}

/// The accumulator templates: a sum, a product, a counter, a weighted sum, each from its identity -> (lines, defined variable).
fn accumulator_block(t: usize, l: &str, k: &str, x: &str, nm: &mut Namer) -> (Vec<String>, String) {
    match t {
        0 => {
            let v = nm.pick(&SUM_NAMES);
            (
                vec![
                    format!("let {v} = 0;"),
                    format!("for {x} in {l} {{ {v} += {x}; }}"),
                ],
                v,
            )
        }
        1 => {
            let v = nm.pick(&PROD_NAMES);
            (
                vec![
                    format!("let {v} = 1;"),
                    format!("for {x} in {l} {{ {v} *= {x}; }}"),
                ],
                v,
            )
        }
        2 => {
            let (names, op) = COUNTERS[nm.rng.gen_range(0..4)];
            let v = nm.pick(names);
            let count = format!("for {x} in {l} {{ if {x} {op} {k} {{ {v} += 1; }} }}");
            (vec![format!("let {v} = 0;"), count], v)
        }
        _ => {
            let (v, i) = (nm.pick(&SUM_NAMES), nm.pick(&INDEX_NAMES));
            let body = format!("for {i} in 0..{l}.len() {{ {v} += {l}[{i}] * {i}; }}");
            (vec![format!("let {v} = 0;"), body], v)
        }
    }
}

/// The buggy form of a correct block of `family`.
fn break_block(family: Family, fixed: &[String], rng: &mut ChaCha8Rng) -> Vec<String> {
    match family {
        Family::ZeroDivision => fixed
            .iter()
            .filter(|l| !l.contains("return 0"))
            .cloned()
            .collect(),
        Family::Accumulator => {
            let init = &fixed[0]; // `let v = 0;` or `let v = 1;`
            let wrong = if init.ends_with("= 1;") {
                ["0", "2"][rng.gen_range(0..2)]
            } else {
                ["1", "2", "5"][rng.gen_range(0..3)]
            };
            let (head, _) = init.rsplit_once("= ").unwrap();
            let mut out = fixed.to_vec();
            out[0] = format!("{head}= {wrong};");
            out
        }
        _ => fixed.iter().map(|l| family.op().apply(l, &[])).collect(),
    }
}

/// Which tasks: the train split samples templates 0..TEMPLATES-1, held-out the last one too.
#[derive(Clone, Copy, Debug, PartialEq)]
enum GenSplit {
    Train,
    Heldout,
}

/// One generated task, reproducible from (split, seed, id); None when the draw is rejected.
fn generate_task(split: GenSplit, seed: u64, id: usize, decoy_rate: f64) -> Option<Task> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(id as u64 * 2 + (split == GenSplit::Heldout) as u64);
    let family = Family::ALL[rng.gen_range(0..5)];
    let template = match split {
        GenSplit::Train => rng.gen_range(0..TEMPLATES - 1),
        GenSplit::Heldout => rng.gen_range(0..TEMPLATES),
    };
    let mut nm = Namer {
        used: vec![],
        rng: &mut rng,
    };
    let (f, l, k) = (
        nm.pick(&FN_NAMES),
        nm.pick(&LIST_NAMES),
        nm.pick(&INT_NAMES),
    );
    let core = block(family, template, &l, &k, &mut nm);
    let decoy = if nm.rng.gen_bool(decoy_rate) {
        let others: Vec<Family> = Family::ALL.into_iter().filter(|&g| g != family).collect();
        let g = *others.choose(nm.rng).unwrap();
        let t = nm.rng.gen_range(0..TEMPLATES);
        let d = block(g, t, &l, &k, &mut nm);
        // the decoy must hold none of the bug family's constructs (its op must not touch it)
        let text = d.lines.join("\n");
        if family.op().apply(&text, &[]) != text {
            return None;
        }
        Some(d)
    } else {
        None
    };
    let decoy_first = nm.rng.gen_bool(0.5);
    let combine = ["+", "-"][nm.rng.gen_range(0..2)];
    let core_buggy = break_block(family, &core.lines, nm.rng);
    let assemble = |core_lines: &[String]| -> String {
        let mut body: Vec<String> = vec![];
        let d_lines = decoy.as_ref().map(|d| d.lines.clone()).unwrap_or_default();
        if decoy_first {
            body.extend(d_lines.clone());
            body.extend(core_lines.iter().cloned());
        } else {
            body.extend(core_lines.iter().cloned());
            body.extend(d_lines);
        }
        body.push(match &decoy {
            Some(d) => format!("{} {combine} {}", core.var, d.var),
            None => core.var.clone(),
        });
        let body: Vec<String> = body.iter().map(|line| format!("    {line}")).collect();
        format!("fn {f}({l}, {k}) {{\n{}\n}}", body.join("\n"))
    };
    let (buggy, fixed) = (assemble(&core_buggy), assemble(&core.lines));
    if buggy == fixed || family.op().apply(&buggy, &[]) != fixed {
        return None;
    }
    let (public_tests, hidden_tests) = draw_generic_tests(&buggy, &fixed, &f, &mut rng)?;
    let prompt = arl::task_prompt(&f, &[l, k]);
    Some(Task {
        id,
        family,
        variant: template,
        fn_name: f,
        prompt,
        buggy,
        fixed,
        public_tests,
        hidden_tests,
    })
}

/// One generated task with `bugs` (2 or more) bugs from distinct families, reproducible from
/// (split, seed, id, bugs); None when the draw is rejected. -> (task, its bug families).
fn generate_multi_task(
    split: GenSplit,
    seed: u64,
    id: usize,
    decoy_rate: f64,
    bugs: usize,
) -> Option<(Task, Vec<Family>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 1000 * bugs as u64); // other streams than one-bug tasks
    rng.set_stream(id as u64 * 2 + (split == GenSplit::Heldout) as u64);
    let mut families = Family::ALL.to_vec();
    families.shuffle(&mut rng);
    families.truncate(bugs);
    let templates: Vec<usize> = families
        .iter()
        .map(|_| match split {
            GenSplit::Train => rng.gen_range(0..TEMPLATES - 1),
            GenSplit::Heldout => rng.gen_range(0..TEMPLATES),
        })
        .collect();
    let mut nm = Namer {
        used: vec![],
        rng: &mut rng,
    };
    let (f, l, k) = (
        nm.pick(&FN_NAMES),
        nm.pick(&LIST_NAMES),
        nm.pick(&INT_NAMES),
    );
    let cores: Vec<Block> = families
        .iter()
        .zip(&templates)
        .map(|(&fam, &t)| block(fam, t, &l, &k, &mut nm))
        .collect();
    let decoy = if nm.rng.gen_bool(decoy_rate) {
        let others: Vec<Family> = Family::ALL
            .into_iter()
            .filter(|g| !families.contains(g))
            .collect();
        let g = *others.choose(nm.rng)?;
        let t = nm.rng.gen_range(0..TEMPLATES);
        Some(block(g, t, &l, &k, &mut nm))
    } else {
        None
    };
    // every bug's op must leave every other block as it is, so each op fixes exactly its bug
    for (b, &fam) in families.iter().enumerate() {
        let others = cores
            .iter()
            .enumerate()
            .filter(|(c, _)| *c != b)
            .map(|(_, blk)| blk)
            .chain(decoy.as_ref());
        for blk in others {
            let text = blk.lines.join("\n");
            if fam.op().apply(&text, &[]) != text {
                return None;
            }
        }
    }
    let mut blocks: Vec<(Vec<String>, Vec<String>, String)> = families
        .iter()
        .zip(&cores)
        .map(|(&fam, core)| {
            (
                break_block(fam, &core.lines, nm.rng),
                core.lines.clone(),
                core.var.clone(),
            )
        })
        .collect();
    if let Some(d) = &decoy {
        blocks.push((d.lines.clone(), d.lines.clone(), d.var.clone()));
    }
    blocks.shuffle(nm.rng);
    let signs: Vec<&str> = (1..blocks.len())
        .map(|_| ["+", "-"][nm.rng.gen_range(0..2)])
        .collect();
    let assemble = |buggy: bool| -> String {
        let mut body: Vec<String> = vec![];
        for (broken, correct, _) in &blocks {
            body.extend(if buggy { broken.iter() } else { correct.iter() }.cloned());
        }
        let mut ret = blocks[0].2.clone();
        for ((_, _, var), sign) in blocks[1..].iter().zip(&signs) {
            ret = format!("{ret} {sign} {var}");
        }
        body.push(ret);
        let body: Vec<String> = body.iter().map(|line| format!("    {line}")).collect();
        format!("fn {f}({l}, {k}) {{\n{}\n}}", body.join("\n"))
    };
    let (buggy, fixed) = (assemble(true), assemble(false));
    let repaired = families
        .iter()
        .fold(buggy.clone(), |src, fam| fam.op().apply(&src, &[]));
    if buggy == fixed || repaired != fixed {
        return None;
    }
    let (public_tests, hidden_tests) = draw_generic_tests(&buggy, &fixed, &f, &mut rng)?;
    // each bug alone fails a hidden test: every other op applied still leaves a failure
    for skip in 0..families.len() {
        let partial = (families.iter().enumerate())
            .filter(|(b, _)| *b != skip)
            .fold(buggy.clone(), |src, (_, fam)| fam.op().apply(&src, &[]));
        if arl::run_tests(&partial, &hidden_tests, &f)
            .iter()
            .all(|r| r.0)
        {
            return None;
        }
    }
    let prompt = arl::task_prompt(&f, &[l, k]);
    let (family, variant) = (families[0], templates[0]);
    let task = Task {
        id,
        family,
        variant,
        fn_name: f,
        prompt,
        buggy,
        fixed,
        public_tests,
        hidden_tests,
    };
    Some((task, families))
}

/// Tests for a (list, int) function: 3 public and 8 hidden, each set with an input the buggy
/// source fails; None when fewer than two inputs tell the sources apart.
fn draw_generic_tests(
    buggy: &str,
    fixed: &str,
    f: &str,
    rng: &mut ChaCha8Rng,
) -> Option<(Vec<TestCase>, Vec<TestCase>)> {
    let mut inputs: Vec<Vec<Value>> = vec![];
    for _ in 0..400 {
        let args = vec![
            Value::List(arl::random_list(rng, 0..=5, -9..=9)),
            Value::Int(rng.gen_range(0..=9)),
        ];
        if !inputs.contains(&args) {
            inputs.push(args);
        }
        if inputs.len() == 44 {
            break;
        }
    }
    let probe: Vec<TestCase> = inputs
        .into_iter()
        .map(|args| TestCase {
            args,
            want: Value::Int(0),
        })
        .collect();
    let wants = arl::run_tests(fixed, &probe, f);
    let gots = arl::run_tests(buggy, &probe, f);
    let mut pool = vec![];
    for ((mut test, (_, want)), (_, got)) in probe.into_iter().zip(wants).zip(gots) {
        if matches!(want, Value::Error(_)) {
            return None; // the fixed source must run on every input
        }
        test.want = want;
        let fails = got != test.want;
        pool.push((test, fails));
    }
    if pool.iter().filter(|(_, fails)| *fails).count() < 2 {
        return None;
    }
    let public = arl::take_tests(&mut pool, 3, f);
    let hidden = arl::take_tests(&mut pool, 8, f);
    Some((public, hidden))
}

/// The first `n` accepted tasks of a split (ids are draw indices; rejected draws are skipped).
fn generate_tasks(split: GenSplit, seed: u64, n: usize, decoy_rate: f64) -> Vec<Task> {
    (0..)
        .filter_map(|id| generate_task(split, seed, id, decoy_rate))
        .take(n)
        .collect()
}

/// The first `n` accepted tasks with `bugs` bugs each -> (tasks, each task's bug families).
fn generate_multi_tasks(
    split: GenSplit,
    seed: u64,
    n: usize,
    decoy_rate: f64,
    bugs: usize,
) -> (Vec<Task>, Vec<Vec<Family>>) {
    (0..)
        .filter_map(|id| generate_multi_task(split, seed, id, decoy_rate, bugs))
        .take(n)
        .unzip()
}

// ---------------------------------------------------------------- policies and statistics

/// The true oracle: reads, applies the task family's op, tests, submits.
fn oracle(op: EditOp) -> impl FnMut(&str) -> String {
    oracle_of(vec![op])
}

/// The true oracle of a task with several bugs: reads, applies each bug's op, tests, submits.
fn oracle_of(ops: Vec<EditOp>) -> impl FnMut(&str) -> String {
    let mut next = 0;
    move |obs: &str| {
        let call = |t: &str| format!("<call> {t} </call>");
        match obs.split_whitespace().next().unwrap_or("") {
            "fn" | "edited" if next < ops.len() => {
                next += 1;
                call(&format!("edit {}", ops[next - 1]))
            }
            "edited" => call("test"),
            "pass" | "fail" => call("submit"),
            _ => call("read"),
        }
    }
}

/// Reads, then a random repair, then submits.
fn read_then_random(seed: u64) -> impl FnMut(&str) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    move |obs: &str| {
        let call = |t: &str| format!("<call> {t} </call>");
        match obs.split_whitespace().next().unwrap_or("") {
            "fix" => call("read"),
            "fn" => call(&format!("edit {}", EditOp::ALL[rng.gen_range(0..5)])),
            _ => call("submit"),
        }
    }
}

/// Mean and a 95% percentile-bootstrap interval over tasks (rows) and seeds (columns):
/// resample seeds, then tasks, 2000 times.
fn bootstrap(per_task: &[Vec<f64>], rng: &mut ChaCha8Rng) -> (f64, f64, f64) {
    let (n_seeds, n_tasks) = (per_task.len(), per_task[0].len());
    let mean = per_task.iter().flatten().sum::<f64>() / (n_seeds * n_tasks) as f64;
    let mut draws: Vec<f64> = (0..2000)
        .map(|_| {
            let mut total = 0.0;
            for _ in 0..n_seeds {
                let s = rng.gen_range(0..n_seeds);
                for _ in 0..n_tasks {
                    total += per_task[s][rng.gen_range(0..n_tasks)];
                }
            }
            total / (n_seeds * n_tasks) as f64
        })
        .collect();
    draws.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (mean, draws[50], draws[1949])
}

/// Pass rate of each task under a scripted policy, `n` episodes each, in `cfg`'s environment.
fn scripted_pass(
    tasks: &[Task],
    cfg: &arl::RLConfig,
    n: usize,
    make: &mut dyn FnMut(&Task, u64) -> Box<dyn FnMut(&str) -> String>,
) -> Vec<f64> {
    let mut seed = 0u64;
    tasks
        .iter()
        .map(|task| {
            let mut passed = 0;
            for _ in 0..n {
                seed += 1;
                let mut env = arl::make_env(cfg);
                let mut policy = make(task, seed);
                let (reward, _) = arl::run_episode(&mut policy, &mut *env, task);
                passed += (reward > 0.0) as usize;
            }
            passed as f64 / n as f64
        })
        .collect()
}

/// Per-task pass rate of the model, `n` sampled episodes per task, and what those episodes did.
fn model_pass(
    model: &arl::TinyAgent,
    tasks: &[Task],
    tok: &arl::Tokenizer,
    n: usize,
    seed: u64,
) -> (Vec<f64>, arl::BehaviorStats) {
    let cfg = arl::RLConfig {
        group_size: n,
        anonymize: false,
        ..Default::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let trajs = arl::sample_groups(model, &arl::make_env, tasks, tok, &cfg, &mut rng);
    let per_task = (trajs.chunks(n))
        .map(|g| g.iter().filter(|t| t.reward > 0.0).count() as f64 / n as f64)
        .collect();
    (per_task, arl::behavior_stats(&trajs))
}

/// One line of behavior statistics, e.g. `  base: pass 0.172 reads 0.81 ...`.
fn show(what: &str, s: &arl::BehaviorStats) {
    println!(
        "  {what}: pass {:.3} reads {:.2} edits {:.2} first_edit_right {:.3} turns {:.2} len {:.1}",
        s.pass_rate, s.reads, s.edits, s.first_edit_right, s.turns, s.length
    );
}

fn main() -> std::io::Result<()> {
    tch::set_num_threads(1);
    let args: Vec<String> = std::env::args().collect();
    let seeds: u64 = args
        .get(1)
        .map_or(3, |s| s.parse().expect("SEEDS: a number"));
    let steps: usize = args
        .get(2)
        .map_or(600, |s| s.parse().expect("STEPS: a number"));
    let decoy_rate = 0.8;
    let train = generate_tasks(GenSplit::Train, 0, 1000, decoy_rate);
    let heldout = generate_tasks(GenSplit::Heldout, 0, 200, decoy_rate);
    // held-out tasks with 2 and 3 bugs, for their floors and the one-bug agents
    let multi: Vec<(usize, Vec<Task>, Vec<Vec<Family>>)> = [2, 3]
        .into_iter()
        .map(|bugs| {
            let (tasks, fams) = generate_multi_tasks(GenSplit::Heldout, 0, 100, decoy_rate, bugs);
            (bugs, tasks, fams)
        })
        .collect();
    let distinct: std::collections::HashSet<&str> =
        train.iter().map(|t| t.buggy.as_str()).collect();
    let overlap = heldout
        .iter()
        .filter(|t| distinct.contains(t.buggy.as_str()))
        .count();
    println!(
        "train {} tasks ({} distinct sources), held-out {} ({} also in train)",
        train.len(),
        distinct.len(),
        heldout.len(),
        overlap
    );
    for t in heldout.iter().take(3) {
        println!("--- {} (template {}):\n{}", t.family, t.variant, t.buggy);
    }
    for (bugs, tasks, _) in &multi {
        println!("--- {bugs} bugs ({}):\n{}", tasks[0].family, tasks[0].buggy);
    }
    let all: Vec<Task> = train.iter().chain(&heldout).cloned().collect();
    let tok = arl::build_tokenizer(&all);
    println!("vocabulary: {} words", tok.vocab_size());
    let cfg = arl::RLConfig {
        anonymize: false,
        ..Default::default()
    };
    let mut brng = ChaCha8Rng::seed_from_u64(7);
    let mut floors = serde_json::Map::new();
    let kinds: [(
        &str,
        Box<dyn Fn(&Task, u64) -> Box<dyn FnMut(&str) -> String>>,
    ); 5] = [
        (
            "oracle",
            Box::new(|t: &Task, _| Box::new(oracle(t.family.op()))),
        ),
        (
            "random_repair",
            Box::new(|_: &Task, s| arl::scripted_policy(arl::PolicyKind::Blind, s)),
        ),
        (
            "read_then_random",
            Box::new(|_: &Task, s| Box::new(read_then_random(s))),
        ),
        (
            "keyword_spotter",
            Box::new(|_: &Task, s| arl::scripted_policy(arl::PolicyKind::Oracle, s)),
        ),
        (
            "hack",
            Box::new(|_: &Task, s| arl::scripted_policy(arl::PolicyKind::Hacker, s)),
        ),
    ];
    let mut spotter = vec![];
    for (name, make) in &kinds {
        let p = scripted_pass(&heldout, &cfg, 4, &mut |t, s| make(t, s));
        if *name == "keyword_spotter" {
            spotter = p.clone();
        }
        let (m, lo, hi) = bootstrap(&[p], &mut brng);
        println!("floor {name:<17} held-out {m:.3} [{lo:.3}, {hi:.3}]");
        floors.insert(name.to_string(), json!({"pass_rate": m, "ci95": [lo, hi]}));
    }
    let mut multi_json = serde_json::Map::new();
    for (bugs, tasks, fams) in &multi {
        let mcfg = arl::RLConfig {
            max_edits: *bugs,
            max_turns: 6 + bugs,
            ..cfg.clone()
        };
        let mut row = serde_json::Map::new();
        let idx = |t: &Task| tasks.iter().position(|u| u.id == t.id).unwrap();
        let oracle_p = scripted_pass(tasks, &mcfg, 2, &mut |t, _| {
            Box::new(oracle_of(fams[idx(t)].iter().map(|f| f.op()).collect()))
        });
        let random_p = scripted_pass(tasks, &mcfg, 4, &mut |_, s| {
            arl::scripted_policy(arl::PolicyKind::Blind, s)
        });
        let spotter_p = scripted_pass(tasks, &mcfg, 2, &mut |_, s| {
            arl::scripted_policy(arl::PolicyKind::Oracle, s)
        });
        for (name, p) in [
            ("oracle", oracle_p),
            ("random_repair", random_p),
            ("keyword_spotter", spotter_p),
        ] {
            let (m, lo, hi) = bootstrap(&[p], &mut brng);
            println!("floor {bugs} bugs, {name:<15} held-out {m:.3} [{lo:.3}, {hi:.3}]");
            row.insert(name.to_string(), json!({"pass_rate": m, "ci95": [lo, hi]}));
        }
        multi_json.insert(
            format!("bugs_{bugs}"),
            json!({"tasks": tasks.len(), "floors": row}),
        );
    }
    let mut per_seed_multi: Vec<Vec<Vec<f64>>> = vec![vec![]; multi.len()];
    let mut per_seed_before = vec![];
    let mut per_seed_after = vec![];
    let mut per_seed_train = vec![];
    for seed in 0..seeds {
        let t0 = std::time::Instant::now();
        let knob = |name: &str, default: f64| -> f64 {
            std::env::var(name)
                .ok()
                .map_or(default, |v| v.parse().expect("a number"))
        };
        let clone_steps = knob("CLONE_STEPS", 300.0) as usize;
        let opts = arl::BaseAgentOptions {
            seed,
            steps: clone_steps,
            ..Default::default()
        };
        let mut demos = vec![];
        let mut env = arl::make_env(&cfg);
        let n_rtr = knob("RTR_TASKS", 1000.0) as usize;
        let n_oracle = knob("ORACLE_TASKS", 100.0) as usize;
        let n_random = knob("RANDOM_TASKS", 200.0) as usize;
        for (i, task) in train.iter().enumerate() {
            let ro = arl::RolloutOptions::default();
            if i < n_rtr {
                let mut p = read_then_random(seed * 100_000 + i as u64);
                demos.push(arl::scripted_rollout(&mut p, &mut *env, task, &tok, ro));
            }
            if i < n_oracle {
                let mut p = oracle(task.family.op());
                demos.push(arl::scripted_rollout(&mut p, &mut *env, task, &tok, ro));
            }
            if i < n_random {
                let mut p =
                    arl::scripted_policy(arl::PolicyKind::Random, seed * 100_000 + i as u64);
                demos.push(arl::scripted_rollout(&mut *p, &mut *env, task, &tok, ro));
            }
        }
        let model = arl::behavior_clone(&tok, &demos, &opts);
        let (before, before_stats) = model_pass(&model, &heldout, &tok, 4, 100 + seed);
        show("base", &before_stats);
        let lr = knob("LR", 1e-3);
        let run_cfg = arl::RLConfig {
            seed,
            lr,
            ..cfg.clone()
        };
        let history = arl::train_rl(
            &model,
            &train,
            &tok,
            &run_cfg,
            steps,
            arl::TrainOptions::default(),
        );
        let (after, after_stats) = model_pass(&model, &heldout, &tok, 4, 200 + seed);
        show("after", &after_stats);
        for (m, (bugs, tasks, _)) in multi.iter().enumerate() {
            let mcfg = arl::RLConfig {
                max_edits: *bugs,
                max_turns: 6 + bugs,
                anonymize: false,
                group_size: 2,
                ..Default::default()
            };
            let mut rng = ChaCha8Rng::seed_from_u64(400 + seed);
            let trajs = arl::sample_groups(&model, &arl::make_env, tasks, &tok, &mcfg, &mut rng);
            per_seed_multi[m].push(
                trajs
                    .chunks(2)
                    .map(|g| g.iter().filter(|t| t.reward > 0.0).count() as f64 / 2.0)
                    .collect(),
            );
        }
        let (train_after, _) = model_pass(&model, &train[..200], &tok, 2, 300 + seed);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let curve: Vec<String> = history
            .chunks(10)
            .map(|c| {
                format!(
                    "{:.2}",
                    c.iter().map(|r| r.sampled.pass_rate).sum::<f64>() / c.len() as f64
                )
            })
            .collect();
        println!(
            "seed {seed}: held-out {:.3} -> {:.3}, train {:.3}; sampled pass per 10 steps {}; {:.0} s",
            mean(&before), mean(&after), mean(&train_after), curve.join(" "), t0.elapsed().as_secs_f64()
        );
        per_seed_before.push(before);
        per_seed_after.push(after);
        per_seed_train.push(train_after);
    }
    let (b, blo, bhi) = bootstrap(&per_seed_before, &mut brng);
    let (a, alo, ahi) = bootstrap(&per_seed_after, &mut brng);
    let (tr, _, _) = bootstrap(&per_seed_train, &mut brng);
    println!("base held-out {b:.3} [{blo:.3}, {bhi:.3}]; after GRPO {a:.3} [{alo:.3}, {ahi:.3}]; train {tr:.3}");
    // the skill beyond keywords: held-out tasks the keyword spotter fails, and the held-out
    // template of each family (a code shape no train task has)
    let mut subsets = serde_json::Map::new();
    let groups: [(&str, Box<dyn Fn(usize) -> bool>); 4] = [
        ("spotter_fails", Box::new(|i: usize| spotter[i] == 0.0)),
        ("spotter_right", Box::new(|i: usize| spotter[i] > 0.0)),
        (
            "unseen_template",
            Box::new(|i: usize| heldout[i].variant == TEMPLATES - 1),
        ),
        (
            "seen_templates",
            Box::new(|i: usize| heldout[i].variant < TEMPLATES - 1),
        ),
    ];
    for (name, keep) in &groups {
        let pick = |per_seed: &[Vec<f64>]| -> Vec<Vec<f64>> {
            per_seed
                .iter()
                .map(|p| (0..p.len()).filter(|&i| keep(i)).map(|i| p[i]).collect())
                .collect()
        };
        let n = (0..heldout.len()).filter(|&i| keep(i)).count();
        let (bm, _, _) = bootstrap(&pick(&per_seed_before), &mut brng);
        let (am, alo2, ahi2) = bootstrap(&pick(&per_seed_after), &mut brng);
        println!("  held-out, {name:<16} {n:>4} tasks: base {bm:.3}, after {am:.3} [{alo2:.3}, {ahi2:.3}]");
        subsets.insert(
            name.to_string(),
            json!({"tasks": n, "base": bm, "after": am, "after_ci95": [alo2, ahi2]}),
        );
    }
    let per_family: Vec<String> = Family::ALL
        .iter()
        .map(|&f| {
            let idx: Vec<usize> = (0..heldout.len())
                .filter(|&i| heldout[i].family == f)
                .collect();
            let m = per_seed_after
                .iter()
                .map(|p| idx.iter().map(|&i| p[i]).sum::<f64>() / idx.len() as f64)
                .sum::<f64>()
                / per_seed_after.len() as f64;
            subsets.insert(
                format!("family_{f}"),
                json!({"tasks": idx.len(), "after": m}),
            );
            format!("{f} {m:.2}")
        })
        .collect();
    println!("  held-out after, per family: {}", per_family.join(", "));
    for (m, (bugs, _, _)) in multi.iter().enumerate() {
        let (am, alo3, ahi3) = bootstrap(&per_seed_multi[m], &mut brng);
        println!("  held-out, {bugs} bugs, the one-bug agents ({bugs} edits allowed): {am:.3} [{alo3:.3}, {ahi3:.3}]");
        multi_json[&format!("bugs_{bugs}")]["one_bug_agents"] =
            json!({"pass_rate": am, "ci95": [alo3, ahi3]});
    }
    let results = json!({
        "multi_bug": multi_json,
        "subsets": subsets,
        "train_tasks": train.len(), "heldout_tasks": heldout.len(), "seeds": seeds, "steps": steps,
        "decoy_rate": decoy_rate, "vocabulary": tok.vocab_size(),
        "floors": floors,
        "floor_random_repair": floors["random_repair"]["pass_rate"],
        "base_heldout_pass_rate": b, "base_heldout_ci95": [blo, bhi],
        "heldout_pass_rate": a, "heldout_ci95": [alo, ahi], "train_pass_rate": tr,
    });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
