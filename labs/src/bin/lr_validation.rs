//! Chapter 9 lab: choose §9.4's learning rate on a validation split instead of the held-out
//! tasks. For each seed: the chapter's RL base agent (`make_rl_base` at that seed), then, for
//! each candidate rate, the chapter's run (`STEPS` steps of `train_rl`, default RLConfig but
//! for the rate) on the train tasks *after* the first 200, so that the first 200 train tasks
//! are never drawn and serve as the validation split. Every model is evaluated on the
//! chapters' draws: 4 episodes on each of the first 200 train tasks (seed 11; here the
//! validation split) and 4 per held-out task (seed 12). The rate chosen is the one with the
//! highest validation pass rate over all seeds, fixed by this rule before any run; the
//! held-out rates are recorded for the chapter, and play no part in the choice.
//!
//!     scripts/lab.sh lr_validation [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 09.

use agentrl as arl;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const LAB: &str = "lr_validation";
const STEPS: usize = 35;
/// The default, the two rates Chapter 9 tried on its held-out tasks, and one above them.
const RATES: [f64; 4] = [1e-3, 2e-3, 3e-3, 5e-3];

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok) = (lab.seeds, &lab.tok);
    // the first TRAIN_EVAL_TASKS train tasks are the validation split: never trained on
    let (validation, trainable) = lab.train.split_at(labs::TRAIN_EVAL_TASKS);
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, &lab.train, seed);
        let (base_val, base_heldout) = lab.chapter_eval(&base);
        let mut by_rate = Vec::new();
        for lr in RATES {
            let model = base.clone();
            let cfg = arl::RLConfig { lr, seed, ..Default::default() };
            arl::train_rl(&model, trainable, tok, &cfg, STEPS, arl::TrainOptions::default());
            let (val, heldout) = lab.chapter_eval(&model);
            println!(
                "seed {seed}, lr {lr:.0e}: validation {:.3} -> {:.3}, held-out {:.3} -> {:.3}",
                base_val.pass_rate, val.pass_rate, base_heldout.pass_rate, heldout.pass_rate
            );
            by_rate.push(json!({ "lr": lr, "validation": val.json(), "heldout": heldout.json() }));
        }
        let base = json!({ "validation": base_val.json(), "heldout": base_heldout.json() });
        runs.push(json!({ "seed": seed, "base": base, "rates": by_rate }));
    }
    // the rule: the highest mean validation pass rate over seeds and tasks
    let validation_mean = |k: usize| {
        let rates = runs.iter().map(|r| r["rates"][k]["validation"]["pass_rate"].as_f64().unwrap());
        rates.sum::<f64>() / seeds as f64
    };
    let chosen = (0..RATES.len())
        .max_by(|&a, &b| validation_mean(a).total_cmp(&validation_mean(b)))
        .expect("at least one rate");
    // each rate against the chosen one on the validation split, paired by seed and task
    let per_task = |k: usize, split: &str| -> Vec<Vec<f64>> {
        let row = |r: &serde_json::Value| -> Vec<f64> {
            let tasks = r["rates"][k][split]["per_task"].as_array().unwrap();
            tasks.iter().map(|x| x.as_f64().unwrap()).collect()
        };
        runs.iter().map(row).collect()
    };
    let mut boot = ChaCha8Rng::seed_from_u64(0);
    for (k, lr) in RATES.iter().enumerate() {
        let diff = arl::paired_difference(&per_task(k, "validation"), &per_task(chosen, "validation"));
        let ci = arl::format_ci(arl::bootstrap_ci(&diff, &mut boot), true);
        println!("lr {lr:.0e}: validation {:.3}, minus the chosen rate's {ci}", validation_mean(k));
    }
    println!("chosen on validation: lr {:.0e}", RATES[chosen]);
    let results = json!({
        "steps": STEPS,
        "rates": RATES,
        "validation_tasks": validation.len(),
        "trained_on_tasks": trainable.len(),
        "chosen_lr": RATES[chosen],
        "runs": runs,
    });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
