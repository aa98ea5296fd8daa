//! The book's data figures, computed with the book's own code (`agentrl`) and written as
//! SVG. Run through `scripts/figures.sh`, which sets libtorch and the determinism
//! variables the checker uses, so regenerating an unchanged figure rewrites the same bytes.
//!
//!     agentrl-figures [OUT_DIR [NAME...]]     (default: book/src/figures, every figure;
//!                                              NAME picks figures whose file name contains it)

use std::path::{Path, PathBuf};

use agentrl as arl;
use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::element::ComposedElement;
use plotters::prelude::*;
use tch::Kind;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Size of every figure, in SVG pixels (the book's text column is about 750 px wide).
const SIZE: (u32, u32) = (720, 440);
/// Text sizes, in plotters' units (an SVG font-size of 0.75 times these, shown at about 1.04
/// times in the book's 750 px column): tick labels, axis titles, legends and panel captions
/// all come out at 14 px or more, as the body text around the figure is 16 px.
const TICK: u32 = 19;
const AXIS: u32 = 20;
const LEGEND: u32 = 19;
const CAPTION: u32 = 21;
const FONT: &str = "sans-serif";

/// The colours of ColorBrewer's "Dark2" set that the figures share (one meaning each within a
/// figure), and the order seeds take them in.
const GREEN: RGBColor = RGBColor(0x1b, 0x9e, 0x77);
const ORANGE: RGBColor = RGBColor(0xd9, 0x5f, 0x02);
const PURPLE: RGBColor = RGBColor(0x75, 0x70, 0xb3);
const PINK: RGBColor = RGBColor(0xe7, 0x29, 0x8a);
const LIME: RGBColor = RGBColor(0x66, 0xa6, 0x1e);
const SEED_COLORS: [RGBColor; 5] = [GREEN, ORANGE, PURPLE, PINK, LIME];

fn main() -> Result<()> {
    tch::set_num_threads(1);
    let out = std::env::args_os().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/src/figures")
    });
    std::fs::create_dir_all(&out)?;
    // further arguments pick figures by a part of their name (default: all)
    let only: Vec<String> = std::env::args().skip(2).collect();
    let unknown: Vec<&String> =
        only.iter().filter(|o| !FIGURES.iter().any(|(name, _)| name.contains(o.as_str()))).collect();
    if !unknown.is_empty() {
        let names: Vec<&str> = FIGURES.iter().map(|(name, _)| *name).collect();
        return Err(format!("no figure matches {unknown:?}; figures: {names:?}").into());
    }
    for (name, draw) in FIGURES.iter().filter(|(name, _)| only.is_empty() || only.iter().any(|o| name.contains(o.as_str()))) {
        let path = out.join(name);
        draw(&path)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Every figure: file name in `book/src/figures/` and the function that draws it.
const FIGURES: &[(&str, fn(&Path) -> Result<()>)] = &[
    ("ch01-public-vs-hidden.svg", public_vs_hidden),
    ("ch02-value-iteration.svg", value_iteration_convergence),
    ("ch03-sampling.svg", sampling_distributions),
    ("ch06-reinforce.svg", reinforce_curves),
    ("ch07-gradient-noise.svg", gradient_noise),
    ("ch08-clipped-objective.svg", clipped_objective),
    ("ch08-epoch-drift.svg", ppo_epoch_drift),
    ("ch08-ppo-vs-reinforce.svg", ppo_vs_reinforce),
    ("ch09-grpo-run.svg", grpo_run),
    ("ch09-grpo-family.svg", grpo_family_curves),
    ("ch10-entropy.svg", regularizer_entropy),
    ("ch10-kl.svg", regularizer_kl),
    ("ch11-reward-hacking.svg", reward_hacking),
    ("ch12-step-penalty.svg", step_penalty_collapse),
    ("ch12-context.svg", context_needed),
    ("ch13-pipeline.svg", pipeline_tradeoff),
    ("ch18-dashboard.svg", debugging_dashboard),
    ("ch19-capstone.svg", capstone_curves),
];

/// A white SVG canvas of the figures' size at `path`.
fn canvas(path: &Path) -> Result<DrawingArea<SVGBackend<'_>, plotters::coord::Shift>> {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    Ok(root)
}

/// A chart filling `root` with the figures' margins, `y_label_area` pixels for the y labels.
fn chart_on<'a, 'b, X: plotters::coord::ranged1d::AsRangedCoord, Y: plotters::coord::ranged1d::AsRangedCoord>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    y_label_area: u32,
    x: X,
    y: Y,
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<X::CoordDescType, Y::CoordDescType>>> {
    Ok(ChartBuilder::on(root).margin(14).x_label_area_size(56).y_label_area_size(y_label_area + 14).build_cartesian_2d(x, y)?)
}

/// The mesh every figure uses: a faint grid, the book's tick and axis-title fonts; callers
/// name the axes, format the labels and draw.
fn book_mesh<'a, 'b, 'c, X, Y>(
    chart: &'b mut ChartContext<'a, SVGBackend<'c>, Cartesian2d<X, Y>>,
) -> MeshStyle<'a, 'b, X, Y, SVGBackend<'c>>
where
    X: Ranged + ValueFormatter<X::ValueType>,
    Y: Ranged + ValueFormatter<Y::ValueType>,
{
    let mut mesh = chart.configure_mesh();
    mesh.light_line_style(BLACK.mix(0.06)).label_style((FONT, TICK)).axis_desc_style((FONT, AXIS));
    mesh
}

/// A legend entry: a short line in `style`.
fn legend_line(style: ShapeStyle) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], style)
}

/// One dash, and the three of a dashed series' legend entry (what `EmptyElement + 3 paths`
/// builds).
type Dash = PathElement<(i32, i32)>;
type Dashes<DB> =
    ComposedElement<(i32, i32), DB, Dash, ComposedElement<(i32, i32), DB, Dash, Dash>>;

/// A legend entry for a dashed series: the same 22 pixels as `legend_line`, in three dashes.
fn legend_dashed<DB: DrawingBackend>(style: ShapeStyle) -> impl Fn((i32, i32)) -> Dashes<DB> {
    move |(x, y)| {
        EmptyElement::at((x, y))
            + PathElement::new(vec![(0, 0), (6, 0)], style)
            + PathElement::new(vec![(10, 0), (16, 0)], style)
            + PathElement::new(vec![(20, 0), (22, 0)], style)
    }
}

/// How a line is drawn: solid, or dashes `on` pixels long with `off` between them.
#[derive(Debug, Clone, Copy)]
enum Stroke {
    Solid,
    Dashed(u32, u32),
}

/// A labelled line through `points` in `style`, and its legend entry (a dashed one for
/// [`Stroke::Dashed`]).
fn draw_line<'a, 'c: 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'c>, Cartesian2d<X, Y>>,
    points: impl IntoIterator<Item = (X::ValueType, Y::ValueType)>,
    stroke: Stroke,
    style: ShapeStyle,
    label: impl Into<String>,
) -> Result<()>
where
    X::ValueType: Clone + 'static,
    Y::ValueType: Clone + 'static,
{
    let points: Vec<_> = points.into_iter().collect();
    match stroke {
        Stroke::Solid => {
            chart.draw_series(LineSeries::new(points, style))?.label(label).legend(legend_line(style));
        }
        Stroke::Dashed(on, off) => {
            let series = DashedLineSeries::new(points, on, off, style);
            chart.draw_series(series)?.label(label).legend(legend_dashed(style));
        }
    }
    Ok(())
}

/// The legend box every figure uses, at `position`, labels `font` pixels high.
fn draw_legend<'a, 'b: 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    position: SeriesLabelPosition,
    font: u32,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .label_font((FONT, font))
        .draw()?;
    Ok(())
}

/// The chapters' gym (chapter 04 §4.3): the 1,000 generated train tasks, and the tokenizer
/// over them and the 200 held-out tasks.
fn book_gym() -> (Vec<arl::Task>, arl::Tokenizer) {
    let (train, _, tok) = book_splits();
    (train, tok)
}

/// The chapters' gym with its held-out tasks: (train, held-out, tokenizer).
fn book_splits() -> (Vec<arl::Task>, Vec<arl::Task>, arl::Tokenizer) {
    let train = arl::make_tasks(arl::Split::Train, 0);
    let heldout = arl::make_tasks(arl::Split::Heldout, 0);
    let tok = arl::build_tokenizer(&[train.clone(), heldout.clone()].concat());
    (train, heldout, tok)
}

/// The `results` object of a lab's committed results file, `labs/results/NAME.json`.
fn lab_results(lab: &str) -> Result<serde_json::Value> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../labs/results/{lab}.json"));
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut value: serde_json::Value = serde_json::from_str(&text)?;
    Ok(value["results"].take())
}

/// Chapter 2: max_s |V_k(s) - V*(s)| after k sweeps of `value_iteration` on the repair
/// MDP, for three discounts, with the contraction bound gamma^k max_s |V*(s)|.
fn value_iteration_convergence(path: &Path) -> Result<()> {
    const SWEEPS: usize = 60;
    const FLOOR: f64 = 1e-14;
    let (p, r) = arl::make_repair_mdp(arl::RepairMdpOptions::default());
    let gammas = [(0.5, GREEN), (0.9, ORANGE), (0.99, PURPLE)];

    let root = canvas(path)?;
    let mut chart = chart_on(&root, 70, 0f64..SWEEPS as f64, (FLOOR..2.0f64).log_scale())?;
    book_mesh(&mut chart)
        .x_desc("sweep k")
        .y_desc("max over states of |V_k(s) − V*(s)|")
        .y_label_formatter(&|y| format!("1e{}", y.log10().round() as i32))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_labels(8)
        .x_labels(7)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;

    for (gamma, color) in gammas {
        // V*: the greedy policy of a converged value iteration, evaluated exactly.
        let (_, greedy) = arl::value_iteration(&p, &r, gamma, Default::default());
        let greedy_pi = greedy.one_hot(4).to_kind(Kind::Double);
        let v_star = arl::policy_evaluation(&p, &r, &greedy_pi, gamma);
        let v_max = f64::try_from(v_star.abs().max())?;
        let mut errors = Vec::new();
        for k in 0..=SWEEPS {
            // value_iteration stopped after k sweeps (tol 0: never early)
            let opts = arl::ValueIterationOptions { iters: k, tol: 0.0 };
            let (v_k, _) = arl::value_iteration(&p, &r, gamma, opts);
            let err = f64::try_from((&v_k - &v_star).abs().max())?;
            // exact (or below the plot): draw the drop to the bottom edge and stop
            errors.push((k as f64, err.max(FLOOR)));
            if err < FLOOR {
                break;
            }
        }
        let bound: Vec<(f64, f64)> = (0..=SWEEPS)
            .map(|k| (k as f64, v_max * gamma.powi(k as i32)))
            .take_while(|&(_, b)| b >= FLOOR)
            .collect();
        draw_line(&mut chart, errors, Stroke::Solid, color.stroke_width(2), format!("γ = {gamma}"))?;
        chart.draw_series(DashedLineSeries::new(bound, 5, 4, color.mix(0.6).stroke_width(1)))?;
    }
    let grey = BLACK.mix(0.5);
    chart
        .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
        .label("bound γ^k · max |V*| (dashed)")
        .legend(legend_dashed(grey.into()));
    // middle right: the dashed bounds run along the top edge, where the text reads them
    draw_legend(&mut chart, SeriesLabelPosition::MiddleRight, LEGEND)?;
    root.present()?;
    Ok(())
}

/// Chapter 3: the distribution a sampler draws from, `sampling_log_probs`, for the
/// chapter's six logits: (a) temperature at top_p = 1, (b) top-p at T = 1.
fn sampling_distributions(path: &Path) -> Result<()> {
    let logits = tch::Tensor::from_slice(&[2.0f32, 1.5, 0.5, 0.0, -1.0, -2.0]).view([1, 6]); // [1, V]
    let probs = |temperature: f64, top_p: f64| -> Result<Vec<f64>> {
        let logp = arl::sampling_log_probs(&logits, arl::SamplingOptions { temperature, top_p }); // [1, V]
        Ok(Vec::<f64>::try_from(logp.exp().get(0).to_kind(Kind::Double))?)
    };
    let palette = [GREEN, PURPLE, ORANGE, PINK];
    let panels: [(&str, Vec<(String, Vec<f64>)>); 2] = [
        (
            "(a) temperature κ, top_p = 1",
            [0.5, 1.0, 2.0].iter().map(|&t| Ok((format!("κ = {t}"), probs(t, 1.0)?))).collect::<Result<_>>()?,
        ),
        (
            "(b) top_p, κ = 1",
            [1.0, 0.9, 0.8, 0.5].iter().map(|&p| Ok((format!("top_p = {p}"), probs(1.0, p)?))).collect::<Result<_>>()?,
        ),
    ];

    let root = canvas(path)?;
    let areas = root.split_evenly((1, 2));
    for ((title, series), area) in panels.iter().zip(areas.iter()) {
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .caption(*title, (FONT, CAPTION))
            .x_label_area_size(52)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..5.5f64, 0f64..1.0f64)?;
        book_mesh(&mut chart)
            .disable_x_mesh()
            .x_labels(6)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.1}"))
            .x_desc("token y (logits 2, 1.5, 0.5, 0, −1, −2)")
            .y_desc("sampling probability μ(y)")
            .draw()?;
        let n = series.len() as f64;
        let width = 0.8 / n;
        for (i, (label, p)) in series.iter().enumerate() {
            let color = palette[i % palette.len()];
            let left = -0.4 + i as f64 * width;
            chart
                .draw_series(p.iter().enumerate().map(|(y, &mu)| {
                    let x0 = y as f64 + left;
                    Rectangle::new([(x0, 0.0), (x0 + width * 0.92, mu)], color.filled())
                }))?
                .label(label.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight, LEGEND)?;
    }
    root.present()?;
    Ok(())
}

/// Chapter 6: pass rate of each step's sampled batch during REINFORCE from the base agent,
/// for the five seeds of the `reinforce_1` arm of lab `ppo_vs_reinforce` (60 steps; read from
/// labs/results/ppo_vs_reinforce.json), and their mean.
fn reinforce_curves(path: &Path) -> Result<()> {
    let results = lab_results("ppo_vs_reinforce")?;
    let runs = results["runs"].as_array().ok_or("ppo_vs_reinforce: no runs")?;
    let curves: Vec<(u64, Vec<f64>)> = runs
        .iter()
        .map(|run| {
            let seed = run["seed"].as_u64().ok_or("ppo_vs_reinforce: a run without a seed")?;
            let curve = run["arms"]["reinforce_1"]["batch_pass"].as_array().ok_or("ppo_vs_reinforce: no reinforce_1 batch_pass")?;
            let curve = curve.iter().map(|x| x.as_f64().ok_or("ppo_vs_reinforce: a batch_pass that is not a number")).collect::<std::result::Result<Vec<f64>, _>>()?;
            Ok((seed, curve))
        })
        .collect::<Result<_>>()?;
    let steps = curves[0].1.len();
    if curves.iter().any(|(_, c)| c.len() != steps) {
        return Err("ppo_vs_reinforce: reinforce_1 curves of different lengths".into());
    }
    let root = canvas(path)?;
    // steps numbered from 1, as the chapter's ten-step windows count them
    let mut chart = chart_on(&root, 60, 1f64..steps as f64, 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_desc("REINFORCE step (32 episodes each)")
        .y_desc("pass rate of the step's batch")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style((FONT, TICK))
        .axis_desc_style((FONT, AXIS))
        .draw()?;
    for ((seed, curve), color) in curves.iter().zip(SEED_COLORS.iter().cycle()) {
        let points = curve.iter().enumerate().map(|(k, &p)| ((k + 1) as f64, p));
        chart
            .draw_series(LineSeries::new(points, color.mix(0.7).stroke_width(1)))?
            .label(format!("seed {seed}"))
            .legend(legend_line(color.stroke_width(1)));
    }
    let n = curves.len() as f64;
    let mean = (0..steps).map(|k| ((k + 1) as f64, curves.iter().map(|(_, c)| c[k]).sum::<f64>() / n));
    draw_line(&mut chart, mean, Stroke::Solid, BLACK.stroke_width(3), format!("mean of {} seeds", curves.len()))?;
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, LEGEND)?;
    root.present()?;
    Ok(())
}

/// Chapter 7: per-group noise of the output-head policy gradient, E||g_m - E g_m||^2, under
/// each advantage estimator, relative to the plain return, with 95% bootstrap intervals; the
/// same rollouts, critic and seeds as Section 7.6, so the bars are the table's column.
fn gradient_noise(path: &Path) -> Result<()> {
    use rand::{Rng, SeedableRng};
    use rand::seq::SliceRandom;
    use rand_chacha::ChaCha8Rng;
    use tch::Tensor;
    let (train, tok) = book_gym();
    let base = arl::make_base_agent(&tok, &train, arl::BaseAgentOptions::default());
    // as chapter 7 samples them: 80 train tasks x 8 to fit the critic, 80 others x 8 to judge it
    let sample = |tasks: &[arl::Task], per_task: usize, seed: u64| {
        let tasks: Vec<arl::Task> = tasks.iter().flat_map(|t| std::iter::repeat_n(t.clone(), per_task)).collect();
        let mut envs: Vec<arl::BugFixEnv> = tasks.iter().map(|_| arl::BugFixEnv::new(Default::default())).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        arl::rollout_batch(&base, &mut envs, &tasks, &tok, Default::default(), &mut rng).0
    };
    let (critic_data, episodes) = (sample(&train[..80], 8, 100), sample(&train[80..160], 8, 200));
    let real = |b: &arl::Batch| b.attention_mask.narrow(1, 1, b.ids.size()[1] - 1).to_kind(Kind::Bool);
    let target = |b: &arl::Batch| {
        let rewards = arl::outcome_rewards(&b.rewards, &b.action_mask);
        arl::returns_to_go(&rewards, &real(b), Default::default())
    };
    // as chapter 7 trains it: policy tokens only, 12 epochs, the epoch with the best EV on a
    // validation set of 40 more train tasks kept
    let by_length = |trajs: &[arl::Trajectory]| {
        let mut sorted = trajs.to_vec();
        sorted.sort_by_key(|t| t.ids.size()[0]);
        sorted.chunks(32).map(|c| arl::collate(c, arl::PAD_ID)).collect::<Vec<arl::Batch>>()
    };
    let minibatches = by_length(&critic_data);
    let validation = by_length(&sample(&train[160..200], 8, 300));
    let groups: Vec<arl::Batch> = episodes.chunks(8).map(|c| arl::collate(c, arl::PAD_ID)).collect();
    let ev_on = |critic: &arl::TinyAgent, batches: &[arl::Batch]| {
        let (mut pred, mut goal) = (vec![], vec![]);
        for b in batches {
            let keep = &b.action_mask;
            pred.push(tch::no_grad(|| arl::critic_values(critic, &b.ids)).masked_select(&keep));
            goal.push(target(b).masked_select(&keep));
        }
        let (pred, goal) = (Tensor::cat(&pred, 0), Tensor::cat(&goal, 0));
        arl::explained_variance(&pred, &goal, &goal.ones_like().to_kind(Kind::Bool))
    };
    let critic = arl::make_critic(&base);
    let mut opt = arl::FlatAdam::new(&critic.vs, 1e-3);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (mut best_ev, mut best) = (ev_on(&critic, &validation), critic.clone());
    for _ in 1..=12 {
        let mut order: Vec<usize> = (0..minibatches.len()).collect();
        order.shuffle(&mut rng);
        for &i in &order {
            let b = &minibatches[i];
            let error = arl::critic_values(&critic, &b.ids) - target(b);
            opt.backward_step(&arl::masked_mean(&error.square(), &b.action_mask, None));
        }
        let ev = ev_on(&critic, &validation);
        if ev > best_ev {
            (best_ev, best) = (ev, critic.clone());
        }
    }
    let critic = best;
    let w = base.head_weight();
    let v_size = w.size()[0];
    let g = 8;
    let rewards = Tensor::from_slice(&episodes.iter().map(|t| t.reward as f32).collect::<Vec<_>>());
    let mean_reward = rewards.mean(Kind::Float).double_value(&[]);
    let mean_only = arl::GroupAdvantageOptions { normalize_std: false, ..Default::default() };
    let names = ["return", "return − batch mean", "GAE λ = 1 (critic)", "GAE λ = 0.95 (critic)",
        "turn GAE λ = 0.95 (critic)", "group mean", "group z-score", "RLOO", "return + 1"];
    let mut per_group: Vec<Vec<Tensor>> = names.iter().map(|_| vec![]).collect();
    for b in &groups {
        let (mask, r) = (&b.action_mask, &b.rewards);
        let values = tch::no_grad(|| arl::critic_values(&critic, &b.ids));
        let token_rewards = arl::outcome_rewards(r, mask);
        let gae = |lam: f64| {
            arl::gae_advantages(&token_rewards, &values, mask, arl::GaeOptions { lam, ..Default::default() }).0
        };
        let seq = |a: Tensor| a.unsqueeze(1) * mask;
        let advantages = [
            seq(r.shallow_clone()),
            seq(r - mean_reward),
            gae(1.0),
            gae(0.95),
            arl::turn_advantages(&token_rewards, &values, mask, &b.turn_ids, Default::default()),
            seq(arl::group_advantages(r, g, mean_only)),
            seq(arl::group_advantages(r, g, Default::default())),
            seq(arl::rloo_advantages(r, g)),
            seq(r + 1.0),
        ];
        let t = b.ids.size()[1];
        let (h, e) = tch::no_grad(|| {
            let h = base.hidden(&b.ids.narrow(1, 0, t - 1));
            let probs = h.matmul(&w.tr()).softmax(-1, Kind::Float);
            let e = b.ids.narrow(1, 1, t - 1).one_hot(v_size).to_kind(Kind::Float) - probs;
            (h, e)
        });
        for (k, adv) in advantages.iter().enumerate() {
            let grad = Tensor::einsum("bt,btv,btd->vd", &[adv, &e, &h], None::<i64>) / g as f64;
            per_group[k].push(grad.reshape([-1]));
        }
    }
    let m = groups.len() as i64;
    let cpu = (Kind::Double, tch::Device::Cpu);
    let noise = |gram: &Tensor, counts: &Tensor| {
        let n = counts.sum(Kind::Double).double_value(&[]);
        let mean_sq = counts.dot(&gram.mv(counts)).double_value(&[]) / (n * n);
        let mean_of_sq = counts.dot(&gram.diag(0)).double_value(&[]) / n;
        (mean_of_sq - mean_sq) * n / (n - 1.0)
    };
    let mut boot = ChaCha8Rng::seed_from_u64(11);
    let draws: Vec<Tensor> = (0..200)
        .map(|_| {
            let picks: Vec<i64> = (0..m).map(|_| boot.gen_range(0..m)).collect();
            Tensor::zeros([m], cpu).index_add(0, &Tensor::from_slice(&picks), &Tensor::ones([m], cpu))
        })
        .collect();
    let grams: Vec<Tensor> = per_group
        .iter()
        .map(|g| {
            let x = Tensor::stack(g, 0).to_kind(Kind::Double);
            x.matmul(&x.tr())
        })
        .collect();
    let once = Tensor::ones([m], cpu);
    let bars: Vec<(f64, f64, f64)> = (0..names.len())
        .map(|k| {
            let rel = |c: &Tensor| noise(&grams[k], c) / noise(&grams[0], c);
            let mut boots: Vec<f64> = draws.iter().map(|c| rel(c)).collect();
            boots.sort_by(f64::total_cmp);
            (rel(&once), boots[4], boots[195]) // the estimate and its 95% percentile interval
        })
        .collect();

    let root = canvas(path)?;
    let n = names.len() as f64;
    let mut chart = chart_on(&root, 190, 0f64..9.0f64, -0.5f64..n - 0.5)?;
    book_mesh(&mut chart)
        .disable_y_mesh()
        .y_labels(names.len())
        .y_label_formatter(&|y| {
            let i = y.round() as usize;
            if (y - y.round()).abs() < 1e-6 && i < names.len() { names[names.len() - 1 - i].to_string() } else { String::new() }
        })
        .x_label_formatter(&|x| format!("{x:.0}"))
        .x_desc("per-group gradient noise relative to the plain return (95% bootstrap interval)")
        .draw()?;
    let blue = PURPLE;
    let orange = ORANGE;
    for (k, &(value, low, high)) in bars.iter().enumerate() {
        let y = n - 1.0 - k as f64;
        let color = if value < 1.0 { blue } else { orange };
        chart.draw_series(std::iter::once(Rectangle::new([(0.0, y - 0.32), (value, y + 0.32)], color.filled())))?;
        chart.draw_series(std::iter::once(PathElement::new(vec![(low, y), (high, y)], BLACK.stroke_width(2))))?;
    }
    chart.draw_series(std::iter::once(PathElement::new(vec![(1.0, -0.5), (1.0, n - 0.5)], BLACK.mix(0.5))))?;
    // The colours say which side of the plain return (1, the grey line) a baseline lands on.
    for (color, label) in [(blue, "less noise than the plain return (< 1)"), (orange, "as much noise or more (≥ 1)")] {
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
    }
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight, LEGEND)?;
    root.present()?;
    Ok(())
}

/// Chapter 8: the clipped objective of one token, L^CLIP = -ppo_policy_loss, against its
/// ratio rho in [0.4, 1.6], for an advantage of +1 and of -1 (default clip 0.2), beside the
/// unclipped rho * A; the clip range is shaded.
fn clipped_objective(path: &Path) -> Result<()> {
    use tch::Tensor;
    let rhos: Vec<f64> = (0..=240).map(|k| 0.4 + 1.2 * k as f64 / 240.0).collect();
    // one token, [B = 1, T = 1], at each ratio: the loss is -L^CLIP of that token
    let objective = |adv: f64| -> Result<Vec<(f64, f64)>> {
        let mut points = Vec::with_capacity(rhos.len());
        for &r in &rhos {
            let logp = Tensor::from_slice(&[r.ln() as f32]).view([1, 1]); // [1, 1]
            let (old, mask) = (logp.zeros_like(), logp.ones_like().to_kind(Kind::Bool)); // rho = r
            let advantages = Tensor::from_slice(&[adv as f32]); // [1]
            let (loss, _) = arl::ppo_policy_loss(&logp, &old, &advantages, &mask, Default::default());
            points.push((r, -f64::try_from(loss)?));
        }
        Ok(points)
    };
    let panels = [("(a) advantage A = +1", 1.0), ("(b) advantage A = −1", -1.0)];
    let (green, grey, shade) = (GREEN, RGBColor(0x88, 0x88, 0x88), ORANGE);
    let root = canvas(path)?;
    let areas = root.split_evenly((1, 2));
    for ((title, adv), area) in panels.iter().zip(areas.iter()) {
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .caption(*title, (FONT, CAPTION))
            .x_label_area_size(52)
            .y_label_area_size(56)
            .build_cartesian_2d(0.4f64..1.6f64, -1.7f64..1.7f64)?;
        book_mesh(&mut chart)
            .x_labels(7)
            .y_labels(7)
            .x_label_formatter(&|x| format!("{x:.1}"))
            .y_label_formatter(&|y| format!("{y:.1}"))
            .x_desc("ratio ρ = π_θ / π_old")
            .y_desc("objective of the token")
            .draw()?;
        chart.draw_series(std::iter::once(Rectangle::new([(0.8, -1.7), (1.2, 1.7)], shade.mix(0.12).filled())))?;
        draw_line(&mut chart, rhos.iter().map(|&r| (r, r * adv)), Stroke::Dashed(8, 5), grey.stroke_width(2), "ρ A (unclipped)")?;
        draw_line(&mut chart, objective(*adv)?, Stroke::Solid, green.stroke_width(3), "L^CLIP (ppo_policy_loss)")?;
        // the corner the curves leave empty
        let corner = if *adv > 0.0 { SeriesLabelPosition::LowerRight } else { SeriesLabelPosition::UpperRight };
        draw_legend(&mut chart, corner, LEGEND)?;
    }
    root.present()?;
    Ok(())
}

/// Chapter 8: pass rate of the sampled batches against episodes sampled, for REINFORCE and
/// PPO with 2 and 4 clipped epochs per batch, from the Chapter 6 base agent; mean and
/// standard error over seeds per window of 4 steps. Seeds 0-2 and the first 12 steps are
/// the chapter's own runs (same generators, same order of draws).
fn ppo_vs_reinforce(path: &Path) -> Result<()> {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    const SEEDS: u64 = 5;
    const STEPS: usize = 24;
    const BATCH: usize = 32;
    const WINDOW: usize = 4;
    let (train, tok) = book_gym();
    let base = arl::make_base_agent(&tok, &train, arl::BaseAgentOptions::default());
    let run = |ppo_epochs: Option<usize>, seed: u64| -> Result<Vec<f64>> {
        let model = base.clone();
        let mut opt = arl::FlatAdam::new(&model.vs, 1e-3);
        let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
        let mut curve = Vec::new();
        for _ in 0..STEPS {
            let tasks: Vec<arl::Task> =
                (0..BATCH).map(|_| train[rng.gen_range(0..train.len())].clone()).collect();
            let mut envs: Vec<arl::BugFixEnv> =
                tasks.iter().map(|_| arl::BugFixEnv::new(Default::default())).collect();
            let opts = arl::RolloutOptions::default();
            let (trajs, _) = arl::rollout_batch(&model, &mut envs, &tasks, &tok, opts, &mut rng);
            let batch = arl::collate(&trajs, arl::PAD_ID);
            let adv = &batch.rewards - batch.rewards.mean(Kind::Float); // [B]
            match ppo_epochs {
                None => {
                    let mode = arl::LossMode::TokenMean;
                    arl::policy_gradient_step(&model, &mut opt, &batch, &adv, mode, 1.0);
                }
                Some(epochs) => {
                    let old_logp = tch::no_grad(|| arl::sequence_log_probs(&model, &batch.ids));
                    for _ in 0..epochs {
                        opt.zero_grad();
                        let logp = arl::sequence_log_probs(&model, &batch.ids);
                        let mask = &batch.action_mask;
                        let (loss, _) =
                            arl::ppo_policy_loss(&logp, &old_logp, &adv, mask, Default::default());
                        loss.backward();
                        arl::clip_grad_norm(&model.vs, 1.0);
                        opt.step();
                    }
                }
            }
            curve.push(arl::rollout_stats(&trajs).pass_rate);
        }
        Ok(curve)
    };
    let arms = [
        ("REINFORCE (1 step per batch)", None, PURPLE),
        ("PPO, 2 epochs per batch", Some(2), GREEN),
        ("PPO, 4 epochs per batch", Some(4), ORANGE),
    ];
    let windows = STEPS / WINDOW;
    let mut results = Vec::new(); // per arm: (label, color, [(x, mean, se)])
    for (label, epochs, color) in arms {
        let curves: Vec<Vec<f64>> = (0..SEEDS).map(|s| run(epochs, s)).collect::<Result<_>>()?;
        let points: Vec<(f64, f64, f64)> = (0..windows)
            .map(|w| {
                let per_seed: Vec<f64> = curves
                    .iter()
                    .map(|c| c[w * WINDOW..(w + 1) * WINDOW].iter().sum::<f64>() / WINDOW as f64)
                    .collect();
                let n = per_seed.len() as f64;
                let mean = per_seed.iter().sum::<f64>() / n;
                let var = per_seed.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
                let x = ((w * WINDOW) as f64 + WINDOW as f64 / 2.0) * BATCH as f64;
                (x, mean, (var / n).sqrt())
            })
            .collect();
        println!("{label}: {points:.3?}");
        results.push((label, color, points));
    }

    let root = canvas(path)?;
    let x_max = (STEPS * BATCH) as f64;
    let mut chart = chart_on(&root, 60, 0f64..x_max, 0f64..0.5f64)?;
    book_mesh(&mut chart)
        .x_desc("episodes sampled (32 per step)")
        .y_desc("pass rate of the sampled batches")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.2}"))
        .draw()?;
    for (i, (label, color, points)) in results.iter().enumerate() {
        let color = *color;
        let shift = (i as f64 - 1.0) * 6.0; // keep the error bars of the three arms apart
        draw_line(&mut chart, points.iter().map(|&(x, m, _)| (x + shift, m)), Stroke::Solid, color.stroke_width(2), *label)?;
        chart.draw_series(points.iter().map(|&(x, m, se)| {
            PathElement::new(vec![(x + shift, m - se), (x + shift, m + se)], color.stroke_width(2))
        }))?;
        chart.draw_series(points.iter().map(|&(x, m, _)| Circle::new((x + shift, m), 3, color.filled())))?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, LEGEND)?;
    root.present()?;
    Ok(())
}

/// Chapter 9: the `grpo_family` lab's learning curves, the sampled pass rate of each variant
/// per step, averaged over seeds and over windows of 5 steps, with the s.e. over seeds.
fn grpo_family_curves(path: &Path) -> Result<()> {
    const WINDOW: usize = 5;
    let lab = lab_results("grpo_family")?;
    let runs = lab["runs"].as_array().ok_or("grpo_family.json: no runs")?;
    let steps = lab["steps"].as_u64().ok_or("grpo_family.json: no steps")? as usize;
    let names: Vec<String> = runs[0]["variants"]
        .as_array()
        .ok_or("no variants")?
        .iter()
        .map(|v| v["variant"].as_str().unwrap_or("?").to_string())
        .collect();
    let colors = [
        GREEN,
        RGBColor(0x99, 0x99, 0x99),
        ORANGE,
        PURPLE,
        PINK,
        LIME,
        RGBColor(0xa6, 0x76, 0x1d),
        RGBColor(0x1f, 0x78, 0xb4),
        RGBColor(0x33, 0x33, 0x33),
    ];
    let windows = steps / WINDOW;
    let root = canvas(path)?;
    let mut chart = chart_on(&root, 60, 0f64..steps as f64, 0f64..1f64)?;
    book_mesh(&mut chart)
        .x_desc("GRPO step (128 episodes sampled per step; more for dynamic sampling)")
        .y_desc("pass rate of the sampled episodes")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .draw()?;
    for (i, name) in names.iter().enumerate() {
        let color = colors[i % colors.len()];
        let points: Vec<(f64, f64, f64)> = (0..windows)
            .map(|w| {
                let per_seed: Vec<f64> = runs
                    .iter()
                    .map(|run| {
                        let curve = &run["variants"][i]["sampled_pass"];
                        (w * WINDOW..(w + 1) * WINDOW).map(|s| curve[s].as_f64().unwrap_or(0.0)).sum::<f64>()
                            / WINDOW as f64
                    })
                    .collect();
                let n = per_seed.len() as f64;
                let mean = per_seed.iter().sum::<f64>() / n;
                let var = per_seed.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
                // variants side by side within the window, so their error bars do not overlap
                let x = (w * WINDOW) as f64 + WINDOW as f64 / 2.0 + (i as f64 - (names.len() as f64 - 1.0) / 2.0) * 0.3;
                (x, mean, (var / n).sqrt())
            })
            .collect();
        println!("{name}: {points:.3?}");
        draw_line(&mut chart, points.iter().map(|&(x, m, _)| (x, m)), Stroke::Solid, color.stroke_width(2), name.as_str())?;
        // ± one standard error over seeds, with caps; a dot at each window's mean
        for &(x, m, se) in &points {
            let bar = [vec![(x, m - se), (x, m + se)], vec![(x - 0.12, m - se), (x + 0.12, m - se)], vec![(x - 0.12, m + se), (x + 0.12, m + se)]];
            chart.draw_series(bar.into_iter().map(|p| PathElement::new(p, color.stroke_width(1))))?;
        }
        chart.draw_series(points.iter().map(|&(x, m, _)| Circle::new((x, m), 3, color.filled())))?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, LEGEND)?;
    root.present()?;
    Ok(())
}

/// Chapter 12: pass rate on the train tasks against the number of recent tool observations
/// the policy sees (`keep_obs`), for the base agent and three trained variants, read from the
/// `multi_turn` lab's results (mean over its seeds).
fn context_needed(path: &Path) -> Result<()> {
    let lab = lab_results("multi_turn")?;
    let runs = lab["runs"].as_array().ok_or("multi_turn.json: no runs")?;
    let series = [
        ("base agent", "base", RGBColor(0x66, 0x66, 0x66)),
        ("GRPO, full context", "penalty_0", GREEN),
        ("keep_obs 1, episode samples", "episode_keep1", ORANGE),
        ("keep_obs 1, call samples", "call_keep1", PURPLE),
    ];
    // x = 0, 1, 2 observations kept, 3 = all of them
    let pass = |variant: &str, x: usize| -> f64 {
        let value = |run: &serde_json::Value| {
            let v = &run["variants"][variant];
            let s = if x == 3 { &v["train"] } else { &v["train_keep_obs"][x.to_string()] };
            s["pass_rate"].as_f64().unwrap_or(f64::NAN)
        };
        runs.iter().map(value).sum::<f64>() / runs.len() as f64
    };
    let root = canvas(path)?;
    let mut chart = chart_on(&root, 60, -0.3f64..3.3f64, 0f64..1f64)?;
    book_mesh(&mut chart)
        .x_desc("tool observations the policy sees before each call (keep_obs)")
        .y_desc("pass rate on the train tasks")
        .x_labels(4)
        .x_label_formatter(&|x| match x.round() as i64 { 3 => "all".to_string(), k => k.to_string() })
        .y_label_formatter(&|y| format!("{y:.1}"))
        .draw()?;
    for (label, variant, color) in series {
        let points: Vec<(f64, f64)> = (0..4).map(|x| (x as f64, pass(variant, x))).collect();
        println!("{label}: {points:.3?}");
        draw_line(&mut chart, points.clone(), Stroke::Solid, color.stroke_width(2), label)?;
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, LEGEND)?;
    root.present()?;
    Ok(())
}

/// Chapter 11: per GRPO step, the mean over the `reward_hacking` lab's seeds of the public
/// pass, hidden pass and exploit share under the public-test reward, and the hidden pass under
/// the hidden-test reward (read from `labs/results/reward_hacking.json`).
fn reward_hacking(path: &Path) -> Result<()> {
    let lab = lab_results("reward_hacking")?;
    let runs = lab["runs"].as_array().ok_or("reward_hacking.json: no runs")?;
    let steps = lab["steps"].as_u64().ok_or("reward_hacking.json: no steps")? as usize;
    // mean over seeds of one dashboard field of one arm, per step
    let curve = |arm: &str, key: &str| -> Vec<(f64, f64)> {
        let of_arm: Vec<&serde_json::Value> = runs.iter().filter(|r| r["arm"] == arm).collect();
        (0..steps)
            .map(|s| {
                let sum: f64 = of_arm.iter().map(|r| r["steps"][s][key].as_f64().unwrap_or(0.0)).sum();
                ((s + 1) as f64, sum / of_arm.len().max(1) as f64)
            })
            .collect()
    };
    let lines = [
        ("public reward: public-test pass", curve("public", "public"), ORANGE, false),
        ("public reward: hidden-test pass", curve("public", "hidden"), PURPLE, false),
        ("public reward: exploit share", curve("public", "exploit"), PINK, false),
        ("hidden reward: hidden-test pass", curve("hidden", "hidden"), GREEN, true),
    ];
    let root = canvas(path)?;
    let mut chart = chart_on(&root, 60, 0.5f64..steps as f64 + 0.5, 0f64..1f64)?;
    book_mesh(&mut chart)
        .x_desc("GRPO step (128 episodes each)")
        .y_desc("share of sampled episodes")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .draw()?;
    for (label, points, color, dashed) in lines {
        let style = color.stroke_width(2);
        if dashed {
            draw_line(&mut chart, points.iter().copied(), Stroke::Dashed(6, 4), style, label)?;
        } else {
            draw_line(&mut chart, points.iter().copied(), Stroke::Solid, style, label)?;
        }
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 2, color.filled())))?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, LEGEND)?;
    root.present()?;
    Ok(())
}

/// Chapter 10: the policy's entropy (mean -log pi of its sampled tokens) per GRPO step for
/// each regularizer and each seed of the `regularizers` lab (read from its committed results,
/// labs/results/regularizers.json), on a log scale: one seed's entropy bonus runs away.
fn regularizer_entropy(path: &Path) -> Result<()> {
    let lab = lab_results("regularizers")?;
    let runs = lab["runs"].as_array().ok_or("regularizers.json: no runs")?;
    let arms = [
        ("none", "no regularizer", RGBColor(0x33, 0x33, 0x33)),
        ("entropy_0.001", "entropy bonus 0.001", RGBColor(0xfd, 0xb8, 0x63)),
        ("entropy_0.01", "entropy bonus 0.01", RGBColor(0xf1, 0x69, 0x13)),
        ("entropy", "entropy bonus 0.05", RGBColor(0xa6, 0x36, 0x03)),
        ("k3_loss", "k3 in the loss, beta 0.1", PURPLE),
        ("k1_reward", "k1 in the reward, beta 0.1", GREEN),
        ("k1_reward_0.5", "k1 in the reward, beta 0.5", RGBColor(0x66, 0xc2, 0xa5)),
    ];
    let steps = lab["steps"].as_u64().ok_or("regularizers.json: no steps")? as f64;
    let root = canvas(path)?;
    // plotters puts log-scale ticks at powers of ten only (here just 1): name the ones we need
    let ticks = vec![0.03, 0.1, 0.3, 1.0, 3.0];
    let y = (0.03f64..8.0f64).log_scale().with_key_points(ticks);
    let mut chart = chart_on(&root, 60, 0.5f64..steps + 0.5, y)?;
    book_mesh(&mut chart)
        .x_desc("GRPO step (128 episodes each); one line per seed")
        .y_desc("entropy per policy token (nats, log scale)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.2}"))
        .draw()?;
    for (variant, label, color) in arms {
        for (i, run) in runs.iter().filter(|r| r["variant"] == variant).enumerate() {
            let curve = run["entropy"].as_array().ok_or("regularizers.json: no entropy")?;
            let points = curve.iter().enumerate().map(|(s, x)| ((s + 1) as f64, x.as_f64().unwrap()));
            let series = chart.draw_series(LineSeries::new(points, color.stroke_width(2)))?;
            if i == 0 {
                series.label(label).legend(legend_line(color.stroke_width(2)));
            }
        }
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, LEGEND)?;
    root.present()?;
    Ok(())
}

/// Chapter 10: the KL to the base agent (mean k1 per sampled policy token) at each GRPO step of
/// the regularizers lab, the mean of the three seeds in 5-step windows, for no regularizer and
/// the five KL penalties (the entropy bonuses are figure 10.1's subject).
fn regularizer_kl(path: &Path) -> Result<()> {
    const WINDOW: usize = 5;
    let lab = lab_results("regularizers")?;
    let runs = lab["runs"].as_array().ok_or("regularizers.json: no runs")?;
    let arms = [
        ("none", "no regularizer", RGBColor(0x33, 0x33, 0x33)),
        ("k3_loss", "k3 in the loss, beta 0.1", PURPLE),
        ("k3plus_loss", "k3+ in the loss, beta 0.1", PINK),
        ("k2_loss", "k2 in the loss, beta 0.1", RGBColor(0xe6, 0xab, 0x02)),
        ("k1_reward", "k1 in the reward, beta 0.1", GREEN),
        ("k1_reward_0.5", "k1 in the reward, beta 0.5", RGBColor(0x66, 0xc2, 0xa5)),
    ];
    let steps = lab["steps"].as_u64().ok_or("regularizers.json: no steps")? as f64;
    // the mean over an arm's seeds, window by window: (window's last step, KL)
    let curve = |variant: &str| -> Vec<(f64, f64)> {
        let seeds: Vec<Vec<f64>> = runs
            .iter()
            .filter(|r| r["variant"] == variant)
            .map(|r| r["kl"].as_array().map_or(vec![], |a| a.iter().filter_map(|x| x.as_f64()).collect()))
            .collect();
        let len = seeds.iter().map(|s| s.len()).min().unwrap_or(0);
        (0..len / WINDOW)
            .map(|w| {
                let cells = seeds.iter().flat_map(|s| &s[w * WINDOW..(w + 1) * WINDOW]);
                (((w + 1) * WINDOW) as f64, cells.sum::<f64>() / (seeds.len() * WINDOW) as f64)
            })
            .collect()
    };
    let root = canvas(path)?;
    let ticks = vec![0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0];
    // room below the curves for the legend
    let y = (0.0002f64..1.5f64).log_scale().with_key_points(ticks);
    let mut chart = chart_on(&root, 60, 0f64..steps + 1.0, y)?;
    book_mesh(&mut chart)
        .x_desc("GRPO step (128 episodes each); mean of 3 seeds, 5-step windows")
        .y_desc("KL to the base (nats per token)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y}"))
        .draw()?;
    for (variant, label, color) in arms {
        let style = color.stroke_width(2);
        chart.draw_series(LineSeries::new(curve(variant), style))?.label(label).legend(legend_line(style));
    }
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight, LEGEND)?;
    root.present()?;
    Ok(())
}

/// Chapter 13: throughput against the mean staleness of the trained episodes' first tokens,
/// one point per admission bound (0 = synchronous, 1 = one-step-off, ..., 8), for 64 and 128
/// rollout slots, with and without interruption: `simulate_pipeline` on the chapter's 4,096
/// simulated episode durations (seed 13) and settings.
fn pipeline_tradeoff(path: &Path) -> Result<()> {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
    let durations = arl::agent_episode_durations(4096, Default::default(), &mut rng);
    let base = arl::PipelineOptions {
        slots: 64,
        batch_size: 64,
        train_time: 60.0,
        sync_time: 10.0,
        max_staleness: 0,
        interrupt: false,
        steps: 40,
    };
    let series = [
        ("64 slots", 64, false, GREEN),
        ("64 slots, interrupt (last token)", 64, true, GREEN),
        ("128 slots", 128, false, PURPLE),
        ("128 slots, interrupt (last token)", 128, true, PURPLE),
    ];
    let root = canvas(path)?;
    let mut chart = chart_on(&root, 60, 0f64..7f64, 0f64..1f64)?;
    book_mesh(&mut chart)
        .x_desc("mean staleness of the trained episodes (trainer steps)")
        .y_desc("episodes trained per second")
        .y_label_formatter(&|y| format!("{y:.1}"))
        .draw()?;
    for (label, slots, interrupt, color) in series {
        let points: Vec<(f64, f64)> = (0..=8)
            .map(|max_staleness| {
                let r = arl::simulate_pipeline(&durations, arl::PipelineOptions { slots, max_staleness, interrupt, ..base });
                let staleness = if interrupt { &r.staleness_last } else { &r.staleness_first };
                (staleness.iter().sum::<usize>() as f64 / staleness.len() as f64, r.throughput)
            })
            .collect();
        println!("{label}: {points:.3?}");
        let style = color.stroke_width(2);
        if interrupt {
            draw_line(&mut chart, points.clone(), Stroke::Dashed(6, 4), style, label)?;
        } else {
            chart.draw_series(LineSeries::new(points.clone(), style))?.label(label).legend(legend_line(style));
        }
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight, LEGEND)?;
    root.present()?;
    Ok(())
}

/// Chapter 18: four dashboard metrics per step (mean over the `debugging` lab's seeds, read
/// from labs/results/debugging.json) for a clean run and two faults: the sampled pass rate, the
/// KL to the reference, the largest ratio, and the held-out pass rate every 10 steps.
fn debugging_dashboard(path: &Path) -> Result<()> {
    let lab = lab_results("debugging")?;
    let runs = lab["runs"].as_array().ok_or("debugging.json: no runs")?;
    let steps = lab["steps"].as_u64().ok_or("debugging.json: no steps")? as usize;
    // mean over seeds of one field of one arm, at the steps where it is a number; an update's
    // fields only on steps that updated (a step whose groups all lack signal logs zeros)
    let curve = |arm: &str, key: &str| -> Vec<(f64, f64)> {
        let of_update = matches!(key, "kl_ref" | "ratio_max");
        (0..steps)
            .filter_map(|s| {
                let row = |r: &serde_json::Value| r["arms"][arm]["steps"][s].clone();
                let updated = |r: &&serde_json::Value| {
                    !of_update || row(r)["grad_norm"].as_f64().unwrap_or(0.0) > 0.0
                };
                let values: Vec<f64> =
                    runs.iter().filter(updated).filter_map(|r| row(r)[key].as_f64()).collect();
                (!values.is_empty())
                    .then(|| ((s + 1) as f64, values.iter().sum::<f64>() / values.len() as f64))
            })
            .collect()
    };
    let arms = [
        ("clean", "no fault", GREEN),
        ("ref_is_policy", "RefIsPolicy", PURPLE),
        ("loss_sign_flipped", "LossSignFlipped", ORANGE),
    ];
    let root = SVGBackend::new(path, (SIZE.0, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((2, 2));
    let specs = [
        ("sampled pass rate", "pass_rate", 0f64..1f64),
        ("KL to the reference", "kl_ref", 0f64..1.5f64),
        ("largest ratio", "ratio_max", 0f64..12f64),
        ("held-out pass rate", "eval_pass", 0f64..1f64),
    ];
    for (i, (panel, (title, key, range))) in panels.iter().zip(specs).enumerate() {
        let mut chart = ChartBuilder::on(panel)
            .caption(title, (FONT, CAPTION))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(52)
            .build_cartesian_2d(0.5f64..steps as f64 + 0.5, range)?;
        book_mesh(&mut chart)
            .x_desc("step")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.1}"))
            .draw()?;
        for (arm, label, color) in arms {
            let points = curve(arm, key);
            let style = color.stroke_width(2);
            let series = chart.draw_series(LineSeries::new(points.iter().copied(), style))?;
            if i == 0 {
                series.label(label).legend(legend_line(style));
            }
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 2, color.filled())))?;
        }
        if i == 0 {
            draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, LEGEND)?;
        }
    }
    root.present()?;
    Ok(())
}

/// Chapter 19: the capstone lab's three arms over 300 steps, means over seeds in 10-step
/// windows (sampled pass rate, episodes the update kept, KL from the base agent), and the
/// recipe's three seeds apart.
fn capstone_curves(path: &Path) -> Result<()> {
    let lab = lab_results("capstone")?;
    let runs = lab["runs"].as_array().ok_or("capstone.json: no runs")?;
    let steps = lab["steps"].as_u64().ok_or("capstone.json: no steps")? as usize;
    const WINDOW: usize = 10;
    // one run's series in windows of WINDOW steps: (window's last step, mean)
    let windows = |r: &serde_json::Value, key: &str| -> Vec<(f64, f64)> {
        let xs: Vec<f64> = r[key].as_array().map_or(vec![], |a| a.iter().filter_map(|x| x.as_f64()).collect());
        xs.chunks(WINDOW).enumerate().map(|(i, c)| (((i + 1) * WINDOW) as f64, c.iter().sum::<f64>() / c.len() as f64)).collect()
    };
    // the mean over an arm's seeds of its windowed series
    let curve = |arm: &str, key: &str| -> Vec<(f64, f64)> {
        let per_seed: Vec<Vec<(f64, f64)>> = runs.iter().filter(|r| r["arm"] == arm).map(|r| windows(r, key)).collect();
        let n = per_seed.len().max(1) as f64;
        (0..per_seed.first().map_or(0, |s| s.len()))
            .map(|i| (per_seed[0][i].0, per_seed.iter().map(|s| s[i].1).sum::<f64>() / n))
            .collect()
    };
    let arms = [
        ("recipe", "recipe", GREEN),
        ("keep-all-groups", "keep all groups", PURPLE),
        ("kl-reward", "k1 in reward, 0.1", ORANGE),
    ];
    let seed_colors = [GREEN, RGBColor(0x66, 0x66, 0x66), PINK];
    let root = SVGBackend::new(path, (SIZE.0, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((2, 2));
    let specs = [
        ("sampled pass rate", "sampled_pass", 0f64..1f64),
        ("episodes kept of 128", "kept", 0f64..136f64),
        ("KL from the base agent", "kl", 0f64..1f64),
        ("recipe, seed by seed", "sampled_pass", 0f64..1f64),
    ];
    for (i, (panel, (title, key, range))) in panels.iter().zip(specs).enumerate() {
        let mut chart = ChartBuilder::on(panel)
            .caption(title, (FONT, CAPTION))
            .margin(10)
            .margin_right(24)
            .x_label_area_size(40)
            .y_label_area_size(52)
            .build_cartesian_2d(0f64..steps as f64, range.clone())?;
        let big = range.end > 10.0;
        book_mesh(&mut chart)
            .x_desc("step")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| if big { format!("{y:.0}") } else { format!("{y:.1}") })
            .draw()?;
        if i < 3 {
            for (arm, label, color) in arms {
                let style = color.stroke_width(2);
                let series = chart.draw_series(LineSeries::new(curve(arm, key), style))?;
                if i == 0 {
                    series.label(label).legend(legend_line(style));
                }
            }
            if i == 0 {
                draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, LEGEND)?;
            }
        } else {
            let recipe = runs.iter().filter(|r| r["arm"] == "recipe");
            for (r, color) in recipe.zip(seed_colors) {
                let style = color.stroke_width(2);
                let label = format!("seed {}", r["seed"]);
                chart.draw_series(LineSeries::new(windows(r, key), style))?.label(label).legend(legend_line(style));
            }
            draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, LEGEND)?;
        }
    }
    root.present()?;
    Ok(())
}

/// Each of `lines` must appear in the chapter `file` (under book/src/) as printed: a figure
/// that re-runs a chapter's code draws that chapter's run only if its numbers are the ones the
/// chapter prints (and the checker checks), so a drift fails here instead of drawing silently.
fn printed_in_chapter(file: &str, lines: &[String]) -> Result<()> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/src").join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    match lines.iter().find(|line| !text.contains(line.as_str())) {
        Some(line) => Err(format!("{file} does not print {line:?}: the figure's run is not the chapter's").into()),
        None => Ok(()),
    }
}

/// Chapter 8 §8.4: eight epochs of `ppo_update` on §8.3's batch, with the default clip and
/// with none: the approximate KL to pi_old and the largest ratio seen at each epoch's start.
fn ppo_epoch_drift(path: &Path) -> Result<()> {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    let (train, tok) = book_gym();
    let base = arl::make_base_agent(&tok, &train, arl::BaseAgentOptions::default());
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let opts = arl::RolloutOptions::default();
    let trajs = arl::sample_random_tasks(&base, &train, &tok, 32, opts, &mut rng);
    let batch = arl::collate(&trajs, arl::PAD_ID);
    let adv = &batch.rewards - batch.rewards.mean(Kind::Float); // [B]
    let epoch_stats = |policy: arl::PpoOptions| {
        let model = base.clone();
        let mut opt = arl::FlatAdam::new(&model.vs, 1e-3);
        let opts = arl::PpoUpdateOptions { policy, epochs: 8, ..Default::default() };
        arl::ppo_update(&model, &mut opt, &batch, &adv, opts, &mut ChaCha8Rng::seed_from_u64(0))
    };
    let no_clip = arl::PpoOptions { clip_low: 1e9, clip_high: 1e9, ..Default::default() };
    let (clipped, unclipped) = (epoch_stats(Default::default()), epoch_stats(no_clip));
    // the rows §8.4 prints, formatted as it formats them
    let rows: Vec<String> = clipped
        .iter()
        .zip(&unclipped)
        .enumerate()
        .map(|(e, (c, u))| {
            format!(
                "{:>5} | {:>18.3} {:>10.5} {:>10.3} | {:>18.5} {:>10.3}",
                e + 1, c.clip_fraction, c.approx_kl, c.ratio_max, u.approx_kl, u.ratio_max
            )
        })
        .collect();
    printed_in_chapter("08-ppo.md", &rows)?;
    let (green, purple) = (GREEN, PURPLE);
    let root = canvas(path)?;
    let areas = root.split_evenly((1, 2));
    let panels: [(&str, f64, fn(&arl::PpoStats) -> f64); 2] = [
        ("(a) approx. KL to π_old", 0.16, |s| s.approx_kl),
        ("(b) largest ratio π_θ / π_old", 2.6, |s| s.ratio_max),
    ];
    for (i, ((title, top, value), area)) in panels.into_iter().zip(areas.iter()).enumerate() {
        let bottom = if i == 0 { 0.0 } else { 0.9 };
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .caption(title, (FONT, CAPTION))
            .x_label_area_size(52)
            .y_label_area_size(64)
            .build_cartesian_2d(0.5f64..8.5f64, bottom..top)?;
        book_mesh(&mut chart)
            .x_labels(8)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| if i == 0 { format!("{y:.2}") } else { format!("{y:.1}") })
            .x_desc("epoch (measured before its step)")
            .draw()?;
        if i == 1 {
            // the clip's upper edge, 1 + ε
            let edge = [(0.5, 1.2), (8.5, 1.2)];
            draw_line(&mut chart, edge, Stroke::Dashed(8, 5), BLACK.mix(0.5).stroke_width(2), "1 + ε = 1.2")?;
        }
        for (stats, label, color) in [(&clipped, "clip ε = 0.2", green), (&unclipped, "no clip", purple)] {
            let points: Vec<(f64, f64)> = stats.iter().enumerate().map(|(e, s)| ((e + 1) as f64, value(s))).collect();
            draw_line(&mut chart, points.clone(), Stroke::Solid, color.stroke_width(3), label)?;
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, LEGEND)?;
    }
    root.present()?;
    Ok(())
}

/// Chapter 9 §9.4: the chapter's 35-step GRPO run, step by step: the pass rate of each step's
/// 128 sampled episodes, the 50-task held-out probe every 10 steps (Wilson 95% bars), and the
/// final evaluation on 200 held-out tasks beside the base agent's, over the read-then-random
/// floor (task-bootstrap 95% bars, the chapter's own intervals).
fn grpo_run(path: &Path) -> Result<()> {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    let (train, heldout, tok) = book_splits();
    let cfg = arl::RLConfig::default();
    let base = arl::make_rl_base(&tok, &train, 0);
    let eval = |model: &arl::TinyAgent, tasks: &[arl::Task], n: usize, seed: u64| {
        let (cfg, mut rng) = arl::EvalOptions { n_samples: n, seed, ..Default::default() }.prepare(&cfg);
        let trajs = arl::sample_groups(model, &arl::make_env, tasks, &tok, &cfg, &mut rng);
        arl::per_task_pass_rates(&trajs, n)
    };
    let (base_train, base_heldout) = (eval(&base, &train[..100], 2, 11), eval(&base, &heldout, 2, 12));
    let model = base.clone();
    let run_cfg = arl::RLConfig { lr: 3e-3, ..cfg.clone() };
    let opts = arl::TrainOptions { eval_tasks: Some(&heldout[..50]), eval_every: 10, ..Default::default() };
    let history = arl::train_rl(&model, &train, &tok, &run_cfg, 35, opts);
    let trained_train = eval(&model, &train[..100], 2, 11);
    let trained_heldout = eval(&model, &heldout, 2, 12);
    let floor = arl::task_pass_rates(&heldout, 2, &arl::BugFixEnvOptions::default(), &mut |_, seed| {
        arl::read_then_random(seed)
    });
    // the chapter's intervals, drawn in the chapter's order from its generator
    let mut boot = ChaCha8Rng::seed_from_u64(7);
    let mut ci = |rates: &[f64]| arl::bootstrap_ci(&[rates.to_vec()], &mut boot);
    let floor_ci = ci(&floor);
    let (_, base_ci) = (ci(&base_train), ci(&base_heldout));
    let (_, grpo_ci) = (ci(&trained_train), ci(&trained_heldout));
    let probes: Vec<(usize, f64)> =
        history.iter().filter_map(|r| r.eval.map(|e| (r.step + 1, e.pass_rate))).collect();
    printed_in_chapter(
        "09-grpo.md",
        &[
            format!("read-then-random floor                                  {}", arl::format_ci(floor_ci, false)),
            format!("    {}\nGRPO ", arl::format_ci(base_ci, false)),
            format!("    {}\nheld-out gain", arl::format_ci(grpo_ci, false)),
            format!("  35         {:.3}", history[34].sampled.pass_rate),
            format!("  {:.3}\n", probes.last().ok_or("no probe")?.1),
        ],
    )?;
    let (grey, blue, black, red) =
        (RGBColor(0x88, 0x88, 0x88), RGBColor(0x1f, 0x77, 0xb4), BLACK, ORANGE);
    let root = canvas(path)?;
    let mut chart = chart_on(&root, 60, -1.5f64..37.5f64, 0f64..0.8f64)?;
    book_mesh(&mut chart)
        .x_desc("GRPO step (16 tasks × 8 episodes)")
        .y_desc("pass rate")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .draw()?;
    let floor_line = [(-1.5, floor_ci.0), (37.5, floor_ci.0)];
    draw_line(&mut chart, floor_line, Stroke::Dashed(8, 5), black.mix(0.6).stroke_width(2), "read-then-random floor, held-out")?;
    let sampled = history.iter().map(|r| ((r.step + 1) as f64, r.sampled.pass_rate));
    draw_line(&mut chart, sampled, Stroke::Solid, grey.stroke_width(2), "each step's 128 sampled episodes (train)")?;
    let bar = |x: f64, (low, high): (f64, f64), color: RGBColor| {
        PathElement::new(vec![(x, low), (x, high)], color.stroke_width(2))
    };
    chart.draw_series(probes.iter().map(|&(step, p)| bar(step as f64, arl::wilson_interval((p * 50.0).round() as usize, 50, 1.96), blue)))?;
    chart
        .draw_series(probes.iter().map(|&(step, p)| Circle::new((step as f64, p), 5, blue.filled())))?
        .label("held-out probe, 50 tasks (Wilson 95%)")
        .legend(|(x, y)| Circle::new((x + 11, y), 5, blue.filled()));
    for (x, (mean, low, high), color, label) in
        [(0.0, base_ci, black, "base agent"), (36.5, grpo_ci, red, "after 35 steps")]
    {
        chart.draw_series(std::iter::once(bar(x, (low, high), color)))?;
        chart
            .draw_series(std::iter::once(TriangleMarker::new((x, mean), 7, color.filled())))?
            .label(format!("{label}, 200 held-out tasks (bootstrap 95%)"))
            .legend(move |(x, y)| TriangleMarker::new((x + 11, y), 7, color.filled()));
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, LEGEND)?;
    root.present()?;
    Ok(())
}

/// Chapter 12 §12.1: the two 6-step runs from the RL base agent, without a step penalty and
/// with p = 0.1: the sampled pass rate and the calls per episode at every step.
fn step_penalty_collapse(path: &Path) -> Result<()> {
    use std::sync::Arc;
    let (train, tok) = book_gym();
    let base = arl::make_rl_base(&tok, &train, 0);
    let cfg = arl::RLConfig::default();
    let penalized = |p: f64| -> arl::RewardFn {
        Arc::new(move |info: &arl::EpisodeInfo| arl::hidden_reward(info) - p * info.turns as f64)
    };
    let runs: Vec<(f64, Vec<arl::StepRecord>)> = [0.0, 0.1]
        .into_iter()
        .map(|p| {
            let model = base.clone();
            let run_cfg = arl::RLConfig { reward: penalized(p), tasks_per_step: 8, ..cfg.clone() };
            (p, arl::train_rl(&model, &train, &tok, &run_cfg, 6, Default::default()))
        })
        .collect();
    // §12.1 prints every second step, formatted so
    let rows: Vec<String> = runs
        .iter()
        .flat_map(|(p, history)| {
            history.iter().filter(|r| r.step % 2 == 1).map(move |r| {
                let s = &r.sampled;
                format!("{p:>7.2}  {:>4}  {:>12.3}  {:>5.2}  {:>4.1}  {:>4}", r.step + 1, s.pass_rate, s.turns, s.length, r.kept)
            })
        })
        .collect();
    printed_in_chapter("12-multi-turn.md", &rows)?;
    let colors = [GREEN, ORANGE];
    let root = canvas(path)?;
    let areas = root.split_evenly((1, 2));
    let panels: [(&str, f64, fn(&arl::StepRecord) -> f64); 2] = [
        ("(a) sampled pass rate", 0.5, |r| r.sampled.pass_rate),
        ("(b) calls per episode", 5.0, |r| r.sampled.turns),
    ];
    for (i, ((title, top, value), area)) in panels.into_iter().zip(areas.iter()).enumerate() {
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .caption(title, (FONT, CAPTION))
            .x_label_area_size(52)
            .y_label_area_size(56)
            .build_cartesian_2d(0.5f64..6.5f64, 0f64..top)?;
        book_mesh(&mut chart)
            .x_labels(6)
            .y_labels(6)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| if i == 0 { format!("{y:.1}") } else { format!("{y:.0}") })
            .x_desc("GRPO step (8 tasks × 8 episodes)")
            .draw()?;
        for ((p, history), color) in runs.iter().zip(colors) {
            let points: Vec<(f64, f64)> = history.iter().map(|r| ((r.step + 1) as f64, value(r))).collect();
            let label = if *p == 0.0 { "no penalty".to_string() } else { format!("step penalty p = {p}") };
            draw_line(&mut chart, points.clone(), Stroke::Solid, color.stroke_width(3), label)?;
            chart.draw_series(points.iter().map(|&pt| Circle::new(pt, 4, color.filled())))?;
        }
        if i == 0 {
            draw_legend(&mut chart, SeriesLabelPosition::UpperRight, LEGEND)?; // one for both panels
        }
    }
    root.present()?;
    Ok(())
}

/// Chapter 1 §1.4: exact gradient ascent on J(θ) = Σ_k softmax(θ)_k r_k over the six candidate
/// edits, with the hidden-test reward and with the public-test one: J and the solve rate
/// under the hidden tests at every step. The rewards are the r_public and r_hidden columns
/// the chapter prints, and the ascent is the chapter's `ascend` (40 steps at rate 2).
fn public_vs_hidden(path: &Path) -> Result<()> {
    use tch::Tensor;
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/src/01-introduction.md");
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    // the rows under the header `edit ... r_public  r_hidden`: the last two numbers of each
    let rows: Vec<(f32, f32)> = text
        .lines()
        .skip_while(|l| !(l.starts_with("edit ") && l.ends_with("r_public  r_hidden")))
        .skip(1)
        .take_while(|l| !l.trim().is_empty() && !l.starts_with("loop forever,"))
        .map(|l| {
            let n: Vec<f32> = l.split_whitespace().rev().take(2).filter_map(|x| x.parse().ok()).collect();
            (n[1], n[0])
        })
        .collect();
    if rows.len() != 6 {
        return Err(format!("01-introduction.md: found {} candidate rows, not 6", rows.len()).into());
    }
    let r_public: Vec<f32> = rows.iter().map(|r| r.0).collect();
    let r_hidden: Vec<f32> = rows.iter().map(|r| r.1).collect();
    let rh = Tensor::from_slice(&r_hidden);
    // the chapter's `ascend`, keeping (J, solved) at every step
    let ascend = |reward: &[f32]| -> Vec<(f64, f64)> {
        let r = Tensor::from_slice(reward); // [K]
        let mut theta = Tensor::zeros([6], (Kind::Float, tch::Device::Cpu)).set_requires_grad(true);
        let mut curve = vec![];
        for step in 0..=40 {
            let pi = theta.softmax(-1, Kind::Float); // [K]
            let j = (&pi * &r).sum(Kind::Float);
            curve.push((j.double_value(&[]), (&pi * &rh).sum(Kind::Float).double_value(&[])));
            if step == 40 {
                break;
            }
            let grad = Tensor::run_backward(&[&j], &[&theta], false, false).pop().unwrap();
            tch::no_grad(|| theta += grad * 2.0);
        }
        curve
    };
    let (hidden, public) = (ascend(&r_hidden), ascend(&r_public));
    let printed: Vec<String> = [&hidden, &public]
        .iter()
        .flat_map(|c| c.iter().enumerate().step_by(10))
        .map(|(step, (j, s))| format!("  step {step:>2}: J = {j:.3}  solved (hidden tests) = {s:.3}"))
        .collect();
    printed_in_chapter("01-introduction.md", &printed)?;
    let (green, orange) = (GREEN, ORANGE);
    let root = canvas(path)?;
    let mut chart = chart_on(&root, 60, 0f64..40f64, 0.3f64..1.0f64)?;
    book_mesh(&mut chart)
        .x_desc("gradient-ascent step")
        .y_desc("J, or the hidden-test solve rate")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .draw()?;
    let series = |c: &[(f64, f64)], pick: fn(&(f64, f64)) -> f64| -> Vec<(f64, f64)> {
        c.iter().enumerate().map(|(k, p)| (k as f64, pick(p))).collect()
    };
    let style = |color: RGBColor| color.stroke_width(3);
    draw_line(&mut chart, series(&hidden, |p| p.0), Stroke::Solid, style(green), "hidden-test reward: J = solve rate")?;
    draw_line(&mut chart, series(&public, |p| p.0), Stroke::Solid, style(orange), "public-test reward: J")?;
    draw_line(&mut chart, series(&public, |p| p.1), Stroke::Dashed(8, 5), style(orange), "public-test reward: hidden-test solve rate")?;
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight, LEGEND)?;
    root.present()?;
    Ok(())
}
