"""`attnlab trace --patch-from A --patch ENTRY[:POSITION[:HEAD]]` (issue 37): the saved logits equal the Python
API's RunOptions.patch run, and on a GPT-2 folder the same patch written with plain torch hooks on transformers'
GPT2LMHeadModel; the printed logit differences are those of runs A, B and the patched run; bad specs are refused
in one line before anything is written."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.checkpoints import load_bundled
from attnlab.cli import main
from attnlab.engine.options import RunOptions
from attnlab.engine.patch_sweep import patch_from

transformers = pytest.importorskip("transformers")
from tests.support.ioi_gpt2 import CLEAN, CORRUPTED, write_ioi_gpt2  # noqa: E402

A, B, TGT = "the black cat sees the small dog", "the white cat sees the small dog", "le chat"


@pytest.fixture(scope="module")
def translation():
    return load_bundled("translation")


@pytest.fixture(scope="module")
def ioi_folder(tmp_path_factory):
    return write_ioi_gpt2(tmp_path_factory.mktemp("ioi") / "gpt2")


def saved_logits(path) -> torch.Tensor:
    with np.load(path, allow_pickle=False) as npz:
        return torch.as_tensor(npz["logits"])


def test_cli_patch_equals_the_python_api(tmp_path, capsys, translation):
    out = tmp_path / "patched.npz"
    args = ["trace", "--src", B, "--tgt", TGT, "--patch-from", A, "--patch", "dec.2.cross.context:2:3"]
    assert main([*args, "--answer", "noir", "--against", "blanc", "--out", str(out), "--no-lens"]) == 0
    printed = capsys.readouterr().out
    a, b = translation.trace(A, TGT), translation.trace(B, TGT)
    patch = patch_from(a, "dec.2.cross.context", 2, 2)  # head 3 counted from 1 on the command line
    patched = translation.trace(B, TGT, RunOptions(patch=(patch,)))
    torch.testing.assert_close(saved_logits(out), torch.as_tensor(patched["logits"]), atol=1e-5, rtol=0)
    vocab = translation.output_tokenizer.vocab
    noir, blanc = vocab.index("noir"), vocab.index("blanc")

    def diff(trace) -> float:
        row = torch.as_tensor(trace["logits"])[-1]  # [V]
        return float(row[noir] - row[blanc])

    assert f"A {diff(a):+.3f}, B {diff(b):+.3f}, patched {diff(patched):+.3f}" in printed
    assert "Patched from run A: dec.2.cross.context head 3 at position 2 (re-run from dec.2)." in printed


def _hidden(out) -> torch.Tensor:
    """A GPT2Block's hidden states: the output itself or its first item (transformers versions differ)."""
    return out[0] if isinstance(out, tuple) else out


def _hooked_logits(model, ids_a, ids_b, layer: int, position: int | None, head: int | None) -> torch.Tensor:
    """Run B with run A's value put in by plain forward hooks: block `layer`'s output row at `position`
    (head None), or head `head`'s context (the input of attn.c_proj, all positions) of block `layer`."""
    block = model.transformer.h[layer]
    dk = model.config.n_embd // model.config.n_head
    kept = {}
    if head is None:
        grab = block.register_forward_hook(lambda _m, _i, out: kept.setdefault("x", _hidden(out).clone()))
    else:
        grab = block.attn.c_proj.register_forward_pre_hook(lambda _m, args: kept.setdefault("x", args[0].clone()))
    with torch.no_grad():
        model(ids_a)
    grab.remove()

    def put_row(_m, _i, out):
        hidden = _hidden(out).clone()  # [1, T, d]
        hidden[:, position] = kept["x"][:, position]
        return (hidden, *out[1:]) if isinstance(out, tuple) else hidden

    def put_head(_m, args):
        x = args[0].clone()
        x[..., head * dk : (head + 1) * dk] = kept["x"][..., head * dk : (head + 1) * dk]
        return (x,)

    if head is None:
        hook = block.register_forward_hook(put_row)
    else:
        hook = block.attn.c_proj.register_forward_pre_hook(put_head)
    with torch.no_grad():
        logits = model(ids_b).logits[0]  # [T, V]
    hook.remove()
    return logits


@pytest.mark.parametrize(
    ("spec", "layer", "position", "head"), [("dec.1.out:9", 1, 9, None), ("dec.2.self.context::2", 2, None, 1)]
)
def test_cli_patch_on_gpt2_equals_plain_torch_hooks(tmp_path, capsys, ioi_folder, spec, layer, position, head):
    out = tmp_path / "ioi.npz"
    args = ["trace", "--checkpoint", str(ioi_folder), "--src", CORRUPTED, "--patch-from", CLEAN, "--patch", spec]
    assert main([*args, "--answer", " Mary", "--against", "ĠJohn", "--out", str(out), "--no-lens"]) == 0
    assert "logit('ĠMary') − logit('ĠJohn'): A " in capsys.readouterr().out
    tok = transformers.AutoTokenizer.from_pretrained(str(ioi_folder))
    model = transformers.GPT2LMHeadModel.from_pretrained(str(ioi_folder), attn_implementation="eager").eval()
    ids_a, ids_b = (tok(text, return_tensors="pt").input_ids for text in (CLEAN, CORRUPTED))  # [1, 14] each
    reference = _hooked_logits(model, ids_a, ids_b, layer, position, head)
    torch.testing.assert_close(saved_logits(out), reference, atol=1e-4, rtol=0)
    with torch.no_grad():
        assert not torch.allclose(reference, model(ids_b).logits[0], atol=1e-3)  # the patch changed run B


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--patch-from", A, "--patch", "dec.7.cross.out:2"], "this model has 3 decoder layers (dec.0 to dec.2)"),
        (["--patch-from", A, "--patch", "dec.2.cross.out:9"], "position 9 is out of range; run A has 3 positions"),
        (["--patch-from", A, "--patch", "dec.2.cross.weights"], "'dec.2.cross.weights' cannot be patched"),
        (["--patch-from", A, "--patch", "dec.2.cross.context:1:9"], "has 4 heads; head 9 is not one of them"),
        (["--patch-from", A, "--patch", "dec.2.out:x"], "POSITION (from 0) must be a whole number"),
        (["--patch-from", A, "--patch", "dec.2.out:1:0"], "HEAD (from 1) must be a whole number ≥ 1"),
        (["--patch-from", A, "--patch", "dec.2.out:1:2:3"], "write ENTRY[:POSITION[:HEAD]]"),
        (["--patch", "dec.2.out"], "--patch needs --patch-from SENTENCE"),
        (["--patch-from", A], "--patch-from needs --patch"),
        (["--answer", "noir"], "--answer and --against go with --patch"),
        (["--patch-from", "the cat sees the dog", "--patch", "dec.2.out"], "run A has 6 tokens and run B 8"),
        (["--patch-from", A, "--patch", "dec.2.out", "--answer", "le chat"], "is 2 tokens ('le', 'chat')"),
        (["--patch-from", A, "--patch", "dec.2.out", "--against", "#99999"], "the vocabulary has 1600 tokens"),
    ],
)
def test_bad_patches_are_refused_in_one_line(tmp_path, capsys, extra, said):
    out = tmp_path / "never.npz"
    code = main(["trace", "--src", B, "--tgt", TGT, *extra, "--out", str(out), "--no-lens"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and said in err and "\n" not in err and err.startswith("attnlab trace: "), err
    assert not out.exists()


def test_render_draws_a_lesson_steps_patched_run(translation):
    """`attnlab render lesson.toml --pdf`: a patch step's page is drawn from run B patched from its run A."""
    from attnlab.commands.render_slides import lesson_slides
    from attnlab.present.lessons import parse_lesson

    lesson = parse_lesson(
        f'src = "{B}"\ntgt = "{TGT}"\n[[step]]\nstage = "out.probs"\n'
        f'patch = {{ from = "{A}", entry = "dec.2.cross.out", position = 2 }}\nnote = "n"\n'
    )

    class Drawn:  # a StageRenderer that keeps the run it is handed
        runs: list = []

        def panel(self, trace, stage, view):
            self.runs.append(trace)

    list(lesson_slides(translation, lesson, Drawn()))
    (drawn,) = Drawn.runs
    patch = patch_from(translation.trace(A, TGT), "dec.2.cross.out", None, 2)
    reference = translation.trace(B, TGT, RunOptions(patch=(patch,)))
    torch.testing.assert_close(
        torch.as_tensor(drawn["logits"]), torch.as_tensor(reference["logits"]), atol=1e-5, rtol=0
    )
