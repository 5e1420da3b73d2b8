"""The words people read for trace names: titles of stacks, sites, sub-layers, heads and layers.

The grammar of the names themselves (building and parsing `enc.0.self.weights`) is the engine's, in
attnlab/engine/names.py; this module only turns its parts into words (`'dec.1.cross'` ->
`'decoder layer 2 cross-attention'`).
"""

from __future__ import annotations

from attnlab.engine.names import ATTENTION_KINDS, STACK_NAMES, layer, split_site, sublayer_count

WORDS: dict[str, str] = {
    "self": "self-attention",
    "masked self": "masked self-attention",
    "cross": "cross-attention",
    "ffn": "feed-forward network",
    "ffn.short": "FFN",
    "enc": STACK_NAMES["enc"].capitalize(),
    "dec": STACK_NAMES["dec"].capitalize(),
    "src": "Source input",
    "tgt": "Decoder input",
    "src.short": "source",  # "7 source tokens"
    "tgt.short": "decoder",  # "5 decoder tokens"
    "src.side": "source",
    "tgt.side": "decoder input",
    "self.short": "self-attn",
    "cross.short": "cross-attn",
    "ffn.box": "Feed-forward",  # the schematic's box
    "moe.box": "Experts (MoE)",  # the schematic's box of a mixture of experts (Mixtral)
    "output": "Output",
    "norm": "LayerNorm",
    "rmsnorm": "RMSNorm",
    "embed_norm": "embedding LayerNorm",
    "type": "token-type embedding",
    "head": "output head",
    "gate": "gate projection",
    "up": "up projection",
    "addnorm": "add & LayerNorm",
    "additive": "Additive attention (GRU)",  # the Bahdanau model (engine/additive.py) in menus and titles
}


def word(key: str) -> str:
    """The words people read for a name part: word('cross') -> 'cross-attention'."""
    return WORDS[key]


def site_words(site_name: str, causal: bool = False) -> str:
    """'dec.0.self' -> 'masked self-attention' when its mask is causal, else 'self-attention'."""
    _stack, _index, kind = split_site(site_name)
    return WORDS["masked self"] if kind == "self" and causal else WORDS[kind]


def head_words(index: int) -> str:
    """Trace head 0 -> 'head 1' (people count heads from 1, like layers)."""
    return f"head {int(index) + 1}"


def layer_words(layer_name: str) -> str:
    """'enc.0' -> 'Encoder layer 1' (people count from 1)."""
    stack, index = layer_name.split(".")
    return f"{WORDS[stack]} layer {int(index) + 1}"


def layer_words_inline(layer_name: str) -> str:
    """The same inside a sentence: 'enc.0' -> 'encoder layer 1'."""
    return layer_words(layer_name).lower()


def site_full_words(site_name: str) -> str:
    """'dec.1.cross' -> 'decoder layer 2 cross-attention'."""
    stack, index, kind = split_site(site_name)
    return f"{layer_words_inline(layer(stack, index))} {WORDS[kind]}"


def short_words(text: str) -> str:
    """Attention words shortened for narrow places: 'masked self-attention · mask' -> 'masked self-attn · mask'."""
    for kind in ATTENTION_KINDS:
        text = text.replace(WORDS[kind], WORDS[f"{kind}.short"])
    return text


def sublayer_words(stack: str, n: int, has_cross: bool) -> str:
    """What the n-th sub-layer of a layer is: 'self-attention', 'cross-attention' or 'feed-forward network'."""
    if n == sublayer_count(stack, has_cross):
        return WORDS["ffn"]
    if stack == "dec" and n == 1:
        return WORDS["masked self"]
    return WORDS["cross"] if n == 2 else WORDS["self"]


def sublayer_kind_words(kind: str, short: bool = False) -> str:
    """'self' / 'cross' / 'ffn' -> 'self-attention' / 'cross-attention' / 'feed-forward network' ('FFN' short)."""
    return WORDS["ffn.short"] if short and kind == "ffn" else WORDS[kind]
