//! Chapter 9 lab: the critic-free family on one budget. For each seed, one base agent
//! (`make_rl_base`), then `STEPS` steps of `train_rl` for each variant, every variant from the
//! same base with the same RLConfig seed; all evaluated on the chapter's draws (4 episodes on
//! each of the first 200 train tasks, seed 11; 4 per held-out task, seed 12).
//!
//! Variants: GRPO (the book's default: token mean, no KL), GRPO as DeepSeekMath published it
//! (sequence mean, k3 in the loss with beta 0.04 against the frozen base, unclamped), GRPO
//! keeping zero-signal groups, Dr. GRPO (no std, a constant normalizer), RLOO, GSPO (sequence
//! ratio) with the GSPO paper's clip range (3e-4, 4e-4) and with one scaled to this gym's
//! episodes (0.05: PPO's 0.2 divided by the square root of about 15 policy tokens, a heuristic),
//! clip-higher (DAPO's eps_high 0.28), and dynamic sampling (DAPO: resample until the step has
//! `tasks_per_step` groups with signal).
//!
//!     scripts/lab.sh grpo_family [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 09.

use agentrl as arl;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const LAB: &str = "grpo_family";
const STEPS: usize = 100;
/// Dynamic sampling draws at most this many rounds of `tasks_per_step` groups per step.
const MAX_ROUNDS: usize = 4;

/// The variants: name, config, and whether the step resamples until every group has signal.
fn variants(base: &arl::RLConfig) -> Vec<(&'static str, arl::RLConfig, bool)> {
    use arl::{AdvantageKind, KlConfig, KlKind, KlPlacement, LossMode, RatioLevel};
    let c = || base.clone();
    let paper_kl = KlConfig { kind: KlKind::K3, coef: 0.04, placement: KlPlacement::Loss, clamp: None };
    vec![
        ("GRPO", c(), false),
        ("GRPO, as published", arl::RLConfig { loss_mode: LossMode::SeqMeanTokenMean, kl: paper_kl, ..c() }, false),
        ("GRPO, keep all groups", arl::RLConfig { keep_zero_signal: true, ..c() }, false),
        (
            "Dr. GRPO",
            arl::RLConfig {
                advantage: AdvantageKind::GroupMean,
                loss_mode: LossMode::ConstantNorm { norm: 16.0 },
                ..c()
            },
            false,
        ),
        ("RLOO", arl::RLConfig { advantage: AdvantageKind::Rloo, ..c() }, false),
        (
            "GSPO",
            arl::RLConfig { ratio: RatioLevel::Sequence, clip_low: 3e-4, clip_high: 4e-4, ..c() },
            false,
        ),
        (
            "GSPO, clip 0.05",
            arl::RLConfig { ratio: RatioLevel::Sequence, clip_low: 0.05, clip_high: 0.05, ..c() },
            false,
        ),
        ("clip-higher", arl::RLConfig { clip_high: 0.28, ..c() }, false),
        ("dynamic sampling", c(), true),
    ]
}

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let cfg = arl::RLConfig::default();
    // DAPO's dynamic sampling: draw rounds of groups until tasks_per_step of them have signal
    let dynamic = |model: &arl::TinyAgent, tasks: &[arl::Task], cfg: &arl::RLConfig, rng: &mut ChaCha8Rng| {
        let (mut kept, mut all) = (Vec::new(), Vec::new());
        let want = cfg.tasks_per_step * cfg.group_size;
        for _ in 0..MAX_ROUNDS {
            let (k, a) = arl::sample_step(model, &arl::make_env, tasks, tok, cfg, rng);
            kept.extend(k);
            all.extend(a);
            if kept.len() >= want {
                break;
            }
        }
        kept.truncate(want);
        (kept, all)
    };
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let reference = base.frozen(); // for the published GRPO's KL term
        let (base_train, base_heldout) = lab.chapter_eval(&base);
        println!("seed {seed}: base held-out {:.3} train {:.3}", base_heldout.pass_rate, base_train.pass_rate);
        let mut by_variant = Vec::new();
        for (name, vcfg, resample) in variants(&arl::RLConfig { seed, ..cfg.clone() }) {
            let model = base.clone();
            let opts = arl::TrainOptions {
                sample: if resample { Some(&dynamic) } else { None },
                ref_model: if vcfg.kl.coef > 0.0 { Some(&reference) } else { None },
                ..Default::default()
            };
            let history = arl::train_rl(&model, train, tok, &vcfg, STEPS, opts);
            let (after_train, after_heldout) = lab.chapter_eval(&model);
            println!(
                "  {name:<22} held-out {:.3} train {:.3} (sampled {} episodes)",
                after_heldout.pass_rate,
                after_train.pass_rate,
                history.iter().map(|r| r.sampled.episodes).sum::<usize>()
            );
            by_variant.push(json!({
                "variant": name,
                "train": after_train.json(),
                "heldout": after_heldout.json(),
                "sampled_pass": history.iter().map(|r| r.sampled.pass_rate).collect::<Vec<_>>(),
                "sampled_episodes": history.iter().map(|r| r.sampled.episodes).collect::<Vec<_>>(),
                "kept": history.iter().map(|r| r.kept).collect::<Vec<_>>(),
                "clip_fraction": history.iter().map(|r| r.update.clip_fraction).collect::<Vec<_>>(),
            }));
        }
        runs.push(json!({
            "seed": seed,
            "base": { "train": base_train.json(), "heldout": base_heldout.json() },
            "variants": by_variant,
        }));
    }
    let results = json!({ "steps": STEPS, "max_rounds": MAX_ROUNDS, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
