"""What the window says about the open model, and the models it can make: the Model info page, the output
vocabulary the panels name ids with, the compute device, the choices of File → New random model…. Qt-free.

The widgets hold a LiveModel and a ModelConfig as opaque handles (present/engine_api.py) and ask here for
every word and number; nothing in ui reads the model's torch module or its tokenizers."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnlab.engine.config import ARCHITECTURES, POSITIONALS, ModelConfig
from attnlab.engine.pairs import pair_help
from attnlab.present.provenance import defaults_note, setting_rows

if TYPE_CHECKING:
    import torch

    from attnlab.engine.live import LiveModel
    from attnlab.engine.options import RunOptions


def parameter_count(model: LiveModel) -> int:
    """The number of parameters the checkpoint holds (shared ones once)."""
    return sum(t.numel() for t in model.module.checkpoint_tensors().values())


def tokenizer_lines(model: LiveModel) -> list[str]:
    """One line per tokenizer ("source: bpe, 32,000 tokens; specials …"); the target's only when it differs."""
    lines = []
    for side, tok in (("source", model.src_tokenizer), ("target", model.tgt_tokenizer)):
        if tok is not None and (side == "source" or tok is not model.src_tokenizer):
            specials = getattr(tok.specials, "description", "")
            lines.append(f"{side}: {tok.kind}, {tok.vocab_size:,} tokens{'; specials ' + specials if specials else ''}")
    return lines


def model_info_html(model: LiveModel) -> str:
    """File → Model info: architecture, parameter count, where each setting came from, the tokenizer and the
    loader's notes."""
    cfg, meta = model.config, model.metadata
    esc = html.escape
    settings = meta.get("settings") or {}
    if settings:  # the settings that say something about this model, as `attnlab info` lists them
        table, left = setting_rows(settings)
    else:  # attnlab's own checkpoint: every field is the checkpoint's
        table, left = [(f, str(v), "the checkpoint's config") for f, v in vars(cfg).items()], 0
    rows = [f"<tr><td>{esc(a)}</td><td>{esc(b)}</td><td>{esc(c)}</td></tr>" for a, b, c in table]
    extra = [f"<tr><td colspan='3'><i>{esc(defaults_note(left))}</i></td></tr>"] if left else []
    toks = "".join(f"<li>{esc(line)}</li>" for line in tokenizer_lines(model))
    notes = "".join(f"<li>{esc(str(n))}</li>" for n in meta.get("notices", []))
    return (
        f"<h3>{esc(str(model.name))}</h3>"
        f"<p>{esc(cfg.arch)} · {parameter_count(model):,} parameters · read from: "
        f"{esc(str(meta.get('source', 'attnlab')))}"
        f"</p><p><b>Tokenizer</b>: {esc(str(meta.get('tokenizer', '')))}</p><ul>{toks}</ul>"
        "<table border='1' cellspacing='0' cellpadding='3'><tr><th>setting</th><th>value</th>"
        f"<th>from</th></tr>{''.join(rows + extra)}</table>"
        + (f"<p><b>Notes from loading</b></p><ul>{notes}</ul>" if notes else "")
    )


def output_vocabulary(model: LiveModel | None) -> Callable[[int], str] | None:
    """id -> token text over the ids the output distribution ranges over (the decoder's tokenizer when there
    is a decoder), or None with no model open or a model built without that tokenizer."""
    if model is None:
        return None
    tok = model.tgt_tokenizer if model.config.has_decoder else model.src_tokenizer
    return tok.id_to_token if tok is not None else None


def cross_attention_layers(model: LiveModel | None) -> int:
    """How many decoder layers hold cross-attention (0: no model, or a model without an encoder-decoder)."""
    if model is None or not (model.config.has_decoder and model.config.n_encoder_layers > 0):
        return 0
    return model.config.n_decoder_layers


# ---- the compute device (Help → About) -------------------------------------------------------------------------
def compute_device(model: LiveModel | None, options: RunOptions) -> torch.device:
    """The device the open model runs on, or the one the run options would pick when none is open yet."""
    from attnlab.engine.live import pick_device  # torch: on first use, after the window's first paint

    return model.device if model is not None else pick_device(options.device)


def device_description(device: torch.device) -> str:
    """'CUDA: <GPU name>' or 'CPU (N threads)': where the traces are computed."""
    import torch

    if device.type == "cuda":
        return f"CUDA: {torch.cuda.get_device_name(device)}"
    return f"CPU ({torch.get_num_threads()} threads)"


# ---- File → New random model… -----------------------------------------------------------------------------------
ARCHITECTURE_CHOICES: tuple[str, ...] = tuple(ARCHITECTURES)
POSITIONAL_CHOICES: tuple[str, ...] = tuple(POSITIONALS)


def default_config() -> ModelConfig:
    """The sizes a random model starts from when no model is open."""
    return ModelConfig()


def random_config(arch: str, d_model: int, n_heads: int, d_ff: int, layers: int, positional: str) -> ModelConfig:
    """The config of a random model with `layers` layers in each stack it has."""
    return ModelConfig(
        arch=arch,  # type: ignore[arg-type]  # one of ARCHITECTURE_CHOICES: the dialog's combo offers no other
        d_model=d_model,
        n_heads=n_heads,
        d_ff=d_ff,
        n_encoder_layers=layers,
        n_decoder_layers=layers,
        positional=positional,  # type: ignore[arg-type]  # one of POSITIONAL_CHOICES, as above
    )


def config_sizes(config: ModelConfig) -> dict[str, int | str]:
    """The fields the random-model dialog shows, read from `config` (layers: the taller stack)."""
    return {
        "arch": config.arch,
        "d_model": config.d_model,
        "n_heads": config.n_heads,
        "d_ff": config.d_ff,
        "layers": max(config.n_encoder_layers, config.n_decoder_layers),
        "positional": config.positional,
    }


def config_problems(config: ModelConfig) -> list[str]:
    """Why `config` cannot be built (empty: it can)."""
    return config.problems()


# ---- the input boxes ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InputWords:
    """What the two text boxes are for the open model, and which of their widgets it needs."""

    src_label: str  # "&Source:", "&Prompt:" (a decoder-only model) or "Sentence &A:" (a sentence-pair reader)
    tgt_label: str
    tgt_placeholder: str
    clear_tip: str
    show_tgt: bool  # the second box: a decoder input, or sentence B
    show_generate: bool  # anything to generate with (not an encoder-only model)
    src_tip: str = ""  # how to type a sentence pair into the first box (a pair reader: engine/pairs.py)
    chat: bool = False  # the model ships a chat template: Stage → Conversation… is enabled (ui/window/chat_dialog.py)


def input_words(model: LiveModel | None) -> InputWords:
    """The input boxes' words for `model` (an encoder-decoder's with none open)."""
    arch = model.config.arch if model is not None else "encoder-decoder"
    pairs = model is not None and model.reads_pairs  # BERT, RoBERTa: the second box is sentence B
    return InputWords(
        src_label="&Prompt:" if arch == "decoder-only" else "Sentence &A:" if pairs else "&Source:",
        tgt_label="Sentence &B:" if pairs else "&Decoder input:",
        tgt_placeholder=(
            "Second sentence (optional): its tokens get token type 1"
            if pairs
            else "Decoder input (teacher forcing) — empty, or Generate"
        ),
        clear_tip="Empty sentence B" if pairs else "Empty the decoder input",
        show_tgt=arch == "encoder-decoder" or pairs,
        show_generate=arch != "encoder-only",
        src_tip=pair_help(model.src_tokenizer) if pairs and model is not None else "",
        chat=model is not None and model.chat_template is not None,
    )
