//! Chapter 8 lab: PPO against REINFORCE with a control arm, over more seeds and steps than the
//! chapter's minute allows. For each seed: chapter 6's base agent (`make_base_agent`, default
//! options, that seed), then `STEPS` batches of 32 episodes on random train tasks in the plain
//! gym (chapter 6's environment), with Adam at 1e-3, advantage r - mean(r), token mean and a
//! gradient-norm clip of 1, in four arms:
//!
//! - `reinforce_1`: one `policy_gradient_step` per batch (chapter 6);
//! - `reinforce_2`: two REINFORCE steps per batch, no ratio and no clip: the control arm, with
//!   as many optimizer steps per batch as `ppo_2`;
//! - `ppo_2`, `ppo_4`: 2 or 4 clipped epochs per batch (`ppo_update`, default options),
//!   old log-probs recomputed by the trainer before the first;
//! - `ppo_2_critic`: `actor_critic_update` with 2 epochs: a critic (`make_critic` of the base
//!   agent, Adam at 1e-3) and GAE advantages (gamma 1, lambda 1) instead of r - mean(r).
//!
//! Per step: the pass rate of the sampled batch (before its update). After training: 4
//! episodes on each of the 200 held-out tasks (`sample_episodes`, seed 12), with each task's
//! pass rate, for the base agent and every arm.
//!
//!     scripts/lab.sh ppo_vs_reinforce [SEEDS]      (default 5 seeds: 0..SEEDS)
//!
//! Uses chapters up to 08.

use agentrl as arl;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use tch::Kind;

const LAB: &str = "ppo_vs_reinforce";
const STEPS: usize = 60;
const BATCH: usize = 32;
/// How an arm trains on each batch.
#[derive(Clone, Copy)]
enum Trainer {
    /// This many `policy_gradient_step`s.
    Reinforce(usize),
    /// `ppo_update` with this many epochs.
    Ppo(usize),
    /// `actor_critic_update` with this many epochs.
    ActorCritic(usize),
}

const ARMS: [(&str, Trainer); 5] = [
    ("reinforce_1", Trainer::Reinforce(1)),
    ("reinforce_2", Trainer::Reinforce(2)),
    ("ppo_2", Trainer::Ppo(2)),
    ("ppo_4", Trainer::Ppo(4)),
    ("ppo_2_critic", Trainer::ActorCritic(2)),
];

/// Held-out evaluation: 4 episodes per task from seed 12 -> (pass rate, per-task pass rates).
fn heldout_eval(model: &arl::TinyAgent, lab: &labs::Lab) -> (f64, Vec<f64>) {
    let per_task = arl::per_task_pass_rates(&arl::sample_episodes(model, &lab.heldout, &lab.tok, 4, 12), 4);
    (per_task.iter().sum::<f64>() / per_task.len() as f64, per_task)
}

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(5);
    let (tok, train) = (&lab.tok, &lab.train);
    let mut runs = Vec::new();
    for seed in 0..lab.seeds {
        let base = arl::make_base_agent(tok, train, arl::BaseAgentOptions { seed, ..Default::default() });
        let (base_pass, base_per_task) = heldout_eval(&base, &lab);
        let mut arms = serde_json::Map::new();
        for (name, trainer) in ARMS {
            let (model, critic) = (base.clone(), arl::make_critic(&base));
            let (mut opt, mut critic_opt) = (arl::FlatAdam::new(&model.vs, 1e-3), arl::FlatAdam::new(&critic.vs, 1e-3));
            let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
            let (mut curve, mut clip, mut explained) = (vec![], vec![], vec![]);
            for _ in 0..STEPS {
                let trajs = arl::sample_random_tasks(&model, train, tok, BATCH, Default::default(), &mut rng);
                curve.push(arl::rollout_stats(&trajs).pass_rate);
                let batch = arl::collate(&trajs, arl::PAD_ID);
                let adv = &batch.rewards - batch.rewards.mean(Kind::Float); // [B]
                // the PPO arms shuffle nothing (one minibatch); the critic arm from its own stream
                let mut shuffle = ChaCha8Rng::seed_from_u64(0);
                match trainer {
                    Trainer::Reinforce(steps) => {
                        for _ in 0..steps {
                            arl::policy_gradient_step(&model, &mut opt, &batch, &adv, arl::LossMode::TokenMean, 1.0);
                        }
                    }
                    Trainer::Ppo(epochs) => {
                        let opts = arl::PpoUpdateOptions { epochs, ..Default::default() };
                        let stats = arl::ppo_update(&model, &mut opt, &batch, &adv, opts, &mut shuffle);
                        clip.push(stats.iter().map(|s| s.clip_fraction).sum::<f64>() / epochs as f64);
                    }
                    Trainer::ActorCritic(epochs) => {
                        let ppo = arl::PpoUpdateOptions { epochs, ..Default::default() };
                        let opts = arl::ActorCriticOptions { ppo, ..Default::default() };
                        let s = arl::actor_critic_update((&model, &mut opt), (&critic, &mut critic_opt), &batch, opts, &mut shuffle);
                        clip.push(s.clip_fraction);
                        explained.push(s.explained_variance);
                    }
                }
            }
            let (pass, per_task) = heldout_eval(&model, &lab);
            println!("seed {seed} {name:<12} held-out {base_pass:.3} -> {pass:.3}");
            arms.insert(
                name.to_string(),
                json!({
                    "batch_pass": curve,
                    "clip_fraction": clip,
                    "explained_variance": explained,
                    "heldout": pass,
                    "heldout_per_task": per_task
                }),
            );
        }
        runs.push(json!({
            "seed": seed,
            "base": { "heldout": base_pass, "heldout_per_task": base_per_task },
            "arms": arms,
        }));
    }
    let results = json!({ "steps": STEPS, "batch": BATCH, "seeds": lab.seeds, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
