"""The texts in the input boxes (attnlab.present.texts): the <pad> tail, ids shown as text. Qt-free."""

from attnlab.engine.tokenizer import WordTokenizer
from attnlab.present.texts import ids_text, real_length


def test_real_length_stops_before_the_pad_tail():
    assert real_length(["<s>", "le", "chat", "<pad>", "<pad>"]) == 3
    assert real_length(["<s>", "<pad>", "le"]) == 3  # only the tail counts
    assert real_length(["<pad>"]) == 0 and real_length([]) == 0


def test_ids_text_spells_out_specials_and_decodes_the_rest():
    tok = WordTokenizer.train(["le chat noir"])
    ids = tok.encode("le chat")[1]
    plain = [i for i in ids if i not in (tok.bos_id, tok.eos_id, tok.pad_id)]
    assert ids_text(tok, plain) == "le chat"
    assert ids_text(tok, [tok.bos_id, *plain]) == "<s> le chat"
