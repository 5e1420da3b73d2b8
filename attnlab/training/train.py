"""The training loop for the classroom models: reproducible from one seed.

Everything random is drawn from the seed: the corpus (generate_pairs(n, seed)), the weights and dropout
(torch.manual_seed), and the order of batches (random.Random(seed)). The train/test split is the corpus's
own, disjoint by source sentence; the test side is never looked at here.
"""

from __future__ import annotations

import functools
import math
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.tokenizer import Tokenizer
from attnlab.training.bpe import train_bpe
from attnlab.training.data import Batch, BatchStream, decoder_ids, source_ids
from attnlab.training.recipes import Recipe, model_config

if TYPE_CHECKING:
    from attnlab.training.corpus import Pair

FAST = RunOptions(record=False)
ADAM_BETAS = (0.9, 0.98)  # as in the 2017 paper
ADAM_EPS = 1e-9
CLIP_NORM = 1.0
THREADS = 2


@functools.lru_cache(maxsize=2)
def split_corpus(
    n_pairs: int, seed: int, test_fraction: float, split_seed: int, version: int = 1
) -> tuple[tuple[Pair, ...], tuple[Pair, ...]]:
    """(train, test) tuples of corpus Pairs, the same every time for the same numbers (kept for re-use:
    generating tens of thousands of pairs takes seconds). `version`: of the corpus (checkpoints without one
    were trained on version 1). From version 2 on, pairs whose English is one of the hand-written evaluation
    sentences are left out of training (the test side is untouched, so the split itself does not move)."""
    from attnlab.training.corpus import generate_pairs, train_test_split
    from attnlab.training.handwritten import handwritten_keys, sentence_key

    pairs = generate_pairs(n_pairs, seed, version=version)
    train_pairs, test_pairs = train_test_split(pairs, test_fraction=test_fraction, seed=split_seed)
    if version >= 2:
        held_back = handwritten_keys()
        train_pairs = [p for p in train_pairs if sentence_key(p.src) not in held_back]
    return tuple(train_pairs), tuple(test_pairs)


def side_texts(pairs: Iterable[Pair], side: str) -> list[str]:
    """The texts a model reads: both sides (translation) or only the French side ("tgt")."""
    if side == "tgt":
        return [p.tgt for p in pairs]
    return [t for p in pairs for t in (p.src, p.tgt)]


def without_period(text: str) -> str:
    """The sentence without its final " ." or " ?" (a question typed without its mark is still one)."""
    return text[:-2] if text.endswith((" .", " ?")) else text


def make_examples(
    pairs: Iterable[Pair], tokenizer: Tokenizer, side: str, drop_period: float = 0.0, seed: int = 0
) -> list[tuple[list[int] | None, list[int]]]:
    """(source ids or None, decoder ids) per pair; the language model reads the French sentence alone.
    A seeded `drop_period` share of translation pairs lose their final " ." on both sides."""
    if side == "tgt":
        return [(None, decoder_ids(tokenizer, p.tgt)) for p in pairs]
    rng = random.Random(f"drop-period-{seed}")
    examples: list[tuple[list[int] | None, list[int]]] = []
    for p in pairs:
        src, tgt = p.src, p.tgt
        if rng.random() < drop_period:
            src, tgt = without_period(src), without_period(tgt)
        examples.append((source_ids(tokenizer, src), decoder_ids(tokenizer, tgt)))
    return examples


def learning_rate(step: int, recipe: Recipe) -> float:
    """Linear warm-up to peak_lr, then decay as 1/sqrt(step): the 2017 paper's schedule, explicit peak."""
    step = max(step, 1)
    return recipe.peak_lr * min(step / recipe.warmup, math.sqrt(recipe.warmup / step))


def batch_loss(
    module: Transformer, batch: Batch, pad_id: int, label_smoothing: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss that is optimised, plain cross-entropy) per real target token; padding is ignored."""
    logits = module(batch.src, batch.tgt_in, options=FAST, src_pad=batch.src_pad, tgt_pad=batch.tgt_pad)  # [B, T, V]
    flat = logits.reshape(-1, logits.shape[-1])  # [B*T, V]
    target = batch.tgt_out.reshape(-1)  # [B*T]
    nll = F.cross_entropy(flat, target, ignore_index=pad_id)
    if label_smoothing == 0:
        return nll, nll.detach()
    loss = F.cross_entropy(flat, target, ignore_index=pad_id, label_smoothing=label_smoothing)
    return loss, nll.detach()


@dataclass
class TrainResult:
    model: LiveModel
    history: list[dict] = field(default_factory=list)  # a row per step: step, loss, nll, lr, tokens, ...
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    # weights kept during training, float16: {step: {tensor name: tensor}}; step 0 is before the first update
    snapshots: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)

    @property
    def steps_per_second(self) -> float:
        return len(self.history) / self.seconds if self.seconds > 0 else 0.0


def train(
    recipe: Recipe,
    seed: int,
    progress: bool = True,
    threads: int = THREADS,
    on_step: Callable[[dict], None] | None = None,
    snapshot_steps: Iterable[int] = (),
) -> TrainResult:
    """Generate the corpus, learn the tokenizer, build the model and train it for `recipe.steps` steps.

    `threads`: CPU threads for PyTorch. The result is reproducible for a given seed and thread count (other
    thread counts add up sums in another order, so the last digits, and eventually the weights, differ).
    `snapshot_steps`: keep a float16 copy of the weights after these steps (0: as initialised); copying draws
    no random numbers, so the training itself is the same with or without them."""
    wanted = checked_snapshot_steps(snapshot_steps, recipe.steps)
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    train_pairs, test_pairs = split_corpus(
        recipe.n_pairs, seed, recipe.test_fraction, recipe.split_seed, recipe.corpus_version
    )
    tokenizer = train_bpe(side_texts(train_pairs, recipe.side), recipe.vocab_size)
    examples = make_examples(train_pairs, tokenizer, recipe.side, recipe.drop_period, seed)
    config = model_config(recipe.name, tokenizer.vocab_size)
    module = Transformer(config)
    module.dropout = recipe.dropout
    module.train()
    optimizer = torch.optim.Adam(module.parameters(), lr=learning_rate(1, recipe), betas=ADAM_BETAS, eps=ADAM_EPS)
    stream = BatchStream(examples, recipe.max_tokens, tokenizer.pad_id, seed)

    history: list[dict] = []
    snapshots = {0: half_copy(module)} if 0 in wanted else {}
    bar = _progress_bar(recipe, progress)
    start, cpu_start = time.perf_counter(), time.process_time()
    for step in range(1, recipe.steps + 1):
        lr = learning_rate(step, recipe)
        for group in optimizer.param_groups:
            group["lr"] = lr
        batch = next(stream)
        loss, nll = batch_loss(module, batch, tokenizer.pad_id, recipe.label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), CLIP_NORM)
        optimizer.step()
        if step in wanted:
            snapshots[step] = half_copy(module)
        row = {
            "step": step,
            "loss": loss.item(),
            "nll": float(nll),
            "lr": lr,
            "tokens": batch.n_tokens,
            "epoch": stream.epoch,
            "seconds": time.perf_counter() - start,
            "cpu_seconds": time.process_time() - cpu_start,
        }
        history.append(row)
        if on_step is not None:
            on_step(row)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{row['loss']:.3f}", epoch=stream.epoch, refresh=False)
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    if bar is not None:
        bar.close()
    module.dropout = 0.0
    module.eval()

    src_tok = tokenizer if config.has_encoder else None
    run = {
        "n_train": len(train_pairs),
        "n_test": len(test_pairs),
        "epochs": stream.epoch,
        "threads": threads,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "history": history,
        "bpe_vocab_size": tokenizer.vocab_size,
    }
    metadata = _metadata(recipe, seed, run)
    model = LiveModel(module, src_tok, tokenizer, name=recipe.name, metadata=metadata)
    return TrainResult(model, history, seconds, cpu_seconds, snapshots)


def checked_snapshot_steps(steps: Iterable[int], total: int) -> frozenset[int]:
    """The snapshot steps as a set; ValueError for one outside 0..total."""
    wanted = frozenset(int(s) for s in steps)
    outside = sorted(s for s in wanted if not 0 <= s <= total)
    if outside:
        raise ValueError(
            f"snapshot steps must lie between 0 and the {total} training steps; {', '.join(map(str, outside))} do not"
        )
    return wanted


def snapshot_losses(history: list[dict], steps: Iterable[int]) -> dict[int, float]:
    """For each snapshot step N, the training loss measured on exactly its weights: that of the batch of step
    N + 1 (the weights after N updates are the ones step N + 1 reads). None is known for the last step."""
    return {n: history[n]["loss"] for n in steps if 0 <= n < len(history)}


def half_copy(module: Transformer) -> dict[str, torch.Tensor]:
    """A float16 copy of the parameters a checkpoint stores (tied ones once)."""
    with torch.no_grad():
        return {name: t.detach().to(torch.float16, copy=True) for name, t in module.checkpoint_tensors().items()}


def _metadata(recipe: Recipe, seed: int, run: dict) -> dict:
    """What the checkpoint says about how it was made: the corpus, the recipe and the run's own figures."""
    return {
        "classroom_model": recipe.name,
        "corpus": {
            "generator": "attnlab.training.corpus.generate_pairs",
            "version": recipe.corpus_version,
            "n_pairs": recipe.n_pairs,
            "seed": seed,
            "test_fraction": recipe.test_fraction,
            "split_seed": recipe.split_seed,
            "n_train": run["n_train"],
            "n_test": run["n_test"],
            "side": "English -> French" if recipe.side == "both" else "French",
        },
        "training": {
            "seed": seed,
            "steps": recipe.steps,
            "max_tokens_per_batch": recipe.max_tokens,
            "optimizer": f"Adam betas={ADAM_BETAS} eps={ADAM_EPS}",
            "peak_lr": recipe.peak_lr,
            "warmup_steps": recipe.warmup,
            "schedule": "linear warm-up, then 1/sqrt(step)",
            "label_smoothing": recipe.label_smoothing,
            "dropout": recipe.dropout,
            "pairs_without_final_period": recipe.drop_period,
            "grad_clip_norm": CLIP_NORM,
            "epochs": run["epochs"],
            "threads": run["threads"],
            "seconds": round(run["seconds"], 1),
            "steps_per_second": round(recipe.steps / run["seconds"], 3),
            "cpu_seconds": round(run["cpu_seconds"], 1),
            "final_loss": round(_tail_mean(run["history"], "loss"), 4),
            "final_nll": round(_tail_mean(run["history"], "nll"), 4),
            "bpe_vocab_size": run["bpe_vocab_size"],
            "torch": torch.__version__,
        },
    }


def _tail_mean(history: list[dict], key: str, n: int = 100) -> float:
    tail = history[-n:]
    return sum(r[key] for r in tail) / max(len(tail), 1)


def _progress_bar(recipe: Recipe, enabled: bool) -> Any:  # a tqdm bar, or None
    if not enabled:
        return None
    from tqdm import tqdm  # type: ignore[import-untyped]

    return tqdm(total=recipe.steps, desc=f"training {recipe.name}", unit="step", dynamic_ncols=True)
