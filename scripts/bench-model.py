"""PyTorch twin of the book's TinyAgent, and the driver of `scripts/bench-model.sh`.

    bench-model.py check DIR                 logits, rollouts and one update equal to Rust's?
    bench-model.py serve DIR THREADS         answer `OP REPS` lines with seconds per call
    bench-model.py drive DIR RUST_BIN [--rounds N] [--threads 1,2] [--quick] [--patience S]
                                             [--only OP,OP]  (ops whose names contain one;
                                             --help says more)

On a shared machine a Rust/Python pair during which other processes used more than 10% of
a core is thrown away and re-run once the machine is quiet; after S seconds of such waiting
per thread count (default 900) pairs are kept and counted as taken under load.

The twin is chapter 03's TinyAgent op for op: pre-norm blocks, LayerNorm (eps 1e-5),
linear layers without bias, GELU (exact, "none"), learned positions, fused attention
(scaled_dot_product_attention, is_causal for the full forward, a boolean mask for the
cached decode step), the head as a matmul with W^T; `extend` is KvCache decoding with
ragged rows, per-row positions and a valid-slot mask, line for line. `update` is chapter 09's
`rl_update` at its defaults (pi_old in micro-batches, two minibatches in the order the Rust
shuffle wrote, length-sorted micro-batches with losses scaled by their token share, global
grad-norm clip, Adam), checked by the weights after one update. It loads the weights
the Rust side wrote (safetensors, read here without extra packages). Op names and the
rollout schedule are those of scripts/bench-model/src/main.rs.
"""

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CALL, TURNS, ID_RANGE = 8, 6, 128
CONFIGS = {  # name -> (V, max_len, D, heads, layers, mlp); "book" is chapter 05's TinyAgent
    "book": (294, 256, 32, 2, 2, 64),
    "default": (128, 256, 64, 4, 2, 256),
}


def load_safetensors(path):
    data = open(path, "rb").read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    dtypes = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        buf = bytearray(data[8 + n + start : 8 + n + end])
        out[name] = torch.frombuffer(buf, dtype=dtypes[meta["dtype"]]).view(meta["shape"]).clone()
    return out


class Block(torch.nn.Module):
    def __init__(self, d, heads, mlp):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d, eps=1e-5), torch.nn.LayerNorm(d, eps=1e-5)
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.proj = torch.nn.Linear(d, d, bias=False)
        self.fc1 = torch.nn.Linear(d, mlp, bias=False)
        self.fc2 = torch.nn.Linear(mlp, d, bias=False)
        self.heads = heads

    def forward(self, x, allowed=None, past=None):
        b, t, d = x.shape
        heads = lambda m: m.view(b, t, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = self.qkv(self.ln1(x)).split(d, -1)
        q, k, v = heads(q), heads(k), heads(v)  # [B, H, T, Dh]
        if past is not None:
            k = torch.cat([past[0], k], 2)
            v = torch.cat([past[1], v], 2)
            past[0], past[1] = k, v
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, is_causal=allowed is None)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="none"))


class TinyAgent(torch.nn.Module):
    def __init__(self, name):
        super().__init__()
        v, max_len, d, heads, layers, mlp = CONFIGS[name]
        self.v, self.max_len, self.d, self.h = v, max_len, d, heads
        self.tok_emb = torch.nn.Embedding(v, d)
        self.pos_emb = torch.nn.Embedding(max_len, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads, mlp) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(d, eps=1e-5)
        self.head = torch.nn.Linear(d, v, bias=False)

    def forward(self, ids, positions=None, allowed=None):  # [B, T] -> [B, T, V]
        t = ids.shape[1]
        x = self.tok_emb(ids) + self.pos_emb(torch.arange(t) if positions is None else positions)
        for block in self.blocks:
            x = block(x, allowed)
        return self.ln_f(x).matmul(self.head.weight.t())

    def extend(self, cache, new):
        """chapter 03's TinyAgent::extend: cache = {"layers": [[k, v]...], "valid", "seen"}."""
        b, t = len(new), max(len(r) for r in new)
        ids, pos, real = [0] * (b * t), [0] * (b * t), [False] * (b * t)
        for r, row in enumerate(new):
            for j in range(t):
                pos[r * t + j] = min(cache["seen"][r] + j, self.max_len - 1)
                ids[r * t + j], real[r * t + j] = (row[j], True) if j < len(row) else (0, False)
            cache["seen"][r] += len(row)
        ids = torch.tensor(ids).view(b, t)
        pos = torch.tensor(pos).view(b, t)
        real = torch.tensor(real).view(b, t)
        causal = torch.ones(t, t).tril(0).to(torch.bool)
        itself = torch.eye(t, dtype=torch.bool)
        to_new = causal.logical_and(real.unsqueeze(1)).logical_or(itself)  # [B, T, T]
        s = cache["valid"].shape[1]
        to_old = cache["valid"].unsqueeze(1).expand(b, t, s)
        allowed = torch.cat([to_old, to_new], 2).unsqueeze(1)  # [B, 1, T, S + T]
        x = self.tok_emb(ids) + self.pos_emb(pos)
        for block, kv in zip(self.blocks, cache["layers"]):
            x = block(x, allowed, kv)
        cache["valid"] = torch.cat([cache["valid"], real], 1)
        last = torch.tensor([len(r) - 1 for r in new]).view(b, 1, 1)
        x_last = x.gather(1, last.expand(b, 1, self.d))
        return self.ln_f(x_last.squeeze(1)).matmul(self.head.weight.t())  # [B, V]


def new_cache(model, rows):
    empty = lambda: torch.zeros(rows, model.h, 0, model.d // model.h)  # noqa: E731
    return {
        "layers": [[empty(), empty()] for _ in model.blocks],
        "valid": torch.zeros(rows, 0, dtype=torch.bool),
        "seen": [0] * rows,
    }


def keep_rows(cache, rows):
    index = torch.tensor(rows)
    for kv in cache["layers"]:
        kv[0], kv[1] = kv[0].index_select(0, index), kv[1].index_select(0, index)
    cache["valid"] = cache["valid"].index_select(0, index)
    cache["seen"] = [cache["seen"][r] for r in rows]


def sample_with_uniforms(logits, u):
    """chapter 03's sample_with_uniforms at temperature 1, top_p 1."""
    logp = (logits.to(torch.float32) / 1.0).log_softmax(-1)  # z / temperature, as in Rust
    probs = logp.exp().to(torch.float64)
    cdf = probs.cumsum(-1, dtype=torch.float64)
    u = torch.tensor(u, dtype=torch.float64).unsqueeze(1)
    first_above = cdf.le(u).sum(-1, dtype=torch.int64)
    v = probs.shape[1]
    last_with_mass = (v - 1) - probs.gt(0.0).flip([-1]).to(torch.int64).argmax(-1)
    ids = first_above.minimum(last_with_mass)
    return ids, logp.gather(-1, ids.unsqueeze(-1)).squeeze(-1)


def uniform(step, row):
    return ((step * 1000 + row) * 0.6180339887498949 + 0.5) % 1.0


def read_schedule(path):
    prompts, obs = [], []
    for line in open(path):
        groups = [[int(x) for x in g.split()] for g in line.split("|")]
        prompts.append(groups[0])
        obs.append(groups[1:])
    return prompts, obs


def rollout(model, schedule, cached):
    """The lockstep rollout of main.rs, the same schedule and uniforms."""
    prompts, obs = schedule
    b = len(prompts)
    tokens = [list(p) for p in prompts]
    sampled, logps = [[] for _ in range(b)], [[] for _ in range(b)]
    call_len, turns, seen = [0] * b, [0] * b, [0] * b
    rows = list(range(b))
    cache = new_cache(model, b)
    step = 0
    with torch.no_grad():
        while rows:
            if cached:
                new = [tokens[i][seen[i] :] for i in rows]
                for i in rows:
                    seen[i] = len(tokens[i])
                logits = model.extend(cache, new)
            else:
                length = max(len(tokens[i]) for i in rows)
                flat = [0] * (len(rows) * length)
                for r, i in enumerate(rows):
                    flat[r * length : r * length + len(tokens[i])] = tokens[i]
                n = len(rows)
                ids = torch.tensor(flat).view(n, length)
                last = torch.tensor([len(tokens[i]) - 1 for i in rows]).view(n, 1, 1)
                logits = model(ids).gather(1, last.expand(n, 1, model.v)).squeeze(1)
            ids, lp = sample_with_uniforms(logits, [uniform(step, i) for i in rows])
            ids, lp = ids.tolist(), lp.tolist()
            running = []
            for r, i in enumerate(rows):
                tokens[i].append(ids[r])
                sampled[i].append(ids[r])
                logps[i].append(lp[r])
                call_len[i] += 1
                if call_len[i] == CALL:
                    call_len[i], turns[i] = 0, turns[i] + 1
                    if turns[i] == TURNS:
                        continue
                    tokens[i].extend(obs[i][turns[i] - 1])
                running.append(r)
            if cached and 0 < len(running) < len(rows):
                keep_rows(cache, running)
            rows = [rows[r] for r in running]
            step += 1
    return sampled, logps


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def input_ids(b, t):
    return torch.tensor([((k // t) * 131 + (k % t) * 31 + 7) % ID_RANGE for k in range(b * t)]).view(b, t)


UPDATE_ROWS = 96


def update_len(r):
    """Length of update episode r: the formula of scripts/bench-model/src/main.rs."""
    x = (r * 0.6180339887498949 + 0.25) % 1.0
    return 14 + int(211.0 * x**4 + 0.5)


def update_batch():
    """ids [96, T] (0 after each episode), action mask [96, T-1], advantages [96], lengths."""
    lens = [update_len(r) for r in range(UPDATE_ROWS)]
    t = max(lens)
    ids = torch.zeros(UPDATE_ROWS, t, dtype=torch.long)
    act = torch.zeros(UPDATE_ROWS, t - 1)
    for r, n in enumerate(lens):
        for p in range(n):
            ids[r, p] = (r * 131 + p * 31 + 7) % ID_RANGE
            if p > 0 and p % 5 == 0:
                act[r, p - 1] = 1.0
    adv = torch.tensor([((r % 8) - 3.5) / 2.3 for r in range(UPDATE_ROWS)], dtype=torch.float32)
    return ids, act, adv, lens


def micro_batches(rows, lens, size):
    rows = sorted(rows, key=lambda r: lens[r])  # stable, as Rust's sort_by_key
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def seq_logp(m, ids):
    logits = m(ids[:, :-1])
    return logits.log_softmax(-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def rl_update(m, opt, ids, act, adv, lens, order, size):
    """Chapter 09's rl_update with its defaults: pi_old without gradients, then 2 minibatches of
    the shuffled rows, each as length-sorted micro-batches whose token-mean clipped losses are
    scaled by their share of the minibatch's tokens; grad-norm clip 1.0; one Adam step each."""
    old = torch.zeros_like(act)
    with torch.no_grad():
        for rows in micro_batches(range(len(lens)), lens, size):
            t, idx = max(lens[r] for r in rows), torch.tensor(rows)
            old[idx, : t - 1] = seq_logp(m, ids[idx, :t])
    half = (len(order) + 1) // 2
    for mb in [order[:half], order[half:]]:
        tm = max(lens[r] for r in mb)
        whole = max(act[torch.tensor(mb), : tm - 1].sum().item(), 1.0)
        opt.zero_grad()
        for rows in micro_batches(mb, lens, size):
            t, idx = max(lens[r] for r in rows), torch.tensor(rows)
            mask = act[idx, : t - 1]
            logp = seq_logp(m, ids[idx, :t])
            keep = mask > 0
            log_ratio = torch.where(keep, logp - old[idx, : t - 1], torch.zeros_like(logp)).clamp(-20, 20)
            ratio = log_ratio.exp()
            a = adv[idx].unsqueeze(1).expand_as(ratio)
            unclipped, clipped = -a * ratio, -a * ratio.clamp(0.8, 1.2)
            is_clipped = clipped > unclipped
            per = torch.where(is_clipped, clipped, unclipped)
            n = max(mask.sum().item(), 1.0)
            loss = torch.where(keep, per, torch.zeros_like(per)).sum() / n * (n / whole)
            loss.backward()
            # the statistics rl_update reads back to the host
            (is_clipped.float() * mask).sum().item()
            ((ratio - 1 - log_ratio).detach() * mask).sum().item()
            ratio.detach()[keep].max().item()
            loss.item()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()


def first_fit_decreasing(lens, max_tokens):
    """chapter 14's first_fit_decreasing: (row, first column) per episode, row lengths."""
    order = sorted(range(len(lens)), key=lambda i: -lens[i])  # stable, as Rust's sort_by_key
    used, places = [], [None] * len(lens)
    for i in order:
        row = next((r for r, u in enumerate(used) if u + lens[i] <= max_tokens), None)
        if row is None:
            used.append(0)
            row = len(used) - 1
        places[i] = (row, used[row])
        used[row] += lens[i]
    return places, used


def pack(ids, act, adv, lens, max_tokens):
    """chapter 14's pack_sequences and packed_advantages: ids, positions, segments [R, L], the
    action mask and per-token advantages [R, L-1], and where each episode went."""
    places, used = first_fit_decreasing(lens, max_tokens)
    r, l = len(used), max(used)
    p_ids, pos, seg = (torch.zeros(r, l, dtype=torch.long) for _ in range(3))
    p_act, p_adv = torch.zeros(r, l - 1), torch.zeros(r, l - 1)
    segments = [0] * r
    for i in sorted(range(len(lens)), key=lambda i: places[i]):
        (row, start), n = places[i], lens[i]
        segments[row] += 1
        p_ids[row, start : start + n] = ids[i, :n]
        pos[row, start : start + n] = torch.arange(n)
        seg[row, start : start + n] = segments[row]
        p_act[row, start : start + n - 1] = act[i, : n - 1]
        p_adv[row, start : start + n - 1] = adv[i]
    return p_ids, pos, seg, p_act, p_adv, places


def block_causal_mask(seg):
    """chapter 14's packed_logits mask: segments [R, L] -> allowed [R, 1, L, L], each token
    attending to earlier tokens of its own segment (padding, segment 0, to earlier padding)."""
    l = seg.shape[1]
    same = seg.unsqueeze(2) == seg.unsqueeze(1)  # [R, L, L]
    return same.logical_and(torch.ones(l, l, dtype=torch.bool).tril(0)).unsqueeze(1)


def packed_logp(m, ids, pos, seg):
    """chapter 14's packed_log_probs: a block-diagonal causal mask, per-episode positions."""
    logits = m(ids, pos, block_causal_mask(seg))[:, :-1]
    return logits.log_softmax(-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def packed_update(m, opt, packed, order):
    """chapter 14's packed_update with one epoch of two minibatches of rows (in the order the
    Rust shuffle wrote): pi_old once, the token-mean clipped loss of chapter 08's
    ppo_policy_loss and the statistics it reads back, grad-norm clip 1.0, one Adam step each."""
    ids, pos, seg, act, adv, _ = packed
    with torch.no_grad():
        old = packed_logp(m, ids, pos, seg)
    size = (len(order) + 1) // 2
    for mb in [order[:size], order[size:]]:
        idx = torch.tensor(mb)
        mask = act[idx]
        opt.zero_grad()
        logp = packed_logp(m, ids[idx], pos[idx], seg[idx])
        keep = mask > 0
        a = torch.where(keep, adv[idx], torch.zeros_like(logp))
        log_ratio = torch.where(keep, logp - old[idx], torch.zeros_like(logp)).clamp(-20, 20)
        ratio = log_ratio.exp()
        unclipped, clipped = -a * ratio, -a * ratio.clamp(0.8, 1.2)
        is_clipped = clipped > unclipped
        per = torch.where(is_clipped, clipped, unclipped)
        n = mask.sum().clamp(min=1.0)
        loss = (per * mask).sum() / n
        # the statistics ppo_policy_loss reads back to the host
        loss.item()
        ((is_clipped.float() * mask).sum() / n).item()
        ((ratio - 1 - log_ratio).detach() * mask).sum().item()
        kept = ratio.detach()[keep]
        kept.min().item(), kept.max().item(), ((ratio.detach() * mask).sum() / n).item()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()


def load_model(dir_, name):
    model = TinyAgent(name)
    weights = load_safetensors(f"{dir_}/{name}.safetensors")
    state = {k: v for k, v in weights.items()}
    missing = model.load_state_dict(state, strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys, missing
    return model


def check(dir_):
    torch.set_num_threads(1)  # as the Rust side wrote its logits: bitwise comparable
    ok = True
    for name in CONFIGS:
        model = load_model(dir_, name)
        with torch.no_grad():
            logits = model(input_ids(2, 32))
        rust = load_safetensors(f"{dir_}/{name}.logits.safetensors")["logits"]
        diff = (logits - rust).abs().max().item()
        print(f"check {name:>7}: forward logits [2, 32, {model.v}], max |python - rust| = {diff:.1e}")
        ok &= diff < 1e-5
        for obs in ["short", "long"]:
            schedule = read_schedule(f"{dir_}/schedule-{obs}-B8.txt")
            for algo in ["cached", "uncached"]:
                ids, lp = rollout(model, schedule, algo == "cached")
                r_ids, r_lp = [], []
                for line in open(f"{dir_}/{name}-{obs}-{algo}.rollout.txt"):
                    a, b = line.split("|")
                    r_ids.append([int(x) for x in a.split()])
                    r_lp.append([f32(float(x)) for x in b.split()])
                same = sum(x == y for r1, r2 in zip(ids, r_ids) for x, y in zip(r1, r2))
                total = sum(len(r) for r in r_ids)
                lp_diff = max(abs(x - y) for r1, r2 in zip(lp, r_lp) for x, y in zip(r1, r2))
                print(
                    f"check {name:>7}: rollout B=8 {obs:>5} obs, {algo:>8}: "
                    f"{same}/{total} sampled ids equal, max |logp diff| = {lp_diff:.1e}"
                )
                ok &= same == total
    # one rl_update (micro-batches of 16) from the same weights: the same weights after it?
    import copy

    model = load_model(dir_, "book")
    m = copy.deepcopy(model)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    ids, act, adv, lens = update_batch()
    order = [int(x) for x in open(f"{dir_}/update-order.txt").read().split()]
    rl_update(m, opt, ids, act, adv, lens, order, 16)
    rust = load_safetensors(f"{dir_}/book.updated.safetensors")
    before, after = model.state_dict(), m.state_dict()
    moved = max((p - before[k]).abs().max().item() for k, p in after.items())
    diff = max((p - rust[k]).abs().max().item() for k, p in after.items())
    print(f"check    book: one rl_update on 96 episodes: weights moved up to {moved:.1e}, max |python - rust| = {diff:.1e}")
    ok &= diff < 1e-5 < moved
    # one packed_update (rows of 256) from the same weights: the same packing, the same weights?
    m = copy.deepcopy(model)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    packed = pack(ids, act, adv, lens, 256)
    rust_places = [tuple(int(x) for x in p.split(",")) for p in open(f"{dir_}/packed-places.txt").read().split()]
    same_places = packed[5] == rust_places
    order = [int(x) for x in open(f"{dir_}/packed-order.txt").read().split()]
    packed_update(m, opt, packed, order)
    rust = load_safetensors(f"{dir_}/book.packed.safetensors")
    after = m.state_dict()
    moved = max((p - before[k]).abs().max().item() for k, p in after.items())
    diff = max((p - rust[k]).abs().max().item() for k, p in after.items())
    print(f"check    book: packing into {packed[0].shape[0]} rows of 256 equal to Rust's: {same_places}; "
          f"one packed_update: weights moved up to {moved:.1e}, max |python - rust| = {diff:.1e}")
    ok &= same_places and diff < 1e-5 < moved
    ok &= check_attention("book")
    return ok


def make_op(dir_, name, models):
    parts = name.split(":")
    model_name = parts[1]
    if model_name not in models:
        models[model_name] = load_model(dir_, model_name)
    model = models[model_name]
    if parts[0] == "fwd":
        ids = input_ids(int(parts[2]), int(parts[3]))

        def op():
            with torch.no_grad():
                model(ids)

        return op
    if parts[0] == "train":
        import copy

        m = copy.deepcopy(model)
        ids = input_ids(int(parts[2]), int(parts[3]))
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)

        def op():
            loss = -seq_logp(m, ids).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

        return op
    if parts[0] == "part":  # a whole train step, returning the time of one part of it
        import copy

        m = copy.deepcopy(model)
        ids = input_ids(int(parts[2]), int(parts[3]))
        # adam_fused: torch's fused CPU Adam, against the same FlatAdam step on the Rust side
        opt = torch.optim.Adam(m.parameters(), lr=1e-3, fused=parts[4] == "adam_fused")
        which = ["fwd", "bwd", "adam", "adam_fused"].index(parts[4])

        def op():
            t0 = time.perf_counter()
            loss = -seq_logp(m, ids).mean()
            t1 = time.perf_counter()
            opt.zero_grad()
            loss.backward()
            t2 = time.perf_counter()
            opt.step()
            t3 = time.perf_counter()
            return [t1 - t0, t2 - t1, t3 - t2, t3 - t2][which]

        return op
    if parts[0] == "update":
        import copy

        m = copy.deepcopy(model)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        ids, act, adv, lens = update_batch()
        order = [int(x) for x in open(f"{dir_}/update-order.txt").read().split()]
        rust_lens = [int(x) for x in open(f"{dir_}/update-lengths.txt").read().split()]
        assert lens == rust_lens, "update: episode lengths differ from the Rust side's"
        size = int(parts[2])
        return lambda: rl_update(m, opt, ids, act, adv, lens, order, size)
    if parts[0] == "packed":
        import copy

        m = copy.deepcopy(model)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        ids, act, adv, lens = update_batch()
        packed = pack(ids, act, adv, lens, int(parts[2]))
        order = [int(x) for x in open(f"{dir_}/packed-order.txt").read().split()]
        assert len(order) == packed[0].shape[0], "packed: a row order for another packing"
        return lambda: packed_update(m, opt, packed, order)
    if parts[0] == "attn":
        return attention_op(model_name, parts[2], parts[3])
    if parts[0] in ("roll_cached", "roll_uncached"):
        schedule = read_schedule(f"{dir_}/schedule-{parts[3]}-B{parts[2]}.txt")
        cached = parts[0] == "roll_cached"
        return lambda: rollout(model, schedule, cached)
    if parts[0] == "extend":
        b = int(parts[2])
        cache = new_cache(model, b)
        with torch.no_grad():
            model.extend(cache, [[(r * 7 + j) % ID_RANGE for j in range(50)] for r in range(b)])
        new = [[r % ID_RANGE] for r in range(b)]

        def op():
            c = {
                "layers": [[k, v] for k, v in cache["layers"]],
                "valid": cache["valid"],
                "seen": list(cache["seen"]),
            }
            with torch.no_grad():
                model.extend(c, new)

        return op
    raise ValueError(name)


def attention_inputs(model_name):
    """q, k, v [R, H, L, Dh] on the packed rows of 256 (a formula the Rust side repeats), the
    block-diagonal causal mask [R, 1, L, L], and each episode's (row, first column, length)."""
    _, _, d, heads, _, _ = CONFIGS[model_name]
    ids, act, adv, lens = update_batch()
    _, _, seg, _, _, places = pack(ids, act, adv, lens, 256)
    rows, l = seg.shape
    n = rows * heads * l * (d // heads)
    q, k, v = ((torch.arange(n, dtype=torch.float32) * 0.37 + c).sin().view(rows, heads, l, d // heads)
               .requires_grad_() for c in (0.0, 1.0, 2.0))
    return q, k, v, block_causal_mask(seg), [(row, col, lens[i]) for i, (row, col) in enumerate(places)]


def per_episode(q, k, v, segments):
    """One causal attention call per episode, on its own slice of its row: [1, H, n, Dh] each."""
    part = lambda t, r, c, n: t[r : r + 1, :, c : c + n]  # noqa: E731
    return [F.scaled_dot_product_attention(part(q, r, c, n), part(k, r, c, n), part(v, r, c, n),
                                           is_causal=True) for r, c, n in segments]


def attention_op(model_name, way, pass_):
    """The Rust side's attn op: one dense masked call, or one causal call per episode."""
    q, k, v, allowed, segments = attention_inputs(model_name)
    assert way in ("dense", "segments") and pass_ in ("fwd", "fwdbwd"), (way, pass_)

    def attend():
        if way == "dense":
            return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed).sum()
        return torch.stack([y.sum() for y in per_episode(q, k, v, segments)]).sum()

    def op():
        if pass_ == "fwdbwd":
            torch.autograd.grad(attend(), [q, k, v])
        else:
            with torch.no_grad():
                attend()

    return op


def check_attention(model_name):
    """The two ways agree on every episode's tokens: outputs and the grads of q, k, v."""
    q, k, v, allowed, segments = attention_inputs(model_name)
    dense = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    real = torch.zeros(dense.shape[0], 1, dense.shape[2], 1)
    for r, c, n in segments:
        real[r, :, c : c + n] = 1.0
    g_dense = torch.autograd.grad((dense * real).sum(), [q, k, v])
    per = per_episode(q, k, v, segments)
    g_seg = torch.autograd.grad(torch.stack([p.sum() for p in per]).sum(), [q, k, v])
    out = max((dense[r : r + 1, :, c : c + n] - p).abs().max().item() for (r, c, n), p in zip(segments, per))
    grads = max(((a - b) * real).abs().max().item() for a, b in zip(g_dense, g_seg))
    print(f"check    {model_name}: attention per episode against the dense mask: outputs within {out:.1e}, "
          f"grads of q, k, v within {grads:.1e}")
    return out < 1e-5 and grads < 1e-5


def serve(dir_, threads):
    torch.set_num_threads(threads)
    models, ops = {}, {}
    for line in sys.stdin:
        words = line.split()
        if len(words) < 2:
            continue
        name, reps = words[0], int(words[1])
        if name not in ops:
            ops[name] = make_op(dir_, name, models)
            ops[name]()
        op = ops[name]
        if reps > 1:  # re-warm caches after the other side ran (a single rep is >= 0.1 s)
            op()
        timed_part = name.startswith("part:")  # a part op returns the seconds of its part
        t0, measured = time.perf_counter(), 0.0
        for _ in range(reps):
            result = op()
            if timed_part:
                measured += result
        total = measured if timed_part else time.perf_counter() - t0
        print(f"{total / reps:.9f}", flush=True)


def system_busy():
    """CPU time (clock ticks) the whole machine has spent busy, from /proc/stat."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(f) - f[3] - f[4]  # all but idle and iowait


def process_busy(pids):
    """CPU time (clock ticks) the given processes have used."""
    total = 0
    for pid in pids:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += int(f[11]) + int(f[12])  # utime, stime
    return total


class LoadGuard:
    """A shared machine: a sample during which other processes used more than `limit` of a
    core is thrown away, and the driver waits until the machine is quiet again."""

    def __init__(self, pids, limit=0.10, patience=float("inf")):
        self.pids, self.limit, self.hz = pids, limit, os.sysconf("SC_CLK_TCK")
        self.discarded, self.under_load = 0, 0
        self.give_up_at = time.perf_counter() + patience

    def foreign(self, run):
        b0, o0, t0 = system_busy(), process_busy(self.pids), time.perf_counter()
        out = run()
        b1, o1, t1 = system_busy(), process_busy(self.pids), time.perf_counter()
        return out, ((b1 - b0) - (o1 - o0)) / self.hz / (t1 - t0)

    def measure(self, run):
        while True:
            out, load = self.foreign(run)
            if load <= self.limit:
                return out
            if time.perf_counter() > self.give_up_at:
                self.under_load += 1  # out of patience: kept, and counted in the table
                return out
            self.discarded += 1
            while time.perf_counter() < self.give_up_at and self.foreign(lambda: time.sleep(1.0))[1] > self.limit / 2:
                pass


class Server:
    def __init__(self, argv, threads):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def time(self, op, reps):
        self.p.stdin.write(f"{op} {reps}\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"server died on {op}")
        return float(line)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def ops_list(quick):
    """(op, reps per timing, group) in table order."""
    ops = []
    models = ["book"] if quick else ["book", "default"]
    for m in models:
        for b in [8, 32]:
            for t in [96, 256]:
                ops.append((f"fwd:{m}:{b}:{t}", "forward"))
    for m in models:
        for b in [8, 32]:
            for t in [96, 256]:
                ops.append((f"train:{m}:{b}:{t}", "forward+backward+Adam"))
    for m in models:
        for b in [8, 32]:
            for obs in ["short", "long"]:
                for algo in ["roll_cached", "roll_uncached"]:
                    ops.append((f"{algo}:{m}:{b}:{obs}", "rollout"))
    for b in [1, 8, 16, 32]:
        ops.append((f"extend:book:{b}", "decode step"))
    for m in models:
        for micro in [96, 16]:
            ops.append((f"update:{m}:{micro}", "rl_update"))
        ops.append((f"packed:{m}:256", "packed_update"))
    for way in ["dense", "segments"]:  # attention alone on the packed rows (issue 33)
        for pass_ in ["fwd", "fwdbwd"]:
            ops.append((f"attn:book:{way}:{pass_}", "attention alone"))
    for m in models:  # B = 1, T = 4: the kernels are negligible, what is left is per-call cost
        ops.append((f"fwd:{m}:1:4", "fixed cost"))
        ops.append((f"train:{m}:1:4", "fixed cost"))
    for b, t in PART_SHAPES:  # the book model's train step taken apart
        for part in [*PARTS, *FUSED]:
            ops.append((f"part:book:{b}:{t}:{part}", "train step parts"))
    return ops


PART_SHAPES = [(1, 4), (8, 96), (8, 256), (32, 256)]
PARTS = {"fwd": "forward+loss", "bwd": "backward", "adam": "Adam step"}  # a train step's parts
FUSED = {"adam_fused": "Adam, fused"}  # the twin with torch.optim.Adam(fused=True)


def fmt_time(s):
    return f"{s * 1e3:9.3f} ms" if abs(s) >= 1e-3 else f"{s * 1e6:9.1f} us"


def drive(dir_, rust_bin, rounds, threads_list, quick, patience, only=None, min_reps=1, steady=False):
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, rounds {rounds}, threads {threads_list}")
    if not check(dir_):
        print("bench-model: Rust and Python disagree; not timing", file=sys.stderr)
        sys.exit(1)
    ops = [(op, g) for op, g in ops_list(quick) if not only or any(w in op for w in only)]
    results = {}  # (threads, op) -> (rust median, python median)
    per_round = {}  # (threads, op) -> (rust times, python times), one of each per round

    def spread(threads, py_op, rust_op):
        """Lowest and highest per-round ratio PyTorch py_op / Rust rust_op: how far the
        median's ratio moves from round to round."""
        ratios = [p / r for p, r in zip(per_round[(threads, py_op)][1], per_round[(threads, rust_op)][0])]
        return f"{min(ratios):.2f}-{max(ratios):.2f}"

    discarded, under_load = {}, {}
    for threads in threads_list:
        guard = LoadGuard([os.getpid()], patience=patience)
        samples = {op: ([], []) for op, _ in ops}
        reps = {}  # reps per timing: about 0.1 s of the slower side (>= min_reps), from round 1
        for r in range(rounds):
            # Fresh server processes every round. Where a process's buffers land (address space
            # layout randomization) moves its times by several percent: one Rust train step
            # measured 5.4-6.2 ms across six launches. One launch per side would report one
            # draw of that luck; a median over rounds is a median over launches.
            # --steady: one pair of servers for all rounds, the state a training loop runs in
            # (and one draw of that luck per side: compare it with a run of fresh processes)
            if r == 0 or not steady:
                rust = Server([rust_bin, "serve", str(threads)], threads)
                py = Server([sys.executable, __file__, "serve", dir_, str(threads)], threads)
                guard.pids = [os.getpid(), rust.p.pid, py.p.pid]
                for op, _ in ops:  # an op's first call builds it (weights, inputs): not timed
                    t = max(rust.time(op, 1), py.time(op, 1))
                    reps.setdefault(op, max(min_reps, min(200, int(0.1 / max(t, 1e-6)))))
            for op, _ in ops:
                # alternate who goes first, so neither always runs on a warm cache
                order = [(0, rust), (1, py)] if r % 2 == 0 else [(1, py), (0, rust)]
                pair = guard.measure(lambda: [(side, srv.time(op, reps[op])) for side, srv in order])
                for side, t in pair:
                    samples[op][side].append(t)
            if r == rounds - 1 or not steady:
                rust.close()
                py.close()
            print(f"threads {threads}: round {r + 1}/{rounds} done, {guard.discarded} discarded", file=sys.stderr)
        discarded[threads] = guard.discarded
        under_load[threads] = guard.under_load
        for op, _ in ops:
            results[(threads, op)] = tuple(statistics.median(s) for s in samples[op])
            per_round[(threads, op)] = samples[op]
    print()
    calls = f", at least {min_reps} calls per timing" if min_reps > 1 else ""
    procs = "one pair of processes for all rounds" if steady else "each with fresh processes"
    print(f"medians of {rounds} interleaved rounds, {procs}{calls}; ratio = Python / Rust (> 1: Rust faster);")
    print("rounds = the lowest and highest ratio of a single round")
    print(f"pairs discarded because other processes used > 10% of a core meanwhile: {discarded}")
    print(f"pairs kept under such load after {patience:.0f} s of waiting per thread count: {under_load}")
    for threads in threads_list:
        print()
        print(f"threads = {threads}")
        print(f"{'operation':<34} {'Rust':>12} {'PyTorch':>12} {'ratio':>6} {'rounds':>10}")
        for op, _ in ops:
            rs, ps = results[(threads, op)]
            print(f"{op:<34} {fmt_time(rs)} {fmt_time(ps)} {ps / rs:6.2f} {spread(threads, op, op):>10}")
        names = [op for op, _ in ops]
        if any(op.startswith("roll_") for op in names):
            print()
            print("rollouts: cached vs uncached, and the cross ratio PyTorch uncached / Rust cached")
            print(f"{'rollout':<22} {'Rust unc/cached':>15} {'Py unc/cached':>14} {'Py uncached/Rust cached':>24} {'rounds':>10}")
            for op in names:
                if op.startswith("roll_cached") and (threads, "roll_uncached" + op[len("roll_cached") :]) in results:
                    key = op[len("roll_cached") :]
                    rc, pc = results[(threads, op)]
                    ru, pu = results[(threads, "roll_uncached" + key)]
                    cross = spread(threads, "roll_uncached" + key, op)
                    print(f"{key[1:]:<22} {ru / rc:15.2f} {pu / pc:14.2f} {pu / rc:24.2f} {cross:>10}")
        if any(f"update:{m}:16" in names and f"update:{m}:96" in names for m in ["book", "default"]):
            print()
            print("rl_update on 96 ragged episodes: one padded piece (96) vs micro-batches of 16")
            print(f"{'model':<10} {'Rust 96/16':>11} {'Py 96/16':>9} {'Py 96/Rust 16':>14} {'Py 16/Rust 16':>14}")
            for m in ["book", "default"]:
                if (threads, f"update:{m}:16") in results and (threads, f"update:{m}:96") in results:
                    r16, p16 = results[(threads, f"update:{m}:16")]
                    r96, p96 = results[(threads, f"update:{m}:96")]
                    print(f"{m:<10} {r96 / r16:11.2f} {p96 / p16:9.2f} {p96 / r16:14.2f} {p16 / r16:14.2f}")
        packed_models = [m for m in ["book", "default"] if (threads, f"packed:{m}:256") in results
                         and (threads, f"update:{m}:96") in results and (threads, f"update:{m}:16") in results]
        if packed_models:
            print()
            print("the same 96 episodes packed into rows of 256 (packed_update) against rl_update padded")
            print("(96) and in micro-batches (16); speed-up = padded time / packed time")
            print(f"{'model':<10} {'Rust 96/packed':>15} {'Rust 16/packed':>15} {'Py 96/packed':>13} {'Py packed/Rust packed':>22} {'rounds':>10}")
            for m in packed_models:
                rp, pp = results[(threads, f"packed:{m}:256")]
                r96, p96 = results[(threads, f"update:{m}:96")]
                r16, _ = results[(threads, f"update:{m}:16")]
                cross = spread(threads, f"packed:{m}:256", f"packed:{m}:256")
                print(f"{m:<10} {r96 / rp:15.2f} {r16 / rp:15.2f} {p96 / pp:13.2f} {pp / rp:22.2f} {cross:>10}")
        attn = {(w, p): results.get((threads, f"attn:book:{w}:{p}")) for w in ["dense", "segments"]
                for p in ["fwd", "fwdbwd"]}
        if all(attn.values()):
            layers = CONFIGS["book"][4]
            print()
            print("attention alone on the 22 packed rows of 256 (book model, one layer): one dense call with")
            print("the block-diagonal mask against one causal call per episode; speed-up = dense / segments")
            print(f"{'pass':<8} {'Rust dense/seg':>15} {'Py dense/seg':>13} {'Py seg/Rust seg':>16} {'rounds':>10}")
            for p in ["fwd", "fwdbwd"]:
                (rd, pd), (rs, ps) = attn[("dense", p)], attn[("segments", p)]
                cross = spread(threads, f"attn:book:segments:{p}", f"attn:book:segments:{p}")
                print(f"{p:<8} {rd / rs:15.2f} {pd / ps:13.2f} {ps / rs:16.2f} {cross:>10}")
            if (threads, "packed:book:256") in results:
                # packed_update runs each layer's attention once without grad (pi_old) and once
                # with (the two minibatches of rows): swap those calls' times, keep the rest
                swap = [sum(attn[("segments", p)][side] - attn[("dense", p)][side]
                            for p in ["fwd", "fwdbwd"]) * layers for side in (0, 1)]
                rp, pp = results[(threads, "packed:book:256")]
                er, ep = rp + swap[0], pp + swap[1]
                print(f"packed_update with per-episode attention, estimated (measured packed time with")
                print(f"{layers} layers' attention calls swapped): Rust {fmt_time(er)}, PyTorch {fmt_time(ep)},"
                      f" ratio {ep / er:.2f} (measured now: {pp / rp:.2f})")
        tiny = [m for m in ["book", "default"] if (threads, f"train:{m}:1:4") in results]
        if tiny:
            print()
            print("fixed cost of a train step (train:MODEL:1:4, kernels negligible) and what it implies:")
            print("a step with K ms of kernel time has ratio (K + Py) / (K + Rust), >= 1.2 only for K <= K*")
            print(f"{'model':<10} {'Rust':>12} {'PyTorch':>12} {'K* (ratio 1.2)':>16}")
            for m in tiny:
                rs, ps = results[(threads, f"train:{m}:1:4")]
                print(f"{m:<10} {fmt_time(rs)} {fmt_time(ps)} {fmt_time(max(ps - 1.2 * rs, 0.0) / 0.2):>16}")
        shapes = [(b, t) for b, t in PART_SHAPES if (threads, f"part:book:{b}:{t}:fwd") in results]
        if shapes:
            print()
            print("the book model's train step by part (each timed inside whole steps): forward+loss,")
            print("backward (with zero_grad), Adam step; 'Adam, fused' times the twin's step with")
            print("torch.optim.Adam(fused=True) against the same FlatAdam step (chapter 06)")
            print(f"{'B:T':<8} {'part':<14} {'Rust':>12} {'PyTorch':>12} {'Py - Rust':>12} {'ratio':>6}")

            def row(shape, label, rs, ps):
                print(f"{shape:<8} {label:<14} {fmt_time(rs)} {fmt_time(ps)} {fmt_time(ps - rs)} {ps / rs:6.2f}")

            bounds = []
            for b, t in shapes:
                times = {part: results[(threads, f"part:book:{b}:{t}:{part}")] for part in [*PARTS, *FUSED]
                         if (threads, f"part:book:{b}:{t}:{part}") in results}
                for part, label in PARTS.items():
                    if part in times:  # --only may have left some parts out
                        row(f"{b}:{t}", label, *times[part])
                if all(part in times for part in PARTS):
                    rust_sum, py_sum = (sum(times[part][side] for part in PARTS) for side in (0, 1))
                    row(f"{b}:{t}", "sum", rust_sum, py_sum)
                    bounds.append(f"{b}:{t} {py_sum / (times['fwd'][0] + times['bwd'][0]):.2f}")
                for part, label in FUSED.items():
                    if part in times:
                        row(f"{b}:{t}", label, *times[part])
            if bounds:
                print("ratio of the sums if Rust's Adam step took no time (an upper bound):")
                print("  " + ", ".join(bounds))
        if any(op.startswith("extend:") for op in names):
            print()
            print("decode step (extend, one token per row, 50 slots cached): time per row")
            for b in [b for b in [1, 8, 16, 32] if (threads, f"extend:book:{b}") in results]:
                rs, ps = results[(threads, f"extend:book:{b}")]
                print(f"  B = {b:>2}: Rust {fmt_time(rs / b)} per row, PyTorch {fmt_time(ps / b)} per row")


def drive_args(argv):
    """The driver's options, parsed (argparse exits with a message on a bad one)."""
    parser = argparse.ArgumentParser(
        prog="scripts/bench-model.sh",
        description="TinyAgent in Rust against its PyTorch twin: checked equal, then timed.",
    )
    parser.add_argument("data", help=argparse.SUPPRESS)
    parser.add_argument("rust_bin", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default 1,2)")
    parser.add_argument("--quick", action="store_true", help="chapter 05's model only")
    parser.add_argument("--patience", type=float, default=900.0,
                        help="seconds to wait for a quiet machine before keeping loaded pairs (default 900)")
    parser.add_argument("--only", help="time only the operations containing one of these, comma-separated")
    parser.add_argument("--min-reps", type=int, default=1,
                        help="calls per timing at least (default 1; an op taking over 50 ms "
                             "is otherwise timed once per round)")
    parser.add_argument("--steady", action="store_true",
                        help="keep one Rust and one Python process for all rounds (a training loop's "
                             "steady state) instead of fresh ones each round")
    a = parser.parse_args(argv)
    try:
        a.threads = [int(x) for x in a.threads.split(",")]
    except ValueError:
        parser.error(f"--threads: not a comma-separated list of integers: {a.threads}")
    if a.rounds < 1 or min(a.threads) < 1 or a.min_reps < 1:
        parser.error("--rounds, --threads and --min-reps need positive integers")
    return a


def main():
    cmd = sys.argv[1]
    if cmd == "check":
        sys.exit(0 if check(sys.argv[2]) else 1)
    if cmd == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    elif cmd == "only":  # bench-model.sh: the --only list, empty when every op is timed
        a = drive_args(["DATA", "RUST_BIN"] + sys.argv[2:])
        print(a.only or "")
    elif cmd == "args":  # bench-model.sh checks its options before the build
        drive_args(["DATA", "RUST_BIN"] + sys.argv[2:])
    elif cmd == "drive":
        a = drive_args(sys.argv[2:])
        only = a.only.split(",") if a.only else None
        drive(a.data, a.rust_bin, a.rounds, a.threads, a.quick, a.patience, only, a.min_reps, a.steady)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
