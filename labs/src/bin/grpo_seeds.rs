//! Chapter 9 lab: GRPO from a more thoroughly cloned RL base agent, longer than a chapter's
//! minute allows, over several seeds. For each seed: the base agent (make_rl_base's recipe
//! with `CLONE_STEPS` cloning steps), then `STEPS` steps of `train_rl` with the default
//! RLConfig; both evaluated on the chapter's draws (4 episodes on each of the first 200 train
//! tasks, seed 11; 4 per held-out task, seed 12).
//!
//!     scripts/lab.sh grpo_seeds [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 09.

use agentrl as arl;
use serde_json::json;

const LAB: &str = "grpo_seeds";
const CLONE_STEPS: usize = 300;
const STEPS: usize = 100;

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let cfg = arl::RLConfig::default();
    let mut runs = Vec::new();
    for seed in 0..seeds {
        // make_rl_base's recipe, cloned for CLONE_STEPS steps
        let mut opts = arl::BaseAgentOptions { seed, steps: CLONE_STEPS, ..Default::default() };
        opts.demos.push((arl::Demonstrator::Oracle, 100));
        let base = arl::make_base_agent(tok, train, opts);
        let (base_train, base_heldout) = lab.chapter_eval(&base);
        let model = base.clone();
        let run_cfg = arl::RLConfig { seed, ..cfg.clone() };
        arl::train_rl(&model, train, tok, &run_cfg, STEPS, arl::TrainOptions::default());
        let (after_train, after_heldout) = lab.chapter_eval(&model);
        println!(
            "seed {seed}: held-out {:.3} -> {:.3}, train {:.3} -> {:.3}",
            base_heldout.pass_rate, after_heldout.pass_rate, base_train.pass_rate, after_train.pass_rate
        );
        runs.push(json!({
            "seed": seed,
            "base": { "train": base_train.json(), "heldout": base_heldout.json() },
            "grpo": { "train": after_train.json(), "heldout": after_heldout.json() },
        }));
    }
    let results = json!({ "clone_steps": CLONE_STEPS, "steps": STEPS, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
