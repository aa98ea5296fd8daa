//! Chapter 12 lab: multi-turn training choices compared over several seeds, longer than a
//! chapter's minute allows. For each seed, from `make_rl_base(tok, seed)`, `STEPS` steps of
//! `train_rl` (default RLConfig, seed = the seed) in six variants:
//!
//! - `penalty_0`, `penalty_0.05`, `penalty_0.2`: reward = hidden verdict - p per call;
//! - `episode_keep1`, `call_keep1`: calls see only the last observation (`keep_obs` 1), and the
//!   update trains on whole episodes (full context) or on call samples (their views);
//! - `mixed`: the train tasks plus their `single_turn` copies, in `MixedTurnEnv`;
//! - `penalty_0.05_mean`: penalty 0.05 with group-mean advantages instead of z-scores (with
//!   z-scores an all-fail group's advantages are -(K - mean K) / std K, whatever the penalty);
//! - `penalty_0.05_verdict`: penalty 0.05, z-scores, but a group is kept only if its hidden
//!   verdicts differ (the signal filter reads the verdict, not the shaped reward);
//! - on two-bug tasks (`generate_multi_tasks`, 2 edits and 8 turns allowed, penalty 0.05 per
//!   call), trained on 500 one-bug and 500 two-bug train tasks from the `penalty_0` agent of
//!   the seed (`multi_start`), evaluated on two-bug and one-bug held-out tasks, three updates: `multi_grpo` (the default GRPO on the shaped reward),
//!   `multi_episode` (every token gets its episode's shaped reward, whitened over the batch) and
//!   `multi_per_call` (every token of a call gets the shaped reward from that call on:
//!   `per_call_rewards`, then `turn_advantages` with no critic and lambda 1, whitened over the
//!   batch), both updated by `ppo_update` with the config's clip, epochs and minibatches: the
//!   last two differ only in the credit each call gets.
//!
//! Each model (and the base) is evaluated on the chapter's draws: 4 episodes on each of the
//! first 200 train tasks (seed 11) and 4 per held-out task (seed 12), with full context, and with
//! `evaluate_context` for keep_obs 0, 1, 2 on those train tasks (4 episodes per task, seed 11); `mixed` and the base also on
//! the single-turn copies.
//!
//!     scripts/lab.sh multi_turn [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 12.

use std::sync::Arc;

use agentrl as arl;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const LAB: &str = "multi_turn";
const STEPS: usize = 100;
/// The step penalty of the variants that test it.
const PENALTY: f64 = 0.05;

/// How the multi-bug variants turn rewards into advantages.
#[derive(Clone, Copy)]
enum Credit {
    /// The default GRPO: z-scored episode reward, broadcast.
    Grpo,
    /// The episode's shaped reward on every token, whitened over the batch.
    Episode,
    /// Each call's shaped reward-to-go on its tokens, whitened over the batch.
    PerCall,
}

/// Token advantages [B, T-1] for the kept episodes of one step, under `credit` (not `Grpo`).
fn token_advantages(kept: &[arl::Trajectory], batch: &arl::Batch, credit: Credit) -> tch::Tensor {
    let mask = &batch.action_mask;
    let rewards = arl::per_call_rewards(kept, mask, PENALTY); // [B, T-1]
    let no_critic = rewards.zeros_like();
    let whole = arl::GaeOptions { gamma: 1.0, lam: 1.0 };
    let to_go = arl::turn_advantages(&rewards, &no_critic, mask, &batch.turn_ids, whole);
    let adv = match credit {
        // the return from the first call on: the episode's shaped reward, on every token
        Credit::Episode => {
            let total = rewards.sum_dim_intlist(1, true, tch::Kind::Float); // [B, 1]
            total.expand_as(mask) * mask
        }
        Credit::PerCall => to_go,
        Credit::Grpo => unreachable!("GRPO uses rl_update's own advantages"),
    };
    arl::masked_whiten(&adv, mask, 1e-6)
}

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let single: Vec<arl::Task> = train[..200].iter().map(arl::single_turn).collect();
    let single_heldout: Vec<arl::Task> = lab.heldout.iter().map(arl::single_turn).collect();
    let mixed: Vec<arl::Task> = train[..200].iter().cloned().chain(single.iter().cloned()).collect();
    let cfg = arl::RLConfig::default();
    let penalized = |p: f64| -> arl::RewardFn {
        Arc::new(move |info: &arl::EpisodeInfo| arl::hidden_reward(info) - p * info.turns as f64)
    };
    // every evaluation uses the default (unpenalized) reward; the full-context ones use the
    // mixed environment, which is the plain one-edit environment on multi-turn tasks
    let report = |m: &arl::TinyAgent, with_single: bool| {
        let eval = |tasks: &[arl::Task], draws| lab.evaluate(m, tasks, draws, &cfg, &arl::make_mixed_env).json();
        let ctx = |k: usize| {
            let opts = arl::EvalOptions { n_samples: 4, seed: 11, ..Default::default() };
            let s = arl::evaluate_context(m, &train[..labs::TRAIN_EVAL_TASKS], tok, Some(k), opts, &cfg, &arl::make_env);
            (format!("{k}"), labs::behavior_json(&s))
        };
        let keep: serde_json::Map<String, serde_json::Value> = [0, 1, 2].into_iter().map(ctx).collect();
        let mut out = json!({
            "train": eval(&train[..labs::TRAIN_EVAL_TASKS], labs::TRAIN_DRAWS),
            "heldout": eval(&lab.heldout, labs::HELDOUT_DRAWS),
            "train_keep_obs": keep,
        });
        if with_single {
            out["single_train"] = eval(&single, labs::TRAIN_DRAWS);
            out["single_heldout"] = eval(&single_heldout, labs::HELDOUT_DRAWS);
        }
        out
    };
    // two-bug tasks: 2 edits and 8 turns allowed; evaluated with the unpenalized reward
    let multi_train = arl::generate_multi_tasks(arl::Split::Train, 0, arl::TRAIN_TASKS, arl::DECOY_RATE, 2);
    // trained on half one-bug, half two-bug tasks: a one-bug agent rarely passes a two-bug
    // task, so two-bug tasks alone give few groups with signal
    let mixed_bugs: Vec<arl::Task> = train[..500].iter().chain(&multi_train[..500]).cloned().collect();
    let multi_heldout = arl::generate_multi_tasks(arl::Split::Heldout, 0, arl::HELDOUT_TASKS, arl::DECOY_RATE, 2);
    let multi_cfg = |seed: u64| arl::RLConfig { max_edits: 2, max_turns: 8, seed, ..cfg.clone() };
    let multi_report = |m: &arl::TinyAgent| {
        let c = multi_cfg(0);
        json!({
            "train": lab.evaluate(m, &multi_train[..labs::TRAIN_EVAL_TASKS], labs::TRAIN_DRAWS, &c, &arl::make_env).json(),
            "heldout": lab.evaluate(m, &multi_heldout, labs::HELDOUT_DRAWS, &c, &arl::make_env).json(),
            "heldout_one_bug": lab.evaluate(m, &lab.heldout, labs::HELDOUT_DRAWS, &c, &arl::make_env).json(),
        })
    };
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let mut variants = serde_json::Map::new();
        variants.insert("base".into(), report(&base, true));
        let run_cfg = arl::RLConfig { seed, ..cfg.clone() };
        let mut grpo_model = None; // penalty 0: the start of the two-bug variants
        for p in [0.0, 0.05, 0.2] {
            let model = base.clone();
            let c = arl::RLConfig { reward: penalized(p), ..run_cfg.clone() };
            arl::train_rl(&model, train, tok, &c, STEPS, arl::TrainOptions::default());
            if p == 0.0 {
                grpo_model = Some(model.clone());
            }
            variants.insert(format!("penalty_{p}"), report(&model, false));
            println!("seed {seed}: penalty {p} done");
        }
        for (name, level) in [("episode_keep1", arl::SampleLevel::Episode), ("call_keep1", arl::SampleLevel::Call)] {
            let model = base.clone();
            let sample = |m: &arl::TinyAgent, tasks: &[arl::Task], c: &arl::RLConfig, rng: &mut ChaCha8Rng| {
                arl::context_sample_step(m, &arl::make_env, tasks, tok, c, Some(1), level, rng)
            };
            let update: Option<arl::UpdateHook> = match level {
                arl::SampleLevel::Call => Some(&arl::call_update),
                arl::SampleLevel::Episode => None,
            };
            let opts = arl::TrainOptions { sample: Some(&sample), update, ..Default::default() };
            arl::train_rl(&model, train, tok, &run_cfg, STEPS, opts);
            variants.insert(name.into(), report(&model, false));
            println!("seed {seed}: {name} done");
        }
        let model = base.clone();
        let opts = arl::TrainOptions { env_factory: &arl::make_mixed_env, ..Default::default() };
        arl::train_rl(&model, &mixed, tok, &run_cfg, STEPS, opts);
        variants.insert("mixed".into(), report(&model, true));
        println!("seed {seed}: mixed done");
        // the step-penalty collapse, tested: group-mean advantages; a filter on the verdict
        let model = base.clone();
        let c = arl::RLConfig { reward: penalized(PENALTY), advantage: arl::AdvantageKind::GroupMean, ..run_cfg.clone() };
        arl::train_rl(&model, train, tok, &c, STEPS, arl::TrainOptions::default());
        variants.insert("penalty_0.05_mean".into(), report(&model, false));
        let model = base.clone();
        let c = arl::RLConfig { reward: penalized(PENALTY), ..run_cfg.clone() };
        let by_verdict = |m: &arl::TinyAgent, tasks: &[arl::Task], c: &arl::RLConfig, rng: &mut ChaCha8Rng| {
            let all_cfg = arl::RLConfig { keep_zero_signal: true, ..c.clone() };
            let (_, all) = arl::sample_step(m, &arl::make_env, tasks, tok, &all_cfg, rng);
            let differ = |g: &&[arl::Trajectory]| g.iter().any(|t| t.info.hidden_pass != g[0].info.hidden_pass);
            let kept = all.chunks(c.group_size).filter(differ).flatten().cloned().collect();
            (kept, all)
        };
        let opts = arl::TrainOptions { sample: Some(&by_verdict), ..Default::default() };
        arl::train_rl(&model, train, tok, &c, STEPS, opts);
        variants.insert("penalty_0.05_verdict".into(), report(&model, false));
        println!("seed {seed}: penalty variants done");
        // credit on two-bug tasks, where an episode needs two right edits; from the one-bug
        // GRPO agent of this seed (penalty_0), since the base agent almost never passes them
        let start = grpo_model.expect("penalty 0 ran");
        variants.insert("multi_start".into(), multi_report(&start));
        for (name, credit) in [("multi_grpo", Credit::Grpo), ("multi_episode", Credit::Episode), ("multi_per_call", Credit::PerCall)] {
            let model = start.clone();
            let c = arl::RLConfig { reward: penalized(PENALTY), ..multi_cfg(seed) };
            // chapter 8's ppo_update takes token advantages [B, T-1] (rl_update's micro-batches
            // cut rows to their own length, so it takes one advantage per episode); the same
            // clip, token mean, minibatches and gradient clip as the config's
            let update = |m: &arl::TinyAgent, opt: &mut arl::FlatAdam, kept: &[arl::Trajectory], c: &arl::RLConfig, rng: &mut ChaCha8Rng| {
                let batch = arl::collate(kept, arl::PAD_ID);
                let adv = token_advantages(kept, &batch, credit);
                let policy = arl::PpoOptions { clip_low: c.clip_low, clip_high: c.clip_high, mode: c.loss_mode, ..Default::default() };
                let opts = arl::PpoUpdateOptions { policy, epochs: c.epochs, minibatches: c.minibatches, max_grad_norm: c.max_grad_norm };
                let steps = arl::ppo_update(m, opt, &batch, &adv, opts, rng);
                let n = steps.len().max(1) as f64;
                arl::UpdateStats {
                    loss: steps.iter().map(|s| s.loss).sum::<f64>() / n,
                    clip_fraction: steps.iter().map(|s| s.clip_fraction).sum::<f64>() / n,
                    approx_kl: steps.iter().map(|s| s.approx_kl).sum::<f64>() / n,
                    steps: steps.len(),
                    ..Default::default()
                }
            };
            let hook: Option<arl::UpdateHook> = match credit {
                Credit::Grpo => None,
                _ => Some(&update),
            };
            let opts = arl::TrainOptions { update: hook, ..Default::default() };
            arl::train_rl(&model, &mixed_bugs, tok, &c, STEPS, opts);
            variants.insert(name.into(), multi_report(&model));
            println!("seed {seed}: {name} done");
        }
        runs.push(json!({ "seed": seed, "variants": variants }));
    }
    let results = json!({ "steps": STEPS, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
