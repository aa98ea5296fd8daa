//! Chapter 14 lab: a pass-rate curriculum against uniform task draws, on the same budget.
//! For each seed: the RL base agent (`make_rl_base`), then `STEPS` steps of GRPO (the book's
//! configuration: 16 tasks x 8 episodes a step, so every arm samples the same 12,800
//! episodes) for each arm: `train_rl` drawing tasks uniformly, and `train_curriculum` with the
//! band (0, 1) (tasks that neither always fail nor always pass) or (0.2, 0.8), 2 of each
//! step's 16 tasks drawn from all, and no initial estimates (a task counts as inside until it
//! is sampled). Per step: the episodes kept for the update, the sampled pass rate and the
//! update's approximate KL; after training: the chapters' evaluation (4 episodes on each of
//! the first 200 train tasks, seed 11; 4 per held-out task, seed 12) with per-task pass rates.
//!
//!     scripts/lab.sh curriculum [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 14.

use agentrl as arl;
use serde_json::json;

const LAB: &str = "curriculum";
const STEPS: usize = 100;
/// (name, band) of each arm; None draws tasks uniformly (`train_rl`).
const ARMS: [(&str, Option<(f64, f64)>); 3] =
    [("uniform", None), ("band_0_1", Some((0.0, 1.0))), ("band_02_08", Some((0.2, 0.8)))];

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let (base_train, base_heldout) = lab.chapter_eval(&base);
        let mut arms = serde_json::Map::new();
        for (name, band) in ARMS {
            let model = base.clone();
            let cfg = arl::RLConfig { seed, ..Default::default() };
            let history = match band {
                None => arl::train_rl(&model, train, tok, &cfg, STEPS, Default::default()),
                Some((low, high)) => {
                    let cur = arl::CurriculumOptions { low, high, ..Default::default() };
                    arl::train_curriculum(&model, train, tok, &cfg, STEPS, (cur, None), Default::default())
                }
            };
            let (after_train, after_heldout) = lab.chapter_eval(&model);
            println!(
                "seed {seed} {name:<10} train {:.3} held-out {:.3} (base {:.3})",
                after_train.pass_rate, after_heldout.pass_rate, base_heldout.pass_rate
            );
            let per_step = |f: &dyn Fn(&arl::StepRecord) -> f64| history.iter().map(f).collect::<Vec<f64>>();
            arms.insert(
                name.to_string(),
                json!({
                    "band": band.map(|(l, h)| vec![l, h]),
                    "kept": per_step(&|r| r.kept as f64),
                    "sampled_pass": per_step(&|r| r.sampled.pass_rate),
                    "approx_kl": per_step(&|r| r.update.approx_kl),
                    "train": after_train.json(), "heldout": after_heldout.json(),
                }),
            );
        }
        runs.push(json!({
            "seed": seed,
            "base": { "train": base_train.json(), "heldout": base_heldout.json() },
            "arms": arms,
        }));
    }
    let names: Vec<&str> = ARMS.iter().map(|a| a.0).collect();
    let results = json!({ "steps": STEPS, "arms": names, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
