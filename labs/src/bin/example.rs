//! Example lab: how often each hand-written policy of chapter 4 solves the 200 held-out repair
//! tasks, over several seeds (blind and random are random; oracle and hacker are not).
//!
//!     scripts/lab.sh example [SEEDS]      (default 5 seeds: 0..SEEDS)
//!
//! Writes labs/results/example.json: per policy, per seed, the number of episodes whose
//! final source passes the hidden tests, that gamed the public tests (`exploit`), and the
//! total reward; and the pass rate over all seeds.
//!
//! Uses chapters up to 04.

use agentrl as arl;
use serde_json::json;

const LAB: &str = "example";

fn main() -> std::io::Result<()> {
    tch::set_num_threads(1);
    let seeds: u64 = std::env::args().nth(1).map(|s| s.parse().expect("SEEDS: a number")).unwrap_or(5);
    let tasks = arl::make_tasks(arl::Split::Heldout, 0);
    let mut policies = serde_json::Map::new();
    for kind in arl::PolicyKind::ALL {
        let mut per_seed = Vec::new();
        let (mut passed, mut episodes) = (0usize, 0usize);
        for seed in 0..seeds {
            let mut policy = arl::scripted_policy(kind, seed);
            let mut env = arl::BugFixEnv::new(arl::BugFixEnvOptions::default());
            let (mut pass, mut exploit, mut reward) = (0usize, 0usize, 0.0f64);
            for task in &tasks {
                let (r, info) = arl::run_episode(&mut *policy, &mut env, task);
                pass += info.hidden_pass as usize;
                exploit += info.exploit as usize;
                reward += r;
            }
            per_seed.push(json!({ "seed": seed, "hidden_pass": pass, "exploit": exploit, "reward": reward }));
            passed += pass;
            episodes += tasks.len();
        }
        let rate = passed as f64 / episodes as f64;
        println!("{:>7}: hidden pass rate {rate:.3} over {episodes} episodes", kind.name());
        policies.insert(
            kind.name().to_string(),
            json!({ "per_seed": per_seed, "episodes": episodes, "hidden_pass_rate": rate }),
        );
    }
    let results = json!({ "tasks": tasks.len(), "seeds": seeds, "policies": policies });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
