//! Issue 28 prototype: a generated BugFix gym (one bug per task, decoys from other families)
//! and whether GRPO from a cloned base learns a repair skill that holds on held-out tasks.
//!
//!     scripts/lab.sh heldout_skill [SEEDS] [STEPS]      (default 3 seeds, 600 steps)
//!
//! Uses chapters up to 09.

use agentrl as arl;
use arl::{Family, Split, Task, TEMPLATES};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const LAB: &str = "heldout_skill";

// The generator, the true oracle, read-then-random and the bootstrap are chapter 04's
// (`arl::make_tasks`, `arl::oracle_policy`, `arl::read_then_random`, `arl::bootstrap_ci`); the
// interval over seeds and tasks is chapter 06's (`arl::seed_task_interval`).

/// Per-task hidden pass rate of a scripted policy, `n` episodes each, in an environment of
/// `max_turns` turns (the policies here edit at most once per bug, so no edit budget is needed).
fn scripted_pass(
    tasks: &[Task],
    max_turns: usize,
    n: usize,
    make: &mut dyn FnMut(&Task, u64) -> arl::Policy,
) -> Vec<f64> {
    let opts = arl::BugFixEnvOptions { max_turns, ..Default::default() };
    arl::task_pass_rates(tasks, n, &opts, make)
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
    let decoy_rate = arl::DECOY_RATE;
    let train = arl::make_tasks(Split::Train, 0);
    let heldout = arl::make_tasks(Split::Heldout, 0);
    // held-out tasks with 2 and 3 bugs, for their floors and the one-bug agents
    let multi: Vec<(usize, Vec<Task>)> = [2, 3]
        .into_iter()
        .map(|bugs| (bugs, arl::generate_multi_tasks(Split::Heldout, 0, 100, decoy_rate, bugs)))
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
        println!("--- {} (template {}):\n{}", t.family, t.template, t.buggy);
    }
    for (bugs, tasks) in &multi {
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
        Box<dyn Fn(&Task, u64) -> arl::Policy>,
    ); 5] = [
        (
            "oracle",
            Box::new(|t: &Task, _| arl::oracle_policy(vec![t.family.op()])),
        ),
        (
            "random_repair",
            Box::new(|_: &Task, s| arl::scripted_policy(arl::PolicyKind::Blind, s)),
        ),
        (
            "read_then_random",
            Box::new(|_: &Task, s| arl::read_then_random(s)),
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
        let p = scripted_pass(&heldout, cfg.max_turns, 4, &mut |t, s| make(t, s));
        if *name == "keyword_spotter" {
            spotter = p.clone();
        }
        let (m, lo, hi) = arl::bootstrap_ci(&[p], &mut brng);
        println!("floor {name:<17} held-out {m:.3} [{lo:.3}, {hi:.3}]");
        floors.insert(name.to_string(), json!({"pass_rate": m, "ci95": [lo, hi]}));
    }
    let mut multi_json = serde_json::Map::new();
    for (bugs, tasks) in &multi {
        let max_turns = 6 + bugs;
        let mut row = serde_json::Map::new();
        let oracle_p = scripted_pass(tasks, max_turns, 2, &mut |t, _| {
            arl::oracle_policy(t.bugs.iter().map(|f| f.op()).collect())
        });
        let random_p = scripted_pass(tasks, max_turns, 4, &mut |_, s| {
            arl::scripted_policy(arl::PolicyKind::Blind, s)
        });
        let spotter_p = scripted_pass(tasks, max_turns, 2, &mut |_, s| {
            arl::scripted_policy(arl::PolicyKind::Oracle, s)
        });
        for (name, p) in [
            ("oracle", oracle_p),
            ("random_repair", random_p),
            ("keyword_spotter", spotter_p),
        ] {
            let (m, lo, hi) = arl::bootstrap_ci(&[p], &mut brng);
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
                let mut p = arl::read_then_random(seed * 100_000 + i as u64);
                demos.push(arl::scripted_rollout(&mut *p, &mut *env, task, &tok, ro));
            }
            if i < n_oracle {
                let mut p = arl::oracle_policy(vec![task.family.op()]);
                demos.push(arl::scripted_rollout(&mut *p, &mut *env, task, &tok, ro));
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
        for (m, (bugs, tasks)) in multi.iter().enumerate() {
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
        let (train_after, _) = model_pass(&model, &train[..labs::TRAIN_EVAL_TASKS], &tok, 2, 300 + seed);
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
    // intervals over seeds and tasks (chapter 06's `seed_task_interval`, which counts the three
    // seeds as three), cut at 0 and 1; the seeds-then-tasks bootstrap is kept beside it
    let interval = |m: &[Vec<f64>]| {
        let (mean, low, high) = arl::seed_task_interval(m, 0.05);
        (mean, low.max(0.0), high.min(1.0))
    };
    let (b, blo, bhi) = interval(&per_seed_before);
    let (a, alo, ahi) = interval(&per_seed_after);
    let (_, boot_lo, boot_hi) = arl::bootstrap_ci(&per_seed_after, &mut brng);
    let train_rates = per_seed_train.concat();
    let tr = train_rates.iter().sum::<f64>() / train_rates.len() as f64;
    println!("base held-out {b:.3} [{blo:.3}, {bhi:.3}]; after GRPO {a:.3} [{alo:.3}, {ahi:.3}]; train {tr:.3}");
    // the skill beyond keywords: held-out tasks the keyword spotter fails, and the held-out
    // template of each family (a code shape no train task has)
    let mut subsets = serde_json::Map::new();
    let groups: [(&str, Box<dyn Fn(usize) -> bool>); 4] = [
        ("spotter_fails", Box::new(|i: usize| spotter[i] == 0.0)),
        ("spotter_right", Box::new(|i: usize| spotter[i] > 0.0)),
        (
            "unseen_template",
            Box::new(|i: usize| heldout[i].template == TEMPLATES - 1),
        ),
        (
            "seen_templates",
            Box::new(|i: usize| heldout[i].template < TEMPLATES - 1),
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
        let (bm, _, _) = interval(&pick(&per_seed_before));
        let (am, alo2, ahi2) = interval(&pick(&per_seed_after));
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
    for (m, (bugs, _)) in multi.iter().enumerate() {
        let (am, alo3, ahi3) = interval(&per_seed_multi[m]);
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
        "heldout_ci95_method": "seed_task_interval (chapter 06), cut at 0 and 1",
        "heldout_ci95_bootstrap": [boot_lo, boot_hi],
        // per seed, per held-out task: for paired comparisons in the chapters
        "heldout_per_task_before": per_seed_before, "heldout_per_task_after": per_seed_after,
    });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
