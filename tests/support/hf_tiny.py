"""Tiny random Hugging Face models built from config objects (never downloaded), and how their outputs line
up with attnlab's trace names. Used by test_hf_reference.py and benchmarks/hf_bench.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import transformers

SEED = 0
VOCAB = 99
IDS = [5, 17, 3, 88, 42, 7, 9, 61]  # one sentence of token ids (no padding)
DEC_IDS = [2, 30, 12, 77, 4]  # decoder input of the encoder-decoder model


@dataclass
class Case:
    """One tiny model: how to build it and which of its outputs are which attnlab trace entries."""

    name: str
    build: object  # () -> (hf model, its config dict)
    arch: str  # "decoder-only", "encoder-only" or "encoder-decoder"
    has_logits: bool = True
    final_norm_in_hidden: bool = False  # HF's last hidden state is after the stack's final norm
    extra: dict = field(default_factory=dict)


def _sharpen(model: torch.nn.Module, std: float = 0.3) -> torch.nn.Module:
    """Re-draw every weight with a larger spread than HF's 0.02 init, so attention is far from uniform and a
    wrong mapping shows up in the numbers."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" not in name:  # Marian's fixed sinusoids stay
                p.normal_(1.0 if name.endswith(("norm.weight", "LayerNorm.weight", "layernorm.weight")) else 0.0, std)
    return model.eval()


def _model(cls, config):
    torch.manual_seed(SEED)
    config._attn_implementation = "eager"
    config.architectures = [cls.__name__]  # as save_pretrained writes it into config.json
    model = _sharpen(cls(config))
    return model, config.to_dict()


def gpt2():
    cfg = transformers.GPT2Config(
        vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0
    )
    return _model(transformers.GPT2LMHeadModel, cfg)


def llama(n_kv=2, **changes):
    cfg = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=n_kv,
        max_position_embeddings=32,
        **{"rope_parameters": {"rope_type": "default", "rope_theta": 500.0}, **changes},
    )
    return _model(transformers.LlamaForCausalLM, cfg)


def qwen2():
    cfg = transformers.Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        tie_word_embeddings=True,
    )
    return _model(transformers.Qwen2ForCausalLM, cfg)


def bert(head=True):
    cfg = transformers.BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=32,
        type_vocab_size=2,
    )
    return _model(transformers.BertForMaskedLM if head else transformers.BertModel, cfg)


def roberta():
    cfg = transformers.RobertaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=34,
        pad_token_id=1,
    )
    return _model(transformers.RobertaForMaskedLM, cfg)


def distilbert():
    cfg = transformers.DistilBertConfig(
        vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=48, max_position_embeddings=32
    )
    return _model(transformers.DistilBertForMaskedLM, cfg)


def marian():
    cfg = transformers.MarianConfig(
        vocab_size=VOCAB,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=48,
        decoder_ffn_dim=48,
        max_position_embeddings=32,
        pad_token_id=VOCAB - 1,
        decoder_start_token_id=VOCAB - 1,
        scale_embedding=True,
    )
    model, config = _model(transformers.MarianMTModel, cfg)
    with torch.no_grad():  # a non-zero logit bias, so the test sees whether it is applied
        model.final_logits_bias.normal_(0.0, 0.3)
    return model, config


CASES = {
    "gpt2": Case("gpt2", gpt2, "decoder-only", final_norm_in_hidden=True),
    "llama": Case("llama", llama, "decoder-only", final_norm_in_hidden=True),
    "qwen2": Case("qwen2", qwen2, "decoder-only", final_norm_in_hidden=True),
    "bert": Case("bert", bert, "encoder-only"),
    "bert-no-head": Case("bert-no-head", lambda: bert(head=False), "encoder-only", has_logits=False),
    "roberta": Case("roberta", roberta, "encoder-only"),
    "distilbert": Case("distilbert", distilbert, "encoder-only"),
    "marian": Case("marian", marian, "encoder-decoder"),
}


def hf_forward(case: Case, model):
    """Run the HF model eagerly on IDS (and DEC_IDS) with every attention and hidden state."""
    ids = torch.tensor([IDS])
    with torch.no_grad():
        if case.arch == "encoder-decoder":
            return model(
                input_ids=ids,
                decoder_input_ids=torch.tensor([DEC_IDS]),
                output_attentions=True,
                output_hidden_states=True,
            )
        return model(input_ids=ids, output_attentions=True, output_hidden_states=True)


def pairs(case: Case, out, n_layers: int):
    """(what, HF tensor [..], attnlab trace name) for every attention map and hidden state HF returns."""

    def stack(prefix, side, attentions, hidden, kind="self", final_norm=False):
        for i, a in enumerate(attentions):
            yield f"{prefix} layer {i} {kind}-attention", a[0], f"{prefix}.{i}.{kind}.weights"
        names = [f"{side}.input"] + [f"{prefix}.{i}.out" for i in range(n_layers)]
        if final_norm:
            names[-1] = f"{prefix}.norm.out"
        for i, (h, name) in enumerate(zip(hidden, names, strict=True)):
            yield f"{prefix} hidden state {i}", h[0], name

    if case.arch == "encoder-decoder":
        normed = case.final_norm_in_hidden  # pre-norm mBART / Pegasus: each stack's last state is after its norm
        yield from stack("enc", "src", out.encoder_attentions, out.encoder_hidden_states, final_norm=normed)
        yield from stack("dec", "tgt", out.decoder_attentions, out.decoder_hidden_states, final_norm=normed)
        for i, a in enumerate(out.cross_attentions):
            yield f"dec layer {i} cross-attention", a[0], f"dec.{i}.cross.weights"
    elif case.arch == "encoder-only":
        yield from stack("enc", "src", out.attentions, out.hidden_states)
    else:
        yield from stack("dec", "tgt", out.attentions, out.hidden_states, final_norm=case.final_norm_in_hidden)


def compare_with_hf(case: Case, model, config, state) -> dict[str, float]:
    """{what: max |attnlab - transformers|} over every attention map, hidden state and the logits of one case,
    attnlab's engine run on the converted state (tests/families/test_hf_families.py, benchmarks/family_matrix.py)."""
    from attnlab.engine.model import Transformer
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Recorder, finish

    out = hf_forward(case, model)
    module = Transformer(config)
    module.load_state_dict(state)  # strict: every tensor the engine needs, nothing else
    module.eval()
    rec = Recorder(True)
    src = torch.tensor([IDS]) if config.has_encoder else None
    tgt = torch.tensor([DEC_IDS if config.has_encoder else IDS]) if config.has_decoder else None
    with torch.inference_mode():
        logits = module(src, tgt, rec=rec)
    trace = finish(rec, config, RunOptions().resolved(config), "cpu")
    n_layers = config.n_decoder_layers if config.has_decoder else config.n_encoder_layers
    errors = {}
    for what, theirs, name in pairs(case, out, n_layers):
        ours = trace[name]
        assert ours.shape == theirs.shape, f"{case.name} {what}: {name} {tuple(ours.shape)} vs {tuple(theirs.shape)}"
        errors[what] = float((ours - theirs).abs().max())
    if case.has_logits:
        ours = logits[0]
        if out.logits.dim() == 2:  # ELECTRA's discriminator: one logit z per token; attnlab's logits are [0, z]
            ours = ours[:, 1]
        errors["logits"] = float((ours - out.logits[0]).abs().max())
    return errors
