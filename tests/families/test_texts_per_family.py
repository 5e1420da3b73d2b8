"""Texts true for every model (issue 26): the tokenization note names the special tokens the model's own tokenizer
adds (checked against transformers' AutoTokenizer on the same folder), the input formula has the terms the model
adds (read from transformers' config object: token types, the embedding LayerNorm, √d scaling, learned or
sinusoidal positions), the Q/K/V and W_O formulas carry the biases the model has, and a folder without a trained
output head gets a banner. Families: BERT, GPT-2, Llama and Marian folders (tiny, built here), and the bundled
models."""

from __future__ import annotations

import html

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("attnlab.checkpoints.hf")

import attnlab  # noqa: E402
from attnlab.engine import names  # noqa: E402
from attnlab.present.explain import explanation_html  # noqa: E402
from attnlab.present.stages import stages_for  # noqa: E402
from tests.families.test_hf_models import saved, tokenizer_config, wordpiece_vocab  # noqa: E402

TEXT = "Hello, world! The cat sat."
SIDE = {"bert": "src", "marian": "src", "gpt2": "tgt", "llama": "tgt"}


def specials_autotokenizer_adds(folder, text: str) -> tuple[list[str], list[str], int]:
    """(tokens before the text's pieces, tokens after them, number of pieces), as transformers adds them."""
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    ids = auto(text)["input_ids"]
    plain = auto(text, add_special_tokens=False)["input_ids"]
    start = next(i for i in range(len(ids) - len(plain) + 1) if ids[i : i + len(plain)] == plain)
    tokens = auto.convert_ids_to_tokens(ids)
    return tokens[:start], tokens[start + len(plain) :], len(plain)


def opened(tmp_path, kind: str):
    folder, reference = saved(tmp_path, kind)
    model = attnlab.load(str(folder))
    trace = model.trace(TEXT, "Bonjour" if kind == "marian" else None)
    return folder, reference, trace, {s.key: s for s in stages_for(trace)}


@pytest.mark.parametrize("kind", list(SIDE))
def test_the_tokenization_note_names_the_specials_the_tokenizer_adds(tmp_path, kind):
    folder, _reference, trace, stages = opened(tmp_path, kind)
    side = SIDE[kind]
    before, after, n_pieces = specials_autotokenizer_adds(folder, TEXT)
    page = explanation_html(stages[f"{side}.tokens"], trace)
    if before or after:
        for token in before + after:
            assert html.escape(token) in page, (kind, token, page)
        assert f"({n_pieces} pieces of the text + {len(before) + len(after)} special)" in page, page
        assert "adds no special tokens" not in page
    else:
        assert "adds no special tokens" in page, page
    if "</s>" not in after:  # a classroom sentence that no longer fits this model
        assert "ends with &lt;/s&gt;" not in page and "&lt;/s&gt; after the text" not in page, page


@pytest.mark.parametrize("kind", list(SIDE))
def test_the_input_formula_has_the_terms_the_model_adds(tmp_path, kind):
    _folder, reference, trace, stages = opened(tmp_path, kind)
    cfg = reference.config
    formula = explanation_html(stages[f"{SIDE[kind]}.input"], trace)
    has_types = getattr(cfg, "type_vocab_size", 0) > 0
    embedding_norm = kind == "bert"  # BertEmbeddings.LayerNorm (GPT-2, Llama and Marian have none)
    scaled = bool(getattr(cfg, "scale_embedding", False))  # Marian: embed_scale = √d_model
    learned = kind in ("bert", "gpt2")  # position_embeddings / wpe tables; Llama rotates, Marian adds sinusoids
    assert ("T[type]" in formula) is has_types, formula
    assert ("LayerNorm<sub>emb</sub>(" in formula) is embedding_norm, formula
    assert ("E[id] · √" in formula) is scaled, formula
    assert ("P[pos]" in formula) is learned, formula
    assert ("PE[pos]" in formula) is (kind == "marian"), formula
    assert ("rotating Q and K" in formula) is (kind == "llama"), formula


def linear_has_bias(reference, kind: str) -> tuple[bool, bool]:
    """(Q/K/V biases, W_O bias) as the transformers module holds them."""
    layer = {
        "bert": lambda m: (
            m.bert.encoder.layer[0].attention.self.query,
            m.bert.encoder.layer[0].attention.output.dense,
        ),
        "gpt2": lambda m: (m.transformer.h[0].attn.c_attn, m.transformer.h[0].attn.c_proj),
        "llama": lambda m: (m.model.layers[0].self_attn.q_proj, m.model.layers[0].self_attn.o_proj),
        "marian": lambda m: (m.model.encoder.layers[0].self_attn.q_proj, m.model.encoder.layers[0].self_attn.out_proj),
    }[kind](reference)
    return tuple(part.bias is not None for part in layer)  # type: ignore[return-value]


@pytest.mark.parametrize("kind", list(SIDE))
def test_qkv_and_output_projection_formulas_carry_the_models_biases(tmp_path, kind):
    _folder, reference, trace, stages = opened(tmp_path, kind)
    qkv_bias, out_bias = linear_has_bias(reference, kind)
    site = trace.sites()[0]
    qkv = explanation_html(stages[f"{site}.qkv"], trace)
    out = explanation_html(stages[f"{site}.attn_out"], trace)
    assert ("b<sub>Q</sub>" in qkv) is qkv_bias, qkv
    assert ("b<sub>O</sub>" in out) is out_bias, out


def bert_without_head(folder):
    size = wordpiece_vocab(folder)
    tokenizer_config(folder, tokenizer_class="BertTokenizer", do_lower_case=True)
    cfg = transformers.BertConfig(
        vocab_size=size,
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=1,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    transformers.BertModel(cfg).save_pretrained(str(folder))
    return folder


def test_a_folder_without_a_trained_output_head_gets_a_banner(tmp_path):
    headless = attnlab.load(str(bert_without_head(tmp_path)))
    assert "no masked-LM head" in headless.metadata.get("notice", ""), headless.metadata
    with_head, _reference = saved(tmp_path, "bert")
    assert "masked-LM head" not in attnlab.load(str(with_head)).metadata.get("notice", "")


def test_the_app_shows_the_no_head_banner(qtbot, tmp_path, isolated_settings):
    from attnlab.ui.window.main_window import MainWindow

    folder = bert_without_head(tmp_path)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    with qtbot.waitSignal(w.session.traceReady, timeout=30000):
        w.open_checkpoint(str(folder))
    qtbot.waitUntil(lambda: w.session.model is not None and w.session.model.name == folder.name, timeout=30000)
    qtbot.waitUntil(lambda: "no masked-LM head" in w.banner.text(), timeout=30000)
    assert w.banner.isVisibleTo(w)


@pytest.mark.parametrize("bundled", ["translation", "language"])
def test_bundled_models_name_the_tokens_their_tokenizer_puts_around_the_text(bundled):
    model = attnlab.load_bundled(bundled)
    trace = model.trace("the black cat sees the small dog")
    stages = {s.key: s for s in stages_for(trace)}
    side = "src" if model.config.has_encoder else "tgt"
    tokens = trace[names.side_entry(side, "tokens")]
    plain = model.tokenizer(side).encode(model.typed_form("the black cat sees the small dog", side))[1]
    added = len(tokens) - len(plain)
    page = explanation_html(stages[f"{side}.tokens"], trace)
    assert f"({len(plain)} pieces of the text + {added} special)" in page if added else "adds no special" in page
    ends = tokens[len(tokens) - 1] if side == "src" else tokens[0]  # the source's end token, the prompt's start
    assert html.escape(ends) in page, page
