//! Chapter 11 lab: reward hacking found by the learner, over several seeds. For each seed, the
//! RL base agent (`make_rl_base`), then `STEPS` steps of `train_rl` (the book's GRPO) under
//! four rewards: the public tests (hackable), the public tests with an exploit penalty of 0.5
//! and of 2 (the chapter's recommendation: larger than the verifier's reward), and the hidden
//! tests. Every sampled episode is logged (`LoggedEnv`) and summarized per
//! step (`reward_dashboard`); the trained agents are evaluated on the hidden tests (4 episodes
//! on each of the first 200 train tasks, seed 11; 4 per held-out task, seed 12).
//!
//!     scripts/lab.sh reward_hacking [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 11.

use std::cell::RefCell;
use std::rc::Rc;

use agentrl as arl;
use serde_json::json;

const LAB: &str = "reward_hacking";
const STEPS: usize = 100;

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let public = arl::RewardOptions { verifier: arl::Verifier::PublicTests, ..Default::default() };
    let arms = [
        ("public", public),
        ("public_penalty", arl::RewardOptions { exploit_penalty: 0.5, ..public }),
        // the chapter's recommendation: a penalty larger than the verifier's reward of 1
        ("public_penalty_2", arl::RewardOptions { exploit_penalty: 2.0, ..public }),
        ("hidden", arl::RewardOptions::default()),
    ];
    let log: arl::EpisodeLog = Rc::new(RefCell::new(vec![]));
    let logged = |cfg: &arl::RLConfig| -> Box<dyn arl::Env> {
        Box::new(arl::LoggedEnv::new(arl::make_env(cfg), log.clone()))
    };
    // evaluation on the hidden tests, in the plain environment (not logged)
    let eval = |m: &arl::TinyAgent| {
        let (train, heldout) = lab.chapter_eval(m);
        (train.pass_rate, heldout.pass_rate, heldout.per_task.clone())
    };
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let base_eval = eval(&base);
        for (name, reward) in arms {
            log.borrow_mut().clear();
            let model = base.clone();
            let cfg = arl::RLConfig { reward: arl::make_reward(reward), seed, ..Default::default() };
            let opts = arl::TrainOptions { env_factory: &logged, ..Default::default() };
            let history = arl::train_rl(&model, train, tok, &cfg, STEPS, opts);
            let steps: Vec<serde_json::Value> = arl::log_by_step(&history, &log.borrow(), 0)
                .iter()
                .map(|episodes| {
                    let d = arl::reward_dashboard(episodes);
                    json!({ "reward": d.reward, "public": d.public_pass, "hidden": d.hidden_pass, "exploit": d.exploit })
                })
                .collect();
            let after = eval(&model);
            println!("seed {seed} {name}: hidden pass train {:.3} -> {:.3}, held-out {:.3} -> {:.3}", base_eval.0, after.0, base_eval.1, after.1);
            runs.push(json!({
                "seed": seed, "arm": name, "steps": steps,
                "base": { "train": base_eval.0, "heldout": base_eval.1, "heldout_per_task": base_eval.2 },
                "trained": { "train": after.0, "heldout": after.1, "heldout_per_task": after.2 },
            }));
        }
    }
    let results = json!({ "steps": STEPS, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
