#!/usr/bin/python3
"""PyTorch peer of cleave's reference training step (speed only).

Models mirror actors/ps/mlp.cpp and actors/ps/gpt.cpp; one step is the same
work as cleave's trainer step: zero grads, forward, loss, backward, global
gradient-norm clip, AdamW update. Inputs are random tensors of the right shape
and range, drawn before timing. Prints one JSON object on stdout.

Run with Debian's interpreter (/usr/bin/python3): python3-torch lives there.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", choices=["mlp", "gpt"], default="mlp")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--batch", type=int, default=None, help="mlp 64, gpt 16 (as cleave)")
    p.add_argument("--steps", type=int, default=20, help="measured steps")
    p.add_argument("--warmup-steps", type=int, default=3, help="untimed steps first")
    p.add_argument("--seed", type=int, default=1)
    # mlp shape
    p.add_argument("--inputs", type=int, default=784)
    p.add_argument("--hidden", default="256,128")
    p.add_argument("--classes", type=int, default=10)
    # gpt shape (defaults: cleave's "small")
    p.add_argument("--shape", choices=["small", "opt-125m"], default=None,
                   help="named gpt shape; sets d/layers/heads/ffn (opt-125m also vocab 50272)")
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=None, help="default 256 (opt-125m: 50272)")
    p.add_argument("--context", type=int, default=128)
    # optimiser (cleave defaults)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--foreach", type=int, choices=[0, 1], default=0,
                   help="AdamW multi-tensor path; 1.13's CPU foreach AdamW is the slower "
                        "one here (its _foreach sqrt/add are ~2x the per-tensor loop)")
    p.add_argument("--show-config", action="store_true",
                   help="print torch.__config__.show() and the BLAS libraries mapped into "
                        "this process, then exit")
    a = p.parse_args()
    if a.shape == "small":
        a.d_model, a.layers, a.heads, a.ffn = 256, 4, 4, 1024
    elif a.shape == "opt-125m":
        a.d_model, a.layers, a.heads, a.ffn = 768, 12, 12, 3072
        if a.vocab is None:
            a.vocab = 50272
    if a.vocab is None:
        a.vocab = 256
    if a.batch is None:
        a.batch = 64 if a.model == "mlp" else 16
    return a


ARGS = parse_args()
# The BLAS pool (OpenBLAS pthread) and the OpenMP pool read these when the
# libraries load, i.e. at "import torch"; pin both to --threads.
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
# libgomp spin-waits by default; its idle workers then steal the two cores
# from the OpenBLAS pthread pool torch calls into (on this box that makes the
# mlp step ~40x slower at 2 threads). Passive waiting is the fair setting;
# an explicit OMP_WAIT_POLICY in the environment still wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_interop_threads(1)
torch.set_num_threads(ARGS.threads)


def mapped_blas():
    """Shared objects in this process whose name looks like a BLAS/LAPACK."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6:
                path = parts[5]
                name = os.path.basename(path).lower()
                if any(k in name for k in ("blas", "lapack", "mkl", "gfortran")):
                    libs.add(os.path.realpath(path))
    return sorted(libs)


class MLP(nn.Module):
    """(Linear -> ReLU)* -> Linear; softmax cross-entropy (actors/ps/mlp.cpp)."""

    def __init__(self, inputs, hidden, classes):
        super().__init__()
        widths = [inputs] + hidden + [classes]
        self.fcs = nn.ModuleList(nn.Linear(widths[i], widths[i + 1])
                                 for i in range(len(widths) - 1))

    def forward(self, x, y):
        for i, fc in enumerate(self.fcs):
            x = fc(x)
            if i + 1 < len(self.fcs):
                x = F.relu(x)
        return F.cross_entropy(x, y)


class Block(nn.Module):
    """Pre-LN block: x += proj(attn(qkv(ln1(x)))); x += out(gelu_tanh(fc(ln2(x))))."""

    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.fc = nn.Linear(d, ffn)
        self.out = nn.Linear(ffn, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        h, dh = self.heads, d // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, h, dh).transpose(1, 2)
        k = k.view(b, t, h, dh).transpose(1, 2)
        v = v.view(b, t, h, dh).transpose(1, 2)
        # The math path: explicit scores, causal mask, softmax, weighted sum.
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        s = s.masked_fill(mask[:t, :t], float("-inf"))
        a = F.softmax(s, dim=-1) @ v
        a = a.transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(a)
        x = x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x


class GPT(nn.Module):
    """Decoder-only transformer, OPT/GPT layout (actors/ps/gpt.cpp)."""

    def __init__(self, vocab, context, d, layers, heads, ffn):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads, ffn) for _ in range(layers))
        self.lnf = nn.LayerNorm(d, eps=1e-5)
        self.head = nn.Linear(d, vocab, bias=False)  # untied
        self.register_buffer("mask", torch.triu(torch.ones(context, context, dtype=torch.bool),
                                                diagonal=1), persistent=False)
        self.register_buffer("pos_ids", torch.arange(context), persistent=False)
        std_resid = 0.02 / math.sqrt(2.0 * layers)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = std_resid if name.endswith(("proj.weight", "out.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        x = self.tok(tokens) + self.pos(self.pos_ids[:t])
        for bl in self.blocks:
            x = bl(x, self.mask)
        logits = self.head(self.lnf(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    a = ARGS
    if a.show_config:
        torch.ones(64, 64) @ torch.ones(64, 64)
        print(torch.__config__.show().rstrip())
        print("torch", torch.__version__, "threads", torch.get_num_threads(),
              "interop", torch.get_num_interop_threads(),
              "OMP_WAIT_POLICY", os.environ.get("OMP_WAIT_POLICY"))
        print("BLAS mapped into the torch process:", " ".join(mapped_blas()) or "(none)")
        return 0

    torch.manual_seed(a.seed)
    n_batches = 4  # a small pool of pre-drawn batches, cycled
    if a.model == "mlp":
        hidden = [int(w) for w in a.hidden.split(",") if w]
        model = MLP(a.inputs, hidden, a.classes)
        data = [(torch.rand(a.batch, a.inputs), torch.randint(0, a.classes, (a.batch,)))
                for _ in range(n_batches)]
        desc = "mlp %d-%s-%d batch %d" % (a.inputs, "-".join(map(str, hidden)), a.classes, a.batch)
    else:
        model = GPT(a.vocab, a.context, a.d_model, a.layers, a.heads, a.ffn)
        data = [(torch.randint(0, a.vocab, (a.batch, a.context)),
                 torch.randint(0, a.vocab, (a.batch, a.context))) for _ in range(n_batches)]
        desc = "gpt d=%d layers=%d heads=%d ffn=%d ctx=%d vocab=%d batch %d" % (
            a.d_model, a.layers, a.heads, a.ffn, a.context, a.vocab, a.batch)

    # Weight decay on matrices only, as cleave: Linear weights and the head.
    # Embedding tables, biases and LayerNorm gains/shifts are not decayed.
    decay, no_decay = [], []
    for mod in model.modules():
        for name, p in mod.named_parameters(recurse=False):
            (decay if isinstance(mod, nn.Linear) and name == "weight" else no_decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.999), eps=1e-8, foreach=bool(a.foreach))
    params = [p for p in model.parameters()]
    n_params = sum(p.numel() for p in params)
    model.train()

    def step(i):
        x, y = data[i % n_batches]
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        nn.utils.clip_grad_norm_(params, a.clip)
        opt.step()
        return loss.item()

    for i in range(a.warmup_steps):
        step(i)
    times = []
    loss = float("nan")
    for i in range(a.steps):
        t0 = time.perf_counter()
        loss = step(a.warmup_steps + i)
        times.append(time.perf_counter() - t0)

    print(json.dumps({
        "peer": "torch " + torch.__version__,
        "model": desc,
        "parameters": n_params,
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "adamw_foreach": bool(a.foreach),
        "warmup_steps": a.warmup_steps,
        "steps": a.steps,
        "median_step_seconds": statistics.median(times) if times else None,
        "mean_step_seconds": statistics.fmean(times) if times else None,
        "min_step_seconds": min(times) if times else None,
        "final_loss": loss,
        "blas": mapped_blas(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
