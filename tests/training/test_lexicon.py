"""The "out of domain" banner (issue 11, item 17): a classroom model names the words of a sentence that are
outside its training lexicon (resources/lexicon/<model>.txt, written by attnlab.training.export_lexicon)."""

from __future__ import annotations

from attnlab.checkpoints import load_bundled
from attnlab.present.lexicon import lexicon, out_of_domain_text, outside_words
from attnlab.training.corpus import TEACHING_EXAMPLES, generate_pairs
from attnlab.training.export_lexicon import training_words
from attnlab.training.train import split_corpus
from attnlab.ui.window.main_window import MainWindow

WAIT = 30000


def test_shipped_lists_hold_the_training_corpus_words():
    english, french = lexicon("translation"), lexicon("language")
    assert english and french and lexicon("no_such_model") is None and lexicon("../x") is None
    for pair in TEACHING_EXAMPLES[:50]:
        assert outside_words(pair.src, english) == [], pair.src
    # a few hundred training pairs of each model, rebuilt from the corpus generator: every word is listed
    train, _ = split_corpus(60000, 0, 0.1, 0, 2)
    for pair in train[:300]:
        assert outside_words(pair.src, english) == [], pair.src
    for pair in generate_pairs(300, seed=0, version=1)[:300]:
        assert outside_words(pair.tgt, french) == [], pair.tgt


def test_shipped_list_is_what_the_export_script_writes():
    assert sorted(lexicon("translation")) == training_words("translation")


def test_outside_words_are_named_once_in_order():
    words = frozenset({"the", "cat", "girl", "s", "sees", "and"})
    assert outside_words("The giraffe sees the cat, the GIRAFFE and 3 zebras.", words) == ["giraffe", "zebras"]
    assert outside_words("the girl's cat", words) == []
    text = out_of_domain_text("translation", "the giraffe sees the quantum cat")
    assert "“giraffe”, “quantum” are not among the words" in text
    assert out_of_domain_text("translation", "the black cat sees the small dog") == ""


def test_banner_names_the_words_outside_the_lexicon(qtbot):
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.session.set_model(load_bundled("translation"), "the giraffe sees the cat", "la")
    assert win.banner.isVisible() and "Out of domain: “giraffe”" in win.banner.text()
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.session.set_src("the black cat sees the small dog", debounce=False)
    assert "Out of domain" not in win.banner.text()
    win.errors.uninstall()
    win.session.shutdown()
