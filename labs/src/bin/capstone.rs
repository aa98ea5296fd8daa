//! Chapter 19 lab, the capstone: the book's recipe from the RL base agent to a trained agent,
//! three times longer than the chapters' 100-step runs, with an ablation of two of its choices
//! at the same budget. For each seed: the RL base agent (`make_rl_base`), then `--steps` steps of
//! `train_regularized` (no entropy bonus) for each arm, every arm from that seed's base with the
//! same RLConfig seed; the base and every trained agent evaluated on the chapters' draws (4
//! episodes on each of the first 200 train tasks, seed 11; 4 per held-out task, seed 12).
//!
//! Arms: `recipe` (RLConfig's defaults: Chapter 9's GRPO), `keep-all-groups` (groups whose
//! rewards are all equal stay in the batch, Chapter 9), `kl-reward` (k1 against the base agent
//! subtracted from the reward with beta 0.1, Chapter 10). The first 100 steps of each arm are the
//! 100 steps of `grpo_family`'s GRPO and keep-all-groups arms and of `regularizers`' k1_reward
//! arm (same base agents, configs and seeds): Chapter 19 checks that they are.
//!
//!     scripts/lab.sh capstone                  (the book's run: 3 seeds x 300 steps x 3 arms)
//!     scripts/lab.sh capstone --seeds 2 --first-seed 10 --steps 150 --out /tmp/capstone.json
//!     scripts/lab.sh capstone --help
//!
//! Runs go to `--threads` worker threads (results do not depend on how many), with a progress
//! bar on a terminal, and end with a report: the floors, the oracle, the base agents, and each
//! arm's gain with a 95% interval over seeds and tasks (`seed_task_interval`, Chapter 17).
//! Settings other than the book's must name an `--out` file: labs/results/capstone.json is what
//! Chapter 19 reads.
//!
//! Uses chapters up to 18.

use agentrl as arl;
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::cell::Cell;
use std::path::PathBuf;
use std::sync::Mutex;

const LAB: &str = "capstone";

#[derive(Parser, Debug)]
#[command(about = "Chapter 19's capstone: the book's RL recipe, end to end, with ablations")]
struct Args {
    /// Seeds to run: first-seed, first-seed + 1, ...
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Training steps per run (each: 16 tasks x 8 episodes).
    #[arg(long, default_value_t = 300)]
    steps: usize,
    /// Arms to train from each seed's base agent.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "recipe,keep-all-groups,kl-reward")]
    arms: Vec<Arm>,
    /// Adam's learning rate (the recipe's: 1e-3).
    #[arg(long)]
    lr: Option<f64>,
    /// Sampling temperature for training (the recipe's: 1; evaluation always samples at 1).
    #[arg(long)]
    temperature: Option<f64>,
    /// Worker threads, one run each (results do not depend on it).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Write the results here instead of labs/results/capstone.json (required unless every
    /// setting is the book's).
    #[arg(long)]
    out: Option<PathBuf>,
}

impl Args {
    fn is_books(&self) -> bool {
        let book = Args::parse_from([LAB]);
        (self.seeds, self.first_seed, self.steps, &self.arms, self.lr, self.temperature)
            == (book.seeds, book.first_seed, book.steps, &book.arms, book.lr, book.temperature)
    }
}

/// What an arm changes in the recipe.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum Arm {
    Recipe,
    KeepAllGroups,
    KlReward,
}

impl Arm {
    fn config(self, recipe: &arl::RLConfig) -> arl::RLConfig {
        let c = recipe.clone();
        match self {
            Arm::Recipe => c,
            Arm::KeepAllGroups => arl::RLConfig { keep_zero_signal: true, ..c },
            Arm::KlReward => {
                let (kind, placement) = (arl::KlKind::K1, arl::KlPlacement::Reward);
                arl::RLConfig { kl: arl::KlConfig { kind, coef: 0.1, placement, clamp: None }, ..c }
            }
        }
    }
    fn name(self) -> String {
        self.to_possible_value().unwrap().get_name().to_string()
    }
}

/// `f` over `items` on `threads` threads, results in the items' order.
fn parallel_map<T: Send, R: Send>(items: Vec<T>, threads: usize, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let n = items.len();
    let queue = Mutex::new(items.into_iter().enumerate().collect::<Vec<_>>());
    let results = Mutex::new((0..n).map(|_| None).collect::<Vec<Option<R>>>());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            s.spawn(|| {
                tch::set_num_threads(1); // per thread: OpenMP's setting is the calling thread's
                loop {
                    let Some((i, item)) = queue.lock().unwrap().pop() else { break };
                    let r = f(item);
                    results.lock().unwrap()[i] = Some(r);
                }
            });
        }
    });
    results.into_inner().unwrap().into_iter().map(|r| r.expect("every item ran")).collect()
}

/// Per-task pass rates of a scripted policy on `tasks`, 4 episodes per task.
fn policy_rates(tasks: &[arl::Task], demo: arl::Demonstrator) -> Vec<f64> {
    let opts = arl::BugFixEnvOptions::default();
    arl::task_pass_rates(tasks, 4, &opts, &mut |task, seed| demo.policy(task, seed))
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn interval(m: &[Vec<f64>]) -> String {
    if m.len() < 2 {
        return format!("{:+.3} (one seed: no interval)", mean(&m[0]));
    }
    let (mid, low, high) = arl::seed_task_interval(m, 0.05);
    format!("{mid:+.3} [{low:+.3}, {high:+.3}]")
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    if args.out.is_none() && !args.is_books() {
        eprintln!("capstone: these settings are not the book's; pass --out FILE (labs/results/capstone.json is what Chapter 19 reads)");
        std::process::exit(2);
    }
    let started = std::time::Instant::now();
    tch::set_num_threads(1);
    // the generated gym of chapter 04 §4.3, as labs::Lab::start builds it
    let train = arl::make_tasks(arl::Split::Train, 0);
    let heldout = arl::make_tasks(arl::Split::Heldout, 0);
    let tok = arl::build_tokenizer(&[train.clone(), heldout.clone()].concat());
    let lab = labs::Lab { seeds: args.seeds, tok, train, heldout };
    let defaults = arl::RLConfig::default();
    let recipe = arl::RLConfig {
        lr: args.lr.unwrap_or(defaults.lr),
        temperature: args.temperature.unwrap_or(defaults.temperature),
        ..defaults
    };
    let seeds: Vec<u64> = (args.first_seed..args.first_seed + args.seeds).collect();
    let total = (seeds.len() * args.arms.len() * args.steps) as u64;
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {pos}/{len} steps, {eta} left  {msg}")
            .unwrap(),
    );
    let say = |line: String| bar.suspend(|| println!("{line}"));
    say(format!(
        "capstone: {} seeds x {} arms x {} steps on {} threads",
        seeds.len(),
        args.arms.len(),
        args.steps,
        args.threads
    ));

    // The floors and the oracle, on the held-out tasks.
    use arl::Demonstrator::{Oracle, Random, ReadThenRandom};
    let policies = [("random", Random), ("read-then-random", ReadThenRandom), ("oracle", Oracle)];
    let floors: Vec<(&str, Vec<f64>)> =
        policies.iter().map(|&(name, demo)| (name, policy_rates(&lab.heldout, demo))).collect();

    // The base agents, then every (seed, arm) run from a copy of its seed's base.
    bar.set_message("building the base agents");
    let bases = parallel_map(seeds.clone(), args.threads, |seed| {
        let base = arl::make_rl_base(&lab.tok, &lab.train, seed);
        let eval = lab.chapter_eval(&base);
        say(format!("seed {seed}: base held-out {:.3} train {:.3}", eval.1.pass_rate, eval.0.pass_rate));
        (base, eval)
    });
    bar.set_message("training");
    let mut jobs = Vec::new();
    for (i, &seed) in seeds.iter().enumerate() {
        for &arm in &args.arms {
            jobs.push((seed, arm, bases[i].0.clone()));
        }
    }
    let runs = parallel_map(jobs, args.threads, |(seed, arm, model)| {
        let cfg = arl::RLConfig { seed, ..arm.config(&recipe) };
        let reference = model.frozen(); // the base agent: KL measured in every arm, penalized in one
        let episodes = Cell::new(0usize);
        let per_step = cfg.tasks_per_step * cfg.group_size; // sample_groups: one env per episode
        let env = |c: &arl::RLConfig| {
            episodes.set(episodes.get() + 1);
            if episodes.get() % per_step == 0 {
                bar.inc(1);
            }
            arl::make_env(c)
        };
        let opts = arl::TrainOptions { env_factory: &env, ref_model: Some(&reference), ..Default::default() };
        let history = arl::train_regularized(&model, &lab.train, &lab.tok, &cfg, args.steps, 0.0, opts);
        let (after_train, after_heldout) = lab.chapter_eval(&model);
        let name = arm.name();
        say(format!(
            "seed {seed} {name:<16} held-out {:.3} train {:.3} (kl from base {:.3})",
            after_heldout.pass_rate,
            after_train.pass_rate,
            history.last().map_or(0.0, |r| r.kl)
        ));
        (seed, arm, after_train, after_heldout, history)
    });
    bar.finish_and_clear();

    // The report: floors, base, each arm against the base and against the recipe.
    println!("\nheld-out pass rate (200 tasks x 4 episodes; seeds {seeds:?}; {} steps)", args.steps);
    for (name, rates) in &floors {
        println!("  {name:<18} {:.3}", mean(rates));
    }
    let base_rates: Vec<Vec<f64>> = bases.iter().map(|b| b.1 .1.per_task.clone()).collect();
    let seed_means = |m: &[Vec<f64>]| m.iter().map(|r| format!("{:.3}", mean(r))).collect::<Vec<_>>().join(" ");
    let overall = |m: &[Vec<f64>]| mean(&m.iter().map(|r| mean(r)).collect::<Vec<_>>());
    println!("  {:<18} {:.3}  (seeds: {})", "base", overall(&base_rates), seed_means(&base_rates));
    let arm_rates = |arm: Arm| -> Vec<Vec<f64>> {
        runs.iter().filter(|r| r.1 == arm).map(|r| r.3.per_task.clone()).collect()
    };
    for &arm in &args.arms {
        let rates = arm_rates(arm);
        let m = overall(&rates);
        let mut line = format!("  {:<18} {m:.3}  (seeds: {})  vs base {}", arm.name(), seed_means(&rates), interval(&arl::paired_difference(&rates, &base_rates)));
        if arm != Arm::Recipe && args.arms.contains(&Arm::Recipe) {
            line += &format!("  vs recipe {}", interval(&arl::paired_difference(&rates, &arm_rates(Arm::Recipe))));
        }
        println!("{line}");
    }
    println!("({:.0} min on {} threads)", started.elapsed().as_secs_f64() / 60.0, args.threads);

    let results = json!({
        "steps": args.steps,
        "seeds": seeds,
        "recipe": { "lr": recipe.lr, "temperature": recipe.temperature, "group_size": recipe.group_size,
                    "tasks_per_step": recipe.tasks_per_step, "clip_low": recipe.clip_low, "clip_high": recipe.clip_high },
        "policies": floors.iter().map(|(name, rates)| (name.to_string(), json!(rates))).collect::<serde_json::Map<_, _>>(),
        "bases": seeds.iter().zip(&bases).map(|(seed, (_, (tr, he)))| json!({
            "seed": seed, "train": tr.json(), "heldout": he.json() })).collect::<Vec<_>>(),
        "runs": runs.iter().map(|(seed, arm, tr, he, history)| json!({
            "seed": seed,
            "arm": arm.name(),
            "train": tr.json(),
            "heldout": he.json(),
            "sampled_pass": history.iter().map(|r| r.record.sampled.pass_rate).collect::<Vec<_>>(),
            "kept": history.iter().map(|r| r.record.kept).collect::<Vec<_>>(),
            "entropy": history.iter().map(|r| r.entropy).collect::<Vec<_>>(),
            "kl": history.iter().map(|r| r.kl).collect::<Vec<_>>(),
            "clip_fraction": history.iter().map(|r| r.record.update.clip_fraction).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    let path = match &args.out {
        Some(out) => {
            std::fs::write(out, serde_json::to_string_pretty(&results)? + "\n")?;
            out.clone()
        }
        None => labs::write_results(LAB, results)?,
    };
    println!("wrote {}", path.display());
    Ok(())
}
