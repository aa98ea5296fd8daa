//! The Rust half of `scripts/bench-model.sh`: TinyAgent (the book's own code, the agentrl
//! crate) timed against a PyTorch twin (`scripts/bench-model.py`) on the same weights.
//!
//!     agentrl-bench-model setup DIR      write weights, check data and rollout schedules
//!     agentrl-bench-model serve THREADS  read `OP REPS` lines on stdin, answer seconds per call
//!     agentrl-bench-model memory WAY CHUNK  peak resident memory of one policy-gradient
//!                                        backward through the head on the update batch: WAY
//!                                        `full` (all logits at once) or `chunked`
//!                                        (`checkpointed_log_probs`, CHUNK tokens a chunk)
//!
//! Ops (the Python twin implements the same names):
//!     fwd:MODEL:B:T            no-grad forward, ids [B, T] -> logits [B, T, V]
//!     train:MODEL:B:T          forward + backward + FlatAdam step on -mean log p(ids[1:] | ids[..])
//!     part:MODEL:B:T:PART      a train step of which only PART is timed: fwd (forward and
//!                              loss), bwd (zero_grad and backward), adam (the FlatAdam step)
//!                              or adam_fused (the same here; the twin's Adam with fused=True)
//!     roll_cached:MODEL:B:OBS  lockstep rollout with the KV cache (`extend`), batched sampling
//!     roll_uncached:MODEL:B:OBS  the same rollout re-running the whole prefix per token
//!     extend:MODEL:B           one cached decode call, one new token per row, 50 slots cached
//!     update:MODEL:MICRO       chapter 09's `rl_update` (1 epoch, 2 minibatches, token-mean
//!                              clipped surrogate, grad clip, Adam) on a ragged batch of 96
//!                              episodes, in micro-batches of MICRO rows (96 = one padded piece)
//!     packed:MODEL:ROW         chapter 14's `packed_update` (1 epoch, 2 minibatches of rows, the
//!                              same loss, clip and Adam) on the same 96 episodes packed by
//!                              `pack_sequences` into rows of ROW tokens
//!     attn:MODEL:WAY:PASS      attention alone on the packed rows of 256 (an experiment for issue
//!                              33): q, k, v [R, H, L, Dh] of MODEL's shapes; WAY `dense` (one
//!                              call, the block-diagonal causal mask packed_update builds) or
//!                              `segments` (one causal call per episode, on its own slice); PASS
//!                              `fwd` (no grad) or `fwdbwd` (forward, then the grads of q, k, v)
//! The table also times fwd and train at B = 1, T = 4: kernels take almost no time there, so
//! those rows are each language's fixed cost per call.
//! MODEL is `book` (chapter 05's TinyAgent) or `default` (TinyAgentConfig::default());
//! OBS is `short` (the gym's ~6-token observations, ~91 tokens per row) or `long` (20-36).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use agentrl as arl;
use arl::{KvCache, SamplingOptions, TinyAgent, TinyAgentConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::{Kind, Tensor};

/// Tokens per call and calls per episode, as the untrained policy of chapter 05 runs them.
const CALL: usize = 8;
const TURNS: usize = 6;
/// Ids of prompts, observations and timing inputs stay below the smaller vocabulary.
const ID_RANGE: i64 = 128;
const MODEL_SEED: u64 = 0;
/// The update's batch: episodes, their length range, and the seed of `rl_update`'s shuffle.
const UPDATE_ROWS: usize = 96;
const UPDATE_SEED: u64 = 1;

/// Length of update episode `r` (a formula, identical in Python): 14..=225 tokens with a long
/// tail, like one step of chapter 09's gym (most episodes short, a few reading and editing).
fn update_len(r: usize) -> i64 {
    let x = ((r as f64) * 0.618_033_988_749_894_9 + 0.25).fract();
    14 + (211.0 * x.powi(4)).round() as i64
}

/// The update's batch: ids (PAD_ID after each episode), masks, one advantage per row.
fn update_batch() -> (arl::Batch, Tensor) {
    let t = (0..UPDATE_ROWS).map(update_len).max().unwrap();
    let (mut ids, mut attn, mut act) = (vec![], vec![], vec![]);
    for r in 0..UPDATE_ROWS {
        let len = update_len(r);
        for p in 0..t {
            let real = p < len;
            ids.push(if real { ((r as i64) * 131 + p * 31 + 7) % ID_RANGE } else { arl::PAD_ID });
            attn.push(if real { 1f32 } else { 0.0 });
            // ids[p] was chosen by the policy on every fifth position (positions 1.., T-1 of them)
            if p > 0 {
                act.push(real && p % 5 == 0);
            }
        }
    }
    let (b, t) = (UPDATE_ROWS as i64, t);
    let batch = arl::Batch {
        ids: Tensor::from_slice(&ids).view([b, t]),
        attention_mask: Tensor::from_slice(&attn).view([b, t]),
        action_mask: Tensor::from_slice(&act).view([b, t - 1]), // bool, as the book's masks
        sample_logp: None,
        turn_ids: Tensor::zeros([b, t - 1], (Kind::Int64, tch::Device::Cpu)),
        rewards: Tensor::zeros([b], (Kind::Float, tch::Device::Cpu)),
    };
    let adv: Vec<f32> = (0..UPDATE_ROWS).map(|r| ((r % 8) as f32 - 3.5) / 2.3).collect();
    (batch, Tensor::from_slice(&adv))
}

/// The update's episodes as trajectories (for `pack_sequences`): ids and action mask of each
/// row, cut to its length.
fn update_trajectories() -> Vec<arl::Trajectory> {
    let (batch, _) = update_batch();
    (0..UPDATE_ROWS)
        .map(|r| {
            let len = update_len(r);
            let zeros = Tensor::zeros([len], (Kind::Int64, tch::Device::Cpu));
            arl::Trajectory {
                ids: batch.ids.get(r as i64).narrow(0, 0, len),
                action_mask: batch.action_mask.get(r as i64).narrow(0, 0, len - 1),
                sample_logp: None,
                owner: zeros.shallow_clone(),
                turn: zeros,
                reward: 0.0,
                advantage: None,
                info: Default::default(),
                truncated: false,
            }
        })
        .collect()
}

/// The packed update's inputs: the 96 episodes in rows of `row` tokens, advantages per column.
fn packed_inputs(row: usize) -> (arl::PackedBatch, Tensor) {
    let (_, adv) = update_batch();
    let packed = arl::pack_sequences(&update_trajectories(), row, arl::PAD_ID);
    let adv_tokens = arl::packed_advantages(&packed, &adv);
    (packed, adv_tokens)
}

/// `packed_update` as the benchmark runs it: one epoch of two minibatches, as `rl_update`.
const PACKED_OPTS: arl::PpoUpdateOptions = arl::PpoUpdateOptions {
    policy: arl::PpoOptions {
        clip_low: 0.2,
        clip_high: 0.2,
        dual_clip: None,
        mode: arl::LossMode::TokenMean,
        max_log_ratio: 20.0,
    },
    epochs: 1,
    minibatches: 2,
    max_grad_norm: 1.0,
};

fn config(model: &str) -> TinyAgentConfig {
    match model {
        // chapter 05: vocab_size = tok.vocab_size() = 293
        "book" => TinyAgentConfig {
            vocab_size: 294,
            max_len: 256,
            d_model: 32,
            n_heads: 2,
            n_layers: 2,
            d_mlp: 64,
            ..Default::default()
        },
        "default" => TinyAgentConfig::default(),
        other => panic!("unknown model {other}"),
    }
}

/// Timing input ids [B, T], a formula the Python twin repeats.
fn input_ids(b: i64, t: i64) -> Tensor {
    let ids: Vec<i64> =
        (0..b * t).map(|k| ((k / t) * 131 + (k % t) * 31 + 7) % ID_RANGE).collect();
    Tensor::from_slice(&ids).view([b, t])
}

/// The uniform of row `row` at lockstep step `step` (a formula, identical in Python).
fn uniform(step: usize, row: usize) -> f64 {
    ((step * 1000 + row) as f64 * 0.618_033_988_749_894_9 + 0.5).fract()
}

/// Per row: the prompt and the observation appended after each call but the last.
#[derive(Clone)]
struct Schedule {
    prompts: Vec<Vec<i64>>,
    obs: Vec<Vec<Vec<i64>>>,
}

fn schedule(b: usize, obs: &str) -> Schedule {
    let (lo, hi) = match obs {
        "short" => (4, 8),
        "long" => (20, 36),
        other => panic!("unknown observation size {other}"),
    };
    let mut prompts = vec![];
    let mut all_obs = vec![];
    for row in 0..b {
        // row r is the same in every batch size: B = 8 is a prefix of B = 32
        let mut rng = ChaCha8Rng::seed_from_u64(1000 + row as u64 + if obs == "long" { 1 << 20 } else { 0 });
        let mut ids = |n: usize| -> Vec<i64> { (0..n).map(|_| rng.gen_range(1..ID_RANGE)).collect() };
        let n = 11 + (row * 7) % 5; // 11..=15 prompt tokens
        prompts.push(ids(n));
        let lens: Vec<usize> = (0..TURNS - 1).map(|k| lo + (row * 3 + k * 5) % (hi - lo + 1)).collect();
        all_obs.push(lens.into_iter().map(|n| ids(n)).collect());
    }
    Schedule { prompts, obs: all_obs }
}

fn write_schedule(path: &str, s: &Schedule) {
    let line = |v: &[i64]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ");
    let mut out = String::new();
    for (p, obs) in s.prompts.iter().zip(&s.obs) {
        let groups: Vec<String> = std::iter::once(line(p)).chain(obs.iter().map(|o| line(o))).collect();
        out += &groups.join(" | ");
        out += "\n";
    }
    std::fs::write(path, out).unwrap();
}

/// Lockstep rollout of the schedule: every row writes TURNS calls of CALL sampled tokens, and
/// after each call but the last its observation is appended (token-in/token-out, like
/// `rollout_batch`). `cached`: one `extend` per step on the new tokens only; otherwise the
/// original algorithm, a forward over every row's whole (right-padded) prefix per step and
/// the logits at each row's last token. -> (sampled ids, their log-probs) per row.
fn rollout(model: &TinyAgent, s: &Schedule, cached: bool) -> (Vec<Vec<i64>>, Vec<Vec<f32>>) {
    let b = s.prompts.len();
    let v = model.cfg.vocab_size;
    let opts = SamplingOptions::default();
    let mut tokens = s.prompts.clone();
    let (mut sampled, mut logps) = (vec![vec![]; b], vec![vec![]; b]);
    let (mut call_len, mut turns, mut seen) = (vec![0; b], vec![0; b], vec![0; b]);
    let mut rows: Vec<usize> = (0..b).collect();
    let mut cache = KvCache::new(model, b);
    let mut step = 0;
    while !rows.is_empty() {
        let logits = tch::no_grad(|| {
            if cached {
                let new: Vec<Vec<i64>> = rows.iter().map(|&i| tokens[i][seen[i]..].to_vec()).collect();
                rows.iter().for_each(|&i| seen[i] = tokens[i].len());
                model.extend(&mut cache, &new) // [rows, V]
            } else {
                let len = rows.iter().map(|&i| tokens[i].len()).max().unwrap();
                let mut flat = vec![0i64; rows.len() * len];
                for (r, &i) in rows.iter().enumerate() {
                    flat[r * len..r * len + tokens[i].len()].copy_from_slice(&tokens[i]);
                }
                let n = rows.len() as i64;
                let ids = Tensor::from_slice(&flat).view([n, len as i64]);
                let last: Vec<i64> = rows.iter().map(|&i| tokens[i].len() as i64 - 1).collect();
                let last = Tensor::from_slice(&last).view([n, 1, 1]).expand([n, 1, v], false);
                model.forward(&ids).gather(1, &last, false).squeeze_dim(1) // [rows, V]
            }
        });
        let u: Vec<f64> = rows.iter().map(|&i| uniform(step, i)).collect();
        let (ids, lp) = arl::sample_with_uniforms(&logits, opts, &u);
        let (ids, lp) = (Vec::<i64>::try_from(&ids).unwrap(), Vec::<f32>::try_from(&lp).unwrap());
        let mut running = vec![];
        for (r, &i) in rows.iter().enumerate() {
            tokens[i].push(ids[r]);
            sampled[i].push(ids[r]);
            logps[i].push(lp[r]);
            call_len[i] += 1;
            if call_len[i] == CALL {
                (call_len[i], turns[i]) = (0, turns[i] + 1);
                if turns[i] == TURNS {
                    continue; // finished: leaves the batch
                }
                tokens[i].extend(&s.obs[i][turns[i] - 1]);
            }
            running.push(r);
        }
        if cached && running.len() < rows.len() && !running.is_empty() {
            cache.keep_rows(&running);
        }
        rows = running.iter().map(|&r| rows[r]).collect();
        step += 1;
    }
    (sampled, logps)
}

fn setup(dir: &str) {
    std::fs::create_dir_all(dir).unwrap();
    for name in ["book", "default"] {
        let model = TinyAgent::new(config(name), MODEL_SEED);
        model.vs.save(format!("{dir}/{name}.safetensors")).unwrap();
        let logits = tch::no_grad(|| model.forward(&input_ids(2, 32)));
        Tensor::write_safetensors(&[("logits", &logits)], format!("{dir}/{name}.logits.safetensors"))
            .unwrap();
        // the rollout check: sampled ids and log-probs of both algorithms
        for obs in ["short", "long"] {
            let s = schedule(8, obs);
            for cached in [true, false] {
                let (ids, lp) = rollout(&model, &s, cached);
                let mut out = String::new();
                for (i, l) in ids.iter().zip(&lp) {
                    let i: Vec<String> = i.iter().map(|x| x.to_string()).collect();
                    let l: Vec<String> = l.iter().map(|x| format!("{x:e}")).collect();
                    out += &format!("{} | {}\n", i.join(" "), l.join(" "));
                }
                let algo = if cached { "cached" } else { "uncached" };
                std::fs::write(format!("{dir}/{name}-{obs}-{algo}.rollout.txt"), out).unwrap();
            }
        }
    }
    // the order in which rl_update's shuffle (seeded UPDATE_SEED) visits the update's rows
    let mut order: Vec<usize> = (0..UPDATE_ROWS).collect();
    rand::seq::SliceRandom::shuffle(&mut order[..], &mut ChaCha8Rng::seed_from_u64(UPDATE_SEED));
    let order: Vec<String> = order.iter().map(|r| r.to_string()).collect();
    std::fs::write(format!("{dir}/update-order.txt"), order.join(" ") + "\n").unwrap();
    let lens: Vec<String> = (0..UPDATE_ROWS).map(|r| update_len(r).to_string()).collect();
    std::fs::write(format!("{dir}/update-lengths.txt"), lens.join(" ") + "\n").unwrap();
    // the update check: chapter 05's model after one rl_update in micro-batches of 16
    let model = TinyAgent::new(config("book"), MODEL_SEED);
    let mut opt = arl::FlatAdam::new(&model.vs, 1e-3);
    let cfg = arl::RLConfig { micro_batch: 16, ..Default::default() };
    let (batch, adv) = update_batch();
    let mut rng = ChaCha8Rng::seed_from_u64(UPDATE_SEED);
    arl::rl_update(&model, &mut opt, &batch, &adv, &cfg, None, None, &mut rng);
    model.vs.save(format!("{dir}/book.updated.safetensors")).unwrap();
    // the packed update check: where each episode went, the order of the rows, the weights after
    let (packed, adv_tokens) = packed_inputs(256);
    let places: Vec<String> = packed.places.iter().map(|(r, s, _)| format!("{r},{s}")).collect();
    std::fs::write(format!("{dir}/packed-places.txt"), places.join(" ") + "\n").unwrap();
    let rows = packed.ids.size()[0] as usize;
    let mut order: Vec<i64> = (0..rows as i64).collect();
    rand::seq::SliceRandom::shuffle(&mut order[..], &mut ChaCha8Rng::seed_from_u64(UPDATE_SEED));
    let order: Vec<String> = order.iter().map(|r| r.to_string()).collect();
    std::fs::write(format!("{dir}/packed-order.txt"), order.join(" ") + "\n").unwrap();
    let model = TinyAgent::new(config("book"), MODEL_SEED);
    let mut opt = arl::FlatAdam::new(&model.vs, 1e-3);
    let mut rng = ChaCha8Rng::seed_from_u64(UPDATE_SEED);
    arl::packed_update(&model, &mut opt, &packed, &adv_tokens, PACKED_OPTS, &mut rng);
    model.vs.save(format!("{dir}/book.packed.safetensors")).unwrap();
    for b in [1, 8, 16, 32] {
        for obs in ["short", "long"] {
            write_schedule(&format!("{dir}/schedule-{obs}-B{b}.txt"), &schedule(b, obs));
        }
    }
}

/// A timed operation: one call does the work once and returns None (time the whole call) or
/// the time of the part of it that is measured.
type Op = Box<dyn FnMut() -> Option<Duration>>;

/// An op timed as a whole.
fn whole(mut work: impl FnMut() + 'static) -> Op {
    Box::new(move || {
        work();
        None
    })
}

fn make_op(name: &str, models: &mut HashMap<String, TinyAgent>) -> Op {
    let parts: Vec<&str> = name.split(':').collect();
    let model_name = parts[1].to_string();
    let model = models
        .entry(model_name.clone())
        .or_insert_with(|| TinyAgent::new(config(&model_name), MODEL_SEED));
    let num = |k: usize| parts[k].parse::<i64>().unwrap();
    match parts[0] {
        "fwd" => {
            let (m, ids) = (model.frozen(), input_ids(num(2), num(3)));
            whole(move || {
                let _ = tch::no_grad(|| m.forward(&ids));
            })
        }
        "train" => {
            let (m, ids) = (model.clone(), input_ids(num(2), num(3)));
            let mut opt = arl::FlatAdam::new(&m.vs, 1e-3);
            whole(move || {
                let loss = -arl::sequence_log_probs(&m, &ids).mean(Kind::Float);
                opt.backward_step(&loss);
            })
        }
        "part" => {
            // a whole train step, timing one part of it: forward+loss, backward, or Adam step
            let (m, ids) = (model.clone(), input_ids(num(2), num(3)));
            let mut opt = arl::FlatAdam::new(&m.vs, 1e-3);
            let which = parts[4].to_string();
            Box::new(move || {
                let t0 = Instant::now();
                let loss = -arl::sequence_log_probs(&m, &ids).mean(Kind::Float);
                let t1 = Instant::now();
                opt.zero_grad();
                loss.backward();
                let t2 = Instant::now();
                opt.step();
                let t3 = Instant::now();
                Some(match which.as_str() {
                    "fwd" => t1 - t0,
                    "bwd" => t2 - t1,
                    // the twin times its default Adam (adam) and its fused=True Adam (adam_fused)
                    // against the same FlatAdam step
                    "adam" | "adam_fused" => t3 - t2,
                    other => panic!("unknown part {other}"),
                })
            })
        }
        "roll_cached" | "roll_uncached" => {
            let cached = parts[0] == "roll_cached";
            let (m, s) = (model.frozen(), schedule(num(2) as usize, parts[3]));
            whole(move || {
                rollout(&m, &s, cached);
            })
        }
        "extend" => {
            // a cache holding 50 tokens per row; each call extends a shallow copy by one
            let (m, b) = (model.frozen(), num(2) as usize);
            let mut cache = KvCache::new(&m, b);
            let prompt: Vec<Vec<i64>> = (0..b).map(|r| (0..50).map(|j| (r as i64 * 7 + j) % ID_RANGE).collect()).collect();
            let _ = tch::no_grad(|| m.extend(&mut cache, &prompt));
            let new: Vec<Vec<i64>> = (0..b).map(|r| vec![r as i64 % ID_RANGE]).collect();
            whole(move || {
                let mut c = KvCache {
                    layers: cache
                        .layers
                        .iter()
                        .map(|l| arl::LayerKv { keys: l.keys.shallow_clone(), values: l.values.shallow_clone() })
                        .collect(),
                    valid: cache.valid.shallow_clone(),
                    seen: cache.seen.clone(),
                };
                let _ = tch::no_grad(|| m.extend(&mut c, &new));
            })
        }
        "update" => {
            let m = model.clone();
            let mut opt = arl::FlatAdam::new(&m.vs, 1e-3);
            let cfg = arl::RLConfig { micro_batch: num(2) as usize, ..Default::default() };
            let (batch, adv) = update_batch();
            whole(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(UPDATE_SEED);
                arl::rl_update(&m, &mut opt, &batch, &adv, &cfg, None, None, &mut rng);
            })
        }
        "packed" => {
            let m = model.clone();
            let mut opt = arl::FlatAdam::new(&m.vs, 1e-3);
            let (packed, adv_tokens) = packed_inputs(num(2) as usize);
            whole(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(UPDATE_SEED);
                arl::packed_update(&m, &mut opt, &packed, &adv_tokens, PACKED_OPTS, &mut rng);
            })
        }
        "attn" => attention_op(&config(&model_name), parts[2], parts[3]),
        other => panic!("unknown op {other}"),
    }
}

/// Attention alone on the packed rows of 256: the dense block-diagonal call `packed_update`
/// makes per layer, or one causal call per episode (what a variable-length kernel would
/// compute, done with the same kernel); the outputs agree on every episode's tokens.
fn attention_op(cfg: &TinyAgentConfig, way: &str, pass: &str) -> Op {
    let (packed, _) = packed_inputs(256);
    let (rows, len) = packed.segment_ids.size2().unwrap();
    let (heads, dh) = (cfg.n_heads as i64, (cfg.d_model / cfg.n_heads) as i64);
    // q, k, v: [R, H, L, Dh], a formula the twin repeats
    let init = |k: f64| {
        let n = rows * heads * len * dh;
        let x = (Tensor::arange(n, (Kind::Float, tch::Device::Cpu)) * 0.37 + k).sin();
        x.view([rows, heads, len, dh]).set_requires_grad(true)
    };
    let (q, k, v) = (init(0.0), init(1.0), init(2.0));
    let seg = &packed.segment_ids;
    let causal = Tensor::ones([len, len], (Kind::Bool, tch::Device::Cpu)).tril(0);
    let allowed = seg.unsqueeze(2).eq_tensor(&seg.unsqueeze(1)).logical_and(&causal).unsqueeze(1);
    let places = packed.places.clone();
    let dense = match way {
        "dense" => true,
        "segments" => false,
        other => panic!("attn: unknown way {other}"),
    };
    let grad = match pass {
        "fwd" => false,
        "fwdbwd" => true,
        other => panic!("attn: unknown pass {other}"),
    };
    let (q2, k2, v2) = (q.shallow_clone(), k.shallow_clone(), v.shallow_clone());
    let attend = move || -> Tensor {
        let sdpa = |q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>| {
            Tensor::scaled_dot_product_attention(q, k, v, mask, 0.0, mask.is_none(), None, false)
        };
        if dense {
            return sdpa(&q, &k, &v, Some(&allowed)).sum(Kind::Float);
        }
        let sums: Vec<Tensor> = (places.iter())
            .map(|&(row, col, n)| {
                let part = |t: &Tensor| t.narrow(0, row as i64, 1).narrow(2, col as i64, n as i64);
                sdpa(&part(&q), &part(&k), &part(&v), None).sum(Kind::Float)
            })
            .collect();
        Tensor::stack(&sums, 0).sum(Kind::Float)
    };
    whole(move || {
        if grad {
            let total = attend();
            let _ = Tensor::run_backward(&[total], &[&q2, &k2, &v2], false, false);
        } else {
            let _ = tch::no_grad(|| attend());
        }
    })
}

fn serve(threads: i32) {
    tch::set_num_threads(threads);
    let mut models = HashMap::new();
    let mut ops: HashMap<String, Op> = HashMap::new();
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let line = line.unwrap();
        let mut words = line.split_whitespace();
        let (Some(name), Some(reps)) = (words.next(), words.next()) else { continue };
        let reps: u32 = reps.parse().unwrap();
        let op = ops.entry(name.to_string()).or_insert_with(|| {
            let mut op = make_op(name, &mut models);
            op(); // warm-up on creation
            op
        });
        if reps > 1 {
            op(); // re-warm caches after the other side ran (a single rep is >= 0.1 s)
        }
        let (t0, mut measured) = (Instant::now(), None);
        for _ in 0..reps {
            if let Some(part) = op() {
                measured = Some(measured.unwrap_or(Duration::ZERO) + part);
            }
        }
        let total = measured.unwrap_or_else(|| t0.elapsed());
        writeln!(stdout, "{:.9}", total.as_secs_f64() / reps as f64).unwrap();
        stdout.flush().unwrap();
    }
}

/// A field of /proc/self/status in KiB (Linux).
fn status_kib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Peak resident memory of one backward of -mean(A * log p) over the update batch's policy
/// tokens through chapter 05's model, above what the process held before it: all logits at
/// once, or `checkpointed_log_probs` in chunks. Run once per process (the peak is reset
/// through /proc/self/clear_refs first).
fn memory(way: &str, chunk: i64) {
    tch::set_num_threads(1);
    let model = TinyAgent::new(config("book"), MODEL_SEED);
    let (batch, adv) = update_batch();
    let t = batch.ids.size()[1];
    let (inputs, targets) = (batch.ids.narrow(1, 0, t - 1), batch.ids.narrow(1, 1, t - 1));
    let mask = &batch.action_mask; // [B, T-1]
    let adv_tokens = adv.unsqueeze(1).expand_as(mask);
    let loss = |logp: &Tensor| -(logp * &adv_tokens * mask).sum(Kind::Float) / mask.sum(Kind::Float);
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak (Linux >= 4.0)");
    let before = status_kib("VmRSS:");
    let hidden = model.hidden(&inputs); // [B, T-1, D]
    match way {
        "full" => loss(&arl::selected_log_probs(&hidden.matmul(&model.head_weight().tr()), &targets)).backward(),
        "chunked" => {
            let _ = arl::checkpointed_log_probs(&hidden, &model.head_weight(), &targets, chunk, loss);
        }
        other => panic!("memory: unknown way {other}"),
    }
    let peak = status_kib("VmHWM:");
    let (b, v) = (batch.ids.size()[0], model.head_weight().size()[0]);
    println!(
        "{way:<8} {chunk:>6} logits [{}, {v}]: peak {:7.1} MiB above the {:.1} MiB held before",
        if way == "full" { b * (t - 1) } else { chunk },
        (peak - before) / 1024.0,
        before / 1024.0
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("setup") => setup(&args[2]),
        Some("serve") => serve(args[2].parse().unwrap()),
        Some("memory") => memory(&args[2], args.get(3).map_or(0, |c| c.parse().unwrap())),
        _ => {
            eprintln!("usage: agentrl-bench-model setup DIR | serve THREADS | memory WAY [CHUNK]");
            std::process::exit(2);
        }
    }
}
