//! Gym design study (issue 55): can tasks be built whose fix only the tests reveal?
//!
//!     scripts/lab.sh gym_design [TASKS]      (default 600 train and 300 held-out draws)
//!
//! Today's gym ties each bug to a family and `edit` names only the family's op, so a lexical
//! rule passes every held-out task. This lab sketches the next gym on chapter 04's templates
//! and sandbox, without changing them: a bug is one *mutation* at one line of a correct
//! program (a comparison made strict or turned, `min` for `max`, `..` for `..=`, a constant
//! off by one, a sign), and a repair names its place and its op, `edit LINE OP`. It measures,
//! on train templates 0-2 and held-out template 3 of each family, with the name pools and with
//! neutral names (a, b, c, ...):
//!
//! - how many candidate repairs (line, op) a task has, and how many of them the public tests
//!   accept (a test-reading agent can do no better than pick among those);
//! - `random_repair`: one random candidate, then submit;
//! - `lexical_rule`: the candidate that was the fix most often on the train split, by the
//!   line's shape (names and numbers abstracted) and op, with the op's rate as fallback: a rule
//!   written from the train templates only, that runs no test;
//!   `lexical_rule_with_names` keeps the names in the shape (the pools name intent:
//!   `at_least`, `lo`);
//! - `probe_and_test`: candidates in the lexical rule's order, each edited, tested, and undone
//!   when a public test still fails, within `BUDGET` tool calls;
//! - `test_solver`: every candidate run offline against the public tests, the first (in the
//!   rule's order) that passes them all submitted: what reading the tests can reach.
//!
//!
//! Then TinyAgent on the gym (neutral names, 8 turns, 512-token episodes): behavior-cloned as
//! chapter 9 clones the RL base and trained with chapter 9's GRPO for STEPS steps (default
//! 300), and, as a supervised bound, cloned from every train task's oracle episode and trained
//! 100 steps; pass rates on 200 train and every held-out task every 50 steps.
//!
//!     scripts/lab.sh gym_design [TASKS [STEPS]]
//!
//! Writes labs/results/gym_design.json; docs/gym-mutation.md reads it. Uses chapters up to 09.

use std::collections::HashMap;

use agentrl as arl;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const LAB: &str = "gym_design";
/// Tool calls an episode may make (today's gym: 8 turns).
const BUDGET: usize = 8;

/// The mutation ops; each is its own inverse but `Inc`/`Dec`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Op {
    /// `>` <-> `>=`, `<` <-> `<=`
    Flip,
    /// `>` <-> `<`, `>=` <-> `<=`
    Turn,
    /// `min` <-> `max`
    Swap,
    /// `..` <-> `..=`
    Range,
    Inc,
    Dec,
    /// `+` <-> `-` (also in `+=`)
    Sign,
}

const OPS: [Op; 7] = [
    Op::Flip,
    Op::Turn,
    Op::Swap,
    Op::Range,
    Op::Inc,
    Op::Dec,
    Op::Sign,
];

impl Op {
    fn inverse(self) -> Op {
        match self {
            Op::Inc => Op::Dec,
            Op::Dec => Op::Inc,
            op => op,
        }
    }

    /// The line with the op applied to its first matching token, or None.
    fn apply(self, line: &str) -> Option<String> {
        let replace_first = |pairs: &[(&str, &str)]| -> Option<String> {
            // the earliest match of any pair wins; longer patterns first at the same place
            let mut best: Option<(usize, &str, &str)> = None;
            for &(from, to) in pairs {
                if let Some(at) = line.find(from) {
                    if best.is_none_or(|(b, f, _)| at < b || (at == b && from.len() > f.len())) {
                        best = Some((at, from, to));
                    }
                }
            }
            let (at, from, to) = best?;
            Some(format!("{}{to}{}", &line[..at], &line[at + from.len()..]))
        };
        match self {
            Op::Flip => replace_first(&[
                (" > ", " >= "),
                (" >= ", " > "),
                (" < ", " <= "),
                (" <= ", " < "),
            ]),
            Op::Turn => replace_first(&[
                (" > ", " < "),
                (" < ", " > "),
                (" >= ", " <= "),
                (" <= ", " >= "),
            ]),
            Op::Swap => replace_first(&[("min(", "max("), ("max(", "min(")]),
            Op::Range => replace_first(&[("..=", ".."), ("..", "..=")]),
            Op::Sign => {
                replace_first(&[(" + ", " - "), (" - ", " + "), ("+=", "-="), ("-=", "+=")])
            }
            Op::Inc | Op::Dec => {
                // the first integer literal not inside a name (`xs[i - 1]`'s 1 counts)
                let bytes = line.as_bytes();
                let mut i = 0;
                while i < bytes.len() {
                    let starts = bytes[i].is_ascii_digit()
                        && (i == 0
                            || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'));
                    if starts {
                        let end = (i..bytes.len())
                            .find(|&j| !bytes[j].is_ascii_digit())
                            .unwrap_or(bytes.len());
                        let n: i64 = line[i..end].parse().ok()?;
                        let m = if self == Op::Inc { n + 1 } else { n - 1 };
                        if m < 0 {
                            return None;
                        }
                        return Some(format!("{}{m}{}", &line[..i], &line[end..]));
                    }
                    i += 1;
                }
                None
            }
        }
    }
}

/// A program's lines (the signature first, the closing brace last); line numbers are 1-based.
fn lines_of(source: &str) -> Vec<String> {
    source.lines().map(str::to_string).collect()
}

/// Every (line, op) that changes the source, body lines only.
fn candidates(source: &str) -> Vec<(usize, Op)> {
    let lines = lines_of(source);
    let mut out = vec![];
    for (n, line) in lines
        .iter()
        .enumerate()
        .skip(1)
        .take(lines.len().saturating_sub(2))
    {
        for op in OPS {
            if op.apply(line).is_some_and(|l| &l != line) {
                out.push((n + 1, op));
            }
        }
    }
    out
}

fn edit(source: &str, line: usize, op: Op) -> String {
    let mut lines = lines_of(source);
    if let Some(new) = op.apply(&lines[line - 1]) {
        lines[line - 1] = new;
    }
    lines.join("\n")
}

/// A line with numbers (and, unless `keep_names`, names) abstracted, for the lexical rule.
fn shape(line: &str, keep_names: bool) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let keep = [
        "fn", "let", "for", "in", "if", "return", "min", "max", "len",
    ];
    let flush = |word: &mut String, out: &mut String| {
        if !word.is_empty() {
            let w = if keep.contains(&word.as_str()) {
                word.clone()
            } else if word.chars().all(|c| c.is_ascii_digit()) {
                "N".to_string()
            } else if keep_names {
                word.clone()
            } else {
                "v".to_string()
            };
            out.push_str(&w);
            word.clear();
        }
    };
    for c in line.trim().chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Names replaced by a, b, c, ... in order of appearance (the function by `f`).
fn neutral(source: &str) -> String {
    let keep = [
        "fn", "let", "for", "in", "if", "return", "min", "max", "len",
    ];
    let mut names: HashMap<String, String> = HashMap::new();
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String, names: &mut HashMap<String, String>| {
        if word.is_empty() {
            return;
        }
        let plain = word.chars().all(|c| c.is_ascii_digit()) || keep.contains(&word.as_str());
        if plain {
            out.push_str(word);
        } else {
            let n = names.len();
            let name = names.entry(word.clone()).or_insert_with(|| {
                // the function is `f`; the others a, b, c, ... (skipping f)
                const LETTERS: &[u8] = b"abcdeghjmnpqrstuwz";
                if n == 0 {
                    "f".to_string()
                } else {
                    (LETTERS[(n - 1) % LETTERS.len()] as char).to_string()
                }
            });
            out.push_str(name);
        }
        word.clear();
    };
    for c in source.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out, &mut names);
            out.push(c);
        }
    }
    flush(&mut word, &mut out, &mut names);
    out
}

/// One mutation task: correct source, the bug's (line, op), the repair, tests.
struct Task {
    family_template: (arl::Family, usize),
    params: Vec<String>,
    fixed: String,
    buggy: String,
    fix: (usize, Op),
    fn_name: String,
    public: Vec<arl::TestCase>,
    hidden: Vec<arl::TestCase>,
}

/// Draw `id` of a split: chapter 04's correct program (core and decoy blocks), one mutation
/// at a random site; None when the mutation is caught by fewer than two inputs or the
/// program errors. `train` picks the core template from 0..3, held-out uses template 3 only.
fn draw(train: bool, id: u64, names_neutral: bool) -> Option<Task> {
    let mut rng = ChaCha8Rng::seed_from_u64(55);
    rng.set_stream(id * 2 + (!train) as u64);
    let family = arl::Family::ALL[rng.gen_range(0..5)];
    let template = if train { rng.gen_range(0..3) } else { 3 };
    let mut nm = arl::Namer {
        used: vec![],
        rng: &mut rng,
    };
    let (f, l, k) = (
        nm.pick(&arl::FN_NAMES),
        nm.pick(&arl::LIST_NAMES),
        nm.pick(&arl::INT_NAMES),
    );
    let core = arl::block(family, template, &l, &k, &mut nm);
    let others: Vec<arl::Family> = arl::Family::ALL
        .into_iter()
        .filter(|&g| g != family)
        .collect();
    let g = others[nm.rng.gen_range(0..4)];
    let dt = if train { nm.rng.gen_range(0..3) } else { 3 };
    let decoy = arl::block(g, dt, &l, &k, &mut nm);
    let mut body = core.lines.clone();
    body.extend(decoy.lines.iter().cloned());
    body.push(format!("{} + {}", core.var, decoy.var));
    let body: Vec<String> = body.iter().map(|line| format!("    {line}")).collect();
    let mut fixed = format!("fn {f}({l}, {k}) {{\n{}\n}}", body.join("\n"));
    let mut fn_name = f;
    let mut params = vec![l, k];
    if names_neutral {
        fixed = neutral(&fixed);
        fn_name = "f".to_string();
        params = vec!["a".to_string(), "b".to_string()];
    }
    let sites = candidates(&fixed);
    if sites.is_empty() {
        return None;
    }
    let (line, mutation) = sites[rng.gen_range(0..sites.len())];
    let buggy = edit(&fixed, line, mutation);
    let fix = (line, mutation.inverse());
    if edit(&buggy, fix.0, fix.1) != fixed {
        return None; // the inverse would not restore it (another token matched first)
    }
    let (public, hidden) = arl::draw_tests(
        &buggy,
        &fixed,
        &fn_name,
        &mut rng,
        arl::DrawTestsOptions::default(),
    )?;
    Some(Task {
        family_template: (family, template),
        params,
        fixed,
        buggy,
        fix,
        fn_name,
        public,
        hidden,
    })
}

fn passes(sandbox: &arl::Sandbox, source: &str, tests: &[arl::TestCase], name: &str) -> bool {
    sandbox
        .run_tests(source, tests, name)
        .iter()
        .all(|(ok, _)| *ok)
}

/// The lexical rule's table: (shape, op) -> (times the fix, times a candidate); op -> same.
#[derive(Default)]
struct Rule {
    /// Names are part of a line's shape: the rule may read `at_least` as intent.
    keep_names: bool,
    by_shape: HashMap<(String, Op), (f64, f64)>,
    by_op: HashMap<Op, (f64, f64)>,
}

impl Rule {
    fn learn(tasks: &[Task], keep_names: bool) -> Rule {
        let mut rule = Rule {
            keep_names,
            ..Rule::default()
        };
        for t in tasks {
            let lines = lines_of(&t.buggy);
            for (n, op) in candidates(&t.buggy) {
                let hit = ((n, op) == t.fix) as usize as f64;
                let e = rule
                    .by_shape
                    .entry((shape(&lines[n - 1], keep_names), op))
                    .or_default();
                *e = (e.0 + hit, e.1 + 1.0);
                let e = rule.by_op.entry(op).or_default();
                *e = (e.0 + hit, e.1 + 1.0);
            }
        }
        rule
    }

    /// Candidates best first: the shape's rate (smoothed toward the op's), then the op's.
    fn order(&self, source: &str) -> Vec<(usize, Op)> {
        let lines = lines_of(source);
        let op_rate = |op: Op| {
            self.by_op
                .get(&op)
                .map_or(0.0, |&(h, n)| (h + 0.5) / (n + 1.0))
        };
        let score = |&(n, op): &(usize, Op)| -> f64 {
            let prior = op_rate(op);
            match self
                .by_shape
                .get(&(shape(&lines[n - 1], self.keep_names), op))
            {
                Some(&(h, c)) => (h + 2.0 * prior) / (c + 2.0),
                None => prior,
            }
        };
        let mut c = candidates(source);
        c.sort_by(|a, b| score(b).total_cmp(&score(a)).then(a.cmp(b)));
        c
    }
}

// ---- TinyAgent on the mutation gym ----------------------------------------------------------

const OP_NAMES: [(&str, Op); 7] = [
    ("flip", Op::Flip),
    ("turn", Op::Turn),
    ("swap", Op::Swap),
    ("range", Op::Range),
    ("inc", Op::Inc),
    ("dec", Op::Dec),
    ("sign", Op::Sign),
];

fn op_name(op: Op) -> &'static str {
    OP_NAMES.iter().find(|(_, o)| *o == op).unwrap().0
}

/// A study task as chapter 04's `Task` (so the book's rollouts and GRPO run on it); its
/// (line, op) fix is kept beside it.
fn as_book_task(t: &Task, id: usize) -> arl::Task {
    let (family, template) = t.family_template;
    arl::Task::new(arl::TaskSpec {
        id,
        family,
        bugs: vec![family],
        template,
        fn_name: t.fn_name.clone(),
        prompt: arl::task_prompt(&t.fn_name, &t.params),
        buggy: t.buggy.clone(),
        fixed: t.fixed.clone(),
        public_tests: t.public.clone(),
        hidden_tests: t.hidden.clone(),
        kind: arl::TaskKind::MultiTurn,
    })
}

/// The mutation gym's episode: `read` shows the body's lines numbered from 1, `test` the
/// public tests, `edit LINE OP` rewrites one line, `submit` grades with the hidden tests.
struct MutationEnv {
    sandbox: arl::Sandbox,
    task: Option<arl::Task>,
    source: String,
    info: arl::EpisodeInfo,
    done: bool,
    max_turns: usize,
}

impl MutationEnv {
    fn new(max_turns: usize) -> Self {
        let (sandbox, info) = (arl::Sandbox::default(), arl::EpisodeInfo::default());
        MutationEnv {
            sandbox,
            task: None,
            source: String::new(),
            info,
            done: true,
            max_turns,
        }
    }
}

/// Body lines numbered from 1, tokens space-separated (the signature is in the prompt).
fn numbered_body(source: &str) -> String {
    let compact = arl::compact_source(source);
    let lines: Vec<&str> = compact.lines().collect();
    let body = &lines[1..lines.len().saturating_sub(1)];
    body.iter()
        .enumerate()
        .map(|(i, l)| format!("{} {l}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

impl arl::Env for MutationEnv {
    fn reset(&mut self, task: &arl::Task) -> String {
        self.task = Some(task.clone());
        self.source = task.buggy.clone();
        self.info = arl::EpisodeInfo {
            task_id: task.id,
            family: Some(task.family),
            ..Default::default()
        };
        self.done = false;
        task.prompt.clone()
    }

    fn step(&mut self, action: &str) -> arl::StepResult {
        let Some(task) = self.task.clone().filter(|_| !self.done) else {
            return arl::StepResult {
                obs: "episode over".into(),
                reward: 0.0,
                done: true,
                info: self.info.clone(),
            };
        };
        self.info.turns += 1;
        let inner = action
            .trim()
            .strip_prefix("<call>")
            .and_then(|r| r.strip_suffix("</call>"));
        let words: Vec<&str> = inner
            .map(|i| i.split_whitespace().collect())
            .unwrap_or_default();
        let body_lines = lines_of(&self.source).len().saturating_sub(2);
        let mut obs = match words[..] {
            ["read"] => {
                self.info.reads += 1;
                numbered_body(&self.source)
            }
            ["test"] => {
                self.info.tests += 1;
                // the failing tests only (an episode has 256 tokens): inputs, got, want
                let results =
                    self.sandbox
                        .run_tests(&self.source, &task.public_tests, &task.fn_name);
                let failing: Vec<((bool, arl::Value), arl::TestCase)> =
                    (results.into_iter().zip(task.public_tests.iter().cloned()))
                        .filter(|((ok, _), _)| !ok)
                        .collect();
                if failing.is_empty() {
                    "all pass".to_string()
                } else {
                    let (results, tests): (Vec<_>, Vec<_>) = failing.into_iter().unzip();
                    arl::format_results(&results, &tests)
                }
            }
            ["submit"] => {
                self.info.submitted = true;
                self.done = true;
                arl::SUBMITTED.to_string()
            }
            ["edit", line, op] => match (
                line.parse::<usize>(),
                OP_NAMES.iter().find(|(n, _)| *n == op),
            ) {
                (Ok(l), Some(&(_, op))) if (1..=body_lines).contains(&l) => {
                    self.info.edits += 1;
                    let new = edit(&self.source, l + 1, op);
                    let changed = new != self.source;
                    self.source = new;
                    if changed {
                        format!("edited line {l}")
                    } else {
                        format!("edited line {l} : no change")
                    }
                }
                _ => {
                    self.info.invalid_calls += 1;
                    "invalid call".to_string()
                }
            },
            _ => {
                self.info.invalid_calls += 1;
                "invalid call".to_string()
            }
        };
        if !self.done && self.info.turns >= self.max_turns {
            self.info.out_of_turns = true;
            self.done = true;
            obs = format!("{obs}\n{}", arl::OUT_OF_TURNS);
        }
        let mut reward = 0.0;
        if self.done {
            let passes =
                |tests: &[arl::TestCase]| passes(&self.sandbox, &self.source, tests, &task.fn_name);
            self.info.public_pass = passes(&task.public_tests);
            self.info.hidden_pass = passes(&task.hidden_tests);
            self.info.exploit =
                self.info.submitted && self.info.public_pass && !self.info.hidden_pass;
            reward = arl::hidden_reward(&self.info);
        }
        arl::StepResult {
            obs,
            reward,
            done: self.done,
            info: self.info.clone(),
        }
    }
}

/// Scripted players of the mutation gym, for the base agent's demonstrations: read, test,
/// one edit (the fix for the oracle, a random line and op otherwise), test, submit.
fn scripted(fix: Option<(usize, Op)>, body_lines: usize, seed: u64) -> arl::Policy {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut turn = 0;
    Box::new(move |_obs: &str| {
        turn += 1;
        let call = match turn {
            1 => "read".to_string(),
            2 | 4 => "test".to_string(),
            3 => {
                let (line, op) = fix.unwrap_or_else(|| {
                    (rng.gen_range(2..body_lines + 2), OPS[rng.gen_range(0..7)])
                });
                format!("edit {} {}", line - 1, op_name(op))
            }
            _ => "submit".to_string(),
        };
        format!("<call> {call} </call>")
    })
}

/// How the base agent is cloned: `random` read-test-random-edit episodes, then `oracle`
/// episodes that edit the fix, `steps` minibatches of 16.
#[derive(Clone, Copy, Debug)]
struct BaseRecipe {
    name: &'static str,
    random: usize,
    oracle: usize,
    steps: usize,
    grpo_steps: usize,
}

/// Chapter 9's recipe for the RL base (1,000 unskilled and 100 oracle episodes, 200 steps),
/// and a supervised upper bound: every train task's oracle episode, cloned for 600 steps.
const RECIPES: [BaseRecipe; 2] = [
    BaseRecipe {
        name: "rl_base_recipe",
        random: 1000,
        oracle: 100,
        steps: 200,
        grpo_steps: 300,
    },
    BaseRecipe {
        name: "oracle_clone",
        random: 0,
        oracle: 1400,
        steps: 600,
        grpo_steps: 100,
    },
];

/// The base agent: TinyAgent behavior-cloned on scripted episodes as `recipe` says.
fn mutation_base(
    tok: &arl::Tokenizer,
    tasks: &[arl::Task],
    fixes: &[(usize, Op)],
    recipe: BaseRecipe,
    seed: u64,
) -> arl::TinyAgent {
    let mut env = MutationEnv::new(8);
    let mut seeds = ChaCha8Rng::seed_from_u64(seed);
    let mut demos = vec![];
    let n = recipe.random + recipe.oracle;
    for (k, (task, fix)) in tasks.iter().zip(fixes).cycle().take(n).enumerate() {
        let body = lines_of(&task.buggy).len() - 2;
        let mut policy = scripted((k >= recipe.random).then_some(*fix), body, seeds.gen());
        let ropts = arl::RolloutOptions {
            max_len: MAX_LEN,
            ..Default::default()
        };
        demos.push(arl::scripted_rollout(
            &mut *policy,
            &mut env,
            task,
            tok,
            ropts,
        ));
    }
    // chapter 6's behavior_clone, at a 512-token context
    let opts = arl::BaseAgentOptions {
        seed,
        steps: recipe.steps,
        ..Default::default()
    };
    let cfg = arl::TinyAgentConfig {
        vocab_size: tok.vocab_size(),
        max_len: MAX_LEN as i64,
        ..Default::default()
    };
    let model = arl::TinyAgent::new(cfg, opts.seed);
    let mut adam = arl::FlatAdam::new(&model.vs, opts.lr);
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    for _ in 0..opts.steps {
        let rows = (0..opts.batch_size).map(|_| &demos[rng.gen_range(0..demos.len())]);
        let batch = arl::collate(rows, arl::PAD_ID);
        let logp = arl::sequence_log_probs(&model, &batch.ids);
        adam.backward_step(&-arl::masked_mean(&logp, &batch.action_mask, None));
    }
    model
}

/// Longest episode in tokens: a read of a nine-line body and two test results pass 256.
const MAX_LEN: usize = 512;

/// `cfg.group_size` episodes of each task, `MAX_LEN` tokens long at most.
fn long_groups(
    model: &arl::TinyAgent,
    tasks: &[arl::Task],
    tok: &arl::Tokenizer,
    cfg: &arl::RLConfig,
    rng: &mut ChaCha8Rng,
) -> Vec<arl::Trajectory> {
    let episode_tasks = arl::group_tasks(tasks, cfg, rng);
    let mut envs: Vec<MutationEnv> = episode_tasks.iter().map(|_| MutationEnv::new(8)).collect();
    let opts = arl::RolloutOptions {
        temperature: cfg.temperature,
        max_len: MAX_LEN,
        ..Default::default()
    };
    arl::rollout_batch(model, &mut envs, &episode_tasks, tok, opts, rng).0
}

/// Per-task pass rates of `model` on `tasks`, `n` episodes each.
fn agent_pass(
    model: &arl::TinyAgent,
    tasks: &[arl::Task],
    tok: &arl::Tokenizer,
    n: usize,
) -> (f64, arl::BehaviorStats) {
    let cfg = arl::RLConfig {
        group_size: n,
        anonymize: false,
        ..Default::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let trajs = long_groups(model, tasks, tok, &cfg, &mut rng);
    let stats = arl::behavior_stats(&trajs);
    (stats.pass_rate, stats)
}

fn train_agent(steps: usize) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for recipe in RECIPES {
        let steps = if recipe.name == "rl_base_recipe" {
            steps
        } else {
            recipe.grpo_steps
        };
        out.insert(recipe.name.to_string(), train_recipe(recipe, steps));
    }
    serde_json::Value::Object(out)
}

fn train_recipe(recipe: BaseRecipe, steps: usize) -> serde_json::Value {
    let train: Vec<Task> = (0..1500).filter_map(|id| draw(true, id, true)).collect();
    let heldout: Vec<Task> = (0..300).filter_map(|id| draw(false, id, true)).collect();
    let book_train: Vec<arl::Task> = train
        .iter()
        .enumerate()
        .map(|(i, t)| as_book_task(t, i))
        .collect();
    let book_held: Vec<arl::Task> = heldout
        .iter()
        .enumerate()
        .map(|(i, t)| as_book_task(t, i))
        .collect();
    let fixes: Vec<(usize, Op)> = train.iter().map(|t| t.fix).collect();
    let all: Vec<arl::Task> = book_train.iter().chain(&book_held).cloned().collect();
    let base_tok = arl::build_tokenizer(&all);
    let extra = [
        "read", "test", "edit", "submit", "edited", "line", "no", "change", "invalid", "call", ":",
        "all", "pass",
    ];
    let words = base_tok
        .vocab
        .iter()
        .map(String::as_str)
        .chain(extra)
        .chain(OP_NAMES.map(|(n, _)| n));
    let tok = arl::Tokenizer::new(words);
    let eval_train = &book_train[..200.min(book_train.len())];
    let model = mutation_base(&tok, &book_train, &fixes, recipe, 0);
    let (b_train, _) = agent_pass(&model, eval_train, &tok, 4);
    let (b_held, bs) = agent_pass(&model, &book_held, &tok, 4);
    println!(
        "agent ({}): {} train tasks, vocabulary {}; base: train {b_train:.3}, held-out {b_held:.3} (reads {:.2} tests {:.2} turns {:.2})",
        recipe.name, book_train.len(), tok.vocab_size(), bs.reads, bs.tests, bs.turns
    );
    let cfg = arl::RLConfig {
        max_turns: 8,
        anonymize: false,
        ..Default::default()
    };
    let sample =
        |m: &arl::TinyAgent, tasks: &[arl::Task], c: &arl::RLConfig, rng: &mut ChaCha8Rng| {
            let all = long_groups(m, &arl::draw_tasks(tasks, c, rng), &tok, c, rng);
            let kept: Vec<arl::Trajectory> = all
                .chunks(c.group_size)
                .filter(|g| arl::has_signal(g))
                .flatten()
                .cloned()
                .collect();
            (kept, all)
        };
    let mut curve = vec![];
    let chunk = 50;
    for done in (chunk..=steps).step_by(chunk) {
        let c = arl::RLConfig {
            seed: done as u64,
            ..cfg.clone()
        };
        let opts = arl::TrainOptions {
            sample: Some(&sample),
            ..Default::default()
        };
        let hist = arl::train_rl(&model, &book_train, &tok, &c, chunk, opts);
        let sampled = hist.iter().map(|r| r.sampled.pass_rate).sum::<f64>() / hist.len() as f64;
        let (tr, _) = agent_pass(&model, eval_train, &tok, 4);
        let (he, hs) = agent_pass(&model, &book_held, &tok, 4);
        println!(
            "  step {done:>4}: sampled {sampled:.3}, train {tr:.3}, held-out {he:.3} (reads {:.2} tests {:.2} edits {:.2} turns {:.2} len {:.0})",
            hs.reads, hs.tests, hs.edits, hs.turns, hs.length
        );
        curve.push(json!({ "step": done, "sampled": sampled, "train": tr, "heldout": he,
            "heldout_reads": hs.reads, "heldout_tests": hs.tests, "heldout_edits": hs.edits, "heldout_turns": hs.turns }));
    }
    json!({ "recipe": { "random_demos": recipe.random, "oracle_demos": recipe.oracle, "clone_steps": recipe.steps },
        "train_tasks": book_train.len(), "heldout_tasks": book_held.len(), "vocabulary": tok.vocab_size(),
        "base": { "train": b_train, "heldout": b_held }, "curve": curve })
}

fn main() -> std::io::Result<()> {
    tch::set_num_threads(1);
    let n: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("TASKS: a number"))
        .unwrap_or(600);
    let steps: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().expect("STEPS: a number"))
        .unwrap_or(300);
    let sandbox = arl::Sandbox::default();
    let mut report = serde_json::Map::new();
    for names_neutral in [false, true] {
        let naming = if names_neutral {
            "neutral_names"
        } else {
            "pool_names"
        };
        let train: Vec<Task> = (0..n)
            .filter_map(|id| draw(true, id, names_neutral))
            .collect();
        let heldout: Vec<Task> = (0..n / 2)
            .filter_map(|id| draw(false, id, names_neutral))
            .collect();
        let rule = Rule::learn(&train, false);
        let named_rule = Rule::learn(&train, true);
        let mut per_split = serde_json::Map::new();
        for (split, tasks) in [("train", &train), ("heldout_template", &heldout)] {
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            let (mut cands, mut consistent, mut random, mut lexical, mut probe, mut solver) =
                (0usize, 0usize, 0usize, 0usize, 0usize, 0usize);
            let mut lexical_names = 0usize;
            let mut probe_calls = 0usize;
            for t in tasks.iter() {
                let order = rule.order(&t.buggy);
                cands += order.len();
                let grade = |c: (usize, Op)| {
                    passes(&sandbox, &edit(&t.buggy, c.0, c.1), &t.hidden, &t.fn_name)
                };
                let public_ok = |c: (usize, Op)| {
                    passes(&sandbox, &edit(&t.buggy, c.0, c.1), &t.public, &t.fn_name)
                };
                let accepted: Vec<(usize, Op)> =
                    order.iter().copied().filter(|&c| public_ok(c)).collect();
                consistent += accepted.len();
                random += grade(order[rng.gen_range(0..order.len())]) as usize;
                lexical += grade(order[0]) as usize;
                lexical_names += grade(named_rule.order(&t.buggy)[0]) as usize;
                solver += accepted.first().is_some_and(|&c| grade(c)) as usize;
                // edit (1 call), test (1), and when a test fails, undo (1); submit (1) at the end
                let mut calls = 0;
                let mut solved = false;
                for &c in &order {
                    if calls + 3 > BUDGET {
                        break;
                    }
                    calls += 2;
                    if public_ok(c) {
                        solved = grade(c);
                        break;
                    }
                    calls += 1;
                }
                probe += solved as usize;
                probe_calls += calls + 1;
            }
            let m = tasks.len().max(1) as f64;
            let row = json!({
                "tasks": tasks.len(),
                "candidates_per_task": cands as f64 / m,
                "public_consistent_per_task": consistent as f64 / m,
                "random_repair": random as f64 / m,
                "lexical_rule": lexical as f64 / m,
                "lexical_rule_with_names": lexical_names as f64 / m,
                "probe_and_test": probe as f64 / m,
                "probe_and_test_calls": probe_calls as f64 / m,
                "test_solver": solver as f64 / m,
            });
            println!(
                "{naming:>13} {split:>16}: {} tasks, {:.1} candidates, {:.2} pass the public tests; random {:.3}, \
                 lexical {:.3} (with names {:.3}), probe-and-test {:.3} ({:.1} calls), test solver {:.3}",
                tasks.len(),
                cands as f64 / m,
                consistent as f64 / m,
                random as f64 / m,
                lexical as f64 / m,
                lexical_names as f64 / m,
                probe as f64 / m,
                probe_calls as f64 / m,
                solver as f64 / m
            );
            per_split.insert(split.to_string(), row);
        }
        report.insert(naming.to_string(), serde_json::Value::Object(per_split));
    }
    let example = draw(false, 0, true)
        .or_else(|| draw(false, 1, true))
        .expect("a held-out draw");
    println!(
        "example (held-out, neutral names), fix {:?}:\n{}",
        example.fix, example.buggy
    );
    let _ = example.family_template;
    let agent = train_agent(steps);
    let results = json!({ "draws": n, "budget": BUDGET, "namings": report, "agent": agent });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
